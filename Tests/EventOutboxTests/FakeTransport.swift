import EventOutbox
import Foundation
import GeofenceTestSupport

extension ManualClock: OutboxClock {}

/// A scripted transport: answers from a queue of responders, then accepts everything. Records
/// every request with the clock time it was sent.
final class FakeTransport: UploadTransport {
  struct Sent {
    var time: Double
    var attempt: Int
    var idempotencyKey: String
    var ids: [String]
    var events: [[String: Any]]
  }

  typealias Responder = (_ ids: [String]) -> UploadResponse
  let clock: ManualClock
  var script: [Responder] = []
  var sent: [Sent] = []
  /// Ids stored as a server would (dedup by id).
  var stored: [String] = []

  init(clock: ManualClock) { self.clock = clock }

  func send(_ request: UploadRequest) -> UploadResponse {
    let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any]
    let events = object?["events"] as? [[String: Any]] ?? []
    let ids = events.map { $0["id"] as? String ?? "" }
    sent.append(
      Sent(
        time: clock.now, attempt: request.attempt, idempotencyKey: request.idempotencyKey,
        ids: ids, events: events))
    if !script.isEmpty { return script.removeFirst()(ids) }
    return Self.accept(ids, into: &stored)
  }

  /// A server's answer: new ids accepted, known ids duplicates.
  static func accept(
    _ ids: [String], into stored: inout [String], rejecting: [String: String] = [:]
  )
    -> UploadResponse
  {
    var accepted: [String] = []
    var duplicates: [String] = []
    var rejected: [[String: Any]] = []
    for id in ids {
      if let reason = rejecting[id] {
        rejected.append(["id": id, "reason": reason])
      } else if stored.contains(id) {
        duplicates.append(id)
      } else {
        stored.append(id)
        accepted.append(id)
      }
    }
    return json(200, ["accepted": accepted, "duplicates": duplicates, "rejected": rejected])
  }

  static func json(_ status: Int, _ object: [String: Any], headers: [String: String] = [:])
    -> UploadResponse
  {
    let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
    return .http(status: status, headers: headers, body: body)
  }

  static func status(_ status: Int, retryAfter: String? = nil) -> Responder {
    { _ in
      json(
        status, ["error": ["code": "fault", "message": "injected \(status)"]],
        headers: retryAfter.map { ["retry-after": $0] } ?? [:])
    }
  }

  static var timeout: Responder { { _ in .failed(timedOut: true, message: "timed out") } }

  /// Makes the server store the batch, then lose the answer (timeout after commit).
  func commitThenTimeout() -> Responder {
    { [unowned self] ids in
      _ = Self.accept(ids, into: &self.stored)
      return .failed(timedOut: true, message: "timed out")
    }
  }
}

/// Events with ids `e0`, `e1`, ... and a small payload.
func makeEvents(_ range: Range<Int>, prefix: String = "e") -> [OutboxEvent] {
  range.map { OutboxEvent(id: "\(prefix)\($0)", payload: #"{"type":"enter","n":\#($0)}"#) }
}

/// A fresh temporary directory.
func temporaryDirectory() -> URL {
  let url = FileManager.default.temporaryDirectory.appendingPathComponent(
    "outbox-tests-\(UUID().uuidString)")
  try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}
