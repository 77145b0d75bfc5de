import SQLiteStore

/// How many events are where for one destination.
public struct DestinationCounts: Hashable, Sendable, CustomStringConvertible {
  /// After the destination's cursor, not settled for it and not in flight.
  public var pending: Int
  /// In the batch being sent to it.
  public var inFlight: Int
  /// Delivered to it since its cursor was registered.
  public var delivered: Int
  /// Dropped for it by a before-stage (``EventStage``) since its cursor was registered.
  public var filtered: Int
  /// Dead-lettered for it and still kept.
  public var deadLetters: Int

  public var description: String {
    "pending \(pending), in flight \(inFlight), delivered \(delivered), filtered \(filtered), "
      + "dead letters \(deadLetters)"
  }
}

extension Outbox {
  /// The name of the server's batch API destination (``OutboxUploader``): the cursor an
  /// outbox of schema version 2 or earlier continues as.
  public static let serverDestination = "server"

  /// What a mark's `state` column holds.
  enum MarkState: Int64 {
    /// Attempted at least once, waiting for another send.
    case pending = 0
    /// In the batch being sent.
    case inFlight = 1
    /// Delivered or dead-lettered, ahead of the cursor.
    case settled = 2
  }

  /// Registers `destination`'s cursor when it has none: every event queued now, and every
  /// later one, is then pending for it, and no event leaves the outbox before the
  /// destination has settled it. A cursor stays registered across restarts until
  /// ``unregister(destination:)``.
  /// - Parameter destination: a non-empty name, unique among the outbox's destinations.
  /// - Throws: ``SQLiteError``.
  public func register(destination: String) throws {
    precondition(!destination.isEmpty, "a destination needs a name")
    try database.execute(
      "INSERT OR IGNORE INTO cursors (destination, seq) VALUES (?, 0)", [.text(destination)])
  }

  /// Forgets `destination`'s cursor, marks and dead letters, so that it no longer holds events
  /// back; events every remaining destination has settled leave the outbox.
  /// - Throws: ``SQLiteError``.
  public func unregister(destination: String) throws {
    try database.transaction {
      try database.execute("DELETE FROM cursors WHERE destination = ?", [.text(destination)])
      try database.execute("DELETE FROM marks WHERE destination = ?", [.text(destination)])
      try database.execute(
        "DELETE FROM dead_letters WHERE destination = ?", [.text(destination)])
      try collectSettled()
    }
  }

  /// Gives `old`'s cursor, marks, dead letters and delivered and filtered counts the name
  /// `new`, in one transaction; nothing happens when `old` is not registered. When `new` is
  /// registered too, the two merge: `new`'s cursor and marks stay (a cursor registered later
  /// covers every event still queued), `old`'s dead letters and counts join `new`'s, and the
  /// events both have settled leave the outbox.
  ///
  /// The old name's bytes are overwritten in the file (`secure_delete` for the transaction,
  /// then a `TRUNCATE` checkpoint of the write-ahead log), so a name that held a secret does
  /// not linger on disk.
  /// - Throws: ``SQLiteError``.
  /// - Complexity: O(m) in `old`'s marks and dead letters.
  public func renameDestination(_ old: String, to new: String) throws {
    precondition(!new.isEmpty, "a destination needs a name")
    guard old != new, try cursor(destination: old) != nil else { return }
    try database.execute("PRAGMA secure_delete = ON")
    defer { try? database.execute("PRAGMA secure_delete = OFF") }
    let names: [SQLiteValue] = [.text(old), .text(new)]
    try database.transaction {
      if try cursor(destination: new) == nil {
        try database.execute("UPDATE cursors SET destination = ?2 WHERE destination = ?1", names)
        try database.execute("UPDATE marks SET destination = ?2 WHERE destination = ?1", names)
      } else {
        try database.execute("DELETE FROM cursors WHERE destination = ?1", [.text(old)])
        try database.execute("DELETE FROM marks WHERE destination = ?1", [.text(old)])
      }
      try database.execute(
        "UPDATE OR IGNORE dead_letters SET destination = ?2 WHERE destination = ?1", names)
      try database.execute("DELETE FROM dead_letters WHERE destination = ?1", [.text(old)])
      for counter in ["delivered:", "filtered:"] {
        try database.execute(
          "INSERT INTO counters (name, value) SELECT ?3 || ?2, value FROM counters "
            + "WHERE name = ?3 || ?1 ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
          names + [.text(counter)])
        try database.execute(
          "DELETE FROM counters WHERE name = ?2 || ?1", [.text(old), .text(counter)])
      }
      try collectSettled()
    }
    try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
  }

