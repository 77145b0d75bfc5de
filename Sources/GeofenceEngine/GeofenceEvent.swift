import GeofenceTransitions

/// One geofence event, as every output of the engine reports it: the replay and stream
/// output, the outbox payload and the upload wire all write this type through
/// ``GeofenceEventEncoder``.
///
/// Times are seconds since the Unix epoch (UTC); positions WGS84 degrees; distances metres.
public struct GeofenceEvent: Hashable, Sendable {
  /// The stable event id (see ``GeofenceEngine`` for how it is derived): the same transition
  /// computed again (after a crash, or a replay of the same input) has the same id.
  public var id: String
  /// ENTER, EXIT or DWELL.
  public var type: TransitionType
  /// The geofence's id.
  public var geofenceID: String
  /// The geofence's display name, if any.
  public var geofenceName: String?
  /// The geofence's metadata: the JSON object text of its definition, unchanged.
  public var metadataJSON: String?
  /// The string member `"url"` of the metadata, when it is a valid absolute URL (a scheme
  /// of RFC 3986 §3.1 followed by `:` and at least one character, with no spaces or control
  /// characters); `nil` otherwise. Campaigns put the deep link to open on ENTER there.
  public var url: String?
  /// The device the fix came from.
  public var deviceID: String
  /// The signed-in user when the event was created, if any.
  public var userID: String?
  /// The anonymous id when the event was created while nobody was signed in (engines with a
  /// persisted identity only).
  public var anonymousID: String?
  /// Time of the fix that caused the event; for a removal EXIT the time of the sync that
  /// removed the geofence. `nil` only for a track without times.
  public var time: Double?
  /// When the engine created the event, on its clock; `nil` when not recorded.
  public var processedAt: Double?
  /// Position of the causing fix (for a removal EXIT: the device's last accepted fix),
  /// degrees.
  public var latitude: Double
  public var longitude: Double
  /// Horizontal accuracy of that fix in metres, if known.
  public var accuracy: Double?
  /// Great-circle distance from that fix to the geofence's centre, metres.
  public var distanceMeters: Double
  /// DWELL: seconds inside at the dwell fix; `nil` otherwise.
  public var dwellSeconds: Double?
  /// EXIT: seconds from the visit's ENTER to this EXIT; `nil` otherwise and without times.
  public var visitSeconds: Double?
  /// True for the events of the first accepted fix after a monitoring gap (see
  /// ``MonitoringGate``).
  public var afterGap: Bool
  /// When the gap began, for events with ``afterGap``.
  public var gapStart: Double?
  /// True for an EXIT emitted because a sync removed the geofence.
  public var isRemoval: Bool
  /// 0-based index of the causing fix in its file as written (replay of files only).
  public var fixIndex: Int?
  /// The session the event was created in (``GeofenceEngine/SessionConfiguration``): the
  /// session's start on the engine's clock in whole milliseconds since the Unix epoch, as
  /// decimal digits; `nil` when the engine keeps no sessions.
  public var sessionID: String?
  /// 1-based count of sessions on the store, this one included; `nil` without sessions.
  public var sessionIndex: Int?
  /// 1-based position of the event in its session; `nil` without sessions.
  public var eventIndex: Int?
  /// True for an ENTER or EXIT inferred between two fixes (``CrossingInference``): `time`,
  /// `latitude` and `longitude` are interpolated where the segment between the fixes enters
  /// or leaves the geofence, and ``fixIndex`` is the later fix's.
  public var inferred: Bool

  public init(
    id: String, type: TransitionType, geofenceID: String, geofenceName: String? = nil,
    metadataJSON: String? = nil, url: String? = nil, deviceID: String, userID: String? = nil,
    anonymousID: String? = nil, time: Double?, processedAt: Double? = nil, latitude: Double,
    longitude: Double, accuracy: Double? = nil, distanceMeters: Double,
    dwellSeconds: Double? = nil, visitSeconds: Double? = nil, afterGap: Bool = false,
    gapStart: Double? = nil, isRemoval: Bool = false, fixIndex: Int? = nil,
    inferred: Bool = false, sessionID: String? = nil, sessionIndex: Int? = nil,
    eventIndex: Int? = nil
  ) {
    self.sessionID = sessionID
    self.sessionIndex = sessionIndex
    self.eventIndex = eventIndex
    self.id = id
    self.type = type
    self.geofenceID = geofenceID
    self.geofenceName = geofenceName
    self.metadataJSON = metadataJSON
    self.url = url
    self.deviceID = deviceID
    self.userID = userID
    self.anonymousID = anonymousID
    self.time = time
    self.processedAt = processedAt
    self.latitude = latitude
    self.longitude = longitude
    self.accuracy = accuracy
    self.distanceMeters = distanceMeters
    self.dwellSeconds = dwellSeconds
    self.visitSeconds = visitSeconds
    self.afterGap = afterGap
    self.gapStart = gapStart
    self.isRemoval = isRemoval
    self.fixIndex = fixIndex
    self.inferred = inferred
  }
}

/// Number of events per ``GeofenceTransitions/TransitionType``. A fixed-size value.
public struct EventCounts: Hashable, Sendable, CustomStringConvertible {
  private var enter = 0
  private var exit = 0
  private var dwell = 0

  public init() {}

  /// The count for `type`.
  public subscript(type: TransitionType) -> Int {
    get {
      switch type {
      case .enter: return enter
      case .exit: return exit
      case .dwell: return dwell
      }
    }
    set {
      switch type {
      case .enter: enter = newValue
      case .exit: exit = newValue
      case .dwell: dwell = newValue
      }
    }
  }

  /// All events.
  public var total: Int { enter + exit + dwell }

  /// `enter N, exit N, dwell N`.
  public var description: String {
    TransitionType.allCases.map { "\($0.rawValue) \(self[$0])" }.joined(separator: ", ")
  }

  public static func += (lhs: inout EventCounts, rhs: EventCounts) {
    for t in TransitionType.allCases { lhs[t] += rhs[t] }
  }
}
