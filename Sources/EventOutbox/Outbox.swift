import Foundation
import RetryTiming
import SQLiteStore

/// Settings of an ``Outbox`` and its uploader.
public struct OutboxConfiguration: Hashable, Sendable {
  /// Most events in one upload batch. Default 20; range 1...500 (the protocol's limit).
  public var maxBatchEvents: Int
  /// A batch is due once the oldest pending event has waited this long, in seconds, even when
  /// fewer than ``maxBatchEvents`` are pending. Default 30; must be >= 0.
  public var maxBatchIntervalSeconds: Double
  /// Most events kept (pending and in flight). When an enqueue would exceed it, the oldest
  /// events are evicted and counted in ``OutboxCounts/evicted``. Default 10,000; must be >= 1.
  public var capacity: Int
  /// How many ids of delivered events the outbox remembers, so that an event created again
  /// after its delivery (a track replayed after a crash) is not queued again. Default 10,000;
  /// 0 remembers none (the server still deduplicates).
  public var deliveredIDMemory: Int

  public init(
    maxBatchEvents: Int = 20, maxBatchIntervalSeconds: Double = 30, capacity: Int = 10_000,
    deliveredIDMemory: Int = 10_000
  ) {
    precondition((1...500).contains(maxBatchEvents), "maxBatchEvents must be in 1...500")
    precondition(maxBatchIntervalSeconds >= 0, "maxBatchIntervalSeconds must be >= 0")
    precondition(capacity >= 1, "capacity must be >= 1")
    self.maxBatchEvents = maxBatchEvents
    self.maxBatchIntervalSeconds = maxBatchIntervalSeconds
    self.capacity = capacity
    precondition(deliveredIDMemory >= 0, "deliveredIDMemory must be >= 0")
    self.deliveredIDMemory = deliveredIDMemory
  }
}

/// A persisted, ordered queue of events waiting for delivery to one or more destinations.
///
/// Events live in one SQLite file opened with write-ahead logging and `synchronous = FULL`:
/// when ``enqueue(_:)`` returns, the event survives a crash or a power loss. Events keep their
/// enqueue order (a sequence number that is never reused); every destination reads them in
/// that order, so an event is never sent before an event enqueued earlier (an EXIT never
/// overtakes its ENTER).
///
/// ## Destinations and cursors
/// Each destination (the server's batch API, a webhook, a file, ...) has its own durable
/// **cursor**, a row of the `cursors` table named by the destination: every event at or
/// before the cursor is settled for it (delivered, or dead-lettered for it). Events after the
/// cursor that were settled out of order (a batch answer that left earlier events out) or are
/// being sent are kept as **marks** beside the cursor, with their attempt count; the cursor
/// moves over them once everything before them is settled. So a slow or failing destination
/// only holds its own cursor back: the others keep delivering.
///
/// An event leaves the outbox once every registered destination's cursor has passed it
/// (``register(destination:)``); with no destination registered, events stay queued (up to
/// ``OutboxConfiguration/capacity``).
///
/// ## States, per destination
/// - **pending**: after the destination's cursor and not settled for it;
/// - **in flight**: part of the batch being sent to it; a batch is marked in flight in one
///   transaction before it is sent, and settled (delivered, or dead-lettered when rejected) or
///   put back to pending when the answer is applied;
/// - **dead letter**: rejected by that destination, kept with the reason in a separate table.
///
/// Opening an outbox puts every in-flight event back to pending: they are the oldest after
/// the cursor, so they are sent first, with the same ids (at-least-once delivery; receivers
/// deduplicate by id, the idempotency key).
///
/// **Threads.** Not `Sendable`: use an outbox from one isolation domain, like its ``Database``.
/// Two processes may open the same file (SQLite locks it), but only one should deliver.
public final class Outbox {
  /// The settings.
  public let configuration: OutboxConfiguration
  /// The clock that stamps events and times batches.
  public let clock: any EngineClock
  let database: Database

  private let insertStatement: Statement
  private let countStatement: Statement

