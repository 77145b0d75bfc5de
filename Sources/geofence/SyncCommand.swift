import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceSync
import Networking
import NumberText

/// `geofence sync`: fetch the account's geofences into a local store.
enum SyncCommand {
  static let help = """
    usage: geofence sync --server URL --key KEY --store DIR [--full]
                         [--near LAT,LON --radius-m R] [options]

    Brings the geofence set stored in DIR (DIR/geofences.sqlite, created when missing) up to
    date with the server (docs/sync-protocol.md): changes since the stored version when there
    is one, else a paged full listing, conditional on the stored version (304 = unchanged).
    Prints what changed. A failed sync keeps the stored set as it was and marks it stale.

      --server URL        base URL of the server, e.g. http://127.0.0.1:8765
      --key KEY           API key (selects the account); else $GEOFENCE_API_KEY, which other
                          users cannot read in ps. A key that is empty, blank, holds a CR, LF
                          or other control character, or starts or ends with a blank is a
                          usage error
      --store DIR         folder of the local store
      --full              list everything, unconditionally (no If-None-Match), instead of
                          asking for changes: the stored set is replaced by the server's
      --near LAT,LON      only geofences near this point (degrees) ...
      --radius-m R        ... within R metres of it (plus their own radius), R in [0, 20037509]
      --page-size N       geofences per page, 1-10000 [1000]
      --timeout SECONDS   the total deadline of one request, body included [30]
      --attempts N        requests per operation including retries, 1-20 [4]
      --deadline SECONDS  the bound on the whole sync: every page, retry and wait [300]
      --live              also time loading the stored set into the engine and applying the
                          change to its live set (what a running engine does)
      --quiet             only errors

    The command ends within --deadline seconds (plus the time to write the store), however
    the server behaves: a listing whose cursor loops, more than 10000 pages or 2000000
    geofences, or a page with more geofences than --page-size is refused (exit 65), and each
    answer is capped at 64 MiB, decoded. Redirects to another origin lose the key.

    exit status: 0 synced (or unchanged); 64 usage error; 65 the server's answer was invalid
    or broke the protocol; 69 the server was unreachable, refused the key, kept failing, or
    the deadline passed; 74 the local store could not be opened or written; 75 the server
    asked to retry later than a sync waits (a Retry-After beyond the limit). Rejected
    definitions are listed on standard error and do not change the exit status.
    """

  static let spec = CommandLineArguments.Spec(
    valued: [
      "server", "key", "store", "near", "radius-m", "page-size", "timeout", "attempts", "deadline",
    ],
    flags: ["help", "full", "quiet", "live"])

  /// EX_UNAVAILABLE (sysexits.h).
  static let unavailable: Int32 = 69
  /// EX_IOERR (sysexits.h).
  static let ioError: Int32 = 74

  struct Options: Sendable {
    var configuration: SyncConfiguration
    var storePath: String
    /// The store folder (holding `geofences.sqlite`).
    var directory: String { (storePath as NSString).deletingLastPathComponent }
    var full: Bool
    var quiet: Bool
    var live: Bool
  }

  static func run(_ args: [String]) async -> Int32 {
    let options: Options
    do {
      let parsed = try CommandLineArguments(args, spec: spec)
      if parsed.flag("help") {
        print(help)
        return ExitStatus.ok
      }
      options = try parse(parsed)
    } catch {
      printError("geofence sync: \(error.message)\n\n\(help)")
      return ExitStatus.usage
    }
    let folder = (options.storePath as NSString).deletingLastPathComponent
    if let problem = GeofenceEngine.makeDirectory(folder) {
      printError("geofence sync: the store folder \(problem)")
      return ioError
    }
    return await sync(options)
  }

  static func parse(_ parsed: CommandLineArguments) throws(UsageError) -> Options {
    if let extra = parsed.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
    guard let server = parsed.last("server") else { throw UsageError("--server is required") }
    let url = try serverURL(server)
    guard let key = try APIKeyOption.value(parsed) else {
      throw UsageError("--key is required (or $\(APIKeyOption.environmentVariable))")
    }
    guard let dir = parsed.last("store"), !dir.isEmpty else {
      throw UsageError("--store is required")
    }
    var configuration = SyncConfiguration(baseURL: url, apiKey: key)
    configuration.pageSize = try parsed.int("page-size", range: 1...10_000) ?? 1000
    configuration.requestTimeoutSeconds = try parsed.double("timeout", range: 1...3600) ?? 30
    configuration.deadlineSeconds = try parsed.double("deadline", range: 1...86_400) ?? 300
    if let attempts = try parsed.int("attempts", range: 1...20) {
      configuration.retry.maximumAttempts = attempts
    }
    configuration.reportsChangedGeofences = parsed.flag("live")
    let radius = try parsed.double("radius-m", range: 0...20_037_509)
    switch (parsed.last("near"), radius) {
    case (nil, nil): break
    case (let near?, let radius?):
      let parts = near.split(separator: ",", omittingEmptySubsequences: false)
      guard parts.count == 2, let lat = NumberText.double(parts[0]),
        let lon = NumberText.double(parts[1]),
        let center = try? Coordinate(latitude: lat, longitude: lon)
      else {
        throw UsageError(
          "--near needs LAT,LON in degrees (latitude in [-90, 90], longitude in [-180, 180]), got '\(near)'"
        )
      }
      configuration.area = SyncArea(center: center, radiusMeters: radius)
    default:
      throw UsageError("--near and --radius-m go together")
    }
    let storePath = URL(fileURLWithPath: dir).appendingPathComponent("geofences.sqlite").path
    return Options(
      configuration: configuration, storePath: storePath, full: parsed.flag("full"),
      quiet: parsed.flag("quiet"), live: parsed.flag("live"))
  }

