import CSQLite

/// An SQLite call failed.
///
/// Carries SQLite's result code (the primary code, `SQLITE_CONSTRAINT` = 19, and the extended
/// code, `SQLITE_CONSTRAINT_UNIQUE` = 2067), the message of `sqlite3_errmsg` (or of
/// `sqlite3_exec`), and the SQL that failed when there is one. Match on ``code``:
///
/// ```swift
/// catch let error as SQLiteError where error.code == .constraint { ... }
/// ```
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
  /// An SQLite primary result code (the low 8 bits of an extended code).
  /// See <https://sqlite.org/rescode.html>.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `SQLITE_ERROR` (1): generic error, including SQL syntax errors.
    public static let error = Code(rawValue: SQLITE_ERROR)
    /// `SQLITE_BUSY` (5): the database file is locked by another connection.
    public static let busy = Code(rawValue: SQLITE_BUSY)
    /// `SQLITE_LOCKED` (6): a table is locked within this connection.
    public static let locked = Code(rawValue: SQLITE_LOCKED)
    /// `SQLITE_READONLY` (8).
    public static let readOnly = Code(rawValue: SQLITE_READONLY)
    /// `SQLITE_IOERR` (10).
    public static let ioError = Code(rawValue: SQLITE_IOERR)
    /// `SQLITE_CORRUPT` (11).
    public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
    /// `SQLITE_CANTOPEN` (14).
    public static let cantOpen = Code(rawValue: SQLITE_CANTOPEN)
    /// `SQLITE_CONSTRAINT` (19): a UNIQUE, NOT NULL, CHECK, PRIMARY KEY or FOREIGN KEY
    /// constraint failed.
    public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
    /// `SQLITE_MISMATCH` (20): data type mismatch.
    public static let mismatch = Code(rawValue: SQLITE_MISMATCH)
    /// `SQLITE_MISUSE` (21): the library was used incorrectly.
    public static let misuse = Code(rawValue: SQLITE_MISUSE)
    /// `SQLITE_RANGE` (25): a bind index out of range.
    public static let range = Code(rawValue: SQLITE_RANGE)

    /// SQLite's English name of the code (`sqlite3_errstr`), for example `"constraint failed"`.
    public var description: String { String(cString: sqlite3_errstr(rawValue)) }
  }

  /// The primary result code.
  public var code: Code { Code(rawValue: extendedCode & 0xFF) }
  /// The extended result code, for example `SQLITE_CONSTRAINT_UNIQUE` (2067). Equal to the
  /// primary code when SQLite gave no extended one.
  public var extendedCode: Int32
  /// SQLite's message, for example `"UNIQUE constraint failed: t.id"`.
  public var message: String
  /// The SQL being prepared or run when the error happened, if any.
  public var sql: String?

  public init(extendedCode: Int32, message: String, sql: String? = nil) {
    self.extendedCode = extendedCode
    self.message = message
    self.sql = sql
  }

  /// For example `SQLite error 19/2067 (constraint failed): UNIQUE constraint failed: t.id
  /// in "INSERT INTO t VALUES (1)"`.
  public var description: String {
    var text = "SQLite error \(code.rawValue)"
    if extendedCode != code.rawValue { text += "/\(extendedCode)" }
    text += " (\(code)): \(message)"
    if let sql { text += " in \"\(sql)\"" }
    return text
  }
}
