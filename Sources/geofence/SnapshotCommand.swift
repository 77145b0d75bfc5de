import Foundation
import GeofenceEngine
import GeofenceSync

/// `geofence snapshot`: writes (or checks) the indexed snapshot of a synced store.
enum SnapshotCommand {
  static let help = """
    usage: geofence snapshot --store DIR [--check]

    Writes DIR/geofences.snapshot: the geofence set that 'geofence sync' stored in DIR, already
    indexed, so that 'stream --store', 'run --store' and every engine on DIR start by copying
    it instead of reading and indexing every row. 'geofence sync' writes it after each change
    of the set; an engine that finds it stale, damaged or missing rebuilds the set from the
    store and writes it again. Prints where the set came from, the file and its size when it
    is written again, and the time to open it.

      --store DIR   the store
      --check       write nothing: open the snapshot as an engine would (identity, checksum,
                    layout) and say whether it is current (exit 0), or missing, stale or
                    damaged (exit 1, with the reason)

    exit status: 0; 1 (--check) the snapshot is missing, stale or damaged; 64 usage error; 66 no
    geofence store in DIR; 74 the store cannot be read or the snapshot written.
    """

  static func run(_ argv: [String]) -> Int32 {
    let args: CommandLineArguments
    let store: String
    do throws(UsageError) {
      args = try CommandLineArguments(
        argv, spec: .init(valued: ["store"], flags: ["help", "check"]))
      if args.flag("help") {
        print(help)
        return ExitStatus.ok
      }
      guard let s = args.last("store") else { throw UsageError("give --store DIR") }
      store = s
      if let extra = args.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
    } catch {
      printError("geofence snapshot: \(error.message)\nRun 'geofence snapshot --help' for usage.")
      return ExitStatus.usage
    }
    let path = URL(fileURLWithPath: store).appendingPathComponent("geofences.sqlite").path
    guard FileManager.default.fileExists(atPath: path) else {
      printError("geofence snapshot: no geofence store in \(store) (run 'geofence sync' first)")
      return ExitStatus.noInput
    }
    if args.flag("check") {
      // Without an engine, which would rebuild a stale snapshot before it could be judged.
      do {
        let status = GeofenceEngine.snapshotStatus(
          directory: store, store: try GeofenceStore(path: path))
        switch status {
        case .current: print("snapshot: current")
        case .missing: print("snapshot: missing")
        case .stale: print("snapshot: stale (built from another version of the set)")
        case .unusable(let reason):
          print(
            "snapshot: damaged or unusable: \(reason); the next engine on the store rebuilds it")
        }
        return status == .current ? ExitStatus.ok : 1
      } catch {
        if let status = storeInUseStatus(error, command: "snapshot") { return status }
        if let status = damagedStoreStatus(store, command: "snapshot") { return status }
        printError("geofence snapshot: cannot read \(path): \(error)")
        return ExitStatus.ioError
      }
    }
    if let status = writeSnapshot(store: store, path: path) {
      return status
    }
    // Open it as the next engine will.
    let reopenStart = DispatchTime.now()
    do {
      let again = try GeofenceEngine(
        configuration: .init(checkpoints: .none), storage: .directory(store))
      if case .snapshot(let s) = again.setSource {
        print(
          "reopened in \(format(s)) s (engine created in \(format(seconds(since: reopenStart))) s)")
      } else {
        print("reopened: \(again.setSource)")
      }
    } catch {
      printError("geofence snapshot: reopening failed: \(error)")
      return ExitStatus.ioError
    }
    return ExitStatus.ok
  }

  /// Opens the store, reports where its set came from, and writes the snapshot; the engine is
  /// gone when it returns (one engine a directory). Returns an exit status to end with, or
  /// `nil` to go on and reopen.
  static func writeSnapshot(store: String, path: String) -> Int32? {
    let start = DispatchTime.now()
    let engine: GeofenceEngine
    do {
      engine = try GeofenceEngine(
        configuration: .init(checkpoints: .none), storage: .directory(store))
    } catch {
      if let status = storeInUseStatus(error, command: "snapshot") { return status }
      if let status = damagedStoreStatus(store, command: "snapshot") { return status }
      printError("geofence snapshot: cannot read \(path): \(error)")
      return ExitStatus.ioError
    }
    let opened = seconds(since: start)
    switch engine.setSource {
    case .snapshot(let s):
      print(
        "snapshot: current; opened \(engine.geofenceCount) geofence(s) in \(format(s)) s")
    case .store(let reason, let wrote):
      print(
        "snapshot: \(reason); built \(engine.geofenceCount) geofence(s) from the store in "
          + "\(format(opened)) s, \(wrote ? "snapshot written with it" : "snapshot not written")")
      // The engine has just written the snapshot of the set it built.
      if wrote { return nil }
    case .given: break
    }
    let writeStart = DispatchTime.now()
    let written: (path: String, bytes: Int)
    do throws(EngineError) {
      written = try engine.writeSnapshot()
    } catch {
      printError("geofence snapshot: \(error)")
      return ExitStatus.ioError
    }
    print(
      "wrote \(written.path): \(written.bytes) bytes (\(engine.geofenceCount) geofences) in "
        + "\(format(seconds(since: writeStart))) s")
    return nil
  }

  static func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
  }

  static func format(_ s: Double) -> String { String(format: "%.3f", s) }
}
