/// Rules for inferring the regions a device passed through between two accepted fixes that
/// both lie outside them (``TransitionConfiguration/crossingInference``).
///
/// Phones on the move often report nothing usable for minutes (network fixes that are
/// dropped as inaccurate or as outliers), and a town crossed in that time is never entered.
/// When two consecutive accepted fixes `p` (time `t0`) and `q` (time `t1`) are both outside
/// a region's disc, the detector's state for it is outside, and the great-circle segment from
/// `p` to `q` passes through the disc (``GeofenceGeometry/GreatCircleSegment``), the detector
/// emits an ENTER and an EXIT for it, both flagged ``TransitionEvent/inferred``, before the
/// events of `q`. This is Tile38's `cross` detection, told in the events consumers already
/// know: an ENTER/EXIT pair rather than a new event type, so that ENTER and EXIT still
/// alternate per region and a consumer that ignores the flag sees an ordinary short visit.
///
/// ## The inferred pair
/// - The path is taken as the great-circle segment from `p` to `q`, travelled at constant
///   speed from a start time `t0` (below) to `t1`: the ENTER is at the point where the segment
///   enters the disc, the EXIT where it leaves it, and their times are interpolated by
///   distance along the segment, `t0 + (t1 − t0) · s / L` for a point at `s` metres of the
///   segment's `L`.
/// - A segment must pass deeper inside the disc than the region's exit hysteresis `h`
///   (``TransitionConfiguration/hysteresisMeters(forRadius:)``) and than 1 µm: its closest
///   distance from the centre must be below `radius − max(h, 1e-6)` m. The hysteresis is the
///   detector's own margin against one bad fix, mirrored: an EXIT needs the device `h` beyond
///   the circle, an inferred visit needs the path `h` inside it (on the posmo track this keeps
///   a segment back from a network fix that had just caused an EXIT from Cortaillod from
///   re-entering it). With no hysteresis, a segment that only touches the circle (closest
///   distance within 1 µm of the radius, the tolerance of the detector's other geometric
///   tests) is still no crossing: its visit would last no time, and rounding alone would
///   decide whether it exists.
/// - The region's state does not change (outside before, outside after); no DWELL, no time
///   confirmation (the pair is emitted at `q` whatever
///   ``TransitionConfiguration/confirmationFixCount`` says), no hysteresis.
/// - The events of one segment are in time order; equal times by region id
///   (``RegionSet/precedes(_:_:)``), an ENTER before its EXIT. All come before the events of
///   `q` itself.
/// - Each event's fix is the interpolated point: its time, its position, the larger of the two
///   fixes' accuracies (`nil` when neither has one) and `q`'s device and source index. The
///   distance is from the centre to that point (the radius up to rounding); the EXIT's visit
///   length is the EXIT time minus the ENTER time.
///
/// ## The segment's start time
/// Network providers re-report a cached position long after the device has left it, and the
/// detector accepts those reports (they imply no speed). So the device is taken to leave `p`
/// as late as it can and still reach `q` at the outlier filter's speed
/// (``OutlierFilter/maxSpeedMetersPerSecond``, both accuracies subtracted from `L`):
/// `t0 = min(t0', t1 − max(0, L − a_p − a_q) / maxSpeed)`, where `t0'` is `p`'s time. `t0` may
/// not be earlier than the first of the run of accepted fixes within ``samePlaceMeters`` of
/// each other that ends at `p` (the first report of that place): then even leaving at the
/// first report, the device could not have made it, and nothing is inferred. On the posmo
/// track a position re-reported until 10 s before the next good fix, 15 km away, gives
/// `t0` 214 s before that fix, within the five minutes the position had been reported for.
/// Without the outlier filter `t0 = t0'`.
///
/// ## Guards
/// A segment is used only when all hold:
/// - `t1 − t0 <= maxGapSeconds` and its length `<= maxGapMeters`;
/// - with the outlier filter on, the pair is plausible at the filter's speed from the first
///   report of `p`'s place (above): a fix accepted by the filter's recovery after a jump too
///   fast for that gives nothing;
/// - both accuracies (0 when missing) are `<= maxAccuracyMeters`, and `<=` the region's
///   radius: a fix less precise than the region is small cannot say it was outside it.
///
/// Detectors without times infer nothing.
///
/// ## Cost
/// Per accepted fix after the first: one index walk around the segment's midpoint
/// (``GeofenceIndex/GridIndex/forEachCandidate(near:withinMeters:_:)``) and an O(1) test per
/// candidate; no allocation once the scratch buffer has grown.
public struct CrossingInference: Hashable, Sendable {
  /// Longest time from the segment's start time `t0` to the later fix, in seconds.
  ///
  /// Default 300 s, the outlier filter's ``OutlierFilter/resetGapSeconds``: past it the filter
  /// itself holds that the device may have gone anywhere, so no path is assumed either.
  /// Range: >= 0.
  public var maxGapSeconds: Double = 300

  /// Longest segment between the two fixes, in metres (great-circle distance).
  ///
  /// Default 20,000 m. A railway or main road seldom strays more than about a kilometre from
  /// the straight line between two of its points 20 km apart, less than the radius of the
  /// 1.5 km town regions; the posmo train track's gap past Gorgier and Saint-Aubin-Sauges is a
  /// 15 km segment (docs/engine.md, "Crossings between sparse fixes"). Range: >= 0.
  public var maxGapMeters: Double = 20_000

  /// Largest horizontal accuracy of either fix, in metres (a missing accuracy counts as 0).
  ///
  /// Default 100 m: a GNSS fix (5–20 m) or a good Wi-Fi fix passes; a cell-tower fix
  /// (hundreds of metres), whose position is where the tower is rather than where the device
  /// is, does not. Range: >= 0.
  public var maxAccuracyMeters: Double = 100

  /// Accepted fixes within this distance (metres) of the first of a run are taken as reports
  /// of the same place, so that the device may have left it as early as that first report
  /// (see "The segment's start time").
  ///
  /// Default 50 m: a provider re-reporting a cached position repeats it to the metre (on the
  /// posmo train track, one position within 3 m for five minutes while the train travels
  /// 15 km), and GNSS fixes at rest scatter by 5–20 m. Range: >= 0.
  public var samePlaceMeters: Double = 50

  /// The defaults described on each field.
  public init() {}

  /// Rules with the given guards (see each field for its range).
  public init(
    maxGapSeconds: Double = 300, maxGapMeters: Double = 20_000, maxAccuracyMeters: Double = 100,
    samePlaceMeters: Double = 50
  ) {
    self.maxGapSeconds = maxGapSeconds
    self.maxGapMeters = maxGapMeters
    self.maxAccuracyMeters = maxAccuracyMeters
    self.samePlaceMeters = samePlaceMeters
  }
}
