import BinarySnapshot
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
  /// Ids, centres and radii, polygons and the index, by slot.
  private(set) var regions: RegionSet
  /// Per slot, the event id's hash after its first two components, the geofence id and the
  /// slot's lifetime (see ``GeofenceEngine``'s "Event ids"); an event adds the rest.
  private(set) var eventIDs: [OutboxEventID.Builder]
  /// Per slot, the index into `details`, or −1 for a geofence with no name, metadata or URL.
  /// It grows only as far as the last slot that has details, so that a set of bare circles
  /// pays nothing for them; slots past its end have none.
  private var detailOfSlot: [Int32] = []
  /// What only some geofences have, by `detailOfSlot`.
  private var details: [SlotDetails] = []
  /// The live slot of each id.
  private var slots: SlotLookup

  init(geofences: [Geofence]) {
    regions = RegionSet(geofences: geofences)
    eventIDs = geofences.map { Self.eventIDStart(id: $0.id, lifetime: Self.lifetime($0)) }
    slots = SlotLookup(expectedCount: geofences.count)
    for (i, g) in geofences.enumerated() {
      setDetails(of: g, at: i)
      slots.insert(Int32(i), of: regions)
    }
  }

  /// Appends the set to a snapshot (see ``GeofenceEngine``'s "Snapshots").
  func write(to writer: inout SnapshotWriter) {
    regions.write(to: &writer)
    writer.write(array: eventIDs)
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
    eventIDs = try reader.readArray()
    detailOfSlot = try reader.readArray()
    let detailCount: UInt64 = try reader.read()
    guard eventIDs.count == regions.count, detailOfSlot.count <= regions.count,
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
    slots = try SlotLookup(snapshot: &reader, slotCount: regions.count)
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
  func slot(of id: String) -> Int32? { slots.find(id, in: regions) }

  private mutating func setDetails(of g: Geofence, at slot: Int) {
    let url = Self.url(fromMetadata: g.metadataJSON)
    let existing = slot < detailOfSlot.count ? detailOfSlot[slot] : -1
    if g.name == nil && g.metadataJSON == nil && url == nil {
      if existing >= 0 { detailOfSlot[slot] = -1 }
      return
    }
    let d = SlotDetails(name: g.name, metadataJSON: g.metadataJSON, url: url)
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
      ("event id hashes", eventIDs.capacity * MemoryLayout<OutboxEventID.Builder>.stride),
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
      eventIDs.append(Self.eventIDStart(id: g.id, lifetime: Self.lifetime(g)))
      setDetails(of: g, at: Int(slot))
      slots.insert(slot, of: regions)
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

/// The live slot of each geofence id: an open-addressing table of slots (linear probing, at
/// most half full), keyed by the id's hash and compared with the ids the set already holds, so
/// that no id is stored twice. Retired slots stay in the table and are skipped; the table is
/// rebuilt from the live slots when it fills.
///
/// 4 bytes a bucket, 2–4 buckets a slot, where a `[String: Int32]` takes about 27 B a slot.
///
/// Ids are hashed with a seed drawn at random when the table is made (a file of ids chosen to
/// collide cannot be prepared in advance) and kept with it, so that a snapshot restores the
/// table as it was.
struct SlotLookup {
  private var buckets: [Int32]
  private var used = 0
  private var seed: UInt64

  init(expectedCount: Int) {
    buckets = [Int32](repeating: -1, count: Self.capacity(for: expectedCount))
    var random = SystemRandomNumberGenerator()
    seed = random.next()
  }

  /// The seeded hash of `id`'s UTF-8 bytes: 8 bytes a step multiplied by the 64-bit golden
  /// ratio, then MurmurHash3's finaliser.
  private func hash(_ id: String) -> Int {
    var id = id
    let seed = self.seed
    return id.withUTF8 { utf8 in
      var h = seed ^ UInt64(utf8.count)
      let raw = UnsafeRawBufferPointer(utf8)
      var i = 0
      while i + 8 <= raw.count {
        h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
        h = h << 31 | h >> 33
        i += 8
      }
      var tail: UInt64 = 0
      while i < raw.count {
        tail = tail << 8 | UInt64(raw[i])
        i += 1
      }
      return Int(truncatingIfNeeded: BinarySnapshot.mix(h ^ tail))
    }
  }

  /// Appends the table to a snapshot.
  func write(to writer: inout SnapshotWriter) {
    writer.write(array: buckets)
    writer.write(used)
    writer.write(seed)
  }

  /// The table ``write(to:)`` wrote, for `slotCount` slots.
  init(snapshot reader: inout SnapshotReader, slotCount: Int) throws(SnapshotError) {
    buckets = try reader.readArray()
    used = try reader.read()
    seed = try reader.read()
    guard buckets.count >= 16, buckets.count & (buckets.count - 1) == 0,
      used >= 0, used <= buckets.count / 2, buckets.allSatisfy({ $0 < Int32(slotCount) })
    else { throw .layout("id lookup") }
  }

  private static func capacity(for n: Int) -> Int {
    var c = 16
    while c < 2 * n { c <<= 1 }
    return c
  }

  var footprintBytes: Int { buckets.capacity * MemoryLayout<Int32>.stride }

  /// Adds `slot` of `regions`, keyed by its id.
  mutating func insert(_ slot: Int32, of regions: RegionSet) {
    if 2 * (used + 1) > buckets.count { rebuild(adding: used + 1, ids: regions.ids) }
    place(slot, hash: hash(regions.ids[Int(slot)]))
    used += 1
  }

  private mutating func place(_ slot: Int32, hash: Int) {
    let mask = buckets.count - 1
    var b = hash & mask
    while buckets[b] >= 0 { b = (b + 1) & mask }
    buckets[b] = slot
  }

  /// Rebuilds for at least `n` entries, keeping every slot it held (retired ones too: the
  /// caller skips them, and the table does not know which they are).
  private mutating func rebuild(adding n: Int, ids: [String]) {
    let old = buckets
    buckets = [Int32](repeating: -1, count: Self.capacity(for: 2 * n))
    for slot in old where slot >= 0 { place(slot, hash: hash(ids[Int(slot)])) }
  }

  /// The slot holding `id` that `regions` has not retired, or nil.
  func find(_ id: String, in regions: RegionSet) -> Int32? {
    let mask = buckets.count - 1
    var b = hash(id) & mask
    while true {
      let slot = buckets[b]
      if slot < 0 { return nil }
      if regions.ids[Int(slot)] == id && !regions.isRemoved(slot) { return slot }
      b = (b + 1) & mask
    }
  }
}
