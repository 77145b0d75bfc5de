import GeofenceGeometry
import GeofenceTransitions

/// Times ``RegionBudgetPlanner/plan(position:accuracyMeters:registered:)`` along a workload's
/// tracks: one plan at each of the first fixes, each given the registration the previous plan
/// made (so the diffs are those of a moving device).
public enum PlannerBenchmark {
  /// The figures of one workload and budget.
  public struct Result: Sendable {
    public var workload: String
    public var regionCount: Int
    public var budget: Int
    public var plans: Int
    /// Median and 99th percentile time of one plan, microseconds (each plan timed alone).
    public var medianMicroseconds: Double
    public var p99Microseconds: Double
    /// Mean geofences chosen per plan, and mean additions + removals per plan.
    public var meanChosen: Double
    public var meanChanges: Double
    /// Plans whose refresh circle was clamped to the minimum radius.
    public var unguaranteed: Int
  }

  /// - Parameters:
  ///   - workload: the regions (ids are slots) and the fixes planned at.
  ///   - budget: the planner's budget (refresh circle included).
  ///   - plans: how many fixes to plan at (at most the workload's).
  /// - Complexity: one index build plus `plans` plans.
  public static func run(_ workload: Workload, budget: Int, plans: Int) -> Result {
    let set = RegionSet(
      ids: workload.regions.indices.map { String($0) }, regions: workload.regions)
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: budget))
    let count = min(plans, workload.fixes.count)
    var times: [Double] = []
    times.reserveCapacity(count)
    var registration: [String] = []
    var chosen = 0
    var changes = 0
    var unguaranteed = 0
    for k in 0..<count {
      let start = SystemProbes.monotonicNanoseconds()
      let plan = planner.plan(
        position: workload.fixes[k], accuracyMeters: 10, registered: registration)
      times.append(Double(SystemProbes.monotonicNanoseconds() - start) / 1_000)
      registration = plan.registration
      chosen += plan.ids.count
      changes += plan.additions.count + plan.removals.count
      if !plan.refreshGuaranteed { unguaranteed += 1 }
    }
    times.sort()
    let n = Double(max(1, count))
    return Result(
      workload: workload.name, regionCount: workload.regions.count, budget: budget,
      plans: count, medianMicroseconds: times.isEmpty ? 0 : times[times.count / 2],
      p99Microseconds: times.isEmpty ? 0 : times[min(times.count - 1, times.count * 99 / 100)],
      meanChosen: Double(chosen) / n, meanChanges: Double(changes) / n,
      unguaranteed: unguaranteed)
  }
}
