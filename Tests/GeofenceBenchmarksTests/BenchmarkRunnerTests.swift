import Dispatch
import GeofenceGeometry
import GeofenceIndex
import GeofenceTransitions
import Testing

@testable import GeofenceBenchmarks

@Suite struct BenchmarkRunnerTests {
  static func options(threads: Int) -> BenchmarkOptions {
    var o = BenchmarkOptions()
    o.threads = threads
    o.repetitions = 1
    o.minimumPassSeconds = 0
    return o
  }

  @Test func roundsCoverTheMinimumPassTimeWithATenthMore() {
    #expect(BenchmarkRunner.rounds(lasting: 0.2, onePass: 0.003) == 74)  // 73.3
    #expect(BenchmarkRunner.rounds(lasting: 0.2, onePass: 0.0007) == 315)  // 314.3
    #expect(BenchmarkRunner.rounds(lasting: 0.2, onePass: 0.19) == 2)  // 1.16
    #expect(BenchmarkRunner.rounds(lasting: 0.2, onePass: 0.2) == 1)
    #expect(BenchmarkRunner.rounds(lasting: 0.2, onePass: 5) == 1)
    #expect(BenchmarkRunner.rounds(lasting: 0, onePass: 0.001) == 1)
    // A pass too fast for the clock counts as 1 µs; the count is capped.
    #expect((550_000...550_001).contains(BenchmarkRunner.rounds(lasting: 0.5, onePass: 0)))
    #expect(BenchmarkRunner.rounds(lasting: 600, onePass: 1e-9) == 1_000_000)
  }

  @Test func calibrationGrowsTheRoundsUntilAPassLastsATenth() {
    // A pass of k rounds takes k ms: 1 and 10 rounds are under 0.2 s / 10, 100 are not; then
    // 1.1 · 0.2 s / 1 ms = 220 rounds.
    var asked: [Int] = []
    let rounds = BenchmarkRunner.calibratedRounds(lasting: 0.2) { k in
      asked.append(k)
      return Double(k) * 0.001
    }
    #expect(asked == [1, 10, 100])
    #expect((220...221).contains(rounds))
    #expect(BenchmarkRunner.calibratedRounds(lasting: 0) { _ in 1 } == 1)
  }

