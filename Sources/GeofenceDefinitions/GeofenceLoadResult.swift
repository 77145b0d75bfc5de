import DelimitedText
import GeofenceGeometry

/// The outcome of reading one definition file (or several, merged): the geofences that loaded,
/// in the engine's compact form (``columns``), where each was defined, and the definitions that
/// were rejected.
public struct GeofenceLoadResult: Equatable, Sendable {
  /// The valid geofences in file order (files in the order they were merged), ids unique.
  public internal(set) var columns = GeofenceColumns()
  /// Per row, the 1-based CSV line or the 0-based JSON index of its definition.
  var positions: [Int32] = []
  /// Per row, the 1-based line where a JSON element starts (−1 for a CSV row); empty while
  /// every row is CSV.
  var elementLines: [Int32] = []
  /// The files whose rows these are, each with its first row; rows run to the next file's.
  var files: [(name: String, firstRow: Int)] = []
  /// Rejected definitions, in file order (files in the order they were merged).
  public var rejected: [GeofenceRejection] = []
  /// Files that break off inside their list of definitions (JSON or GeoJSON text that ends
  /// early), each with where and why (``GeofenceFileError/Reason/truncated(_:)``).
  /// ``columns`` then holds the complete definitions before the end and nothing after it;
  /// callers report such a file as damaged (exit 65) and still use those geofences.
  public var truncations: [GeofenceFileError] = []

  /// An empty result.
  public init() {}

  /// Number of geofences loaded.
  public var count: Int { columns.count }

  /// The geofences, in row order. O(n); allocates (a ``Geofence`` is 104 bytes): for tests
  /// and small sets. Production paths hand ``columns`` to the engine.
  public var geofences: [Geofence] { (0..<count).map { columns.geofence(at: $0) } }

  /// Where each geofence was defined: `locations[i]` belongs to row `i`. O(n); allocates.
  public var locations: [DefinitionLocation] { (0..<count).map { location(at: $0) } }

  /// Where the geofence of `row` was defined. O(log f) for f files.
  public func location(at row: Int) -> DefinitionLocation {
    var k = files.count - 1
    while k > 0 && files[k].firstRow > row { k -= 1 }
    let line = row < elementLines.count ? Int(elementLines[row]) : -1
    let position = Int(positions[row])
    if line < 0 { return DefinitionLocation(file: files[k].name, position: .line(position)) }
    return DefinitionLocation(
      file: files[k].name, position: .index(position), line: line > 0 ? line : nil)
  }

  public static func == (a: GeofenceLoadResult, b: GeofenceLoadResult) -> Bool {
    a.geofences == b.geofences && a.locations == b.locations && a.rejected == b.rejected
      && a.truncations == b.truncations
  }

  /// Heap bytes held by capacity: ``columns`` and the locations.
  public var footprintBytes: Int {
    columns.footprintBytes + positions.capacity * 4 + elementLines.capacity * 4
  }

  /// Starts the rows of `file`.
  mutating func beginFile(_ file: String) {
    files.append((file, count))
  }

  /// Appends a row defined at `position` (and `line`, for JSON), its id checked as `check`
  /// says (``GeofenceColumns/IDCheck``): with ``GeofenceColumns/IDCheck/rejectingDuplicates``,
  /// when the id is already loaded, appends nothing and returns the first row with it.
  mutating func append(
    id: String, circle: PackedCircle, polygon: PolygonRegion?, name: String?,
    metadataJSON: String?, position: DefinitionLocation.Position, line: Int?,
    ids check: GeofenceColumns.IDCheck = .rejectingDuplicates
  ) -> Int32? {
    if let first = columns.append(
      id: id, circle: circle, polygon: polygon, name: name, metadataJSON: metadataJSON,
      ids: check)
    {
      return first
    }
    recordPosition(position, line: line)
    return nil
  }

  /// Appends a circle row read from its bytes (a CSV line, a JSON element), its name and
  /// metadata already written at the end of the columns' ``GeofenceColumns/detailText``
  /// (`details`); as ``append(id:circle:polygon:name:metadataJSON:position:line:ids:)``
  /// otherwise.
  mutating func append(
    id: String, probe: IDLookup.Probe?, circle: PackedCircle,
    writtenDetails details: GeofenceColumns.DetailSpan?,
    position: DefinitionLocation.Position, line: Int?,
    ids check: GeofenceColumns.IDCheck = .rejectingDuplicates
  ) -> Int32? {
    if let first = columns.append(
      id: id, probe: probe, circle: circle, writtenDetails: details, ids: check)
    {
      return first
    }
    recordPosition(position, line: line)
    return nil
  }

