import EventOutbox
import Foundation
import GeofenceSync
import GeofenceDefinitions
import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import LocationAuthorization
import Networking
import RetryTiming
import TrackFormats

/// `geofence run`, `geofence outbox`, `geofence upload`: the main pipeline and its outbox.
enum RunCommand {
  /// EX_TEMPFAIL (sysexits.h): events remain queued because the server could not take them
  /// now; run `geofence upload` later.
  static let tempFailure: Int32 = 75

  static let runHelp = """
    usage: geofence run --server URL --key KEY --store DIR [--auth FILE]
                        [[--radius METRES] --regions FILE ...] [options] TRACK...

    Replays GPS tracks through the authorization gate and the transition detector into the
    event outbox (SQLite in DIR), sending batches while it goes, then uploads everything left.
    A summary goes to standard error.

    required:
      --server URL            the event server, e.g. http://127.0.0.1:8765 (POST URL/v1/events)
      --key KEY               the API key (Authorization: Bearer KEY)
      --store DIR             the device's state: DIR/outbox.sqlite, DIR/identity.json
                              (created when missing)
      --regions FILE          geofences (JSON, GeoJSON, CSV), as for 'geofence replay'; repeat
                              for several; --radius METRES before a file gives its default radius

    authorization:
      --auth FILE             authorization timeline, JSON lines or CSV with the columns
                              time,status,accuracy,app_state,consent,registered (a missing
                              field keeps the previous line's value; the first line starts
                              from everything granted). Before the first line, and without
                              --auth: authorizedAlways, full accuracy, consent on, registered.
                              Fixes while monitoring is off are dropped (notAuthorized); consent
                              off deletes the queued events.
      --user ID               tag the events created by this run with user ID (else the
                              store's anonymous id)
      --reset-identity        sign out and start a new anonymous id before the run

    outbox and upload (defaults in brackets):
      --batch-size N          events per batch, 1-500 [20]
      --batch-interval S      send a partial batch once its oldest event waited S seconds [30]
      --capacity N            most queued events; the oldest are evicted (counted) [10000]
      --timeout S             HTTP request timeout [10]
      --max-attempts N        sends of one batch before giving up for now [8]
      --no-upload             only fill the outbox
      --quiet                 no summary

    detector: the options of 'geofence replay' (--preset, --hysteresis-min, --max-accuracy,
    --loitering-delay, --no-dwell, ...).

    exit status: 0 every event delivered (or dead-lettered); 64 usage error; 65 an input file
    could not be parsed; 66 an input file is missing; 69 no --regions given, the sync failed
    and no earlier set is stored; 75 events remain queued (server unreachable or refusing):
    run 'geofence upload' later.
    """

  static let outboxHelp = """
    usage: geofence outbox --store DIR [--json] [--dead-letters]

    Shows the event outbox of a store: pending, in flight, dead letters, and the lifetime
    counts of evicted, delivered and deleted (consent withdrawn) events.

      --store DIR             the store given to 'geofence run'
      --json                  one JSON object instead of text
      --dead-letters          also list the dead letters: id, reason, payload

    exit status: 0; 64 usage error; 66 no outbox in DIR.
    """

  static let uploadHelp = """
    usage: geofence upload --server URL --key KEY --store DIR [options]

    Sends every queued event of the store now (in-flight events left by an interrupted run are
    sent first, with the same ids), retrying timeouts, network errors, 408, 429, 5xx, 2xx
    answers that cannot be read or leave events out, with exponential backoff (full jitter,
    honouring Retry-After). A Retry-After of more than 300 s is not waited out: the command
    stops and the events stay queued (exit status 75).

      --server URL, --key KEY, --store DIR    as for 'geofence run'
      --batch-size N          events per batch, 1-500 [20]
      --timeout S             HTTP request timeout [10]
      --max-attempts N        sends of one batch before giving up for now [8]
      --quiet                 no summary

    exit status: 0 the outbox is empty of pending events; 64 usage error; 66 no outbox in DIR;
    75 events remain queued.
    """

