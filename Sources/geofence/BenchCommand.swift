import Foundation
import GeofenceBenchmarks

/// `geofence bench`: measures the index and the detector on generated or real geofence sets and
/// writes the workload files that the peer benchmarks in `tools/bench` read.
enum BenchCommand {
  static let usage = """
    usage: swift run -c release geofence bench [options]

    Measures, per workload and region count N: index build time, query throughput (fixes/s on
    one thread and on all threads), per-fix latency (p50, p99, from batches of 100 fixes),
    index + geometry bytes per region, the detector path (index + transitions per device), and
    a checksum of the containment pairs for comparing answers with other engines.

    workloads:
      metro        N circles, centres uniform in a 55 km x 55 km city box, radius 50-500 m;
                   random-walk tracks of 1,000 fixes, 1 s apart, 1.5-15 m/s
      global       centres area-uniform over the sphere, radius 100 m - 5 km; tracks also start
                   at the antimeridian, near the poles and inside 64 hub regions (some
                   straddling the antimeridian or covering a pole)
      mixed        radius 20 m - 50 km in one set (98 % up to 1 km), 550 km x 550 km box
      transitions  the metro regions; tracks cross a region boundary every 2-5 fixes
      real         data/places towns (144k, r = 1.5 km) and airports (28k, r = 3 km) against
                   every track in data/tracks (N fixed by the file)
      polygons     point-in-polygon instead (default sizes 10000,100000): each metro circle
                   becomes a concave polygon of 4-1,000 vertices inscribed in it (70-100 % of
                   the radius); prints fixes/s for the index alone, with our point-in-polygon
                   and with GEOS prepared covers on the same candidates (100,000 fixes), the
                   checksum, and bytes per vertex. With --write-workloads: polygons-<N>-
                   regions.wkt (one WKT polygon a line, line k = slot k) and
                   polygons-<N>-fixes.csv, the input of tools/bench/run-peers --workload
                   polygons

    options:
      --workload W[,W...]   metro, global, mixed, transitions, real or all (default: all)
      --sizes N[,N...]      region counts for generated workloads, 1-10000000; a size given
                            twice is measured once (default: 10000,100000,1000000)
      --fixes N             fixes per generated workload, in tracks of 1,000 (default: 1000000)
      --seed S              base seed of the generators (default: 1)
      --threads T           threads for the all-cores figures (default: online processors)
      --repetitions R       timed passes per figure, median reported (default: 3)
      --min-pass SECONDS    target length of a timed pass, 0-600: a pass replays the fixes
                            as many whole times as a calibration pass says it takes to last
                            this long, plus a tenth (default: 0.2; 0 = once, no calibration)
      --budget SECONDS      time budget of the first pass; fewer tracks are measured if it
                            runs out (default: 120)
      --cell-size DEGREES   finest grid cell edge (default: chosen by the index)
      --no-detector         skip the detector path
      --plan N[,N...]       measure the OS region budget planner instead, with these budgets
                            (refresh circle included; a budget given twice is measured
                            once): one plan at each of the first 20,000
                            fixes, each given the previous plan's registration; prints the
                            median and p99 microseconds per plan
      --load FILE[,FILE...] measure the geofence reader instead (CSV, JSON, GeoJSON): each
                            file read into memory, then parsed with validation in timed
                            passes; prints MB/s and rows/s per file
      --load-tracks FILE[,FILE...]
                            the same for the track reader (CSV, GPX)
      --radius METRES       with --load: the radius of definitions without one
      --polygons            the same as --workload polygons
      --data DIR            the data folder for 'real' (default: data)
      --from DIR            read workloads from files written by --write-workloads instead of
                            generating them (all sizes found for the selected workloads;
                            circle workloads only)
      --write-workloads DIR write each workload as <name>-<N>-regions.csv and
                            <name>-<N>-fixes.csv (the input of tools/bench/run-peers)
      --write-only          with --write-workloads: write the files and measure nothing
      --json FILE           write the results as JSON
      --svg FILE            write a chart of throughput and bytes per region against N
      --quiet               no progress line on standard error
      -h, --help            show this help

    Regions file: id,latitude,longitude,radius_m (id = slot, 0-based). Fixes file:
    track,t,latitude,longitude (t finite). Each needs at least one row. Checksum: pairs, sum
    of slots mod 2^64, sum of fix index x slot mod 2^64 (fix index = 0-based row in the fixes
    file).

    exit status: 0 done; 64 usage error; 65 a malformed workload file (file:line and why);
    66 an input file or folder missing or unreadable; 73 an output file or folder that cannot
    be created (checked before measuring); 74 standard output or an output file failed while
    writing.
    """

