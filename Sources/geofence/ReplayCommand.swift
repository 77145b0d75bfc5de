import Foundation
import GeofenceDefinitions
import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import NumberText
import TrackFormats

/// `geofence replay`: tracks against geofences, events out.
enum ReplayCommand {
  static let help = """
    usage: geofence replay [--radius METRES] --regions FILE [--regions FILE ...] [options] TRACK...

    Replays GPS tracks (GPX 1.0/1.1; CSV, TSV, GeoLife/OziExplorer .plt) against geofences
    (JSON, GeoJSON, CSV) and writes enter / exit / dwell events to standard output.
    A summary (fixes read, used, dropped by reason; events by type; geofences loaded and
    rejected) goes to standard error.

    geofences:
      --regions FILE          a geofence file; repeat for several. JSON
                              [{"id","latitude","longitude","radius","name"?,"metadata"?}]
                              (a "geometry" GeoJSON Polygon or MultiPolygon instead of the
                              circle's fields), GeoJSON features (Point with a "radius"
                              property in metres, Polygon, MultiPolygon), or CSV
                              id,name,latitude,longitude[,radius] (or a "geometry" column).
      --radius METRES         default radius for the --regions files AFTER it that lack one
                              (e.g. --radius 1500 --regions towns.csv --radius 3000
                              --regions airports.csv).

    output:
      --format jsonl|csv|geojson   event format (default jsonl). Fields (docs/engine.md):
                              id, type, geofence_id, geofence_name, metadata, url, device_id
                              (the file's device column, else the file name), user_id,
                              anonymous_id, time (RFC 3339 UTC), latitude, longitude,
                              accuracy, distance_m, dwell_s, visit_s, after_gap, gap_start,
                              removal, fix_index (0-based row or point in the file as
                              written), track.
      --svg FILE              also draw a map: track, nearby geofences, labelled events.
      --quiet                 nothing on standard error but errors: no summary, warnings or
                              per-row rejections.
      --os-budget N           instead of events, simulate the phone's OS monitoring only the
                              N regions a RegionBudgetPlanner registers (refresh circle
                              included; iOS allows 20, Android 100; repeat for several N) and
                              print, per track, the engine's ENTER/EXIT count, how many the OS
                              would miss or report late, and the plans made (docs/engine.md,
                              "The OS region budget").

    detector (defaults in brackets):
      --preset default|hysteresis-only|naive
                              naive: enter d <= r, exit d > r, accuracy ignored, no outlier
                              filter; hysteresis-only: default rules without the outlier filter.
      --hysteresis-min METRES      smallest exit hysteresis [20]
      --hysteresis-fraction F      exit hysteresis as a fraction of the radius [0.1]
      --max-accuracy METRES        fixes less accurate than this change no state [200]
      --loitering-delay SECONDS    dwell after this long inside; 0 = at once [300]
      --no-dwell                   no dwell events
      --no-initial-trigger         regions the first fix is inside are entered silently
      --max-speed M_PER_S          outlier filter: largest plausible speed [70]
      --no-outlier-filter          accept every fix whatever its implied speed
      --confirm-fixes K            a transition must hold for K fixes [1]
      --confirm-seconds T          ... or for T seconds [off]; alone, by time only
      --infer-crossings            also ENTER and EXIT (flagged "inferred": true, times and
                                   positions interpolated) the regions that the segment
                                   between two accepted fixes outside them passes through
                                   (at most 300 s and 20 km apart, both fixes accurate to
                                   100 m and to the region's radius) [off]

    exit status: 0 success; 64 usage error; 65 a track or geofence file could not be parsed
    or ends early (what it holds before the end is still used), a track gave no usable fix
    (the other files are still replayed), or no geofence loaded at all (nothing is replayed); 66 an input file is missing, unreadable or a
    directory; 73 the --svg file cannot be created; 74 standard output cannot be written.
    Rows a reader cannot use are reported on standard error with file and line, and skipped.
    """