  // MARK: run

  static let uploadOptions: Set<String> = [
    "server", "key", "store", "batch-size", "batch-interval", "capacity", "timeout",
    "max-attempts",
  ]

  static func run(_ argv: [String]) -> Int32 {
    let spec = CommandLineArguments.Spec(
      valued: ReplayCommand.spec.valued.subtracting(["format", "svg"]).union(uploadOptions)
        .union(["auth", "user"]),
      flags: ReplayCommand.spec.flags.union(["no-upload", "reset-identity"]))
    let args: CommandLineArguments
    let replayOptions: ReplayCommand.Options
    let upload: UploadOptions
    do throws(UsageError) {
      args = try CommandLineArguments(argv, spec: spec)
      if args.flag("help") {
        print(runHelp)
        return ExitStatus.ok
      }
      replayOptions = try ReplayCommand.Options(args, requiresRegions: false)
      upload = try UploadOptions(
        args, needsServer: !args.flag("no-upload") || replayOptions.regionFiles.isEmpty)
    } catch {
      printError("geofence run: \(error.message)\nRun 'geofence run --help' for usage.")
      return ExitStatus.usage
    }
    let quiet = args.flag("quiet")
    func fail(_ message: String, _ status: Int32) -> Int32 {
      printError("geofence run: \(message)")
      return status
    }

    // Regions: from the --regions files, or synced from the server into DIR/geofences.sqlite.
    let regions: MonitoredRegions
    let loaded =
      replayOptions.regionFiles.isEmpty
      ? syncRegions(upload: upload, quiet: quiet)
      : loadRegionFiles(replayOptions.regionFiles, quiet: quiet)
    switch loaded {
    case .success(let r): regions = r
    case .failure(let e): return fail(e.message, e.status)
    }

    // Authorization timeline.
    var timeline = AuthorizationTimeline(changes: [])
    if let path = args.last("auth") {
      guard let data = FileManager.default.contents(atPath: path) else {
        return fail("\(path): no such file or not readable", ExitStatus.noInput)
      }
      do {
        timeline = try AuthorizationTimeline.parse(String(decoding: data, as: UTF8.self))
      } catch {
        return fail("\(path): \(error)", ExitStatus.dataError)
      }
    }

    // Store.
    let store: Store
    do {
      store = try Store(directory: upload.store, configuration: upload.outboxConfiguration)
      if args.flag("reset-identity") { try store.identity.reset() }
      if let user = args.last("user") { try store.identity.setUser(user) }
    } catch {
      return fail("cannot open the store \(upload.store): \(error)", ExitStatus.failure)
    }
    let uploader = upload.server.map { store.uploader(server: $0, options: upload) }

    // Tracks through the pipeline.
    var status = ExitStatus.ok
    let pipeline: MonitoringPipeline
    var uploadReport = UploadReport()
    do {
      pipeline = try MonitoringPipeline(
        regions: regions, outbox: store.outbox, identity: store.identity,
        configuration: replayOptions.configuration)
      var fixes: [LocationFix] = []
      for path in replayOptions.tracks {
        guard FileManager.default.isReadableFile(atPath: path) else {
          printError("geofence run: \(path): no such file or not readable")
          status = ExitStatus.noInput
          continue
        }
        do {
          let track = try TrackReader.read(contentsOf: URL(fileURLWithPath: path))
          if !quiet {
            ReplayCommand.report(
              rejections: track.skippedRows.map(\.description), what: "track rows")
          }
          fixes += track.fixes
        } catch {
          printError("geofence run: \(error)")
          if status == ExitStatus.ok { status = ExitStatus.dataError }
        }
      }
      try pipeline.replay(fixes, timeline: timeline) {
        if let uploader, uploadReport.stopped == nil {
          uploadReport.add(try waitingFor { try await uploader.sendDueBatches() })
        }
      }
      if let uploader, uploadReport.stopped == nil {
        uploadReport.add(try waitingFor { try await uploader.flush() })
      }
    } catch {
      return fail("\(error)", ExitStatus.failure)
    }

    if !quiet {
      let r = pipeline.report
      var line = "fixes \(r.fixes): notAuthorized \(r.notAuthorized)"
      if !r.blockedCounts.isEmpty {
        line +=
          " ("
          + r.blockedCounts.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }
          .joined(separator: ", ") + ")"
      }
      for (reason, count) in r.dropCounts.nonZero { line += ", \(reason.rawValue) \(count)" }
      printError(line)
      let kinds = ["enter", "exit", "dwell"].map { "\($0) \(r.eventCounts[$0] ?? 0)" }
      printError(
        "events: " + kinds.joined(separator: ", ")
          + "; after a gap \(r.afterGapEvents) (gaps \(r.gaps)); enqueued \(r.enqueued)"
          + "; deleted for consent \(r.deletedForConsent)")
      if uploader != nil { printError(describe(uploadReport)) }
    }
    return finish(
      store: store, report: uploadReport, uploaded: uploader != nil, quiet: quiet, status: status)
  }

  // MARK: outbox

  static func outbox(_ argv: [String]) -> Int32 {
    let args: CommandLineArguments
    let directory: String
    do throws(UsageError) {
      args = try CommandLineArguments(
        argv, spec: .init(valued: ["store"], flags: ["help", "json", "dead-letters"]))
      if args.flag("help") {
        print(outboxHelp)
        return ExitStatus.ok
      }
      guard let d = args.last("store") else { throw UsageError("give --store DIR") }
      if !args.positionals.isEmpty {
        throw UsageError("unexpected argument '\(args.positionals[0])'")
      }
      directory = d
    } catch {
      printError("geofence outbox: \(error.message)\nRun 'geofence outbox --help' for usage.")
      return ExitStatus.usage
    }
    guard Store.exists(directory) else {
      printError("geofence outbox: no outbox in \(directory)")
      return ExitStatus.noInput
    }
    do {
      let store = try Store(
        directory: directory, configuration: OutboxConfiguration(), inspectOnly: true)
      let c = try store.outbox.counts()
      let dead = args.flag("dead-letters") ? try store.outbox.deadLetters() : []
      if args.flag("json") {
        var object: [String: Any] = [
          "pending": c.pending, "in_flight": c.inFlight, "dead_letters": c.deadLetters,
          "evicted": c.evicted, "delivered": c.delivered, "deleted": c.deleted,
        ]
        if args.flag("dead-letters") {
          object["dead_letter_events"] = dead.map {
            ["id": $0.id, "reason": $0.reason, "payload": $0.payload, "attempts": $0.attempts]
          }
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
      } else {
        print("pending       \(c.pending)")
        print("in flight     \(c.inFlight)")
        print("dead letters  \(c.deadLetters)")
        print("evicted       \(c.evicted)")
        print("delivered     \(c.delivered)")
        print("deleted       \(c.deleted)")
        for d in dead { print("dead letter \(d.id): \(d.reason): \(d.payload)") }
      }
      return ExitStatus.ok
    } catch {
      printError("geofence outbox: \(error)")
      return ExitStatus.failure
    }
  }

  // MARK: upload

  static func upload(_ argv: [String]) -> Int32 {
    let args: CommandLineArguments
    let options: UploadOptions
    do throws(UsageError) {
      args = try CommandLineArguments(
        argv, spec: .init(valued: uploadOptions, flags: ["help", "quiet"]))
      if args.flag("help") {
        print(uploadHelp)
        return ExitStatus.ok
      }
      if !args.positionals.isEmpty {
        throw UsageError("unexpected argument '\(args.positionals[0])'")
      }
      options = try UploadOptions(args, needsServer: true)
    } catch {
      printError("geofence upload: \(error.message)\nRun 'geofence upload --help' for usage.")
      return ExitStatus.usage
    }
    guard Store.exists(options.store) else {
      printError("geofence upload: no outbox in \(options.store)")
      return ExitStatus.noInput
    }
    let quiet = args.flag("quiet")
    do {
      let store = try Store(directory: options.store, configuration: options.outboxConfiguration)
      guard let server = options.server else { return ExitStatus.usage }
      let uploader = store.uploader(server: server, options: options)
      let report = try waitingFor { try await uploader.flush() }
      if !quiet { printError(describe(report)) }
      return finish(
        store: store, report: report, uploaded: true, quiet: quiet, status: ExitStatus.ok)
    } catch {
      printError("geofence upload: \(error)")
      return ExitStatus.failure
    }
  }

  // MARK: Shared

  struct UploadOptions {
    var server: URL?
    var key: String
    var store: String
    var outboxConfiguration: OutboxConfiguration
    var timeoutSeconds: Double
    var maxAttempts: Int

    init(_ args: CommandLineArguments, needsServer: Bool) throws(UsageError) {
      guard let store = args.last("store") else { throw UsageError("give --store DIR") }
      self.store = store
      if let text = args.last("server") {
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""),
          url.host != nil
        else { throw UsageError("--server needs an http or https URL, got '\(text)'") }
        server = url
      } else if needsServer {
        throw UsageError("give --server URL")
      }
      key = args.last("key") ?? ""
      if needsServer && key.isEmpty { throw UsageError("give --key KEY") }
      let batch = try args.int("batch-size", range: 1...500) ?? 20
      let interval = try args.double("batch-interval", range: 0...86_400) ?? 30
      let capacity = try args.int("capacity", range: 1...100_000_000) ?? 10_000
      outboxConfiguration = OutboxConfiguration(
        maxBatchEvents: batch, maxBatchIntervalSeconds: interval, capacity: capacity)
      timeoutSeconds = try args.double("timeout", range: 0.001...3_600) ?? 10
      maxAttempts = try args.int("max-attempts", range: 1...1_000) ?? 8
    }
  }

  /// A device's state directory: the outbox and the identity.
  struct Store {
    let outbox: Outbox
    let identity: MonitoringIdentity

    static func outboxPath(_ directory: String) -> String {
      URL(fileURLWithPath: directory).appendingPathComponent("outbox.sqlite").path
    }

    static func exists(_ directory: String) -> Bool {
      FileManager.default.fileExists(atPath: outboxPath(directory))
    }

    /// - Parameter inspectOnly: leave in-flight events alone (another process may be
    ///   uploading them).
    init(directory: String, configuration: OutboxConfiguration, inspectOnly: Bool = false) throws {
      let url = URL(fileURLWithPath: directory)
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
      outbox = try Outbox(
        path: Self.outboxPath(directory), configuration: configuration,
        recoverInFlight: !inspectOnly)
      identity = try MonitoringIdentity(fileURL: url.appendingPathComponent("identity.json"))
    }

    func uploader(server: URL, options: UploadOptions) -> OutboxUploader {
      OutboxUploader(
        outbox: outbox,
        server: server, apiKey: options.key, transport: URLSessionTransport(),
        retryPolicy: RetryPolicy(maximumAttempts: options.maxAttempts),
        requestTimeoutSeconds: options.timeoutSeconds)
    }
  }

  static func describe(_ r: UploadReport) -> String {
    var text =
      "upload: \(r.batches) batches, \(r.requests) requests (\(r.retries) retries, waited "
      + String(format: "%.1f", r.waitedSeconds)
      + " s); accepted \(r.accepted), duplicates \(r.duplicates), dead-lettered \(r.rejected)"
    if let stop = r.stopped { text += "; stopped: \(stop)" }
    return text
  }

  /// Prints the outbox counts and picks the exit status.
  static func finish(
    store: Store, report: UploadReport, uploaded: Bool, quiet: Bool, status: Int32
  ) -> Int32 {
    let counts: OutboxCounts
    do { counts = try store.outbox.counts() } catch {
      printError("geofence: \(error)")
      return ExitStatus.failure
    }
    if !quiet { printError("outbox: \(counts)") }
    if status != ExitStatus.ok { return status }
    if uploaded && counts.queued > 0 {
      if let stop = report.stopped { printError("geofence: events remain queued: \(stop)") }
      return tempFailure
    }
    return ExitStatus.ok
  }

  enum LoadFailure: Error {
    case failed(String, Int32)
    var message: String { if case .failed(let m, _) = self { return m } else { return "" } }
    var status: Int32 { if case .failed(_, let s) = self { return s } else { return 1 } }
  }

  /// Geofences from definition files, as `geofence replay` loads them.
  /// Syncs the geofences from `upload.server` into `DIR/geofences.sqlite` and loads the stored
  /// set. A failed sync keeps the last good set (marked stale) and the run goes on with it;
  /// only a store that has never held a set is an error (69, EX_UNAVAILABLE).
  static func syncRegions(upload: UploadOptions, quiet: Bool)
    -> Result<MonitoredRegions, LoadFailure>
  {
    guard let server = upload.server else {
      return .failure(LoadFailure.failed("give --regions FILE or --server URL", 64))
    }
    do {
      try FileManager.default.createDirectory(
        atPath: upload.store, withIntermediateDirectories: true)
    } catch {
      return .failure(
        LoadFailure.failed(
          "cannot create \(upload.store): \(error.localizedDescription)", ExitStatus.failure))
    }
    let storePath = URL(fileURLWithPath: upload.store).appendingPathComponent("geofences.sqlite")
      .path
    let options = SyncCommand.Options(
      configuration: SyncConfiguration(baseURL: server, apiKey: upload.key),
      storePath: storePath, full: false, quiet: true, live: false)
    let syncStatus = SyncCommand.syncWaiting(options)
    do {
      let store = try GeofenceStore(path: storePath)
      let state = try store.state()
      if syncStatus != ExitStatus.ok && state.version == nil {
        return .failure(
          LoadFailure.failed("the geofence sync failed and no earlier set is stored", 69))
      }
      let geofences = try store.geofences()
      if !quiet {
        printError(
          (state.staleReason == nil
            ? "geofences: \(geofences.count) synced, version \(state.version ?? "none")"
            : "geofences: sync failed; using the \(geofences.count) stored at version "
              + "\(state.version ?? "none") (stale: \(state.staleReason ?? ""))"))
      }
      return .success(MonitoredRegions(geofences: geofences))
    } catch {
      return .failure(
        LoadFailure.failed("cannot read the geofence store: \(error)", 74))
    }
  }

  static func loadRegionFiles(_ files: [(path: String, radius: Double?)], quiet: Bool)
    -> Result<MonitoredRegions, LoadFailure>
  {
    var loads: [GeofenceLoadResult] = []
    for (path, radius) in files {
      guard FileManager.default.isReadableFile(atPath: path) else {
        return .failure(.failed("\(path): no such file or not readable", ExitStatus.noInput))
      }
      do {
        loads.append(
          try GeofenceFileReader.read(
            contentsOf: URL(fileURLWithPath: path), defaultRadiusMeters: radius))
      } catch {
        return .failure(.failed("\(error)", ExitStatus.dataError))
      }
    }
    let merged = GeofenceLoadResult.merging(loads)
    if !quiet {
      ReplayCommand.report(
        rejections: merged.rejected.map(\.description), what: "geofence definitions")
    }
    return .success(MonitoredRegions(geofences: merged.geofences))
  }
}

extension UploadReport {
  mutating func add(_ other: UploadReport) {
    batches += other.batches
    requests += other.requests
    accepted += other.accepted
    duplicates += other.duplicates
    rejected += other.rejected
    retries += other.retries
    waitedSeconds += other.waitedSeconds
    stopped = stopped ?? other.stopped
  }
}