  @Test func replayedPassesGiveTheSameAnswers() {
    // Passes replayed many times over must give the single pass's checksum and detector
    // counts (each round starts new detectors, so no fix goes back in time).
    let w = WorkloadGenerator.make(kind: .transitions, regionCount: 300, fixCount: 2_000, seed: 9)
    let once = BenchmarkRunner.run(w, options: Self.options(threads: 2))
    var o = Self.options(threads: 2)
    // Several rounds of every kind, whatever the machine's load.
    o.fixedRounds = 4
    let replayed = BenchmarkRunner.run(w, options: o)
    #expect(replayed.queryRounds == 4 && replayed.multiThreadQueryRounds == 4)
    #expect(replayed.detectorRounds == 4 && replayed.multiThreadDetectorRounds == 4)
    #expect(once.queryRounds == 1 && once.detectorRounds == 1)
    #expect(once.multiThreadQueryRounds == 1 && once.multiThreadDetectorRounds == 1)
    #expect(replayed.checksum == bruteForceChecksum(w))
    #expect(replayed.checksum == once.checksum)
    #expect(replayed.detectorCounts == once.detectorCounts)
    #expect(replayed.detectorCounts.exits > 0)
    #expect(
      replayed.singleThreadFixesPerSecond > 0 && replayed.detectorMultiThreadFixesPerSecond > 0)
  }

  @Test(arguments: [WorkloadKind.metro, .global, .mixed, .transitions])
  func checksumEqualsBruteForce(kind: WorkloadKind) {
    let w = WorkloadGenerator.make(kind: kind, regionCount: 400, fixCount: 3_000, seed: 21)
    let expected = bruteForceChecksum(w)
    let result = BenchmarkRunner.run(w, options: Self.options(threads: 2))
    #expect(result.checksum == expected)
    #expect(result.complete)
    #expect(result.fixesMeasured == 3_000)
    #expect(result.singleThreadFixesPerSecond > 0)
    #expect(result.multiThreadFixesPerSecond > 0)
    #expect(result.latencyP50Nanoseconds <= result.latencyP99Nanoseconds)
    #expect(result.indexBytes > 0)
  }

  @Test func metroHasPairs() {
    let w = WorkloadGenerator.make(kind: .metro, regionCount: 3_000, fixCount: 1_000, seed: 2)
    #expect(bruteForceChecksum(w).pairs > 0)
  }

  @Test func checksumDefinition() {
    var c = Checksum()
    c.add(fixIndex: 3, slot: 5)
    c.add(fixIndex: 4, slot: 7)
    #expect(c == Checksum(pairs: 2, slotSum: 12, weightedSum: 43))
    var a = Checksum()
    a.add(fixIndex: 3, slot: 5)
    var b = Checksum()
    b.add(fixIndex: 4, slot: 7)
    a.merge(b)
    #expect(a == c)
  }

  @Test func enterAndExitCountsEqualBruteForce() {
    let w = WorkloadGenerator.make(kind: .transitions, regionCount: 300, fixCount: 2_500, seed: 6)
    var enters: UInt64 = 0
    var exits: UInt64 = 0
    for k in 0..<w.trackCount {
      var previous: Set<Int> = []
      for f in w.trackRange(k) {
        let v = UnitVector(w.fixes[f])
        let now = Set(w.regions.indices.filter { w.regions[$0].contains(v) })
        enters += UInt64(now.subtracting(previous).count)
        exits += UInt64(previous.subtracting(now).count)
        previous = now
      }
    }
    // Without hysteresis, outlier filter, dwell or initial suppression the detector's enters
    // and exits are exactly the membership changes.
    var configuration = TransitionConfiguration()
    configuration.hysteresisMinimumMeters = 0
    configuration.hysteresisRadiusFraction = 0
    configuration.loiteringDelaySeconds = nil
    configuration.outlierFilter = nil
    for threads in [1, 2, 3] {
      var o = Self.options(threads: threads)
      o.detectorConfiguration = configuration
      let result = BenchmarkRunner.run(w, options: o)
      #expect(result.detectorCounts.enters == enters)
      #expect(result.detectorCounts.exits == exits)
      #expect(result.detectorCounts.dwells == 0)
      #expect(result.detectorSingleThreadFixesPerSecond > 0)
    }
    #expect(enters > 0 && exits > 0)
  }

  @Test func defaultDetectorSeesTransitionsOnTransitionTracks() {
    let w = WorkloadGenerator.make(kind: .transitions, regionCount: 300, fixCount: 2_000, seed: 6)
    let result = BenchmarkRunner.run(w, options: Self.options(threads: 2))
    // One enter and one exit of the circled region every 4-10 fixes at least, and no fix
    // looks like an outlier.
    #expect(result.detectorCounts.exits >= 2_000 / 12)
    #expect(result.detectorCounts.enters >= result.detectorCounts.exits)
    #expect(result.detectorCounts.droppedFixes == 0)
  }

  @Test func timeBudgetMeasuresWholeTracksOnly() {
    let w = WorkloadGenerator.make(kind: .metro, regionCount: 100, fixCount: 5_000, seed: 2)
    var o = Self.options(threads: 2)
    o.timeBudgetSeconds = 0
    let result = BenchmarkRunner.run(w, options: o)
    #expect(result.tracksMeasured == 1)
    #expect(result.fixesMeasured == 1_000)
    #expect(!result.complete)
    #expect(result.checksum == bruteForceChecksum(w.prefix(tracks: 1)))
  }

  @Test func trackOrderIsLongestFirstAndCoversEveryTrackOnce() {
    let w = WorkloadGenerator.make(kind: .metro, regionCount: 1, fixCount: 7_500, seed: 1)
    // Seven tracks of 1,000 fixes, then one of 500.
    #expect(BenchmarkRunner.trackOrder(w, tracks: w.trackCount) == Array(0..<8))
    let uneven = Workload(
      name: "uneven", kind: .metro, regions: w.regions, fixes: Array(w.fixes[0..<10]),
      fixTimes: Array(w.fixTimes[0..<10]), trackStarts: [0, 1, 4, 6, 9, 10])
    #expect(BenchmarkRunner.trackOrder(uneven, tracks: 5) == [1, 3, 2, 0, 4])
    #expect(BenchmarkRunner.trackOrder(uneven, tracks: 3) == [1, 2, 0])
  }

  /// Every item is taken exactly once, however many threads ask.
  @Test func workQueueHandsOutEachItemOnce() {
    let queue = BenchmarkRunner.WorkQueue(count: 10_000)
    let taken = BenchmarkRunner.PerThread(count: 4) { [Int]() }
    DispatchQueue.concurrentPerform(iterations: 4) { g in
      while let item = queue.take() { taken.pointer(g).pointee.append(item) }
    }
    #expect(taken.values.flatMap { $0 }.sorted() == Array(0..<10_000))
    #expect(queue.take() == nil)
  }

  /// Tracks of unequal length and cost: the same pairs and events on 1 and on 3 threads.
  @Test func unevenTracksGiveTheSameAnswersOnEveryThreadCount() {
    let w = WorkloadGenerator.make(kind: .transitions, regionCount: 300, fixCount: 3_000, seed: 4)
    let starts = [0, 1_700, 1_750, 2_600, 3_000]
    let uneven = Workload(
      name: "uneven", kind: .transitions, regions: w.regions, fixes: w.fixes,
      fixTimes: w.fixTimes, trackStarts: starts)
    let index = GridIndex(regions: uneven.regions)
    let order = BenchmarkRunner.trackOrder(uneven, tracks: 4)
    #expect(order == [0, 2, 3, 1])
    let single = BenchmarkRunner.parallelPass(uneven, index, order, threads: 1, rounds: 2).0
    let multi = BenchmarkRunner.parallelPass(uneven, index, order, threads: 3, rounds: 2).0
    #expect(single == multi)
    #expect(single[0] == bruteForceChecksum(uneven))
    let set = RegionSet(ids: uneven.regions.indices.map { String($0) }, regions: uneven.regions)
    let one = BenchmarkRunner.detectorPass(
      uneven, set, TransitionConfiguration(), Array(0..<4), threads: 1, rounds: 1
    ).0
    let three = BenchmarkRunner.detectorPass(
      uneven, set, TransitionConfiguration(), order, threads: 3, rounds: 3
    ).0
    #expect(three == [one[0], one[0], one[0]])
    #expect(one[0].enters > 0)
  }

  @Test func perThreadValuesSitOnTheirOwnCacheLines() {
    var made = 0
    let cells = BenchmarkRunner.PerThread(count: 3) { () -> [Int32] in
      made += 1
      return [Int32(made)]
    }
    let addresses = (0..<3).map { UInt(bitPattern: cells.pointer($0)) }
    for a in addresses { #expect(a % 128 == 0) }
    #expect(addresses[1] - addresses[0] >= 128)
    #expect(addresses[2] - addresses[1] >= 128)
    cells.pointer(1).pointee.append(7)
    #expect(cells.values == [[1], [2, 7], [3]])
    // A value wider than one block gets a stride of whole blocks.
    #expect(
      BenchmarkRunner.PerThread<
        (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)
      >.stride == 256)
  }

  @Test func percentiles() {
    let values = (1...100).map(Double.init)
    #expect(BenchmarkRunner.percentile(values, 0.5) == 50)
    #expect(BenchmarkRunner.percentile(values, 0.99) == 99)
    #expect(BenchmarkRunner.median([3, 1, 2]) == 2)
    #expect(BenchmarkRunner.median([4, 1, 2, 3]) == 2.5)
  }
}
