import EventOutbox
import Foundation
import GeofenceGeometry
import GeofenceSync
import GeofenceTransitions

/// The one live geofence set of a ``GeofenceEngine``: geofences by slot, their
/// ``GeofenceTransitions/RegionSet``, each slot's **lifetime** and deep-link URL.
///
/// Slots are stable: a removed or moved geofence retires its slot (the set keeps its last
/// definition, so events already created can still be described), and added or moved
/// geofences get new slots at the end.
///
/// A geofence's **lifetime** names one life of its id: a hash of its centre and radius, and
/// for a polygon of its bounding cap and its geometry (``GeofenceSync/StoredPolygon``'s
/// fingerprint) (``OutboxEventID`` with the prefix `geo-`), so loading the same definitions
/// again gives the same lifetimes and moving, resizing or reshaping a geofence starts a new one. The lifetime is part of
/// every event id, so events of two lives never collide.
struct LiveGeofenceSet {
  private(set) var slotGeofences: [Geofence]
  private(set) var lifetimes: [String]
  /// Per slot, what an event takes from the set besides the geofence, in one record so that
  /// an event reads one place: see ``SlotEventFields``.
  private(set) var eventFields: [SlotEventFields]
  private(set) var regions: RegionSet
  private(set) var slotByID: [String: Int32]

  init(geofences: [Geofence]) {
    slotGeofences = geofences
    let lifetimes = geofences.map(Self.lifetime)
    self.lifetimes = lifetimes
    eventFields = geofences.indices.map {
      SlotEventFields(geofence: geofences[$0], lifetime: lifetimes[$0])
    }
    regions = RegionSet(geofences: geofences)
    var slots: [String: Int32] = [:]
    slots.reserveCapacity(geofences.count)
    for (i, g) in geofences.enumerated() { slots[g.id] = Int32(i) }
    slotByID = slots
  }

  /// The monitored geofences, in slot order. O(n); allocates.
  var geofences: [Geofence] {
    slotGeofences.indices.filter { !regions.isRemoved(Int32($0)) }.map { slotGeofences[$0] }
  }

  var count: Int { regions.liveCount }

  static func lifetime(_ g: Geofence) -> String {
    var components = [
      String(g.region.center.latitude), String(g.region.center.longitude),
      String(g.region.radiusMeters),
    ]
    // A polygon's circle is its bounding cap, which an edit inside the box keeps: the
    // geometry's own fingerprint names the life too.
    if let polygon = g.polygon { components.append(StoredPolygon.fingerprint(polygon)) }
    return OutboxEventID.derive(components, prefix: "geo-")
  }

  /// The member `"url"` of a metadata object when it is a string holding an absolute URL: an
  /// RFC 3986 §3.1 scheme (a letter, then letters, digits, `+`, `-`, `.`), `:`, and at least
  /// one more character, none of them a space or control character, and parseable by
  /// Foundation's `URL(string:)`. Anything else gives `nil`.
  static func url(fromMetadata json: String?) -> String? {
    guard let json, Self.mentionsURLKey(json),
      let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
      let text = object["url"] as? String, let colon = text.firstIndex(of: ":"),
      colon != text.startIndex, text.index(after: colon) != text.endIndex,
      !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
    else { return nil }
    func isLetter(_ v: UInt32) -> Bool { (0x41...0x5A).contains(v) || (0x61...0x7A).contains(v) }
    let scheme = text[..<colon].unicodeScalars
    guard let first = scheme.first, isLetter(first.value),
      scheme.allSatisfy({
        isLetter($0.value) || (0x30...0x39).contains($0.value) || $0 == "+" || $0 == "-"
          || $0 == "."
      }),
      URL(string: text)?.scheme != nil
    else { return nil }
    return text
  }