  static let spec = CommandLineArguments.Spec(
    valued: [
      "workload", "sizes", "fixes", "seed", "threads", "repetitions", "min-pass", "budget",
      "cell-size", "data", "from", "write-workloads", "json", "svg", "plan", "load",
      "load-tracks", "radius",
    ],
    flags: ["help", "no-detector", "write-only", "quiet", "polygons"])

  struct Settings {
    var kinds: [WorkloadKind] = WorkloadKind.allCases
    var sizes = [10_000, 100_000, 1_000_000]
    var fixes = 1_000_000
    var seed: UInt64 = 1
    var options = BenchmarkOptions()
    var dataDirectory = "data"
    var fromDirectory: String?
    var writeDirectory: String?
    var writeOnly = false
    var jsonPath: String?
    var svgPath: String?
    var quiet = false
    /// `--plan` budgets: time the planner instead of the index and detector.
    var planBudgets: [Int] = []
    /// `--load` files: time the geofence reader instead.
    var loadPaths: [String] = []
    /// `--load-tracks` files: time the track reader instead.
    var trackPaths: [String] = []
    /// `--radius`: metres for definitions without a radius (`nil` rejects them).
    var loadRadiusMeters: Double?
    /// `--polygons`: point-in-polygon rows on the metro workloads instead.
    var polygons = false
  }

  static func run(_ args: [String]) -> Int32 {
    let settings: Settings
    do {
      let parsed = try CommandLineArguments(args, spec: spec)
      if parsed.flag("help") {
        print(usage)
        return ExitStatus.ok
      }
      settings = try parse(parsed)
    } catch {
      printError("geofence bench: \(error.message)\n\n\(usage)")
      return ExitStatus.usage
    }
    do {
      return try execute(settings)
    } catch let error as WorkloadFileError {
      BenchProgress.shared.clear()
      printError("geofence bench: \(error)")
      switch error {
      case .cannotOpen: return ExitStatus.noInput
      case .cannotCreate: return ExitStatus.cannotCreate
      case .writeFailed: return ExitStatus.ioError
      case .malformed: return ExitStatus.dataError
      }
    } catch let error as OutputError {
      BenchProgress.shared.clear()
      printError("geofence bench: \(error.path): \(error.reason)")
      return error.status
    } catch {
      BenchProgress.shared.clear()
      printError("geofence bench: \(error)")
      return ExitStatus.failure
    }
  }

