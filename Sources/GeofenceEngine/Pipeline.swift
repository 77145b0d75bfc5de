import EventOutbox
import GeofenceGeometry
import GeofenceTransitions
import JSONText
import LocationAuthorization
import TrackFormats

/// What a ``MonitoringPipeline`` did so far.
public struct PipelineReport: Hashable, Sendable {
  /// Fixes handed to the pipeline.
  public var fixes = 0
  /// Fixes dropped by the gate because monitoring was off.
  public var notAuthorized = 0
  /// The same, by blocker (a fix counts once for every blocker that applied).
  public var blockedCounts: [MonitoringBlocker: Int] = [:]
  /// Fixes the detector dropped, by reason.
  public var dropCounts = DropCounts()
  /// Events created, by type (`enter`, `exit`, `dwell`).
  public var eventCounts: [String: Int] = [:]
  /// Events flagged as coming after a monitoring gap.
  public var afterGapEvents = 0
  /// Events added to the outbox (an event already queued with the same id is not added again).
  public var enqueued = 0
  /// Monitoring gaps opened.
  public var gaps = 0
  /// Queued events deleted because consent was withdrawn.
  public var deletedForConsent = 0

  public init() {}

  /// All events created.
  public var events: Int { eventCounts.values.reduce(0, +) }
}

/// The main pipeline: authorization gate → transition detector → outbox.
///
/// One ``MonitoringGate`` per device (fixes without a device id form one device); every gate
/// shares the current authorization state. Each fix's events are turned into
/// ``OutboxEvent``s (stable ids, identity tagged at creation; see
/// ``outboxEvent(for:deviceID:)``) and enqueued durably in one transaction before
/// ``process(_:)`` returns.
///
/// **Consent withdrawn** ends the tracking session: the outbox is emptied (pending, in flight
/// and dead letters) and every device's region state is forgotten, since the events that
/// reported it are gone. When consent is given again, monitoring starts as on a fresh install
/// (regions outside, no gap flag), so the events in the outbox still alternate ENTER, EXIT per
/// region. An OS-level downgrade (denied, when-in-use in the background, reduced accuracy,
/// not registered) keeps both the queued events and the region state, and opens a gap.
///
/// Not `Sendable`: owns an ``Outbox``.
public final class MonitoringPipeline {
  public let regions: MonitoredRegions
  public let outbox: Outbox
  public let identity: MonitoringIdentity
  public let configuration: TransitionConfiguration
  public let policy: AuthorizationPolicy
  /// The current authorization state.
  public private(set) var state: AuthorizationState
  /// Counts so far.
  public private(set) var report = PipelineReport()
  private var gates: [String?: MonitoringGate] = [:]
  private var gated: [GatedEvent] = []

  /// - Parameters:
  ///   - regions: the monitored regions (the seam for the synced set).
  ///   - outbox: where events go.
  ///   - identity: user / anonymous / device ids.
  ///   - configuration: the detector's rules.
  ///   - policy: which grants allow monitoring.
  ///   - state: the authorization state at the start. Default
  ///     ``AuthorizationTimeline/granted``. With consent off, the outbox is emptied at once.
  /// - Throws: from the outbox.
  public init(
    regions: MonitoredRegions, outbox: Outbox, identity: MonitoringIdentity,
    configuration: TransitionConfiguration = TransitionConfiguration(),
    policy: AuthorizationPolicy = .default,
    state: AuthorizationState = AuthorizationTimeline.granted
  ) throws {
    self.regions = regions
    self.outbox = outbox
    self.identity = identity
    self.configuration = configuration
    self.policy = policy
    self.state = state
    if policy.decide(state).mustDeleteQueuedEvents {
      report.deletedForConsent += try outbox.deleteAll()
    }
  }

  /// Applies a change of authorization at `time` (seconds since the Unix epoch) to every
  /// device. When consent is off, deletes every queued event and forgets the region states.
  /// - Returns: the policy's decision for `newState`.
  @discardableResult
  public func apply(_ newState: AuthorizationState, at time: Double) throws
    -> AuthorizationDecision
  {
    state = newState
    var decision = policy.decide(newState)
    for (key, var gate) in gates {
      let before = gate.gapCount
      decision = gate.update(newState, at: time)
      report.gaps += gate.gapCount - before
      gates[key] = gate
    }
    if decision.mustDeleteQueuedEvents {
      report.deletedForConsent += try outbox.deleteAll()
      gates.removeAll()
    }
    return decision
  }

