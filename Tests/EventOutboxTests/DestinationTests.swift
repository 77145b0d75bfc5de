import Foundation
import GeofenceTestSupport
import Testing

@testable import EventOutbox
import Networking
import RetryTiming
import SQLiteStore

/// A webhook receiver in memory: down (503) until `upAt` on the clock, then it stores each
/// event it is sent and answers 200. Records every receipt, so duplicates would show.
final class FakeWebhookReceiver: HTTPTransport, @unchecked Sendable {
  let clock: ManualClock
  var upAt: Double
  var requests = 0
  /// Ids of every 2xx receipt, in order (a second receipt of an id would appear twice).
  var received: [String] = []
  var lastHeaders: [String: String] = [:]
  var lastBody = Data()

  init(clock: ManualClock, upAt: Double) {
    self.clock = clock
    self.upAt = upAt
  }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    requests += 1
    guard clock.now() >= upAt else { return HTTPResponse(statusCode: 503) }
    let object = request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) }
    guard let id = (object as? [String: Any])?["id"] as? String else {
      return HTTPResponse(statusCode: 400)
    }
    lastHeaders = request.headers
    lastBody = request.body ?? Data()
    received.append(id)
    return HTTPResponse(statusCode: 200)
  }
}

@Suite struct DestinationTests {
  let clock = ManualClock()
  let directory = temporaryDirectory()
  var path: String { directory.appendingPathComponent("outbox.sqlite").path }