  /// Records where the row just appended was defined.
  private mutating func recordPosition(_ position: DefinitionLocation.Position, line: Int?) {
    switch position {
    case .line(let n):
      positions.append(Int32(clamping: n))
      if !elementLines.isEmpty { elementLines.append(-1) }
    case .index(let n):
      positions.append(Int32(clamping: n))
      if elementLines.count < positions.count - 1 {
        elementLines.append(contentsOf: repeatElement(-1, count: positions.count - 1))
      }
      // 0: the element's line is not known.
      elementLines.append(Int32(clamping: line ?? 0))
    }
  }

  /// Merges the results of several files into one set with unique ids.
  ///
  /// Files are taken in the order given. A geofence whose id was already loaded from an earlier
  /// file (or earlier in the same result) is rejected with
  /// ``DefinitionProblem/duplicateID(firstDefinedAt:)`` naming the first definition, which wins.
  /// Each file's rejections, including these, stay in file order.
  /// - Parameter results: per-file results, in priority order.
  /// - Returns: the union, ids unique.
  /// - Complexity: O(n) in the total number of definitions (expected, hashing ids).
  public static func merging(_ results: consuming [GeofenceLoadResult]) -> GeofenceLoadResult {
    // One file's ids are already unique (``GeofenceLoadAccumulator``): nothing to merge.
    if results.count == 1 { return results.removeLast() }
    var merged = GeofenceLoadResult()
    merged.columns.reserveCapacity(results.reduce(0) { $0 + $1.count })
    for k in results.indices {
      let result = results[k]
      results[k] = GeofenceLoadResult()
      var fileRejections = result.rejected
      var addedDuplicates = false
      var file = 0
      let c = result.columns
      for row in 0..<result.count {
        while file < result.files.count && result.files[file].firstRow <= row {
          merged.beginFile(result.files[file].name)
          file += 1
        }
        let location = result.location(at: row)
        let d = c.details(at: row)
        if let first = merged.append(
          id: c.ids[row], circle: c.circles[row], polygon: c.polygon(at: row), name: d?.name,
          metadataJSON: d?.metadataJSON, position: location.position, line: location.line)
        {
          fileRejections.append(
            GeofenceRejection(
              location: location, id: c.ids[row],
              reason: .duplicateID(firstDefinedAt: merged.location(at: Int(first)))))
          addedDuplicates = true
        }
      }
      while file < result.files.count {
        merged.beginFile(result.files[file].name)
        file += 1
      }
      if addedDuplicates {
        fileRejections = fileRejections.sortedByPosition()
      }
      merged.rejected += fileRejections
      merged.truncations += result.truncations
    }
    return merged
  }
}

extension DefinitionLocation.Position {
  /// The line or index, for ordering within one file.
  var ordinal: Int {
    switch self {
    case .line(let n), .index(let n): return n
    }
  }
}

extension [GeofenceRejection] {
  /// Stable sort by position within the file.
  func sortedByPosition() -> [GeofenceRejection] {
    enumerated().sorted {
      let a = $0.element.location.position.ordinal
      let b = $1.element.location.position.ordinal
      return a != b ? a < b : $0.offset < $1.offset
    }.map(\.element)
  }
}

/// Collects the definitions of one file: validates each, rejects duplicate ids (the first
/// loaded definition wins).
struct GeofenceLoadAccumulator {
  var result = GeofenceLoadResult()
  let file: String
  let defaultRadiusMeters: Double?
  /// How ids are checked: ``GeofenceColumns/IDCheck/rejectingDuplicates``, or
  /// ``GeofenceColumns/IDCheck/deferred`` for the later part of a file read on two threads
  /// (its duplicates are then found by ``GeofenceLoadResult/append(deferredPart:)``).
  let ids: GeofenceColumns.IDCheck
  /// One polygon validator (one GEOS context) for the whole file (or part).
  let polygons = PolygonValidator()
  /// The later part of a CSV file read on two threads, and the file's malformed-record issues,
  /// held until ``joinHeldPart()`` so that the caller can release the file's bytes first: the
  /// join then touches the pages of the later rows' columns while the file no longer holds
  /// its own (the peak of a load, one copy of the file lower).
  var heldPart: (part: GeofenceLoadResult, issues: [DelimitedTextIssue])?

  init(
    file: String, defaultRadiusMeters: Double?,
    ids: GeofenceColumns.IDCheck = .rejectingDuplicates
  ) {
    self.file = file
    self.defaultRadiusMeters = defaultRadiusMeters
    self.ids = ids
    result.beginFile(file)
  }

