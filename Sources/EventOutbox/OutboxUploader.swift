import Foundation
import RetryTiming

/// What one upload call did.
public struct UploadReport: Hashable, Sendable {
  /// Batches settled (answered with a usable 2xx, or dead-lettered whole).
  public var batches = 0
  /// Requests sent, retries included.
  public var requests = 0
  /// Events the server listed as accepted.
  public var accepted = 0
  /// Events the server listed as duplicates (delivered earlier).
  public var duplicates = 0
  /// Events dead-lettered.
  public var rejected = 0
  /// Retries (requests after a failed one).
  public var retries = 0
  /// Total time waited before retries, seconds on the outbox's clock.
  public var waitedSeconds = 0.0
  /// Why the call stopped early with events still pending, if it did.
  public var stopped: UploadStop?

  public init() {}
}

/// Why an upload call stopped with events still pending.
public enum UploadStop: Hashable, Sendable, CustomStringConvertible {
  /// A batch failed ``RetryPolicy/maximumAttempts`` times in a row; the last failure.
  case retriesExhausted(lastFailure: String)
  /// The server refused the request as a whole in a way retrying cannot fix (401, 403, 404,
  /// ...): the status and the error body's message.
  case refused(status: Int, message: String)
  /// The server asked, with `Retry-After`, for a longer pause than
  /// ``RetryPolicy/maximumRetryAfterSeconds``: the seconds it asked for. Call again after them.
  case deferred(retryAfterSeconds: Double)

  public var description: String {
    switch self {
    case .retriesExhausted(let f): return "gave up after repeated failures (last: \(f))"
    case .refused(let status, let message): return "server refused the upload: \(status) \(message)"
    case .deferred(let seconds):
      let shown = seconds.rounded(.up)
      let text = shown < 1e15 ? String(Int(shown)) : "\(seconds)"
      return "server asked to retry in \(text) s (Retry-After), longer than one call waits"
    }
  }
}

/// Sends the outbox's events in batches and applies the answers.
///
/// ## Rules
/// - A batch is the first ``OutboxConfiguration/maxBatchEvents`` pending events in enqueue
///   order, marked in flight before it is sent. Retries of a batch send the same events with
///   the same ids in the same order, with `X-Attempt` incremented (the count is kept in the
///   database, so it continues after a restart) and the same `Idempotency-Key`.
/// - `2xx`: `accepted` and `duplicates` leave the outbox; each `rejected` entry goes to the
///   dead-letter table with its reason; events the answer does not mention go back to pending
///   and head the next batch, after the backoff: such an answer counts as a failed attempt,
///   and ``RetryPolicy/maximumAttempts`` of them in a row stop the call with
///   ``UploadStop/retriesExhausted(lastFailure:)``.
/// - Retried (see ``RetryPolicy``): timeouts, connection failures, `408`, `429`, `5xx`, and
///   `2xx` with an unreadable body. The wait is `max(Retry-After, backoff)` on the injected
///   clock; a `Retry-After` above ``RetryPolicy/maximumRetryAfterSeconds`` stops the call with
///   ``UploadStop/deferred(retryAfterSeconds:)`` instead, the events pending.
/// - `413` and `400` on a batch of several events: the batch is split in half and the first
///   half sent again; on a single event, the event is dead-lettered with the server's message.
/// - Any other status (`401`, `403`, `404`, ...): the call stops and reports
///   ``UploadStop/refused(status:message:)``; the events stay pending.
///
/// **Threads.** Not `Sendable`; use it with its outbox from one isolation domain.
public final class OutboxUploader {
  public let outbox: Outbox
  public let transport: any UploadTransport
  public let retryPolicy: RetryPolicy
  private var random: AnyRandomNumberGenerator

