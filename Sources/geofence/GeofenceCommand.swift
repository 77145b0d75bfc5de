import Foundation
import GeofenceEngine
import Networking

/// Top-level dispatch of the `geofence` command.
enum GeofenceCommand {
  static let usage = """
    usage: geofence <command> [options]

    commands:
      replay   replay GPS tracks (GPX, CSV) against geofences and print enter/exit/dwell events
      sync     fetch geofences from a server into a local store (ETag, paging, incremental)
      stream   live fixes of many devices (JSON Lines or CSV) in, events out as they happen
      regions  list the geofence set stored by 'sync' (CSV, JSON Lines, GeoJSON)
      snapshot write the indexed snapshot of a synced set, which engines open at start
      plan     which geofences a phone should register under an OS region budget (iOS 20)
      run      sync, replay tracks through the authorization gate into the outbox, upload
      outbox   show the event outbox: pending, in flight, dead letters
      upload   send pending events from the outbox now
      bench    benchmark the index and the detector on generated or real geofence sets
      repair   move damaged store files aside and keep what can still be read

    Run 'geofence <command> --help' for a command's options.
    """

  static func main(_ args: [String]) async -> Int32 {
    guard let command = args.first else {
      printError(usage)
      return ExitStatus.usage
    }
    let rest = Array(args.dropFirst())
    switch command {
    case "replay":
      return await ReplayCommand.run(rest)
    case "bench":
      return BenchCommand.run(rest)
    case "sync":
      return await SyncCommand.run(rest)
    case "run":
      return await RunCommand.run(rest)
    case "stream":
      return await StreamCommand.run(rest)
    case "regions":
      return RegionsCommand.run(rest)
    case "snapshot":
      return SnapshotCommand.run(rest)
    case "plan":
      return PlanCommand.run(rest)
    case "outbox":
      return RunCommand.outbox(rest)
    case "upload":
      return await RunCommand.upload(rest)
    case "repair":
      return RepairCommand.run(rest)
    case "--help", "-h", "help":
      print(usage)
      return ExitStatus.ok
    default:
      printError("geofence: unknown command '\(command)'\n\n\(usage)")
      return ExitStatus.usage
    }
  }
}

/// When files of the store folder `directory` are damaged, names each with its problem, says
/// how to repair them, and returns 65 (EX_DATAERR: the store's data is bad); `nil` when none
/// is damaged, so that the caller reports its own error. Commands call it when opening a
/// store fails.
func damagedStoreStatus(_ directory: String, command: String) -> Int32? {
  // A store that cannot be written (a read-only mount, another user's files) is not damaged:
  // SQLite cannot open it, but repairing would not help.
  if let problem = storeAccessProblem(directory) {
    printError("geofence \(command): \(problem)")
    return ExitStatus.ioError
  }
  let damages = StoreRepair.check(directory: directory)
  guard !damages.isEmpty else { return nil }
  for damage in damages { printError("geofence \(command): \(damage)") }
  printError(
    "geofence \(command): run 'geofence repair --store \(directory)' to move the damaged "
      + "file(s) aside as NAME.corrupt-TIME and keep what can still be read")
  return ExitStatus.dataError
}

/// Why the store folder `directory` cannot be opened for writing, or nil: the folder (where
/// SQLite makes its journal and shared-memory files) or one of its database files is not
/// writable by this process, or lies on a read-only file system (the system's reason).
func storeAccessProblem(_ directory: String) -> String? {
  var isDirectory: ObjCBool = false
  guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory),
    isDirectory.boolValue
  else { return nil }
  let files = ["geofences.sqlite", "state.sqlite", "outbox.sqlite"].flatMap {
    [$0, $0 + "-wal", $0 + "-shm"]
  }
  for path in [directory] + files.map({ (directory as NSString).appendingPathComponent($0) })
  where FileManager.default.fileExists(atPath: path) {
    if access(path, R_OK | W_OK) != 0 {
      return "\(path) cannot be written: \(String(cString: strerror(errno)))"
    }
  }
  return nil
}

/// Writes `message` (a problem with an input: a rejected row or line, a warning) to standard
/// error after `prefix`, as one line cut at 1,000 characters
/// (`Networking.ServerText.displayable`: its line breaks escaped too, so a hostile file
/// cannot forge lines of the log; ``printError(_:)`` escapes the other controls).
func printInputProblem(_ prefix: String, _ message: String) {
  printError(prefix + ServerText.displayable(message, limit: 1_000))
}

/// 75 (temporary failure), after naming why, when `error` says the store is in use
/// (``GeofenceEngine/EngineError/storeInUse(_:)``: being repaired, or another process
/// delivers from it); nil otherwise. Every command that opens a store checks it first.
func storeInUseStatus(_ error: any Error, command: String) -> Int32? {
  guard let e = error as? EngineError, case .storeInUse = e else { return nil }
  printError("geofence \(command): \(e)")
  return ExitStatus.temporaryFailure
}