  static let spec = CommandLineArguments.Spec(
    valued: [
      "regions", "radius", "format", "svg", "preset", "hysteresis-min", "hysteresis-fraction",
      "max-accuracy", "loitering-delay", "max-speed", "confirm-fixes", "confirm-seconds",
      "os-budget",
    ],
    flags: [
      "help", "quiet", "no-dwell", "no-initial-trigger", "no-outlier-filter", "infer-crossings",
    ])

  static func run(_ argv: [String]) async -> Int32 {
    let args: CommandLineArguments
    let options: Options
    do {
      args = try CommandLineArguments(argv, spec: spec)
      if args.flag("help") {
        print(help)
        return ExitStatus.ok
      }
      options = try Options(args)
      try options.checkTrackNames()
    } catch {
      printError("geofence replay: \(error.message)\nRun 'geofence replay --help' for usage.")
      return ExitStatus.usage
    }
    return await replay(options)
  }

  struct Options {
    var regionFiles: [(path: String, radius: Double?)] = []
    var tracks: [String]
    var format: EventFormat
    var svg: String?
    var quiet: Bool
    var configuration = TransitionConfiguration()
    /// The naive preset: the detector ignores horizontal accuracy.
    var ignoringAccuracy = false
    /// `--os-budget` values: simulate the OS region budget instead of writing events.
    var osBudgets: [Int] = []

    /// Every file read: the geofence files and the tracks.
    var inputPaths: [String] { regionFiles.map(\.path) + tracks }

    /// Refuses two different track files of one name (`replay` and `run`): the fixes without a
    /// device id are the device of their file's name, so the two would be one device, their
    /// fixes mixed.
    func checkTrackNames() throws(UsageError) {
      var byName: [String: String] = [:]
      for track in tracks where track != "-" {
        let name = (track as NSString).lastPathComponent
        let resolved = URL(fileURLWithPath: track).standardizedFileURL.resolvingSymlinksInPath()
          .path
        if let earlier = byName[name], earlier != resolved {
          throw UsageError(
            "two tracks are named \(name) (\(earlier), \(resolved)): fixes without a device id "
              + "are the device of their file's name; rename one")
        }
        byName[name] = resolved
      }
    }

