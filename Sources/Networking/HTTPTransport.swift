import Foundation

/// One HTTP request: what to send and how long the whole answer may take.
public struct HTTPRequest: Hashable, Sendable {
  public var url: URL
  /// `GET`, `POST`, ...
  public var method: String
  /// Header fields; names as written (matching is case-insensitive on the wire).
  public var headers: [String: String]
  public var body: Data?
  /// The total deadline, seconds (> 0): the whole answer, body included, must arrive within
  /// it, or the send fails with ``TransportError/timedOut``. Default 30.
  public var timeoutSeconds: Double
  /// Whether a redirect to another origin (scheme, host or port) is followed, without the
  /// `Authorization` header. Default true. When false, such a redirect is the answer itself
  /// (its 3xx status): a request whose body or headers are meant for one origin alone (a
  /// signed webhook post) never reaches another.
  public var followsCrossOriginRedirects: Bool

  public init(
    url: URL, method: String = "GET", headers: [String: String] = [:], body: Data? = nil,
    timeoutSeconds: Double = 30, followsCrossOriginRedirects: Bool = true
  ) {
    self.url = url
    self.method = method
    self.headers = headers
    self.body = body
    self.timeoutSeconds = timeoutSeconds
    self.followsCrossOriginRedirects = followsCrossOriginRedirects
  }
}

/// One HTTP answer: status, headers (names lower-cased) and the complete body.
public struct HTTPResponse: Hashable, Sendable {
  public var statusCode: Int
  /// Header fields with lower-cased names.
  public var headers: [String: String]
  public var body: Data

  /// - Parameter headers: header fields; names are lower-cased (of two names that differ
  ///   only in case, one value is kept).
  public init(statusCode: Int, headers: [String: String] = [:], body: Data = Data()) {
    self.statusCode = statusCode
    self.headers = Dictionary(
      headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
    self.body = body
  }

  /// The value of header `name` (case-insensitive).
  /// - Complexity: O(n) in the length of `name`.
  public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A request that got no complete, usable HTTP answer.
public enum TransportError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No complete answer within the request's total deadline
  /// (``HTTPRequest/timeoutSeconds``), or the connection stayed idle past it.
  case timedOut
  /// The connection could not be made or broke before the answer was complete (including a
  /// body shorter than its `Content-Length`).
  case connectionFailed(String)
  /// The answer's body is larger than the transport accepts: `limit` bytes, from its
  /// `Content-Length` or from the bytes received. The rest is not read.
  case responseTooLarge(limit: Int)
  /// The sending task was cancelled before the answer was complete.
  case cancelled

  public var description: String {
    switch self {
    case .timedOut: return "request timed out"
    case .connectionFailed(let why): return "connection failed: \(why)"
    case .responseTooLarge(let limit): return "response larger than \(limit) bytes"
    case .cancelled: return "request cancelled"
    }
  }
}

/// The one seam between the engine and the network: send a request, get the whole answer.
///
/// ``URLSessionTransport`` is the real one; tests use fakes that answer from memory.
/// Implementations report every HTTP status as a response (never as an error) and throw
/// ``TransportError`` only when no complete answer arrived.
public protocol HTTPTransport: Sendable {
  /// Sends `request` and returns the complete answer.
  /// - Throws: ``TransportError``.
  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
}
