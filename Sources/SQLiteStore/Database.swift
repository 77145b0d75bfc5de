import CSQLite

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One SQLite connection (`sqlite3 *`), opened in `init` and closed in `deinit`
/// (`sqlite3_close_v2`).
///
/// **Threads.** A connection and its statements must be used by one thread at a time. They are
/// not `Sendable`: keep a `Database` inside one isolation domain (an actor, for example), and
/// open one connection per domain. Each ``Statement`` keeps its `Database` alive, so the
/// connection closes only after its last statement is finalized.
///
/// Extended result codes are on, so every ``SQLiteError`` has its extended code.
public final class Database {
  /// How to open a connection.
  public struct Options: Hashable, Sendable {
    /// Use write-ahead logging (`PRAGMA journal_mode = WAL`) with `PRAGMA synchronous = FULL`,
    /// so that a committed transaction survives a power loss. Ignored for in-memory databases
    /// (SQLite keeps their journal in memory). Default: `false` (SQLite's rollback journal and
    /// its default synchronous level).
    public var writeAheadLogging: Bool
    /// How long to retry when another connection holds a lock before failing with
    /// ``SQLiteError/Code/busy``, in milliseconds (`sqlite3_busy_timeout`). Default: 5,000.
    /// 0 fails at once.
    public var busyTimeoutMilliseconds: Int32
    /// Open read-only (`SQLITE_OPEN_READONLY`); the file must exist. Default: `false` (read and
    /// write, creating the file when missing).
    public var readOnly: Bool
    /// Refuse an existing file of 0 bytes (``isEmptyFile(_:)``) with
    /// ``SQLiteError/Code/corrupt``, instead of taking it for a new, empty database: a store
    /// file that once held rows and was truncated (a failed restore, a full disk, a careless
    /// `: > file`) would otherwise lose them without a word. Default: `false`.
    public var refusesEmptyFile: Bool

    public init(
      writeAheadLogging: Bool = false, busyTimeoutMilliseconds: Int32 = 5_000,
      readOnly: Bool = false, refusesEmptyFile: Bool = false
    ) {
      self.writeAheadLogging = writeAheadLogging
      self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
      self.readOnly = readOnly
      self.refusesEmptyFile = refusesEmptyFile
    }
  }

