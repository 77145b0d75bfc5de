import EventOutbox
import Foundation
import GeofenceTestSupport
import Networking
import RetryTiming
import Testing

/// The wall clock, recording every wait.
final class RecordingClock: EngineClock, @unchecked Sendable {
  private let lock = NSLock()
  private var recorded: [Double] = []
  var sleeps: [Double] { lock.withLock { recorded } }
  func now() -> Double { Date().timeIntervalSince1970 }
  func sleep(seconds: Double) async throws {
    lock.withLock { recorded.append(seconds) }
    try await SystemClock().sleep(seconds: seconds)
  }
}

/// A transport decorator that records when each request left and what came back.
final class RecordingTransport: HTTPTransport, @unchecked Sendable {
  let base: any HTTPTransport
  var sent: [(time: Double, attempt: Int, status: Int?)] = []
  init(_ base: any HTTPTransport) { self.base = base }
  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let time = Date().timeIntervalSince1970
    let attempt = request.headers["X-Attempt"].flatMap { Int($0) } ?? -1
    do {
      let response = try await base.send(request)
      sent.append((time, attempt, response.statusCode))
      return response
    } catch {
      sent.append((time, attempt, nil))
      throw error
    }
  }
}

/// Protocol-valid events.
func serverEvents(_ range: Range<Int>, prefix: String) -> [OutboxEvent] {
  range.map { i in
    OutboxEvent(
      id: "\(prefix)-\(i)",
      payload: #"{"type":"enter","geofence_id":"g\#(i % 7)","device_id":"dev1","#
        + #""time":"2026-11-30T05:00:\#(String(format: "%02d", i % 60)).000Z","#
        + #""latitude":21.3,"longitude":-157.85}"#)
  }
}

@Suite(
  .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
final class OutboxServerTests {
  let server: ReferenceServer
  let clock = RecordingClock()
  let directory = temporaryDirectory()
  static let key = "k1"

  init() async throws { server = try await ReferenceServer.start(keys: [Self.key]) }
  deinit { server.stop() }

  func makeUploader(batch: Int = 20, timeout: Double = 10) throws -> (
    Outbox, OutboxUploader, RecordingTransport
  ) {
    let outbox = try Outbox(
      path: directory.appendingPathComponent("outbox.sqlite").path,
      configuration: OutboxConfiguration(maxBatchEvents: batch), clock: clock)
    let transport = RecordingTransport(URLSessionTransport())
    let uploader = OutboxUploader(
      outbox: outbox, server: server.baseURL, apiKey: Self.key, transport: transport,
      retryPolicy: RetryPolicy(maximumAttempts: 6, baseDelaySeconds: 0.1, maximumDelaySeconds: 0.5),
      requestTimeoutSeconds: timeout, random: SeededGenerator(seed: 7))
    return (outbox, uploader, transport)
  }

  func storedCounts() async throws -> (events: Int, ids: [String], receipts: [Int]) {
    let report = try await server.events(key: Self.key)
    let events = report["events"] as? [[String: Any]] ?? []
    return (
      report["event_count"] as? Int ?? -1, events.compactMap { $0["id"] as? String },
      events.compactMap { $0["count"] as? Int }
    )
  }

  @Test func timeoutAfterTheServerCommittedIsStoredOnce() async throws {
    let (outbox, uploader, transport) = try makeUploader(timeout: 1)
    try outbox.enqueue(contentsOf: serverEvents(0..<5, prefix: "t"))
    try await server.armFault(
      ["path": "/v1/events", "kind": "timeout", "delay_s": 3, "key": Self.key, "count": 1])
    let report = try await uploader.flush()
    #expect(transport.sent.map(\.status) == [nil, 200])
    #expect(transport.sent.map(\.attempt) == [1, 2])
    #expect(report.duplicates == 5 && report.accepted == 0)
    let stored = try await storedCounts()
    #expect(stored.events == 5 && stored.ids == (0..<5).map { "t-\($0)" })
    #expect(stored.receipts == [2, 2, 2, 2, 2])  // two receipts, one stored event each
    #expect(try outbox.counts().queued == 0)
  }

  @Test func connectionDroppedAfterCommitIsStoredOnce() async throws {
    let (outbox, uploader, _) = try makeUploader()
    try outbox.enqueue(contentsOf: serverEvents(0..<3, prefix: "d"))
    try await server.armFault(["path": "/v1/events", "kind": "commit_then_drop", "key": Self.key])
    let report = try await uploader.flush()
    #expect(report.retries == 1 && report.duplicates == 3)
    #expect(try await storedCounts().events == 3)
    #expect(try outbox.counts().queued == 0)
  }

  @Test func tooManyRequestsWaitsForRetryAfter() async throws {
    let (outbox, uploader, transport) = try makeUploader()
    try outbox.enqueue(contentsOf: serverEvents(0..<4, prefix: "r"))
    try await server.armFault(
      ["path": "/v1/events", "kind": "429", "retry_after": 2, "key": Self.key, "count": 1])
    let report = try await uploader.flush()
    #expect(transport.sent.map(\.status) == [429, 200])
    #expect(transport.sent[1].time - transport.sent[0].time >= 2)
    #expect(clock.sleeps.count == 1 && clock.sleeps[0] >= 2)
    #expect(report.accepted == 4)
    #expect(try await storedCounts().receipts == [1, 1, 1, 1])
  }

  @Test func serviceUnavailableIsRetried() async throws {
    let (outbox, uploader, transport) = try makeUploader()
    try outbox.enqueue(contentsOf: serverEvents(0..<3, prefix: "u"))
    try await server.armFault(
      ["path": "/v1/events", "kind": "503", "retry_after": 1, "key": Self.key, "count": 2])
    let report = try await uploader.flush()
    #expect(transport.sent.map(\.status) == [503, 503, 200])
    #expect(transport.sent.map(\.attempt) == [1, 2, 3])
    #expect(report.accepted == 3)
    let events = try await server.events(key: Self.key)["events"] as? [[String: Any]] ?? []
    #expect(events.map { $0["attempts"] as? [Int] ?? [] } == Array(repeating: [3], count: 3))
  }

  @Test func poisonEventIsDeadLetteredAndTheOthersDelivered() async throws {
    let (outbox, uploader, _) = try makeUploader(batch: 10)
    var events = serverEvents(0..<6, prefix: "p")
    events[2].payload =
      #"{"type":"leave","geofence_id":"g","device_id":"dev1","#
      + #""time":"yesterday","latitude":21.3,"longitude":-157.85}"#
    try outbox.enqueue(contentsOf: events)
    try outbox.enqueue(contentsOf: serverEvents(6..<8, prefix: "p"))
    let report = try await uploader.flush()
    #expect(report.rejected == 1 && report.accepted == 7)
    let dead = try outbox.deadLetters()
    #expect(dead.map(\.id) == ["p-2"])
    #expect(!dead[0].reason.isEmpty)
    #expect(try await storedCounts().ids == ["p-0", "p-1", "p-3", "p-4", "p-5", "p-6", "p-7"])
    #expect(try outbox.counts().queued == 0)
  }
}