  static func seconds(_ a: DispatchTime, _ b: DispatchTime) -> String {
    String(format: "%.3f", Double(b.uptimeNanoseconds - a.uptimeNanoseconds) / 1e9)
  }

  static func sync(_ options: Options) async -> Int32 {
    let start = DispatchTime.now()
    let engine: GeofenceEngine
    do {
      engine = try GeofenceEngine(
        configuration: .init(sync: options.configuration, checkpoints: .manual),
        storage: .directory(options.directory))
    } catch {
      if let status = storeInUseStatus(error, command: "sync") { return status }
      if let status = damagedStoreStatus(options.directory, command: "sync") { return status }
      printError("geofence sync: cannot open the store \(options.storePath): \(error)")
      return ioError
    }
    if options.live {
      let how: String
      if case .snapshot = engine.setSource {
        how = "opened the indexed snapshot of"
      } else {
        how = "loaded and indexed"
      }
      print(
        "live: \(how) \(engine.geofenceCount) geofence(s) in "
          + "\(seconds(start, DispatchTime.now())) s")
    }
    do throws(EngineError) {
      let syncStart = DispatchTime.now()
      let applied = try await engine.sync(full: options.full)
      let report = applied.sync
      if !options.quiet { print("sync time: \(seconds(syncStart, DispatchTime.now())) s") }
      if options.live {
        print(
          "live: applied the change (index rebuilt: \(applied.rebuiltIndex ? "yes" : "no"), "
            + "\(engine.geofenceCount) geofence(s) monitored)")
      }
      // Every text below that came from the server is shown through ServerText.
      func shown(_ text: String) -> String {
        ServerText.displayable(text, redacting: [options.configuration.apiKey])
      }
      for rejection in report.rejections { printError("rejected: \(shown("\(rejection)"))") }
      for id in report.conflictingIDs {
        printError(
          "conflicting copies of id \"\(shown(id))\": kept the stored definition, if any")
      }
      if !options.quiet {
        var kind: String
        switch report.kind {
        case .full:
          kind =
            "full listing (\(report.fullListingReason ?? "requested")), \(report.pageCount) page(s)"
        case .incremental: kind = "changes since \(shown(report.previousVersion ?? "?"))"
        case .notModified: kind = "not modified (304)"
        }
        print("sync: \(kind)")
        print(
          "version: \(shown(report.version)) (was \(shown(report.previousVersion ?? "none")))")
        let c = report.diff.counts
        print(
          "added: \(c.added)  removed: \(c.removed)  geometry changed: \(c.geometryChanged)  "
            + "metadata changed: \(c.metadataChanged)")
        print("geofences: \(report.geofenceCount)")
        print(
          "rejected: \(report.rejections.count)  conflicting ids: \(report.conflictingIDs.count)")
        print("requests: \(report.requestCount)  retries: \(report.retryWaits.count)")
        print("stale: no")
      }
      if !engine.snapshotIsCurrent() {
        // The set changed: the next engine on this store opens it indexed.
        do throws(EngineError) {
          let written = try engine.writeSnapshot()
          if !options.quiet { print("snapshot: \(written.path) (\(written.bytes) bytes)") }
        } catch {
          printError("geofence sync: the indexed snapshot was not written: \(error)")
        }
      }
      return ExitStatus.ok
    } catch {
      let state = try? engine.setState()
      let version = ServerText.displayable(state?.version ?? "none")
      let reason: String
      if case .sync(let e) = error { reason = e.description } else { reason = error.description }
      printError("geofence sync: failed: \(reason)")
      printError(
        "kept \(state?.geofenceCount ?? 0) geofence(s) at version \(version), "
          + "marked stale")
      if !options.quiet {
        print("version: \(version)")
        print("geofences: \(state?.geofenceCount ?? 0)")
        print("stale: \(reason)")
      }
      guard case .sync(let error) = error else { return ioError }
      switch error {
      case .invalidBody, .protocolViolation: return ExitStatus.dataError
      case .store: return ioError
      case .transport, .unauthorized, .httpStatus, .cancelled, .deadlinePassed: return unavailable
      case .retryAfterTooLong: return ExitStatus.temporaryFailure
      }
    }
  }
}
