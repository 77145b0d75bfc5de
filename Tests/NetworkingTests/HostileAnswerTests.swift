import Foundation
import Networking
import Testing
import GeofenceTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Answers a hostile server gives: redirects that would carry the key elsewhere, and a gzip body
/// that decodes to far more than it weighs.
@Suite struct HostileAnswerTests {
  /// A redirect to another port of the same host is another origin (RFC 6454): the key must
  /// not follow it. The second listener records what arrived.
  @Test func aCrossOriginRedirectLosesTheAuthorizationHeader() async throws {
    let target = try RecordingListener { _ in Self.ok }
    defer { target.stop() }
    let redirect = try RecordingListener { _ in
      Self.redirect(to: "http://127.0.0.1:\(target.port)/v1/other?x=1")
    }
    defer { redirect.stop() }
    let response = try await URLSessionTransport().send(
      HTTPRequest(
        url: redirect.url, headers: ["Authorization": "Bearer secret-key", "X-Other": "kept"],
        timeoutSeconds: 20))
    #expect(response.statusCode == 200)
    let heads = target.heads
    #expect(heads.count == 1)
    let head = heads.first?.lowercased() ?? ""
    #expect(head.hasPrefix("get /v1/other?x=1 "))
    #expect(!head.contains("authorization"))
    #expect(!head.contains("secret-key"))
    #expect(head.contains("x-other: kept"))
    #expect(redirect.heads.first?.contains("Bearer secret-key") == true)
  }

  /// A request meant for its origin alone (a signed webhook post) does not follow a redirect
  /// to another origin at all: the 307 is the answer, and the other origin gets nothing.
  @Test func aRequestThatStaysInItsOriginGetsTheRedirectAsItsAnswer() async throws {
    let target = try RecordingListener { _ in Self.ok }
    defer { target.stop() }
    let redirect = try RecordingListener { _ in
      Self.redirect(to: "http://127.0.0.1:\(target.port)/hook")
    }
    defer { redirect.stop() }
    let response = try await URLSessionTransport().send(
      HTTPRequest(
        url: redirect.url, method: "POST", headers: ["X-Geofence-Signature": "sha256=abc"],
        body: Data("{}".utf8), timeoutSeconds: 20, followsCrossOriginRedirects: false))
    #expect((300..<400).contains(response.statusCode))
    #expect(target.heads.isEmpty)
    #expect(redirect.heads.count == 1)
  }

  /// A redirect within the origin (same scheme, host and port) keeps the key.
  @Test func aSameOriginRedirectKeepsTheAuthorizationHeader() async throws {
    let listener = try RecordingListener { head in
      head.hasPrefix("GET /v1/thing ") ? Self.redirect(to: "/v1/moved") : Self.ok
    }
    defer { listener.stop() }
    let response = try await URLSessionTransport().send(
      HTTPRequest(
        url: listener.url, headers: ["Authorization": "Bearer secret-key"], timeoutSeconds: 20))
    #expect(response.statusCode == 200)
    let heads = listener.heads
    #expect(heads.count == 2)
    #expect(heads.last?.hasPrefix("GET /v1/moved ") == true)
    #expect(heads.last?.contains("Bearer secret-key") == true)
  }

