import EventOutbox
import Foundation
import GeofenceTestSupport
import Networking
import RetryTiming

/// A scripted ``HTTPTransport``: answers from a queue of responders, then accepts everything.
/// Records every request with the clock time it was sent. Used from one task at a time.
final class FakeTransport: HTTPTransport, @unchecked Sendable {
  struct Sent {
    var time: Double
    var request: HTTPRequest
    var attempt: Int
    var idempotencyKey: String
    var ids: [String]
    var events: [[String: Any]]
  }

  typealias Responder = (_ ids: [String]) -> Result<HTTPResponse, TransportError>
  let clock: ManualClock
  var script: [Responder] = []
  var sent: [Sent] = []
  /// Ids stored as a server would (dedup by id).
  var stored: [String] = []

  init(clock: ManualClock) { self.clock = clock }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let object = request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) }
    let events = (object as? [String: Any])?["events"] as? [[String: Any]] ?? []
    let ids = events.map { $0["id"] as? String ?? "" }
    sent.append(
      Sent(
        time: clock.now(), request: request,
        attempt: request.headers["X-Attempt"].flatMap { Int($0) } ?? -1,
        idempotencyKey: request.headers["Idempotency-Key"] ?? "", ids: ids, events: events))
    if !script.isEmpty { return try script.removeFirst()(ids).get() }
    return try Self.accept(ids, into: &stored).get()
  }

  /// A server's answer: new ids accepted, known ids duplicates.
  static func accept(
    _ ids: [String], into stored: inout [String], rejecting: [String: String] = [:]
  ) -> Result<HTTPResponse, TransportError> {
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
    -> Result<HTTPResponse, TransportError>
  {
    let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
    return .success(HTTPResponse(statusCode: status, headers: headers, body: body))
  }

  static func status(_ status: Int, retryAfter: String? = nil) -> Responder {
    { _ in
      json(
        status, ["error": ["code": "fault", "message": "injected \(status)"]],
        headers: retryAfter.map { ["retry-after": $0] } ?? [:])
    }
  }

  static var timeout: Responder { { _ in .failure(.timedOut) } }

  /// Makes the server store the batch, then lose the answer (timeout after commit).
  func commitThenTimeout() -> Responder {
    { [unowned self] ids in
      _ = Self.accept(ids, into: &self.stored)
      return .failure(.timedOut)
    }
  }
}

/// The server the unit tests' uploaders address (nothing listens there; the fake answers).
let fakeServer = URL(string: "http://127.0.0.1:9")!
let fakeKey = "k1"

extension OutboxUploader {
  /// An uploader of `outbox` to ``fakeServer`` with key ``fakeKey`` through `transport`.
  convenience init(
    outbox: Outbox, transport: FakeTransport, retryPolicy: RetryPolicy = RetryPolicy(),
    random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) {
    self.init(
      outbox: outbox, server: fakeServer, apiKey: fakeKey, transport: transport,
      retryPolicy: retryPolicy, random: random)
  }
}

/// Events with ids `e0`, `e1`, ... and a small payload.
func makeEvents(_ range: Range<Int>, prefix: String = "e") -> [OutboxEvent] {
  range.map { OutboxEvent(id: "\(prefix)\($0)", payload: #"{"type":"enter","n":\#($0)}"#) }
}

/// A fresh temporary directory.
func temporaryDirectory() -> URL {
  let url = TestScratch.root.appendingPathComponent(
    "outbox-tests-\(UUID().uuidString)")
  try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}
