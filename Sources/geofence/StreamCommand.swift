import Foundation
import GeofenceDefinitions
import GeofenceEngine
import GeofenceGeometry
import GeofenceSync
import GeofenceTransitions
import TrackFormats

#if canImport(Glibc)
  import Glibc
#endif

/// `geofence stream`: live fixes of many devices in, events out as they happen.
enum StreamCommand {
  static let help = """
    usage: geofence stream ([--radius METRES] --regions FILE ... | --store DIR)
                           [--state DIR] [--server URL --key KEY --sync-interval S]
                           [--input-format jsonl|csv] [options] [FILE ...]

    Reads fixes in arrival order from standard input (or the FILEs, one after another), many
    devices interleaved, and writes each event as one JSON Lines object to standard output as
    it happens, flushed after every input batch: what arrives until the input pauses for
    1 ms, at most 4 MiB (less after a batch with many events) or 50 ms of input. A summary
    goes to standard error at the end.

    input (one fix per line):
      JSON Lines    {"device_id": "...", "time": "RFC 3339" | epoch seconds,
                     "latitude": deg, "longitude": deg, "accuracy": metres | null}
                    (other members are ignored)
      CSV           a header line, then rows; the column names of 'geofence replay'
                    (lat/latitude, lon/lng/longitude, time/timestamp/..., accuracy/hacc,
                    device/device_id). Without a device column every row belongs to device
                    "-"; with one, a row whose device cell is empty is skipped, as is a
                    row whose accuracy is not a number. Times without a zone are read as
                    UTC, with one warning. One record a line (a quoted field may not span
                    lines).
      A device id must be non-empty UTF-8 without control characters (U+0000-U+001F,
      U+007F) in either form.
      --input-format jsonl|csv   default: CSV unless the first line starts with '{'
      A line that is not a fix is reported on standard error with its line number and
      skipped; the stream goes on. A line longer than 1 MiB is skipped unread.

    geofences:
      --regions FILE, --radius METRES   as for 'geofence replay'
      --store DIR             the set stored by 'geofence sync' (DIR/geofences.sqlite)
      --server URL --key KEY  with --store: apply the server's changes while streaming (the
                              key else $GEOFENCE_API_KEY; refused as by 'geofence sync') ...
      --sync-interval S       ... every S seconds (default 300), before the batch that
                              falls due, or while the input is idle: a fix is checked
                              against a set at most S seconds old. Each sync ends within
                              60 s (its deadline, every request, retry and wait included)
                              and holds up the stream at most that long; a failed one
                              keeps the set, streams on, and is tried again after S seconds
                              (at most 60). A removed geofence ends its visits without an
                              event, unless --exit-on-removal.
      --exit-on-removal       when a sync removes a geofence a device is inside, write an
                              EXIT for it ("removal": true, at the sync's time and the
                              device's last position)

    live semantics: each device's fixes are taken in arrival order, never reordered; a fix at
    or before the time of the latest fix of its device is dropped (staleFix, duplicateFix,
    conflictingTimestamp).

    state:
      --state DIR             checkpoint every device's detector in DIR/state.sqlite (after
                              the events of its fixes are written): when the input pauses
                              or ends, and at least every --checkpoint-interval while it
                              flows. Restarted on the same input, the command skips what
                              it has already seen: a fix at or before its device's
                              checkpointed fix time. Killed at any moment and restarted,
                              its outputs together hold exactly the events of an
                              uninterrupted run; the events written since the last
                              checkpoint before a kill may be written again, identical and
                              with the same "id", so a consumer keyed by id sees each event
                              once (a kill mid-write can cut the last line short: drop a
                              last line without its newline). With --store, DIR must be
                              the store. One process at a time: it holds an exclusive lock
                              (flock) on DIR/state.lock while it runs, and a second one
                              exits 75.
      --checkpoint-interval S the longest time between checkpoints while the input flows,
                              seconds (default 1; 0: after every batch). Saving every
                              changed device after every batch costs more than the batch
                              itself with thousands of devices; a longer interval means
                              more input read again after a kill.
      --processing-time       also write "processed_at" (then a repeated line differs there)
    \(checkpointRecordHelp)

    detector: the options of 'geofence replay' (--preset, --hysteresis-min, --max-accuracy,
    --loitering-delay, --no-dwell, ...). --quiet: only errors on standard error.

    SIGTERM and SIGINT stop it as the end of its input does: the fixes read are taken (a
    line cut short is not), their events written, the state checkpointed, the summary
    printed, and the exit status is 0. A stop during a sync is taken when the sync ends
    (within its 60 s deadline).

    exit status: 0 the input ended (bad lines do not change it); 64 usage error; 65 a
    geofence file, the CSV header or a line of the --state-in FILE could not be parsed, or a
    device's checkpoint in the --state DIR is damaged (named on standard error; its fixes are
    held back while the other devices go on; 'geofence repair --store DIR' removes the row);
    66 an input file is missing; 69 the store holds no geofence set; 73 the --state directory
    cannot be created; 74 an input cannot be read, or standard output or the state cannot be
    written; 75 another process is streaming with the same --state DIR (it holds DIR/state.lock).
    """