  static func parse(_ a: CommandLineArguments) throws(UsageError) -> Settings {
    var s = Settings()
    if !a.positionals.isEmpty {
      throw UsageError("unexpected argument '\(a.positionals[0])'")
    }
    if let list = a.last("workload") {
      var kinds: [WorkloadKind] = []
      for name in list.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
        if name.isEmpty {
          throw UsageError("--workload needs names separated by single commas, got '\(list)'")
        } else if name == "all" {
          kinds.append(contentsOf: WorkloadKind.allCases)
        } else if name == "polygons" {
          s.polygons = true
          kinds.append(.metro)
        } else if let k = WorkloadKind(rawValue: name) {
          kinds.append(k)
        } else {
          throw UsageError(
            "--workload must be metro, global, mixed, transitions, real, all or polygons, got '\(name)'"
          )
        }
      }
      s.kinds = WorkloadKind.allCases.filter { kinds.contains($0) }
    }
    if let list = a.last("sizes") {
      var sizes: [Int] = []
      for item in list.split(separator: ",", omittingEmptySubsequences: false) {
        let text = item.replacingOccurrences(of: "_", with: "")
        guard let n = Int(text), n >= 1 else {
          throw UsageError("--sizes needs positive integers, got '\(item)'")
        }
        guard n <= maximumSize else {
          throw UsageError("--sizes: \(n) regions is more than the \(maximumSize) allowed")
        }
        if !sizes.contains(n) { sizes.append(n) }
      }
      s.sizes = sizes
    }
    s.fixes = try a.int("fixes", range: 1...100_000_000) ?? s.fixes
    if let text = a.last("seed") {
      guard let seed = UInt64(text) else {
        throw UsageError("--seed needs an unsigned integer, got '\(text)'")
      }
      s.seed = seed
    }
    s.options.threads = try a.int("threads", range: 1...1024) ?? s.options.threads
    s.options.repetitions = try a.int("repetitions", range: 1...100) ?? s.options.repetitions
    s.options.minimumPassSeconds =
      try a.double("min-pass", range: 0...600) ?? s.options.minimumPassSeconds
    s.options.timeBudgetSeconds =
      try a.double("budget", range: 0...1e6) ?? s.options.timeBudgetSeconds
    s.options.cellSizeDegrees = try a.double("cell-size", range: 1e-6...180)
    s.options.measureDetector = !a.flag("no-detector")
    s.dataDirectory = a.last("data") ?? s.dataDirectory
    s.fromDirectory = a.last("from")
    s.writeDirectory = a.last("write-workloads")
    s.writeOnly = a.flag("write-only")
    if s.writeOnly && s.writeDirectory == nil {
      throw UsageError("--write-only needs --write-workloads DIR")
    }
    s.jsonPath = a.last("json")
    s.svgPath = a.last("svg")
    s.quiet = a.flag("quiet")
    if a.flag("polygons") {
      s.polygons = true
      if a.last("workload") == nil { s.kinds = [.metro] }
    }
    if s.polygons && a.last("sizes") == nil { s.sizes = [10_000, 100_000] }
    if let list = a.last("plan") {
      for item in list.split(separator: ",", omittingEmptySubsequences: false) {
        guard let n = Int(item), (1...10_000).contains(n) else {
          throw UsageError("--plan needs budgets in 1...10000 separated by commas, got '\(list)'")
        }
        if !s.planBudgets.contains(n) { s.planBudgets.append(n) }
      }
    }
    s.loadPaths = (a.last("load") ?? "").split(separator: ",").map(String.init)
    s.trackPaths = (a.last("load-tracks") ?? "").split(separator: ",").map(String.init)
    s.loadRadiusMeters = try a.double("radius", range: 1e-3...1e8)
    // Each of these measures something else, instead of the index: one at a time, so that
    // none is dropped without a word.
    let modes = [
      s.planBudgets.isEmpty ? nil : "--plan",
      s.loadPaths.isEmpty && s.trackPaths.isEmpty ? nil : "--load/--load-tracks",
      s.polygons ? "--polygons (--workload polygons)" : nil,
    ].compactMap { $0 }
    if modes.count > 1 {
      throw UsageError("\(modes.joined(separator: " and ")) measure different things; give one")
    }
    if s.polygons, let list = a.last("workload"),
      list.split(separator: ",").contains(where: { $0 != "polygons" })
    {
      throw UsageError("--workload polygons is measured alone, not with other workloads")
    }
    if s.polygons, s.fromDirectory != nil {
      throw UsageError(
        "--from reads circle workloads; the polygons workload is generated from --seed (its "
          + "files are the input of tools/bench/polygon_peers.py)")
    }
    return s
  }

  /// The largest `--sizes` value: 10 million regions take about 2 GB to generate and index.
  static let maximumSize = 10_000_000

  /// An output that cannot be written: the path, why, and the exit status.
  struct OutputError: Error {
    var path: String
    var reason: String
    var status: Int32 = ExitStatus.cannotCreate
  }

  /// Throws when `path` cannot become an output file (``outputFileProblem(_:)``). Checked
  /// before measuring, so that a long run is not lost.
  static func checkOutputFile(_ path: String) throws(OutputError) {
    if let problem = outputFileProblem(path) { throw OutputError(path: path, reason: problem) }
  }

  /// Creates `dir` (and its parents) for the workload files unless it is already a folder.
  static func makeOutputDirectory(_ dir: String) throws(OutputError) {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) {
      if !isDirectory.boolValue { throw OutputError(path: dir, reason: "not a directory") }
      return
    }
    do {
      try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    } catch {
      throw OutputError(path: dir, reason: "cannot create the directory")
    }
  }

  /// Writes `text` to `path` (``writeOutputFile(_:to:)``: a regular file through a temporary
  /// file in its folder, then a rename).
  static func writeOutputFile(_ text: String, to path: String) throws(OutputError) {
    do {
      try geofence.writeOutputFile(Data(text.utf8), to: path)
    } catch {
      throw OutputError(
        path: path, reason: "cannot write the file: \(error.localizedDescription)",
        status: ExitStatus.ioError)
    }
  }

  static func execute(_ s: Settings) throws -> Int32 {
    let progress = BenchProgress.shared
    progress.enabled = !s.quiet
    if let dir = s.writeDirectory { try makeOutputDirectory(dir) }
    if !s.writeOnly {
      for path in [s.jsonPath, s.svgPath].compactMap({ $0 }) { try checkOutputFile(path) }
    }
    if !s.loadPaths.isEmpty || !s.trackPaths.isEmpty { return try measureLoading(s) }
    var results: [BenchmarkResult] = []

    var polygonRows: [String] = []
    func handle(_ w: Workload) throws {
      if s.polygons {
        try handlePolygons(w, s, into: &polygonRows)
        return
      }
      if let dir = s.writeDirectory {
        progress.update("\(w.name) N=\(w.regions.count): writing workload files", phase: true)
        let names = WorkloadFiles.fileNames(for: w)
        try WorkloadFiles.writeRegions(w.regions, to: dir + "/" + names.regions)
        try WorkloadFiles.writeFixes(w, to: dir + "/" + names.fixes)
      }
      if s.writeOnly { return }
      if !s.planBudgets.isEmpty {
        for budget in s.planBudgets {
          progress.update("\(w.name) N=\(w.regions.count): planning, budget \(budget)", phase: true)
          let r = PlannerBenchmark.run(w, budget: budget, plans: 20_000)
          progress.clear()
          print(
            "plan \(r.workload) N=\(r.regionCount) budget \(r.budget): \(r.plans) plans, median "
              + String(format: "%.1f µs, p99 %.1f µs", r.medianMicroseconds, r.p99Microseconds)
              + String(format: "; %.1f chosen, %.2f changes a plan", r.meanChosen, r.meanChanges)
              + ", \(r.unguaranteed) clamped to the minimum radius")
        }
        return
      }
      let r = BenchmarkRunner.run(w, options: s.options) { progress.update($0) }
      results.append(r)
      progress.update(
        "\(w.name) N=\(w.regions.count): \(Int(r.singleThreadFixesPerSecond)) fixes/s", phase: true)
    }

    if (s.polygons || !s.planBudgets.isEmpty) && s.fromDirectory == nil {
      // The planner's or the polygons' figures only: one line per workload and size (and
      // budget), printed above.
      for kind in s.kinds where kind != .real && (!s.polygons || kind == .metro) {
        for n in s.sizes {
          progress.update("\(kind.rawValue) N=\(n): generating", phase: true)
          try handle(
            WorkloadGenerator.make(
              kind: kind, regionCount: n, fixCount: s.polygons ? s.fixes : min(s.fixes, 20_000),
              seed: s.seed))
        }
      }
      progress.clear()
      if let path = s.jsonPath, s.polygons {
        try writeOutputFile("[\n" + polygonRows.joined(separator: ",\n") + "\n]\n", to: path)
      }
      return ExitStatus.ok
    }
    if let from = s.fromDirectory {
      for (name, kind, regionsPath, fixesPath) in try workloadFiles(in: from, kinds: s.kinds) {
        progress.update("\(name): reading \(regionsPath)", phase: true)
        try handle(
          WorkloadFiles.read(name: name, kind: kind, regionsPath: regionsPath, fixesPath: fixesPath)
        )
      }
    } else {
      // The real workload's files are checked before anything is measured: a missing one
      // found at the end would throw the whole run's figures away.
      if s.kinds.contains(.real) {
        for part in [
          "places/rg_cities1000_geofences.csv", "places/airports_geofences.csv", "tracks",
        ] {
          let path = (s.dataDirectory as NSString).appendingPathComponent(part)
          guard FileManager.default.fileExists(atPath: path) else {
            throw WorkloadFileError.cannotOpen(
              path: path, reason: "no such file or directory (--data \(s.dataDirectory))")
          }
        }
      }
      for kind in s.kinds where kind != .real {
        for n in s.sizes {
          progress.update("\(kind.rawValue) N=\(n): generating", phase: true)
          try handle(
            WorkloadGenerator.make(kind: kind, regionCount: n, fixCount: s.fixes, seed: s.seed))
        }
      }
      if s.kinds.contains(.real) {
        progress.update("real: loading \(s.dataDirectory)", phase: true)
        for w in try RealData.workloads(dataDirectory: s.dataDirectory) { try handle(w) }
      }
    }
    progress.clear()
    if s.writeOnly {
      writeStandardOutput(Data("wrote workload files to \(s.writeDirectory ?? "")\n".utf8))
      return ExitStatus.ok
    }

    let report = BenchmarkReport(
      settings: .init(
        seed: s.seed, fixCount: s.fromDirectory == nil ? s.fixes : nil,
        threads: s.options.threads, repetitions: s.options.repetitions,
        cellSizeDegrees: s.options.cellSizeDegrees,
        minimumPassSeconds: s.options.minimumPassSeconds),
      results: results)
    writeStandardOutput(Data(report.table().utf8))
    if let path = s.jsonPath { try writeOutputFile(report.json(), to: path) }
    if let path = s.svgPath { try writeOutputFile(report.svg(), to: path) }
    return ExitStatus.ok
  }

  /// `(name, kind, regions path, fixes path)` of every `<name>-<N>-regions.csv` in `dir` with a
  /// matching fixes file, for the selected kinds, by name then N. A regions file without its
  /// fixes file, or the reverse, is named in a warning on standard error.
  static func workloadFiles(in dir: String, kinds: [WorkloadKind]) throws -> [(
    String, WorkloadKind, String, String
  )] {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory),
      isDirectory.boolValue,
      let entries = try? FileManager.default.contentsOfDirectory(atPath: dir)
    else {
      throw WorkloadFileError.cannotOpen(path: dir, reason: "not a readable directory")
    }
    let folder = dir.hasSuffix("/") && dir.count > 1 ? String(dir.dropLast()) : dir
    /// `(stem, name, N, kind)` of a workload file name `<name>-<N><suffix>` (stem
    /// `<name>-<N>`) of a selected kind.
    func parse(_ file: String, suffix: String) -> (String, String, Int, WorkloadKind)? {
      guard file.hasSuffix(suffix) else { return nil }
      let stem = file.dropLast(suffix.count)
      guard let dash = stem.lastIndex(of: "-"), let n = Int(stem[stem.index(after: dash)...])
      else { return nil }
      let name = String(stem[..<dash])
      let kind = name.hasPrefix("real") ? WorkloadKind.real : WorkloadKind(rawValue: name)
      guard let kind, kinds.contains(kind) else { return nil }
      return (String(stem), name, n, kind)
    }
    let names = Set(entries)
    var found: [(String, Int, WorkloadKind, String, String)] = []
    for file in entries.sorted() {
      if let (stem, name, n, kind) = parse(file, suffix: "-regions.csv") {
        let fixes = stem + "-fixes.csv"
        guard names.contains(fixes) else {
          printError("geofence bench: warning: \(folder)/\(file) has no \(fixes); skipped")
          continue
        }
        found.append((name, n, kind, folder + "/" + file, folder + "/" + fixes))
      } else if let (stem, _, _, _) = parse(file, suffix: "-fixes.csv"),
        !names.contains(stem + "-regions.csv")
      {
        printError("geofence bench: warning: \(folder)/\(file) has no \(stem)-regions.csv; skipped")
      }
    }
    found.sort { ($0.2.order, $0.0, $0.1) < ($1.2.order, $1.0, $1.1) }
    if found.isEmpty {
      throw WorkloadFileError.cannotOpen(
        path: dir,
        reason: "no pair of <name>-<N>-regions.csv and <name>-<N>-fixes.csv for the selected "
          + "workloads (\(kinds.map(\.rawValue).joined(separator: ", ")))")
    }
    return found.map { ($0.0, $0.2, $0.3, $0.4) }
  }
}