    /// - Parameter requiresRegions: false when the geofences may come from elsewhere (a sync).
    init(_ args: CommandLineArguments, requiresRegions: Bool = true) throws(UsageError) {
      var radius: Double?
      var radiusUsed = true
      for (name, value) in args.ordered {
        if name == "radius" {
          radius = try CommandLineArguments.radiusMeters(value)
          radiusUsed = false
        } else if name == "regions" {
          // The same file twice would reject every row of the second as a duplicate id.
          func same(_ path: String) -> String {
            URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
          }
          if regionFiles.contains(where: { same($0.path) == same(value) }) {
            throw UsageError("--regions \(value) is given twice")
          }
          regionFiles.append((value, radius))
          radiusUsed = true
        }
      }
      if !radiusUsed {
        throw UsageError(
          "--radius applies to the --regions files after it; give it before --regions FILE")
      }
      if regionFiles.isEmpty && requiresRegions {
        throw UsageError("give at least one --regions FILE")
      }
      // The options' values first: a file name taken as a value (`--format track.csv`) is
      // named as a bad value, not as a missing TRACK.
      let formatName = args.last("format") ?? "jsonl"
      guard let f = EventFormat(rawValue: formatName) else {
        throw UsageError("--format must be jsonl, csv or geojson, got '\(formatName)'")
      }
      format = f
      svg = args.last("svg")
      quiet = args.flag("quiet")
      for value in args.all("os-budget") {
        guard let n = Int(value), (1...10_000).contains(n) else {
          throw UsageError("--os-budget needs a number of regions in 1...10000, got '\(value)'")
        }
        osBudgets.append(n)
      }
      if !osBudgets.isEmpty, args.last("format") != nil {
        throw UsageError("--os-budget writes its own table instead of events; drop --format")
      }
      tracks = args.positionals
      if tracks.isEmpty { throw UsageError("give at least one TRACK file") }
      if let svg, let input = inputWrittenOver(by: svg, inputs: inputPaths) {
        throw UsageError("--svg \(svg) is the input file \(input): the map would replace it")
      }

      var c = TransitionConfiguration()
      switch args.last("preset") ?? "default" {
      case "default": break
      case "hysteresis-only": c.outlierFilter = nil
      case "naive":
        ignoringAccuracy = true
        c.outlierFilter = nil
        c.hysteresisMinimumMeters = 0
        c.hysteresisRadiusFraction = 0
        c.maxAccuracyMeters = .infinity
        c.requiresAccuracyWithinRadiusToEnter = false
      case let other:
        throw UsageError("--preset must be default, hysteresis-only or naive, got '\(other)'")
      }
      if let v = try args.double("hysteresis-min", range: 0...1e7) { c.hysteresisMinimumMeters = v }
      if let v = try args.double("hysteresis-fraction", range: 0...10) {
        c.hysteresisRadiusFraction = v
      }
      if let v = try args.double("max-accuracy", range: 0...1e8, positive: true) {
        c.maxAccuracyMeters = v
      }
      if let v = try args.double("loitering-delay", range: 0...1e9) { c.loiteringDelaySeconds = v }
      if args.flag("no-dwell") { c.loiteringDelaySeconds = nil }
      if args.flag("no-initial-trigger") { c.initialTrigger = false }
      if let v = try args.double("max-speed", range: 0...1e6, positive: true) {
        if args.flag("no-outlier-filter") {
          throw UsageError("--max-speed and --no-outlier-filter contradict each other")
        }
        var filter = c.outlierFilter ?? OutlierFilter()
        filter.maxSpeedMetersPerSecond = v
        c.outlierFilter = filter
      }
      if args.flag("no-outlier-filter") { c.outlierFilter = nil }
      let fixes = try args.int("confirm-fixes", range: 1...1_000_000)
      if let k = fixes { c.confirmationFixCount = k }
      if let t = try args.double("confirm-seconds", range: 0...1e9) {
        c.confirmationSeconds = t
        // Alone it confirms by time only: with the default count of 1 it would never matter.
        if fixes == nil { c.confirmationFixCount = .max }
      }
      if args.flag("infer-crossings") { c.crossingInference = CrossingInference() }
      configuration = c
    }
  }