  /// The bound on each sync while streaming, seconds: a sync holds up the input, so it gets
  /// 60 s rather than `geofence sync`'s 300 (``GeofenceSync/SyncConfiguration/deadlineSeconds``).
  static let syncDeadlineSeconds: Double = 60

  static let spec = CommandLineArguments.Spec(
    valued: ReplayCommand.spec.valued.subtracting(["format", "svg"]).union([
      "store", "state", "server", "key", "sync-interval", "input-format", "state-in",
      "state-out", "checkpoint-interval",
    ]),
    flags: ReplayCommand.spec.flags.union(["processing-time", "exit-on-removal"]))

  /// Counts for the summary.
  struct Counts {
    var lines = 0
    var fixes = 0
    var badLines = 0
    var alreadySeen = 0
    var batches = 0
    var syncs = 0
    var syncFailures = 0
    var restoredDevices = 0
    /// Fixes of devices whose checkpoint in the --state DIR is damaged, not taken.
    var heldBackFixes = 0
  }

  static func run(_ argv: [String]) async -> Int32 {
    let args: CommandLineArguments
    let detector: ReplayCommand.Options
    let records: CheckpointRecordOptions
    let apiKey: String?
    do throws(UsageError) {
      args = try CommandLineArguments(argv, spec: spec)
      if args.flag("help") {
        print(help)
        return ExitStatus.ok
      }
      // The replay options need a TRACK; the stream's files are optional.
      var withTrack = argv
      if args.positionals.isEmpty { withTrack.append("-") }
      detector = try ReplayCommand.Options(
        CommandLineArguments(withTrack, spec: spec), requiresRegions: false)
      if detector.regionFiles.isEmpty == (args.last("store") == nil) {
        throw UsageError("give either --regions FILE ... or --store DIR")
      }
      if let format = args.last("input-format"), !["jsonl", "csv"].contains(format) {
        throw UsageError("--input-format must be jsonl or csv, got '\(format)'")
      }
      // The key: --key, else $GEOFENCE_API_KEY when --server is given.
      let key = args.last("server") == nil ? args.last("key") : try APIKeyOption.value(args)
      if (args.last("server") == nil) != (key == nil) {
        throw UsageError("--server and --key (or $\(APIKeyOption.environmentVariable)) go together")
      }
      apiKey = key
      if args.last("server") != nil && args.last("store") == nil {
        throw UsageError("--server needs --store DIR (the synced set it updates)")
      }
      if let store = args.last("store"), let state = args.last("state"),
        URL(fileURLWithPath: store).standardizedFileURL
          != URL(fileURLWithPath: state).standardizedFileURL
      {
        throw UsageError("with --store DIR, --state must name the same DIR")
      }
      if args.last("sync-interval") != nil && args.last("server") == nil {
        throw UsageError("--sync-interval needs --server URL --key KEY")
      }
      if args.flag("exit-on-removal") && args.last("server") == nil {
        throw UsageError(
          "--exit-on-removal needs --server URL --key KEY (removals come from syncs)")
      }
      records = try CheckpointRecordOptions(args)
      // The checkpoint file may be read and then rewritten (--state-in F --state-out F); the
      // geofences and the fixes may not.
      if let output = records.output,
        let input = inputWrittenOver(
          by: output, inputs: detector.regionFiles.map(\.path) + args.positionals)
      {
        throw UsageError(
          "--state-out \(output) is the input file \(input): the records would replace it")
      }
    } catch {
      printError("geofence stream: \(error.message)\nRun 'geofence stream --help' for usage.")
      return ExitStatus.usage
    }
    let syncInterval: Double
    let checkpointInterval: Double
    let server: URL?
    do throws(UsageError) {
      syncInterval = try args.double("sync-interval", range: 1...86_400) ?? 300
      if args.last("checkpoint-interval") != nil && args.last("state") == nil {
        throw UsageError("--checkpoint-interval needs --state DIR")
      }
      checkpointInterval = try args.double("checkpoint-interval", range: 0...3_600) ?? 1
      if let text = args.last("server") {
        server = try serverURL(text)
      } else {
        server = nil
      }
    } catch {
      printError("geofence stream: \(error.message)")
      return ExitStatus.usage
    }
    if let problem = records.outputProblem {
      printError("geofence stream: \(problem)")
      return ExitStatus.cannotCreate
    }
    let quiet = args.flag("quiet")
    // A closed pipe is an error to report (exit 74), not a signal that kills the process.
    signal(SIGPIPE, SIG_IGN)

    // The engine.
    var fixedSet: GeofenceLoadResult?
    if !detector.regionFiles.isEmpty {
      switch RunCommand.loadRegionFiles(detector.regionFiles, quiet: quiet) {
      case .success(let g): fixedSet = g
      case .failure(let e):
        printError("geofence stream: \(e.message)")
        return e.status
      }
    }
    let stateDirectory = args.last("state")
    let directory = args.last("store") ?? stateDirectory
    if let store = args.last("store"),
      !FileManager.default.fileExists(
        atPath: URL(fileURLWithPath: store).appendingPathComponent("geofences.sqlite").path)
    {
      printError("geofence stream: no geofence set in \(store); run 'geofence sync' first")
      return ExitStatus.unavailable
    }
    // Made here rather than by the engine, so that the message names the option (the
    // engine's would speak of a store, which is --store's word).
    if args.last("store") == nil, let stateDirectory,
      let reason = GeofenceEngine.makeDirectory(stateDirectory)
    {
      printError("geofence stream: --state \(reason)")
      return ExitStatus.cannotCreate
    }
    let engine: GeofenceEngine
    do {
      engine = try GeofenceEngine(
        configuration: .init(
          transitions: detector.configuration,
          sync: server.map {
            var sync = SyncConfiguration(baseURL: $0, apiKey: apiKey ?? "")
            sync.deadlineSeconds = syncDeadlineSeconds
            return sync
          },
          emitsExitForRemovedGeofences: args.flag("exit-on-removal"),
          checkpoints: stateDirectory == nil ? .none : .manual),
        storage: directory.map { .directory($0) } ?? .inMemory, loaded: consume fixedSet)
      // The engine holds the set now; a long-running stream should not keep the read's heap.
      releaseFreedMemory()
    } catch {
      if let status = storeInUseStatus(error, command: "stream") { return status }
      if let directory, let status = damagedStoreStatus(directory, command: "stream") {
        return status
      }
      printError("geofence stream: \(error)")
      return ExitStatus.ioError
    }
    // One process at a time checkpoints into a --state DIR: the engine's state.lock.
    if let stateDirectory {
      do { try engine.claimState() } catch {
        if case .storeInUse = error {
          let path = URL(fileURLWithPath: stateDirectory)
            .appendingPathComponent(DirectoryLock.stateFileName).path
          printError(
            "geofence stream: --state \(stateDirectory) is in use by another process (it holds "
              + "\(path)); one process at a time may checkpoint into a state directory")
          return ExitStatus.temporaryFailure
        }
        printError("geofence stream: --state \(stateDirectory): \(error)")
        return ExitStatus.ioError
      }
    }
    if let store = args.last("store") {
      guard (try? engine.setState())?.version != nil else {
        printError("geofence stream: no synced geofence set in \(store); run 'geofence sync' first")
        return ExitStatus.unavailable
      }
      if engine.geofenceCount == 0, !quiet {
        printError("warning: the stored set holds no geofence")
      }
    }

    var stream = Stream(
      engine: engine,
      encoder: GeofenceEventEncoder(
        format: .jsonl, includesProcessingTime: args.flag("processing-time")),
      inputFormat: args.last("input-format"), quiet: quiet,
      checkpoints: stateDirectory != nil)
    // A failed sync is tried again after the interval, or after 60 s when the interval is
    // longer (the scheduler's default retry).
    stream.scheduler = server.map { _ in
      SyncScheduler(intervalSeconds: syncInterval, retryIntervalSeconds: min(60, syncInterval))
    }
    stream.checkpointIntervalNanoseconds = UInt64(checkpointInterval * 1e9)
    // SIGTERM and SIGINT end the stream as the end of its input would (a service's stop);
    // installed before the first sync, so a stop during it is taken once it ends (a sync
    // ends within its 60 s deadline).
    StopSignal.install()
    await stream.syncIfDue()
    if !stream.flushOutput() { return ExitStatus.ioError }
    var status = ExitStatus.ok
    if let path = records.input, path != "-" {
      // A record that cannot be restored would start its device afresh: its visits would be
      // entered again, with new ids. Nothing is streamed then.
      status = restoreRecords(from: path, into: &stream)
      if status != ExitStatus.ok {
        if status == ExitStatus.dataError {
          printError(
            "geofence stream: --state-in \(path) holds records that cannot be restored; nothing streamed"
          )
        }
        return status
      }
    }
    stream.acceptsRecords = records.inputIsStandardInput
    let inputs = args.positionals.isEmpty ? ["-"] : args.positionals
    // Fixes in and events out usually pass through pipes: wider pipes mean fewer reads,
    // writes and wake-ups a fix (a 64 KiB pipe holds about 600 fix lines).
    if inputs.contains("-") { Stream.widenPipe(0) }
    Stream.widenPipe(1)
    for input in inputs {
      let fd: Int32
      if input == "-" {
        fd = 0
      } else {
        if let problem = inputProblem(input) {
          printError("geofence stream: \(input): \(problem)")
          status = ExitStatus.noInput
          continue
        }
        fd = open(input, O_RDONLY)
        guard fd >= 0 else {
          printError("geofence stream: \(input): cannot open")
          status = ExitStatus.noInput
          continue
        }
      }
      let name = input == "-" ? "<stdin>" : input
      let outcome = await stream.read(fd: fd, name: name)
      if fd != 0 { close(fd) }
      if outcome != ExitStatus.ok {
        status = outcome
        if outcome == ExitStatus.ioError { break }
      }
      if stream.stopped {
        if !quiet { printError("geofence stream: stopped by a signal; state saved") }
        break
      }
    }
    if let path = records.output, status != ExitStatus.ioError {
      let s = writeRecords(of: &stream, to: path)
      if s != ExitStatus.ok { status = s }
    }
    // Syncs while streaming changed the stored set: the next process opens a current
    // snapshot instead of building the set from the rows (seconds, and more memory, at 1M).
    if args.last("store") != nil, stream.counts.syncs > stream.counts.syncFailures,
      !engine.snapshotIsCurrent()
    {
      do throws(EngineError) { _ = try engine.writeSnapshot() } catch {
        printError("warning: the indexed snapshot was not written: \(error)")
      }
    }
    if !stream.damagedDevices.isEmpty, let stateDirectory {
      printError(
        "geofence stream: run 'geofence repair --store \(stateDirectory)' to remove the "
          + "damaged checkpoint(s); those devices then start afresh")
      if status == ExitStatus.ok { status = ExitStatus.dataError }
    }
    if !quiet {
      let c = stream.counts
      let r = engine.report
      var line =
        "stream: \(c.lines) lines, \(c.fixes) fixes, \(c.badLines) bad lines skipped, "
        + "\(c.alreadySeen) already seen, \(c.batches) batches"
      if records.input != nil { line += ", \(c.restoredDevices) devices restored" }
      if !stream.damagedDevices.isEmpty {
        line +=
          ", \(stream.damagedDevices.count) devices with a damaged checkpoint "
          + "(\(c.heldBackFixes) fixes held back)"
      }
      if stream.scheduler != nil { line += ", syncs \(c.syncs) (failed \(c.syncFailures))" }
      printError(line)
      let drops = r.dropCounts.nonZero.map { "\($0.reason.rawValue) \($0.count)" }
      printError(
        "devices: \(engine.deviceIDs.count) in memory; dropped: "
          + (drops.isEmpty ? "none" : drops.joined(separator: ", ")))
      printError("events: \(r.eventCounts)")
    }
    return status
  }

