import DelimitedText
import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import NumberText
import JSONText

/// `geofence plan`: which geofences a phone should register under an OS region budget.
enum PlanCommand {
  static let help = """
    usage: geofence plan ([--radius METRES] --regions FILE ... | --store DIR)
                         --at LAT,LON --budget N [options]

    Plans the regions a phone should register with its OS when it may monitor only N
    (iOS: 20 per app, Android: 100, less the app's own), for a device at LAT,LON, and prints
    the plan as one JSON object: the refresh circle, the chosen geofences nearest edge first,
    and the diff against the current registration (remove, then the refresh circle, then
    add). docs/engine.md, "The OS region budget", gives the rules.

      --regions FILE, --radius METRES   as for 'geofence replay'
      --store DIR             the set stored by 'geofence sync'
      --at LAT,LON            the device's position, WGS84 degrees
      --accuracy METRES       its horizontal accuracy (default 0); shrinks the refresh circle
      --budget N              slots, the refresh circle included, 1-10000
      --registered ID         an id the OS monitors now; repeat for several (the refresh
                              circle's id is geofence.refresh)
      --registered-file FILE  ids the OS monitors now, one per line
      --min-refresh METRES    smallest refresh radius (default 100)
      --max-refresh METRES    largest refresh radius (default 5000)
      --margin METRES         kept between the refresh circle and the nearest geofence not
                              chosen, beside the accuracy (default 50)

    exit status: 0; 64 usage error; 65 a geofence file or --registered-file could not be
    parsed, or the store is damaged ('geofence repair'); 66 an input file or the store is
    missing; 69 the store holds no synced set; 74 standard output could not be written.
    """

  static let spec = CommandLineArguments.Spec(
    valued: [
      "regions", "radius", "store", "at", "accuracy", "budget", "registered", "registered-file",
      "min-refresh", "max-refresh", "margin",
    ],
    flags: ["help", "quiet"])

  struct Options {
    var regionFiles: [(path: String, radius: Double?)] = []
    var store: String?
    var position: Coordinate
    var accuracy: Double
    var configuration: RegionBudgetPlanner.Configuration
    var registered: [String]
    var registeredFile: String?
    var quiet: Bool

    init(_ args: CommandLineArguments) throws(UsageError) {
      var radius: Double?
      for (name, value) in args.ordered {
        if name == "radius" {
          radius = try CommandLineArguments.radiusMeters(value)
        } else if name == "regions" {
          regionFiles.append((value, radius))
        }
      }
      store = args.last("store")
      if regionFiles.isEmpty == (store == nil) {
        throw UsageError("give either --regions FILE ... or --store DIR")
      }
      if let extra = args.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
      guard let at = args.last("at") else { throw UsageError("give --at LAT,LON") }
      let parts = at.split(separator: ",", omittingEmptySubsequences: false)
      // RFC 8259 numbers, as every other number option (no hex, no `+`, no `inf`).
      guard parts.count == 2, let lat = NumberText.double(String(parts[0])),
        let lon = NumberText.double(String(parts[1])),
        let c = try? Coordinate(latitude: lat, longitude: lon)
      else {
        throw UsageError(
          "--at needs LAT,LON in degrees (latitude -90...90, longitude -180...180), got '\(at)'")
      }
      position = c
      accuracy = try args.double("accuracy", range: 0...1e7) ?? 0
      guard let budget = try args.int("budget", range: 1...10_000) else {
        throw UsageError("give --budget N (slots, the refresh circle included)")
      }
      let minimum = try args.double("min-refresh", range: 1...1e7) ?? 100
      let maximum = try args.double("max-refresh", range: 1...1e7) ?? 5_000
      guard minimum <= maximum else {
        throw UsageError("--min-refresh must not exceed --max-refresh")
      }
      configuration = .init(
        budget: budget, minimumRefreshRadiusMeters: minimum, maximumRefreshRadiusMeters: maximum,
        marginMeters: try args.double("margin", range: 0...1e7) ?? 50)
      registered = args.all("registered")
      if registered.contains(where: { $0.isEmpty }) {
        throw UsageError("--registered needs a geofence id, got an empty one")
      }
      quiet = args.flag("quiet")
      registeredFile = args.last("registered-file")
    }

