import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// One HTTP request as the sync client sends it.
public struct HTTPRequest: Hashable, Sendable {
  public var url: URL
  /// `GET`, `POST`, ...
  public var method: String
  /// Header fields; names as written (matching is case-insensitive on the wire).
  public var headers: [String: String]
  public var body: Data?
  /// Seconds to wait for the whole answer before failing with ``TransportError/timedOut``.
  public var timeoutSeconds: Double

  public init(
    url: URL, method: String = "GET", headers: [String: String] = [:], body: Data? = nil,
    timeoutSeconds: Double = 30
  ) {
    self.url = url
    self.method = method
    self.headers = headers
    self.body = body
    self.timeoutSeconds = timeoutSeconds
  }
}

/// One HTTP answer: status, headers (names lower-cased) and the complete body.
public struct HTTPResponse: Hashable, Sendable {
  public var statusCode: Int
  /// Header fields with lower-cased names.
  public var headers: [String: String]
  public var body: Data

  public init(statusCode: Int, headers: [String: String] = [:], body: Data = Data()) {
    self.statusCode = statusCode
    self.headers = Dictionary(
      headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
    self.body = body
  }

  /// The value of header `name` (case-insensitive).
  public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A request that got no complete HTTP answer.
public enum TransportError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No complete answer within the request's timeout.
  case timedOut
  /// The connection could not be made or broke before the answer was complete (including a
  /// body shorter than its `Content-Length`).
  case connectionFailed(String)

  public var description: String {
    switch self {
    case .timedOut: return "request timed out"
    case .connectionFailed(let why): return "connection failed: \(why)"
    }
  }
}

/// The one seam between the sync client and the network: send a request, get the whole answer.
///
/// ``URLSessionTransport`` is the real one; tests use a fake that answers from memory.
/// Implementations report every HTTP status as a response (never as an error) and throw
/// ``TransportError`` only when no complete answer arrived.
public protocol HTTPTransport: Sendable {
  /// Sends `request` and returns the complete answer.
  /// - Throws: ``TransportError``.
  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
}

/// ``HTTPTransport`` over Foundation's `URLSession` (FoundationNetworking on Linux).
///
/// Uses an ephemeral session (no cookies, no URL cache), so a conditional request and its
/// `304` reach the client as sent and received.
public final class URLSessionTransport: HTTPTransport {
  private let session: URLSession

  /// - Parameter session: the session to use; default an ephemeral one with caching off.
  public init(session: URLSession? = nil) {
    if let session {
      self.session = session
    } else {
      let configuration = URLSessionConfiguration.ephemeral
      configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
      configuration.urlCache = nil
      configuration.httpCookieStorage = nil
      self.session = URLSession(configuration: configuration)
    }
  }

  deinit { session.finishTasksAndInvalidate() }

  public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    var urlRequest = URLRequest(url: request.url)
    urlRequest.httpMethod = request.method
    urlRequest.timeoutInterval = request.timeoutSeconds
    urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
    for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
    urlRequest.httpBody = request.body
    let session = self.session
    let result: Result<HTTPResponse, TransportError> = await withCheckedContinuation {
      continuation in
      let task = session.dataTask(with: urlRequest) { data, response, error in
        if let error {
          let nsError = error as NSError
          if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut {
            continuation.resume(returning: .failure(.timedOut))
          } else {
            continuation.resume(returning: .failure(.connectionFailed(error.localizedDescription)))
          }
          return
        }
        guard let http = response as? HTTPURLResponse else {
          continuation.resume(returning: .failure(.connectionFailed("not an HTTP response")))
          return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
          if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        continuation.resume(
          returning: .success(
            HTTPResponse(statusCode: http.statusCode, headers: headers, body: data ?? Data())))
      }
      task.resume()
    }
    return try result.get()
  }
}
