import Dispatch
import Synchronization
import GeofenceGeometry
import GeofenceIndex
import GeofenceTransitions

/// Settings of one benchmark run.
public struct BenchmarkOptions: Sendable {
  /// Threads for the all-cores figures. Default: the number of online processors.
  public var threads: Int = SystemProbes.processorCount()
  /// Timed passes per figure; the median is reported. Default 3, valid 1...100.
  public var repetitions: Int = 3
  /// Target length of a timed throughput pass, seconds (>= 0). A pass replays the measured
  /// fixes as many whole times (rounds) as untimed calibration passes of the same kind (1 or
  /// all threads, query or detector) say it takes to last this long, plus a tenth, so that
  /// timer resolution, thread start-up and a single scheduler tick do not decide a figure of a
  /// pass that would otherwise last a millisecond. 0: one round, no calibration. Default 0.2.
  public var minimumPassSeconds: Double = 0.2
  /// Rounds of every timed pass, replacing the calibration by ``minimumPassSeconds`` when
  /// set (1...1,000,000): the same work on every run, for instruction counts (callgrind) and
  /// for tests. Default `nil`.
  public var fixedRounds: Int? = nil
  /// Fixes per latency batch (latency per fix = batch time / batch size). Default 100.
  public var latencyBatchSize: Int = 100
  /// Wall-time budget of the first single-thread pass, seconds. When it runs out, the pass
  /// stops at the end of the current track and every figure uses only the tracks done so far
  /// (the result says so in ``BenchmarkResult/complete``). Default 120.
  public var timeBudgetSeconds: Double = 120
  /// Cell size passed to ``GridIndex``; `nil` lets the index choose. Default `nil`.
  public var cellSizeDegrees: Double? = nil
  /// Whether to measure the detector path as well. Default true.
  public var measureDetector: Bool = true
  /// Rules of the detector path. Default: ``TransitionConfiguration``'s defaults (hysteresis,
  /// dwell after 300 s, outlier filter). Fixes carry their track time and no accuracy.
  public var detectorConfiguration = TransitionConfiguration()

  public init() {}
}

/// The figures of one workload at one size.
public struct BenchmarkResult: Sendable {
  public var workload: String
  public var kind: WorkloadKind
  public var regionCount: Int
  /// Fixes in the workload.
  public var fixCount: Int
  /// Fixes measured (all of them unless the time budget ran out).
  public var fixesMeasured: Int
  public var tracksMeasured: Int
  /// True when every fix was measured, so the checksum covers the whole workload.
  public var complete: Bool { fixesMeasured == fixCount }
  /// Median index build time, seconds.
  public var buildSeconds: Double
  /// Bytes held by the index, including the regions' geometry.
  public var indexBytes: Int
  public var bytesPerRegion: Double {
    regionCount == 0 ? 0 : Double(indexBytes) / Double(regionCount)
  }
  /// Growth of the resident set across the first build, bytes (a cross-check of `indexBytes`).
  public var residentBytesDelta: Int
  /// How the index filed the regions: finest cell edge, levels probed per query, entries
  /// (cell, region) per region, regions checked on every query.
  public var indexShape: IndexShape
  /// Median fixes per second of the index query, one thread.
  public var singleThreadFixesPerSecond: Double
  /// Rounds (whole replays of the measured fixes) per timed pass, by kind of pass (see
  /// ``BenchmarkOptions/minimumPassSeconds``): query on 1 and on all threads, detector on 1
  /// and on all threads.
  public var queryRounds: Int
  public var multiThreadQueryRounds: Int
  public var detectorRounds: Int
  public var multiThreadDetectorRounds: Int
  /// Median fixes per second of the index query on ``threads`` threads.
  public var multiThreadFixesPerSecond: Double
  public var threads: Int
  /// Per-fix latency percentiles, nanoseconds, from batches of the first single-thread pass.
  public var latencyP50Nanoseconds: Double
  public var latencyP99Nanoseconds: Double
  /// Digest of the containment pairs of the measured fixes.
  public var checksum: Checksum
  /// Whether the detector path was measured (``BenchmarkOptions/measureDetector``).
  public var detectorMeasured: Bool
  /// Detector path (``TransitionDetector`` per device, one device per track), median fixes
  /// per second; 0 when not run.
  public var detectorSingleThreadFixesPerSecond: Double
  public var detectorMultiThreadFixesPerSecond: Double
  /// Events and dropped fixes of the detector path, over the measured tracks.
  public var detectorCounts: DetectorCounts
}

