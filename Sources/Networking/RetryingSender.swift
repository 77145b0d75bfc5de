import RetryTiming

/// What a caller makes of one send: done, worth another send, or final failure.
public enum RetryVerdict<Value, Failure> {
  /// The answer is usable: stop and return `Value`.
  case success(Value)
  /// A failure worth sending again (after the policy's wait), if attempts remain.
  case retry(Failure)
  /// A failure that another send cannot fix: stop at once.
  case fail(Failure)
}

/// How a ``RetryingSender/send(request:classify:)`` ended, with its attempts and waits.
public struct RetryOutcome<Value, Failure> {
  /// Why the sender stopped.
  public enum Ending {
    /// An answer the caller classified as ``RetryVerdict/success(_:)``.
    case succeeded(Value)
    /// An answer the caller classified as ``RetryVerdict/fail(_:)``.
    case failed(Failure)
    /// ``RetryTiming/RetryPolicy/maximumAttempts`` sends all failed; the last failure.
    case attemptsExhausted(lastFailure: Failure)
    /// The last answer's `Retry-After` asked for more than
    /// ``RetryTiming/RetryPolicy/maximumRetryAfterSeconds``: the seconds it asked for.
    case retryAfterTooLong(seconds: Double, lastFailure: Failure)
    /// The task was cancelled while waiting to send again.
    case cancelled(lastFailure: Failure)
    /// ``RetryingSender/deadline`` came before the next send, or before the end of the wait
    /// for it: the last failure, `nil` when nothing was sent.
    case deadlinePassed(lastFailure: Failure?)
  }

  public var ending: Ending
  /// Requests sent, the first included (>= 1).
  public var attempts: Int
  /// The waits before each retry, seconds on the sender's clock, in order
  /// (`waits.count` is the number of retries that were waited for).
  public var waits: [Double]
  /// The last answer's `Retry-After`, seconds from when it arrived; `nil` when it had none,
  /// or when the last send got no answer.
  public var lastRetryAfterSeconds: Double?
}

/// The one retry loop for HTTP: sends a request, lets the caller classify the answer, and
/// waits and sends again as a ``RetryTiming/RetryPolicy`` says.
///
/// After an answer classified ``RetryVerdict/retry(_:)``, in this order:
/// 0. if ``deadline`` has passed, it stops with
///    ``RetryOutcome/Ending/deadlinePassed(lastFailure:)``;
/// 1. if ``RetryTiming/RetryPolicy/maximumAttempts`` sends were made, it stops with
///    ``RetryOutcome/Ending/attemptsExhausted(lastFailure:)``;
/// 2. if the answer's `Retry-After` (either form, RFC 9110 §10.2.3, a date read against the
///    clock's `now()`; see ``HTTPResponse/retryAfterSeconds(now:)``) is beyond what
///    ``RetryTiming/RetryPolicy/waitsOut(retryAfterSeconds:)`` accepts, it stops with
///    ``RetryOutcome/Ending/retryAfterTooLong(seconds:lastFailure:)``;
/// 3. if the wait, `max(Retry-After, full-jitter backoff)`
///    (``RetryTiming/RetryPolicy/wait(retry:retryAfterSeconds:using:)``, one draw of the
///    injected generator per retry), would end at or after ``deadline``, it stops with
///    ``RetryOutcome/Ending/deadlinePassed(lastFailure:)``;
/// 4. otherwise it waits on the injected clock and sends again.
///
/// **Deadline.** With a ``deadline``, no send starts at or after it, and a send gets at most
/// the time left as its total deadline (``HTTPRequest/timeoutSeconds`` lowered to it). So a
/// run of sends, retries and waits, over one call or many calls sharing the deadline, ends by
/// the deadline plus the time the transport takes to notice its own (one clock tick).
///
/// Time and randomness are injected, so with a manual clock and a seeded generator every wait
/// is exact and nothing sleeps. Not `Sendable` (it owns the generator's state); use it from
/// one task at a time.
public struct RetryingSender {
  public let transport: any HTTPTransport
  public var policy: RetryPolicy
  public let clock: any EngineClock
  /// The time on ``clock`` (seconds since the Unix epoch) after which nothing is sent and no
  /// wait begins (see the type's discussion); `nil` (the default) for none.
  public var deadline: Double?
  private var random: AnyRandomNumberGenerator

  /// - Parameters:
  ///   - transport: where requests go.
  ///   - policy: attempts, backoff and the longest `Retry-After` waited out.
  ///   - clock: waits and the `now()` an HTTP-date `Retry-After` is read against. Default the
  ///     wall clock.
  ///   - random: the jitter source. Default the system generator; tests pass a seeded one.
  public init(
    transport: any HTTPTransport, policy: RetryPolicy, clock: any EngineClock = SystemClock(),
    random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) {
    self.transport = transport
    self.policy = policy
    self.clock = clock
    self.random = AnyRandomNumberGenerator(base: random)
  }