  /// The reading loop's state.
  struct Stream {
    let engine: GeofenceEngine
    var encoder: GeofenceEventEncoder
    let inputFormat: String?
    let quiet: Bool
    let checkpoints: Bool
    /// Lines that are not fixes are tried as checkpoint records (`--state-in -`).
    var acceptsRecords = false
    var counts = Counts()
    var output: [UInt8] = []
    /// The current batch: its fixes in input order, then (see ``processBatch()``) the order
    /// they are taken in and each fix's events.
    var pending: [StreamFix] = []
    /// Each device's group in the batch, by the bytes of its id (``DeviceKey``), as the
    /// engine keys devices.
    var groupOfDevice: [DeviceKey: Int32] = [:]
    var groupOfFix: [Int32] = []
    var groupNext: [Int32] = []
    var order: [Int32] = []
    /// Per fix of the batch, its events' bytes in ``eventBytes``.
    var eventRanges: [Range<Int>] = []
    var eventBytes: [UInt8] = []
    /// The run of one device's fixes handed to the engine, their places in the batch, and
    /// where each one's events end in ``eventBytes``.
    var runFixes: [LocationFix] = []
    var runPositions: [Int32] = []
    var eventEnds: [Int] = []
    /// Each device's checkpointed fix time when this process first saw it.
    var restored: [DeviceKey: Double] = [:]
    /// With `--state`: the longest time between checkpoints while the input flows
    /// (`--checkpoint-interval`, default 1 s; see ``endBatch(paused:ended:)``), and when the
    /// last one was taken (`DispatchTime` nanoseconds).
    var checkpointIntervalNanoseconds: UInt64 = 1_000_000_000
    var lastCheckpoint: UInt64 = 0
    /// Whether the input was cut short by SIGTERM or SIGINT (``StopSignal``).
    var stopped = false
    /// After a pause of the input, a checkpoint is taken once this long (100 ms) has passed
    /// since the last one (see ``endBatch(paused:ended:)``).
    static let pauseCheckpointNanoseconds: UInt64 = 100_000_000
    /// Devices whose row in `state.sqlite` cannot be restored: reported once, their fixes
    /// held back (neither taken nor started afresh), the row left for `geofence repair`.
    var damagedDevices: Set<DeviceKey> = []
    var csv: CSVLineReader?
    var format: String?