  /// - Parameters:
  ///   - outbox: the queue to drain.
  ///   - transport: where requests go.
  ///   - retryPolicy: backoff and attempt limit.
  ///   - random: the jitter source. Default: the system generator; tests pass a seeded one.
  public init(
    outbox: Outbox, transport: any UploadTransport, retryPolicy: RetryPolicy = RetryPolicy(),
    random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) {
    self.outbox = outbox
    self.transport = transport
    self.retryPolicy = retryPolicy
    self.random = AnyRandomNumberGenerator(base: random)
  }

  /// Sends every pending event now, batch after batch, retrying as the policy says.
  /// - Returns: what was sent; ``UploadReport/stopped`` tells why pending events remain, if any.
  /// - Throws: ``SQLiteError`` from the outbox.
  @discardableResult
  public func flush() throws -> UploadReport {
    var report = UploadReport()
    var partialAnswers = 0
    while report.stopped == nil, try sendBatch(&report, &partialAnswers) {}
    return report
  }

  /// Sends only due batches: while at least ``OutboxConfiguration/maxBatchEvents`` events are
  /// pending or the oldest pending one has waited ``OutboxConfiguration/maxBatchIntervalSeconds``
  /// (see ``Outbox/nextBatchDueTime()``). Call it after enqueueing and on a timer.
  @discardableResult
  public func sendDueBatches() throws -> UploadReport {
    var report = UploadReport()
    var partialAnswers = 0
    while report.stopped == nil, let due = try outbox.nextBatchDueTime(), due <= outbox.clock.now {
      guard try sendBatch(&report, &partialAnswers) else { break }
    }
    return report
  }

  /// Sends one batch until it is settled or the call must stop. Returns false when nothing was
  /// pending. `partialAnswers` counts the 2xx answers in a row, within one call, that left
  /// events of their batch unanswered: those events head the next batch, so each such answer
  /// is a failed attempt at them, and the policy's attempts and backoff apply across batches.
  private func sendBatch(_ report: inout UploadReport, _ partialAnswers: inout Int) throws -> Bool {
    var limit = outbox.configuration.maxBatchEvents
    guard var batch = try outbox.takeBatch(limit: limit) else { return false }
    var failures = 0
    while true {
      let request = UploadRequest(
        body: Self.body(batch.events), attempt: batch.attempt,
        idempotencyKey: OutboxEventID.derive(batch.events.map(\.id), prefix: "batch-"))
      report.requests += 1
      let response = transport.send(request)
      let failure: String
      var retryAfter: Double? = nil
      switch response {
      case .failed(let timedOut, let message):
        failure = timedOut ? "timeout" : "network error: \(message)"
      case .http(let status, let headers, let body):
        retryAfter = headers["retry-after"].flatMap {
          Self.parseRetryAfter($0, now: outbox.clock.now)
        }
        if (200..<300).contains(status) {
          if let answer = Self.parseAnswer(body) {
            let ids = Set(batch.events.map(\.id))
            let delivered = Set(answer.accepted + answer.duplicates).intersection(ids)
            var rejected: [String: String] = [:]
            for (id, reason) in answer.rejected where ids.contains(id) && !delivered.contains(id) {
              rejected[id] = reason
            }
            try outbox.settle(batch, delivered: delivered, rejected: rejected)
            report.batches += 1
            report.accepted += Set(answer.accepted).intersection(ids).count
            report.duplicates += delivered.count - Set(answer.accepted).intersection(ids).count
            report.rejected += rejected.count
            let unanswered = ids.count - delivered.count - rejected.count
            if unanswered == 0 {
              partialAnswers = 0
            } else {
              // The rest went back to pending and head the next batch; wait before it.
              partialAnswers += 1
              if partialAnswers >= retryPolicy.maximumAttempts {
                report.stopped = .retriesExhausted(
                  lastFailure: "\(unanswered) events missing from the answer")
              } else if let stop = deferral(retryAfter) {
                report.stopped = stop
              } else {
                sleep(retry: partialAnswers, retryAfter: retryAfter, &report)
                report.retries += 1
              }
            }
            return true
          }
          failure = "HTTP \(status) with an unreadable body"
        } else if status == 408 || status == 429 || (500..<600).contains(status) {
          failure = "HTTP \(status)"
        } else if status == 413 || status == 400 {
          let message = Self.errorMessage(body)
          if batch.events.count > 1 {
            try outbox.release(batch)
            limit = max(1, batch.events.count / 2)
            guard let smaller = try outbox.takeBatch(limit: limit) else { return false }
            batch = smaller
            continue
          }
          let reason = "HTTP \(status)" + (message.isEmpty ? "" : ": \(message)")
          try outbox.settle(batch, delivered: [], rejected: [batch.events[0].id: reason])
          report.batches += 1
          report.rejected += 1
          return true
        } else {
          try outbox.release(batch)
          report.stopped = .refused(status: status, message: Self.errorMessage(body))
          return true
        }
      }
      failures += 1
      if failures >= retryPolicy.maximumAttempts {
        try outbox.release(batch)
        report.stopped = .retriesExhausted(lastFailure: failure)
        return true
      }
      if let stop = deferral(retryAfter) {
        try outbox.release(batch)
        report.stopped = stop
        return true
      }
      sleep(retry: failures, retryAfter: retryAfter, &report)
      try outbox.markRetry(batch)
      batch.attempt += 1
      report.retries += 1
    }
  }

