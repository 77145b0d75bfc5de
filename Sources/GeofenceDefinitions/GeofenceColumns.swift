import GeofenceGeometry

/// The geofences of a load in the engine's compact form, one row a geofence: columns of ids
/// and circles, and side tables for what only some geofences have (a name, metadata, a
/// polygon). A row is a slot once the engine holds the set, so the engine takes these arrays
/// as they are (``GeofenceLoadResult/columns``).
///
/// About 44 bytes a bare circle with a short id (an inline `String` of 16 bytes, a 24-byte
/// circle, a 4-byte ``lookup`` bucket or two), where a ``Geofence`` takes 104. Names and
/// metadata are UTF-8 bytes in one arena (``detailText``), 16 bytes a geofence that has any
/// plus the bytes themselves, with no `String` (and no allocation) a geofence.
public struct GeofenceColumns: Sendable {
  /// Id per row, unique within the set. Up to 15 UTF-8 bytes are held inline.
  public internal(set) var ids: [String] = []
  /// Centre and radius per row: the circle, or a polygon's
  /// ``GeofenceGeometry/PolygonRegion/boundingCap``.
  public internal(set) var circles: [PackedCircle] = []
  /// Polygons, each of row ``polygonRows```[k]`, rows increasing.
  public internal(set) var polygons: [PolygonRegion] = []
  /// The row of each polygon in ``polygons``.
  public internal(set) var polygonRows: [Int32] = []
  /// Per row, the index into ``detailSpans``, or −1 for a row with no name and no metadata.
  /// It grows only as far as the last row that has details (rows past its end have none).
  public internal(set) var detailOfRow: [Int32] = []
  /// Where each row's name and metadata are in ``detailText``, by ``detailOfRow``.
  var detailSpans: [DetailSpan] = []
  /// The UTF-8 bytes of every name and metadata text, one row's after another: a name as
  /// given (valid UTF-8, trimmed), metadata as a JSON object text.
  var detailText: [UInt8] = []
  /// The row of each id: a definition reader finds duplicates with it, and the engine keeps
  /// it as its slot-by-id lookup.
  public internal(set) var lookup = IDLookup()

  /// No rows.
  public init() {}

  /// The rows of `geofences`, in order, for a set given in memory. Ids are not checked for
  /// duplicates (the caller's set has unique ids).
  /// - Complexity: O(n) for n geofences.
  public init(geofences: [Geofence]) {
    reserveCapacity(geofences.count)
    for g in geofences {
      _ = append(
        id: g.id, circle: PackedCircle(g.region), polygon: g.polygon, name: g.name,
        metadataJSON: g.metadataJSON, ids: .trusted)
    }
  }

  /// Number of rows.
  public var count: Int { ids.count }

  /// The name and metadata of `row`, or nil when it has neither.
  /// - Complexity: O(1), plus a `String` made of each (allocated beyond 15 UTF-8 bytes).
  public func details(at row: Int) -> GeofenceDetails? {
    guard row < detailOfRow.count else { return nil }
    let k = detailOfRow[row]
    if k < 0 { return nil }
    let span = detailSpans[Int(k)]
    return detailText.withUnsafeBufferPointer { text in
      func string(_ start: Int, _ count: Int32) -> String? {
        count < 0
          ? nil
          : String(
            decoding: UnsafeBufferPointer(rebasing: text[start..<(start + Int(count))]),
            as: UTF8.self)
      }
      return GeofenceDetails(
        name: string(span.start, span.nameCount),
        metadataJSON: string(span.start + Int(max(span.nameCount, 0)), span.metadataCount))
    }
  }

  /// The polygon of `row`, or nil for a circle. O(log p) for p polygons.
  public func polygon(at row: Int) -> PolygonRegion? {
    var low = 0
    var high = polygonRows.count
    while low < high {
      let mid = (low + high) / 2
      if polygonRows[mid] < Int32(row) { low = mid + 1 } else { high = mid }
    }
    return low < polygonRows.count && polygonRows[low] == Int32(row) ? polygons[low] : nil
  }

  /// The geofence of `row`. O(log p), plus the rebuilt circle (one paired sine and cosine,
  /// one sine).
  public func geofence(at row: Int) -> Geofence {
    let d = details(at: row)
    let shape: RegionShape = polygon(at: row).map { .polygon($0) } ?? .circle(circles[row].region)
    return Geofence(id: ids[row], name: d?.name, shape: shape, metadataJSON: d?.metadataJSON)
  }

  /// Heap bytes by capacity: ids (with the heap bytes of ids longer than 15 UTF-8 bytes),
  /// circles, the lookup, and the side tables.
  public var footprintBytes: Int {
    var bytes =
      ids.capacity * MemoryLayout<String>.stride + circles.capacity
      * MemoryLayout<PackedCircle>.stride + lookup.footprintBytes + detailOfRow.capacity * 4
      + detailSpans.capacity * MemoryLayout<DetailSpan>.stride + detailText.capacity
      + polygonRows.capacity * 4 + polygons.capacity * MemoryLayout<PolygonRegion>.stride
    for id in ids { bytes += Self.heapBytes(of: id) }
    for p in polygons { bytes += p.memoryBytes }
    return bytes
  }