    /// Adds the ids of `--registered-file` (one per line, blank lines skipped).
    /// - Returns: why the file cannot be read and the exit status (66 missing or unreadable,
    ///   65 not text), or nil.
    mutating func readRegisteredFile() -> (problem: String, status: Int32)? {
      if let file = registeredFile {
        if let problem = inputProblem(file) {
          return ("--registered-file \(file): \(problem)", ExitStatus.noInput)
        }
        let data: Data
        do { data = try TextFile.read(atPath: file) } catch {
          return (
            "--registered-file \(file): cannot read the file: \(error.reason)",
            error.isContent ? ExitStatus.dataError : ExitStatus.noInput
          )
        }
        guard let text = String(validating: data, as: UTF8.self) else {
          return ("--registered-file \(file): cannot be read as UTF-8 text", ExitStatus.dataError)
        }
        registered += text.split(whereSeparator: \.isNewline).map {
          $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
      }
      return nil
    }
  }

  static func run(_ argv: [String]) -> Int32 {
    var options: Options
    do throws(UsageError) {
      let args = try CommandLineArguments(argv, spec: spec)
      if args.flag("help") {
        print(help)
        return ExitStatus.ok
      }
      options = try Options(args)
    } catch {
      printError("geofence plan: \(error.message)\nRun 'geofence plan --help' for usage.")
      return ExitStatus.usage
    }
    if let (problem, status) = options.readRegisteredFile() {
      printError("geofence plan: \(problem)")
      return status
    }
    let geofences: [Geofence]
    if let store = options.store {
      let path = URL(fileURLWithPath: store).appendingPathComponent("geofences.sqlite").path
      guard FileManager.default.fileExists(atPath: path) else {
        printError("geofence plan: no geofence store in \(store) (run 'geofence sync' first)")
        return ExitStatus.noInput
      }
      if let status = damagedStoreStatus(store, command: "plan") { return status }
      do {
        let engine = try GeofenceEngine(
          configuration: .init(checkpoints: .none), storage: .directory(store))
        guard (try? engine.setState())?.version != nil else {
          printError("geofence plan: no synced geofence set in \(store); run 'geofence sync' first")
          return ExitStatus.unavailable
        }
        geofences = engine.geofences
      } catch {
        if let status = storeInUseStatus(error, command: "plan") { return status }
        printError("geofence plan: \(store): \(error)")
        return ExitStatus.ioError
      }
    } else {
      switch RunCommand.loadRegionFiles(options.regionFiles, quiet: options.quiet) {
      case .success(let g): geofences = g.geofences
      case .failure(let f):
        printError("geofence plan: \(f.message)")
        return f.status
      }
    }
    var planner = RegionBudgetPlanner(
      set: RegionSet(geofences: geofences), configuration: options.configuration)
    let plan = planner.plan(
      position: options.position, accuracyMeters: options.accuracy,
      registered: options.registered)
    print(json(plan, geofences: geofences))
    return ExitStatus.ok
  }

  /// The plan as one JSON object (keys in a fixed order).
  static func json(_ plan: RegionBudgetPlanner.Plan, geofences: [Geofence]) -> String {
    var refresh = JSONObjectWriter(numberStyle: .integersWithoutFraction)
    refresh.add("id", string: RegionBudgetPlanner.refreshIdentifier)
    refresh.add("latitude", number: plan.refreshCenter.latitude)
    refresh.add("longitude", number: plan.refreshCenter.longitude)
    refresh.add("radius_m", number: JSONText.rounded(plan.refreshRadiusMeters, decimals: 3))
    refresh.add("guaranteed", bool: plan.refreshGuaranteed)
    var chosen: [String] = []
    for (k, slot) in plan.slots.enumerated() {
      let g = geofences[Int(slot)]
      var o = JSONObjectWriter(numberStyle: .integersWithoutFraction)
      o.add("id", string: g.id)
      if let name = g.name { o.add("name", string: name) }
      o.add("edge_distance_m", number: JSONText.rounded(plan.edgeDistancesMeters[k], decimals: 3))
      chosen.append(o.finish())
    }
    var out = JSONObjectWriter(numberStyle: .integersWithoutFraction)
    out.add("refresh", raw: refresh.finish())
    out.add("geofences", raw: "[" + chosen.joined(separator: ",") + "]")
    if plan.nextEdgeDistanceMeters.isFinite {
      out.add(
        "next_edge_distance_m", number: JSONText.rounded(plan.nextEdgeDistanceMeters, decimals: 3))
    } else {
      out.addNull("next_edge_distance_m")
    }
    out.add("remove", raw: "[" + plan.removals.map(JSONText.quoted).joined(separator: ",") + "]")
    out.add("add", raw: "[" + plan.additions.map(JSONText.quoted).joined(separator: ",") + "]")
    return out.finish()
  }
}
