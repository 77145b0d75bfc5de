import Foundation
import SQLiteStore
import Testing
import GeofenceTestSupport

private struct Abort: Error, Equatable {}

@Test func everyStorageClassRoundTrips() throws {
  let db = try Database.inMemory()
  try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)")
  let insert = try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?)")
  let rows: [[SQLiteValue]] = [
    [.integer(.max), .real(-0.5), .text("Zürich 🏔"), .blob(Data([0, 1, 255])), .null],
    [.integer(.min), .real(1e-300), .text(""), .blob(Data()), .null],
    [.integer(0), .real(.greatestFiniteMagnitude), .text("nul\u{0}inside"), .null, .null],
  ]
  for row in rows {
    try insert.bind(row)
    try insert.step()
    insert.reset()
  }
  // The typed binders.
  try insert.bind(Int64(42), at: 1)
  try insert.bind(2.25, at: 2)
  try insert.bind("typed", at: 3)
  try insert.bind(Data("bytes".utf8), at: 4)
  try insert.bindNull(at: 5)
  #expect(try insert.step() == false)
  #expect(db.lastInsertRowID == 4)
  #expect(db.changes == 1)

  let select = try db.prepare("SELECT i, r, s, b, n FROM t ORDER BY rowid")
  #expect(select.columnCount == 5)
  #expect(select.columnName(at: 2) == "s")
  var read: [[SQLiteValue]] = []
  while try select.step() {
    read.append((0..<5).map { select.value(at: $0) })
  }
  #expect(
    read == rows + [[.integer(42), .real(2.25), .text("typed"), .blob(Data("bytes".utf8)), .null]]
  )

  select.reset()
  #expect(try select.step())
  #expect(select.int64(at: 0) == .max)
  #expect(select.double(at: 1) == -0.5)
  #expect(select.string(at: 2) == "Zürich 🏔")
  #expect(select.data(at: 3) == Data([0, 1, 255]))
  #expect(select.isNull(at: 4))
  #expect(select.string(at: 4) == nil)
  #expect(select.data(at: 4) == nil)
  #expect(try select.step())
  #expect(select.string(at: 2) == "")
  #expect(select.data(at: 3) == Data())
  #expect(!select.isNull(at: 3))
}

@Test func aConstraintViolationIsAnSQLiteErrorWithCode19AndTheSQL() throws {
  let db = try Database.inMemory()
  try db.execute("CREATE TABLE geofence (id TEXT PRIMARY KEY NOT NULL, radius REAL NOT NULL)")
  let sql = "INSERT INTO geofence (id, radius) VALUES (?, ?)"
  try db.execute(sql, [.text("a"), .real(100)])
  do {
    try db.execute(sql, [.text("a"), .real(200)])
    Issue.record("expected a constraint error")
  } catch {
    #expect(error.code == .constraint)
    #expect(error.code.rawValue == 19)
    #expect(error.extendedCode == 1555)  // SQLITE_CONSTRAINT_PRIMARYKEY
    #expect(error.message == "UNIQUE constraint failed: geofence.id")
    #expect(error.sql == sql)
    #expect(
      error.description
        == "SQLite error 19/1555 (constraint failed): UNIQUE constraint failed: geofence.id in "
        + "\"\(sql)\"")
  }
  do {
    try db.execute(sql, [.text("b"), .null])
    Issue.record("expected a constraint error")
  } catch {
    #expect(error.code == .constraint)
    #expect(error.extendedCode == 1299)  // SQLITE_CONSTRAINT_NOTNULL
  }
}

@Test func badSQLAndBadBindingsAreSQLiteErrors() throws {
  let db = try Database.inMemory()
  #expect(throws: SQLiteError.self) { try db.prepare("SELEKT 1") }
  do {
    _ = try db.prepare("SELEKT 1")
  } catch {
    #expect(error.code == .error)
    #expect(error.sql == "SELEKT 1")
    #expect(error.message.contains("syntax error"))
  }
  let statement = try db.prepare("SELECT ?")
  do {
    try statement.bind(Int64(1), at: 2)
    Issue.record("expected a range error")
  } catch {
    #expect(error.code == .range)
  }
}

@Test func aThrowingTransactionRollsBack() throws {
  let db = try Database.inMemory()
  try db.execute("CREATE TABLE t (x INTEGER)")
  #expect(throws: Abort()) {
    try db.transaction {
      try db.execute("INSERT INTO t VALUES (1)")
      #expect(db.isInTransaction)
      throw Abort()
    }
  }
  #expect(!db.isInTransaction)
  let count = try db.prepare("SELECT count(*) FROM t")
  try count.step()
  #expect(count.int64(at: 0) == 0)

  let value = try db.transaction { () throws -> Int in
    try db.execute("INSERT INTO t VALUES (2)")
    return 7
  }
  #expect(value == 7)
  count.reset()
  try count.step()
  #expect(count.int64(at: 0) == 1)

  // An SQLite error inside the body rolls back too.
  #expect(throws: SQLiteError.self) {
    try db.transaction {
      try db.execute("INSERT INTO t VALUES (3)")
      try db.execute("INSERT INTO missing VALUES (3)")
    }
  }
  count.reset()
  try count.step()
  #expect(count.int64(at: 0) == 1)
}

