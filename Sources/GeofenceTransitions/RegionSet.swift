import GeofenceGeometry
import GeofenceIndex

/// The monitored regions: their spatial index, their ids, and the order in which events that
/// happen at the same fix are reported.
///
/// Regions are addressed by **slot**, their position in the array given to `init` (as in
/// ``GridIndex``). Events of one type at one fix are ordered by the UTF-8 bytes of the region
/// id (lexicographically, shorter prefix first); the rank of each slot in that order is
/// computed once here. Equal ids (which a valid set does not have) are ordered by slot.
///
/// A value type whose arrays are shared between copies: giving the same set to many
/// detectors does not copy it.
public struct RegionSet: Sendable {
  /// The spatial index over the regions.
  public let index: GridIndex
  /// Region id per slot.
  public let ids: [String]
  /// Region per slot (the same regions as in ``index``).
  public let regions: [CircularRegion]
  /// Rank of each slot in UTF-8 byte order of ``ids`` (0-based).
  public let ranks: [Int32]

  /// Builds the set from geofences; slot `i` is `geofences[i]`.
  /// - Parameters:
  ///   - geofences: the regions, at most `Int32.max` of them.
  ///   - cellSizeDegrees: passed to ``GridIndex/init(regions:cellSizeDegrees:)``.
  /// - Complexity: O(n log n · L) for n geofences with ids of length L, plus the index build.
  public init(geofences: [Geofence], cellSizeDegrees: Double? = nil) {
    self.init(
      ids: geofences.map(\.id), regions: geofences.map(\.region),
      cellSizeDegrees: cellSizeDegrees)
  }

  /// Builds the set from parallel arrays; slot `i` is `(ids[i], regions[i])`.
  /// - Precondition: `ids.count == regions.count <= Int32.max`.
  /// - Complexity: O(n log n · L) for n regions with ids of length L, plus the index build.
  public init(ids: [String], regions: [CircularRegion], cellSizeDegrees: Double? = nil) {
    precondition(ids.count == regions.count, "one id per region")
    precondition(ids.count <= Int(Int32.max), "at most Int32.max regions")
    self.index = GridIndex(regions: regions, cellSizeDegrees: cellSizeDegrees)
    self.ids = ids
    self.regions = regions
    let bytes = ids.map { Array($0.utf8) }
    let order = ids.indices.sorted { a, b in
      let x = bytes[a]
      let y = bytes[b]
      if x.lexicographicallyPrecedes(y) { return true }
      if y.lexicographicallyPrecedes(x) { return false }
      return a < b
    }
    var ranks = [Int32](repeating: 0, count: ids.count)
    for (rank, slot) in order.enumerated() { ranks[slot] = Int32(rank) }
    self.ranks = ranks
  }

  /// Number of regions.
  public var count: Int { ids.count }

  /// The id of the region in `slot`.
  public func id(at slot: Int32) -> String { ids[Int(slot)] }

  /// The region in `slot`.
  public func region(at slot: Int32) -> CircularRegion { regions[Int(slot)] }
}
