import Foundation
import GeofenceGeometry
import JSONText
import GeofenceTransitions
import LocationAuthorization
import SQLiteStore

/// What the engine saves of one device: its gate, its detector and the last fix it took.
struct DeviceCheckpoint: Codable, Sendable {
  var gate: GateCheckpoint
  var detector: DetectorCheckpoint
  /// Time of the latest fix the engine took for the device (seconds since the Unix epoch),
  /// and its position: the engine drops any later fix at or before this time (staleFix,
  /// duplicateFix or conflictingTimestamp), which is also the "already seen" rule after a
  /// restart.
  var lastSeenTime: Double?
  var lastSeenLatitude: Double?
  var lastSeenLongitude: Double?

  /// Foundation's encoder with the strategy of the checkpoint's JSON (sorted keys; non-finite
  /// times, which the detector uses for "never" and "no time", as the strings `"inf"`,
  /// `"-inf"` and `"nan"`), for the engine-wide values of `state.sqlite`. Checkpoints
  /// themselves are written by ``appendJSON(to:)`` (the same text, without `Codable`).
  static func makeEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return encoder
  }

  /// The decoder of ``makeEncoder()``'s JSON.
  static func makeDecoder() -> JSONDecoder {
    let decoder = JSONDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return decoder
  }
}

/// `state.sqlite` of an engine's store: one row per device (a JSON checkpoint, see
/// ``DeviceCheckpoint/appendJSON(to:)``) and the engine-wide authorization state.
///
/// WAL with `synchronous = FULL`: a committed checkpoint survives a process kill and a power
/// loss. Not `Sendable`; owned by one ``GeofenceEngine``.
final class DeviceStateStore {
  let database: Database
  private let encoder: JSONEncoder
  private let decoder: JSONDecoder
  /// The prepared statements of ``load(device:)`` and ``save(_:forgetting:)``, made at first
  /// use: a stream restores and saves thousands of devices per batch.
  private var loadStatement: Statement?
  private var saveStatement: Statement?

  init(path: String) throws(SQLiteError) {
    database =
      path == ":memory:"
      ? try Database.inMemory()
      : try Database(path: path, options: .init(writeAheadLogging: true, refusesEmptyFile: true))
    _ = try database.migrate([
      """
      CREATE TABLE device_state (device_id TEXT PRIMARY KEY, checkpoint TEXT NOT NULL);
      CREATE TABLE engine_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      """
    ])
    encoder = DeviceCheckpoint.makeEncoder()
    decoder = DeviceCheckpoint.makeDecoder()
  }

  /// The saved device, or nil when none is saved. A row whose checkpoint cannot be decoded is
  /// returned as ``StoredCheckpoint/damaged(_:)`` with the reason, never taken for "none
  /// saved": starting such a device afresh would lose its visits without a word.
  func load(device: String) throws(SQLiteError) -> StoredCheckpoint? {
    let statement: Statement
    if let prepared = loadStatement {
      statement = prepared
    } else {
      statement = try database.prepare("SELECT checkpoint FROM device_state WHERE device_id = ?")
      loadStatement = statement
    }
    // Reset after reading: a statement left open would pin the write-ahead log's snapshot.
    defer { statement.reset() }
    try statement.bind(device, at: 1)
    guard try statement.step() else { return nil }
    guard let text = statement.string(at: 0) else { return .damaged("the checkpoint is not text") }
    do {
      return .intact(try DeviceCheckpoint(json: Array(text.utf8)))
    } catch {
      return .damaged(error.description)
    }
  }

  /// One row of `device_state` as read.
  enum StoredCheckpoint {
    case intact(DeviceCheckpoint)
    /// The row's checkpoint cannot be decoded; why.
    case damaged(String)
  }

  /// The saved devices whose checkpoint names any of `regionIDs` (a visit or a pending
  /// ENTER): a text search for `"regionID":` followed by the id as JSON, as the checkpoint
  /// writes it (and with `\/` for `/`, as an earlier version's `JSONEncoder` wrote it).
  /// - Returns: the device ids, each once by its bytes (``DeviceKey``), in no order.
  /// - Complexity: one scan of the table per id.
  func devices(referencingAnyOf regionIDs: some Sequence<String>) throws(SQLiteError)
    -> [String]
  {
    func likeEscaped(_ s: String) -> String {
      var out = ""
      for c in s {
        if c == "%" || c == "_" || c == "\\" { out.append("\\") }
        out.append(c)
      }
      return out
    }
    let statement = try database.prepare(
      "SELECT device_id FROM device_state WHERE checkpoint LIKE ? ESCAPE '\\'")
    var found: Set<DeviceKey> = []
    for id in regionIDs {
      let quoted = JSONText.quoted(id)
      var spellings = [quoted]
      if quoted.contains("/") {
        spellings.append(quoted.replacingOccurrences(of: "/", with: "\\/"))
      }
      for spelling in spellings {
        statement.reset()
        try statement.bind("%" + likeEscaped("\"regionID\":" + spelling) + "%", at: 1)
        while try statement.step() {
          if let device = statement.string(at: 0) { found.insert(DeviceKey(device)) }
        }
      }
    }
    statement.reset()
    return found.map(\.id)
  }

  /// Number of saved devices.
  func deviceCount() throws(SQLiteError) -> Int {
    let statement = try database.prepare("SELECT count(*) FROM device_state")
    _ = try statement.step()
    return Int(statement.int64(at: 0))
  }

  /// Saves `devices` and forgets `forgotten` in one transaction.
  func save(_ devices: [(String, DeviceCheckpoint)], forgetting forgotten: [String] = [])
    throws
  {
    try database.transaction {
      let upsert: Statement
      if let prepared = saveStatement {
        upsert = prepared
      } else {
        upsert = try database.prepare(
          "INSERT INTO device_state (device_id, checkpoint) VALUES (?, ?) "
            + "ON CONFLICT (device_id) DO UPDATE SET checkpoint = excluded.checkpoint")
        saveStatement = upsert
      }
      for (device, checkpoint) in devices {
        upsert.reset()
        try upsert.bind(device, at: 1)
        try upsert.bind(checkpoint.jsonText, at: 2)
        _ = try upsert.step()
      }
      upsert.reset()
      for device in forgotten {
        try database.execute("DELETE FROM device_state WHERE device_id = ?", [.text(device)])
      }
    }
  }

  /// Forgets every device.
  func forgetAll() throws(SQLiteError) {
    try database.execute("DELETE FROM device_state")
  }

  /// An engine-wide value (JSON text).
  func value<T: Decodable>(_ type: T.Type, key: String) throws(SQLiteError) -> T? {
    let statement = try database.prepare("SELECT value FROM engine_state WHERE key = ?")
    try statement.bind(key, at: 1)
    guard try statement.step(), let text = statement.string(at: 0) else { return nil }
    return try? decoder.decode(T.self, from: Data(text.utf8))
  }

  func setValue<T: Encodable>(_ value: T, key: String) throws {
    let data = try encoder.encode(value)
    try database.execute(
      "INSERT INTO engine_state (key, value) VALUES (?, ?) "
        + "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      [.text(key), .text(String(decoding: data, as: UTF8.self))])
  }
}
