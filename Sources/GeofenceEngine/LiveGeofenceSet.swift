import BinarySnapshot
import EventOutbox
import Foundation
import GeofenceDefinitions
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
  /// Ids, centres and radii, polygons and the index, by slot.
  private(set) var regions: RegionSet
  /// Per polygon (as ``GeofenceTransitions/RegionSet/polygons``), the event id's hash after
  /// its first two components (``eventIDStart(at:)``): a polygon's lifetime hashes its
  /// geometry, too long to hash again at each event. A circle's is computed when an event
  /// needs it.
  private var polygonEventIDs: [OutboxEventID.Builder] = []
  /// Per slot, the index into `details`, or −1 for a geofence with no name, metadata or URL.
  /// It grows only as far as the last slot that has details, so that a set of bare circles
  /// pays nothing for them; slots past its end have none.
  private var detailOfSlot: [Int32] = []
  /// What only some geofences have, by `detailOfSlot`.
  private var details: [SlotDetails] = []
  /// The live slot of each id.
  private var slots: IDLookup

  init(geofences: [Geofence]) {
    self.init(columns: GeofenceColumns(geofences: geofences))
  }

  /// The set of a load's rows, slot `i` the geofence of row `i`: the ids, circles and id
  /// lookup are kept as they are (not copied when `columns` holds the only reference).
  /// - Complexity: O(n) for n rows: the index build, and a lifetime (three numbers formatted
  ///   and hashed) for each.
  init(columns: consuming GeofenceColumns) {
    regions = RegionSet(
      ids: columns.ids, circles: columns.circles, polygons: columns.polygons,
      polygonSlots: columns.polygonRows)
    slots = columns.lookup
    polygonEventIDs.reserveCapacity(regions.polygons.count)
    for slot in regions.polygonSlots { polygonEventIDs.append(computedEventIDStart(at: Int(slot))) }
    for row in columns.detailOfRow.indices {
      guard let d = columns.details(at: row) else { continue }
      setDetails(name: d.name, metadataJSON: d.metadataJSON, at: row)
    }
  }

  /// Appends the set to a snapshot (see ``GeofenceEngine``'s "Snapshots").
  func write(to writer: inout SnapshotWriter) {
    regions.write(to: &writer)
    writer.write(array: polygonEventIDs)
    writer.write(array: detailOfSlot)
    writer.write(UInt64(details.count))
    for d in details {
      writer.write(optionalString: d.name)
      writer.write(optionalString: d.metadataJSON)
      writer.write(optionalString: d.url)
    }
    slots.write(to: &writer)
  }

  /// The set ``write(to:)`` wrote: the same slots, ids, regions, lifetimes, details and
  /// lookups as the set that was written.
  /// - Throws: ``BinarySnapshot/SnapshotError``.
  init(snapshot reader: inout SnapshotReader) throws(SnapshotError) {
    regions = try RegionSet(snapshot: &reader)
    polygonEventIDs = try reader.readArray()
    detailOfSlot = try reader.readArray()
    let detailCount: UInt64 = try reader.read()
    guard polygonEventIDs.count == regions.polygons.count, detailOfSlot.count <= regions.count,
      detailCount <= UInt64(regions.count)
    else { throw .layout("geofence set counts") }
    details = []
    details.reserveCapacity(Int(detailCount))
    for _ in 0..<Int(detailCount) {
      details.append(
        SlotDetails(
          name: try reader.readOptionalString(), metadataJSON: try reader.readOptionalString(),
          url: try reader.readOptionalString()))
    }
    slots = try IDLookup(snapshot: &reader, rowCount: regions.count)
    let limit = Int32(details.count)
    guard detailOfSlot.allSatisfy({ $0 < limit }) else { throw .layout("detail references") }
  }

  /// The monitored geofences, in slot order. O(n); allocates.
  var geofences: [Geofence] {
    (0..<slotCount).filter { !regions.isRemoved(Int32($0)) }.map { geofence(at: $0) }
  }

  var count: Int { regions.liveCount }

  /// Number of slots, retired ones included.
  var slotCount: Int { regions.count }

  /// The geofence in `slot` (a retired slot keeps its last definition). O(1) plus the
  /// rebuilt circle (one paired sine and cosine, one sine).
  func geofence(at slot: Int) -> Geofence {
    let d = details(at: slot)
    return Geofence(
      id: regions.ids[slot], name: d?.name, shape: regions.shape(at: Int32(slot)),
      metadataJSON: d?.metadataJSON)
  }

  /// The id of the geofence in `slot`. O(1).
  func id(at slot: Int) -> String { regions.ids[slot] }

  /// The name, metadata and deep link of `slot`, or nil when it has none of them. O(1).
  func details(at slot: Int) -> SlotDetails? {
    guard slot < detailOfSlot.count else { return nil }
    let k = detailOfSlot[slot]
    return k < 0 ? nil : details[Int(k)]
  }

  /// The live slot holding `id`, or nil. O(1) expected, no allocation.
  func slot(of id: String) -> Int32? {
    let regions = self.regions
    return slots.find(id, in: regions.ids) { !regions.isRemoved($0) }
  }

  private mutating func setDetails(of g: Geofence, at slot: Int) {
    setDetails(name: g.name, metadataJSON: g.metadataJSON, at: slot)
  }

  private mutating func setDetails(name: String?, metadataJSON: String?, at slot: Int) {
    let url = Self.url(fromMetadata: metadataJSON)
    let existing = slot < detailOfSlot.count ? detailOfSlot[slot] : -1
    if name == nil && metadataJSON == nil && url == nil {
      if existing >= 0 { detailOfSlot[slot] = -1 }
      return
    }
    let d = SlotDetails(name: name, metadataJSON: metadataJSON, url: url)
    if existing >= 0 {
      details[Int(existing)] = d
      return
    }
    if slot >= detailOfSlot.count {
      detailOfSlot.append(contentsOf: repeatElement(-1, count: slot + 1 - detailOfSlot.count))
    }
    detailOfSlot[slot] = Int32(details.count)
    details.append(d)
  }

  /// The event id's hash after its first two components, the geofence id and the slot's
  /// lifetime (see ``GeofenceEngine``'s "Event ids"); an event adds the rest. O(1) for a
  /// polygon (kept); for a circle three numbers formatted and hashed, which allocates a few
  /// short strings.
  func eventIDStart(at slot: Int) -> OutboxEventID.Builder {
    if let k = regions.polygonIndex(at: Int32(slot)) { return polygonEventIDs[k] }
    return computedEventIDStart(at: slot)
  }

  private func computedEventIDStart(at slot: Int) -> OutboxEventID.Builder {
    Self.eventIDStart(
      id: regions.ids[slot],
      lifetime: Self.lifetime(
        circle: regions.packedCircle(at: Int32(slot)), polygon: regions.polygon(at: Int32(slot))))
  }

  static func eventIDStart(id: String, lifetime: String) -> OutboxEventID.Builder {
    var b = OutboxEventID.Builder()
    b.add(id)
    b.add(lifetime)
    return b
  }

  /// Heap bytes by part, by capacity (what ``GeofenceEngine/memoryFootprint`` reports).
  var memoryFootprint: [(part: String, bytes: Int)] {
    let idHeap = regions.ids.reduce(0) { $0 + Self.heapBytes(of: $1) }
    var detailBytes =
      detailOfSlot.capacity * 4 + details.capacity * MemoryLayout<SlotDetails>.stride
    for d in details {
      detailBytes +=
        Self.heapBytes(of: d.name) + Self.heapBytes(of: d.metadataJSON)
        + Self.heapBytes(of: d.url)
    }
    return [
      ("index and geometry (GridIndex)", regions.index.memoryFootprintBytes),
      (
        "ids (16 B a slot, inline up to 15 UTF-8 bytes)",
        regions.ids.capacity * MemoryLayout<String>.stride + idHeap
      ),
      ("centres and radii", regions.circleFootprintBytes),
      ("polygons", regions.polygonFootprintBytes),
      (
        "event id hashes (polygons only)",
        polygonEventIDs.capacity * MemoryLayout<OutboxEventID.Builder>.stride
      ),
      ("slot by id", slots.footprintBytes),
      ("names, metadata, deep links", detailBytes),
    ]
  }

  /// Heap bytes a string holds beyond its 16-byte value: none up to 15 UTF-8 bytes (stored
  /// inline), else its bytes plus a 32-byte header, rounded up to 16.
  static func heapBytes(of s: String?) -> Int {
    guard let n = s?.utf8.count, n > 15 else { return 0 }
    return (n + 1 + 32 + 15) / 16 * 16
  }

  static func lifetime(_ g: Geofence) -> String {
    lifetime(circle: PackedCircle(g.region), polygon: g.polygon)
  }

  /// The lifetime of a geofence whose index circle is `circle` (for a polygon, its bounding
  /// cap) and whose polygon, if any, is `polygon`.
  static func lifetime(circle: PackedCircle, polygon: PolygonRegion?) -> String {
    var components = [
      String(circle.center.latitude), String(circle.center.longitude),
      String(circle.radiusMeters),
    ]
    // A polygon's circle is its bounding cap, which an edit inside the box keeps: the
    // geometry's own fingerprint names the life too.
    if let polygon { components.append(StoredPolygon.fingerprint(polygon)) }
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
    for id in diff.removed { if let s = slot(of: id) { removedSlots.insert(s) } }
    var moves: [(old: Int32, geofence: Geofence)] = []
    var additions: [Geofence] = []
    func classify(_ g: Geofence) {
      guard let s = slot(of: g.id), !removedSlots.contains(s) else {
        additions.append(g)
        return
      }
      if regions.shape(at: s) == g.shape {
        // Same geometry, so the same lifetime and event id hash.
        setDetails(of: g, at: Int(s))
      } else {
        moves.append((s, g))
      }
    }
    for g in diff.geometryChanged { classify(g) }
    for g in diff.metadataChanged { classify(g) }
    for g in diff.added { classify(g) }
    if removedSlots.isEmpty && moves.isEmpty && additions.isEmpty { return change }

    let pendingBefore = regions.index.pendingInsertCount
    for s in removedSlots { regions.remove(s) }
    func append(_ g: Geofence) -> Int32 {
      let slot = regions.append(id: g.id, shape: g.shape)
      if g.polygon != nil {
        polygonEventIDs.append(Self.eventIDStart(id: g.id, lifetime: Self.lifetime(g)))
      }
      setDetails(of: g, at: Int(slot))
      slots.insert(slot, ids: regions.ids)
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

/// What only some geofences have: a display name, metadata, and the metadata's deep link.
struct SlotDetails {
  var name: String?
  var metadataJSON: String?
  /// ``GeofenceEvent/url``: the metadata's deep link (``LiveGeofenceSet/url(fromMetadata:)``).
  var url: String?
}