/// The shape of a built ``GridIndex``.
public struct IndexShape: Hashable, Sendable {
  public var finestCellSizeDegrees: Double
  public var levels: [Int]
  public var cellCount: Int
  public var entriesPerRegion: Double
  public var everywhereCount: Int

  public init(_ index: GridIndex) {
    finestCellSizeDegrees = index.finestCellSizeDegrees
    levels = index.nonEmptyLevelList
    cellCount = index.cellCount
    entriesPerRegion = index.count == 0 ? 0 : Double(index.entryCount) / Double(index.count)
    everywhereCount = index.everywhereCount
  }
}

/// What the detector path produced.
public struct DetectorCounts: Hashable, Sendable {
  public var enters: UInt64 = 0
  public var exits: UInt64 = 0
  public var dwells: UInt64 = 0
  /// Fixes the detector dropped (outliers, duplicates, ...).
  public var droppedFixes: UInt64 = 0

  public init() {}

  public var events: UInt64 { enters &+ exits &+ dwells }

  mutating func merge(_ o: DetectorCounts) {
    enters &+= o.enters
    exits &+= o.exits
    dwells &+= o.dwells
    droppedFixes &+= o.droppedFixes
  }
}

/// Runs the measurements on one workload.
public enum BenchmarkRunner {
  /// Builds the index, then measures the query path and the detector path.
  ///
  /// The timed loops do not allocate: each thread owns one result buffer, reserved before the
  /// clock starts. Checksums of every pass and thread split are compared; a difference stops
  /// the program, since it means the index answered differently from one pass to the next.
  /// - Parameters:
  ///   - workload: regions and tracks.
  ///   - options: threads, repetitions, budget.
  ///   - progress: called with a short status text between phases and after each track of the
  ///     first pass (from the calling thread).
  public static func run(
    _ workload: Workload, options: BenchmarkOptions = BenchmarkOptions(),
    progress: (String) -> Void = { _ in }
  ) -> BenchmarkResult {
    let repetitions = max(1, options.repetitions)
    let threads = max(1, options.threads)
    let label = "\(workload.name) N=\(workload.regions.count)"

    // Build.
    progress("\(label): building index")
    let residentBefore = SystemProbes.residentBytes()
    var buildTimes: [Double] = []
    var index = GridIndex(regions: [], cellSizeDegrees: options.cellSizeDegrees)
    var residentDelta = 0
    for r in 0..<repetitions {
      index = GridIndex(regions: [], cellSizeDegrees: options.cellSizeDegrees)
      let start = SystemProbes.monotonicNanoseconds()
      index = GridIndex(regions: workload.regions, cellSizeDegrees: options.cellSizeDegrees)
      buildTimes.append(seconds(since: start))
      if r == 0 { residentDelta = SystemProbes.residentBytes() - residentBefore }
    }
    let indexBytes = IndexMemory.bytes(of: index)

    // First single-thread pass: sets the measured prefix and the latency figures.
    var buffer = reservedBuffer()
    var latencies: [Double] = []
    latencies.reserveCapacity(
      workload.fixes.count / max(1, options.latencyBatchSize) + workload.trackCount + 1)
    let budget = UInt64(max(0, options.timeBudgetSeconds) * 1e9)
    var tracksDone = 0
    var checksum = Checksum()
    workload.fixes.withUnsafeBufferPointer { fixes in
      let start = SystemProbes.monotonicNanoseconds()
      var lastReport = start
      while tracksDone < workload.trackCount {
        let range = workload.trackRange(tracksDone)
        var batchStart = range.lowerBound
        while batchStart < range.upperBound {
          let batchEnd = min(batchStart + options.latencyBatchSize, range.upperBound)
          let t0 = SystemProbes.monotonicNanoseconds()
          queryFixes(index, fixes, batchStart..<batchEnd, &buffer, &checksum)
          let t1 = SystemProbes.monotonicNanoseconds()
          latencies.append(Double(t1 - t0) / Double(batchEnd - batchStart))
          batchStart = batchEnd
        }
        tracksDone += 1
        let now = SystemProbes.monotonicNanoseconds()
        if now - lastReport > 250_000_000 {
          lastReport = now
          progress("\(label): query pass 1, track \(tracksDone)/\(workload.trackCount)")
        }
        if now - start > budget { break }
      }
    }
    let fixesMeasured = workload.trackStarts[tracksDone]
    let measured = 0..<fixesMeasured
    latencies.sort()

    // Timed passes, each kind with its own calibrated rounds. The first pass above is slowed
    // by its latency clock reads, so it is not one of them.
    let minimum = max(0, options.minimumPassSeconds)
    let fixed = options.fixedRounds.map { min(1_000_000, max(1, $0)) }
    let (queryRounds, singleRates) = timedPasses(
      lasting: minimum, fixedRounds: fixed, repetitions: repetitions, fixes: fixesMeasured,
      announce: { progress("\(label): query pass \($0 + 1)/\(repetitions), 1 thread") }
    ) { count in
      var same = true
      let start = SystemProbes.monotonicNanoseconds()
      workload.fixes.withUnsafeBufferPointer { fixes in
        for _ in 0..<count {
          var sum = Checksum()
          queryFixes(index, fixes, measured, &buffer, &sum)
          same = same && sum == checksum
        }
      }
      let elapsed = seconds(since: start)
      precondition(same, "query answers changed between passes")
      return elapsed
    }

    let order = trackOrder(workload, tracks: tracksDone)
    let (multiQueryRounds, multiRates) = timedPasses(
      lasting: minimum, fixedRounds: fixed, repetitions: repetitions, fixes: fixesMeasured,
      announce: { progress("\(label): query pass \($0 + 1)/\(repetitions), \(threads) threads") }
    ) { count in
      let (sums, elapsed) = parallelPass(
        workload, index, order, threads: threads, rounds: count)
      precondition(
        sums.allSatisfy { $0 == checksum },
        "query answers differ between 1 and \(threads) threads")
      return elapsed
    }

    // Detector path.
    var detectorSingle: [Double] = []
    var detectorMulti: [Double] = []
    var counts = DetectorCounts()
    var detectorRounds = 1
    var multiDetectorRounds = 1
    if options.measureDetector {
      progress("\(label): building detector region set")
      let set = RegionSet(
        ids: workload.regions.indices.map { String($0) }, regions: workload.regions,
        cellSizeDegrees: options.cellSizeDegrees)
      let configuration = options.detectorConfiguration
      // An untimed first pass gives the counts every later round is checked against.
      progress("\(label): detector pass 0, 1 thread")
      let inOrder = Array(0..<tracksDone)
      counts = detectorPass(workload, set, configuration, inOrder, threads: 1, rounds: 1).0[0]
      (detectorRounds, detectorSingle) = timedPasses(
        lasting: minimum, fixedRounds: fixed, repetitions: repetitions, fixes: fixesMeasured,
        announce: { progress("\(label): detector pass \($0 + 1)/\(repetitions), 1 thread") }
      ) { count in
        let (c, elapsed) = detectorPass(
          workload, set, configuration, inOrder, threads: 1, rounds: count)
        precondition(c.allSatisfy { $0 == counts }, "detector answers changed between passes")
        return elapsed
      }
      (multiDetectorRounds, detectorMulti) = timedPasses(
        lasting: minimum, fixedRounds: fixed, repetitions: repetitions, fixes: fixesMeasured,
        announce: {
          progress("\(label): detector pass \($0 + 1)/\(repetitions), \(threads) threads")
        }
      ) { count in
        let (c, elapsed) = detectorPass(
          workload, set, configuration, order, threads: threads, rounds: count)
        precondition(
          c.allSatisfy { $0 == counts },
          "detector answers differ between 1 and \(threads) threads")
        return elapsed
      }
    }

    return BenchmarkResult(
      workload: workload.name, kind: workload.kind, regionCount: workload.regions.count,
      fixCount: workload.fixes.count, fixesMeasured: fixesMeasured, tracksMeasured: tracksDone,
      buildSeconds: median(buildTimes), indexBytes: indexBytes, residentBytesDelta: residentDelta,
      indexShape: IndexShape(index),
      singleThreadFixesPerSecond: median(singleRates),
      queryRounds: queryRounds, multiThreadQueryRounds: multiQueryRounds,
      detectorRounds: detectorRounds, multiThreadDetectorRounds: multiDetectorRounds,
      multiThreadFixesPerSecond: median(multiRates),
      threads: threads, latencyP50Nanoseconds: percentile(latencies, 0.50),
      latencyP99Nanoseconds: percentile(latencies, 0.99), checksum: checksum,
      detectorMeasured: options.measureDetector,
      detectorSingleThreadFixesPerSecond: detectorSingle.isEmpty ? 0 : median(detectorSingle),
      detectorMultiThreadFixesPerSecond: detectorMulti.isEmpty ? 0 : median(detectorMulti),
      detectorCounts: counts)
  }

