import Foundation
import JSONText
import Networking
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
  /// The task was cancelled while waiting to retry; the events are pending.
  case cancelled
  /// ``OutboxUploader/deadline`` came before the next send or the end of the wait for it; the
  /// events are pending. `lastFailure` is the failure being retried, if any.
  case deadlinePassed(lastFailure: String?)

  public var description: String {
    switch self {
    case .retriesExhausted(let f): return "gave up after repeated failures (last: \(f))"
    case .refused(let status, let message): return "server refused the upload: \(status) \(message)"
    case .deferred(let seconds):
      let shown = seconds.rounded(.up)
      let text = shown < 1e15 ? String(Int(shown)) : "\(seconds)"
      return "server asked to retry in \(text) s (Retry-After), longer than one call waits"
    case .cancelled: return "cancelled"
    case .deadlinePassed(let last):
      return "the upload deadline passed" + (last.map { " (last failure: \($0))" } ?? "")
    }
  }
}

/// Sends the outbox's events in batches and applies the answers.
///
/// ## Rules
/// - A batch is the first ``OutboxConfiguration/maxBatchEvents`` pending events in enqueue
///   order, marked in flight before it is sent as `POST {server}/v1/events` with
///   `Authorization: Bearer KEY`, `Content-Type: application/json`, `X-Attempt` and
///   `Idempotency-Key`. Retries of a batch send the same events with the same ids in the same
///   order, with `X-Attempt` incremented (the count is kept in the database, so it continues
///   after a restart) and the same `Idempotency-Key`.
/// - Before a batch is sent, an event whose stored payload is not a JSON object (a damaged or
///   edited file) is dead-lettered on its own with the reason, and the rest is sent: a server
///   would refuse the whole request (`400`), and the batch would never leave.
/// - A `2xx` answer must partition what it names of the batch (`docs/openapi.yaml`,
///   `EventBatchResult`): every id in `accepted`, `duplicates` and `rejected` is one the
///   batch sent, and none is named twice, in one list or across them (an event is accepted,
///   a duplicate or rejected, never two of these). An answer that is not (every id both
///   accepted and rejected, ids twice, an id never sent) says nothing reliable about any
///   event: it is handled as an unreadable body, retried, and nothing is settled from it.
/// - `2xx`: `accepted` and `duplicates` leave the outbox; each `rejected` entry goes to the
///   dead-letter table with its reason; events the answer does not mention go back to pending
///   and head the next batch, after the backoff: such an answer counts as a failed attempt,
///   and ``RetryPolicy/maximumAttempts`` of them in a row stop the call with
///   ``UploadStop/retriesExhausted(lastFailure:)``.
/// - Retried, through one `Networking.RetryingSender` (see ``RetryPolicy``): timeouts,
///   connection failures (any `TransportError`), `408`, `429`, `5xx`, and `2xx` with an
///   unreadable body. The wait is `max(Retry-After, backoff)` on the outbox's clock, with
///   `Retry-After` as delta-seconds or an HTTP-date read against that clock; a `Retry-After`
///   above ``RetryPolicy/maximumRetryAfterSeconds`` stops the call with
///   ``UploadStop/deferred(retryAfterSeconds:)`` instead, the events pending.
/// - `413` on a batch of several events: the batch is split in half and the first half sent
///   again, with a fresh count of attempts; on a single event, the event is dead-lettered with
///   the server's message (it is too large for this server on its own).
/// - Any other status (`400`, `401`, `403`, `404`, ...): the call stops and reports
///   ``UploadStop/refused(status:message:)``; the events stay pending. A `400` refuses the
///   request as a whole (the protocol reports a bad event in `rejected`, inside a `2xx`), so
///   it says nothing against any one event, and none is dead-lettered for it.
/// - The server's texts, an error body's message and each rejection reason, pass through
///   `Networking.ServerText` before they are reported or stored as a dead letter's reason:
///   control characters escaped, at most 300 characters, the API key redacted.
/// - With a ``deadline``, no request starts and no wait begins past it; the call stops with
///   ``UploadStop/deadlinePassed(lastFailure:)``, the batch back to pending.
/// - Cancelling the task while it waits to retry stops the call with ``UploadStop/cancelled``,
///   the batch back to pending.
///
/// **Threads.** Not `Sendable`; use it with its outbox from one isolation domain.
public final class OutboxUploader {
  public let outbox: Outbox
  /// The events endpoint, `{server}/v1/events`.
  public let endpoint: URL
  public let transport: any HTTPTransport
  public let retryPolicy: RetryPolicy
  /// The total deadline of each request, seconds (``Networking/HTTPRequest/timeoutSeconds``).
  public let requestTimeoutSeconds: Double
  /// The stages every event passes before it is sent (``DeliveryStages``). Default none.
  public var stages: DeliveryStages = .none
  private let apiKey: String
  private var sender: RetryingSender