  /// Heap bytes a string holds beyond its 16-byte value: none up to 15 UTF-8 bytes (stored
  /// inline), else its bytes plus a 32-byte header, rounded up to 16.
  public static func heapBytes(of s: String?) -> Int {
    guard let n = s?.utf8.count, n > 15 else { return 0 }
    return (n + 1 + 32 + 15) / 16 * 16
  }

  /// Reserves room for `n` rows in all, keeping the rows held; `lookup` grown for `n` rows
  /// too, unless `ids` is ``IDCheck/deferred`` (then the table is left as it is).
  mutating func reserveCapacity(_ n: Int, ids check: IDCheck = .rejectingDuplicates) {
    ids.reserveCapacity(n)
    circles.reserveCapacity(n)
    if check != .deferred { lookup.reserveCapacity(n, ids: ids) }
  }

  /// What an append does with a row's id and ``lookup``.
  enum IDCheck {
    /// Looks the id up first: when a row holds it, that row is returned and nothing appended.
    case rejectingDuplicates
    /// Adds the row to ``lookup`` without looking (the caller's ids are unique).
    case trusted
    /// Leaves ``lookup`` alone: the rows of the later part of a file read on two threads,
    /// whose ids are looked up when they join the earlier part's rows
    /// (``append(deferredPart:)``).
    case deferred
  }

  /// Appends a row, its id checked as `check` says: with ``IDCheck/rejectingDuplicates``,
  /// when a row holds `id`, returns that row and appends nothing.
  mutating func append(
    id: String, circle: PackedCircle, polygon: PolygonRegion?, name: String?,
    metadataJSON: String?, ids check: IDCheck = .rejectingDuplicates
  ) -> Int32? {
    let row = Int32(ids.count)
    switch check {
    case .rejectingDuplicates:
      if let first = lookup.findOrAppend(id, to: &ids) { return first }
    case .trusted:
      ids.append(id)
      lookup.insert(row, ids: ids)
    case .deferred:
      ids.append(id)
    }
    circles.append(circle)
    if let polygon {
      polygons.append(polygon)
      polygonRows.append(row)
    }
    if name != nil || metadataJSON != nil {
      let start = detailText.count
      if let name { detailText.append(contentsOf: name.utf8) }
      if let metadataJSON { detailText.append(contentsOf: metadataJSON.utf8) }
      addDetails(
        DetailSpan(
          start: start, nameCount: name.map { Int32($0.utf8.count) } ?? -1,
          metadataCount: metadataJSON.map { Int32($0.utf8.count) } ?? -1), row: row)
    }
    return nil
  }

  /// Appends a circle row whose name and metadata a reader has just written at the end of
  /// ``detailText`` (`details`, nil when it has neither), its id checked as
  /// ``append(id:circle:polygon:name:metadataJSON:ids:)`` does (``IDCheck/trusted`` is taken
  /// as ``IDCheck/rejectingDuplicates``), a duplicate's bytes taken off ``detailText`` again;
  /// `probe` is `id`'s ``IDLookup/Probe`` when the reader took one (nil: `id` is hashed here).
  /// - Returns: the row that already holds `id` (nothing appended), or nil.
  /// - Complexity: O(1) expected, amortised; no allocation but the arrays' growth.
  mutating func append(
    id: String, probe: IDLookup.Probe?, circle: PackedCircle, writtenDetails details: DetailSpan?,
    ids check: IDCheck = .rejectingDuplicates
  ) -> Int32? {
    let row = Int32(ids.count)
    let found: Int32?
    if check == .deferred {
      ids.append(id)
      found = nil
    } else if let probe {
      found = lookup.findOrAppend(id, probe: probe, to: &ids)
    } else {
      found = lookup.findOrAppend(id, to: &ids)
    }
    if let first = found {
      if let details { detailText.removeSubrange(details.start...) }
      return first
    }
    circles.append(circle)
    if let details { addDetails(details, row: row) }
    return nil
  }

  mutating func addDetails(_ span: DetailSpan, row: Int32) {
    if detailOfRow.count < Int(row) {
      detailOfRow.append(contentsOf: repeatElement(-1, count: Int(row) - detailOfRow.count))
    }
    detailOfRow.append(Int32(detailSpans.count))
    detailSpans.append(span)
  }

  /// Where one row's name and metadata are in ``detailText``: the name's bytes from `start`,
  /// then the metadata's.
  struct DetailSpan {
    /// Offset of the first byte in ``detailText``.
    var start: Int
    /// UTF-8 bytes of the name, or −1 for none.
    var nameCount: Int32
    /// UTF-8 bytes of the metadata text, or −1 for none.
    var metadataCount: Int32
  }
}

/// What only some geofences have: a display name and metadata.
public struct GeofenceDetails: Hashable, Sendable {
  /// Human-readable name, if any.
  public var name: String?
  /// Metadata as a JSON object text, kept verbatim.
  public var metadataJSON: String?

  public init(name: String?, metadataJSON: String?) {
    self.name = name
    self.metadataJSON = metadataJSON
  }
}
