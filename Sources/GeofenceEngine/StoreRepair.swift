import Foundation
import EventOutbox
import GeofenceDefinitions
import GeofenceSync
import RetryTiming
import SQLiteStore

/// A file of a directory store that cannot be used, and why.
public struct StoreDamage: Hashable, Sendable, CustomStringConvertible {
  /// The file's path.
  public var path: String
  /// What is wrong, for example `file is not a database` or `empty file`.
  public var problem: String

  public var description: String { "\(path) is damaged: \(problem)" }
}

/// What ``StoreRepair/repair(directory:at:)`` did with one damaged file.
public struct StoreRepairOutcome: Hashable, Sendable, CustomStringConvertible {
  public var damage: StoreDamage
  /// Where the damaged file was moved (its `-wal` and `-shm` companions go alongside).
  public var movedTo: String
  /// What was kept, for example `12 rows of events, 3 rows of dead_letters`, or
  /// `nothing could be read`.
  public var kept: String

  public var description: String {
    "\(damage.path): \(damage.problem); moved to \(movedTo); kept \(kept)"
  }
}

/// Finds and repairs damaged files of a directory store (``GeofenceEngine/Storage/directory(_:)``):
/// `identity.json`, `outbox.sqlite`, `state.sqlite` and `geofences.sqlite`.
///
/// **Check.** A SQLite file is damaged when SQLite refuses it (`file is not a database`) or
/// `PRAGMA quick_check` reports anything but `ok` (a truncated file, torn pages), or when it
/// is empty (0 bytes, with no write-ahead log): the store never leaves one so, and SQLite
/// would take it for a new database, the rows it held lost without a word. `identity.json` is damaged when it is
/// not a JSON object with string `device_id` and `anonymous_id` (an empty file included).
/// `state.sqlite` is also damaged when a device row holds a checkpoint the engine cannot
/// restore (see `StoreRepair+Checkpoints.swift`), and `geofences.sqlite` when a geofence row
/// does not form a valid geofence (see `StoreRepair+Geofences.swift`); repair copies every
/// other row, and the next sync lists the set in full.
///
/// **Repair** never deletes: the damaged file is renamed `NAME.corrupt-YYYYMMDDTHHMMSSZ` (with
/// its `-wal`/`-shm`), so nothing is lost. For a SQLite file, a new file is then written with
/// the store's own schema and seed rows, into which every row SQLite can still read of the old
/// file is copied, table by table, past unreadable rows (see
/// ``forEachReadableRow(of:in:whole:_:)``; a truncated file is read
/// as far as it goes); with nothing readable the file starts afresh (an empty outbox or
/// device state; an empty synced set, which the next sync lists in full). A damaged identity is replaced by a new one (new device and anonymous ids): an
/// unreadable file holds no id to keep.
public enum StoreRepair {
  /// The store's files, in the order they are checked.
  public static let fileNames = [
    "identity.json", "outbox.sqlite", "state.sqlite", "geofences.sqlite",
  ]

  /// The damaged files of `directory` (missing files are not damage).
  /// - Complexity: O(n) in the files' sizes (`quick_check` reads every page).
  public static func check(directory: String) -> [StoreDamage] {
    check(directory: directory, files: fileNames)
  }

  /// ``check(directory:)`` of the named files only (of ``fileNames``): for a command that
  /// reads one file whole before it acts on it (`upload` checks the outbox before it sends).
  public static func check(directory: String, files: [String]) -> [StoreDamage] {
    files.compactMap { name in
      let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
      guard FileManager.default.fileExists(atPath: path) else { return nil }
      var problem = name.hasSuffix(".json") ? identityProblem(path) : sqliteProblem(path)
      if problem == nil, name == "state.sqlite" {
        let damaged = damagedCheckpoints(path)
        if !damaged.isEmpty { problem = checkpointProblem(damaged) }
      }
      if problem == nil, name == "geofences.sqlite" {
        let damaged = invalidGeofences(path)
        if !damaged.isEmpty { problem = geofenceProblem(damaged) }
      }
      return problem.map { StoreDamage(path: path, problem: $0) }
    }
  }