    init(
      engine: GeofenceEngine, encoder: GeofenceEventEncoder, inputFormat: String?, quiet: Bool,
      checkpoints: Bool
    ) {
      self.engine = engine
      self.encoder = encoder
      self.inputFormat = inputFormat
      self.format = inputFormat
      self.quiet = quiet
      self.checkpoints = checkpoints
      output.reserveCapacity(1 << 16)
    }

    /// When to sync (with `--server`).
    var scheduler: SyncScheduler?

    /// Syncs when the scheduler says a sync is due.
    mutating func syncIfDue() async {
      guard var s = scheduler, s.due(at: Date().timeIntervalSince1970) != nil else { return }
      let ok = await sync()
      s.recordAttempt(at: Date().timeIntervalSince1970, succeeded: ok)
      scheduler = s
    }

    /// Applies the server's changes; removal EXITs go out like any event.
    mutating func sync() async -> Bool {
      do {
        let report = try await engine.sync()
        for e in report.events { encoder.encode(e, into: &output) }
        counts.syncs += 1
        return true
      } catch {
        counts.syncs += 1
        counts.syncFailures += 1
        let reason: String
        if case .sync(let e) = error { reason = e.description } else { reason = "\(error)" }
        printError("warning: sync failed: \(reason); streaming on the stored set")
        return false
      }
    }