  /// The server's batch API and a webhook on one outbox; the webhook is down for the first
  /// 10 minutes. Every minute 5 events are enqueued and both destinations are flushed.
  @Test func aWebhookDownForTenMinutesHoldsBackNeitherTheServerNorItsOwnCatchUp() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let server = FakeTransport(clock: clock)
    let start = clock.now()
    let receiver = FakeWebhookReceiver(clock: clock, upAt: start + 600)
    let policy = RetryPolicy(maximumAttempts: 3, baseDelaySeconds: 1, maximumDelaySeconds: 4)
    let webhook = WebhookDestination(
      configuration: WebhookConfiguration(
        url: URL(string: "http://127.0.0.1:9/hook")!, secret: "s3cret", retry: policy),
      transport: receiver, clock: clock, random: SeededGenerator(seed: 7))
    let delivery = DestinationDelivery(outbox: outbox, destination: webhook)
    try outbox.register(destination: "webhook")
    var enqueued: [String] = []
    var stoppedWhileDown = 0
    for minute in 0..<20 {
      let events = makeEvents((minute * 5)..<(minute * 5 + 5))
      try outbox.enqueue(contentsOf: events)
      enqueued += events.map(\.id)
      let uploader = OutboxUploader(outbox: outbox, transport: server)
      let up = try await uploader.flush()
      #expect(up.stopped == nil)
      // The server has everything enqueued so far, each once, whatever the webhook does.
      #expect(server.stored == enqueued, "minute \(minute)")
      let hook = try await delivery.flush()
      if clock.now() < start + 600 {
        #expect(hook.delivered == 0 && hook.stopped != nil)
        #expect(try outbox.counts(destination: "webhook").pending == enqueued.count)
        stoppedWhileDown += 1
      }
      clock.advance(by: 60)
    }
    #expect(stoppedWhileDown >= 9)
    // The webhook caught up: every event exactly once, in enqueue order.
    #expect(receiver.received == enqueued)
    #expect(server.stored == enqueued)
    #expect(try outbox.counts(destination: "webhook").pending == 0)
    #expect(try outbox.counts(destination: "webhook").delivered == 100)
    #expect(try outbox.counts(destination: Outbox.serverDestination).delivered == 100)
    // Both cursors passed every event: the outbox is empty.
    #expect(try outbox.counts().queued == 0)
  }

  /// Consent withdrawn while the webhook is behind: every queued event is deleted for both
  /// destinations, neither gets one of them later, and the events after consent returns reach
  /// both, each once.
  @Test func aConsentPurgeDeletesForEveryDestinationAndLaterEventsStillFlow() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let server = FakeTransport(clock: clock)
    let receiver = FakeWebhookReceiver(clock: clock, upAt: clock.now() + 3_600)
    let webhook = WebhookDestination(
      configuration: WebhookConfiguration(
        url: URL(string: "http://127.0.0.1:9/hook")!, secret: "s3cret",
        retry: RetryPolicy(maximumAttempts: 2, baseDelaySeconds: 1, maximumDelaySeconds: 2)),
      transport: receiver, clock: clock, random: SeededGenerator(seed: 3))
    let delivery = DestinationDelivery(outbox: outbox, destination: webhook)
    try outbox.register(destination: "webhook")
    try outbox.enqueue(contentsOf: makeEvents(0..<6))
    _ = try await OutboxUploader(outbox: outbox, transport: server).flush()
    #expect(server.stored == (0..<6).map { "e\($0)" })
    try outbox.enqueue(contentsOf: makeEvents(6..<9))
    let down = try await delivery.flush()
    #expect(down.delivered == 0 && down.stopped != nil)
    #expect(try outbox.counts(destination: "webhook").pending == 9)
    #expect(try outbox.counts(destination: Outbox.serverDestination).pending == 3)

    // 9 events were still queued for the webhook (3 of them also for the server).
    #expect(try outbox.deleteAll() == 9)
    #expect(try outbox.counts(destination: "webhook").pending == 0)
    #expect(try outbox.counts(destination: Outbox.serverDestination).pending == 0)

    clock.advance(by: 3_600)
    try outbox.enqueue(contentsOf: makeEvents(9..<12))
    _ = try await OutboxUploader(outbox: outbox, transport: server).flush()
    let up = try await delivery.flush()
    #expect(up.delivered == 3)
    #expect(server.stored == (0..<6).map { "e\($0)" } + ["e9", "e10", "e11"])
    #expect(receiver.received == ["e9", "e10", "e11"])
    #expect(try outbox.counts().queued == 0)
  }

  @Test func theWebhookSignsTimestampDotBodyWithHMACSHA256() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let receiver = FakeWebhookReceiver(clock: clock, upAt: 0)
    let webhook = WebhookDestination(
      configuration: WebhookConfiguration(
        url: URL(string: "http://127.0.0.1:9/h")!, secret: "Jefe"),
      transport: receiver, clock: clock)
    try outbox.enqueue(OutboxEvent(id: "a1", payload: #"{"type":"enter"}"#))
    _ = try await DestinationDelivery(outbox: outbox, destination: webhook).flush()
    #expect(String(decoding: receiver.lastBody, as: UTF8.self) == #"{"id":"a1","type":"enter"}"#)
    #expect(receiver.lastHeaders["Idempotency-Key"] == "a1")
    #expect(receiver.lastHeaders["X-Attempt"] == "1")
    #expect(receiver.lastHeaders["X-Geofence-Timestamp"] == "1796014800")
    // Oracle: Python's hmac.new(b"Jefe", b'1796014800.{"id":"a1","type":"enter"}',
    // hashlib.sha256).hexdigest().
    #expect(
      receiver.lastHeaders["X-Geofence-Signature"]
        == "sha256=4675b4c37737b8ab399b940a24842e8c9c9ee30aa13cfd761225f7565dbd38e0")
  }

  @Test func aWebhookRefusalDeadLettersOnlyThatEventForTheWebhook() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    final class Refusing: HTTPTransport, @unchecked Sendable {
      var received: [String] = []
      func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let id = request.headers["Idempotency-Key"] ?? ""
        if id == "e1" { return HTTPResponse(statusCode: 422) }
        received.append(id)
        return HTTPResponse(statusCode: 204)
      }
    }
    let transport = Refusing()
    let webhook = WebhookDestination(
      configuration: WebhookConfiguration(url: URL(string: "http://127.0.0.1:9/h")!, secret: "k"),
      transport: transport, clock: clock)
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let report = try await DestinationDelivery(outbox: outbox, destination: webhook).flush()
    #expect(report.delivered == 2 && report.rejected == 1 && report.stopped == nil)
    #expect(transport.received == ["e0", "e2"])
    let dead = try outbox.deadLetters()
    #expect(dead.map(\.id) == ["e1"] && dead.map(\.destination) == ["webhook"])
    #expect(dead[0].reason == "webhook answered HTTP 422")
  }

  @Test func anEventOverTheSizeCapIsDeadLetteredWithoutARequest() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let receiver = FakeWebhookReceiver(clock: clock, upAt: 0)
    let webhook = WebhookDestination(
      configuration: WebhookConfiguration(
        url: URL(string: "http://127.0.0.1:9/h")!, secret: "k", maximumBodyBytes: 40),
      transport: receiver, clock: clock)
    try outbox.enqueue(OutboxEvent(id: "small", payload: #"{"n":1}"#))
    try outbox.enqueue(
      OutboxEvent(id: "big", payload: #"{"pad":"\#(String(repeating: "x", count: 40))"}"#))
    let report = try await DestinationDelivery(outbox: outbox, destination: webhook).flush()
    #expect(receiver.received == ["small"] && receiver.requests == 1)
    #expect(report.rejected == 1)
    #expect(
      try outbox.deadLetters().first?.reason.hasPrefix(
        "event of 61 bytes over the webhook's cap of 40") == true)
  }

  /// Stages run per destination at delivery time: the file gets the events without
  /// coordinates and without dwells; the server gets them as stored.
  @Test func stagesFilterAndRedactForOneDestinationOnly() async throws {
    struct DropDwell: EventStage {
      func process(_ event: OutboxEvent) -> OutboxEvent? {
        event.payload.contains(#""type":"dwell""#) ? nil : event
      }
    }
    struct RedactLatitude: EventStage {
      func process(_ event: OutboxEvent) -> OutboxEvent? {
        var e = event
        e.payload = e.payload.replacingOccurrences(of: #","lat":1.5"#, with: "")
        return e
      }
    }
    let outbox = try Outbox(path: path, clock: clock)
    let file = directory.appendingPathComponent("events.jsonl").path
    let destination = JSONLinesFileDestination(configuration: .init(path: file))
    let delivery = DestinationDelivery(
      outbox: outbox, destination: destination,
      stages: DeliveryStages(before: [DropDwell()], enrichment: [RedactLatitude()]))
    try outbox.register(destination: "file")
    try outbox.register(destination: Outbox.serverDestination)
    try outbox.enqueue(contentsOf: [
      OutboxEvent(id: "a", payload: #"{"type":"enter","lat":1.5}"#),
      OutboxEvent(id: "b", payload: #"{"type":"dwell","lat":1.5}"#),
      OutboxEvent(id: "c", payload: #"{"type":"exit","lat":1.5}"#),
    ])
    let report = try await delivery.flush()
    #expect(report.delivered == 2 && report.filtered == 1)
    let text = try String(contentsOfFile: file, encoding: .utf8)
    #expect(text == "{\"id\":\"a\",\"type\":\"enter\"}\n{\"id\":\"c\",\"type\":\"exit\"}\n")
    let server = FakeTransport(clock: clock)
    _ = try await OutboxUploader(outbox: outbox, transport: server).flush()
    #expect(server.sent.flatMap(\.ids) == ["a", "b", "c"])
    #expect(server.sent[0].events[0]["lat"] as? Double == 1.5)
    #expect(try outbox.counts(destination: "file").filtered == 1)
    #expect(try outbox.counts().queued == 0)
  }

  /// The ids in the JSON Lines files `names` that exist, in order, each file checked to hold
  /// at most `cap` bytes.
  func ids(inFiles names: [String], atMost cap: Int) throws -> [String] {
    var ids: [String] = []
    for name in names where FileManager.default.fileExists(atPath: name) {
      let text = try String(contentsOfFile: name, encoding: .utf8)
      #expect(text.utf8.count <= cap, "\(name)")
      for line in text.split(separator: "\n") {
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        ids.append(object?["id"] as? String ?? "?")
      }
    }
    return ids
  }

  @Test func theFileRotatesBySizeAndKeepsEveryEventOnceInOrder() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let file = directory.appendingPathComponent("rot.jsonl").path
    // Each line is {"id":"eN","type":"enter","n":N} plus a newline: 33 bytes (e0-e9) or 35
    // (e10-e19), so a file of 200 bytes holds 5 or 6. Batches of 3, split between files.
    let destination = JSONLinesFileDestination(
      configuration: .init(path: file, maximumFileBytes: 200, keptFiles: 3, maxBatchEvents: 3))
    try outbox.enqueue(contentsOf: makeEvents(0..<20))
    let report = try await DestinationDelivery(outbox: outbox, destination: destination).flush()
    #expect(report.delivered == 20 && report.stopped == nil)
    #expect(!FileManager.default.fileExists(atPath: file + ".4"))
    // e0-e5, e6-e10, e11-e15, e16-e19: four files, every event once, in order.
    let files = [file + ".3", file + ".2", file + ".1", file]
    #expect(try ids(inFiles: files, atMost: 200) == (0..<20).map { "e\($0)" })
    #expect(try ids(inFiles: [file + ".3"], atMost: 200).count == 6)
  }

  /// A batch is split at the cap, so no file exceeds it; and one flush never rotates away a
  /// file it wrote: it stops with the rest pending, every event written once. A reader that
  /// takes the files between flushes (as a log shipper does) gets every event exactly once.
  @Test func oneFlushNeverRotatesAwayAFileItWrote() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let file = directory.appendingPathComponent("cap.jsonl").path
    // Three lines fit in 110 bytes, four do not.
    let destination = JSONLinesFileDestination(
      configuration: .init(path: file, maximumFileBytes: 110, keptFiles: 1, maxBatchEvents: 50))
    try outbox.enqueue(contentsOf: makeEvents(0..<30))
    var read: [String] = []
    /// Takes PATH.1 then PATH away, as a reader would.
    func drain() throws {
      read += try ids(inFiles: [file + ".1", file], atMost: 110)
      for name in [file + ".1", file] { try? FileManager.default.removeItem(atPath: name) }
    }
    let delivery = DestinationDelivery(outbox: outbox, destination: destination)
    // Flush 1: e0-e2 in PATH, rotated to PATH.1, e3-e5 in PATH; the next rotation would
    // delete PATH.1, written by this flush.
    var report = try await delivery.flush()
    #expect(report.delivered == 6)
    #expect(report.stopped?.contains("would delete \(file).1, written by this delivery") == true)
    #expect(try outbox.counts(destination: "file").pending == 24)
    try drain()
    #expect(read == (0..<6).map { "e\($0)" })
    var flushes = 1
    while try outbox.counts(destination: "file").pending > 0, flushes < 20 {
      report = try await delivery.flush()
      #expect(report.delivered == 6)
      try drain()
      flushes += 1
    }
    #expect(read == (0..<30).map { "e\($0)" })
    #expect(flushes == 5)
  }

  /// With `keepsEveryFileItWrote` (a command's many flushes), no flush rotates away a file
  /// an earlier flush of the same destination wrote either.
  @Test func aDestinationThatKeepsEveryFileNeverRotatesAwayAnEarlierFlushsFile() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let file = directory.appendingPathComponent("run.jsonl").path
    var configuration = JSONLinesFileConfiguration(
      path: file, maximumFileBytes: 110, keptFiles: 1, maxBatchEvents: 50)
    configuration.keepsEveryFileItWrote = true
    let delivery = DestinationDelivery(
      outbox: outbox, destination: JSONLinesFileDestination(configuration: configuration))
    // Flush 1 writes e0-e2 (one file); flush 2 writes e3-e5 after rotating it to PATH.1;
    // flush 3 would delete PATH.1 to rotate PATH: it stops before writing anything.
    for (k, range) in [0..<3, 3..<6, 6..<9].enumerated() {
      try outbox.enqueue(contentsOf: makeEvents(range))
      let report = try await delivery.flush()
      #expect(report.delivered == (k < 2 ? 3 : 0), "flush \(k + 1)")
      #expect((report.stopped != nil) == (k == 2), "flush \(k + 1)")
    }
    #expect(try ids(inFiles: [file + ".1", file], atMost: 110) == (0..<6).map { "e\($0)" })
    #expect(try outbox.counts(destination: "file").pending == 3)
  }

  /// A FIFO at the path is refused at once, with or without a reader (it neither blocks on
  /// open nor fails at fsync after writing); the events stay pending.
  @Test func aFIFOAtTheFilesPathIsRefusedWithoutBlocking() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let file = directory.appendingPathComponent("fifo.jsonl").path
    #expect(mkfifo(file, 0o644) == 0)
    try outbox.enqueue(contentsOf: makeEvents(0..<2))
    let delivery = DestinationDelivery(
      outbox: outbox, destination: JSONLinesFileDestination(configuration: .init(path: file)))
    let report = try await delivery.flush()
    #expect(report.delivered == 0)
    #expect(report.stopped != nil)
    // With a reader holding it open.
    let reader = open(file, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    defer { close(reader) }
    let again = try await delivery.flush()
    #expect(again.delivered == 0)
    #expect(again.stopped?.contains("not a regular file") == true, "\(again.stopped ?? "-")")
    #expect(try outbox.counts(destination: "file").pending == 2)
  }

  /// An outbox of schema version 2 (one uploader: in-flight flags and attempt counts on the
  /// events) opens at version 3 with its attempts and dead letters kept for the server.
  @Test func aVersion2OutboxMigratesItsAttemptsAndDeadLettersToTheServerCursor() async throws {
    do {
      let db = try Database(path: path)
      try db.migrate(Array(Outbox.migrations.prefix(2)))
      try db.execute(
        "INSERT INTO events (id, payload, created_at, in_flight, attempts) VALUES "
          + #"('e0', '{"n":0}', 1, 1, 2), ('e1', '{"n":1}', 2, 0, 0)"#)
      try db.execute(
        "INSERT INTO dead_letters VALUES (9, 'd9', '{}', 'HTTP 413', 5, 3)")
    }
    let outbox = try Outbox(path: path, clock: clock)
    #expect(try outbox.deadLetters().map(\.destination) == ["server"])
    #expect(try outbox.counts().pending == 2)
    let server = FakeTransport(clock: clock)
    _ = try await OutboxUploader(outbox: outbox, transport: server).flush()
    // e0 was attempted twice before: this send is its third.
    #expect(server.sent.map(\.attempt) == [3])
    #expect(server.sent.flatMap(\.ids) == ["e0", "e1"])
    #expect(try outbox.counts().queued == 0)
  }

  /// A destination registered later starts from the oldest queued event; one that is
  /// unregistered no longer holds events back.
  /// A webhook URL's userinfo is sent but never part of a name; a cursor named with it by an
  /// earlier version is renamed, keeping its place, marks, dead letters and counts, and the
  /// password's bytes leave the file.
  @Test func aWebhookCursorNamedWithAPasswordIsRenamedInPlace() async throws {
    let url = try #require(URL(string: "http://user:SECRETPW@127.0.0.1:9/h?q=1"))
    // The query value is hashed too: the first 12 hex digits of HMAC-SHA256 under
    // "geofence webhook query value" of "1", by Python's hmac module.
    let hashedQ = "q=~02cda574f83a"
    #expect(WebhookConfiguration.redacted(url) == "http://127.0.0.1:9/h?" + hashedQ)
    #expect(
      WebhookConfiguration.cursorName(for: url) == "webhook:http://127.0.0.1:9/h?" + hashedQ)
    let plain = try #require(URL(string: "https://hooks.example/a%20b"))
    #expect(WebhookConfiguration.cursorName(for: plain) == "webhook:https://hooks.example/a%20b")
    #expect(WebhookConfiguration.displayName("file:/tmp/a@b") == "file:/tmp/a@b")

    let legacy = "webhook:" + url.absoluteString
    do {
      let outbox = try Outbox(path: path, clock: clock)
      try outbox.register(destination: legacy)
      try outbox.enqueue(contentsOf: makeEvents(0..<4))
      // e0 delivered, e1 dead-lettered, e2 in flight (a mark), e3 pending.
      var batch = try #require(try outbox.takeBatch(limit: 2, destination: legacy))
      try outbox.settle(batch, delivered: ["e0"], rejected: ["e1": "HTTP 422"])
      batch = try #require(try outbox.takeBatch(limit: 1, destination: legacy))
      #expect(batch.events.map(\.id) == ["e2"])
    }
    let raw = { (try? Data(contentsOf: URL(fileURLWithPath: self.path))) ?? Data() }
    #expect(raw().range(of: Data("SECRETPW".utf8)) != nil)

    let outbox = try Outbox(path: path, clock: clock)
    let renamed = try WebhookConfiguration.migrateCursorNames(in: outbox)
    let name = "webhook:http://127.0.0.1:9/h?" + hashedQ
    #expect(renamed.map(\.from) == [legacy] && renamed.map(\.to) == [name])
    #expect(try outbox.destinations() == [name])
    #expect(try outbox.cursor(destination: name) == 2)
    #expect(
      try outbox.counts(destination: name)
        == DestinationCounts(pending: 2, inFlight: 0, delivered: 1, filtered: 0, deadLetters: 1))
    #expect(try outbox.deadLetters().map(\.destination) == [name])
    for suffix in ["", "-wal"] {
      let file = (try? Data(contentsOf: URL(fileURLWithPath: path + suffix))) ?? Data()
      #expect(file.range(of: Data("SECRETPW".utf8)) == nil, "outbox.sqlite\(suffix)")
    }
    // Once renamed, nothing is left to rename.
    #expect(try WebhookConfiguration.migrateCursorNames(in: outbox).isEmpty)
  }

  /// A token in a webhook URL's query is never part of a name: each value is hashed (the
  /// digits by Python's hmac module), a flag without a value kept; two tokens keep two names,
  /// and a name redacts to itself.
  @Test func aWebhookQueryTokenIsHashedInItsName() throws {
    let url = try #require(URL(string: "https://hooks.example/in?token=SECRETTOKEN&flag&e="))
    let name = WebhookConfiguration.cursorName(for: url)
    #expect(name == "webhook:https://hooks.example/in?token=~7a343047fef2&flag&e=")
    #expect(!name.contains("SECRETTOKEN"))
    #expect(WebhookConfiguration.displayName(name) == name)
    let other = try #require(URL(string: "https://hooks.example/in?token=OTHER&flag&e="))
    #expect(WebhookConfiguration.cursorName(for: other) != name)
  }

  /// A legacy cursor whose new name is registered already merges into it: its dead letters
  /// and counts join, and events both have settled leave the outbox.
  @Test func renamingOntoARegisteredCursorMergesTheTwo() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    try outbox.register(destination: "old")
    try outbox.register(destination: "new")
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let old = try #require(try outbox.takeBatch(limit: 3, destination: "old"))
    try outbox.settle(old, delivered: ["e0", "e2"], rejected: ["e1": "HTTP 410"])
    let new = try #require(try outbox.takeBatch(limit: 1, destination: "new"))
    try outbox.settle(new, delivered: ["e0"], rejected: [:])
    try outbox.renameDestination("old", to: "new")
    #expect(try outbox.destinations() == ["new"])
    #expect(try outbox.cursor(destination: "new") == 1)
    #expect(
      try outbox.counts(destination: "new")
        == DestinationCounts(pending: 2, inFlight: 0, delivered: 3, filtered: 0, deadLetters: 1))
    #expect(try outbox.counts().queued == 2)
  }

  /// Every destination gets the same rule: the file is written the readable events, one
  /// line each, and the damaged one is dead-lettered for it alone.
  @Test func anUnreadablePayloadIsDeadLetteredForTheFileToo() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    let file = directory.appendingPathComponent("events.jsonl").path
    let destination = JSONLinesFileDestination(configuration: .init(path: file))
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    try outbox.database.execute(#"UPDATE events SET payload = '{"id":"x"}' WHERE id = 'e1'"#)
    let report = try await DestinationDelivery(outbox: outbox, destination: destination).flush()
    #expect(report.delivered == 2 && report.rejected == 1 && report.stopped == nil)
    let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
    #expect(lines == [#"{"id":"e0","type":"enter","n":0}"#, #"{"id":"e2","type":"enter","n":2}"#])
    let dead = try outbox.deadLetters()
    #expect(dead.map(\.id) == ["e1"] && dead.map(\.destination) == ["file"])
    #expect(
      dead[0].reason
        == #"the stored payload cannot be sent: has an "id" member (the outbox writes it)"#)
  }

  @Test func cursorsHoldEventsUntilEveryDestinationHasThem() async throws {
    let outbox = try Outbox(path: path, clock: clock)
    try outbox.register(destination: "server")
    try outbox.register(destination: "slow")
    try outbox.enqueue(contentsOf: makeEvents(0..<4))
    _ = try await OutboxUploader(outbox: outbox, transport: FakeTransport(clock: clock)).flush()
    #expect(try outbox.counts().queued == 4)
    #expect(try outbox.cursor(destination: "server") == 4)
    #expect(try outbox.cursor(destination: "slow") == 0)
    try outbox.unregister(destination: "slow")
    #expect(try outbox.counts().queued == 0)
    #expect(try outbox.destinations() == ["server"])
  }
}

