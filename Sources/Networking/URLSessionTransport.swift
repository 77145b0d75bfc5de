import Foundation
import RetryTiming

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// ``HTTPTransport`` over Foundation's `URLSession` (FoundationNetworking on Linux), with a
/// total deadline and a size cap on every answer.
///
/// - **Deadline.** A request's ``HTTPRequest/timeoutSeconds`` bounds the whole answer, not
///   only the silence between bytes: it is the `URLRequest`'s idle timeout, and a task-level
///   deadline on the injected clock cancels the transfer when it passes, however slowly bytes
///   keep arriving. The session's `timeoutIntervalForResource`
///   (``resourceTimeoutSeconds``) is a second, transport-wide ceiling. Either way the send
///   fails with ``TransportError/timedOut``.
/// - **Size cap.** An answer whose `Content-Length` exceeds ``maximumResponseBytes`` fails at
///   once, before its body is read; one without a length fails as soon as the bytes received
///   pass the cap. Both with ``TransportError/responseTooLarge(limit:)``.
/// - **Cancellation.** Cancelling the sending task cancels the transfer and fails the send
///   with ``TransportError/cancelled``.
/// - **Compressed answers.** libcurl asks for and decodes gzip and deflate as it reads, so the
///   delegate sees decoded bytes: the size cap counts the decoded body, which is what is held
///   in memory (a gzip bomb fails at the cap, having used about the cap). The encoded bytes
///   are checked against the cap only through `Content-Length`; they are never held, and a
///   stream of them that decodes to little is ended by the deadline.
/// - **Redirects** are followed (libcurl's limit applies); one to another origin loses its
///   `Authorization` header, so the API key never leaves the server it was given for. A
///   request with a body follows 307 and 308 only, and is sent again whole.
///
/// Uses an ephemeral session (no cookies, no URL cache), so a conditional request and its
/// `304` reach the caller as sent and received. Thread-safe: one transport may serve many
/// concurrent sends.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
  /// The default ``maximumResponseBytes``: 64 MiB.
  public static let defaultMaximumResponseBytes = 64 << 20

  /// The largest body accepted, bytes (> 0).
  public let maximumResponseBytes: Int
  /// The session's `timeoutIntervalForResource`, seconds: no transfer outlives it, whatever
  /// its request's deadline.
  public let resourceTimeoutSeconds: Double
  private let clock: any EngineClock
  private let session: URLSession
  private let delegate: SessionDelegate

  /// - Parameters:
  ///   - maximumResponseBytes: the size cap, bytes (> 0). Default 64 MiB.
  ///   - resourceTimeoutSeconds: the transport-wide ceiling on one transfer, seconds (> 0).
  ///     Default 600.
  ///   - clock: the clock the task-level deadline waits on. Default the wall clock; a test
  ///     passes a manual clock to make the deadline fire without waiting.
  /// - Precondition: both limits are positive; a violation traps.
  public init(
    maximumResponseBytes: Int = URLSessionTransport.defaultMaximumResponseBytes,
    resourceTimeoutSeconds: Double = 600, clock: any EngineClock = SystemClock()
  ) {
    precondition(maximumResponseBytes > 0 && resourceTimeoutSeconds > 0, "limits must be > 0")
    self.maximumResponseBytes = maximumResponseBytes
    self.resourceTimeoutSeconds = resourceTimeoutSeconds
    self.clock = clock
    let configuration = URLSessionConfiguration.ephemeral
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.urlCache = nil
    configuration.httpCookieStorage = nil
    configuration.timeoutIntervalForResource = resourceTimeoutSeconds
    delegate = SessionDelegate()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
  }

  deinit { session.invalidateAndCancel() }

  /// Whether `a` and `b` have the same origin (RFC 6454 §4): scheme and host equal ignoring
  /// case, and the same port, a missing one being the scheme's default (80 for http, 443 for
  /// https). A redirect between two different origins loses its `Authorization` header.
  public static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
    func parts(_ url: URL) -> (String, String, Int?) {
      let scheme = url.scheme?.lowercased() ?? ""
      let port = url.port ?? (scheme == "http" ? 80 : scheme == "https" ? 443 : nil)
      return (scheme, url.host?.lowercased() ?? "", port)
    }
    let (sa, ha, pa) = parts(a)
    let (sb, hb, pb) = parts(b)
    return sa == sb && ha == hb && pa == pb
  }

  /// Most 307 and 308 redirects a request with a body follows (each sent again whole, within
  /// the one deadline): 10, well past any real chain.
  public static let maximumBodyRedirects = 10

  /// Sends `request` and collects the whole answer (see the type's discussion for the
  /// deadline, the size cap and cancellation). The deadline covers the whole send, redirects
  /// included.
  /// - Throws: ``TransportError``.
  /// - Complexity: O(n) memory in the body's size, at most ``maximumResponseBytes``.
  public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let deadline = SendDeadline()
    let clock = self.clock
    let timer = Task {
      do { try await clock.sleep(seconds: request.timeoutSeconds) } catch { return }
      deadline.expire()
    }
    defer { timer.cancel() }
    var current = request
    var hops = 0
    while true {
      let response = try await transfer(current, deadline: deadline)
      guard hops < Self.maximumBodyRedirects, let next = Self.redirect(current, by: response)
      else { return response }
      current = next
      hops += 1
    }
  }

  /// The request a 307 or 308 answer to `request`, which has a body, asks for: the same
  /// method, headers and body at its `Location` (resolved against the request's URL), without
  /// `Authorization` when that is another origin. Nil when the answer is not such a redirect,
  /// the request has no body (libcurl follows its redirects itself), the location is not an
  /// http or https URL, or it is another origin and the request does not follow such
  /// redirects: the answer is then the 3xx itself.
  static func redirect(_ request: HTTPRequest, by response: HTTPResponse) -> HTTPRequest? {
    guard let body = request.body, !body.isEmpty,
      response.statusCode == 307 || response.statusCode == 308,
      let location = response.header("location"),
      let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
      let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https"
    else { return nil }
    var next = request
    next.url = target
    if !sameOrigin(request.url, target) {
      if !request.followsCrossOriginRedirects { return nil }
      next.headers = next.headers.filter { $0.key.lowercased() != "authorization" }
    }
    return next
  }

  /// One transfer of `request`, ended early by `deadline` when it expires.
  private func transfer(_ request: HTTPRequest, deadline: SendDeadline) async throws(TransportError)
    -> HTTPResponse
  {
    var urlRequest = URLRequest(url: request.url)
    urlRequest.httpMethod = request.method
    urlRequest.timeoutInterval = request.timeoutSeconds
    urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
    for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
    urlRequest.httpBody = request.body

    let task = session.dataTask(with: urlRequest)
    let hasBody = !(request.body?.isEmpty ?? true)
    let transfer = Transfer(
      task: task, limit: maximumResponseBytes,
      followsCrossOriginRedirects: request.followsCrossOriginRedirects,
      followsRedirects: !hasBody)
    delegate.register(transfer, for: task.taskIdentifier)
    guard deadline.attach(transfer) else { throw .timedOut }
    let result = await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        transfer.wait(continuation)
        task.resume()
      }
    } onCancel: {
      transfer.finish(.failure(.cancelled))
    }
    return try result.get()
  }
}