  /// Moves every damaged file of `directory` aside and keeps what can be read (see the type's
  /// discussion).
  /// - Parameter time: seconds since the Unix epoch, for the names of the moved files.
  /// - Returns: one outcome per damaged file (empty when nothing was damaged).
  /// - Throws: ``DirectoryLock/Failure/held(path:)`` when an engine (in this process or
  ///   another) has the store open: it holds `store.lock` shared, and would go on writing
  ///   into a file moved aside. Otherwise when a file cannot be moved or the new file cannot
  ///   be written.
  public static func repair(directory: String, at time: Double) throws -> [StoreRepairOutcome] {
    // Nothing damaged: nothing to lock either (an engine may have the store open).
    if check(directory: directory).isEmpty { return [] }
    let lock = try DirectoryLock(
      directory: directory, fileName: DirectoryLock.storeFileName, exclusive: true)
    defer { withExtendedLifetime(lock) {} }
    var outcomes: [StoreRepairOutcome] = []
    for damage in check(directory: directory) {
      // Read before the move: the rows the new file must not copy.
      var dropped: [String: Set<SQLiteValue>] = [:]
      if damage.path.hasSuffix("state.sqlite") {
        dropped["device_state"] = Set(damagedCheckpoints(damage.path).map { .text($0.device) })
      } else if damage.path.hasSuffix("geofences.sqlite") {
        dropped["geofence"] = Set(invalidGeofences(damage.path).map(\.key))
      }
      let moved = damage.path + ".corrupt-" + stamp(time)
      let manager = FileManager.default
      try manager.moveItem(atPath: damage.path, toPath: moved)
      for suffix in ["-wal", "-shm"] where manager.fileExists(atPath: damage.path + suffix) {
        try manager.moveItem(atPath: damage.path + suffix, toPath: moved + suffix)
      }
      let kept: String
      if damage.path.hasSuffix(".json") {
        _ = try MonitoringIdentity(fileURL: URL(fileURLWithPath: damage.path))
        kept = "nothing (a new identity was made)"
      } else {
        kept = try salvageRows(
          from: moved, to: damage.path, dropping: dropped)
      }
      outcomes.append(StoreRepairOutcome(damage: damage, movedTo: moved, kept: kept))
    }
    return outcomes
  }

