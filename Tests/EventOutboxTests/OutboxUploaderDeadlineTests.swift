import EventOutbox
import Foundation
import GeofenceTestSupport
import Networking
import RetryTiming
import Testing

/// A whole-batch refusal keeps its events, and the deadline bounds an upload call.
@Suite struct OutboxUploaderDeadlineTests {
  let clock = ManualClock()
  let directory = temporaryDirectory()

  func open() throws -> Outbox {
    try Outbox(
      path: directory.appendingPathComponent("outbox.sqlite").path,
      configuration: OutboxConfiguration(maxBatchEvents: 4), clock: clock)
  }

  /// A plain `400` for the batch: the request is refused, not its events. Nothing is split,
  /// nothing dead-lettered, every event stays pending, and the call stops at the first answer.
  @Test func aWholeBatch400KeepsEveryEventPending() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = Array(repeating: FakeTransport.status(400), count: 20)
    try outbox.enqueue(contentsOf: makeEvents(0..<10))
    let report = try await OutboxUploader(
      outbox: outbox, server: URL(string: "http://x.test")!,
      apiKey: "k", transport: transport
    ).flush()
    #expect(report.stopped == .refused(status: 400, message: "fault: injected 400"))
    #expect(transport.sent.count == 1)
    #expect(report.rejected == 0)
    #expect(try outbox.deadLetters().isEmpty)
    #expect(try outbox.counts().pending == 10)
  }

  /// 503 with `Retry-After: 4` against a deadline 10 s away: sends at 0 and 4 s, then the next
  /// wait would end at 12 s, past it: the call stops, events pending. Each request's own
  /// deadline is cut to the time left (10, then 6 s).
  @Test func theDeadlineStopsTheCallWithTheEventsPending() async throws {
    let outbox = try open()
    let transport = FakeTransport(clock: clock)
    transport.script = Array(repeating: FakeTransport.status(503, retryAfter: "4"), count: 20)
    try outbox.enqueue(contentsOf: makeEvents(0..<3))
    let uploader = OutboxUploader(
      outbox: outbox, server: URL(string: "http://x.test")!, apiKey: "k", transport: transport,
      requestTimeoutSeconds: 30)
    let t0 = clock.now()
    uploader.deadline = t0 + 10
    let report = try await uploader.flush()
    #expect(report.stopped == .deadlinePassed(lastFailure: "HTTP 503"))
    #expect(transport.sent.map(\.time) == [t0, t0 + 4, t0 + 8])
    #expect(transport.sent.map(\.request.timeoutSeconds) == [10, 6, 2])
    #expect(try outbox.counts().pending == 3)
    // A call after the deadline sends nothing.
    clock.advance(by: 2)
    let late = try await uploader.flush()
    #expect(late.stopped == .deadlinePassed(lastFailure: nil))
    #expect(transport.sent.count == 3)
  }
}
