/// One position report from a device: where, when, how accurate.
///
/// Times are seconds since 1970-01-01T00:00:00Z (UTC, Unix epoch) as `Double`: about 0.2 µs of
/// resolution for present-day dates, finer than any GNSS receiver reports.
public struct LocationFix: Hashable, Sendable {
  /// Position (WGS84 degrees).
  public var coordinate: Coordinate
  /// Fix time in seconds since the Unix epoch (UTC); `nil` when the source had no valid time.
  public var time: Double?
  /// Horizontal accuracy in metres (radius of 68 % confidence, as iOS and Android report it);
  /// `nil` when unknown. Negative values mark an invalid fix (Core Location's convention).
  public var horizontalAccuracy: Double?
  /// The device that reported the fix; `nil` for single-device sources.
  public var deviceID: String?
  /// 0-based index of the fix in its source as written (CSV data row or GPX point), for
  /// reporting. -1 when the fix did not come from a file.
  public var sourceIndex: Int

  public init(
    coordinate: Coordinate, time: Double?, horizontalAccuracy: Double? = nil,
    deviceID: String? = nil, sourceIndex: Int = -1
  ) {
    self.coordinate = coordinate
    self.time = time
    self.horizontalAccuracy = horizontalAccuracy
    self.deviceID = deviceID
    self.sourceIndex = sourceIndex
  }
}