  /// The registered destinations, sorted by name.
  public func destinations() throws -> [String] {
    let s = try database.prepare("SELECT destination FROM cursors ORDER BY destination")
    var names: [String] = []
    while try s.step() { names.append(s.string(at: 0) ?? "") }
    return names
  }

  /// The cursor of `destination`: the highest sequence number settled for it with everything
  /// before; `nil` when it is not registered.
  public func cursor(destination: String) throws -> Int64? {
    let s = try database.prepare("SELECT seq FROM cursors WHERE destination = ?")
    try s.bind(.text(destination), at: 1)
    return try s.step() ? s.int64(at: 0) : nil
  }

  /// Counts for one destination (zero for an unregistered one).
  /// - Complexity: O(n) over the queued events.
  public func counts(destination: String) throws -> DestinationCounts {
    let summary = try pendingSummary(destination: destination)
    let s = try database.prepare(
      """
      SELECT (SELECT count(*) FROM marks WHERE destination = ?1 AND state = 1),
             coalesce((SELECT value FROM counters WHERE name = 'delivered:' || ?1), 0),
             coalesce((SELECT value FROM counters WHERE name = 'filtered:' || ?1), 0),
             (SELECT count(*) FROM dead_letters WHERE destination = ?1)
      """)
    try s.bind(.text(destination), at: 1)
    _ = try s.step()
    return DestinationCounts(
      pending: summary.count, inFlight: Int(s.int64(at: 0)), delivered: Int(s.int64(at: 1)),
      filtered: Int(s.int64(at: 2)), deadLetters: Int(s.int64(at: 3)))
  }

  /// Events pending for `destination` (after its cursor, neither settled nor in flight) and
  /// the creation times of the oldest and the newest (`nil` when none is); for an
  /// unregistered destination, every queued event.
  /// - Complexity: O(n) over the queued events after the cursor.
  public func pendingSummary(destination: String) throws -> (
    count: Int, oldestCreatedAt: Double?, newestCreatedAt: Double?
  ) {
    let s = try database.prepare(
      """
      SELECT count(*), min(e.created_at), max(e.created_at) FROM events e
      LEFT JOIN marks m ON m.destination = ?1 AND m.seq = e.seq
      WHERE e.seq > coalesce((SELECT seq FROM cursors WHERE destination = ?1), 0)
        AND coalesce(m.state, 0) = 0
      """)
    try s.bind(.text(destination), at: 1)
    _ = try s.step()
    let count = Int(s.int64(at: 0))
    return (count, count > 0 ? s.double(at: 1) : nil, count > 0 ? s.double(at: 2) : nil)
  }

  // MARK: Batches (used by the delivery loops)

  /// A batch for one destination, taken after its cursor and marked in flight.
  struct Batch {
    var destination: String
    var seqs: [Int64]
    var events: [OutboxEvent]
    /// The highest attempt count among its events after this attempt (1 for a first send).
    var attempt: Int
    /// Ids a stage dropped (``DeliveryStages``): settled as filtered, never sent.
    var filtered: Set<String> = []

    /// The events to send: those no stage dropped.
    var sendable: [OutboxEvent] { events.filter { !filtered.contains($0.id) } }
  }

