import GeofenceGeometry

/// The outcome of reading one definition file (or several, merged): the geofences that loaded
/// and the definitions that were rejected.
public struct GeofenceLoadResult: Equatable, Sendable {
  /// Valid geofences in file order, ids unique.
  public var geofences: [Geofence]
  /// Where each geofence was defined: `locations[i]` belongs to `geofences[i]`.
  public var locations: [DefinitionLocation]
  /// Rejected definitions, in file order (files in the order they were merged).
  public var rejected: [GeofenceRejection]
  /// Files that break off inside their list of definitions (JSON or GeoJSON text that ends
  /// early), each with where and why (``GeofenceFileError/Reason/truncated(_:)``).
  /// ``geofences`` then holds the complete definitions before the end and nothing after it;
  /// callers report such a file as damaged (exit 65) and still use those geofences.
  public var truncations: [GeofenceFileError] = []

  public init(
    geofences: [Geofence] = [], locations: [DefinitionLocation] = [],
    rejected: [GeofenceRejection] = []
  ) {
    precondition(geofences.count == locations.count, "one location per geofence")
    self.geofences = geofences
    self.locations = locations
    self.rejected = rejected
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
  public static func merging(_ results: [GeofenceLoadResult]) -> GeofenceLoadResult {
    // One file's ids are already unique (``GeofenceLoadAccumulator``): nothing to merge.
    if results.count == 1 { return results[0] }
    var merged = GeofenceLoadResult()
    // The index in `merged` of each id's first definition: 4 bytes a value, where a
    // location takes 48.
    var firstIndex: [String: Int32] = [:]
    firstIndex.reserveCapacity(results.reduce(0) { $0 + $1.geofences.count })
    for result in results {
      var fileRejections = result.rejected
      var addedDuplicates = false
      for (geofence, location) in zip(result.geofences, result.locations) {
        if let first = firstIndex[geofence.id] {
          fileRejections.append(
            GeofenceRejection(
              location: location, id: geofence.id,
              reason: .duplicateID(firstDefinedAt: merged.locations[Int(first)])))
          addedDuplicates = true
          continue
        }
        firstIndex[geofence.id] = Int32(merged.geofences.count)
        merged.geofences.append(geofence)
        merged.locations.append(location)
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
  /// The index in `result` of each id's definition (4 bytes a value, where a location takes
  /// 48).
  var firstIndex: [String: Int32] = [:]
  let file: String
  let defaultRadiusMeters: Double?
  /// One polygon validator (one GEOS context) for the whole file.
  let polygons = PolygonValidator()

  init(file: String, defaultRadiusMeters: Double?) {
    self.file = file
    self.defaultRadiusMeters = defaultRadiusMeters
  }

  mutating func reserveCapacity(_ n: Int) {
    result.geofences.reserveCapacity(n)
    result.locations.reserveCapacity(n)
    firstIndex.reserveCapacity(n)
  }

  /// Validates `definition` found at `position` and records the geofence or the rejection.
  mutating func add(
    _ definition: RawGeofenceDefinition, at position: DefinitionLocation.Position,
    line: Int? = nil
  ) {
    let geofence: Geofence
    do {
      geofence = try GeofenceValidator.validated(
        definition, defaultRadiusMeters: defaultRadiusMeters, polygons: polygons)
    } catch {
      reject(
        at: position, line: line, id: GeofenceValidator.identifier(of: definition),
        reason: error)
      return
    }
    // One hash of the id: a duplicate puts the first definition's index back.
    let index = Int32(result.geofences.count)
    if let first = firstIndex.updateValue(index, forKey: geofence.id) {
      firstIndex[geofence.id] = first
      reject(
        at: position, line: line, id: geofence.id,
        reason: .duplicateID(firstDefinedAt: result.locations[Int(first)]))
      return
    }
    result.geofences.append(consume geofence)
    result.locations.append(DefinitionLocation(file: file, position: position, line: line))
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
