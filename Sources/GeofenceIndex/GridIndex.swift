import GeofenceGeometry

/// Answers "which regions' closed discs contain this point?" for a fixed set of circular regions.
///
/// Regions are addressed by **slot**: the position of the region in the array given to
/// `init`, as `Int32`.
///
/// NOTE: this is the API contract with a linear-scan body; the grid implementation replaces the
/// body without changing the API.
public struct GridIndex: Sendable {
  @usableFromInline internal var regions: [CircularRegion]

  /// Builds the index.
  /// - Parameters:
  ///   - regions: the regions; slot `i` is `regions[i]`.
  ///   - cellSizeDegrees: finest cell edge in degrees, or `nil` to choose from the radii.
  public init(regions: [CircularRegion], cellSizeDegrees: Double? = nil) {
    self.regions = regions
  }

  /// Number of regions.
  public var count: Int { regions.count }

  /// The region in `slot`.
  public func region(at slot: Int32) -> CircularRegion { regions[Int(slot)] }

  /// Replaces `result`'s contents with the slots of every region whose closed disc contains
  /// `point`, in no particular order. Reuses `result`'s capacity.
  public func query(_ point: Coordinate, into result: inout [Int32]) {
    result.removeAll(keepingCapacity: true)
    let v = UnitVector(point)
    for (i, r) in regions.enumerated() where r.contains(v) { result.append(Int32(i)) }
  }
}
