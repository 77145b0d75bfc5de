import GeofenceGeometry
import GeofenceIndex

/// Replays a track as a phone's operating system would see it when the app registers only
/// what a ``RegionBudgetPlanner`` chooses: how many of the engine's transitions the app would
/// still get, and how late.
///
/// ## The OS model
///
/// A deliberately coarse model of iOS and Android region monitoring:
/// - At each fix the OS compares the fix with every **registered** geofence: inside when the
///   great-circle distance to the centre is at most the radius (the boundary is inside).
///   A change from outside to inside is an ENTER, the reverse an EXIT; no hysteresis, no
///   accuracy rule, no dwell. Geofences not registered produce nothing.
/// - When a geofence is registered while the device is inside it, the OS reports it inside at
///   once (iOS `didDetermineState`, Android `INITIAL_TRIGGER_ENTER`): an ENTER at that fix.
///   A geofence removed while the device is inside gives no EXIT.
/// - The first fix plans (cold start). A fix outside the refresh circle (distance greater
///   than its radius) is the refresh circle's EXIT: the simulator plans again at that fix,
///   applies the diff, and then reports the ENTERs of the geofences just added that hold the
///   fix. Transitions of geofences that stay registered are evaluated before the new plan.
///
/// Real systems add delays of their own (iOS waits for about 20 s and a cushion past the
/// boundary); the model leaves them out, so its lateness comes from the budget alone.
public struct OSRegionMonitorSimulator: Sendable {
  /// A transition the OS reports.
  public struct Transition: Hashable, Sendable {
    /// ENTER or EXIT.
    public var type: TransitionType
    /// The geofence's slot in the planner's set.
    public var slot: Int32
    /// The fix that caused it: its time (seconds since 1970, `nil` untimed) and its
    /// `sourceIndex`.
    public var time: Double?
    public var fixIndex: Int
  }

  /// What a track gave.
  public struct Result: Sendable {
    /// The OS's transitions in fix order (within a fix: exits and enters of geofences that
    /// stayed registered, then the enters of geofences the plan at that fix added).
    public var transitions: [Transition]
    /// Plans made: 1 for the cold start plus one per refresh EXIT.
    public var plans: Int
    /// The most geofences registered at once, the refresh circle included.
    public var peakRegistered: Int
    /// Plans whose refresh circle was raised to the minimum radius
    /// (``RegionBudgetPlanner/Plan/refreshGuaranteed`` false). With none, and with fewer
    /// geofences holding any fix than the budget has slots for them, the OS reports exactly
    /// the transitions it would report with every geofence registered.
    public var unguaranteedPlans: Int
  }

  private var planner: RegionBudgetPlanner

  /// - Parameter planner: the planner whose choices the OS monitors.
  public init(planner: RegionBudgetPlanner) {
    self.planner = planner
  }

  /// Replays `fixes` (in time order, as ``ReplayPreparation`` gives them).
  /// - Complexity: O(n · b) for n fixes and a budget of b, plus one plan per refresh EXIT.
  public mutating func simulate(_ fixes: [LocationFix]) -> Result {
    let set = planner.set
    var registered: [Int32] = []
    var inside: [Bool] = []
    var refreshCenter: Coordinate? = nil
    var refreshRadius = 0.0
    var transitions: [Transition] = []
    var plans = 0
    var unguaranteed = 0
    var peak = 0
    for fix in fixes {
      let p = fix.coordinate
      for k in registered.indices {
        let now =
          haversineDistance(set.center(at: registered[k]), p)
          <= set.radiusMeters(at: registered[k])
        if now != inside[k] {
          inside[k] = now
          transitions.append(
            Transition(
              type: now ? .enter : .exit, slot: registered[k], time: fix.time,
              fixIndex: fix.sourceIndex))
        }
      }
      if let c = refreshCenter, haversineDistance(c, p) <= refreshRadius { continue }
      // Cold start, or the refresh circle's EXIT: plan again and apply the diff.
      plans += 1
      let plan = planner.plan(
        position: p, accuracyMeters: fix.horizontalAccuracy,
        registered: registered.map { set.id(at: $0) })
      if !plan.refreshGuaranteed { unguaranteed += 1 }
      let removed = Set(plan.removals)
      var keptSlots: [Int32] = []
      var keptInside: [Bool] = []
      for k in registered.indices where !removed.contains(set.id(at: registered[k])) {
        keptSlots.append(registered[k])
        keptInside.append(inside[k])
      }
      peak = max(peak, 1 + keptSlots.count)
      let added = Set(plan.additions)
      for slot in plan.slots where added.contains(set.id(at: slot)) {
        let now = haversineDistance(set.center(at: slot), p) <= set.radiusMeters(at: slot)
        keptSlots.append(slot)
        keptInside.append(now)
        if now {
          transitions.append(
            Transition(type: .enter, slot: slot, time: fix.time, fixIndex: fix.sourceIndex))
        }
      }
      registered = keptSlots
      inside = keptInside
      refreshCenter = plan.refreshCenter
      refreshRadius = plan.refreshRadiusMeters
      peak = max(peak, 1 + registered.count)
    }
    return Result(
      transitions: transitions, plans: plans, peakRegistered: peak,
      unguaranteedPlans: unguaranteed)
  }
}