  /// The time on the outbox's clock (seconds since the Unix epoch) after which no request is
  /// sent and no wait begins: the call in progress stops with
  /// ``UploadStop/deadlinePassed(lastFailure:)`` and a request running then is cut at it (see
  /// `Networking.RetryingSender`). `nil` (the default) for none. One deadline may span many
  /// calls, bounding them together.
  public var deadline: Double? {
    get { sender.deadline }
    set { sender.deadline = newValue }
  }

  /// - Parameters:
  ///   - outbox: the queue to drain; its clock times the waits.
  ///   - server: the server's base URL, for example `http://127.0.0.1:8765`.
  ///   - apiKey: the API key, sent as `Authorization: Bearer KEY`.
  ///   - transport: where requests go (`URLSessionTransport` for real use).
  ///   - retryPolicy: backoff and attempt limit. Default ``RetryPolicy/init(maximumAttempts:baseDelaySeconds:maximumDelaySeconds:maximumRetryAfterSeconds:)``'s defaults.
  ///   - requestTimeoutSeconds: the total deadline of one request, seconds (> 0). Default 10.
  ///   - random: the jitter source. Default: the system generator; tests pass a seeded one.
  public init(
    outbox: Outbox, server: URL, apiKey: String, transport: any HTTPTransport,
    retryPolicy: RetryPolicy = RetryPolicy(), requestTimeoutSeconds: Double = 10,
    random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) {
    self.outbox = outbox
    endpoint = server.appendingPathComponent("v1").appendingPathComponent("events")
    self.apiKey = apiKey
    self.transport = transport
    self.retryPolicy = retryPolicy
    self.requestTimeoutSeconds = requestTimeoutSeconds
    sender = RetryingSender(
      transport: transport, policy: retryPolicy, clock: outbox.clock, random: random)
  }

  /// Sends every pending event now, batch after batch, retrying as the policy says.
  /// - Returns: what was sent; ``UploadReport/stopped`` tells why pending events remain, if any.
  /// - Throws: ``SQLiteError`` from the outbox.
  @discardableResult
  public func flush() async throws -> UploadReport {
    try outbox.register(destination: Outbox.serverDestination)
    var report = UploadReport()
    var partialAnswers = 0
    while report.stopped == nil, try await sendBatch(&report, &partialAnswers) {}
    return report
  }

  /// Sends only due batches: while at least ``OutboxConfiguration/maxBatchEvents`` events are
  /// pending or the oldest pending one has waited ``OutboxConfiguration/maxBatchIntervalSeconds``
  /// (see ``Outbox/nextBatchDueTime()``). Call it after enqueueing and on a timer.
  /// - Throws: ``SQLiteError`` from the outbox.
  @discardableResult
  public func sendDueBatches() async throws -> UploadReport {
    try outbox.register(destination: Outbox.serverDestination)
    var report = UploadReport()
    var partialAnswers = 0
    while report.stopped == nil, let due = try outbox.nextBatchDueTime(), due <= outbox.clock.now()
    {
      guard try await sendBatch(&report, &partialAnswers) else { break }
    }
    return report
  }

  /// The request for one send of `batch`.
  private func request(_ batch: Outbox.Batch) -> HTTPRequest {
    HTTPRequest(
      url: endpoint, method: "POST",
      headers: [
        "Authorization": "Bearer \(apiKey)", "Content-Type": "application/json",
        "X-Attempt": String(batch.attempt),
        "Idempotency-Key": OutboxEventID.derive(batch.sendable.map(\.id), prefix: "batch-"),
      ],
      body: Self.body(batch.sendable), timeoutSeconds: requestTimeoutSeconds)
  }

  /// A usable answer to one batch.
  private enum Settled {
    case answer(Answer)
    /// `413`: too big as a whole.
    case split(status: Int, message: String)
    case refused(status: Int, message: String)
  }