  /// A 307 or 308 keeps the method and the body: the post arrives again whole at the new
  /// place, not empty (an empty post answered 200 would count events delivered that never
  /// arrived).
  @Test(arguments: [307, 308])
  func aPostRedirectedWithinItsOriginIsSentAgainWhole(status: Int) async throws {
    let listener = try RecordingListener { head in
      head.hasPrefix("POST /v1/thing ") ? Self.redirect(to: "/v1/moved", status: status) : Self.ok
    }
    defer { listener.stop() }
    let body = Data(#"{"events":[1,2,3]}"#.utf8)
    let response = try await URLSessionTransport().send(
      HTTPRequest(
        url: listener.url, method: "POST", headers: ["Content-Type": "application/json"],
        body: body, timeoutSeconds: 20))
    #expect(response.statusCode == 200)
    let heads = listener.heads.map { $0.lowercased() }
    #expect(heads.count == 2)
    #expect(heads.last?.hasPrefix("post /v1/moved ") == true)
    #expect(heads.last?.contains("content-length: \(body.count)\r\n") == true, "\(heads)")
  }

  /// A 301, 302 or 303 would make a post a `GET` without its body: not followed, the 3xx is
  /// the answer, and the new place gets nothing.
  @Test(arguments: [301, 302, 303])
  func aPostIsNotTurnedIntoAnEmptyGet(status: Int) async throws {
    let listener = try RecordingListener { head in
      head.hasPrefix("POST /v1/thing ") ? Self.redirect(to: "/v1/moved", status: status) : Self.ok
    }
    defer { listener.stop() }
    let response = try await URLSessionTransport().send(
      HTTPRequest(url: listener.url, method: "POST", body: Data("{}".utf8), timeoutSeconds: 20))
    #expect(response.statusCode == status)
    #expect(listener.heads.count == 1)
  }

  @Test(arguments: [
    ("http://a.example/x", "http://a.example:80/y", true),
    ("https://A.example/x", "https://a.EXAMPLE:443/", true),
    ("http://a.example/x", "https://a.example/x", false),
    ("http://a.example/x", "http://b.example/x", false),
    ("http://127.0.0.1:8765/x", "http://127.0.0.1:8766/x", false),
    ("http://127.0.0.1:8765/x", "http://localhost:8765/x", false),
  ])
  func originsCompareSchemeHostAndPort(a: String, b: String, same: Bool) throws {
    let x = try #require(URL(string: a))
    let y = try #require(URL(string: b))
    #expect(URLSessionTransport.sameOrigin(x, y) == same)
  }

  /// 16 MiB of spaces in gzip weigh about 16 KiB. libcurl decodes them before the transport
  /// counts, so the 1 MiB cap stops the body at 1 MiB decoded, not at 1 MiB on the wire.
  @Test func aGzipBodyIsCappedByItsDecodedSize() async throws {
    let decoded = 16 << 20
    let gzip = try Self.gzip(Data(repeating: 0x20, count: decoded))
    #expect(gzip.count < 100_000)
    let listener = try RecordingListener { _ in
      Data(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(gzip.count)\r\nConnection: close\r\n\r\n"
          .utf8) + gzip
    }
    defer { listener.stop() }
    let transport = URLSessionTransport(maximumResponseBytes: 1 << 20)
    await #expect(throws: TransportError.responseTooLarge(limit: 1 << 20)) {
      try await transport.send(HTTPRequest(url: listener.url, timeoutSeconds: 20))
    }
    // Within the cap, the decoded body arrives whole.
    let small = try Self.gzip(Data("{\"a\":1}".utf8))
    let plain = try RecordingListener { _ in
      Data(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(small.count)\r\nConnection: close\r\n\r\n"
          .utf8) + small
    }
    defer { plain.stop() }
    let response = try await transport.send(HTTPRequest(url: plain.url, timeoutSeconds: 20))
    #expect(response.body == Data("{\"a\":1}".utf8))
  }

  static let ok = Data("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)

  static func redirect(to location: String, status: Int = 307) -> Data {
    Data(
      "HTTP/1.1 \(status) Redirect\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        .utf8)
  }

  /// `data` compressed by the system's `gzip`.
  static func gzip(_ data: Data) throws -> Data {
    let input = TestScratch.root.appendingPathComponent(
      "gzip-\(UUID().uuidString)")
    try data.write(to: input)
    defer { try? FileManager.default.removeItem(at: input) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-c", "-9", input.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let out = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return out
  }
}

/// A loopback listener that records each request's head and answers with `answer(head)`, one
/// connection at a time, closing after each answer.
final class RecordingListener: @unchecked Sendable {
  let port: UInt16
  private let socketFD: Int32
  private let lock = NSLock()
  private var recorded: [String] = []

  init(answer: @escaping @Sendable (String) -> Data) throws {
    (socketFD, port) = try listeningLoopbackSocket()
    Thread { [self] in serve(answer) }.start()
  }

  var url: URL { URL(string: "http://127.0.0.1:\(port)/v1/thing")! }

  /// The request heads received so far, in order.
  var heads: [String] { lock.withLock { recorded } }

  func stop() {
    shutdown(socketFD, Int32(SHUT_RDWR))
    close(socketFD)
  }

  private func serve(_ answer: (String) -> Data) {
    while true {
      let client = accept(socketFD, nil, nil)
      guard client >= 0 else { return }
      let head = readRequestHead(client)
      let text = String(decoding: head, as: UTF8.self)
      lock.withLock { recorded.append(text) }
      let reply = answer(text)
      answerAndClose(client, reply)
    }
  }
}
