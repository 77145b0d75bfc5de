import GeofenceGeometry

/// One geofence transition as the engine reports it to the outside world (CLI output, outbox).
public struct EventRecord: Hashable, Sendable {
  /// `"enter"`, `"exit"` or `"dwell"`.
  public var type: String
  /// The geofence's id.
  public var regionID: String
  /// The geofence's display name, if any.
  public var regionName: String?
  /// The device the fix came from, if the source names devices.
  public var deviceID: String?
  /// Time of the fix that caused the event, seconds since the Unix epoch (UTC); `nil` for a
  /// track without times.
  public var time: Double?
  /// 0-based index of the causing fix in its file as written (row or GPX point).
  public var fixIndex: Int
  /// Position of the causing fix, degrees.
  public var latitude: Double
  public var longitude: Double
  /// Horizontal accuracy of the causing fix in metres, if known.
  public var accuracy: Double?
  /// Great-circle distance from the fix to the geofence centre, metres.
  public var distanceMeters: Double
  /// For dwell: seconds since the visit's enter; `nil` otherwise.
  public var dwellSeconds: Double?

  public init(
    type: String, regionID: String, regionName: String?, deviceID: String?, time: Double?,
    fixIndex: Int, latitude: Double, longitude: Double, accuracy: Double?,
    distanceMeters: Double, dwellSeconds: Double?
  ) {
    self.type = type
    self.regionID = regionID
    self.regionName = regionName
    self.deviceID = deviceID
    self.time = time
    self.fixIndex = fixIndex
    self.latitude = latitude
    self.longitude = longitude
    self.accuracy = accuracy
    self.distanceMeters = distanceMeters
    self.dwellSeconds = dwellSeconds
  }
}