@Test func migrationsRunOnceInOrder() throws {
  let db = try Database.inMemory()
  var migrations = [
    "CREATE TABLE geofence (id TEXT PRIMARY KEY)",
    "ALTER TABLE geofence ADD COLUMN radius REAL; CREATE INDEX geofence_radius ON geofence (radius)",
  ]
  #expect(try db.userVersion() == 0)
  #expect(try db.migrate(migrations) == 2)
  #expect(try db.userVersion() == 2)
  #expect(try db.migrate(migrations) == 0)
  #expect(try db.userVersion() == 2)

  migrations.append("CREATE TABLE outbox (seq INTEGER PRIMARY KEY)")
  #expect(try db.migrate(migrations) == 1)
  #expect(try db.userVersion() == 3)

  // A failing migration leaves the previous version and no partial schema.
  let failing = migrations + ["CREATE TABLE half (x); CREATE TABLE geofence (id)"]
  do {
    try db.migrate(failing)
    Issue.record("expected an error")
  } catch {
    #expect(error.message.contains("already exists"))
  }
  #expect(try db.userVersion() == 3)
  #expect(throws: SQLiteError.self) { try db.prepare("SELECT * FROM half") }

  // A database newer than the code.
  #expect(throws: SQLiteError.self) { try db.migrate(Array(migrations.prefix(1))) }
}

@Test func aFileDatabaseSurvivesReopening() throws {
  let dir = TestScratch.root.appendingPathComponent(
    "sqlite-store-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: dir) }
  let path = dir.appendingPathComponent("store.sqlite").path
  let options = Database.Options(writeAheadLogging: true, busyTimeoutMilliseconds: 1_000)
  do {
    let db = try Database(path: path, options: options)
    let mode = try db.prepare("PRAGMA journal_mode")
    try mode.step()
    #expect(mode.string(at: 0) == "wal")
    let sync = try db.prepare("PRAGMA synchronous")
    try sync.step()
    #expect(sync.int64(at: 0) == 2)  // FULL
    // A statement with an unread row keeps a read transaction open; COMMIT would fail.
    mode.reset()
    sync.reset()
    try db.migrate(["CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)"])
    try db.transaction {
      try db.execute("INSERT INTO t VALUES (?, ?)", [.text("key"), .blob(Data([7, 8, 9]))])
    }
  }
  let reopened = try Database(path: path, options: options)
  #expect(try reopened.userVersion() == 1)
  let select = try reopened.prepare("SELECT k, v FROM t")
  #expect(try select.step())
  #expect(select.string(at: 0) == "key")
  #expect(select.data(at: 1) == Data([7, 8, 9]))
  #expect(try select.step() == false)

  #expect(throws: SQLiteError.self) {
    try Database(path: dir.appendingPathComponent("no/such/dir.sqlite").path)
  }
}

@Test func aSecondOpenerWaitsForTheSchemaInsteadOfCreatingItAgain() throws {
  // Two processes opening a new store at once: the first holds the write lock while it
  // creates the schema; the second must not create it again once the lock is free.
  let dir = TestScratch.root.appendingPathComponent(
    "sqlite-store-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: dir) }
  let path = dir.appendingPathComponent("store.sqlite").path
  let migrations = [
    "CREATE TABLE device_state (device_id TEXT PRIMARY KEY)",
    "CREATE TABLE engine_state (key TEXT PRIMARY KEY)",
  ]
  let first = try Database(path: path, options: .init(writeAheadLogging: true))
  try first.execute("BEGIN IMMEDIATE")

  let outcome = Outcome()
  let finished = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    let result: String
    do {
      let second = try Database(path: path, options: .init(writeAheadLogging: true))
      result = "ran \(try second.migrate(migrations)), version \(try second.userVersion())"
    } catch {
      result = "\(error)"
    }
    outcome.set(result)
    finished.signal()
  }
  // Give the second opener time to read the version and wait for the lock (its busy
  // timeout is 5 s); then create the schema under the first one's lock.
  Thread.sleep(forTimeInterval: 0.3)
  try first.execute(migrations.joined(separator: "; "))
  try first.execute("PRAGMA user_version = 2")
  try first.execute("COMMIT")
  finished.wait()
  #expect(outcome.value == "ran 0, version 2")
}

/// What a test's second thread reports.
private final class Outcome: @unchecked Sendable {
  private let lock = NSLock()
  private var text: String?
  func set(_ value: String) { lock.withLock { text = value } }
  var value: String? { lock.withLock { text } }
}