/// Writes a line to standard error. A failed write (closed or full stream) is ignored: there is
/// nowhere left to report it.
///
/// Each line is made safe to show first (`Networking.ServerText.displayable`, no cut): a file
/// name or an argument that reaches a message (`missing\u{1B}[2J.csv: no such file`) cannot
/// drive the terminal or forge a line. The message's own line breaks are kept.
func printError(_ message: String) {
  var safe = message
  if message.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" || $0.value >= 0x7F }) {
    safe = message.split(separator: "\n", omittingEmptySubsequences: false)
      .map { ServerText.displayable(String($0), limit: Int.max) }
      .joined(separator: "\n")
  }
  try? FileHandle.standardError.write(contentsOf: Data((safe + "\n").utf8))
}

/// Why `path` cannot become an output file, or nil when it can: it is a folder, an existing
/// file that is not writable, or its folder is missing or not writable. Commands check their
/// outputs with it before the work, so that a long run is not lost at the end.
func outputFileProblem(_ named: String) -> String? {
  let path: String
  do { path = try outputTarget(named) } catch { return "\(error.localizedDescription)" }
  let manager = FileManager.default
  var isDirectory: ObjCBool = false
  if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
    if isDirectory.boolValue { return "is a directory" }
    return manager.isWritableFile(atPath: path) ? nil : "not writable"
  }
  let parent = (path as NSString).deletingLastPathComponent
  let folder = parent.isEmpty ? "." : parent
  guard manager.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue
  else { return "no such directory \(folder)" }
  if !manager.isWritableFile(atPath: folder) { return "directory \(folder) is not writable" }
  // A folder may refuse new files whatever its mode says (`/proc`, a read-only mount): the
  // file is created, then removed.
  let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
  if fd < 0 { return "cannot be created: \(String(cString: strerror(errno)))" }
  close(fd)
  unlink(path)
  return nil
}

/// The input among `inputs` that writing the output `output` would replace or append to: the
/// same existing regular file once links are followed (same device and inode), whatever the
/// names. Nil when there is none, or when `output` does not exist yet or is not a regular file
/// (`/dev/stdout`, a FIFO).
/// - Complexity: one `stat` a path.
func inputWrittenOver(by output: String, inputs: [String]) -> String? {
  var out = stat()
  guard output != "-", stat(output, &out) == 0, out.st_mode & S_IFMT == S_IFREG else { return nil }
  for input in inputs where input != "-" {
    var info = stat()
    if stat(input, &info) == 0, info.st_dev == out.st_dev, info.st_ino == out.st_ino {
      return input
    }
  }
  return nil
}

/// The path `path` names once its symbolic links are followed (up to 40, as `open(2)`): the
/// file an output written to `path` lands in, which may not exist yet (a dangling link).
/// - Throws: `ELOOP` past 40 links, or the error reading a link.
func outputTarget(_ path: String) throws -> String {
  var target = path
  var info = stat()
  var links = 0
  while lstat(target, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK {
    links += 1
    if links > 40 { throw POSIXError(.ELOOP) }
    let destination = try FileManager.default.destinationOfSymbolicLink(atPath: target)
    target =
      destination.hasPrefix("/")
      ? destination
      : ((target as NSString).deletingLastPathComponent as NSString)
        .appendingPathComponent(destination)
  }
  return target
}

/// Writes `data` to the output file `path`, the one way the commands write a file they were
/// named:
/// - a new or regular file is replaced atomically (a temporary file in its folder, then a
///   rename), so that a reader never sees half of it and a failed write leaves the old file;
/// - a symbolic link is followed (up to 40 links, as `open(2)`), and its target written as
///   above: the link stays a link;
/// - an existing FIFO, device or socket (`/dev/stdout`, `/dev/null`, a named pipe) is written
///   through, never replaced: a full device (`/dev/full`) is an error.
/// - Throws: the file system's error (no space, no permission, a folder at `path`).
func writeOutputFile(_ data: Data, to path: String) throws {
  let target = try outputTarget(path)
  var info = stat()
  let exists = lstat(target, &info) == 0
  let kind = info.st_mode & S_IFMT
  if !exists || kind == S_IFREG {
    try data.write(to: URL(fileURLWithPath: target), options: .atomic)
    return
  }
  if kind == S_IFDIR { throw POSIXError(.EISDIR) }
  let fd = open(target, O_WRONLY | O_CLOEXEC)
  if fd < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
  defer { close(fd) }
  try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
    guard let base = bytes.baseAddress else { return }
    var done = 0
    while done < bytes.count {
      let n = write(fd, base + done, bytes.count - done)
      if n < 0 {
        if errno == EINTR { continue }
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
      }
      done += n
    }
  }
}

/// Writes `data` to standard output. When standard output is gone (a closed pipe, a full disk)
/// the command cannot do its job: it says so on standard error and exits with 74 (EX_IOERR)
/// instead of trapping.
func writeStandardOutput(_ data: Data) {
  do {
    try FileHandle.standardOutput.write(contentsOf: data)
  } catch {
    printError("geofence: cannot write to standard output: \(error.localizedDescription)")
    exit(ExitStatus.ioError)
  }
}