  /// The stop for a `Retry-After` longer than the policy waits out, else `nil`.
  private func deferral(_ retryAfter: Double?) -> UploadStop? {
    guard let seconds = retryAfter, !retryPolicy.waitsOut(retryAfterSeconds: seconds) else {
      return nil
    }
    return .deferred(retryAfterSeconds: seconds)
  }

  private func sleep(retry: Int, retryAfter: Double?, _ report: inout UploadReport) {
    let wait = retryPolicy.wait(retry: retry, retryAfterSeconds: retryAfter, using: &random)
    report.waitedSeconds += wait
    outbox.clock.sleep(seconds: wait)
  }

  // MARK: Wire format

  /// `{"events":[{"id":ID,<payload members>},...]}`.
  static func body(_ events: [OutboxEvent]) -> Data {
    var text = #"{"events":["#
    for (i, event) in events.enumerated() {
      if i > 0 { text += "," }
      text += #"{"id":"# + JSONText.quoted(event.id)
      let members = event.payload.drop { $0 != "{" }.dropFirst()
      if members.contains(where: { !$0.isWhitespace && $0 != "}" }) { text += "," }
      text += members
    }
    text += "]}"
    return Data(text.utf8)
  }

  struct Answer {
    var accepted: [String]
    var duplicates: [String]
    var rejected: [(String, String)]
  }

  static func parseAnswer(_ body: Data) -> Answer? {
    guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
      let accepted = object["accepted"] as? [Any], let duplicates = object["duplicates"] as? [Any],
      let rejected = object["rejected"] as? [Any]
    else { return nil }
    return Answer(
      accepted: accepted.compactMap { $0 as? String },
      duplicates: duplicates.compactMap { $0 as? String },
      rejected: rejected.compactMap { entry in
        guard let e = entry as? [String: Any], let id = e["id"] as? String else { return nil }
        return (id, e["reason"] as? String ?? "rejected")
      })
  }

  static func errorMessage(_ body: Data) -> String {
    guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
      let error = object["error"] as? [String: Any]
    else { return "" }
    let code = error["code"] as? String ?? ""
    let message = error["message"] as? String ?? ""
    return [code, message].filter { !$0.isEmpty }.joined(separator: ": ")
  }

  /// `Retry-After` as seconds from `now`: a number of seconds, or an HTTP date (RFC 9110
  /// IMF-fixdate). `nil` when unreadable; negative values count as 0.
  static func parseRetryAfter(_ value: String, now: Double) -> Double? {
    if let seconds = RetryPolicy.retryAfterSeconds(value) { return seconds }
    let trimmed = value.trimmingCharacters(in: .whitespaces)
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    guard let date = formatter.date(from: trimmed) else { return nil }
    return max(0, date.timeIntervalSince1970 - now)
  }
}