  /// Sends until an answer is classified success or fail, or the policy says stop (see the
  /// type's discussion).
  /// - Parameters:
  ///   - request: the request for attempt `n` (1-based), called once before each send; it may
  ///     differ between attempts (an attempt header) and may record the retry.
  ///   - classify: the caller's rule for one send's result: a response (any status) or the
  ///     transport's error.
  /// - Returns: how it ended, with the attempts and waits.
  /// - Throws: only what `request` or `classify` throw, at once.
  /// - Complexity: at most `policy.maximumAttempts` sends and waits.
  public mutating func send<Value, Failure, E: Error>(
    request: (_ attempt: Int) throws(E) -> HTTPRequest,
    classify: (Result<HTTPResponse, TransportError>) throws(E) -> RetryVerdict<Value, Failure>
  ) async throws(E) -> RetryOutcome<Value, Failure> {
    var attempts = 0
    var waits: [Double] = []
    var lastFailure: Failure?
    var lastRetryAfter: Double?
    while true {
      let left = deadline.map { $0 - clock.now() } ?? .infinity
      guard left > 0 else {
        return RetryOutcome(
          ending: .deadlinePassed(lastFailure: lastFailure), attempts: attempts, waits: waits,
          lastRetryAfterSeconds: lastRetryAfter)
      }
      var outgoing = try request(attempts + 1)
      // A send whose own timeout was cut to the time left, and that then timed out, ran into
      // the deadline: it ends as such, whatever the transport's clock said a moment before.
      let cutByDeadline = left < outgoing.timeoutSeconds
      outgoing.timeoutSeconds = min(outgoing.timeoutSeconds, left)
      attempts += 1
      let result: Result<HTTPResponse, TransportError>
      do { result = .success(try await transport.send(outgoing)) } catch {
        result = .failure(error)
      }
      let retryAfter = (try? result.get())?.retryAfterSeconds(now: clock.now())
      lastRetryAfter = retryAfter
      func outcome(_ ending: RetryOutcome<Value, Failure>.Ending) -> RetryOutcome<Value, Failure> {
        RetryOutcome(
          ending: ending, attempts: attempts, waits: waits, lastRetryAfterSeconds: retryAfter)
      }
      let failure: Failure
      let ranIntoDeadline = cutByDeadline && result == .failure(.timedOut)
      switch try classify(result) {
      case .success(let value): return outcome(.succeeded(value))
      case .fail(let error):
        if ranIntoDeadline { return outcome(.deadlinePassed(lastFailure: error)) }
        return outcome(.failed(error))
      case .retry(let error): failure = error
      }
      lastFailure = failure
      if ranIntoDeadline { return outcome(.deadlinePassed(lastFailure: failure)) }
      if let deadline, clock.now() >= deadline {
        return outcome(.deadlinePassed(lastFailure: failure))
      }
      guard attempts < policy.maximumAttempts else {
        return outcome(.attemptsExhausted(lastFailure: failure))
      }
      if let retryAfter, !policy.waitsOut(retryAfterSeconds: retryAfter) {
        return outcome(.retryAfterTooLong(seconds: retryAfter, lastFailure: failure))
      }
      do {
        guard let waited = try await pause(retry: attempts, retryAfterSeconds: retryAfter) else {
          return outcome(.deadlinePassed(lastFailure: failure))
        }
        waits.append(waited)
      } catch {
        return outcome(.cancelled(lastFailure: failure))
      }
    }
  }

  /// Waits before retry `retry` (1-based) outside ``send(request:classify:)``, for a caller
  /// whose retries span several sends (an upload answer that left events unanswered):
  /// `max(retryAfterSeconds, backoff)` on the clock, one draw of the generator.
  /// - Returns: the seconds waited; `nil`, without waiting, when the wait would end at or
  ///   after ``deadline``.
  /// - Throws: `CancellationError` when the task is cancelled while waiting.
  public mutating func pause(retry: Int, retryAfterSeconds: Double?) async throws -> Double? {
    let wait = policy.wait(retry: retry, retryAfterSeconds: retryAfterSeconds, using: &random)
    if let deadline, clock.now() + wait >= deadline { return nil }
    try await clock.sleep(seconds: wait)
    return wait
  }
}

extension RetryVerdict: Sendable where Value: Sendable, Failure: Sendable {}
extension RetryOutcome: Sendable where Value: Sendable, Failure: Sendable {}
extension RetryOutcome.Ending: Sendable where Value: Sendable, Failure: Sendable {}