  // MARK: Inner loops

  /// Queries every fix in `range` and adds its pairs to `checksum`. Allocation-free once
  /// `buffer` has grown to the largest answer.
  @inline(never)
  static func queryFixes(
    _ index: GridIndex, _ fixes: UnsafeBufferPointer<Coordinate>, _ range: Range<Int>,
    _ buffer: inout SlotBuffer, _ checksum: inout Checksum
  ) {
    for f in range {
      index.query(fixes[f], into: &buffer)
      for slot in buffer { checksum.add(fixIndex: f, slot: slot) }
    }
  }

  /// The detector path over tracks `range` of `workload`: one ``TransitionDetector`` per track
  /// (device), fed every fix in order; counts the events by type. `events` is cleared after
  /// each fix and keeps its capacity.
  @inline(never)
  static func detectTracks(
    _ set: RegionSet, _ configuration: TransitionConfiguration,
    _ fixes: UnsafeBufferPointer<Coordinate>, _ times: UnsafeBufferPointer<Double>,
    _ starts: UnsafeBufferPointer<Int>, _ tracks: Range<Int>, _ usesTime: Bool,
    _ events: inout [TransitionEvent]
  ) -> DetectorCounts {
    var counts = DetectorCounts()
    for k in tracks {
      var detector = TransitionDetector(
        regions: set, configuration: configuration, usesTime: usesTime)
      // One fix value, updated in place: a fresh LocationFix per fix costs an outlined copy
      // and two destroys (its optional device id is a reference), which is not detector work.
      var fix = LocationFix(
        coordinate: Coordinate(uncheckedLatitude: 0, longitude: 0), time: 0, sourceIndex: 0)
      for f in starts[k]..<starts[k + 1] {
        fix.coordinate = fixes[f]
        fix.time = times[f]
        fix.sourceIndex = f
        if case .dropped = detector.process(fix, into: &events) { counts.droppedFixes += 1 }
        for i in events.indices {
          switch events[i].type {
          case .enter: counts.enters += 1
          case .exit: counts.exits += 1
          case .dwell: counts.dwells += 1
          }
        }
        if !events.isEmpty { events.removeAll(keepingCapacity: true) }
      }
    }
    return counts
  }