  /// Passes one fix through its device's gate and detector, and enqueues the events durably.
  /// - Returns: the events created (empty when the gate dropped the fix).
  /// - Complexity: the detector's cost plus one outbox transaction when there are events.
  @discardableResult
  public func process(_ fix: LocationFix) throws -> [GatedEvent] {
    report.fixes += 1
    var gate =
      gates.removeValue(forKey: fix.deviceID)
      ?? MonitoringGate(
        detector: TransitionDetector(regions: regions.regionSet, configuration: configuration),
        policy: policy, state: state)
    gated.removeAll(keepingCapacity: true)
    let outcome = gate.process(fix, into: &gated)
    switch outcome {
    case .notAuthorized:
      report.notAuthorized += 1
      for blocker in gate.decision.blockers { report.blockedCounts[blocker, default: 0] += 1 }
    case .evaluated(.dropped(let reason)):
      report.dropCounts[reason] += 1
    case .evaluated(.accepted):
      break
    }
    gates[fix.deviceID] = gate
    guard !gated.isEmpty else { return [] }
    let deviceID = fix.deviceID ?? identity.deviceID
    var events: [OutboxEvent] = []
    events.reserveCapacity(gated.count)
    for e in gated {
      report.eventCounts[e.transition.type.rawValue, default: 0] += 1
      if e.afterGap { report.afterGapEvents += 1 }
      events.append(outboxEvent(for: e, deviceID: deviceID))
    }
    report.enqueued += try outbox.enqueue(contentsOf: events)
    return gated
  }

  /// Replays fixes in time order (a stable sort; fixes without a time come last and are
  /// dropped by the detector as `missingTime`), applying each timeline change before the
  /// first fix at or after its time, and the remaining changes at the end.
  /// - Parameters:
  ///   - fixes: the fixes, any order.
  ///   - timeline: authorization changes.
  ///   - afterFix: called after each fix that created events (for example to send due
  ///     batches).
  /// - Returns: the counts so far (``report``).
  @discardableResult
  public func replay(
    _ fixes: [LocationFix], timeline: AuthorizationTimeline = AuthorizationTimeline(changes: []),
    afterFix: () throws -> Void = {}
  ) throws -> PipelineReport {
    let ordered = fixes.enumerated().sorted {
      ($0.element.time ?? .infinity, $0.offset) < ($1.element.time ?? .infinity, $1.offset)
    }
    var next = 0
    for (_, fix) in ordered {
      let t = fix.time ?? .infinity
      while next < timeline.changes.count, timeline.changes[next].time <= t {
        try apply(timeline.changes[next].state, at: timeline.changes[next].time)
        next += 1
      }
      if try !process(fix).isEmpty { try afterFix() }
    }
    while next < timeline.changes.count {
      try apply(timeline.changes[next].state, at: timeline.changes[next].time)
      next += 1
    }
    return report
  }

  // MARK: Events

  /// The outbox form of a gated event.
  ///
  /// **Id**: ``OutboxEventID/derive(_:prefix:)`` over (geofence id, region lifetime, type,
  /// fix time in whole milliseconds, device id): the same fix processed again (after a crash,
  /// or a replay of the same track) makes the same id, which the outbox and the server store
  /// once.
  ///
  /// **Payload** (the protocol's event fields): `type`, `geofence_id`, `geofence_name` (when
  /// known), `device_id`, `user_id` (``MonitoringIdentity/current`` at creation),
  /// `anonymous`, `time` (RFC 3339, UTC, milliseconds), `latitude`, `longitude`, `accuracy`
  /// (when known), `distance_m`, `dwell_s` (dwell only), `after_gap`, `gap_start`.
  /// - Precondition: the fix has a time (the pipeline's detectors require one).
  public func outboxEvent(for event: GatedEvent, deviceID: String) -> OutboxEvent {
    let t = event.transition
    let slot = Int(t.slot)
    let geofence = regions.geofences[slot]
    let time = t.fix.time ?? 0
    let millis = Int64((time * 1000).rounded())
    let id = OutboxEventID.derive([
      geofence.id, regions.lifetimes[slot], t.type.rawValue, String(millis), deviceID,
    ])
    var json = JSONObjectWriter()
    json.add("type", string: t.type.rawValue)
    json.add("geofence_id", string: geofence.id)
    if let name = geofence.name { json.add("geofence_name", string: name) }
    json.add("device_id", string: deviceID)
    json.add("user_id", string: identity.current)
    json.add("anonymous", bool: identity.isAnonymous)
    json.add("time", string: RFC3339.format(time))
    json.add("latitude", number: t.fix.coordinate.latitude)
    json.add("longitude", number: t.fix.coordinate.longitude)
    if let a = t.fix.horizontalAccuracy { json.add("accuracy", number: a) }
    json.add("distance_m", number: JSONText.rounded(t.distanceMeters, decimals: 1))
    json.add("dwell_s", number: t.dwellSeconds)
    json.add("after_gap", bool: event.afterGap)
    if let g = event.gapStart {
      json.add("gap_start", string: RFC3339.format(g))
    } else {
      json.addNull("gap_start")
    }
    return OutboxEvent(id: id, payload: json.finish())
  }
}