  /// Marks the first `limit` events pending for `destination` in flight and increments their
  /// attempt counts, in one transaction. Returns `nil` when nothing is pending for it.
  func takeBatch(limit: Int, destination: String = Outbox.serverDestination) throws -> Batch? {
    try database.transaction {
      let s = try database.prepare(
        """
        SELECT e.seq, e.id, e.payload, e.created_at, coalesce(m.attempts, 0) FROM events e
        LEFT JOIN marks m ON m.destination = ?1 AND m.seq = e.seq
        WHERE e.seq > coalesce((SELECT seq FROM cursors WHERE destination = ?1), 0)
          AND coalesce(m.state, 0) = 0
        ORDER BY e.seq LIMIT ?2
        """)
      try s.bind([.text(destination), .integer(Int64(limit))])
      var batch = Batch(destination: destination, seqs: [], events: [], attempt: 0)
      while try s.step() {
        batch.seqs.append(s.int64(at: 0))
        batch.events.append(
          OutboxEvent(
            id: s.string(at: 1) ?? "", payload: s.string(at: 2) ?? "{}",
            createdAt: s.double(at: 3)))
        batch.attempt = max(batch.attempt, Int(s.int64(at: 4)) + 1)
      }
      guard !batch.seqs.isEmpty else { return nil }
      let mark = try database.prepare(
        "INSERT INTO marks (destination, seq, attempts, state) VALUES (?1, ?2, 1, 1) "
          + "ON CONFLICT(destination, seq) DO UPDATE SET attempts = attempts + 1, state = 1")
      for seq in batch.seqs {
        mark.reset()
        try mark.bind([.text(destination), .integer(seq)])
        try mark.step()
      }
      return batch
    }
  }

  /// Dead-letters, for the batch's destination, every event of `batch` that would be sent but
  /// whose payload cannot be (``OutboxEvent/payload`` is not a JSON object, or has an `id`
  /// member: ``validate(_:)``, the rule of ``enqueue(_:)``; a file damaged or edited after
  /// the enqueue), each with its reason, and removes them from `batch`: one such event never
  /// blocks the others, which a receiver would refuse together with it (`400`).
  /// - Returns: how many were dead-lettered.
  /// - Throws: ``SQLiteError``.
  /// - Complexity: O(n) in the payloads' length (each is parsed once).
  func deadLetterUnsendable(_ batch: inout Batch) throws -> Int {
    var unsendable = Batch(
      destination: batch.destination, seqs: [], events: [], attempt: batch.attempt)
    var reasons: [String: String] = [:]
    for (seq, event) in zip(batch.seqs, batch.events) where !batch.filtered.contains(event.id) {
      do { try Self.validate(event) } catch {
        guard case .invalidPayload(_, let why) = error as? OutboxError else { continue }
        unsendable.seqs.append(seq)
        unsendable.events.append(event)
        reasons[event.id] = "the stored payload cannot be sent: \(why)"
      }
    }
    guard !reasons.isEmpty else { return 0 }
    try settle(unsendable, delivered: [], rejected: reasons)
    let kept = zip(batch.seqs, batch.events).filter { reasons[$0.1.id] == nil }
    batch.seqs = kept.map(\.0)
    batch.events = kept.map(\.1)
    return reasons.count
  }

  /// Increments the attempt counts of a batch sent again.
  func markRetry(_ batch: Batch) throws {
    try database.execute(
      "UPDATE marks SET attempts = attempts + 1 WHERE destination = ? "
        + "AND seq IN (\(list(batch.seqs)))", [.text(batch.destination)])
  }

