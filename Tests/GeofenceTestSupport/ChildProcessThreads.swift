import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Threads of their own for tests that wait on child processes: the `geofence` binary, the
/// reference server, `python3`.
///
/// Such a test blocks its thread while the child runs (`Process.waitUntilExit`, a pipe read to
/// its end) or sleeps (a server's deadline, a drip). Swift Testing runs test functions on the
/// concurrency runtime's cooperative pool, which has one thread per core and never adds one
/// for a blocked thread, so on a two-core machine two such tests leave every in-process test
/// waiting and the cores idle. Give those tests ``Trait/waitsOnChildProcesses``: their bodies
/// then run here, and the cooperative threads stay free for the tests that compute.
///
/// A fixed set of threads, started at first use, takes jobs in the order they come. There are
/// two per core: a test here often waits on an idle child, so more of them than cores keeps
/// the cores busy; each one still runs one test at a time, so the number of children running
/// at once stays bounded.
public final class ChildProcessThreads: TaskExecutor, @unchecked Sendable {
  /// The executor the trait uses, with two threads per active core (at least 4).
  public static let shared = ChildProcessThreads(
    threadCount: max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))

  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []
  private var next = 0

  /// Starts `threadCount` threads that run jobs until the process ends, and makes the test
  /// process ignore SIGPIPE: a test writing the standard input of a child that has already
  /// exited (a usage error exits before reading it) then gets EPIPE from the write instead of
  /// the whole test process being killed.
  public init(threadCount: Int) {
    signal(SIGPIPE, SIG_IGN)
    for i in 0..<max(1, threadCount) {
      let thread = Thread { [unowned self] in self.work() }
      thread.name = "child-process-tests-\(i)"
      thread.start()
    }
  }

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.withLock {
      jobs.append(job)
      condition.signal()
    }
  }

  private func work() {
    while true {
      let job = condition.withLock { () -> UnownedJob in
        while next == jobs.count { condition.wait() }
        let job = jobs[next]
        next += 1
        if next == jobs.count {
          jobs.removeAll(keepingCapacity: true)
          next = 0
        }
        return job
      }
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}

/// Runs each test of a suite, or one test, on ``ChildProcessThreads`` (see there).
public struct WaitsOnChildProcessesTrait: SuiteTrait, TestTrait, TestScoping {
  public var isRecursive: Bool { true }

  public func provideScope(
    for test: Test, testCase: Test.Case?,
    performing function: @Sendable () async throws -> Void
  ) async throws {
    try await withTaskExecutorPreference(ChildProcessThreads.shared) {
      try await function()
    }
  }
}

extension Trait where Self == WaitsOnChildProcessesTrait {
  /// The test, or every test of the suite, waits on child processes: run it on
  /// ``ChildProcessThreads``, not on the cooperative pool.
  public static var waitsOnChildProcesses: Self { Self() }
}