  /// Schema migrations, in order (append only).
  static let migrations = [
    """
    CREATE TABLE events (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      payload TEXT NOT NULL,
      created_at REAL NOT NULL,
      in_flight INTEGER NOT NULL DEFAULT 0,
      attempts INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE dead_letters (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL,
      payload TEXT NOT NULL,
      reason TEXT NOT NULL,
      dead_at REAL NOT NULL,
      attempts INTEGER NOT NULL
    );
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO counters VALUES ('evicted', 0), ('delivered', 0), ('deleted', 0);
    """,
    """
    CREATE TABLE delivered_ids (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE);
    """,
    // Version 3: one cursor per destination. The in-flight flags and attempt counts of the
    // events belonged to the one uploader; they move to its marks as destination "server".
    """
    CREATE TABLE cursors (destination TEXT PRIMARY KEY, seq INTEGER NOT NULL);
    CREATE TABLE marks (
      destination TEXT NOT NULL,
      seq INTEGER NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      state INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (destination, seq)
    ) WITHOUT ROWID;
    INSERT INTO marks (destination, seq, attempts, state)
      SELECT 'server', seq, attempts, 0 FROM events WHERE attempts > 0;
    CREATE TABLE dead_letters_v3 (
      destination TEXT NOT NULL,
      seq INTEGER NOT NULL,
      id TEXT NOT NULL,
      payload TEXT NOT NULL,
      reason TEXT NOT NULL,
      dead_at REAL NOT NULL,
      attempts INTEGER NOT NULL,
      PRIMARY KEY (destination, seq)
    );
    INSERT INTO dead_letters_v3 SELECT 'server', seq, id, payload, reason, dead_at, attempts
      FROM dead_letters;
    DROP TABLE dead_letters;
    ALTER TABLE dead_letters_v3 RENAME TO dead_letters;
    ALTER TABLE events DROP COLUMN in_flight;
    ALTER TABLE events DROP COLUMN attempts;
    """,
    // Version 4: the account the events belong to, kept with them (``account()``).
    """
    CREATE TABLE account (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      fingerprint TEXT NOT NULL
    );
    """,
  ]

  /// Opens (creating when missing) the outbox in the SQLite file at `path`, and puts events
  /// left in flight by an earlier process back to pending.
  /// - Parameters:
  ///   - path: the database file (`:memory:` for a private, non-durable outbox).
  ///   - configuration: batch size, interval and cap.
  ///   - clock: the time source. Default: the wall clock.
  ///   - recoverInFlight: put in-flight events back to pending. Default `true`; pass `false`
  ///     to inspect an outbox that another process may be uploading from.
  /// - Throws: ``SQLiteError`` when the file cannot be opened or migrated.
  public init(
    path: String, configuration: OutboxConfiguration = OutboxConfiguration(),
    clock: any EngineClock = SystemClock(), recoverInFlight: Bool = true
  ) throws {
    self.configuration = configuration
    self.clock = clock
    database = try Database(
      path: path, options: .init(writeAheadLogging: true, refusesEmptyFile: true))
    try database.migrate(Self.migrations)
    if recoverInFlight {
      try database.execute("UPDATE marks SET state = 0 WHERE state = 1")
    }
    insertStatement = try database.prepare(
      "INSERT OR IGNORE INTO events (id, payload, created_at) SELECT ?1, ?2, ?3 "
        + "WHERE NOT EXISTS (SELECT 1 FROM delivered_ids WHERE id = ?1)")
    countStatement = try database.prepare("SELECT count(*) FROM events")
  }

  // MARK: Account

  /// The account the queued events belong to, as its owner recorded it (for the engine, the
  /// fingerprint of the upload key, `Networking.KeyFingerprint`), or nil when none is. Kept in
  /// the outbox's own file, so that the events and their account are repaired, copied and
  /// lost together.
  /// - Throws: ``SQLiteError``.
  public func account() throws -> String? {
    let statement = try database.prepare("SELECT fingerprint FROM account WHERE singleton = 1")
    guard try statement.step() else { return nil }
    return statement.string(at: 0)
  }