@Suite struct FlushPolicyTests {
  // Times are hand-computed from the creation times given.
  @Test func countFiresAtTheCountAndNotBefore() {
    let p = FlushPolicy(count: 20, intervalSeconds: nil)
    #expect(!p.isDue(pending: 19, oldestCreatedAt: 0, newestCreatedAt: 5, now: 1e9))
    #expect(p.isDue(pending: 20, oldestCreatedAt: 0, newestCreatedAt: 5, now: 0))
  }

  @Test func intervalCountsFromTheOldestPendingEvent() {
    let p = FlushPolicy(count: nil, intervalSeconds: 30)
    #expect(p.nextDueTime(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125) == 130)
    #expect(!p.isDue(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125, now: 129.999))
    #expect(p.isDue(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125, now: 130))
  }

  @Test func debounceCountsFromTheNewestPendingEvent() {
    let p = FlushPolicy(count: nil, intervalSeconds: nil, debounceSeconds: 2)
    #expect(p.nextDueTime(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125) == 127)
    #expect(!p.isDue(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125, now: 126.5))
    #expect(p.isDue(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125, now: 127))
  }

  @Test func combinedTriggersFireAtTheEarliest() {
    let p = FlushPolicy(count: 20, intervalSeconds: 30, debounceSeconds: 2)
    // Debounce (125 + 2) before interval (100 + 30).
    #expect(p.nextDueTime(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 125) == 127)
    // Interval (100 + 30) before debounce (129 + 2).
    #expect(p.nextDueTime(pending: 3, oldestCreatedAt: 100, newestCreatedAt: 129) == 130)
    #expect(p.nextDueTime(pending: 20, oldestCreatedAt: 100, newestCreatedAt: 129) == -.infinity)
    #expect(p.nextDueTime(pending: 0, oldestCreatedAt: nil, newestCreatedAt: nil) == nil)
    #expect(
      FlushPolicy.manual.nextDueTime(pending: 5, oldestCreatedAt: 1, newestCreatedAt: 2) == nil)
  }
}