/// The one deadline of a send: when it expires, the transfer in progress fails with
/// ``TransportError/timedOut`` and no later one starts.
private final class SendDeadline: @unchecked Sendable {
  private let lock = NSLock()
  private var expired = false
  private var current: Transfer?

  /// Makes `transfer` the one the deadline ends; false when it has expired already.
  func attach(_ transfer: Transfer) -> Bool {
    lock.withLock {
      if expired { return false }
      current = transfer
      return true
    }
  }

  func expire() {
    let transfer: Transfer? = lock.withLock {
      expired = true
      return current
    }
    transfer?.finish(.failure(.timedOut))
  }
}

/// One transfer in progress: the body so far and the one result it ends with.
private final class Transfer: @unchecked Sendable {
  typealias Outcome = Result<HTTPResponse, TransportError>
  private let lock = NSLock()
  private let task: URLSessionTask
  let limit: Int
  private var response: HTTPURLResponse?
  private var body = Data()
  private var outcome: Outcome?
  private var continuation: CheckedContinuation<Outcome, Never>?

  /// ``HTTPRequest/followsCrossOriginRedirects`` of the request.
  let followsCrossOriginRedirects: Bool
  /// Whether libcurl follows the answer's redirects: false for a request with a body, whose
  /// 3xx is the transfer's answer (``URLSessionTransport/send(_:)`` sends a 307 or 308 again
  /// whole).
  let followsRedirects: Bool

  init(
    task: URLSessionTask, limit: Int, followsCrossOriginRedirects: Bool, followsRedirects: Bool
  ) {
    self.task = task
    self.limit = limit
    self.followsCrossOriginRedirects = followsCrossOriginRedirects
    self.followsRedirects = followsRedirects
  }

  /// Resumes `continuation` with the outcome, now if it is known.
  func wait(_ continuation: CheckedContinuation<Outcome, Never>) {
    let ready: Outcome? = lock.withLock {
      if let outcome { return outcome }
      self.continuation = continuation
      return nil
    }
    if let ready { continuation.resume(returning: ready) }
  }

