import GeofenceGeometry
import GeofenceTransitions

/// Metres per degree of latitude (or of longitude on the equator) on the mean sphere:
/// π / 180 × 6,371,008.8 m = 111,195.080 m, so 1e-3° = 111.195 m.
let metersPerDegree = Double.pi / 180 * EarthModel.meanRadiusMeters

/// A coordinate `meters` due north of `center` (exact on the sphere: along a meridian).
func north(of center: Coordinate, _ meters: Double) -> Coordinate {
  Coordinate(
    uncheckedLatitude: center.latitude + meters / metersPerDegree, longitude: center.longitude)
}

/// A fix at `latitude`, `longitude`.
func fix(
  _ latitude: Double, _ longitude: Double, t: Double?, accuracy: Double? = nil,
  device: String? = nil, index: Int = -1
) -> LocationFix {
  LocationFix(
    coordinate: Coordinate(uncheckedLatitude: latitude, longitude: longitude), time: t,
    horizontalAccuracy: accuracy, deviceID: device, sourceIndex: index)
}

/// A region set from `(id, latitude, longitude, radius)` rows.
func regionSet(_ rows: [(String, Double, Double, Double)]) -> RegionSet {
  RegionSet(
    geofences: rows.map { row in
      Geofence(
        id: row.0,
        region: try! CircularRegion(
          center: Coordinate(uncheckedLatitude: row.1, longitude: row.2), radiusMeters: row.3))
    })
}

/// A compact, comparable form of an event: type, region id, fix time.
struct Summary: Equatable, CustomStringConvertible {
  var type: TransitionType
  var id: String
  var time: Double?
  var description: String { "\(type.rawValue) \(id) @\(time.map { "\($0)" } ?? "-")" }
}

func summaries(_ events: [TransitionEvent], _ regions: RegionSet) -> [Summary] {
  events.map { Summary(type: $0.type, id: regions.id(at: $0.slot), time: $0.fix.time) }
}

/// Runs `fixes` through one live detector; returns the events and each fix's outcome.
func runLive(
  _ fixes: [LocationFix], _ regions: RegionSet,
  _ configuration: TransitionConfiguration = TransitionConfiguration()
) -> (events: [TransitionEvent], outcomes: [FixOutcome], detector: TransitionDetector) {
  var detector = TransitionDetector(regions: regions, configuration: configuration)
  var events: [TransitionEvent] = []
  var outcomes: [FixOutcome] = []
  for f in fixes { outcomes.append(detector.process(f, into: &events)) }
  return (events, outcomes, detector)
}

/// A configuration with no outlier filter, no hysteresis and no accuracy limit.
func plainConfiguration() -> TransitionConfiguration {
  var c = TransitionConfiguration()
  c.outlierFilter = nil
  c.hysteresisMinimumMeters = 0
  c.hysteresisRadiusFraction = 0
  c.maxAccuracyMeters = .infinity
  return c
}
