import Foundation
import GeofenceTestSupport
import Networking
import Testing

@Suite struct URLSessionTransportTests {
  /// A server that accepts the connection and never answers: the task-level deadline on the
  /// clock ends the send with `.timedOut`. The manual clock makes the deadline pass at once,
  /// so nothing waits 5 s; the idle timeout (also 5 s, on the wall clock) cannot be what fired.
  @Test func theTotalDeadlineFiresAgainstAServerThatNeverAnswers() async throws {
    let listener = try LoopbackListener(answer: nil)
    defer { listener.stop() }
    let clock = ManualClock()
    let transport = URLSessionTransport(clock: clock)
    await #expect(throws: TransportError.timedOut) {
      try await transport.send(HTTPRequest(url: listener.url, timeoutSeconds: 5))
    }
    #expect(clock.sleeps == [5])
  }

  @Test func aBodyWithinTheCapArrivesWhole() async throws {
    let body = String(repeating: "x", count: 100)
    let listener = try LoopbackListener(
      answer: Data(
        ("HTTP/1.1 201 Created\r\nContent-Length: 100\r\nX-Thing: yes\r\nConnection: close\r\n\r\n"
          + body).utf8))
    defer { listener.stop() }
    let transport = URLSessionTransport(maximumResponseBytes: 100)
    let response = try await transport.send(HTTPRequest(url: listener.url, timeoutSeconds: 20))
    #expect(response.statusCode == 201)
    #expect(response.body == Data(body.utf8))
    #expect(response.header("X-THING") == "yes")
  }

  /// `Content-Length` over the cap fails before the body is read.
  @Test func aContentLengthOverTheCapFailsUpFront() async throws {
    let listener = try LoopbackListener(
      answer: Data(
        ("HTTP/1.1 200 OK\r\nContent-Length: 101\r\nConnection: close\r\n\r\n"
          + String(repeating: "x", count: 101)).utf8))
    defer { listener.stop() }
    let transport = URLSessionTransport(maximumResponseBytes: 100)
    await #expect(throws: TransportError.responseTooLarge(limit: 100)) {
      try await transport.send(HTTPRequest(url: listener.url, timeoutSeconds: 20))
    }
  }

  /// Without a length, the received bytes are counted: 5000 bytes against a 1000-byte cap.
  @Test func aBodyWithoutALengthFailsWhenItsBytesPassTheCap() async throws {
    let listener = try LoopbackListener(
      answer: Data(
        ("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + String(repeating: "y", count: 5000))
          .utf8))
    defer { listener.stop() }
    let transport = URLSessionTransport(maximumResponseBytes: 1000)
    await #expect(throws: TransportError.responseTooLarge(limit: 1000)) {
      try await transport.send(HTTPRequest(url: listener.url, timeoutSeconds: 20))
    }
    #expect(URLSessionTransport.defaultMaximumResponseBytes == 67_108_864)
  }

  @Test func aRefusedConnectionIsAConnectionFailure() async throws {
    let listener = try LoopbackListener(answer: nil)
    let url = listener.url
    listener.stop()  // nothing listens on the port now
    let transport = URLSessionTransport()
    do {
      _ = try await transport.send(HTTPRequest(url: url, timeoutSeconds: 20))
      Issue.record("a send to a closed port succeeded")
    } catch {
      guard case .connectionFailed = error else {
        Issue.record("expected connectionFailed, got \(error)")
        return
      }
    }
  }
}