    /// Bytes asked of one read; a batch is one or more reads. A pipe gives at most what it
    /// holds (see ``pipeBytes``).
    static let readBytes = 1 << 18

    /// A batch ends once it holds this many input bytes: 4 MiB, about 38,000 fixes of about
    /// 110 bytes. The larger the batch, the longer each device's run of consecutive fixes in
    /// it (``processBatch()``), so its state and the index cells around it stay in the cache.
    static let maxBatchBytes = 1 << 22

    /// The event bytes a batch aims to stay under: 8 MiB (held twice at the end of a batch).
    /// A batch's events are held until the batch ends (to be written in input order), and a
    /// fix can have many (one inside eight overlapping geofences that jumps elsewhere has
    /// sixteen, about 6 KiB), so the next batch's input bound is this over the event bytes
    /// per input byte of the batch before, within [``minBatchBytes``, ``maxBatchBytes``].
    static let targetBatchEventBytes = 1 << 23

    /// The smallest input bound a batch gets: 64 KiB, what one read of a pipe returns.
    static let minBatchBytes = 1 << 16

    /// The first batch's input bound: 256 KiB.
    static let firstBatchBytes = 1 << 18

    /// The input bound for the batch after one of `inputBytes` that wrote `eventBytes`
    /// (see ``targetBatchEventBytes``).
    static func nextBatchBytes(inputBytes: Int, eventBytes: Int) -> Int {
      guard eventBytes > 0, inputBytes > 0 else { return maxBatchBytes }
      let perInputByte = Double(eventBytes) / Double(inputBytes)
      let bound = Double(targetBatchEventBytes) / perInputByte
      return bound >= Double(maxBatchBytes) ? maxBatchBytes : max(minBatchBytes, Int(bound))
    }

    /// A batch ends at most this long after its first byte was read, nanoseconds (50 ms), so
    /// that a consumer sees events within 100 ms of their fix even when the input never
    /// pauses.
    static let maxBatchNanoseconds: UInt64 = 50_000_000

    /// A batch also ends when no input arrives within this long, milliseconds: a live
    /// producer that pauses has its events written at once, not when the batch fills.
    static let idleMilliseconds: Int32 = 1

    /// The pipe size asked for when the input is a pipe (`F_SETPIPE_SZ`, Linux): 1 MiB, the
    /// default `/proc/sys/fs/pipe-max-size`, so that a producer can run ahead of a batch.
    /// Refused sizes are ignored.
    static let pipeBytes: Int32 = 1 << 20

    /// Whether `fd` has input (or its end) ready within `milliseconds` (`poll(2)`). An error
    /// counts as ready: the next `read` reports it.
    /// A stop asked for by SIGTERM or SIGINT (``StopSignal``) counts as ready too: the caller
    /// checks ``StopSignal/requested`` before reading.
    /// Grows the pipe `fd` refers to, if it is one, to 1 MiB (`F_SETPIPE_SZ`, fcntl(2): the
    /// most an unprivileged process may ask for by default, `/proc/sys/fs/pipe-max-size`).
    /// Anything else, or a refusal, leaves it as it is.
    static func widenPipe(_ fd: Int32) {
      var info = stat()
      guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
      // F_SETPIPE_SZ = F_LINUX_SPECIFIC_BASE (1024) + 7 (<linux/fcntl.h>).
      _ = fcntl(fd, 1031, Int32(1 << 20))
    }

    static func inputReady(_ fd: Int32, milliseconds: Int32) -> Bool {
      var p = [
        pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
        pollfd(fd: StopSignal.readEnd, events: Int16(POLLIN), revents: 0),
      ]
      while true {
        let r = poll(&p, StopSignal.readEnd >= 0 ? 2 : 1, milliseconds)
        if r < 0 && errno == EINTR { continue }
        return r != 0
      }
    }