  /// Applies an answer: settles `delivered` ids and `filtered` ones (dropped by a stage),
  /// dead-letters `rejected` ones for the batch's destination, and puts the rest of `batch`
  /// back to pending; then moves the destination's cursor and removes the events every
  /// destination has settled. One transaction.
  func settle(
    _ batch: Batch, delivered: Set<String>, rejected: [String: String],
    filtered: Set<String> = []
  ) throws {
    let filtered = filtered.union(batch.filtered)
    try database.transaction {
      var settled: [Int64] = []
      var back: [Int64] = []
      var deliveredCount = 0
      let now = clock.now()
      let destination = SQLiteValue.text(batch.destination)
      for (seq, event) in zip(batch.seqs, batch.events) {
        if let reason = rejected[event.id] {
          try database.execute(
            "INSERT OR REPLACE INTO dead_letters "
              + "(destination, seq, id, payload, reason, dead_at, attempts) "
              + "SELECT ?1, e.seq, e.id, e.payload, ?2, ?3, coalesce(m.attempts, 0) "
              + "FROM events e LEFT JOIN marks m ON m.destination = ?1 AND m.seq = e.seq "
              + "WHERE e.seq = ?4",
            [destination, .text(reason), .real(now), .integer(seq)])
          settled.append(seq)
        } else if delivered.contains(event.id) {
          settled.append(seq)
          deliveredCount += 1
        } else if filtered.contains(event.id) {
          settled.append(seq)
        } else {
          back.append(seq)
        }
      }
      if !settled.isEmpty {
        try database.execute(
          "UPDATE marks SET state = 2 WHERE destination = ? AND seq IN (\(list(settled)))",
          [destination])
      }
      if !back.isEmpty {
        try database.execute(
          "UPDATE marks SET state = 0 WHERE destination = ? AND seq IN (\(list(back)))",
          [destination])
      }
      try bump("delivered", by: deliveredCount)
      try bump("delivered:" + batch.destination, by: deliveredCount)
      let filteredCount = batch.events.count { filtered.contains($0.id) && rejected[$0.id] == nil }
      try bump("filtered:" + batch.destination, by: filteredCount)
      try advanceCursor(batch.destination)
      try collectSettled()
    }
  }

  /// Puts the in-flight events of `batch` back to pending (the answer was lost or useless).
  func release(_ batch: Batch) throws {
    try database.execute(
      "UPDATE marks SET state = 0 WHERE destination = ? AND seq IN (\(list(batch.seqs)))",
      [.text(batch.destination)])
  }

  /// Moves `destination`'s cursor over the events settled for it right after it: to just
  /// before its first unsettled event, or to the last event when none is left; then drops its
  /// marks at or before the cursor.
  private func advanceCursor(_ destination: String) throws {
    let name = SQLiteValue.text(destination)
    try database.execute(
      """
      UPDATE cursors SET seq = max(seq, coalesce(
        (SELECT min(e.seq) - 1 FROM events e
         LEFT JOIN marks m ON m.destination = ?1 AND m.seq = e.seq
         WHERE e.seq > cursors.seq AND coalesce(m.state, 0) <> 2),
        (SELECT max(seq) FROM events), seq))
      WHERE destination = ?1
      """, [name])
    try database.execute(
      "DELETE FROM marks WHERE destination = ?1 "
        + "AND seq <= (SELECT seq FROM cursors WHERE destination = ?1)", [name])
  }

  /// Removes the events that every registered destination's cursor has passed, remembering the
  /// ids of those not dead-lettered (``OutboxConfiguration/deliveredIDMemory``).
  func collectSettled() throws {
    let s = try database.prepare("SELECT min(seq), count(*) FROM cursors")
    _ = try s.step()
    guard s.int64(at: 1) > 0 else { return }
    let floor = SQLiteValue.integer(s.int64(at: 0))
    if configuration.deliveredIDMemory > 0 {
      try database.execute(
        "INSERT OR IGNORE INTO delivered_ids (id) SELECT id FROM events WHERE seq <= ? "
          + "AND id NOT IN (SELECT id FROM dead_letters) ORDER BY seq", [floor])
      try database.execute(
        "DELETE FROM delivered_ids WHERE seq <= (SELECT max(seq) FROM delivered_ids) - ?",
        [.integer(Int64(configuration.deliveredIDMemory))])
    }
    try database.execute("DELETE FROM events WHERE seq <= ?", [floor])
  }
}