  /// Runs the detector path over the tracks `order` on `threads` threads, `rounds` times over
  /// (each round with new detectors; see ``WorkQueue`` for who takes which track); returns the
  /// merged counts of each round and the wall time in seconds.
  static func detectorPass(
    _ workload: Workload, _ set: RegionSet, _ configuration: TransitionConfiguration,
    _ order: [Int], threads: Int, rounds: Int
  ) -> ([DetectorCounts], Double) {
    let usesTime = workload.hasFixTimes
    let counts = PerThread(count: threads) {
      [DetectorCounts](repeating: DetectorCounts(), count: rounds)
    }
    let queue = WorkQueue(count: rounds * order.count)
    let eventBuffers = PerThread(count: threads) { () -> [TransitionEvent] in
      var a: [TransitionEvent] = []
      a.reserveCapacity(1024)
      return a
    }
    let elapsed: Double = workload.fixes.withUnsafeBufferPointer { fixes in
      workload.fixTimes.withUnsafeBufferPointer { times in
        workload.trackStarts.withUnsafeBufferPointer { starts in
          nonisolated(unsafe) let fixes = fixes
          nonisolated(unsafe) let times = times
          nonisolated(unsafe) let starts = starts
          let start = SystemProbes.monotonicNanoseconds()
          let work: @Sendable (Int) -> Void = { g in
            while let item = queue.take() {
              let k = order[item % order.count]
              counts.pointer(g).pointee[item / order.count].merge(
                detectTracks(
                  set, configuration, fixes, times, starts, k..<k + 1, usesTime,
                  &eventBuffers.pointer(g).pointee))
            }
          }
          if threads == 1 {
            work(0)
          } else {
            DispatchQueue.concurrentPerform(iterations: threads, execute: work)
          }
          return seconds(since: start)
        }
      }
    }
    var merged = [DetectorCounts](repeating: DetectorCounts(), count: rounds)
    for perRound in counts.values {
      for round in 0..<rounds { merged[round].merge(perRound[round]) }
    }
    return (merged, elapsed)
  }