    /// Reads `fd` to its end, batch by batch: a batch is what arrives until the input pauses
    /// (``idleMilliseconds``), ``maxBatchBytes`` (or less, see
    /// ``nextBatchBytes(inputBytes:eventBytes:)``) are read or ``maxBatchNanoseconds`` pass.
    mutating func read(fd: Int32, name: String) async -> Int32 {
      var buffer = [UInt8](repeating: 0, count: Self.readBytes)
      var carry: [UInt8] = []
      // Whether the line in progress has passed `maxLineBytes` (its bytes are dropped).
      var overlong = false
      var lineNumber = 0
      csv = nil
      format = inputFormat
      #if os(Linux)
        // F_SETPIPE_SZ (1031, <linux/fcntl.h>; not exported to Swift): fails harmlessly on a
        // file or a terminal.
        _ = fcntl(fd, 1031, Self.pipeBytes)
      #endif
      var batchBytes = 0
      // The first batch's bound, before any event bytes per input byte are known.
      var batchLimit = Self.firstBatchBytes
      var batchStart: UInt64 = 0
      while true {
        // Between batches, a sync that falls due while the input is idle runs then: the next
        // fix is checked against a set at most --sync-interval old, not one that waited for
        // input to arrive.
        if batchBytes == 0, let s = scheduler {
          let wait =
            s.nextDueTime(after: Date().timeIntervalSince1970)
            - Date().timeIntervalSince1970
          let milliseconds = Int32((max(0, min(wait, 60)) * 1000).rounded(.up))
          if !Self.inputReady(fd, milliseconds: milliseconds) {
            await syncIfDue()
            if !flushOutput() { return ExitStatus.ioError }
            continue
          }
        }
        // Wait for input or a stop; a stop ends the input here, as its end would.
        _ = Self.inputReady(fd, milliseconds: -1)
        if StopSignal.requested {
          stopped = true
          break
        }
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
          if errno == EINTR { continue }
          printError("geofence stream: \(name): read failed: \(String(cString: strerror(errno)))")
          return ExitStatus.ioError
        }
        if n == 0 { break }
        if batchBytes == 0 { batchStart = DispatchTime.now().uptimeNanoseconds }
        batchBytes += n
        var start = 0
        let status: Int32 = buffer.withUnsafeBufferPointer { all in
          let chunk = UnsafeBufferPointer(rebasing: all[0..<n])
          guard let base = chunk.baseAddress else { return ExitStatus.ok }
          var i = 0
          // Line ends found by memchr (the C library's vectorised byte search).
          while i < chunk.count, let hit = memchr(base + i, 10, chunk.count - i) {
            i = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
            lineNumber += 1
            let s: Int32
            if overlong || carry.count + (i - start) > Self.maxLineBytes {
              overlong = false
              carry.removeAll()
              s = overlongLine(number: lineNumber, name: name)
            } else if carry.isEmpty {
              s = line(
                UnsafeBufferPointer(rebasing: chunk[start..<i]), number: lineNumber, name: name)
            } else {
              carry.append(contentsOf: chunk[start..<i])
              s = carry.withUnsafeBufferPointer { line($0, number: lineNumber, name: name) }
              carry.removeAll(keepingCapacity: true)
            }
            if s != ExitStatus.ok {
              // The fixes before the line that stops the input are still taken.
              let taken = endBatch(ended: true)
              return taken == ExitStatus.ok ? s : taken
            }
            start = i + 1
            i += 1
          }
          // The start of a line that goes on in the next read; past the bound its bytes are
          // dropped up to its end.
          if !overlong {
            if carry.count + (chunk.count - start) > Self.maxLineBytes {
              overlong = true
              carry.removeAll()
            } else {
              carry.append(contentsOf: chunk[start..<chunk.count])
            }
          }
          return ExitStatus.ok
        }
        if status != ExitStatus.ok { return status }
        let full =
          batchBytes >= batchLimit
          || DispatchTime.now().uptimeNanoseconds &- batchStart >= Self.maxBatchNanoseconds
        // A pause of the input ends the batch (and may checkpoint: see endBatch).
        let paused = !full && !Self.inputReady(fd, milliseconds: Self.idleMilliseconds)
        if full || paused {
          // A sync due now comes first: the batch's fixes are checked against the newest set.
          await syncIfDue()
          let s = endBatch(paused: paused)
          if s != ExitStatus.ok { return s }
          batchLimit = Self.nextBatchBytes(inputBytes: batchBytes, eventBytes: eventBytes.count)
          batchBytes = 0
        }
      }
      // Stopped: a line cut short is not taken (it may end otherwise); a restart reads it.
      if stopped { return endBatch(ended: true) }
      if overlong {
        lineNumber += 1
        _ = overlongLine(number: lineNumber, name: name)
      } else if !carry.isEmpty {
        lineNumber += 1
        let s = carry.withUnsafeBufferPointer { line($0, number: lineNumber, name: name) }
        if s != ExitStatus.ok {
          let taken = endBatch(ended: true)
          return taken == ExitStatus.ok ? s : taken
        }
      }
      return endBatch(ended: true)
    }

    /// With `--state`: how many devices stay in memory between batches (at most; the least
    /// recently used clean ones beyond are dropped and restored from the state when they
    /// come back).
    static let devicesInMemory = 10_000

