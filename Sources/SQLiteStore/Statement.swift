import CSQLite
import Foundation

/// A value SQLite stores: its five storage classes.
public enum SQLiteValue: Hashable, Sendable {
  case integer(Int64)
  case real(Double)
  case text(String)
  case blob(Data)
  case null
}

/// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the bind call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement (`sqlite3_stmt *`), finalized in `deinit` (`sqlite3_finalize`).
///
/// Parameter indices are 1-based and column indices 0-based, as in SQLite's C API. The
/// statement keeps its ``Database`` open and follows the same thread rule: not `Sendable`.
///
/// Typical use: bind, then ``step()`` until it returns `false`, reading columns while it
/// returns `true`; ``reset()`` to run it again (bindings are kept until ``clearBindings()``).
public final class Statement {
  /// The connection the statement belongs to.
  public let database: Database
  /// The statement's SQL as given to ``Database/prepare(_:)``.
  public let sql: String
  let pointer: OpaquePointer

  init(database: Database, pointer: OpaquePointer, sql: String) {
    self.database = database
    self.pointer = pointer
    self.sql = sql
  }

  deinit {
    sqlite3_finalize(pointer)
  }

  // MARK: Binding

  /// Binds an integer to parameter `index` (1-based).
  public func bind(_ value: Int64, at index: Int) throws(SQLiteError) {
    try check(sqlite3_bind_int64(pointer, Int32(index), value))
  }

  /// Binds a floating-point number to parameter `index` (1-based).
  public func bind(_ value: Double, at index: Int) throws(SQLiteError) {
    try check(sqlite3_bind_double(pointer, Int32(index), value))
  }

