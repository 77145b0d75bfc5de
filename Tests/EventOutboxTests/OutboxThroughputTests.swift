import EventOutbox
import Foundation
import GeofenceTestSupport
import RetryTiming
import Testing

/// Figures, printed (not asserted beyond sanity): durable enqueue rate and the cost of
/// reopening an outbox after a crash.
@Suite(.serialized) struct OutboxThroughputTests {
  @Test func durableEnqueueRateAndRestartCost() async throws {
    let clock = ManualClock()
    let directory = temporaryDirectory()
    let path = directory.appendingPathComponent("outbox.sqlite").path
    let events = (0..<2_000).map {
      OutboxEvent(
        id: OutboxEventID.derive(["r\($0 % 50)", "life", "enter", String($0), "dev"]),
        payload: #"{"type":"enter","geofence_id":"r\#($0 % 50)","device_id":"dev","#
          + #""time":"2026-11-30T05:00:00.000Z","latitude":21.3,"longitude":-157.85}"#)
    }
    var outbox: Outbox? = try Outbox(path: path, clock: clock)

    // One transaction (one WAL fsync) per event.
    var start = Date()
    for e in events.prefix(500) { try outbox?.enqueue(e) }
    let single = 500 / Date().timeIntervalSince(start)

    // 20 events per transaction.
    start = Date()
    var i = 500
    while i < 2_000 {
      try outbox?.enqueue(contentsOf: Array(events[i..<min(i + 20, 2_000)]))
      i += 20
    }
    let batched = 1_500 / Date().timeIntervalSince(start)
    #expect(try outbox?.counts().pending == 2_000)

    // A crash with a batch in flight: reopening puts it back to pending.
    let transport = FakeTransport(clock: clock)
    transport.script = [FakeTransport.timeout]
    _ = try await OutboxUploader(
      outbox: outbox!, transport: transport, retryPolicy: RetryPolicy(maximumAttempts: 1)
    ).flush()
    outbox = nil
    start = Date()
    let reopened = try Outbox(path: path, clock: clock)
    let reopenMilliseconds = Date().timeIntervalSince(start) * 1000
    #expect(try reopened.counts().pending == 2_000)
    print(
      "outbox figures: durable enqueue \(Int(single)) events/s one per transaction, "
        + "\(Int(batched)) events/s 20 per transaction; reopen with 2,000 queued "
        + String(format: "%.1f ms", reopenMilliseconds))
  }
}