    /// Takes the batch's fixes, writes their events, then (with `--state`) checkpoints, after
    /// the events (so that a kill in between repeats events instead of losing them): when the
    /// input `ended`, when ``checkpointIntervalNanoseconds`` have passed since the last
    /// checkpoint, when the input `paused` and ``pauseCheckpointNanoseconds`` have passed (a
    /// live producer that pauses has its devices saved soon, at most ten times a second), or
    /// when more than ``devicesInMemory`` devices are held (only saved devices can be dropped
    /// from memory). Saving every changed device after every batch of a steady input cost
    /// more than the batch itself with many devices; a restart after a kill re-reads at most
    /// an interval's input instead, whose events come out again with the same ids.
    mutating func endBatch(paused: Bool = false, ended: Bool = false) -> Int32 {
      counts.batches += 1
      let taken = processBatch()
      if taken != ExitStatus.ok { return taken }
      if !flushOutput() { return ExitStatus.ioError }
      let now = DispatchTime.now().uptimeNanoseconds
      let since = now &- lastCheckpoint
      if checkpoints,
        ended || since >= checkpointIntervalNanoseconds
          || (paused
            && since >= min(checkpointIntervalNanoseconds, Self.pauseCheckpointNanoseconds))
          || engine.inMemoryDeviceCount > Self.devicesInMemory
      {
        lastCheckpoint = now
        do {
          try engine.checkpoint()
          // Least recently used first, with slack: each eviction drops a thousand or more.
          if engine.inMemoryDeviceCount > Self.devicesInMemory {
            engine.evictCleanDevices(keepingAtMost: Self.devicesInMemory * 9 / 10)
          }
        } catch {
          printError("geofence stream: \(error)")
          return ExitStatus.ioError
        }
      }
      return ExitStatus.ok
    }

    mutating func flushOutput() -> Bool {
      guard !output.isEmpty else { return true }
      var offset = 0
      while offset < output.count {
        let written = output.withUnsafeBytes { bytes -> Int in
          guard let base = bytes.baseAddress else { return 0 }
          return Glibc.write(1, base + offset, bytes.count - offset)
        }
        if written < 0 {
          if errno == EINTR { continue }
          printError(
            "geofence stream: cannot write to standard output: \(String(cString: strerror(errno)))")
          return false
        }
        offset += written
      }
      output.removeAll(keepingCapacity: true)
      return true
    }

    /// The longest input line taken, bytes (1 MiB; a fix is about 100 bytes). A longer line
    /// is reported and skipped without being held: one producer that never ends a line
    /// cannot exhaust memory.
    static let maxLineBytes = 1 << 20

    /// Reports line `number`, longer than ``maxLineBytes``, as skipped.
    mutating func overlongLine(number: Int, name: String) -> Int32 {
      counts.lines += 1
      return bad("\(name):\(number): longer than \(Self.maxLineBytes) bytes; line skipped")
    }

