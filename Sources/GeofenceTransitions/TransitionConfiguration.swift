/// The rules a ``TransitionDetector`` applies to turn fixes into transition events.
///
/// Every field has a default chosen for phone tracks that mix GNSS and network (cell / Wi-Fi)
/// fixes; `TransitionConfiguration()` gives them all. Values outside a field's documented range
/// are a programming error: the detector's behaviour for them is unspecified.
///
/// All times are fix times (seconds since the Unix epoch, from ``LocationFix/time``); no rule
/// ever reads a wall clock.
public struct TransitionConfiguration: Hashable, Sendable {
  /// Fixes whose horizontal accuracy (metres) is greater than this are dropped as
  /// ``DropReason/inaccurate`` and change no state.
  ///
  /// Default 200 m (a coarse cell-tower fix is usually worse; a Wi-Fi or GNSS fix is better).
  /// Range: > 0, `.infinity` to keep every fix.
  public var maxAccuracyMeters: Double = 200

  /// When true, a region is entered only by a fix whose horizontal accuracy (when the fix has
  /// one) is `<= radiusMeters` of that region, so that a fix too vague to place the device
  /// inside the region cannot enter it. A fix without an accuracy may enter.
  ///
  /// Default true.
  public var requiresAccuracyWithinRadiusToEnter: Bool = true

  /// Smallest exit hysteresis in metres. The hysteresis of a region of radius `r` is
  /// `h = max(hysteresisMinimumMeters, hysteresisRadiusFraction * r)`, and an EXIT needs
  /// `d - accuracy > r + h`, a missing accuracy counting as 0 (see ``TransitionDetector``).
  ///
  /// Default 20 m (about the horizontal accuracy of a phone's GNSS fix in a town, so that the
  /// scatter of fixes at rest on the boundary does not toggle the region). Range: >= 0.
  public var hysteresisMinimumMeters: Double = 20

  /// Exit hysteresis as a fraction of the radius (see ``hysteresisMinimumMeters``).
  ///
  /// Default 0.1 (150 m for a 1.5 km town). Range: >= 0.
  public var hysteresisRadiusFraction: Double = 0.1

  /// Time inside a region, in seconds, after which one DWELL event is emitted for the visit: at
  /// the first accepted fix whose time is `>= enterTime + loiteringDelaySeconds`, where
  /// `enterTime` is the time of the fix that emitted the ENTER (the confirming fix when time
  /// confirmation is on). `nil` turns dwell events off. Tracks without times never dwell.
  ///
  /// Default 300 s (Android's and most SDKs' customary loitering delay). Range: >= 0 or nil.
  public var loiteringDelaySeconds: Double? = 300

  /// When true, regions start *outside* when monitoring starts, so the first fix inside a
  /// region gives an ENTER. When false, the regions that the first accepted fix is inside (by
  /// the ENTER rule) are marked inside silently, with that fix's time as their enter time for
  /// dwell.
  ///
  /// Default true (the behaviour of Android's `INITIAL_TRIGGER_ENTER`).
  public var initialTrigger: Bool = true

  /// Implied-speed outlier rejection, or `nil` to accept every fix that passes the other
  /// checks. See ``OutlierFilter``.
  ///
  /// Default `OutlierFilter()` (on).
  public var outlierFilter: OutlierFilter? = OutlierFilter()

  /// Time confirmation: an ENTER or EXIT condition must hold on this many consecutive accepted
  /// fixes before the transition is emitted (at the fix that completes the count). Any
  /// interruption restarts the count.
  ///
  /// Default 1 (no confirmation: a transition is emitted at the first fix that satisfies its
  /// rule). Range: >= 1. Combine with ``confirmationSeconds``: a transition is confirmed when
  /// either requirement is met.
  public var confirmationFixCount: Int = 1

  /// Time confirmation in seconds: an ENTER or EXIT condition that has held continuously on
  /// every accepted fix from a fix at time `t0` is confirmed at the first fix whose time is
  /// `>= t0 + confirmationSeconds`. `nil` turns the time requirement off. Ignored for tracks
  /// without times.
  ///
  /// Default nil. Range: >= 0 or nil. To confirm by time only, set ``confirmationFixCount`` to
  /// `Int.max` (a track without times then confirms at once, its time requirement ignored).
  public var confirmationSeconds: Double? = nil

  /// Inference of the regions passed through between two accepted fixes (see
  /// ``CrossingInference``), or `nil` for none: only fixes inside a region enter it.
  ///
  /// Default nil (off): measured on the real tracks in `data/tracks` (docs/engine.md,
  /// "Crossings between sparse fixes"). Ignored by detectors without times.
  public var crossingInference: CrossingInference? = nil

