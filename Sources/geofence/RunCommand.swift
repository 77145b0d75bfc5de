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
      --key KEY               the API key (Authorization: Bearer KEY); else $GEOFENCE_API_KEY,
                              which other users cannot read in ps. A key that is empty,
                              blank, holds a CR, LF or other control character, or starts or
                              ends with a blank is a usage error (64)
      --store DIR             the device's state: DIR/outbox.sqlite, DIR/identity.json,
                              DIR/state.sqlite, DIR/geofences.sqlite (created when missing)

    geofences:
      --regions FILE          geofences (JSON, GeoJSON, CSV), as for 'geofence replay'; repeat
                              for several; --radius METRES before a file gives its default
                              radius. Without --regions, the set is synced from --server into
                              DIR/geofences.sqlite first (a failed sync goes on with the last
                              good set).

    authorization:
      --auth FILE             authorization timeline, JSON lines or CSV with the columns
                              time,status,accuracy,app_state,consent,registered (a missing
                              field keeps the previous line's value; the first line starts
                              from everything granted). The store keeps the state the last
                              line left: a new store starts from authorizedAlways, full
                              accuracy, consent on, registered, and a run without --auth
                              goes on from where the last run left it (a consent withdrawn
                              stays withdrawn until an --auth line grants it again). Fixes
                              while monitoring is off are dropped (notAuthorized); consent
                              off deletes the queued events. Each line states a change, so
                              one bad or out-of-order line refuses the whole file (65),
                              naming it.
      --user ID               sign in as user ID: the events of this run and of the runs
                              after it carry it (the store keeps it), until another --user
                              or --reset-identity; else the store's anonymous id
      --reset-identity        sign out and start a new anonymous id before the run

    destinations (repeatable; default: server):
      --destination server    the server's batch API, POST URL/v1/events (needs --server, --key)
      --destination webhook=URL
                              one signed JSON POST per event to URL (http or https), headers
                              Idempotency-Key (the event id), X-Geofence-Timestamp and
                              X-Geofence-Signature: sha256=HMAC-SHA256(secret, "T." + body);
                              retried as the upload is (--timeout, --max-attempts); an event
                              over 64 KiB is dead-lettered
      --destination file=PATH JSON Lines appended to PATH, rotated at --file-max-bytes into
                              PATH.1 ... PATH.5
      --destination stdout    JSON Lines on standard output
      --webhook-secret S      the webhook's HMAC secret (else $GEOFENCE_WEBHOOK_SECRET)
      --file-max-bytes N      rotate the file destination before an event would take it past
                              N bytes [10485760] (an event larger than N fills a file of its
                              own); one run never rotates away a file it wrote: it stops
                              there, the rest queued (75)
                              Each destination has its own cursor in DIR/outbox.sqlite: a slow
                              or failing one never holds the others back, and a crash loses
                              nothing for any (delivery is at least once; receivers
                              deduplicate by the event id).

    flush policy (combined: a destination's events go out when any trigger fires; the run
    always ends with a flush of everything):
      --flush-count N         when N events are pending [20] (Hightouch flushAt, Appy)
      --flush-interval S      when the oldest pending event waited S seconds [30]
                              (Hightouch flushInterval); --batch-interval is the same option
      --flush-debounce S      when S seconds passed since the newest pending event [off;
                              Appy uses 2]
      --flush-on-transition   after every fix that made an event (Klaviyo's immediate
                              geofence flush) [off]
      --no-flush-on-background
                              do not flush when the app state turns to background [flush]

    sessions:
      --sessions              stamp session_id, session_index and event_index on each event; a
                              new session after 30 min without events or after
                              --reset-identity; kept in DIR/state.sqlite across runs

    outbox and upload (defaults in brackets):
      --batch-size N          events per batch to the server, 1-500 [20]
      --capacity N            most queued events; the oldest are evicted (counted) [10000]
      --timeout S             the total deadline of one HTTP request, body included [10]
      --max-attempts N        sends of one batch before giving up for now [8]
      --deadline S            the bound on the sync, and on all the uploads together: no
                              request starts and no retry wait begins after it [300]
      --no-upload             only fill the outbox (a 'geofence upload' may deliver from it
                              meanwhile)
      --quiet                 no summary

    detector: the options of 'geofence replay' (--preset, --hysteresis-min, --max-accuracy,
    --loitering-delay, --no-dwell, --infer-crossings, ...).

    Time bound: the network part of the command ends within 2 x --deadline (the sync within
    one, the uploads within the other), whatever the server does; the rest is the replay of
    the tracks, which depends only on the input.

    exit status: 0 every event delivered to every destination (or dead-lettered, or evicted
    over --capacity, which a warning counts); 64 usage error; 65 an input file
    could not be parsed; 66 an input file is missing; 69 no --regions given, the sync failed
    and no earlier set is stored; 73 the --store directory cannot be made; 75 events remain
    queued for a destination (unreachable or refusing):
    run 'geofence upload' later with the same --destination options (also when the server
    refused a whole batch, 400 or 401,
    or the deadline passed: no event is dead-lettered for those), or another process
    delivers from the --store (one at a time: it holds DIR/delivery.lock) or takes fixes
    into it (one at a time: it holds DIR/state.lock); 77 the outbox holds events queued
    with another --key (whichever destinations this run names).
    """

  static let outboxHelp = """
    usage: geofence outbox --store DIR [--json] [--dead-letters] [--forget-destination NAME]

    Shows the event outbox of a store: pending, in flight, dead letters, and the lifetime
    counts of evicted, delivered and deleted (consent withdrawn) events; then each
    destination's cursor: pending, in flight, delivered, filtered, dead letters (with --json,
    under "destinations", by name). A destination's cursor is named by what it delivers to:
    server, stdout, file:ABSOLUTE-PATH, webhook:URL (the URL without its user and password).

      --store DIR             the store given to 'geofence run'
      --json                  one JSON object instead of text
      --dead-letters          also list the dead letters: id, reason, payload
      --forget-destination NAME
                              drop a destination's cursor, so that the events it has not
                              taken no longer stay in the outbox for it (they are not sent
                              to it); the other destinations are not affected. NAME as
                              'outbox' lists it, or as --destination gave it
                              (webhook=URL, with its password and query values)

    exit status: 0; 64 usage error (also an unknown NAME); 66 no outbox in DIR.
    """

  static let uploadHelp = """
    usage: geofence upload --server URL --key KEY --store DIR [options]
           geofence upload --store DIR --destination KIND[=TARGET] ... [options]

    Sends every queued event of the store now to its destinations (in-flight events left by
    an interrupted run are sent first, with the same ids), retrying timeouts, network
    errors, 408, 429, 5xx, 2xx answers that cannot be read or leave events out, with
    exponential backoff (full jitter, honouring Retry-After). A Retry-After of more than 300 s is not waited out: the command
    stops and the events stay queued (exit status 75).

      --server URL, --key KEY, --store DIR    as for 'geofence run'
      --destination server|stdout|file=PATH|webhook=URL   as for 'geofence run' (repeatable;
                              default: the server alone), with --webhook-secret S and
                              --file-max-bytes N: the destinations a run left events queued for
      --batch-size N          events per batch, 1-500 [20]
      --timeout S             the total deadline of one HTTP request, body included [10]
      --max-attempts N        sends of one batch before giving up for now [8]
      --deadline S            the bound on the whole command: no request starts and no
                              retry wait begins after it; what is left stays queued [300]
      --rebind-account        give the queued events to --key's account first (after events
                              were queued with a mistyped key: see below)
      --quiet                 no summary

    The outbox belongs to the account of the key it was first used with (a fingerprint of
    the key, PBKDF2-HMAC-SHA256, is kept with the events in DIR/outbox.sqlite): while it
    holds queued events, another --key is refused (exit status 77) so that events of one
    account never reach another. A fingerprint recorded by an earlier version (FNV-1a, or in
    DIR/state.sqlite) is recognised and replaced. Events queued with a mistyped key can only
    be sent with --rebind-account, which says that they belong to --key's account.

    A batch the server refuses as a whole (400, 401, 403, 404, ...) stays queued: only the
    server's per-event "rejected" list, or a 413 for a single event, dead-letters an event.

    exit status: 0 the outbox is empty of pending events; 64 usage error; 66 no outbox in DIR;
    75 events remain queued (the server unreachable, refusing, or the deadline passed), or
    another process delivers from the store (it holds DIR/delivery.lock); 77 the outbox
    holds events queued with another key.
    """

  // MARK: run

  static let uploadOptions: Set<String> = [
    "server", "key", "store", "batch-size", "batch-interval", "capacity", "timeout",
    "max-attempts", "deadline",
  ]

  static func run(_ argv: [String]) async -> Int32 {
    let spec = CommandLineArguments.Spec(
      valued: ReplayCommand.spec.valued.subtracting(["format", "svg"]).union(uploadOptions)
        .union(DeliveryOptions.valued).union(["auth", "user"]),
      flags: ReplayCommand.spec.flags.union(["no-upload", "reset-identity"]).union(
        DeliveryOptions.flags))
    let args: CommandLineArguments
    let replayOptions: ReplayCommand.Options
    var upload: UploadOptions
    let delivery: DeliveryOptions
    do throws(UsageError) {
      args = try CommandLineArguments(argv, spec: spec)
      if args.flag("help") {
        print(runHelp)
        return ExitStatus.ok
      }
      replayOptions = try ReplayCommand.Options(args, requiresRegions: false)
      try replayOptions.checkTrackNames()
      delivery = try DeliveryOptions(
        args, secretFromEnvironment: ProcessInfo.processInfo.environment["GEOFENCE_WEBHOOK_SECRET"])
      upload = try UploadOptions(
        args,
        needsServer: (delivery.server && !args.flag("no-upload"))
          || replayOptions.regionFiles.isEmpty)
      upload.delivery = delivery
      let inputs = replayOptions.inputPaths + args.all("auth")
      for case .jsonLinesFile(let file) in delivery.destinations {
        if let input = inputWrittenOver(by: file.path, inputs: inputs) {
          throw UsageError(
            "--destination file=\(file.path) is the input file \(input): events would be "
              + "appended to it")
        }
      }
      if let user = args.last("user") {
        do { _ = try GeofenceEngine.validUserID(user) } catch {
          if case .invalidUserID(let why) = error { throw UsageError("--user: \(why)") }
          throw UsageError("--user: \(error)")
        }
      }
    } catch {
      if error.status != ExitStatus.usage {
        printError("geofence run: \(error.message)")
        return error.status
      }
      printError("geofence run: \(error.message)\nRun 'geofence run --help' for usage.")
      return ExitStatus.usage
    }
    let quiet = args.flag("quiet")
    func fail(_ message: String, _ status: Int32) -> Int32 {
      printError("geofence run: \(message)")
      return status
    }

    // Geofences from the --regions files, else synced from the server by the engine.
    var fixedSet: GeofenceLoadResult?
    if !replayOptions.regionFiles.isEmpty {
      switch loadRegionFiles(replayOptions.regionFiles, quiet: quiet) {
      case .success(let g): fixedSet = g
      case .failure(let e): return fail(e.message, e.status)
      }
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

    // The engine on the store, whose directory is made here so that an unusable path is
    // named with its reason (exit 73, EX_CANTCREAT).
    if let reason = GeofenceEngine.makeDirectory(upload.store) {
      return fail("--store \(reason)", ExitStatus.cannotCreate)
    }
    let syncsTheSet = fixedSet == nil
    var configuration = upload.engineConfiguration(
      transitions: replayOptions.configuration, syncs: syncsTheSet)
    // --no-upload only fills the outbox: a `geofence upload` may deliver from it meanwhile.
    configuration.delivers = !args.flag("no-upload")
    let engine: GeofenceEngine
    do {
      engine = try GeofenceEngine(
        configuration: configuration, storage: .directory(upload.store),
        loaded: consume fixedSet)
      // One process at a time takes fixes into a store.
      try engine.claimState()
      if args.flag("reset-identity") { try engine.reset() }
      if let user = args.last("user") { try engine.identify(user: user) }
    } catch {
      if case .accountMismatch = error { return fail("\(error)", accountMismatch) }
      if let status = storeInUseStatus(error, command: "run") { return status }
      if let status = damagedStoreStatus(upload.store, command: "run") { return status }
      return fail("cannot open the store \(upload.store): \(error)", ExitStatus.failure)
    }
    releaseFreedMemory()
    let evictedBefore = (try? engine.outbox?.counts().evicted) ?? 0
    if syncsTheSet {
      let outcome = await syncStoredSet(engine, quiet: quiet)
      if outcome != ExitStatus.ok { return outcome }
    }

    // Tracks through the engine.
    var status = ExitStatus.ok
    var inputs: [ReplayInput] = []
    for path in replayOptions.tracks {
      if let problem = inputProblem(path) {
        printError("geofence run: \(path): \(problem)")
        status = ExitStatus.noInput
        continue
      }
      do {
        let track = try TrackReader.read(contentsOf: URL(fileURLWithPath: path))
        if let cut = track.truncation {
          printError("geofence run: \(cut)")
          if status == ExitStatus.ok { status = ExitStatus.dataError }
        }
        if !quiet {
          ReplayCommand.report(
            rejections: track.skippedRows.map(\.description), what: "track rows")
        }
        inputs.append(ReplayInput(file: path, track: track))
      } catch {
        printError("geofence run: \(error)")
        if status == ExitStatus.ok { status = ExitStatus.dataError }
      }
    }
    let uploading = !engine.destinationNames.isEmpty && !args.flag("no-upload")
    // One deadline for every delivery of the run, so that together they end within it.
    let uploadDeadline = SystemClock().now() + upload.deadlineSeconds
    var deliveryReport = DeliveryReport()
    var uploadError: EngineError?
    nonisolated(nonsending) func deliverDue() async {
      guard uploading, uploadError == nil else { return }
      do throws(EngineError) {
        // A destination that stopped waits for the final flush; the others go on.
        deliveryReport.add(
          try await engine.deliverDue(until: uploadDeadline, skipping: deliveryReport.stoppedNames))
      } catch {
        uploadError = error
      }
    }
    do throws(EngineError) {
      let reports = try await engine.replay(
        inputs, timeline: timeline, ignoringAccuracy: replayOptions.ignoringAccuracy
      ) {
        await deliverDue()
      }
      if !quiet {
        for r in reports {
          for w in r.warnings { printInputProblem("warning: ", "\(w)") }
          printError(ReplayCommand.fixSummary(r))
        }
      }
      try engine.checkpoint()
      if uploading, uploadError == nil {
        deliveryReport.add(
          try await engine.deliver(until: uploadDeadline, skipping: deliveryReport.stoppedNames))
      }
    } catch {
      uploadError = error
    }
    if let uploadError {
      if case .accountMismatch = uploadError {
        return fail("\(uploadError)", accountMismatch)
      }
      if let status = storeInUseStatus(uploadError, command: "run") { return status }
      // A store file found damaged only now (a bad page of the outbox read at delivery) is
      // named with the repair to run, as when the store is opened.
      printError("geofence run: \(uploadError)")
      if let status = damagedStoreStatus(upload.store, command: "run") { return status }
      return ExitStatus.failure
    }

    if !quiet {
      let r = engine.report
      var line = "fixes \(r.fixes): notAuthorized \(r.notAuthorized)"
      if !r.blockedCounts.isEmpty {
        line +=
          " ("
          + r.blockedCounts.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }
          .joined(separator: ", ") + ")"
      }
      for (reason, count) in r.dropCounts.nonZero { line += ", \(reason.rawValue) \(count)" }
      printError(line)
      printError(
        "events: \(r.eventCounts); after a gap \(r.afterGapEvents) (gaps \(r.gaps))"
          + "; enqueued \(r.enqueued); deleted for consent \(r.deletedForConsent)")
      if uploading {
        if let server = deliveryReport.server { printError(describe(server)) }
        for (name, r) in deliveryReport.destinations {
          printError(describe(name: name, r))
        }
      }
    }
    return finish(
      engine: engine, report: deliveryReport.server ?? UploadReport(), uploaded: uploading,
      quiet: quiet, status: status, destinations: deliveryReport, evictedBefore: evictedBefore)
  }

  /// Syncs the engine's stored set. A failed sync keeps the last good set (marked stale) and
  /// the command goes on with it; only a store that has never held a set is an error (69,
  /// EX_UNAVAILABLE).
  static func syncStoredSet(_ engine: GeofenceEngine, quiet: Bool) async -> Int32 {
    var failure: String?
    do { _ = try await engine.sync() } catch { failure = "\(error)" }
    do {
      let state = try engine.setState()
      if let failure, state.version == nil {
        // The reason may hold the server's text: shown as such (one line, escaped).
        printError(
          "geofence run: the geofence sync failed and no earlier set is stored: "
            + ServerText.displayable(failure, limit: 1_000))
        return ExitStatus.unavailable
      }
      // As 'geofence sync' does: the next engine on this store opens the set indexed.
      if failure == nil, !engine.snapshotIsCurrent() {
        do throws(EngineError) { _ = try engine.writeSnapshot() } catch {
          printError("warning: the indexed snapshot was not written: \(error)")
        }
      }
      if !quiet {
        // The version and the stale reason came from the server.
        let version = ServerText.displayable(state.version ?? "none")
        printError(
          failure == nil
            ? "geofences: \(engine.geofenceCount) synced, version \(version)"
            : "geofences: sync failed; using the \(engine.geofenceCount) stored at version "
              + "\(version) (stale: "
              + ServerText.displayable(state.staleReason ?? failure ?? "") + ")")
      }
      return ExitStatus.ok
    } catch {
      printError("geofence run: cannot read the geofence store: \(error)")
      return ExitStatus.ioError
    }
  }

  // MARK: outbox

  static func outbox(_ argv: [String]) -> Int32 {
    let args: CommandLineArguments
    let directory: String
    switch CommandLineArguments.storeCommand(
      argv, command: "outbox", help: outboxHelp, flags: ["json", "dead-letters"],
      valued: ["forget-destination"])
    {
    case .success(let parsed): (args, directory) = parsed
    case .failure(let end): return end.status
    }
    guard Store.exists(directory) else {
      printError("geofence outbox: no outbox in \(directory)")
      return ExitStatus.noInput
    }
    do {
      let store = try Store(
        directory: directory, configuration: OutboxConfiguration(), inspectOnly: true)
      // A webhook cursor named by an earlier version may hold the URL's password: names are
      // shown without it, and --forget-destination takes either form.
      let shown = WebhookConfiguration.displayName
      if var given = args.last("forget-destination") {
        // As --destination spells it (webhook=URL), or with the URL as given: its password
        // dropped and its query values hashed, as the name shows them.
        if given.hasPrefix("webhook=") { given = "webhook:" + given.dropFirst("webhook=".count) }
        guard
          let name = try store.outbox.destinations().first(where: { $0 == given })
            ?? store.outbox.destinations().first(where: { shown($0) == shown(given) })
        else {
          let known = try store.outbox.destinations().map(shown).joined(separator: ", ")
          printError(
            "geofence outbox: no destination \"\(shown(given))\" in \(directory) (it has: \(known))"
          )
          return ExitStatus.usage
        }
        let held = try store.outbox.counts(destination: name)
        try store.outbox.unregister(destination: name)
        printError(
          "geofence outbox: forgot destination \(shown(name)) (\(held.pending + held.inFlight) events it"
            + " had not taken)")
      }
      let c = try store.outbox.counts()
      let dead = args.flag("dead-letters") ? try store.outbox.deadLetters() : []
      let cursors = try store.outbox.destinations().map {
        ($0, try store.outbox.counts(destination: $0))
      }
      if args.flag("json") {
        var object: [String: Any] = [
          "pending": c.pending, "in_flight": c.inFlight, "dead_letters": c.deadLetters,
          "evicted": c.evicted, "delivered": c.delivered, "deleted": c.deleted,
        ]
        var byName: [String: Any] = [:]
        for (name, d) in cursors {
          byName[shown(name)] = [
            "pending": d.pending, "in_flight": d.inFlight, "delivered": d.delivered,
            "filtered": d.filtered, "dead_letters": d.deadLetters,
          ]
        }
        object["destinations"] = byName
        if args.flag("dead-letters") {
          object["dead_letter_events"] = dead.map {
            [
              "id": $0.id, "reason": ServerText.displayable($0.reason), "payload": $0.payload,
              "attempts": $0.attempts,
              "destination": shown($0.destination),
            ]
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
        for (name, d) in cursors { print("destination \(shown(name)): \(d)") }
        // A reason is the server's text (an outbox written before it was made safe on
        // arrival may hold it raw).
        for d in dead {
          print(
            "dead letter \(d.id) (\(shown(d.destination))): \(ServerText.displayable(d.reason)): "
              + d.payload)
        }
      }
      return ExitStatus.ok
    } catch {
      if let status = storeInUseStatus(error, command: "outbox") { return status }
      if let status = damagedStoreStatus(directory, command: "outbox") { return status }
      printError("geofence outbox: \(error)")
      return ExitStatus.failure
    }
  }

  // MARK: upload

  static func upload(_ argv: [String]) async -> Int32 {
    let args: CommandLineArguments
    var options: UploadOptions
    do throws(UsageError) {
      args = try CommandLineArguments(
        argv,
        spec: .init(
          valued: uploadOptions.union(["destination", "webhook-secret", "file-max-bytes"]),
          flags: ["help", "quiet", "rebind-account"]))
      if args.flag("help") {
        print(uploadHelp)
        return ExitStatus.ok
      }
      if args.flag("rebind-account") && args.last("key") == nil {
        throw UsageError("--rebind-account needs --key KEY")
      }
      if !args.positionals.isEmpty {
        throw UsageError("unexpected argument '\(args.positionals[0])'")
      }
      // The destinations of 'run' (the server alone when none is given), so that events a
      // run left queued for a webhook or a file can be delivered without another run.
      let delivery = try DeliveryOptions(
        args, secretFromEnvironment: ProcessInfo.processInfo.environment["GEOFENCE_WEBHOOK_SECRET"])
      options = try UploadOptions(args, needsServer: delivery.server)
      options.delivery = delivery
    } catch {
      if error.status != ExitStatus.usage {
        printError("geofence upload: \(error.message)")
        return error.status
      }
      printError("geofence upload: \(error.message)\nRun 'geofence upload --help' for usage.")
      return ExitStatus.usage
    }
    guard Store.exists(options.store) else {
      printError("geofence upload: no outbox in \(options.store)")
      return ExitStatus.noInput
    }
    let quiet = args.flag("quiet")
    if args.flag("rebind-account") {
      do {
        let before = try GeofenceEngine.rebindOutbox(directory: options.store, key: options.key)
        if !quiet {
          printError(
            "geofence upload: the queued events now belong to this key's account"
              + (before.map { " (they belonged to key fingerprint \($0))" } ?? ""))
        }
      } catch {
        printError("geofence upload: \(error)")
        return damagedStoreStatus(options.store, command: "upload") ?? ExitStatus.ioError
      }
    }
    let engine: GeofenceEngine
    do {
      engine = try GeofenceEngine(
        configuration: options.engineConfiguration(transitions: .init(), syncs: false),
        storage: .directory(options.store), geofences: [])
    } catch {
      if let status = storeInUseStatus(error, command: "upload") { return status }
      if let status = damagedStoreStatus(options.store, command: "upload") { return status }
      printError("geofence upload: \(error)")
      if case .accountMismatch = error { return accountMismatch }
      return ExitStatus.failure
    }
    // A damaged page that opening did not read would be met only after a batch was sent
    // (its bookkeeping failing): the outbox is checked whole first (PRAGMA quick_check).
    let damages = StoreRepair.check(directory: options.store, files: ["outbox.sqlite"])
    if !damages.isEmpty {
      for damage in damages { printError("geofence upload: \(damage)") }
      printError(
        "geofence upload: run 'geofence repair --store \(options.store)' to move the damaged "
          + "file(s) aside as NAME.corrupt-TIME and keep what can still be read")
      return ExitStatus.dataError
    }
    // Every destination given (the server alone by default), each from its own cursor, as
    // at the end of 'run'.
    let delivery: DeliveryReport
    do {
      // --deadline bounds every destination, the server among them or not.
      delivery = try await engine.deliver(until: SystemClock().now() + options.deadlineSeconds)
    } catch {
      if let status = storeInUseStatus(error, command: "upload") { return status }
      printError("geofence upload: \(error)")
      if case .accountMismatch = error { return accountMismatch }
      // A damaged page read only now is named with the repair to run (65), as at opening.
      if let status = damagedStoreStatus(options.store, command: "upload") { return status }
      return ExitStatus.failure
    }
    if !quiet {
      if let server = delivery.server { printError(describe(server)) }
      for (name, r) in delivery.destinations { printError(describe(name: name, r)) }
    }
    return finish(
      engine: engine, report: delivery.server ?? UploadReport(), uploaded: true, quiet: quiet,
      status: ExitStatus.ok, destinations: delivery)
  }

  // MARK: Shared

  struct UploadOptions {
    var server: URL?
    var key: String
    var store: String
    var outboxConfiguration: OutboxConfiguration
    var timeoutSeconds: Double
    var maxAttempts: Int
    /// `--deadline`: the bound on the sync, and on all the uploads of one command together.
    var deadlineSeconds: Double
    /// `--destination` and the flush and session options (`run`); the server alone else.
    var delivery = DeliveryOptions()

    init(_ args: CommandLineArguments, needsServer: Bool) throws(UsageError) {
      guard let store = args.last("store") else { throw UsageError("give --store DIR") }
      self.store = store
      if let text = args.last("server") {
        server = try serverURL(text)
      } else if needsServer {
        throw UsageError("give --server URL")
      }
      key = try APIKeyOption.value(args) ?? ""
      if needsServer && key.isEmpty {
        throw UsageError("give --key KEY (or $\(APIKeyOption.environmentVariable))")
      }
      let batch = try args.int("batch-size", range: 1...500) ?? 20
      let interval = try args.double("batch-interval", range: 0...86_400) ?? 30
      let capacity = try args.int("capacity", range: 1...100_000_000) ?? 10_000
      outboxConfiguration = OutboxConfiguration(
        maxBatchEvents: batch, maxBatchIntervalSeconds: interval, capacity: capacity)
      timeoutSeconds = try args.double("timeout", range: 0.001...3_600) ?? 10
      maxAttempts = try args.int("max-attempts", range: 1...1_000) ?? 8
      deadlineSeconds = try args.double("deadline", range: 1...86_400) ?? 300
    }

    /// The engine of `run` and `upload`: the outbox, upload to `server`, a persisted
    /// identity, and (when `syncs`) the geofence sync from the same server and key.
    func engineConfiguration(transitions: TransitionConfiguration, syncs: Bool)
      -> GeofenceEngine.Configuration
    {
      GeofenceEngine.Configuration(
        transitions: transitions, outbox: outboxConfiguration,
        upload: (delivery.server ? server : nil).map {
          GeofenceEngine.UploadConfiguration(
            server: $0, apiKey: key, timeoutSeconds: timeoutSeconds,
            retry: RetryPolicy(maximumAttempts: maxAttempts), deadlineSeconds: deadlineSeconds)
        },
        sync: syncs
          ? server.map {
            var sync = SyncConfiguration(baseURL: $0, apiKey: key)
            sync.deadlineSeconds = deadlineSeconds
            return sync
          } : nil,
        identity: .persisted, checkpoints: .manual,
        destinations: delivery.destinations.map {
          // The webhook retries as the upload does: --timeout and --max-attempts.
          guard case .webhook(var w) = $0 else { return $0 }
          w.timeoutSeconds = timeoutSeconds
          w.retry = RetryPolicy(maximumAttempts: maxAttempts)
          return .webhook(w)
        },
        flushPolicy: delivery.flushPolicy, sessions: delivery.sessions,
        // The events belong to the key's account even when the server is not among this
        // command's destinations: the server's copy stays queued for a later upload. Bound
        // before any destination is registered, so a refused run changes nothing.
        accountKey: key.isEmpty ? nil : key)
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
  }

  static func describe(_ r: UploadReport) -> String {
    var text =
      "upload: \(r.batches) batches, \(r.requests) requests (\(r.retries) retries, waited "
      + String(format: "%.1f", r.waitedSeconds)
      + " s); accepted \(r.accepted), duplicates \(r.duplicates), dead-lettered \(r.rejected)"
    if let stop = r.stopped { text += "; stopped: \(stop)" }
    return text
  }

  /// EX_NOPERM (sysexits.h): the outbox holds events queued for another account's key.
  static let accountMismatch: Int32 = 77

  /// Prints the outbox counts (and each destination's, when there are others than the
  /// server) and picks the exit status.
  static func finish(
    engine: GeofenceEngine, report: UploadReport, uploaded: Bool, quiet: Bool, status: Int32,
    destinations: DeliveryReport = DeliveryReport(), evictedBefore: Int? = nil
  ) -> Int32 {
    let counts: OutboxCounts
    var pendingSomewhere = false
    guard let outbox = engine.outbox else { return status }
    do {
      counts = try outbox.counts()
      let names = engine.destinationNames
      for name in names {
        let c = try outbox.counts(destination: name)
        if c.pending + c.inFlight > 0 { pendingSomewhere = true }
        if !quiet && names != [Outbox.serverDestination] { printError("outbox \(name): \(c)") }
      }
    } catch {
      printError("geofence: \(error)")
      return ExitStatus.failure
    }
    if !quiet { printError("outbox: \(counts)") }
    // Events lost to the outbox's capacity are named whatever --quiet says: they will never
    // be delivered.
    if let evictedBefore, counts.evicted > evictedBefore {
      printError(
        "warning: \(counts.evicted - evictedBefore) events were evicted from the outbox, the "
          + "oldest first, to keep it within --capacity: they are lost")
    }
    // A destination of an earlier run that this run does not deliver to keeps its events in
    // the outbox until it is given again or forgotten: say so, whatever --quiet says.
    if let registered = try? outbox.destinations() {
      for name in registered where !engine.destinationNames.contains(name) {
        guard let c = try? outbox.counts(destination: name), c.pending + c.inFlight > 0 else {
          continue
        }
        printError(
          "warning: destination \(name) is not given in this run and holds"
            + " \(c.pending + c.inFlight) events in the outbox; give it again to deliver them, or"
            + " drop them with 'geofence outbox --store DIR --forget-destination \(name)'")
      }
    }
    if status != ExitStatus.ok { return status }
    if uploaded && pendingSomewhere {
      if let stop = report.stopped { printError("geofence: events remain queued: \(stop)") }
      for (name, r) in destinations.destinations {
        if let stop = r.stopped {
          printError("geofence: events remain queued for \(name): \(stop)")
        }
      }
      return tempFailure
    }
    return ExitStatus.ok
  }

  static func describe(name: String, _ r: DestinationReport) -> String {
    var text =
      "delivery \(name): \(r.batches) batches; delivered \(r.delivered), dead-lettered "
      + "\(r.rejected), filtered \(r.filtered)"
    if let stop = r.stopped { text += "; stopped: \(stop)" }
    return text
  }

  struct LoadFailure: Error {
    var message: String
    var status: Int32
  }

  /// Geofences from definition files, as `geofence replay` loads them, except that a file
  /// cut short (``GeofenceLoadResult/truncations``) fails the load, exit 65: a live run does
  /// not start on a set missing an unknown number of definitions.
  static func loadRegionFiles(_ files: [(path: String, radius: Double?)], quiet: Bool)
    -> Result<GeofenceLoadResult, LoadFailure>
  {
    var loads: [GeofenceLoadResult] = []
    for (path, radius) in files {
      if let problem = inputProblem(path) {
        return .failure(LoadFailure(message: "\(path): \(problem)", status: ExitStatus.noInput))
      }
      do {
        loads.append(
          try GeofenceFileReader.read(
            contentsOf: URL(fileURLWithPath: path), defaultRadiusMeters: radius))
      } catch {
        return .failure(LoadFailure(message: "\(error)", status: ExitStatus.dataError))
      }
    }
    let merged = GeofenceLoadResult.merging(loads)
    if let cut = merged.truncations.first {
      // A live run does not start on a set that lost an unknown number of definitions.
      return .failure(LoadFailure(message: "\(cut)", status: ExitStatus.dataError))
    }
    if !quiet {
      ReplayCommand.report(
        rejections: merged.rejected.map(\.description), what: "geofence definitions")
    }
    return .success(merged)
  }
}

extension DeliveryReport {
  /// Adds `other`'s counts, destination by destination.
  mutating func add(_ other: DeliveryReport) {
    if let server = other.server {
      var sum = self.server ?? UploadReport()
      sum.add(server)
      self.server = sum
    }
    for (name, r) in other.destinations {
      if let k = destinations.firstIndex(where: { $0.name == name }) {
        destinations[k].report.add(r)
      } else {
        destinations.append((name, r))
      }
    }
  }

  /// The destinations that stopped with events pending.
  var stoppedNames: Set<String> {
    var names = Set(destinations.filter { $0.report.stopped != nil }.map(\.name))
    if server?.stopped != nil { names.insert(Outbox.serverDestination) }
    return names
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
