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
                   at the antimeridian and near the poles
      mixed        radius 20 m - 50 km in one set (98 % up to 1 km), 550 km x 550 km box
      transitions  the metro regions; tracks cross a region boundary every 2-5 fixes
      real         data/places towns (144k, r = 1.5 km) and airports (28k, r = 3 km) against
                   every track in data/tracks (N fixed by the file)

    options:
      --workload W[,W...]   metro, global, mixed, transitions, real or all (default: all)
      --sizes N[,N...]      region counts for generated workloads (default: 10000,100000,1000000)
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
      --data DIR            the data folder for 'real' (default: data)
      --from DIR            read workloads from files written by --write-workloads instead of
                            generating them (all sizes found for the selected workloads)
      --write-workloads DIR write each workload as <name>-<N>-regions.csv and
                            <name>-<N>-fixes.csv (the input of tools/bench/run-peers)
      --write-only          with --write-workloads: write the files and measure nothing
      --json FILE           write the results as JSON
      --svg FILE            write a chart of throughput and bytes per region against N
      --quiet               no progress line on standard error
      -h, --help            show this help

    Regions file: id,latitude,longitude,radius_m (id = slot, 0-based). Fixes file:
    track,t,latitude,longitude. Checksum: pairs, sum of slots mod 2^64, sum of
    fix index x slot mod 2^64 (fix index = 0-based row in the fixes file).
    """

  static let spec = CommandLineArguments.Spec(
    valued: [
      "workload", "sizes", "fixes", "seed", "threads", "repetitions", "min-pass", "budget",
      "cell-size", "data", "from", "write-workloads", "json", "svg",
    ],
    flags: ["help", "no-detector", "write-only", "quiet"])

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
      if case .cannotOpen = error { return ExitStatus.noInput }
      return ExitStatus.dataError
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
      for name in list.split(separator: ",").map(String.init) {
        if name == "all" {
          kinds.append(contentsOf: WorkloadKind.allCases)
        } else if let k = WorkloadKind(rawValue: name) {
          kinds.append(k)
        } else {
          throw UsageError(
            "--workload must be metro, global, mixed, transitions, real or all, got '\(name)'")
        }
      }
      s.kinds = WorkloadKind.allCases.filter { kinds.contains($0) }
    }
    if let list = a.last("sizes") {
      var sizes: [Int] = []
      for item in list.split(separator: ",", omittingEmptySubsequences: false) {
        let text = item.replacingOccurrences(of: "_", with: "")
        guard let n = Int(text), n >= 1, n <= Int(Int32.max) else {
          throw UsageError("--sizes needs positive integers, got '\(item)'")
        }
        sizes.append(n)
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
    return s
  }

  static func execute(_ s: Settings) throws -> Int32 {
    let progress = BenchProgress.shared
    progress.enabled = !s.quiet
    if let dir = s.writeDirectory {
      try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }
    var results: [BenchmarkResult] = []

    func handle(_ w: Workload) throws {
      if let dir = s.writeDirectory {
        progress.update("\(w.name) N=\(w.regions.count): writing workload files", phase: true)
        let names = WorkloadFiles.fileNames(for: w)
        try WorkloadFiles.writeRegions(w.regions, to: dir + "/" + names.regions)
        try WorkloadFiles.writeFixes(w, to: dir + "/" + names.fixes)
      }
      if s.writeOnly { return }
      let r = BenchmarkRunner.run(w, options: s.options) { progress.update($0) }
      results.append(r)
      progress.update(
        "\(w.name) N=\(w.regions.count): \(Int(r.singleThreadFixesPerSecond)) fixes/s", phase: true)
    }

    if let from = s.fromDirectory {
      for (name, kind, regionsPath, fixesPath) in try workloadFiles(in: from, kinds: s.kinds) {
        progress.update("\(name): reading \(regionsPath)", phase: true)
        try handle(
          WorkloadFiles.read(name: name, kind: kind, regionsPath: regionsPath, fixesPath: fixesPath)
        )
      }
    } else {
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
      print("wrote workload files to \(s.writeDirectory ?? "")")
      return ExitStatus.ok
    }

    let report = BenchmarkReport(
      settings: .init(
        seed: s.seed, fixCount: s.fromDirectory == nil ? s.fixes : nil,
        threads: s.options.threads, repetitions: s.options.repetitions,
        cellSizeDegrees: s.options.cellSizeDegrees,
        minimumPassSeconds: s.options.minimumPassSeconds),
      results: results)
    print(report.table(), terminator: "")
    if let path = s.jsonPath {
      try report.json().write(toFile: path, atomically: true, encoding: .utf8)
    }
    if let path = s.svgPath {
      try report.svg().write(toFile: path, atomically: true, encoding: .utf8)
    }
    return ExitStatus.ok
  }

  /// `(name, kind, regions path, fixes path)` of every `<name>-<N>-regions.csv` in `dir` with a
  /// matching fixes file, for the selected kinds, by name then N.
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
    var found: [(String, Int, WorkloadKind, String, String)] = []
    for file in entries where file.hasSuffix("-regions.csv") {
      let stem = String(file.dropLast("-regions.csv".count))
      guard let dash = stem.lastIndex(of: "-"), let n = Int(stem[stem.index(after: dash)...])
      else { continue }
      let name = String(stem[..<dash])
      let kind = name.hasPrefix("real") ? WorkloadKind.real : WorkloadKind(rawValue: name)
      guard let kind, kinds.contains(kind) else { continue }
      let fixes = dir + "/" + stem + "-fixes.csv"
      guard FileManager.default.fileExists(atPath: fixes) else { continue }
      found.append((name, n, kind, dir + "/" + file, fixes))
    }
    found.sort { ($0.2.order, $0.0, $0.1) < ($1.2.order, $1.0, $1.1) }
    if found.isEmpty {
      throw WorkloadFileError.cannotOpen(
        path: dir, reason: "no workload files for the selected workloads")
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