  /// Which answers are worth another send (the rules in the type's discussion), for a batch
  /// of the events `sent`. The server's texts (messages, rejection reasons) come out through
  /// ``Networking/ServerText``, with `secrets` (the API key) redacted.
  private static func classify(
    _ result: Result<HTTPResponse, TransportError>, sent: Set<String>,
    redacting secrets: [String]
  ) -> RetryVerdict<Settled, String> {
    let response: HTTPResponse
    switch result {
    case .failure(.timedOut): return .retry("timeout")
    case .failure(let error): return .retry("network error: \(error)")
    case .success(let answer): response = answer
    }
    let status = response.statusCode
    if (200..<300).contains(status) {
      guard let answer = parseAnswer(response.body, redacting: secrets) else {
        return .retry("HTTP \(status) with an unreadable body")
      }
      if let why = inconsistency(of: answer, sent: sent) {
        return .retry("HTTP \(status) with an inconsistent answer: \(why)")
      }
      return .success(.answer(answer))
    }
    if status == 408 || status == 429 || (500..<600).contains(status) {
      return .retry("HTTP \(status)")
    }
    if status == 413 {
      return .success(
        .split(status: status, message: errorMessage(response.body, redacting: secrets)))
    }
    return .success(
      .refused(status: status, message: errorMessage(response.body, redacting: secrets)))
  }

  /// Sends one batch until it is settled or the call must stop. Returns false when nothing was
  /// pending. `partialAnswers` counts the 2xx answers in a row, within one call, that left
  /// events of their batch unanswered: those events head the next batch, so each such answer
  /// is a failed attempt at them, and the policy's attempts and backoff apply across batches.
  private func sendBatch(_ report: inout UploadReport, _ partialAnswers: inout Int) async throws
    -> Bool
  {
    guard var batch = try outbox.takeBatch(limit: outbox.configuration.maxBatchEvents) else {
      return false
    }
    while true {
      stages.prepare(&batch)
      // A payload that is not a JSON object would make the whole request unreadable.
      report.rejected += try outbox.deadLetterUnsendable(&batch)
      if batch.sendable.isEmpty {
        try outbox.settle(batch, delivered: [], rejected: [:])
        return true
      }
      let outbox = self.outbox
      var current = batch
      let sentIDs = Set(batch.sendable.map(\.id))
      let outcome = try await sender.send(
        request: { attempt in
          if attempt > 1 {
            try outbox.markRetry(current)
            current.attempt += 1
          }
          return request(current)
        }, classify: { [apiKey] in Self.classify($0, sent: sentIDs, redacting: [apiKey]) })
      batch = current
      report.requests += outcome.attempts
      report.retries += outcome.waits.count
      report.waitedSeconds += outcome.waits.reduce(0, +)
      let settled: Settled
      switch outcome.ending {
      case .succeeded(let value): settled = value
      case .failed(let failure), .attemptsExhausted(let failure):
        try outbox.release(batch)
        report.stopped = .retriesExhausted(lastFailure: failure)
        return true
      case .retryAfterTooLong(let seconds, _):
        try outbox.release(batch)
        report.stopped = .deferred(retryAfterSeconds: seconds)
        return true
      case .cancelled:
        try outbox.release(batch)
        report.stopped = .cancelled
        return true
      case .deadlinePassed(let failure):
        try outbox.release(batch)
        report.stopped = .deadlinePassed(lastFailure: failure)
        return true
      }
      switch settled {
      case .answer(let answer):
        try await apply(
          answer, to: batch, retryAfter: outcome.lastRetryAfterSeconds, &report, &partialAnswers)
        return true
      case .split(let status, let message):
        if batch.sendable.count > 1 {
          try outbox.release(batch)
          guard let smaller = try outbox.takeBatch(limit: max(1, batch.events.count / 2)) else {
            return false
          }
          batch = smaller
          continue
        }
        let reason = "HTTP \(status)" + (message.isEmpty ? "" : ": \(message)")
        try outbox.settle(batch, delivered: [], rejected: [batch.sendable[0].id: reason])
        report.batches += 1
        report.rejected += 1
        return true
      case .refused(let status, let message):
        try outbox.release(batch)
        report.stopped = .refused(status: status, message: message)
        return true
      }
    }
  }

