import GeofenceSync
import GeofenceTestSupport
import Testing

@Suite("SyncScheduler")
struct SyncSchedulerTests {
  @Test func startIntervalRetryKeyAndDemand() async throws {
    let clock = ManualClock(now: 1000)
    var scheduler = SyncScheduler(intervalSeconds: 900, retryIntervalSeconds: 60)
    scheduler.setKey("k1")
    var outcomes = [true, false, true, true, true]
    var ran: [(SyncTrigger, Double)] = []
    func step() async throws {
      try await scheduler.runNext(clock: clock) { trigger in
        ran.append((trigger, clock.now()))
        return outcomes.removeFirst()
      }
    }
    try await step()  // start, at once
    try await step()  // interval, 900 s later; fails
    try await step()  // retry, 60 s later
    scheduler.setKey("k2")
    try await step()  // key changed, at once
    clock.advance(by: 10)
    scheduler.requestSync()
    try await step()  // demand, at once
    #expect(ran.map(\.0) == [.start, .interval, .retry, .keyChanged, .demand])
    #expect(ran.map(\.1) == [1000, 1900, 1960, 1960, 1970])
    #expect(clock.sleeps == [900, 60])
    #expect(scheduler.due(at: 1970 + 899) == nil)
    #expect(scheduler.due(at: 1970 + 900) == .interval)
  }
}
