import Foundation
import GeofenceTestSupport
import Testing

@testable import EventOutbox
import Networking
import RetryTiming

@Suite struct OutboxUploaderTests {
  let clock = ManualClock()
  let directory = temporaryDirectory()
  var path: String { directory.appendingPathComponent("outbox.sqlite").path }

  func open(_ configuration: OutboxConfiguration = OutboxConfiguration()) throws -> Outbox {
    try Outbox(path: path, configuration: configuration, clock: clock)
  }

  @Test func batchesBySizeThenByInterval() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    let uploader = OutboxUploader(outbox: outbox, transport: transport)
    try outbox.enqueue(contentsOf: makeEvents(0..<45))
    try await uploader.sendDueBatches()
    #expect(transport.sent.map(\.ids.count) == [20, 20])
    clock.advance(by: 29.9)
    try await uploader.sendDueBatches()
    #expect(transport.sent.count == 2)
    clock.advance(by: 0.1)
    try await uploader.sendDueBatches()
    #expect(transport.sent.map(\.ids.count) == [20, 20, 5])
    // Everything in enqueue order, each id once.
    #expect(transport.sent.flatMap(\.ids) == (0..<45).map { "e\($0)" })
    #expect(
      try outbox.counts()
        == OutboxCounts(
          pending: 0, inFlight: 0, deadLetters: 0, evicted: 0, delivered: 45, deleted: 0))
  }

  @Test func intervalCountsFromTheOldestPendingEvent() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    let uploader = OutboxUploader(outbox: outbox, transport: transport)
    try outbox.enqueue(contentsOf: makeEvents(0..<1))
    clock.advance(by: 20)
    try outbox.enqueue(contentsOf: makeEvents(1..<3))
    clock.advance(by: 9)
    try await uploader.sendDueBatches()
    #expect(transport.sent.isEmpty)
    clock.advance(by: 1)
    try await uploader.sendDueBatches()
    #expect(transport.sent.map(\.ids) == [["e0", "e1", "e2"]])
  }

  @Test func flushSendsEverythingNowInOrder() async throws {
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 3))
    let transport = FakeTransport(clock: clock)
    try outbox.enqueue(contentsOf: makeEvents(0..<7))
    let report = try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(transport.sent.map(\.ids) == [["e0", "e1", "e2"], ["e3", "e4", "e5"], ["e6"]])
    #expect(report.accepted == 7 && report.batches == 3 && report.stopped == nil)
    // The uploader's own request: POST {server}/v1/events with the key, JSON and attempt 1.
    let request = transport.sent[0].request
    #expect(request.method == "POST")
    #expect(request.url.absoluteString == "http://127.0.0.1:9/v1/events")
    #expect(request.headers["Authorization"] == "Bearer k1")
    #expect(request.headers["Content-Type"] == "application/json")
    #expect(request.headers["X-Attempt"] == "1")
    #expect(request.timeoutSeconds == 10)
  }

  @Test func wireFormatPutsTheIdFirstAndKeepsThePayload() async throws {
    let body = OutboxUploader.body([
      OutboxEvent(id: "a\"b", payload: #" { "type" : "exit", "x": [1, {"y": null}] } "#),
      OutboxEvent(id: "c", payload: "{}"),
    ])
    let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
    let events = try #require(object?["events"] as? [[String: Any]])
    #expect(events.count == 2)
    #expect(events[0]["id"] as? String == "a\"b")
    #expect(events[0]["type"] as? String == "exit")
    #expect(events[1].count == 1 && events[1]["id"] as? String == "c")
    #expect(String(decoding: body, as: UTF8.self).hasPrefix(#"{"events":[{"id":"a\"b","#))
  }

  @Test func rejectedEventsAreDeadLetteredAndDoNotBlockLaterOnes() async throws {
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 4))
    let transport = FakeTransport(clock: clock)
    transport.script = [
      { [unowned transport] ids in
        FakeTransport.accept(ids, into: &transport.stored, rejecting: ["e2": "invalid time"])
      }
    ]
    try outbox.enqueue(contentsOf: makeEvents(0..<6))
    let report = try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(report.rejected == 1 && report.accepted == 5)
    #expect(transport.stored == ["e0", "e1", "e3", "e4", "e5"])
    let dead = try outbox.deadLetters()
    #expect(dead.map(\.id) == ["e2"] && dead[0].reason == "invalid time")
    #expect(dead[0].payload == #"{"type":"enter","n":2}"#)
    let counts = try outbox.counts()
    #expect(counts.queued == 0 && counts.deadLetters == 1 && counts.delivered == 5)
  }

  /// A server's reasons and messages reach the dead letters and the report escaped, cut and
  /// without the API key it echoed.
  @Test func theServersTextIsEscapedAndTheKeyRedactedBeforeItIsStored() async throws {
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 2))
    let transport = FakeTransport(clock: clock)
    transport.script = [
      { [unowned transport] ids in
        FakeTransport.accept(
          ids, into: &transport.stored,
          rejecting: [
            "e0": "x\u{1B}[2Jcleared\nforged: line",
            "e1": "Bearer SECRETKEY123 " + String(repeating: "y", count: 400),
          ])
      },
      { _ in
        FakeTransport.json(
          401,
          [
            "error": [
              "code": "unauthorized", "message": "key Bearer SECRETKEY123\u{1B}]0;pwned\u{07}",
            ]
          ])
      },
    ]
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let report = try await OutboxUploader(
      outbox: outbox, server: fakeServer, apiKey: "SECRETKEY123", transport: transport
    ).flush()
    let dead = try outbox.deadLetters()
    #expect(dead.map(\.id) == ["e0", "e1"])
    #expect(dead[0].reason == #"x\u{1B}[2Jcleared\nforged: line"#)
    #expect(
      dead[1].reason
        == "Bearer [redacted] " + String(repeating: "y", count: 282) + "... (418 characters)")
    #expect(
      report.stopped
        == .refused(
          status: 401, message: #"unauthorized: key Bearer [redacted]\u{1B}]0;pwned\u{07}"#))
    #expect(try outbox.counts().pending == 1)
  }

  /// A payload damaged in the file (`{bad`) is dead-lettered alone before the request is
  /// built; the rest of its batch is sent in a body that parses, and the queue drains.
  @Test func anUnreadablePayloadIsDeadLetteredAloneAndTheRestIsSent() async throws {
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 3))
    let transport = FakeTransport(clock: clock)
    try outbox.enqueue(contentsOf: makeEvents(0..<5))
    try outbox.database.execute("UPDATE events SET payload = '{bad' WHERE id = 'e0'")
    try outbox.database.execute(#"UPDATE events SET payload = '["a"]' WHERE id = 'e4'"#)
    let report = try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(transport.sent.map(\.ids) == [["e1", "e2"], ["e3"]])
    for sent in transport.sent {
      #expect((try? JSONSerialization.jsonObject(with: sent.request.body ?? Data())) != nil)
    }
    #expect(transport.sent.map(\.attempt) == [1, 1])
    #expect(report.accepted == 3 && report.rejected == 2 && report.stopped == nil)
    let dead = try outbox.deadLetters()
    #expect(dead.map(\.id) == ["e0", "e4"])
    #expect(
      dead.map(\.reason) == [
        "the stored payload cannot be sent: not JSON",
        "the stored payload cannot be sent: not a JSON object",
      ])
    #expect(dead[0].payload == "{bad")
    #expect(try outbox.counts().queued == 0)
  }

  struct Contradiction: CustomTestStringConvertible, Sendable {
    var name: String
    var answer: @Sendable ([String]) -> [String: Any]
    var why: String
    var testDescription: String { name }
  }

  static let contradictions: [Contradiction] = [
    Contradiction(
      name: "every id accepted and rejected",
      answer: {
        ["accepted": $0, "duplicates": [], "rejected": $0.map { ["id": $0, "reason": "x"] }]
      },
      why: #"it lists "e0" in both accepted and rejected"#),
    Contradiction(
      name: "ids twice and also duplicates",
      answer: { ["accepted": $0 + $0, "duplicates": $0, "rejected": []] },
      why: #"it lists "e0" twice in accepted"#),
    Contradiction(
      name: "accepted and duplicate",
      answer: { ["accepted": $0, "duplicates": [$0[1]], "rejected": []] },
      why: #"it lists "e1" in both accepted and duplicates"#),
    Contradiction(
      name: "an id never sent",
      answer: {
        ["accepted": Array($0.dropLast()) + ["ev-notours"], "duplicates": [], "rejected": []]
      },
      why: #"it lists "ev-notours" in accepted, an id the batch did not send"#),
    Contradiction(
      name: "a number for an id",
      answer: { _ in ["accepted": [1], "duplicates": [], "rejected": []] },
      why: "unreadable body"),
  ]

  /// A `2xx` that is not a partition of the sent ids settles nothing: it is retried as an
  /// unreadable body, and once the server answers consistently, each event counts once.
  @Test(arguments: contradictions)
  func aContradictoryAnswerSettlesNothingAndIsRetried(_ c: Contradiction) async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    let bad: FakeTransport.Responder = { ids in FakeTransport.json(200, c.answer(ids)) }
    transport.script = Array(repeating: bad, count: 3)
    try outbox.enqueue(contentsOf: makeEvents(0..<4))
    let uploader = OutboxUploader(
      outbox: outbox, transport: transport, retryPolicy: RetryPolicy(maximumAttempts: 3))
    let first = try await uploader.flush()
    let why =
      c.why == "unreadable body"
      ? "HTTP 200 with an unreadable body"
      : "HTTP 200 with an inconsistent answer: \(c.why)"
    #expect(first.stopped == .retriesExhausted(lastFailure: why))
    #expect(first.accepted == 0 && first.duplicates == 0 && first.rejected == 0)
    #expect(try outbox.counts().pending == 4)
    #expect(try outbox.deadLetters().isEmpty)
    #expect(transport.sent.count == 3)
    // The server comes to its senses: every event once.
    let second = try await uploader.flush()
    #expect(second.accepted == 4 && second.stopped == nil)
    #expect(transport.stored == ["e0", "e1", "e2", "e3"])
    #expect(try outbox.counts().queued == 0)
  }

  /// A rejection whose `id` is `null` (an event without a usable id, as the protocol allows)
  /// names none of the batch: the rest of the answer stands.
  @Test func aRejectionWithANullIDNamesNoEvent() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = [
      { ids in
        FakeTransport.json(
          200,
          ["accepted": ids, "duplicates": [], "rejected": [["id": NSNull(), "reason": "no id"]]])
      }
    ]
    try outbox.enqueue(contentsOf: makeEvents(0..<2))
    let report = try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(report.accepted == 2 && report.rejected == 0 && report.stopped == nil)
  }

  @Test func retryWaitsAreExactAndRetryAfterIsHonoured() async throws {
    let seed: UInt64 = 0x5EED
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = [
      FakeTransport.status(503), FakeTransport.status(429, retryAfter: "7"), FakeTransport.timeout,
      FakeTransport.status(502), FakeTransport.status(503, retryAfter: "0.5"),
    ]
    let policy = RetryPolicy(maximumAttempts: 10, baseDelaySeconds: 1, maximumDelaySeconds: 4)
    let uploader = OutboxUploader(
      outbox: outbox, transport: transport, retryPolicy: policy,
      random: SeededGenerator(seed: seed))
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let start = clock.now()
    let report = try await uploader.flush()

    // The same generator, replayed: full jitter under 1, 2, 4, 4 (capped), 4 (capped).
    var g = SeededGenerator(seed: seed)
    func unit() -> Double { Double(g.next() >> 11) * 0x1p-53 }
    let expected = [
      unit() * 1, max(7, unit() * 2), unit() * 4, unit() * 4, max(0.5, unit() * 4),
    ]
    #expect(clock.sleeps == expected, "seed \(seed)")
    #expect(report.retries == 5 && report.requests == 6 && report.accepted == 3)
    #expect(report.waitedSeconds == expected.reduce(0, +))
    // Nothing was sent before Retry-After elapsed.
    #expect(transport.sent[2].time - transport.sent[1].time >= 7)
    // Every attempt: same events, same order, same idempotency key, X-Attempt 1, 2, ...
    #expect(transport.sent.map(\.attempt) == [1, 2, 3, 4, 5, 6])
    #expect(Set(transport.sent.map(\.ids)).count == 1)
    #expect(Set(transport.sent.map(\.idempotencyKey)).count == 1)
    var t = start
    var times = [t]
    for w in expected {
      t += w
      times.append(t)
    }
    #expect(transport.sent.map(\.time) == times)
  }

  /// A `Retry-After` above `maximumRetryAfterSeconds` is not slept through: the call stops at
  /// once, the events pending, and the next call continues the attempt count.
  @Test func longRetryAfterStopsTheCallWithEventsPending() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = [FakeTransport.status(503, retryAfter: "3600")]
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let uploader = OutboxUploader(
      outbox: outbox, transport: transport, random: SeededGenerator(seed: 3))
    let report = try await uploader.flush()
    #expect(report.stopped == .deferred(retryAfterSeconds: 3600))
    #expect(
      report.stopped?.description
        == "server asked to retry in 3600 s (Retry-After), longer than one call waits")
    #expect(clock.sleeps.isEmpty && report.waitedSeconds == 0 && report.retries == 0)
    #expect(transport.sent.count == 1)
    let counts = try outbox.counts()
    #expect(counts.pending == 3 && counts.inFlight == 0)
    // Later: the same events, attempt 2, delivered.
    clock.advance(by: 3600)
    let later = try await uploader.flush()
    #expect(later.accepted == 3 && later.stopped == nil)
    #expect(transport.sent.map(\.attempt) == [1, 2])
    #expect(transport.sent[0].ids == transport.sent[1].ids)
  }

  /// Up to the limit `Retry-After` is waited out; an answer that leaves events unanswered
  /// with a longer one stops the call too.
  @Test func retryAfterAtTheLimitIsWaitedOut() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = [
      FakeTransport.status(429, retryAfter: "300"),
      { ids in
        // Accepts the first event only, and asks for a pause of 301 s.
        FakeTransport.json(
          200, ["accepted": [ids[0]], "duplicates": [], "rejected": []],
          headers: ["retry-after": "301"])
      },
    ]
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let report = try await OutboxUploader(
      outbox: outbox, transport: transport, random: SeededGenerator(seed: 4)
    ).flush()
    #expect(clock.sleeps.count == 1 && clock.sleeps[0] == 300)
    #expect(report.accepted == 1 && report.stopped == .deferred(retryAfterSeconds: 301))
    #expect(try outbox.counts().pending == 2)
  }

  /// A server that answers 2xx but leaves events out is retried with growing backoff, and
  /// the call gives up after the policy's attempts (it used to loop for as long as the server
  /// answered so, every wait drawn for the first retry).
  @Test func answersThatLeaveEventsOutExhaustTheRetries() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    let empty: FakeTransport.Responder = { _ in
      FakeTransport.json(200, ["accepted": [], "duplicates": [], "rejected": []])
    }
    transport.script = Array(repeating: empty, count: 40) + [FakeTransport.status(401)]
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let seed: UInt64 = 11
    let policy = RetryPolicy(maximumAttempts: 3, baseDelaySeconds: 1, maximumDelaySeconds: 60)
    let report = try await OutboxUploader(
      outbox: outbox, transport: transport, retryPolicy: policy,
      random: SeededGenerator(seed: seed)
    ).flush()
    #expect(transport.sent.count == 3)
    #expect(report.stopped == .retriesExhausted(lastFailure: "3 events missing from the answer"))
    #expect(report.retries == 2)
    var g = SeededGenerator(seed: seed)
    let expected = [policy.backoff(retry: 1, using: &g), policy.backoff(retry: 2, using: &g)]
    #expect(clock.sleeps == expected)
    #expect(try outbox.counts().pending == 3)
  }

  /// A complete answer ends a run of partial ones: the count starts again.
  @Test func aCompleteAnswerResetsThePartialCount() async throws {
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 2))
    let transport = FakeTransport(clock: clock)
    let firstOnly: FakeTransport.Responder = { ids in
      FakeTransport.accept([ids[0]], into: &transport.stored)
    }
    let all: FakeTransport.Responder = { ids in FakeTransport.accept(ids, into: &transport.stored) }
    transport.script = [firstOnly, all, firstOnly, all]
    try outbox.enqueue(contentsOf: makeEvents(0..<6))
    let report = try await OutboxUploader(
      outbox: outbox, transport: transport, retryPolicy: RetryPolicy(maximumAttempts: 2),
      random: SeededGenerator(seed: 2)
    ).flush()
    // Two partial answers, but not in a row: the call delivers everything.
    #expect(
      transport.sent.map(\.ids) == [["e0", "e1"], ["e1", "e2"], ["e3", "e4"], ["e4", "e5"]])
    #expect(report.stopped == nil)
    #expect(report.accepted == 6 && report.retries == 2)
    #expect(transport.stored == (0..<6).map { "e\($0)" })
  }

  /// A `Retry-After` given as an HTTP date is read against the outbox's clock: 12 s ahead of
  /// it is a 12 s wait (the backoff, under 1 s, loses).
  @Test func retryAfterAsHTTPDateIsWaitedOnTheClock() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    // The clock starts at 1_796_014_800 = Mon, 30 Nov 2026 05:00:00 GMT.
    transport.script = [FakeTransport.status(503, retryAfter: "Mon, 30 Nov 2026 05:00:12 GMT")]
    try outbox.enqueue(contentsOf: makeEvents(0..<2))
    let report = try await OutboxUploader(
      outbox: outbox, transport: transport, random: SeededGenerator(seed: 2)
    ).flush()
    #expect(clock.sleeps == [12])
    #expect(report.accepted == 2 && report.retries == 1 && report.waitedSeconds == 12)
    #expect(transport.sent.map(\.time) == [1_796_014_800, 1_796_014_812])
  }

  @Test func answerLostAfterCommitIsDeliveredOnce() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = [transport.commitThenTimeout()]
    try outbox.enqueue(contentsOf: makeEvents(0..<5))
    let report = try await OutboxUploader(
      outbox: outbox, transport: transport, random: SeededGenerator(seed: 1)
    ).flush()
    #expect(transport.stored == (0..<5).map { "e\($0)" })
    #expect(report.duplicates == 5 && report.accepted == 0 && report.retries == 1)
    #expect(try outbox.counts().queued == 0)
  }

  @Test func givesUpAfterMaxAttemptsAndKeepsEvents() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = Array(repeating: FakeTransport.status(500), count: 3)
    try outbox.enqueue(contentsOf: makeEvents(0..<2))
    let report = try await OutboxUploader(
      outbox: outbox, transport: transport, retryPolicy: RetryPolicy(maximumAttempts: 3),
      random: SeededGenerator(seed: 2)
    ).flush()
    #expect(report.stopped == .retriesExhausted(lastFailure: "HTTP 500"))
    #expect(transport.sent.count == 3)
    #expect(try outbox.counts().pending == 2)
    // The next call continues the attempt count.
    try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(transport.sent.map(\.attempt) == [1, 2, 3, 4])
  }

  @Test func unauthorizedStopsWithoutLosingEvents() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = [FakeTransport.status(401)]
    try outbox.enqueue(contentsOf: makeEvents(0..<2))
    let report = try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(report.stopped == .refused(status: 401, message: "fault: injected 401"))
    #expect(try outbox.counts().pending == 2)
    #expect(clock.sleeps.isEmpty)
  }

  @Test func tooLargeBatchesAreSplitAndASingleTooLargeEventIsDeadLettered() async throws {
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 8))
    let transport = FakeTransport(clock: clock)
    // The server takes at most 3 events; e5 alone is too large.
    transport.script = Array(
      repeating: { [unowned transport] ids in
        if ids.count > 3 || ids == ["e5"] {
          return FakeTransport.json(413, ["error": ["code": "payload_too_large", "message": "m"]])
        }
        if ids.contains("e5") {
          return FakeTransport.json(413, ["error": ["code": "payload_too_large", "message": "m"]])
        }
        return FakeTransport.accept(ids, into: &transport.stored)
      }, count: 20)
    try outbox.enqueue(contentsOf: makeEvents(0..<8))
    let report = try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(transport.stored == ["e0", "e1", "e2", "e3", "e4", "e6", "e7"])
    #expect(try outbox.deadLetters().map(\.reason) == ["HTTP 413: payload_too_large: m"])
    #expect(report.rejected == 1 && report.stopped == nil)
  }

  @Test func restartReturnsInFlightEventsToPendingAndSendsThemFirst() async throws {
    do {
      let outbox = try open(OutboxConfiguration(maxBatchEvents: 3))
      try outbox.enqueue(contentsOf: makeEvents(0..<5))
      // A batch is marked in flight, then the process dies before the answer.
      let batch = try #require(try outbox.takeBatch(limit: 3))
      #expect(batch.events.map(\.id) == ["e0", "e1", "e2"])
      try outbox.enqueue(contentsOf: makeEvents(5..<6))
      #expect(try outbox.counts().inFlight == 3)
    }
    let outbox = try open(OutboxConfiguration(maxBatchEvents: 3))
    #expect(try outbox.counts().inFlight == 0)
    #expect(try outbox.counts().pending == 6)
    let transport = FakeTransport(clock: clock)
    try await OutboxUploader(outbox: outbox, transport: transport).flush()
    #expect(transport.sent.map(\.ids) == [["e0", "e1", "e2"], ["e3", "e4", "e5"]])
    // The interrupted batch is a retry: X-Attempt continues from the stored count.
    #expect(transport.sent.map(\.attempt) == [2, 1])
  }
}