  /// Records the account of the events (``account()``), replacing any other.
  /// - Throws: ``SQLiteError``.
  public func setAccount(_ fingerprint: String) throws {
    try database.execute(
      "INSERT INTO account (singleton, fingerprint) VALUES (1, ?) "
        + "ON CONFLICT (singleton) DO UPDATE SET fingerprint = excluded.fingerprint",
      [.text(fingerprint)])
  }

  // MARK: Enqueue

  /// Stores one event durably (committed with `synchronous = FULL` before returning).
  ///
  /// An event whose id is already queued, or was delivered recently (among the last
  /// ``OutboxConfiguration/deliveredIDMemory`` delivered ids), is not stored again (the call
  /// returns `false`): an event created again after a crash neither takes a second place nor
  /// travels twice. (Were it sent again, the server would list it as a duplicate.) When the outbox holds ``OutboxConfiguration/capacity``
  /// events, the oldest are evicted first and counted.
  /// - Returns: `true` when the event was added, `false` when its id was already queued.
  /// - Throws: ``OutboxError`` for an invalid id or payload (nothing stored), ``SQLiteError``.
  /// - Complexity: one transaction (one `fsync` of the WAL); O(log n) index work.
  @discardableResult
  public func enqueue(_ event: OutboxEvent) throws -> Bool {
    try enqueue(contentsOf: [event]) == 1
  }

  /// Stores several events in one transaction, in order (cheaper than one call per event: one
  /// `fsync` in all). Validation happens first, so an invalid event stores nothing.
  /// - Returns: how many were added (ids already queued or recently delivered are skipped).
  /// - Throws: ``OutboxError``, ``SQLiteError``.
  @discardableResult
  public func enqueue(contentsOf events: [OutboxEvent]) throws -> Int {
    for event in events { try Self.validate(event) }
    let now = clock.now()
    return try database.transaction {
      var added = 0
      for event in events {
        insertStatement.reset()
        try insertStatement.bind([
          .text(event.id), .text(event.payload), .real(event.createdAt ?? now),
        ])
        try insertStatement.step()
        added += database.changes
      }
      insertStatement.reset()
      try evictOverCapacity()
      return added
    }
  }

  private func evictOverCapacity() throws {
    countStatement.reset()
    _ = try countStatement.step()
    let count = Int(countStatement.int64(at: 0))
    countStatement.reset()
    let excess = count - configuration.capacity
    guard excess > 0 else { return }
    try database.execute(
      "DELETE FROM events WHERE seq IN (SELECT seq FROM events ORDER BY seq LIMIT ?)",
      [.integer(Int64(excess))])
    try bump("evicted", by: excess)
  }

  static func validate(_ event: OutboxEvent) throws {
    guard !event.id.isEmpty, event.id.utf8.count <= 256 else {
      throw OutboxError.invalidID(event.id)
    }
    let object: Any
    do {
      object = try JSONSerialization.jsonObject(with: Data(event.payload.utf8))
    } catch {
      throw OutboxError.invalidPayload(id: event.id, reason: "not JSON")
    }
    guard let dictionary = object as? [String: Any] else {
      throw OutboxError.invalidPayload(id: event.id, reason: "not a JSON object")
    }
    if dictionary["id"] != nil {
      throw OutboxError.invalidPayload(
        id: event.id, reason: "has an \"id\" member (the outbox writes it)")
    }
  }

  /// Whether an event with `id` is queued, or was delivered recently enough to be refused
  /// again by ``enqueue(contentsOf:)`` (the `delivered_ids` window): an event made again
  /// from the same fix after a crash.
  /// - Complexity: two index lookups.
  public func knows(id: String) throws -> Bool {
    let s = try database.prepare(
      "SELECT EXISTS (SELECT 1 FROM events WHERE id = ?1) "
        + "OR EXISTS (SELECT 1 FROM delivered_ids WHERE id = ?1)")
    try s.bind(.text(id), at: 1)
    _ = try s.step()
    return s.int64(at: 0) != 0
  }

  // MARK: Inspection

