import Dispatch

/// Runs `body` from synchronous command code (the main thread, outside the cooperative pool)
/// and waits for its result, as ``SyncCommand/syncWaiting(_:)`` does for a sync.
///
/// `body` may capture values that are not `Sendable` (an uploader and its outbox): the caller
/// blocks until `body` is done and touches them neither meanwhile nor from another thread.
/// - Throws: what `body` throws.
func waitingFor<T>(_ body: @escaping () async throws -> T) throws -> T {
  let box = WaitingBox(body)
  let semaphore = DispatchSemaphore(value: 0)
  Task {
    do { box.result = .success(try await box.body()) } catch { box.result = .failure(error) }
    semaphore.signal()
  }
  semaphore.wait()
  guard let result = box.result else { preconditionFailure("the task ended without a result") }
  return try result.get()
}

/// Carries ``waitingFor(_:)``'s body and result across the task boundary; the semaphore
/// orders every access.
private final class WaitingBox<T>: @unchecked Sendable {
  let body: () async throws -> T
  var result: Result<T, any Error>?
  init(_ body: @escaping () async throws -> T) { self.body = body }
}