extension WorkloadKind {
  fileprivate var order: Int { WorkloadKind.allCases.firstIndex(of: self) ?? 0 }
}

/// The progress line on standard error: rewritten in place on a terminal; otherwise only the
/// start of each phase is written, one per line.
final class BenchProgress: @unchecked Sendable {
  static let shared = BenchProgress()
  var enabled = true
  private let isTerminal = isatty(2) != 0
  private var shown = false

  func update(_ text: String, phase: Bool = false) {
    guard enabled else { return }
    if isTerminal {
      FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
      shown = true
    } else if phase {
      FileHandle.standardError.write(Data((text + "\n").utf8))
    }
  }

  func clear() {
    if shown {
      FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
      shown = false
    }
  }
}

extension BenchCommand {
  /// `--workload polygons` for one size: writes the polygon workload files when asked, then
  /// (unless `--write-only`) prints the polygon row and keeps its JSON object in `rows`.
  static func handlePolygons(_ w: Workload, _ s: Settings, into rows: inout [String]) throws {
    let progress = BenchProgress.shared
    let n = w.regions.count
    if let dir = s.writeDirectory {
      progress.update("polygons N=\(n): writing workload files", phase: true)
      try PolygonBenchmark.writeWKT(
        PolygonBenchmark.rings(for: w, seed: s.seed), to: dir + "/polygons-\(n)-regions.wkt")
      try WorkloadFiles.writeFixes(w, to: dir + "/polygons-\(n)-fixes.csv")
    }
    if s.writeOnly { return }
    progress.update("polygons N=\(n): measuring", phase: true)
    let r = try PolygonBenchmark.run(
      w, repetitions: s.options.repetitions, minimumPassSeconds: s.options.minimumPassSeconds,
      seed: s.seed)
    progress.clear()
    print(
      "polygons N=\(r.polygonCount) (\(r.vertexCount) vertices): "
        + String(
          format:
            "index only %.2f M fixes/s, point-in-polygon %.2f M fixes/s, GEOS prepared (Swift bridge) %.3f M fixes/s (%.1fx)",
          r.indexFixesPerSecond / 1e6, r.fixesPerSecond / 1e6, r.geosFixesPerSecond / 1e6,
          r.fixesPerSecond / r.geosFixesPerSecond)
        + String(
          format:
            "; %.2f candidates (%.2f decided by the index), %.3f matches a fix; %.1f B a vertex (edge indexes %.1f), box grid %.1f B a vertex",
          r.candidatesPerFix, r.decidedPerFix, r.matchesPerFix, r.bytesPerVertex,
          r.indexBytesPerVertex, r.boxGridBytesPerVertex)
        + "; checksum \(r.checksum)" + (r.agreesWithGEOS ? "" : "; DISAGREES WITH GEOS"))
    rows.append(
      "{\"peer\": \"ours\", \"polygons\": \(r.polygonCount), \"vertices\": \(r.vertexCount), "
        + "\"fixes\": \(r.fixes), \"index_fixes_per_second\": \(r.indexFixesPerSecond), "
        + "\"fixes_per_second\": \(r.fixesPerSecond), "
        + "\"geos_bridge_fixes_per_second\": \(r.geosFixesPerSecond), "
        + "\"geos_bridge_fixes\": \(r.geosFixes), \"candidates_per_fix\": \(r.candidatesPerFix), "
        + "\"decided_per_fix\": \(r.decidedPerFix), "
        + "\"bytes_per_vertex\": \(r.bytesPerVertex), "
        + "\"index_bytes_per_vertex\": \(r.indexBytesPerVertex), "
        + "\"box_grid_bytes_per_vertex\": \(r.boxGridBytesPerVertex), "
        + "\"pairs\": \(r.checksum.pairs), \"slot_sum\": \(r.checksum.slotSum), "
        + "\"weighted_sum\": \(r.checksum.weightedSum), \"agrees_with_geos\": \(r.agreesWithGEOS)}")
  }
}