  /// `20261202T013000Z` for a time in seconds since the Unix epoch (UTC).
  static func stamp(_ time: Double) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    return formatter.string(from: Date(timeIntervalSince1970: time))
  }

  static func identityProblem(_ path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return "cannot be read" }
    if data.isEmpty { return "empty file" }
    guard case .object(let members)? = try? JSONDocument.parse(data) else {
      return "not a JSON object"
    }
    for key in ["device_id", "anonymous_id"] {
      guard case .string(let s)? = members[key], !s.isEmpty else {
        return "no \"\(key)\" string"
      }
    }
    return nil
  }

  static func sqliteProblem(_ path: String) -> String? {
    if Database.staysEmpty(path, seconds: Database.creationWaitSeconds) {
      return "empty file (0 bytes): the rows it held are gone"
    }
    do {
      let database = try Database(path: path, options: .init(readOnly: true))
      let statement = try database.prepare("PRAGMA quick_check")
      var messages: [String] = []
      while try statement.step() { messages.append(statement.string(at: 0) ?? "") }
      if messages == ["ok"] { return nil }
      return messages.prefix(3).joined(separator: "; ")
    } catch {
      return error.message.isEmpty ? error.code.description : error.message
    }
  }

  /// A copy of `source` to read from, padded with zero bytes up to the page count its header
  /// gives: SQLite refuses every read of a truncated file, while the padded copy gives back
  /// the pages that were written (the zero pages read as damaged, and their rows are lost).
  static func readableCopy(of source: String) throws -> String {
    let copy = source + ".reading"
    try? FileManager.default.removeItem(atPath: copy)
    try FileManager.default.copyItem(atPath: source, toPath: copy)
    guard let handle = FileHandle(forUpdatingAtPath: copy) else { return copy }
    defer { try? handle.close() }
    let header = (try? handle.read(upToCount: 100)) ?? Data()
    guard header.count == 100, header.starts(with: Array("SQLite format 3\u{0}".utf8)) else {
      return copy
    }
    let bytes = [UInt8](header)
    let rawPageSize = Int(bytes[16]) << 8 | Int(bytes[17])
    let pageSize = rawPageSize == 1 ? 65_536 : rawPageSize
    let pages = bytes[28..<32].reduce(0) { $0 << 8 | Int($1) }
    let size = Int((try? handle.seekToEnd()) ?? 0)
    let wanted = pageSize * pages
    if wanted > size, wanted <= 1 << 34 {
      try handle.write(contentsOf: Data(count: wanted - size))
    }
    return copy
  }

  /// Creates the store file `name` afresh at `path`, with its schema and seed rows.
  static func createFresh(_ name: String, at path: String) throws {
    switch name {
    case "outbox.sqlite": _ = try Outbox(path: path, clock: SystemClock())
    case "state.sqlite": _ = try DeviceStateStore(path: path)
    case "geofences.sqlite": _ = try GeofenceStore(path: path)
    default: FileManager.default.createFile(atPath: path, contents: Data())
    }
  }

  /// Calls `body` with the values of every row of table `quoted` that SQLite can still read
  /// (`whole` is `SELECT * FROM` it, read first). When a row cannot be read (a damaged page),
  /// the rows after the damage are still copied: in a table with rowids, the first rowid past
  /// the last one read whose seek succeeds is found (doubling the step from that rowid, then
  /// halving it back), and reading goes on from there. A table without rowids is read up to
  /// its first unreadable row.
  /// - Returns: whether every row was read.
  /// - Complexity: O(n) rows, plus O(log g) seeks for each damaged gap of g rowids.
  static func forEachReadableRow(
    of quoted: String, in db: Database, whole: Statement, _ body: ([SQLiteValue]) -> Void
  ) -> Bool {
    let count = whole.columnCount
    guard
      let seek = try? db.prepare("SELECT rowid, * FROM \(quoted) WHERE rowid >= ? ORDER BY rowid")
    else {
      // No rowid: in file order, up to the first unreadable row.
      while true {
        do { guard try whole.step() else { return true } } catch { return false }
        body((0..<count).map { whole.value(at: $0) })
      }
    }
    /// The first rowid at or after `start` that a seek reads (nil: none is left), or an
    /// error.
    enum Probe { case row(Int64), end, unreadable }
    func probe(_ start: Int64) -> Probe {
      seek.reset()
      guard (try? seek.bind(.integer(start), at: 1)) != nil else { return .unreadable }
      do { return try seek.step() ? .row(seek.int64(at: 0)) : .end } catch { return .unreadable }
    }
    var complete = true
    var next: Int64 = .min
    while true {
      // Read from `next` on until the end or an unreadable row.
      seek.reset()
      guard (try? seek.bind(.integer(next), at: 1)) != nil else { return false }
      var last: Int64? = nil
      var failed = false
      while true {
        do { guard try seek.step() else { break } } catch {
          failed = true
          break
        }
        last = seek.int64(at: 0)
        body((1...count).map { seek.value(at: $0) })
      }
      if !failed { return complete }
      complete = false
      // The unreadable rows come after `last` (or from `next` when none was read).
      let from = last.map { $0 == .max ? $0 : $0 + 1 } ?? next
      if from == .max { return false }
      if last != nil {
        switch probe(from) {
        case .row:
          // A new seek reads on (the same query as the scan's): go on from there.
          next = from
          continue
        case .end: return false
        case .unreadable: break
        }
      }
      var step: Int64 = 1
      var low = from  // unreadable from here
      var high: Int64 = from
      var found: Probe = .unreadable
      while true {
        let (sum, overflow) = from.addingReportingOverflow(step)
        high = overflow ? .max : sum
        found = probe(high)
        if case .unreadable = found {
          low = high
          if overflow || step > Int64.max / 2 { return false }
          step *= 2
          continue
        }
        break
      }
      // The first start in (low, high] whose seek reads.
      while high - low > 1 {
        let middle = low + (high - low) / 2
        if case .unreadable = probe(middle) { low = middle } else { high = middle }
      }
      if case .end = probe(high) { return false }
      next = high
    }
  }

  /// Creates `target` afresh with its store's own schema, then copies into it every row
  /// that can still be read from `source`, table by table (a row of the same key replaces
  /// the seed row), except the rows of `dropping` (table name to the keys, the first column,
  /// of rows to leave out). When rows of `geofence` are left out, the copied set's generation
  /// is incremented, so that a snapshot built from the old file is rebuilt; its recorded count
  /// no longer matches its rows, so the next sync lists the set in full
  /// (``GeofenceSync/GeofenceStore/isSetReadable()``).
  static func salvageRows(
    from source: String, to target: String, dropping: [String: Set<SQLiteValue>] = [:]
  ) throws -> String {
    try createFresh((target as NSString).lastPathComponent, at: target)
    let reading = try readableCopy(of: source)
    defer {
      for suffix in ["", "-wal", "-shm", "-journal"] {
        try? FileManager.default.removeItem(atPath: reading + suffix)
      }
    }
    guard let old = try? Database(path: reading, options: .init(readOnly: true)),
      let schema = try? readRows(old, "SELECT name FROM sqlite_master WHERE type = 'table'"),
      !schema.rows.isEmpty
    else { return "nothing (no readable schema; the file starts afresh)" }
    let new = try Database(path: target)
    let newTables = Set(
      (try readRows(new, "SELECT name FROM sqlite_master WHERE type = 'table'")).rows.compactMap {
        if case .text(let name) = $0[0] { return name }
        return nil
      })
    var kept: [String] = []
    var droppedGeofences = 0
    for row in schema.rows {
      guard case .text(let name) = row[0], !name.hasPrefix("sqlite_"), newTables.contains(name)
      else { continue }
      let quoted = quote(name)
      guard let statement = try? old.prepare("SELECT * FROM \(quoted)") else {
        kept.append("0 rows of \(name) (unreadable)")
        continue
      }
      let columns = (0..<statement.columnCount).map { quote(statement.columnName(at: $0)) }
      let marks = Array(repeating: "?", count: columns.count).joined(separator: ",")
      guard
        let insert = try? new.prepare(
          "INSERT OR REPLACE INTO \(quoted) (\(columns.joined(separator: ","))) VALUES (\(marks))")
      else {
        kept.append("0 rows of \(name) (its columns differ from the current schema)")
        continue
      }
      var copied = 0
      var dropped = 0
      let complete = forEachReadableRow(of: quoted, in: old, whole: statement) { values in
        if let keys = dropping[name], let key = values.first, keys.contains(key) {
          dropped += 1
          return
        }
        insert.reset()
        if (try? insert.bind(values)) != nil, (try? insert.step()) != nil { copied += 1 }
      }
      let what = name == "geofence" ? "invalid geofence row(s)" : "damaged checkpoint(s)"
      kept.append(
        "\(copied) rows of \(name)" + (complete ? "" : " (some rows unreadable)")
          + (dropped > 0 ? " (\(dropped) \(what) left out)" : ""))
      if name == "geofence" { droppedGeofences = dropped }
    }
    if droppedGeofences > 0 {
      // After every table, so that the copied sync_state row is in whatever the tables'
      // order. A new generation rebuilds a snapshot of the old set; the stale reason says why
      // the set is smaller than its version's (the recorded count no longer matches, so the
      // next sync lists it in full).
      try new.execute(
        "UPDATE sync_state SET generation = generation + 1, stale_reason = ? WHERE singleton = 1",
        [
          .text(
            "geofence repair left out \(droppedGeofences) invalid stored geofence(s); "
              + "the next sync lists the set in full")
        ])
    }
    return kept.isEmpty ? "nothing (no table could be read)" : kept.joined(separator: ", ")
  }

  static func quote(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// Rows of `sql` up to the first error; `complete` is false when one stopped the reading.
  static func readRows(_ database: Database, _ sql: String) throws(SQLiteError) -> (
    rows: [[SQLiteValue]], complete: Bool
  ) {
    let statement = try database.prepare(sql)
    var rows: [[SQLiteValue]] = []
    do {
      while try statement.step() {
        rows.append((0..<statement.columnCount).map { statement.value(at: $0) })
      }
    } catch {
      return (rows, false)
    }
    return (rows, true)
  }
}