  /// Counts of pending, in-flight and dead-letter events, and the lifetime counters.
  /// - Complexity: O(n) over the queued events (an SQLite count).
  public func counts() throws -> OutboxCounts {
    let s = try database.prepare(
      """
      SELECT (SELECT count(*) FROM events)
               - (SELECT count(DISTINCT seq) FROM marks WHERE state = 1),
             (SELECT count(DISTINCT seq) FROM marks WHERE state = 1),
             (SELECT count(*) FROM dead_letters),
             (SELECT value FROM counters WHERE name = 'evicted'),
             (SELECT value FROM counters WHERE name = 'delivered'),
             (SELECT value FROM counters WHERE name = 'deleted')
      """)
    _ = try s.step()
    return OutboxCounts(
      pending: Int(s.int64(at: 0)), inFlight: Int(s.int64(at: 1)),
      deadLetters: Int(s.int64(at: 2)), evicted: Int(s.int64(at: 3)),
      delivered: Int(s.int64(at: 4)), deleted: Int(s.int64(at: 5)))
  }

  /// The queued events (pending and in flight) in send order.
  /// - Parameter limit: at most this many. Default: all.
  public func queuedEvents(limit: Int = .max) throws -> [OutboxEvent] {
    let s = try database.prepare(
      "SELECT id, payload, created_at FROM events ORDER BY seq LIMIT ?")
    try s.bind(.integer(Int64(min(limit, Int(Int64.max)))), at: 1)
    var result: [OutboxEvent] = []
    while try s.step() {
      result.append(
        OutboxEvent(
          id: s.string(at: 0) ?? "", payload: s.string(at: 1) ?? "{}",
          createdAt: s.double(at: 2)))
    }
    return result
  }

  /// The dead letters, oldest first.
  public func deadLetters() throws -> [DeadLetter] {
    let s = try database.prepare(
      "SELECT id, payload, reason, dead_at, attempts, destination FROM dead_letters "
        + "ORDER BY seq, destination")
    var result: [DeadLetter] = []
    while try s.step() {
      result.append(
        DeadLetter(
          id: s.string(at: 0) ?? "", payload: s.string(at: 1) ?? "", reason: s.string(at: 2) ?? "",
          deadAt: s.double(at: 3), attempts: Int(s.int64(at: 4)),
          destination: s.string(at: 5) ?? ""))
    }
    return result
  }

  /// When the next batch for `destination` is due without a ``OutboxUploader/flush()``: now
  /// when at least ``OutboxConfiguration/maxBatchEvents`` events are pending for it, else its
  /// oldest pending event's creation time plus ``OutboxConfiguration/maxBatchIntervalSeconds``;
  /// `nil` when nothing is pending for it.
  /// - Parameter destination: the cursor's name. Default ``serverDestination``.
  public func nextBatchDueTime(destination: String = Outbox.serverDestination) throws -> Double? {
    let p = try pendingSummary(destination: destination)
    guard p.count > 0 else { return nil }
    if p.count >= configuration.maxBatchEvents { return -Double.infinity }
    return (p.oldestCreatedAt ?? clock.now()) + configuration.maxBatchIntervalSeconds
  }

  // MARK: Deletion

  /// Deletes every queued event (pending and in flight) and every dead letter, and counts them
  /// in ``OutboxCounts/deleted``, and forgets the delivered ids: what to do when the user
  /// withdraws tracking consent.
  /// - Returns: how many were deleted.
  @discardableResult
  public func deleteAll() throws -> Int {
    try database.transaction {
      try database.execute("DELETE FROM events")
      var n = database.changes
      try database.execute("DELETE FROM dead_letters")
      n += database.changes
      try database.execute("DELETE FROM delivered_ids")
      try database.execute("DELETE FROM marks")
      try bump("deleted", by: n)
      return n
    }
  }

  func bump(_ counter: String, by n: Int) throws {
    guard n != 0 else { return }
    try database.execute(
      "INSERT INTO counters (name, value) VALUES (?2, ?1) "
        + "ON CONFLICT(name) DO UPDATE SET value = value + ?1",
      [.integer(Int64(n)), .text(counter)])
  }

  func list(_ seqs: [Int64]) -> String {
    seqs.map(String.init).joined(separator: ",")
  }
}