  // MARK: Threads

  /// Tracks `0..<tracks`, longest first (ties in track order): the order in which the
  /// threads of a multi-threaded pass take them, so that the long tracks do not come last.
  static func trackOrder(_ workload: Workload, tracks: Int) -> [Int] {
    let length = { (k: Int) in workload.trackStarts[k + 1] - workload.trackStarts[k] }
    return (0..<tracks).sorted { (length($0), $1) > (length($1), $0) }
  }

  /// Work items `0 ..< count` for the threads of one pass, each handed out once, in order, to
  /// whichever thread asks first. A pass of `r` rounds over tracks `order` has `r × n` items:
  /// item `i` is track `order[i % n]` of round `i / n`. Replaying devices this way, a thread
  /// that finishes a track takes the next one, so one costly track delays the pass by itself
  /// only (a split of the tracks into fixed halves left one thread idle while the other
  /// finished the costlier half). One relaxed atomic add a track.
  final class WorkQueue: Sendable {
    let count: Int
    private let next = Atomic<Int>(0)

    init(count: Int) { self.count = count }

    /// The next item, or nil when every item has been handed out.
    func take() -> Int? {
      let item = next.wrappingAdd(1, ordering: .relaxed).oldValue
      return item < count ? item : nil
    }
  }

  /// Per-thread values, each in its own 128-byte block (two cache lines, so that neither a
  /// shared line nor the adjacent-line prefetcher couples two threads): a thread that writes
  /// its value (an array's buffer pointer after an append, a running total) never invalidates
  /// another thread's cached value.
  final class PerThread<Value>: @unchecked Sendable {
    /// Bytes between consecutive values: a multiple of 128 holding one value.
    static var stride: Int { (MemoryLayout<Value>.stride + 127) / 128 * 128 }
    let raw: UnsafeMutableRawPointer
    let count: Int
    init(count: Int, _ make: () -> Value) {
      self.count = count
      raw = .allocate(
        byteCount: max(1, count) * Self.stride,
        alignment: max(128, MemoryLayout<Value>.alignment))
      for i in 0..<count { pointer(i).initialize(to: make()) }
    }
    deinit {
      for i in 0..<count { pointer(i).deinitialize(count: 1) }
      raw.deallocate()
    }
    /// Every thread's value, once the threads are done.
    var values: [Value] { (0..<count).map { pointer($0).pointee } }
    /// The value of thread `i`; only thread `i` may touch it while the threads run.
    func pointer(_ i: Int) -> UnsafeMutablePointer<Value> {
      (raw + i * Self.stride).assumingMemoryBound(to: Value.self)
    }
  }

  static func reservedBuffer() -> SlotBuffer {
    SlotBuffer(capacity: 4096)
  }