  /// Makes the database at `path`, when it does not exist, so that it is never seen empty:
  /// written under a temporary name (its header, in WAL mode), then linked into place
  /// (`link(2)`: atomic, and a no-op when another process made the file first) and the
  /// temporary name removed. A process killed on the way leaves no file, or a whole one, at
  /// `path`, never the 0-byte file that ``Options/refusesEmptyFile`` takes for a truncated
  /// store.
  /// - Throws: ``SQLiteError`` when the file cannot be made (the folder missing or not
  ///   writable).
  static func createWhole(_ path: String) throws(SQLiteError) {
    var info = stat()
    if stat(path, &info) == 0 { return }
    let temporary = path + ".new-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    defer {
      unlink(temporary)
      unlink(temporary + "-wal")
      unlink(temporary + "-shm")
    }
    do {
      let database = try Database(path: temporary, options: Options(writeAheadLogging: true))
      // The journal mode is kept in the header: setting it writes page 1.
      _ = database
    }
    if link(temporary, path) != 0 && errno != EEXIST {
      throw SQLiteError(
        extendedCode: SQLITE_CANTOPEN,
        message: "cannot create \(path): \(String(cString: strerror(errno)))")
    }
  }

  /// How long an empty file is watched before ``Options/refusesEmptyFile`` refuses it: 2 s.
  /// Another process creating the database holds it at 0 bytes from `sqlite3_open_v2` until
  /// its first write (a fraction of a millisecond: `PRAGMA journal_mode = WAL` writes the
  /// header); a truncated file stays empty.
  public static let creationWaitSeconds = 2.0

  /// Whether `path` is an empty file (``isEmptyFile(_:)``) and stays so for `seconds`, looked
  /// at every 10 ms; false at once for a missing or non-empty file.
  public static func staysEmpty(_ path: String, seconds: Double) -> Bool {
    var waited = 0.0
    while isEmptyFile(path) {
      if waited >= seconds { return true }
      usleep(10_000)
      waited += 0.01
    }
    return false
  }

  /// Whether `path` is an existing database file of 0 bytes whose write-ahead log (`-wal`) is
  /// missing or empty too: a database SQLite would open as new. (A database in WAL mode may
  /// keep its main file empty while its log holds the first transactions.)
  /// - Complexity: two `stat` calls.
  public static func isEmptyFile(_ path: String) -> Bool {
    func size(_ p: String) -> Int64? {
      var info = stat()
      return stat(p, &info) == 0 ? Int64(info.st_size) : nil
    }
    guard size(path) == 0 else { return false }
    return (size(path + "-wal") ?? 0) == 0
  }

  let handle: OpaquePointer
  /// The path the connection was opened with (`:memory:` for an in-memory database).
  public let path: String

  /// Opens (and by default creates) a database.
  /// - Parameters:
  ///   - path: a file path, or `:memory:` for a private in-memory database.
  ///   - options: see ``Options``.
  /// - Throws: ``SQLiteError`` when the file cannot be opened or an option cannot be applied.
  public init(path: String, options: Options = Options()) throws(SQLiteError) {
    if options.refusesEmptyFile && path != ":memory:" && !options.readOnly {
      try Database.createWhole(path)
    }
    if options.refusesEmptyFile && path != ":memory:"
      && Database.staysEmpty(path, seconds: Database.creationWaitSeconds)
    {
      throw SQLiteError(
        extendedCode: SQLITE_CORRUPT,
        message: "empty file (0 bytes): the rows it held are gone (opening \(path))")
    }
    var pointer: OpaquePointer?
    let flags =
      (options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
      | SQLITE_OPEN_EXRESCODE
    let rc = sqlite3_open_v2(path, &pointer, flags, nil)
    guard rc == SQLITE_OK, let pointer else {
      let message = pointer.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      if let pointer { sqlite3_close_v2(pointer) }
      throw SQLiteError(extendedCode: rc, message: "\(message) (opening \(path))")
    }
    self.handle = pointer
    self.path = path
    sqlite3_extended_result_codes(pointer, 1)
    sqlite3_busy_timeout(pointer, options.busyTimeoutMilliseconds)
    if options.writeAheadLogging && path != ":memory:" {
      try execute("PRAGMA journal_mode = WAL")
      try execute("PRAGMA synchronous = FULL")
    }
  }

  /// Opens a private in-memory database.
  public static func inMemory() throws(SQLiteError) -> Database {
    try Database(path: ":memory:")
  }

  deinit {
    sqlite3_close_v2(handle)
  }

  /// Runs one or more SQL statements separated by `;`, discarding any rows
  /// (`sqlite3_exec`).
  /// - Throws: ``SQLiteError`` naming `sql`.
  public func execute(_ sql: String) throws(SQLiteError) {
    var errorMessage: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
    guard rc == SQLITE_OK else {
      let message =
        errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
      sqlite3_free(errorMessage)
      throw SQLiteError(extendedCode: sqlite3_extended_errcode(handle), message: message, sql: sql)
    }
  }

  /// Runs one statement with bound values until it is done, discarding any rows.
  /// - Parameters:
  ///   - sql: one SQL statement with `?` parameters.
  ///   - values: the parameters, in order.
  /// - Throws: ``SQLiteError`` naming `sql`.
  public func execute(_ sql: String, _ values: [SQLiteValue]) throws(SQLiteError) {
    let statement = try prepare(sql)
    try statement.bind(values)
    while try statement.step() {}
  }

  /// Compiles one SQL statement (`sqlite3_prepare_v2`).
  /// - Throws: ``SQLiteError`` naming `sql` (for example a syntax error).
  public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
    var pointer: OpaquePointer?
    let rc = sqlite3_prepare_v2(handle, sql, -1, &pointer, nil)
    guard rc == SQLITE_OK else {
      sqlite3_finalize(pointer)
      throw error(rc, sql: sql)
    }
    guard let pointer else {
      throw SQLiteError(
        extendedCode: SQLITE_MISUSE, message: "the text holds no SQL statement", sql: sql)
    }
    return Statement(database: self, pointer: pointer, sql: sql)
  }

  /// Runs `body` in a transaction: `BEGIN IMMEDIATE`, then `COMMIT` when `body` returns or
  /// `ROLLBACK` when it throws (the error is rethrown). `IMMEDIATE` takes the write lock at
  /// once, so a concurrent writer waits for the busy timeout instead of failing mid-way.
  ///
  /// Transactions do not nest: calling this inside `body` fails with SQLite's error
  /// "cannot start a transaction within a transaction".
  /// - Returns: what `body` returns.
  /// - Throws: `body`'s error, or an ``SQLiteError`` from `BEGIN` or `COMMIT` (after a failed
  ///   `COMMIT` the transaction is rolled back).
  public func transaction<T>(_ body: () throws -> T) throws -> T {
    try execute("BEGIN IMMEDIATE")
    let value: T
    do {
      value = try body()
    } catch {
      rollbackIfActive()
      throw error
    }
    do {
      try execute("COMMIT")
    } catch {
      rollbackIfActive()
      throw error
    }
    return value
  }

  private func rollbackIfActive() {
    if sqlite3_get_autocommit(handle) == 0 {
      _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
    }
  }

  /// True while a transaction is open (`sqlite3_get_autocommit` is 0).
  public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

  /// The schema version kept in the database header (`PRAGMA user_version`); 0 for a new
  /// database.
  public func userVersion() throws(SQLiteError) -> Int {
    let statement = try prepare("PRAGMA user_version")
    guard try statement.step() else { return 0 }
    return Int(statement.int64(at: 0))
  }

  /// Brings the schema up to date.
  ///
  /// `migrations[i]` takes the schema from version `i` to `i + 1` (SQL, possibly several
  /// statements). Those with index `>= userVersion()` run in order in one transaction
  /// (`BEGIN IMMEDIATE`), which also sets `PRAGMA user_version` to `migrations.count`, so a
  /// failed migration leaves the database as it was. Already applied migrations never run
  /// again: never edit or reorder them, only append.
  ///
  /// **Concurrent openers.** The version is read inside the transaction, after the write
  /// lock is taken: when several connections (in one process or several) open a new file at
  /// once, the first creates the schema and the others wait for it (up to the busy timeout),
  /// then find it up to date. An up-to-date database is checked without taking the write lock.
  /// - Parameter migrations: every migration since version 0, in order.
  /// - Returns: how many migrations this call ran (0 when up to date).
  /// - Throws: ``SQLiteError`` from a failing migration (naming its SQL), or
  ///   ``SQLiteError/Code/error`` when the database's version is newer than `migrations.count`.
  @discardableResult
  public func migrate(_ migrations: [String]) throws(SQLiteError) -> Int {
    if try checkedVersion(migrations) == migrations.count { return 0 }
    do {
      return try transaction { () throws(SQLiteError) -> Int in
        let current = try checkedVersion(migrations)
        for version in current..<migrations.count {
          try execute(migrations[version])
        }
        if current < migrations.count {
          try execute("PRAGMA user_version = \(migrations.count)")
        }
        return migrations.count - current
      }
    } catch let error as SQLiteError {
      throw error
    } catch {
      // The body only throws SQLiteError.
      throw SQLiteError(extendedCode: SQLITE_ERROR, message: "\(error)")
    }
  }

  /// ``userVersion()``, checked against the migrations known to this build.
  private func checkedVersion(_ migrations: [String]) throws(SQLiteError) -> Int {
    let current = try userVersion()
    guard current <= migrations.count else {
      throw SQLiteError(
        extendedCode: SQLITE_ERROR,
        message:
          "database schema version \(current) is newer than the \(migrations.count) known "
          + "migrations")
    }
    return current
  }

  /// The rowid of the last successful `INSERT` on this connection (`sqlite3_last_insert_rowid`).
  public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

  /// Rows changed by the last `INSERT`, `UPDATE` or `DELETE` (`sqlite3_changes64`).
  public var changes: Int { Int(sqlite3_changes64(handle)) }

  /// The error for result code `rc` with the connection's current message.
  func error(_ rc: Int32, sql: String?) -> SQLiteError {
    SQLiteError(extendedCode: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
  }
}

@available(*, unavailable, message: "an SQLite connection must be used by one thread at a time")
extension Database: Sendable {}