  /// Binds UTF-8 text to parameter `index` (1-based). The text may contain NUL characters; an
  /// empty string stays an empty text, not NULL.
  public func bind(_ value: String, at index: Int) throws(SQLiteError) {
    var text = value
    let rc = text.withUTF8 { bytes -> Int32 in
      guard let base = bytes.baseAddress, bytes.count > 0 else {
        return sqlite3_bind_text(pointer, Int32(index), "", 0, transient)
      }
      return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
        sqlite3_bind_text(pointer, Int32(index), $0, Int32(bytes.count), transient)
      }
    }
    try check(rc)
  }

  /// Binds a blob to parameter `index` (1-based). An empty `Data` stays an empty blob, not NULL.
  public func bind(_ value: Data, at index: Int) throws(SQLiteError) {
    let rc = value.withUnsafeBytes { bytes -> Int32 in
      guard let base = bytes.baseAddress, bytes.count > 0 else {
        return sqlite3_bind_zeroblob(pointer, Int32(index), 0)
      }
      return sqlite3_bind_blob(pointer, Int32(index), base, Int32(bytes.count), transient)
    }
    try check(rc)
  }

  /// Binds NULL to parameter `index` (1-based).
  public func bindNull(at index: Int) throws(SQLiteError) {
    try check(sqlite3_bind_null(pointer, Int32(index)))
  }

  /// Binds any storage class to parameter `index` (1-based).
  public func bind(_ value: SQLiteValue, at index: Int) throws(SQLiteError) {
    switch value {
    case .integer(let v): try bind(v, at: index)
    case .real(let v): try bind(v, at: index)
    case .text(let v): try bind(v, at: index)
    case .blob(let v): try bind(v, at: index)
    case .null: try bindNull(at: index)
    }
  }

  /// Binds `values` to parameters 1, 2, … in order.
  /// - Throws: ``SQLiteError/Code/range`` when there are more values than parameters.
  public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
    for (offset, value) in values.enumerated() {
      try bind(value, at: offset + 1)
    }
  }

  /// Sets every parameter back to NULL (`sqlite3_clear_bindings`).
  public func clearBindings() {
    sqlite3_clear_bindings(pointer)
  }

  // MARK: Running

  /// Runs the statement to its next row (`sqlite3_step`).
  /// - Returns: `true` when a row is ready to read, `false` when the statement is done.
  /// - Throws: ``SQLiteError`` naming the SQL, for example ``SQLiteError/Code/constraint``.
  @discardableResult
  public func step() throws(SQLiteError) -> Bool {
    let rc = sqlite3_step(pointer)
    switch rc {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default: throw database.error(rc, sql: sql)
    }
  }

  /// Rewinds the statement so it can run again; bindings are kept (`sqlite3_reset`).
  ///
  /// The result code of `sqlite3_reset` only repeats the error of the last ``step()``, which
  /// was thrown already, so it is not reported again.
  public func reset() {
    sqlite3_reset(pointer)
  }

  // MARK: Columns

  /// Number of columns in a result row.
  public var columnCount: Int { Int(sqlite3_column_count(pointer)) }

  /// Name of column `index` (0-based).
  public func columnName(at index: Int) -> String {
    sqlite3_column_name(pointer, Int32(index)).map { String(cString: $0) } ?? ""
  }

  /// Whether column `index` (0-based) of the current row is NULL.
  public func isNull(at index: Int) -> Bool {
    sqlite3_column_type(pointer, Int32(index)) == SQLITE_NULL
  }

  /// Column `index` (0-based) as an integer, converted by SQLite's rules (NULL is 0).
  public func int64(at index: Int) -> Int64 {
    sqlite3_column_int64(pointer, Int32(index))
  }

  /// Column `index` (0-based) as a floating-point number, converted by SQLite's rules (NULL is
  /// 0.0).
  public func double(at index: Int) -> Double {
    sqlite3_column_double(pointer, Int32(index))
  }

  /// Column `index` (0-based) as text, or `nil` when NULL.
  public func string(at index: Int) -> String? {
    guard let text = sqlite3_column_text(pointer, Int32(index)) else { return nil }
    let count = Int(sqlite3_column_bytes(pointer, Int32(index)))
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
  }

  /// Whether column `index` (0-based) of the current row is stored as a number (INTEGER or
  /// REAL); text, blob and NULL are not.
  public func isNumber(at index: Int) -> Bool {
    let type = sqlite3_column_type(pointer, Int32(index))
    return type == SQLITE_INTEGER || type == SQLITE_FLOAT
  }

  /// Column `index` (0-based) when it is stored as TEXT of valid UTF-8, else `nil` (NULL, a
  /// number, a blob, or bytes that are not UTF-8, which ``string(at:)`` would replace).
  public func validText(at index: Int) -> String? {
    guard sqlite3_column_type(pointer, Int32(index)) == SQLITE_TEXT,
      let text = sqlite3_column_text(pointer, Int32(index))
    else { return nil }
    let count = Int(sqlite3_column_bytes(pointer, Int32(index)))
    return String(validating: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
  }

  /// Column `index` (0-based) as bytes, or `nil` when NULL. An empty blob is an empty `Data`.
  public func data(at index: Int) -> Data? {
    if isNull(at: index) { return nil }
    let bytes = sqlite3_column_blob(pointer, Int32(index))
    let count = Int(sqlite3_column_bytes(pointer, Int32(index)))
    guard let bytes, count > 0 else { return Data() }
    return Data(bytes: bytes, count: count)
  }

  /// Column `index` (0-based) in its own storage class.
  public func value(at index: Int) -> SQLiteValue {
    switch sqlite3_column_type(pointer, Int32(index)) {
    case SQLITE_INTEGER: return .integer(int64(at: index))
    case SQLITE_FLOAT: return .real(double(at: index))
    case SQLITE_TEXT: return .text(string(at: index) ?? "")
    case SQLITE_BLOB: return .blob(data(at: index) ?? Data())
    default: return .null
    }
  }

  private func check(_ rc: Int32) throws(SQLiteError) {
    guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
  }
}

@available(*, unavailable, message: "an SQLite statement must be used by one thread at a time")
extension Statement: Sendable {}