  static func replay(_ options: Options) async -> Int32 {
    // Fail before the work when the map cannot be written.
    if let svgPath = options.svg, let problem = outputFileProblem(svgPath) {
      printError("geofence replay: --svg \(svgPath): \(problem)")
      return ExitStatus.cannotCreate
    }
    var status = ExitStatus.ok
    func worsen(_ s: Int32) { if status == ExitStatus.ok || s == ExitStatus.noInput { status = s } }
    let progress = ProgressLine(enabled: !options.quiet)

    // Geofences.
    var loads: [GeofenceLoadResult] = []
    // Valid definitions per --regions file (nil: the file could not be read), in order.
    var validPerFile: [Int?] = []
    for (path, radius) in options.regionFiles {
      progress.update("reading geofences \(path)")
      if let problem = inputProblem(path) {
        progress.clear()
        printError("geofence replay: \(path): \(problem)")
        return ExitStatus.noInput
      }
      do {
        let load = try GeofenceFileReader.read(
          contentsOf: URL(fileURLWithPath: path), defaultRadiusMeters: radius)
        for cut in load.truncations {
          // The definitions before the end still count; the file is reported as damaged.
          progress.clear()
          printError(
            "geofence replay: \(cut); the \(load.count + load.rejected.count)"
              + " definitions complete before the end are used")
          worsen(ExitStatus.dataError)
        }
        validPerFile.append(load.count)
        loads.append(load)
      } catch {
        progress.clear()
        printError("geofence replay: \(error)")
        worsen(ExitStatus.dataError)
        validPerFile.append(nil)
      }
    }
    // The load results live only until the engine holds the set: the engine keeps each
    // geofence once, more compactly than a `Geofence` and its location.
    let engine: GeofenceEngine
    let loadedCount: Int
    let rejections: [String]
    do {
      let merged = GeofenceLoadResult.merging(loads)
      loads = []
      progress.update("indexing \(merged.count) geofences")
      loadedCount = merged.count
      rejections = merged.rejected.map(\.description)
      engine = try GeofenceEngine(
        configuration: .init(transitions: options.configuration, checkpoints: .manual),
        loaded: consume merged)
    } catch {
      progress.clear()
      printError("geofence replay: \(error)")
      return ExitStatus.failure
    }
    releaseFreedMemory()
    progress.clear()
    if !options.quiet {
      report(rejections: rejections, what: "geofence definitions")
    }
    if loadedCount == 0 {
      // Nothing to replay against: every event would be missing, which an empty result
      // (exit 0) would hide.
      printError(
        "geofence replay: no geofence loaded from "
          + options.regionFiles.map(\.path).joined(separator: ", ")
          + " (\(rejections.count) rejected); nothing to replay")
      return ExitStatus.dataError
    }

    // Tracks: each file on its own (its devices start afresh).
    var encoder = GeofenceEventEncoder(format: options.format)
    encoder.includesInferredColumn = options.configuration.crossingInference != nil
    var out = StandardOutput()
    var budgetTable = OSBudgetTable(
      budgets: options.osBudgets, geofences: options.osBudgets.isEmpty ? [] : engine.geofences)
    if options.osBudgets.isEmpty {
      out.write(encoder.header())
    } else {
      out.write(budgetTable.header)
    }
    var summaries: [String] = []
    var totals = EventCounts()
    var mapTracks: [[Coordinate]] = []
    var mapEvents: [GeofenceEvent] = []
    for path in options.tracks {
      progress.update("reading \(path)")
      if let problem = inputProblem(path) {
        progress.clear()
        printError("geofence replay: \(path): \(problem)")
        worsen(ExitStatus.noInput)
        continue
      }
      let track: TrackReadResult
      do {
        track = try TrackReader.read(contentsOf: URL(fileURLWithPath: path))
      } catch {
        progress.clear()
        printError("geofence replay: \(error)")
        worsen(ExitStatus.dataError)
        continue
      }
      if let cut = track.truncation {
        progress.clear()
        printError("geofence replay: \(cut)")
        worsen(ExitStatus.dataError)
      }
      progress.update("replaying \(track.fixes.count) fixes of \(path)")
      engine.forgetDevicesInMemory()
      let rep: TrackReplayReport
      do {
        guard
          let first = try await engine.replay(
            [ReplayInput(file: path, track: track)], ignoringAccuracy: options.ignoringAccuracy
          ).first
        else { continue }
        rep = first
      } catch {
        progress.clear()
        printError("geofence replay: \(error)")
        return ExitStatus.failure
      }
      progress.clear()
      if track.fixes.isEmpty {
        printError(
          "geofence replay: \(path): no usable fix read"
            + (track.skippedRows.isEmpty ? "" : " (\(track.skippedRows.count) rows skipped)"))
        worsen(ExitStatus.dataError)
      }
      if options.osBudgets.isEmpty {
        for e in rep.events { out.write(encoder.encode(e, track: path)) }
      } else {
        progress.update("simulating the OS region budget on \(path)")
        out.write(budgetTable.rows(file: path, track: track, engineEvents: rep.events))
        progress.clear()
      }
      totals += rep.eventCounts
      mapTracks += rep.tracks
      mapEvents += rep.events
      if !options.quiet {
        for w in rep.warnings { printInputProblem("warning: ", "\(w)") }
        report(rejections: rep.skippedRows.map(\.description), what: "track rows")
        summaries.append(fixSummary(rep))
      }
    }
    if options.osBudgets.isEmpty {
      out.write(encoder.footer())
    } else {
      out.write(budgetTable.summary)
    }
    out.flush()

    if let svgPath = options.svg {
      let near = engine.geofencesNear(mapTracks, events: mapEvents)
      let title = options.tracks.map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")
      let svg = SVGMap().render(
        tracks: mapTracks, geofences: near, events: mapEvents, title: title)
      do {
        try writeOutputFile(Data(svg.utf8), to: svgPath)
      } catch {
        printError("geofence replay: cannot write \(svgPath): \(error.localizedDescription)")
        worsen(ExitStatus.cannotCreate)
      }
    }

    if !options.quiet {
      for s in summaries { printError(s) }
      printError("events: \(totals)")
      var perFile: [String] = []
      for (i, file) in options.regionFiles.enumerated() where i < validPerFile.count {
        perFile.append(file.path + (validPerFile[i].map { " \($0)" } ?? " unreadable"))
      }
      // Per file: its valid definitions, before ids repeated across files are rejected.
      printError(
        "geofences: \(loadedCount) loaded, \(rejections.count) rejected"
          + (perFile.isEmpty ? "" : " (valid per file: " + perFile.joined(separator: ", ") + ")"))
    }
    return status
  }