/// How the OS's transitions compare with the engine's on one track.
///
/// Each engine ENTER or EXIT of a geofence is **delivered** when the OS reports the same type
/// for that geofence after the engine's previous transition of the other type for it and no
/// later than its next one: an ENTER of visit k is looked for after the EXIT of visit k − 1 and
/// up to the EXIT of visit k; an EXIT, after its visit's ENTER and up to the next visit's
/// ENTER. Otherwise it is **missed**. A delivered transition is **late** by the OS's first
/// report in that window minus the engine's time, when positive (in seconds; in fixes for an
/// untimed track). DWELL events are not compared.
public struct OSBudgetComparison: Hashable, Sendable {
  /// ENTER and EXIT events of the engine.
  public var engineTransitions = 0
  /// Of those, the ones the OS never reported in their window.
  public var missed = 0
  /// Of those delivered, the ones reported later than the engine's.
  public var late = 0
  /// The largest lateness (seconds, or fixes when untimed); 0 when none is late.
  public var worstLateness = 0.0
  /// The OS's ENTER and EXIT reports.
  public var osTransitions = 0

  public init() {}

  /// One ENTER or EXIT of a geofence: its id, its type, and when (seconds since 1970, or the
  /// fix index for an untimed track).
  public typealias Report = (id: String, type: TransitionType, at: Double)

  /// Compares the engine's transitions with the OS's, both in the order they happened.
  public init(engine: [Report], os: [Report]) {
    var byID: [String: [(TransitionType, Double)]] = [:]
    var order: [String] = []
    for e in engine where e.type != .dwell {
      if byID[e.id] == nil { order.append(e.id) }
      byID[e.id, default: []].append((e.type, e.at))
    }
    var osByID: [String: [(TransitionType, Double)]] = [:]
    for t in os where t.type != .dwell { osByID[t.id, default: []].append((t.type, t.at)) }
    osTransitions = os.count
    for id in order {
      let events = byID[id] ?? []
      let reports = osByID[id] ?? []
      for (k, event) in events.enumerated() {
        engineTransitions += 1
        // The window: after the previous event of the other type, up to the next one.
        var low = -Double.infinity
        for j in stride(from: k - 1, through: 0, by: -1) where events[j].0 != event.0 {
          low = events[j].1
          break
        }
        var high = Double.infinity
        for j in (k + 1)..<max(k + 1, events.count) where events[j].0 != event.0 {
          high = events[j].1
          break
        }
        guard
          let first = reports.first(where: { $0.0 == event.0 && $0.1 > low && $0.1 <= high })
        else {
          missed += 1
          continue
        }
        let lateness = first.1 - event.1
        if lateness > 0 {
          late += 1
          worstLateness = max(worstLateness, lateness)
        }
      }
    }
  }
}

extension OSBudgetComparison {
  /// Adds another track's counts (the worst lateness is the larger one).
  public static func += (a: inout OSBudgetComparison, b: OSBudgetComparison) {
    a.engineTransitions += b.engineTransitions
    a.missed += b.missed
    a.late += b.late
    a.worstLateness = max(a.worstLateness, b.worstLateness)
    a.osTransitions += b.osTransitions
  }
}