  /// The defaults described on each field.
  public init() {}

  /// The exit hysteresis in metres for a region of radius `radiusMeters`:
  /// `max(hysteresisMinimumMeters, hysteresisRadiusFraction * radiusMeters)`.
  /// - Complexity: O(1).
  @inlinable
  public func hysteresisMeters(forRadius radiusMeters: Double) -> Double {
    max(hysteresisMinimumMeters, hysteresisRadiusFraction * radiusMeters)
  }
}

/// Rejects fixes that imply an impossible speed from the last accepted fix.
///
/// Phone tracks interleave GNSS fixes with network fixes that can sit kilometres away (a cell
/// tower's position, a stale cached fix) and jump there and back within seconds. Hysteresis
/// alone does not stop the resulting enter/exit flapping, because such a jump lands deep inside
/// or far outside a region. The filter works on the **accuracy-aware implied speed** from the
/// last accepted fix `p` to the new fix `q`:
///
///     v = max(0, d(p, q) - accuracy(p) - accuracy(q)) / (t(q) - t(p))
///
/// (a missing accuracy counts as 0), and drops `q` as ``DropReason/outlier`` when
/// `v > maxSpeedMetersPerSecond`. Subtracting both accuracies means that two honest fixes whose
/// error circles overlap are never rejected, however close in time.
///
/// Recovery when the jump was real (or the last accepted fix was itself the outlier):
/// - **Elapsed time**: the speed is measured from the last *accepted* fix, so a real move
///   becomes plausible once enough time has passed (`d / maxSpeed` seconds). An accepted fix
///   that repeats the previous accepted fix's exact coordinates is a re-report (a provider
///   replaying its cached position; a receiver that really sits still still jitters in the
///   last digits), so it does not move the reference time forward: on the posmo train track a
///   stale position re-reported for 90 s otherwise makes the real movement away from it look
///   impossible, and three towns on the line are never entered.
/// - **Long gap**: a fix that arrives `resetGapSeconds` or more after the previous fix seen by
///   the filter (accepted or rejected) is accepted: after a long silence anything may have
///   happened.
/// - **Consistent fixes at the new place**: rejected fixes that are mutually consistent (each
///   plausible from the previous rejected one by the same speed test) are counted; a fix that
///   repeats the previous rejected fix's exact position adds nothing (a network provider
///   re-reporting a cached position is no new evidence). The fix that brings the count to
///   `recoveryFixCount` is accepted and becomes the new reference.
///
/// Tracks without times are not filtered (there is no speed without time).
public struct OutlierFilter: Hashable, Sendable {
  /// Largest plausible ground speed in metres per second.
  ///
  /// Default 70 m/s (252 km/h): above motorway driving and intercity trains (up to 200–250
  /// km/h), so ground travel is never rejected, while a network fix that jumps more than about
  /// 350 m beyond the error circles in 5 s is. On a real Neuchâtel–Lausanne train track with
  /// interleaved cell fixes (`data/tracks/csv/posmo_trajectory.csv`) 70 m/s removes all
  /// enter/exit flapping of 1.5 km town regions, while 85 m/s and more lets a cell fix re-enter
  /// a town 30 s after leaving it. High-speed rail and aircraft need a larger value. Range: > 0.
  public var maxSpeedMetersPerSecond: Double = 70

  /// Number of mutually consistent, distinct rejected fixes after which the filter accepts the
  /// new place.
  ///
  /// Default 3: three distinct positions agreeing with each other are unlikely to be one
  /// provider's jitter, and the stale position a network provider re-reports (identical
  /// coordinates) never counts twice. Range: >= 2.
  public var recoveryFixCount: Int = 3

  /// A fix arriving at least this many seconds after the previous fix seen by the filter is
  /// accepted whatever its speed.
  ///
  /// Default 300 s: after five minutes without any fix the device may have travelled anywhere
  /// (but 300 s × 70 m/s = 21 km is also covered by the elapsed-time recovery). Range: > 0,
  /// `.infinity` to disable.
  public var resetGapSeconds: Double = 300

  /// The defaults described on each field.
  public init() {}

  /// A filter with the given parameters (see each field for its range).
  public init(
    maxSpeedMetersPerSecond: Double, recoveryFixCount: Int = 3, resetGapSeconds: Double = 300
  ) {
    self.maxSpeedMetersPerSecond = maxSpeedMetersPerSecond
    self.recoveryFixCount = recoveryFixCount
    self.resetGapSeconds = resetGapSeconds
  }
}