    /// One input line.
    mutating func line(_ bytes: UnsafeBufferPointer<UInt8>, number: Int, name: String) -> Int32 {
      var bytes = bytes
      if bytes.last == 13 { bytes = UnsafeBufferPointer(rebasing: bytes[0..<(bytes.count - 1)]) }
      // A UTF-8 byte-order mark before the first line.
      if number == 1, bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
        bytes = UnsafeBufferPointer(rebasing: bytes[3...])
      }
      if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return ExitStatus.ok }
      counts.lines += 1
      if format == nil {
        let first = bytes.first {
          $0 != 0x20 && $0 != 0x09 && $0 != 0x0D && $0 != 0xEF && $0 != 0xBB && $0 != 0xBF
        }
        format = first == UInt8(ascii: "{") ? "jsonl" : "csv"
        if format == "csv" && acceptsRecords {
          // Checkpoint records are JSON Lines among JSON Lines fixes: in CSV input none could
          // be told from a row, and every device would start afresh without a word.
          printError(
            "geofence stream: \(name):\(number): --state-in - needs JSON Lines input, and "
              + "this input is CSV; give the records in a file (--state-in FILE)")
          return ExitStatus.usage
        }
      }
      let parsed: StreamFix
      if format == "jsonl" {
        switch FixLineParser.parse(bytes) {
        case .success(let f): parsed = f
        case .failure(let why):
          if acceptsRecords {
            // The fixes before the record are taken first, so that a record after its
            // device's first fix is refused as it would be without batching.
            let taken = processBatch()
            if taken != ExitStatus.ok { return taken }
            return restoreRecord(bytes, number: number, name: name, fixProblem: "\(why)")
          }
          return bad("\(name):\(number): \(why); line skipped")
        }
      } else {
        guard var reader = csv else {
          let text = String(decoding: bytes, as: UTF8.self)
          do {
            csv = try CSVLineReader(header: text, fileName: name, line: number)
            if csv?.hasTime == false {
              printError("geofence stream: \(name):\(number): the header names no time column")
              return ExitStatus.dataError
            }
          } catch {
            printError("geofence stream: \(error)")
            return ExitStatus.dataError
          }
          return ExitStatus.ok
        }
        // As for a JSON Lines fix: bytes that are not UTF-8 are refused, not replaced.
        guard let text = String(validating: bytes, as: UTF8.self) else {
          return bad("\(name):\(number): not valid UTF-8; line skipped")
        }
        let result = reader.read(text, line: number)
        csv = reader
        if !quiet {
          for warning in reader.warnings { printInputProblem("warning: ", "\(warning)") }
        }
        switch result {
        case nil: return ExitStatus.ok
        case .failure(let issue)?: return bad("\(issue)")
        case .success(var fix)?:
          // As a JSON Lines fix: a stream's events carry no fix_index (nor does the id).
          let device = fix.deviceID ?? "-"
          fix.deviceID = nil
          fix.sourceIndex = -1
          parsed = StreamFix(deviceID: device, fix: fix)
        }
      }
      counts.fixes += 1
      pending.append(parsed)
      return ExitStatus.ok
    }

    /// Takes the batch's fixes device by device (each device's in input order: the engine
    /// sees the same sequence per device as in input order, and devices do not affect each
    /// other), so that one device's state and the index cells around it are reused while
    /// they are in the cache, each device's fixes as one run
    /// (``GeofenceEngine/ingest(_:device:encoder:into:eventEnds:)``); then writes the events
    /// in input order, so the output is the same bytes as taking the fixes one by one.
    /// - Complexity: O(n) for n fixes: one device-id hash each for the grouping, and one hash
    ///   per run in the engine.
    mutating func processBatch() -> Int32 {
      let n = pending.count
      defer { pending.removeAll(keepingCapacity: true) }
      guard n > 0 else { return ExitStatus.ok }
      // Stable counting sort of the fixes by device, numbered by first appearance.
      groupOfDevice.removeAll(keepingCapacity: true)
      groupOfFix.removeAll(keepingCapacity: true)
      groupNext.removeAll(keepingCapacity: true)
      for k in 0..<n {
        let device = DeviceKey(pending[k].deviceID)
        let g: Int32
        if let known = groupOfDevice[device] {
          g = known
        } else {
          g = Int32(groupNext.count)
          groupOfDevice[device] = g
          groupNext.append(0)
        }
        groupOfFix.append(g)
        groupNext[Int(g)] += 1
      }
      var sum: Int32 = 0
      for g in groupNext.indices {
        let size = groupNext[g]
        groupNext[g] = sum
        sum += size
      }
      order.removeAll(keepingCapacity: true)
      order.append(contentsOf: repeatElement(0, count: n))
      for k in 0..<n {
        let g = Int(groupOfFix[k])
        order[Int(groupNext[g])] = Int32(k)
        groupNext[g] += 1
      }
      eventBytes.removeAll(keepingCapacity: true)
      eventRanges.removeAll(keepingCapacity: true)
      eventRanges.append(contentsOf: repeatElement(0..<0, count: n))
      // Each device's fixes go to the engine as one run (one lookup of the device).
      var fixes: [LocationFix] = []
      swap(&fixes, &runFixes)
      defer { swap(&fixes, &runFixes) }
      var p = 0
      while p < n {
        let device = pending[Int(order[p])].deviceID
        let known = checkpoints ? restoredTime(of: device) : -.infinity
        fixes.removeAll(keepingCapacity: true)
        runPositions.removeAll(keepingCapacity: true)
        let end = Int(groupNext[Int(groupOfFix[Int(order[p])])])
        while p < end {
          let k = Int(order[p])
          p += 1
          if checkpoints, let t = pending[k].fix.time, t <= known {
            counts.alreadySeen += 1
            continue
          }
          fixes.append(pending[k].fix)
          runPositions.append(Int32(k))
        }
        guard !fixes.isEmpty else { continue }
        if damagedDevices.contains(DeviceKey(device)) {
          counts.heldBackFixes += fixes.count
          continue
        }
        eventEnds.removeAll(keepingCapacity: true)
        var from = eventBytes.count
        do {
          try fixes.withUnsafeBufferPointer { (run) throws(EngineError) in
            try engine.ingest(
              run, device: device, encoder: &encoder, into: &eventBytes, eventEnds: &eventEnds)
          }
        } catch {
          if case .damagedCheckpoint = error {
            // Starting the device afresh would lose its visits (a pending EXIT) and break
            // the restart promise; the other devices go on.
            damagedDevices.insert(DeviceKey(device))
            counts.heldBackFixes += fixes.count
            printError(
              "geofence stream: \(error); its fixes are held back and its row is kept")
            continue
          }
          printError("geofence stream: \(error)")
          return ExitStatus.ioError
        }
        for j in eventEnds.indices {
          eventRanges[Int(runPositions[j])] = from..<eventEnds[j]
          from = eventEnds[j]
        }
      }
      eventBytes.withUnsafeBufferPointer { all in
        for range in eventRanges where !range.isEmpty {
          output.append(contentsOf: UnsafeBufferPointer(rebasing: all[range]))
        }
      }
      return ExitStatus.ok
    }

    /// With `--state`: the fix time `device` was checkpointed at when this process first saw
    /// it (its fixes at or before it were taken by an earlier run), or −∞.
    mutating func restoredTime(of device: String) -> Double {
      if let t = restored[DeviceKey(device)] { return t }
      let known = (try? engine.deviceState(device))??.lastFixTime ?? -.infinity
      restored[DeviceKey(device)] = known
      return known
    }

    mutating func bad(_ message: String) -> Int32 {
      counts.badLines += 1
      if !quiet { printInputProblem("rejected: ", message) }
      return ExitStatus.ok
    }
  }
}