  /// Queries the fixes of the tracks `order` on `threads` threads (Dispatch
  /// `concurrentPerform`), `rounds` times over; returns the merged checksum of each round and
  /// the wall time in seconds. Each track is processed whole by one thread, whichever takes it
  /// first (``WorkQueue``).
  static func parallelPass(
    _ workload: Workload, _ index: GridIndex, _ order: [Int], threads: Int, rounds: Int
  ) -> ([Checksum], Double) {
    let results = PerThread(count: threads) {
      [Checksum](repeating: Checksum(), count: rounds)
    }
    let buffers = PerThread(count: threads) { reservedBuffer() }
    let queue = WorkQueue(count: rounds * order.count)
    let elapsed: Double = workload.fixes.withUnsafeBufferPointer { fixes in
      nonisolated(unsafe) let fixes = fixes
      let starts = workload.trackStarts
      let start = SystemProbes.monotonicNanoseconds()
      let work: @Sendable (Int) -> Void = { g in
        let buffer = buffers.pointer(g)
        let sums = results.pointer(g)
        while let item = queue.take() {
          let k = order[item % order.count]
          queryFixes(
            index, fixes, starts[k]..<starts[k + 1], &buffer.pointee,
            &sums.pointee[item / order.count])
        }
      }
      if threads == 1 {
        work(0)
      } else {
        DispatchQueue.concurrentPerform(iterations: threads, execute: work)
      }
      return seconds(since: start)
    }
    var merged = [Checksum](repeating: Checksum(), count: rounds)
    for perRound in results.values {
      for round in 0..<rounds { merged[round].merge(perRound[round]) }
    }
    return (merged, elapsed)
  }

  /// Calibrates the rounds of one kind of pass (``calibratedRounds(lasting:_:)``), then runs
  /// `repetitions` timed passes of that many rounds: the rounds and each pass's rate in fixes
  /// per second (`fixes` a round). `pass(k)` runs and checks `k` rounds and returns its
  /// seconds; `announce(r)` is called before timed pass `r`.
  static func timedPasses(
    lasting minimum: Double, fixedRounds: Int?, repetitions: Int, fixes: Int,
    announce: (Int) -> Void, _ pass: (Int) -> Double
  ) -> (rounds: Int, rates: [Double]) {
    let rounds = fixedRounds ?? calibratedRounds(lasting: minimum, pass)
    var rates: [Double] = []
    for r in 0..<repetitions {
      announce(r)
      rates.append(Double(fixes * rounds) / pass(rounds))
    }
    return (rounds, rates)
  }

  /// Rounds for timed passes of at least `minimum` seconds (1 when `minimum` is 0): `pass(k)`
  /// runs an untimed calibration pass of `k` rounds and returns its seconds; `k` goes 1, 10,
  /// 100, ... until a calibration pass lasts a tenth of `minimum`, so that start-up costs
  /// (threads, cold caches) do not inflate the time of one round.
  static func calibratedRounds(lasting minimum: Double, _ pass: (Int) -> Double) -> Int {
    guard minimum > 0 else { return 1 }
    var count = 1
    var elapsed = pass(count)
    while elapsed < minimum / 10 && count < 1_000_000 {
      count *= 10
      elapsed = pass(count)
    }
    return rounds(lasting: minimum, onePass: elapsed / Double(count))
  }

  /// Whole replays of a pass that took `onePass` seconds needed to last `minimum` seconds plus
  /// a tenth (a margin for a calibration pass that ran slow): at least 1, at most 1,000,000
  /// (a pass too fast to time counts as 1 µs).
  static func rounds(lasting minimum: Double, onePass: Double) -> Int {
    guard minimum > 0, onePass < minimum else { return 1 }
    let needed = (1.1 * minimum / max(onePass, 1e-6)).rounded(.up)
    return Int(min(needed, 1_000_000))
  }

  // MARK: Statistics

  static func seconds(since start: UInt64) -> Double {
    Double(SystemProbes.monotonicNanoseconds() - start) / 1e9
  }

  /// Median of a non-empty list.
  static func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    let n = s.count
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
  }

  /// Nearest-rank percentile of a sorted list; 0 when empty.
  static func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[min(sorted.count, max(1, rank)) - 1]
  }
}

/// Bytes an index holds, regions' geometry included.
public enum IndexMemory {
  /// ``GridIndex/memoryFootprintBytes``: the grid arrays plus the region array, by capacity.
  public static func bytes(of index: GridIndex) -> Int {
    index.memoryFootprintBytes
  }
}