  /// Whether `json` holds the bytes `"url"`: the cheap test before parsing a metadata object.
  /// A byte search, because `String.contains` goes through Foundation's locale-aware search,
  /// which took a fifth of loading 144,563 towns.
  /// - Complexity: O(n) in the text's UTF-8 length.
  static func mentionsURLKey(_ json: String) -> Bool {
    var text = json
    return text.withUTF8 { b in
      guard b.count >= 5 else { return false }
      let quote = UInt8(ascii: "\"")
      for i in 0...(b.count - 5)
      where b[i] == quote && b[i + 1] == UInt8(ascii: "u") && b[i + 2] == UInt8(ascii: "r")
        && b[i + 3] == UInt8(ascii: "l") && b[i + 4] == quote
      {
        return true
      }
      return false
    }
  }

  /// What applying a diff did to the slots.
  struct Change {
    /// Old slot → new slot for geofences whose geometry changed.
    var moved: [Int32: Int32] = [:]
    var removed: Set<Int32> = []
    var rebuiltIndex = false
    var added = 0
  }

  /// Applies a change of the set.
  /// - Parameter diff: relative to the monitored set, with details. Removed ids that are not
  ///   monitored are ignored; an added id that is already monitored replaces it.
  /// - Complexity: O(k) for k changed geofences; a removal is O(1) in the index, an
  ///   addition or a move goes to the index's short list of recent insertions (see
  ///   ``GeofenceIndex/GridIndex/insert(_:)``).
  mutating func apply(_ diff: GeofenceDiff) -> Change {
    var change = Change()
    var removedSlots = Set<Int32>()
    for id in diff.removed { if let s = slotByID[id] { removedSlots.insert(s) } }
    var moves: [(old: Int32, geofence: Geofence)] = []
    var additions: [Geofence] = []
    func classify(_ g: Geofence) {
      guard let s = slotByID[g.id], !removedSlots.contains(s) else {
        additions.append(g)
        return
      }
      if slotGeofences[Int(s)].shape == g.shape {
        slotGeofences[Int(s)] = g
        eventFields[Int(s)] = SlotEventFields(geofence: g, lifetime: lifetimes[Int(s)])
      } else {
        moves.append((s, g))
      }
    }
    for g in diff.geometryChanged { classify(g) }
    for g in diff.metadataChanged { classify(g) }
    for g in diff.added { classify(g) }
    if removedSlots.isEmpty && moves.isEmpty && additions.isEmpty { return change }

    let pendingBefore = regions.index.pendingInsertCount
    for s in removedSlots {
      regions.remove(s)
      slotByID[slotGeofences[Int(s)].id] = nil
    }
    func append(_ g: Geofence) -> Int32 {
      let slot = regions.append(id: g.id, shape: g.shape)
      slotGeofences.append(g)
      let lifetime = Self.lifetime(g)
      lifetimes.append(lifetime)
      eventFields.append(SlotEventFields(geofence: g, lifetime: lifetime))
      slotByID[g.id] = slot
      return slot
    }
    for (old, g) in moves {
      regions.remove(old)
      change.moved[old] = append(g)
    }
    for g in additions { _ = append(g) }
    change.removed = removedSlots
    change.added = additions.count
    change.rebuiltIndex =
      regions.index.pendingInsertCount < pendingBefore + moves.count + additions.count
    return change
  }
}

/// What an event of one slot takes from the set besides the geofence itself.
struct SlotEventFields {
  /// The event id's hash after its first two components, the geofence id and the slot's
  /// lifetime (see ``GeofenceEngine``'s "Event ids"); an event adds the rest.
  var eventID: OutboxEventID.Builder
  /// ``GeofenceEvent/url``: the metadata's deep link (``LiveGeofenceSet/url(fromMetadata:)``).
  var url: String?

  init(geofence: Geofence, lifetime: String) {
    var id = OutboxEventID.Builder()
    id.add(geofence.id)
    id.add(lifetime)
    eventID = id
    url = LiveGeofenceSet.url(fromMetadata: geofence.metadataJSON)
  }
}