  /// `FILE: N fixes read, M used; dropped: reason N, ...; K rows skipped`.
  static func fixSummary(_ rep: TrackReplayReport) -> String {
    var drops = rep.dropCounts.nonZero.map { "\($0.reason.rawValue) \($0.count)" }
    if rep.notAuthorized > 0 { drops.insert("notAuthorized \(rep.notAuthorized)", at: 0) }
    return "\(rep.file): \(rep.fixesRead) fixes read, \(rep.fixesUsed) used"
      + (drops.isEmpty ? "" : "; dropped: " + drops.joined(separator: ", "))
      + (rep.skippedRows.isEmpty ? "" : "; \(rep.skippedRows.count) rows skipped")
  }

  /// Prints up to 20 problems, then a count of the rest.
  static func report(rejections: [String], what: String) {
    guard !rejections.isEmpty else { return }
    for r in rejections.prefix(20) { printInputProblem("rejected: ", "\(r)") }
    if rejections.count > 20 {
      printError("rejected: ... and \(rejections.count - 20) more \(what)")
    }
  }
}

/// Why `path` cannot be read as an input file, or nil when it can.
func inputProblem(_ path: String) -> String? {
  var isDirectory: ObjCBool = false
  guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
    return "no such file"
  }
  if isDirectory.boolValue { return "is a directory, not a file" }
  if !FileManager.default.isReadableFile(atPath: path) { return "not readable (permission denied)" }
  return nil
}

/// Buffered standard output.
struct StandardOutput {
  private var buffer: [UInt8] = []
  mutating func write(_ s: String) {
    buffer.append(contentsOf: s.utf8)
    if buffer.count > 1 << 16 { flush() }
  }
  mutating func flush() {
    guard !buffer.isEmpty else { return }
    writeStandardOutput(Data(buffer))
    buffer.removeAll(keepingCapacity: true)
  }
}

/// A one-line progress indicator on standard error, shown only when standard error is a
/// terminal.
struct ProgressLine {
  let enabled: Bool
  init(enabled: Bool) { self.enabled = enabled && isatty(2) != 0 }
  func update(_ text: String) {
    guard enabled else { return }
    try? FileHandle.standardError.write(contentsOf: Data(("\r\u{1B}[K" + text).utf8))
  }
  func clear() {
    guard enabled else { return }
    try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8))
  }
}
