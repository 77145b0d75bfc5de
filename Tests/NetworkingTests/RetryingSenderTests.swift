import Foundation
import GeofenceTestSupport
import Networking
import RetryTiming
import Testing

/// Answers from a script, in order, recording each request.
final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
  private let lock = NSLock()
  private var script: [Result<HTTPResponse, TransportError>]
  private var received: [HTTPRequest] = []
  init(_ script: [Result<HTTPResponse, TransportError>]) { self.script = script }
  var requests: [HTTPRequest] { lock.withLock { received } }
  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let next: Result<HTTPResponse, TransportError> = lock.withLock {
      received.append(request)
      return script.isEmpty ? .success(HTTPResponse(statusCode: 200)) : script.removeFirst()
    }
    return try next.get()
  }
}

/// Status 200 is success, 400 fails, everything else (and no answer) is retried.
func classify(_ result: Result<HTTPResponse, TransportError>) -> RetryVerdict<Int, String> {
  switch result {
  case .failure(let error): return .retry("\(error)")
  case .success(let response) where response.statusCode == 200: return .success(200)
  case .success(let response) where response.statusCode == 400: return .fail("HTTP 400")
  case .success(let response): return .retry("HTTP \(response.statusCode)")
  }
}

func status(_ code: Int, retryAfter: String? = nil) -> Result<HTTPResponse, TransportError> {
  .success(HTTPResponse(statusCode: code, headers: retryAfter.map { ["Retry-After": $0] } ?? [:]))
}

@Suite struct RetryingSenderTests {
  let url = URL(string: "http://127.0.0.1:9/x")!
  let policy = RetryPolicy(
    maximumAttempts: 4, baseDelaySeconds: 1, maximumDelaySeconds: 8, maximumRetryAfterSeconds: 60)

  /// Backoff draws replayed from the same seed: full jitter under 1, 2, 4 s.
  func units(seed: UInt64, count: Int) -> [Double] {
    var g = SeededGenerator(seed: seed)
    return (0..<count).map { _ in Double(g.next() >> 11) * 0x1p-53 }
  }

  @Test func retriesWithExactWaitsUntilSuccess() async throws {
    let clock = ManualClock()
    let transport = ScriptedTransport([
      status(503), .failure(.timedOut), status(429, retryAfter: "9"),
    ])
    var sender = RetryingSender(
      transport: transport, policy: policy, clock: clock, random: SeededGenerator(seed: 11))
    let outcome = await sender.send(
      request: { attempt in HTTPRequest(url: url, headers: ["X-Attempt": "\(attempt)"]) },
      classify: classify)
    let u = units(seed: 11, count: 3)
    let expected = [u[0] * 1, u[1] * 2, max(9, u[2] * 4)]
    guard case .succeeded(200) = outcome.ending else {
      Issue.record("ended \(outcome.ending)")
      return
    }
    #expect(outcome.attempts == 4)
    #expect(outcome.waits == expected)
    #expect(clock.sleeps == expected)
    #expect(transport.requests.map { $0.headers["X-Attempt"] } == ["1", "2", "3", "4"])
  }

  /// RFC 9110 §10.2.3: `Retry-After` as an HTTP-date is the wait from the clock's now. The
  /// manual clock starts at Mon, 30 Nov 2026 05:00:00 GMT; the date is 30 s later.
  @Test func aRetryAfterDateIsReadAgainstTheClock() async throws {
    let clock = ManualClock(now: 1_796_014_800)
    let transport = ScriptedTransport([status(503, retryAfter: "Mon, 30 Nov 2026 05:00:30 GMT")])
    var sender = RetryingSender(
      transport: transport, policy: policy, clock: clock, random: SeededGenerator(seed: 1))
    let outcome = await sender.send(request: { _ in HTTPRequest(url: url) }, classify: classify)
    #expect(outcome.waits == [30] && outcome.attempts == 2)
    #expect(clock.now() == 1_796_014_830)
  }

  @Test func aRetryAfterBeyondThePolicyStopsWithoutWaiting() async throws {
    let clock = ManualClock(now: 1_796_014_800)
    let transport = ScriptedTransport([status(503, retryAfter: "Mon, 30 Nov 2026 06:00:00 GMT")])
    var sender = RetryingSender(
      transport: transport, policy: policy, clock: clock, random: SeededGenerator(seed: 1))
    let outcome = await sender.send(request: { _ in HTTPRequest(url: url) }, classify: classify)
    guard case .retryAfterTooLong(let seconds, let last) = outcome.ending else {
      Issue.record("ended \(outcome.ending)")
      return
    }
    #expect(seconds == 3600 && last == "HTTP 503")
    #expect(outcome.attempts == 1 && outcome.waits.isEmpty && clock.sleeps.isEmpty)
  }

  @Test func attemptsRunOutAfterThePolicysLimit() async throws {
    let clock = ManualClock()
    let transport = ScriptedTransport(Array(repeating: status(500), count: 10))
    var sender = RetryingSender(
      transport: transport, policy: policy, clock: clock, random: SeededGenerator(seed: 3))
    let outcome = await sender.send(request: { _ in HTTPRequest(url: url) }, classify: classify)
    guard case .attemptsExhausted(let last) = outcome.ending else {
      Issue.record("ended \(outcome.ending)")
      return
    }
    let u = units(seed: 3, count: 3)
    #expect(last == "HTTP 500" && outcome.attempts == 4 && transport.requests.count == 4)
    #expect(outcome.waits == [u[0] * 1, u[1] * 2, u[2] * 4])
  }

  @Test func aFailVerdictStopsAtOnce() async throws {
    let clock = ManualClock()
    let transport = ScriptedTransport([status(400, retryAfter: "5")])
    var sender = RetryingSender(transport: transport, policy: policy, clock: clock)
    let outcome = await sender.send(request: { _ in HTTPRequest(url: url) }, classify: classify)
    guard case .failed("HTTP 400") = outcome.ending else {
      Issue.record("ended \(outcome.ending)")
      return
    }
    #expect(outcome.attempts == 1 && clock.sleeps.isEmpty)
    #expect(outcome.lastRetryAfterSeconds == 5)
  }

  @Test func cancellationWhileWaitingEndsTheSend() async throws {
    let clock = ManualClock()
    let transport = ScriptedTransport(Array(repeating: status(503), count: 10))
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      var sender = RetryingSender(transport: transport, policy: policy, clock: clock)
      return await sender.send(request: { _ in HTTPRequest(url: url) }, classify: classify)
    }
    let outcome = await task.value
    guard case .cancelled(let last) = outcome.ending else {
      Issue.record("ended \(outcome.ending)")
      return
    }
    #expect(last == "HTTP 503" && outcome.attempts == 1 && clock.sleeps.isEmpty)
  }
}
