import GeofenceGeometry
import GeofenceTransitions
import LocationAuthorization

/// A transition that passed the authorization gate.
public struct GatedEvent: Hashable, Sendable {
  /// The detector's event.
  public var transition: TransitionEvent
  /// True for the events of the first accepted fix after monitoring resumed: they are the
  /// differences between the last reported region state and the state at that fix.
  public var afterGap: Bool
  /// When monitoring stopped (the time of the authorization change that stopped it), for
  /// events with ``afterGap``; `nil` otherwise.
  public var gapStart: Double?

  public init(transition: TransitionEvent, afterGap: Bool = false, gapStart: Double? = nil) {
    self.transition = transition
    self.afterGap = afterGap
    self.gapStart = gapStart
  }
}

/// What the gate did with a fix.
public enum GateOutcome: Hashable, Sendable {
  /// Monitoring is off: the fix was dropped before evaluation (counted in
  /// ``MonitoringGate/notAuthorizedCount``), never buffered.
  case notAuthorized
  /// Monitoring is on: what the detector did.
  case evaluated(FixOutcome)
}

/// The authorization gate in front of one device's ``TransitionDetector``.
///
/// ## Rules
/// - The gate holds the current ``AuthorizationState`` and the policy's decision on it. While
///   the decision does not allow monitoring, every fix is dropped before evaluation and
///   counted as not authorized (by blocker too); it is not kept for later.
/// - A downgrade changes no region state: the detector keeps the state it last reported, so
///   there is no EXIT at the downgrade.
/// - A **gap** opens when monitoring stops after it has run (its start is the time of the
///   change that stopped it; further changes while stopped keep the first start). At the first
///   fix the detector accepts after monitoring resumes, the detector's usual rules compare the
///   fix with the last reported state: every event of that fix is flagged
///   ``GatedEvent/afterGap`` with ``GatedEvent/gapStart``, and the gap closes. So ENTER and
///   EXIT still alternate per region. (With time confirmation, an event confirmed at a later
///   fix is not flagged.) Crossings inferred from the segment between the last fix before the
///   gap and that fix (``GeofenceTransitions/CrossingInference``) are dropped: they would say
///   where the device went while it was not monitored.
/// - Whether queued events must be deleted (consent withdrawn) is the decision's
///   ``AuthorizationDecision/mustDeleteQueuedEvents``; the gate reports it from
///   ``update(_:at:)`` and the caller (``MonitoringPipeline``) deletes.
///
/// The gate adds O(1) work per fix to the detector's cost, and allocates only when the
/// scratch event buffer grows.
public struct MonitoringGate: Sendable {
  /// Which grants allow monitoring.
  public let policy: AuthorizationPolicy
  /// The current authorization state.
  public private(set) var state: AuthorizationState
  /// The policy's decision for ``state``.
  public private(set) var decision: AuthorizationDecision
  /// The detector behind the gate.
  public internal(set) var detector: TransitionDetector
  /// Fixes dropped because monitoring was off.
  public private(set) var notAuthorizedCount = 0
  /// Fixes dropped because monitoring was off, by blocker (a fix counts once for every
  /// blocker that applied).
  public private(set) var blockedCounts: [MonitoringBlocker: Int] = [:]
  /// The start of the open gap, if monitoring stopped after it had run and no fix has been
  /// accepted since it resumed.
  public private(set) var gapStart: Double?
  /// Gaps opened so far.
  public private(set) var gapCount = 0
  private var hasMonitored = false
  private var scratch: [TransitionEvent] = []

  /// - Parameters:
  ///   - detector: a fresh or running detector.
  ///   - policy: which grants allow monitoring. Default ``AuthorizationPolicy/default``.
  ///   - state: the state at the start. Default ``AuthorizationState/initial`` (not
  ///     determined: monitoring off).
  public init(
    detector: TransitionDetector, policy: AuthorizationPolicy = .default,
    state: AuthorizationState = .initial
  ) {
    self.detector = detector
    self.policy = policy
    self.state = state
    self.decision = policy.decide(state)
  }

  /// Applies a new authorization state that took effect at `time` (seconds since the Unix
  /// epoch).
  /// - Returns: the new decision. When ``AuthorizationDecision/mustDeleteQueuedEvents`` is
  ///   true, the caller deletes the queued events.
  /// - Complexity: O(1).
  @discardableResult
  public mutating func update(_ newState: AuthorizationState, at time: Double)
    -> AuthorizationDecision
  {
    let wasMonitoring = decision.mayMonitor
    state = newState
    decision = policy.decide(newState)
    if wasMonitoring && !decision.mayMonitor && hasMonitored && gapStart == nil {
      gapStart = time
      gapCount += 1
    }
    return decision
  }

  /// Passes one fix through the gate: dropped when monitoring is off, else evaluated by the
  /// detector, its events appended to `events` (flagged when they close a gap).
  /// - Complexity: the detector's ``TransitionDetector/process(_:into:)``.
  @discardableResult
  public mutating func process(_ fix: LocationFix, into events: inout [GatedEvent])
    -> GateOutcome
  {
    guard decision.mayMonitor else {
      notAuthorizedCount += 1
      for blocker in decision.blockers { blockedCounts[blocker, default: 0] += 1 }
      return .notAuthorized
    }
    hasMonitored = true
    if !scratch.isEmpty { scratch.removeAll(keepingCapacity: true) }
    let outcome = detector.process(fix, into: &scratch)
    if case .accepted = outcome {
      let gap = gapStart
      for e in scratch {
        // A crossing inferred across the gap would report where the device went while it
        // was not monitored.
        if gap != nil && e.inferred { continue }
        events.append(GatedEvent(transition: e, afterGap: gap != nil, gapStart: gap))
      }
      gapStart = nil
    }
    return .evaluated(outcome)
  }

  /// The gate's own state (not the detector's), for a checkpoint.
  public var checkpoint: GateCheckpoint {
    GateCheckpoint(
      hasMonitored: hasMonitored, gapStart: gapStart, gapCount: gapCount,
      notAuthorizedCount: notAuthorizedCount)
  }

  /// A gate restored from a checkpoint, over `detector`, deciding `state` with `policy`.
  public init(
    detector: TransitionDetector, policy: AuthorizationPolicy, state: AuthorizationState,
    restoring c: GateCheckpoint
  ) {
    self.init(detector: detector, policy: policy, state: state)
    hasMonitored = c.hasMonitored
    gapStart = c.gapStart
    gapCount = c.gapCount
    notAuthorizedCount = c.notAuthorizedCount
  }
}

/// What a ``MonitoringGate`` keeps besides its detector: whether monitoring has run, the open
/// gap and the counters.
public struct GateCheckpoint: Hashable, Sendable, Codable {
  public var hasMonitored: Bool
  /// Seconds since the Unix epoch.
  public var gapStart: Double?
  public var gapCount: Int
  public var notAuthorizedCount: Int
}
