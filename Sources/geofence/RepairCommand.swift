import Foundation
import GeofenceEngine

/// `geofence repair`: moves damaged store files aside and keeps what can still be read.
enum RepairCommand {
  static let help = """
    usage: geofence repair --store DIR [--check]

    Checks the store folder DIR (identity.json, outbox.sqlite, state.sqlite,
    geofences.sqlite) and repairs each damaged file: it is renamed NAME.corrupt-TIME (UTC,
    with its -wal and -shm files; nothing is deleted), and a new file is written with what
    SQLite can still read of it (every readable row of every readable table: the rows
    after a damaged page are kept too). A file with no readable schema starts afresh: an
    empty outbox or device state, or an empty geofence set that the next 'geofence sync'
    lists in full. A damaged identity.json is replaced by a new identity. A device row of
    state.sqlite whose checkpoint cannot be restored is damage too: it is named, and the new
    file holds every other row (that device starts afresh). So is a geofence row of
    geofences.sqlite that is no valid geofence (a coordinate out of range, a bad radius or
    polygon): it is named and left out, and the next 'geofence sync' lists the set in full.

    Every command that opens a store exits 65 naming the damaged file when it meets one, and
    points here.

      --store DIR   the store folder
      --check       only report damaged files, change nothing

    A store in use is not repaired: every process with DIR open holds DIR/store.lock, and
    repair exits 75 while one does (it would go on writing into the file moved aside).

    exit status: 0 nothing damaged, or every damaged file repaired; 64 usage error; 65 with
    --check, a file is damaged; 66 DIR does not exist; 74 a file could not be moved or
    written; 75 another process has DIR open.
    """

  static func run(_ argv: [String]) -> Int32 {
    let args: CommandLineArguments
    let directory: String
    switch CommandLineArguments.storeCommand(
      argv, command: "repair", help: help, flags: ["check"])
    {
    case .success(let parsed): (args, directory) = parsed
    case .failure(let end): return end.status
    }
    var isDirectory: ObjCBool = false
    let exists = FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory)
    guard exists, isDirectory.boolValue else {
      printError(
        "geofence repair: \(directory): \(exists ? "not a directory" : "no such directory")")
      return ExitStatus.noInput
    }
    // A store that cannot be written is not damaged (SQLite cannot open it for that reason),
    // and a repair could not write its new files either.
    if let problem = storeAccessProblem(directory) {
      printError("geofence repair: \(problem)")
      return ExitStatus.ioError
    }
    if args.flag("check") {
      let damages = StoreRepair.check(directory: directory)
      for damage in damages { printError("geofence repair: \(damage)") }
      if damages.isEmpty { printError("geofence repair: \(directory): no damaged file") }
      return damages.isEmpty ? ExitStatus.ok : ExitStatus.dataError
    }
    do {
      let outcomes = try StoreRepair.repair(
        directory: directory, at: Date().timeIntervalSince1970)
      for outcome in outcomes { printError("geofence repair: \(outcome)") }
      if outcomes.isEmpty { printError("geofence repair: \(directory): no damaged file") }
      return ExitStatus.ok
    } catch DirectoryLock.Failure.held(let path) {
      printError(
        "geofence repair: \(directory) is in use by another process (it holds \(path)); "
          + "stop it, then repair")
      return ExitStatus.temporaryFailure
    } catch let failure as DirectoryLock.Failure {
      printError("geofence repair: \(failure)")
      return ExitStatus.ioError
    } catch {
      printError("geofence repair: \(error.localizedDescription)")
      return ExitStatus.ioError
    }
  }
}
