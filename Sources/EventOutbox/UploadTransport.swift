import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// One `POST /v1/events` to send.
public struct UploadRequest: Hashable, Sendable {
  /// The JSON body, `{"events": [...]}`.
  public var body: Data
  /// The attempt number for the `X-Attempt` header: 1 for the first send of a batch.
  public var attempt: Int
  /// The `Idempotency-Key` header: constant across the retries of one batch.
  public var idempotencyKey: String
}

/// What came back for an ``UploadRequest``.
public enum UploadResponse: Hashable, Sendable {
  /// An HTTP answer. Header names are lowercased.
  case http(status: Int, headers: [String: String], body: Data)
  /// No usable answer: the request timed out (`timedOut`) or the connection failed.
  case failed(timedOut: Bool, message: String)
}

/// The one seam between the uploader and the network: tests use a fake, the tool uses
/// ``URLSessionUploadTransport``.
public protocol UploadTransport: AnyObject {
  /// Sends `request` and waits for the answer. Never throws: failures are
  /// ``UploadResponse/failed(timedOut:message:)``.
  func send(_ request: UploadRequest) -> UploadResponse
}

/// `POST {server}/v1/events` with `URLSession`, waiting synchronously for the answer.
///
/// Sets `Authorization: Bearer <key>`, `Content-Type: application/json`, `X-Attempt` and
/// `Idempotency-Key`.
public final class URLSessionUploadTransport: UploadTransport {
  /// The events endpoint (`{server}/v1/events`).
  public let endpoint: URL
  private let key: String
  /// Seconds before a request without an answer counts as timed out. Default 10.
  public let timeoutSeconds: Double
  private let session: URLSession

  /// - Parameters:
  ///   - server: the server's base URL, for example `http://127.0.0.1:8765`.
  ///   - key: the API key.
  ///   - timeoutSeconds: the request timeout (> 0). Default 10.
  public init(server: URL, key: String, timeoutSeconds: Double = 10) {
    endpoint = server.appendingPathComponent("v1").appendingPathComponent("events")
    self.key = key
    self.timeoutSeconds = timeoutSeconds
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = timeoutSeconds
    configuration.timeoutIntervalForResource = timeoutSeconds
    configuration.httpMaximumConnectionsPerHost = 1
    session = URLSession(configuration: configuration)
  }

  deinit { session.finishTasksAndInvalidate() }

  private final class Box: @unchecked Sendable {
    var response: UploadResponse = .failed(timedOut: false, message: "no answer")
  }

  public func send(_ request: UploadRequest) -> UploadResponse {
    var urlRequest = URLRequest(url: endpoint, timeoutInterval: timeoutSeconds)
    urlRequest.httpMethod = "POST"
    urlRequest.httpBody = request.body
    urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
    urlRequest.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
    urlRequest.setValue(String(request.attempt), forHTTPHeaderField: "X-Attempt")
    urlRequest.setValue(request.idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
    let box = Box()
    let done = DispatchSemaphore(value: 0)
    let task = session.dataTask(with: urlRequest) { data, response, error in
      if let error {
        let nsError = error as NSError
        box.response = .failed(
          timedOut: nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut,
          message: error.localizedDescription)
      } else if let http = response as? HTTPURLResponse {
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
          headers[String(describing: name).lowercased()] = String(describing: value)
        }
        box.response = .http(status: http.statusCode, headers: headers, body: data ?? Data())
      }
      done.signal()
    }
    task.resume()
    done.wait()
    return box.response
  }
}