  /// Applies a `2xx` answer to `batch`; waits (or stops) when it left events unanswered.
  private func apply(
    _ answer: Answer, to batch: Outbox.Batch, retryAfter: Double?, _ report: inout UploadReport,
    _ partialAnswers: inout Int
  ) async throws {
    let ids = Set(batch.sendable.map(\.id))
    let delivered = Set(answer.accepted + answer.duplicates).intersection(ids)
    var rejected: [String: String] = [:]
    for (id, reason) in answer.rejected where ids.contains(id) && !delivered.contains(id) {
      rejected[id] = reason
    }
    try outbox.settle(batch, delivered: delivered, rejected: rejected)
    report.batches += 1
    let accepted = Set(answer.accepted).intersection(ids).count
    report.accepted += accepted
    report.duplicates += delivered.count - accepted
    report.rejected += rejected.count
    let unanswered = ids.count - delivered.count - rejected.count
    guard unanswered > 0 else {
      partialAnswers = 0
      return
    }
    // The rest went back to pending and head the next batch; wait before it.
    partialAnswers += 1
    if partialAnswers >= retryPolicy.maximumAttempts {
      report.stopped = .retriesExhausted(
        lastFailure: "\(unanswered) events missing from the answer")
    } else if let seconds = retryAfter, !retryPolicy.waitsOut(retryAfterSeconds: seconds) {
      report.stopped = .deferred(retryAfterSeconds: seconds)
    } else {
      do {
        if let waited = try await sender.pause(
          retry: partialAnswers, retryAfterSeconds: retryAfter)
        {
          report.waitedSeconds += waited
          report.retries += 1
        } else {
          report.stopped = .deadlinePassed(
            lastFailure: "\(unanswered) events missing from the answer")
        }
      } catch {
        report.stopped = .cancelled
      }
    }
  }

  // MARK: Wire format

  /// `{"events":[{"id":ID,<payload members>},...]}`.
  static func body(_ events: [OutboxEvent]) -> Data {
    var text = #"{"events":["#
    for (i, event) in events.enumerated() {
      if i > 0 { text += "," }
      text += event.jsonObject
    }
    text += "]}"
    return Data(text.utf8)
  }

  struct Answer {
    var accepted: [String]
    var duplicates: [String]
    var rejected: [(String, String)]
  }

  /// The answer's lists; `nil` when the body is not an `EventBatchResult`: `accepted` and
  /// `duplicates` arrays of strings, `rejected` an array of objects whose `id` is a string or
  /// `null` (an event without a usable id, which names none of ours and is left out). Each
  /// rejection reason is made safe to store and print (``Networking/ServerText``, `secrets`
  /// redacted).
  static func parseAnswer(_ body: Data, redacting secrets: [String] = []) -> Answer? {
    guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
      let accepted = object["accepted"] as? [Any], let duplicates = object["duplicates"] as? [Any],
      let rejected = object["rejected"] as? [Any]
    else { return nil }
    let acceptedIDs = accepted.compactMap { $0 as? String }
    let duplicateIDs = duplicates.compactMap { $0 as? String }
    guard acceptedIDs.count == accepted.count, duplicateIDs.count == duplicates.count else {
      return nil
    }
    var rejections: [(String, String)] = []
    for entry in rejected {
      guard let e = entry as? [String: Any] else { return nil }
      if e["id"] is NSNull { continue }
      guard let id = e["id"] as? String else { return nil }
      rejections.append(
        (id, ServerText.displayable(e["reason"] as? String ?? "rejected", redacting: secrets)))
    }
    return Answer(accepted: acceptedIDs, duplicates: duplicateIDs, rejected: rejections)
  }

  /// Why `answer` is not a partition of a subset of `sent` (an id not sent, or one named twice
  /// in one list or across lists), or `nil` when it is. The id is quoted through
  /// ``Networking/ServerText``.
  /// - Complexity: O(n) in the ids named.
  static func inconsistency(of answer: Answer, sent: Set<String>) -> String? {
    var seen: [String: String] = [:]
    let named =
      answer.accepted.map { ($0, "accepted") } + answer.duplicates.map { ($0, "duplicates") }
      + answer.rejected.map { ($0.0, "rejected") }
    for (id, list) in named {
      let shown = "\"" + ServerText.displayable(id, limit: 80) + "\""
      guard sent.contains(id) else {
        return "it lists \(shown) in \(list), an id the batch did not send"
      }
      if let earlier = seen.updateValue(list, forKey: id) {
        return earlier == list
          ? "it lists \(shown) twice in \(list)"
          : "it lists \(shown) in both \(earlier) and \(list)"
      }
    }
    return nil
  }

  /// `code: message` of an error body (`""` without one), made safe to store and print
  /// (``Networking/ServerText``, `secrets` redacted).
  static func errorMessage(_ body: Data, redacting secrets: [String] = []) -> String {
    guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
      let error = object["error"] as? [String: Any]
    else { return "" }
    let code = error["code"] as? String ?? ""
    let message = error["message"] as? String ?? ""
    return ServerText.displayable(
      [code, message].filter { !$0.isEmpty }.joined(separator: ": "), redacting: secrets)
  }
}