  /// Ends the transfer with `outcome` unless it has ended already, and resumes the sender at
  /// once; then, when the outcome is a failure (a deadline, the cap, cancellation), cancels
  /// the task so that no more bytes are read.
  ///
  /// The cancellation runs on another queue: `URLSessionTask.cancel()` waits for the
  /// session's work queue, which a fast sender keeps busy reading for seconds. Run on the
  /// delegate queue, it stalled the delegate while libcurl went on reading into undelivered
  /// callbacks (hundreds of MB past a 64 MiB cap), and the sender waited as long.
  func finish(_ outcome: Outcome) {
    let (first, waiting): (Bool, CheckedContinuation<Outcome, Never>?) = lock.withLock {
      guard self.outcome == nil else { return (false, nil) }
      self.outcome = outcome
      let c = continuation
      continuation = nil
      return (true, c)
    }
    guard first else { return }
    waiting?.resume(returning: outcome)
    if case .failure = outcome {
      let task = self.task
      DispatchQueue.global().async { task.cancel() }
    }
  }

  /// Whether the answer may proceed: false (and the transfer failed) when its
  /// `Content-Length` is over the cap.
  func received(_ response: URLResponse) -> Bool {
    guard let http = response as? HTTPURLResponse else {
      finish(.failure(.connectionFailed("not an HTTP response")))
      return false
    }
    if http.expectedContentLength > Int64(limit) {
      finish(.failure(.responseTooLarge(limit: limit)))
      return false
    }
    lock.withLock { self.response = http }
    return true
  }

  /// Appends `data` unless the transfer has ended or the body would pass the cap; in that
  /// case the transfer fails and nothing more is kept, whatever libcurl still delivers
  /// before the cancellation reaches it.
  func received(_ data: Data) {
    let over: Bool = lock.withLock {
      guard outcome == nil else { return false }
      guard body.count + data.count <= limit else { return true }
      body.append(data)
      return false
    }
    if over { finish(.failure(.responseTooLarge(limit: limit))) }
  }

  func completed(error: Error?) {
    if let error {
      let nsError = error as NSError
      if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut {
        finish(.failure(.timedOut))
      } else if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorCancelled {
        finish(.failure(.cancelled))
      } else {
        finish(.failure(.connectionFailed(error.localizedDescription)))
      }
      return
    }
    let (response, body) = lock.withLock { (self.response, self.body) }
    guard let response else {
      finish(.failure(.connectionFailed("not an HTTP response")))
      return
    }
    var headers: [String: String] = [:]
    for (name, value) in response.allHeaderFields {
      if let name = name as? String, let value = value as? String { headers[name] = value }
    }
    let answer = HTTPResponse(statusCode: response.statusCode, headers: headers, body: body)
    let expected = response.expectedContentLength
    if expected >= 0, Int64(body.count) < expected, answer.header("content-encoding") == nil {
      finish(.failure(.connectionFailed("body cut short: \(body.count) of \(expected) bytes")))
      return
    }
    finish(.success(answer))
  }
}

/// Routes the session's callbacks to their ``Transfer``.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
  private let lock = NSLock()
  private var transfers: [Int: Transfer] = [:]

  func register(_ transfer: Transfer, for id: Int) { lock.withLock { transfers[id] = transfer } }

  private func transfer(_ id: Int) -> Transfer? { lock.withLock { transfers[id] } }

  func urlSession(
    _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
  ) {
    let proceed = transfer(dataTask.taskIdentifier)?.received(response) ?? false
    completionHandler(proceed ? .allow : .cancel)
  }

  func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
    transfer(dataTask.taskIdentifier)?.received(data)
  }

  /// Follows a redirect, without the credentials when it leaves the origin: a new scheme, host
  /// or port (RFC 6454 §4; what curl and browsers do) drops `Authorization`, so a key sent to
  /// one server never reaches another; a request that does not follow such redirects
  /// (``HTTPRequest/followsCrossOriginRedirects``) ends with the 3xx instead. A redirect
  /// within the origin keeps every header.
  ///
  /// A request with a body is not followed here: libcurl would send a 307's or 308's body
  /// empty, and turn a 301, 302 or 303 into a `GET` without it. Its 3xx is the transfer's
  /// answer; ``URLSessionTransport/send(_:)`` sends it again whole on a 307 or 308 (which keep
  /// the method and the body, RFC 9110 §15.4.8 and §15.4.9), and no caller takes another 3xx
  /// for a delivery.
  func urlSession(
    _ session: URLSession, task: URLSessionTask,
    willPerformHTTPRedirection response: HTTPURLResponse,
    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
  ) {
    if transfer(task.taskIdentifier)?.followsRedirects == false {
      completionHandler(nil)
      return
    }
    var next = request
    let from = task.originalRequest?.url
    if let from, let to = request.url, !URLSessionTransport.sameOrigin(from, to) {
      // Not followed at all for a request meant for its origin alone: the 3xx is the answer.
      if transfer(task.taskIdentifier)?.followsCrossOriginRedirects == false {
        completionHandler(nil)
        return
      }
      next.setValue(nil, forHTTPHeaderField: "Authorization")
    }
    completionHandler(next)
  }

  func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
    let done = lock.withLock { transfers.removeValue(forKey: task.taskIdentifier) }
    done?.completed(error: error)
  }
}
