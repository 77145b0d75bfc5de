import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import TrackFormats

/// The table `geofence replay --os-budget N` prints: per track and budget, the engine's
/// ENTER/EXIT transitions against what an OS monitoring only the planned regions reports.
struct OSBudgetTable {
  let budgets: [Int]
  private var planners: [RegionBudgetPlanner]
  private var totals: [OSBudgetComparison]
  private var tracks = 0

  /// - Parameter geofences: the replayed set (indexed once more for the planner).
  init(budgets: [Int], geofences: [Geofence]) {
    self.budgets = budgets
    let set = RegionSet(geofences: geofences)
    planners = budgets.map { RegionBudgetPlanner(set: set, configuration: .init(budget: $0)) }
    totals = budgets.map { _ in OSBudgetComparison() }
  }

  let header =
    "track\tbudget\tengine_transitions\tos_transitions\tmissed\tlate\tworst_late\tplans\tpeak_registered\n"

  /// `text` as one field of the tab-separated table: a backslash, tab, line feed or carriage
  /// return is written `\\`, `\t`, `\n`, `\r` (the escapes of PostgreSQL's text COPY format),
  /// so a file name holding one cannot add a column or a row.
  static func field(_ text: String) -> String {
    // By scalars: "\r\n" is one Character, equal to neither "\r" nor "\n".
    let special: Set<Unicode.Scalar> = ["\\", "\t", "\n", "\r"]
    guard text.unicodeScalars.contains(where: special.contains) else { return text }
    var out = ""
    for c in text.unicodeScalars {
      switch c {
      case "\\": out += "\\\\"
      case "\t": out += "\\t"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      default: out.unicodeScalars.append(c)
      }
    }
    return out
  }

  /// One line per budget for a file: its devices' tracks, as ``ReplayPreparation`` orders them.
  mutating func rows(file: String, track: TrackReadResult, engineEvents: [GeofenceEvent]) -> String
  {
    tracks += 1
    let prepared = ReplayPreparation(track.fixes).tracks
    let fileDevice = ReplayInput(file: file, track: track).device
    var text = ""
    for (b, budget) in budgets.enumerated() {
      var comparison = OSBudgetComparison()
      var plans = 0
      var peak = 0
      var usesTime = true
      for device in prepared {
        let id = device.deviceID ?? fileDevice
        usesTime = usesTime && device.usesTime
        var simulator = OSRegionMonitorSimulator(planner: planners[b])
        let result = simulator.simulate(device.fixes)
        plans += result.plans
        peak = max(peak, result.peakRegistered)
        let set = planners[b].set
        let os = result.transitions.map { t -> OSBudgetComparison.Report in
          (set.id(at: t.slot), t.type, device.usesTime ? (t.time ?? 0) : Double(t.fixIndex))
        }
        let engine = engineEvents.filter { $0.deviceID == id }.map {
          e -> OSBudgetComparison.Report in
          (e.geofenceID, e.type, device.usesTime ? (e.time ?? 0) : Double(e.fixIndex ?? 0))
        }
        comparison += OSBudgetComparison(engine: engine, os: os)
      }
      totals[b] += comparison
      let worst = String(format: "%.1f%@", comparison.worstLateness, usesTime ? " s" : " fixes")
      text +=
        "\(Self.field(file))\t\(budget)\t\(comparison.engineTransitions)\t\(comparison.osTransitions)\t"
        + "\(comparison.missed)\t\(comparison.late)\t\(worst)\t\(plans)\t\(peak)\n"
    }
    return text
  }

  /// One line per budget over every track: `os-budget N: missed M of T transitions ...`.
  var summary: String {
    var text = ""
    for (b, budget) in budgets.enumerated() {
      let t = totals[b]
      text +=
        "os-budget \(budget): missed \(t.missed) of \(t.engineTransitions) transitions over "
        + "\(tracks) track\(tracks == 1 ? "" : "s"), \(t.late) late (worst "
        + String(format: "%.1f", t.worstLateness) + ")\n"
    }
    return text
  }
}