  /// Appends the part ``heldPart`` holds (``GeofenceLoadResult/append(deferredPart:)``), then
  /// the issues as rejections, as reading the file on one thread records them; nothing when
  /// no part is held.
  mutating func joinHeldPart() {
    guard let (part, issues) = heldPart.take() else { return }
    result.append(deferredPart: part)
    rejectIssues(issues)
  }

  /// Each issue as a rejection of its line (``DefinitionProblem/malformedRecord(_:)``).
  mutating func rejectIssues(_ issues: [DelimitedTextIssue]) {
    for issue in issues {
      reject(at: .line(issue.line), id: nil, reason: .malformedRecord(issue.message))
    }
  }

  mutating func reserveCapacity(_ n: Int) {
    result.columns.reserveCapacity(n, ids: ids)
    result.positions.reserveCapacity(n)
  }

  /// Validates `definition` found at `position` and records the geofence or the rejection.
  mutating func add(
    _ definition: RawGeofenceDefinition, at position: DefinitionLocation.Position,
    line: Int? = nil
  ) {
    let valid: ValidatedDefinition
    do {
      valid = try GeofenceValidator.validatedParts(
        definition, defaultRadiusMeters: defaultRadiusMeters, polygons: polygons)
    } catch {
      reject(
        at: position, line: line, id: GeofenceValidator.identifier(of: definition),
        reason: error)
      return
    }
    add(valid, at: position, line: line)
  }

  /// Records the geofence of a definition that passed ``GeofenceValidator`` (or a reader's
  /// equal checks), found at `position`: a row, or a duplicate-id rejection naming the row
  /// that holds the id.
  mutating func add(
    _ valid: ValidatedDefinition, at position: DefinitionLocation.Position, line: Int? = nil
  ) {
    if let first = result.append(
      id: valid.id, circle: valid.circle, polygon: valid.polygon, name: valid.name,
      metadataJSON: valid.metadataJSON, position: position, line: line, ids: ids)
    {
      reject(
        at: position, line: line, id: valid.id,
        reason: .duplicateID(firstDefinedAt: result.location(at: Int(first))))
    }
  }

  /// The ``IDLookup/Probe`` of an id given as bytes (nil when not ASCII, or when ids are
  /// ``GeofenceColumns/IDCheck/deferred``), for
  /// ``add(id:probe:circle:writtenDetails:at:line:)`` of the same row: taken early, it starts the
  /// load of the id's bucket while the rest of the row is read.
  func idProbe(utf8 bytes: UnsafeBufferPointer<UInt8>) -> IDLookup.Probe? {
    ids == .deferred ? nil : result.columns.lookup.probe(asciiUTF8: bytes)
  }

  /// Runs `write` on the end of the columns' name and metadata bytes
  /// (``GeofenceColumns/detailText``), where it appends a row's name, then its metadata text,
  /// and returns how many bytes each took (−1 or 0 for none; see
  /// ``add(id:probe:circle:writtenDetails:at:line:)``, which must follow).
  /// - Returns: where they are, or nil (nothing written) when the row has neither.
  mutating func writeDetails(_ write: (inout [UInt8]) -> (name: Int, metadata: Int))
    -> GeofenceColumns.DetailSpan?
  {
    let start = result.columns.detailText.count
    let (name, metadata) = write(&result.columns.detailText)
    if name < 0 && metadata <= 0 { return nil }
    return GeofenceColumns.DetailSpan(
      start: start, nameCount: Int32(name), metadataCount: metadata > 0 ? Int32(metadata) : -1)
  }

  /// Records a valid circle read from its bytes (a CSV line at `position` `.line`, or a JSON
  /// element at `.index` starting on line `line`), whose name and metadata
  /// ``writeDetails(_:)`` has just written: a row, or a duplicate-id rejection (its bytes
  /// taken back) naming the row that holds the id. `probe`: the id's
  /// ``IDLookup/probe(asciiUTF8:)`` taken from ``idProbe(utf8:)`` for this row, or nil.
  mutating func add(
    id: String, probe: IDLookup.Probe?, circle: PackedCircle,
    writtenDetails details: GeofenceColumns.DetailSpan?,
    at position: DefinitionLocation.Position, line: Int? = nil
  ) {
    if let first = result.append(
      id: id, probe: probe, circle: circle, writtenDetails: details, position: position,
      line: line, ids: ids)
    {
      reject(
        at: position, line: line, id: id,
        reason: .duplicateID(firstDefinedAt: result.location(at: Int(first))))
    }
  }

  mutating func reject(
    at position: DefinitionLocation.Position, line: Int? = nil, id: String?,
    reason: DefinitionProblem
  ) {
    result.rejected.append(
      GeofenceRejection(
        location: DefinitionLocation(file: file, position: position, line: line), id: id,
        reason: reason))
  }
}
