/// Throughput of a reader over one file held in memory: bytes and rows a second.
///
/// The reader is a closure, so that this module stays free of the readers' modules: the
/// command line passes the geofence or track reader over bytes it has already read, and
/// ``run(bytes:repetitions:minimumPassSeconds:read:)`` times only the parse (with its
/// validation and the values it builds), not the file system.
public struct LoadingResult: Sendable {
  /// The file's name as given.
  public var file: String
  /// Its size in bytes.
  public var bytes: Int
  /// Rows (geofences or fixes) the reader kept.
  public var rows: Int
  /// Rows the reader rejected or skipped.
  public var rejected: Int
  /// Whole reads per timed pass (a pass lasts at least the minimum pass time).
  public var rounds: Int
  /// Median over the timed passes of `bytes × rounds / seconds`.
  public var bytesPerSecond: Double
  /// `bytesPerSecond × rows / bytes`.
  public var rowsPerSecond: Double {
    bytes == 0 ? 0 : bytesPerSecond * Double(rows) / Double(bytes)
  }

  /// One line for people: `file: size, rows (rejected): MB/s, rows/s`.
  public var line: String {
    let mb = Double(bytes) / 1e6
    return "\(file): \(fixed(mb, 1)) MB, \(grouped(rows)) rows (\(grouped(rejected)) rejected): "
      + "\(fixed(bytesPerSecond / 1e6, 1)) MB/s, \(rate(rowsPerSecond)) rows/s"
      + " (median of passes of \(rounds) reads)"
  }
}

/// Times a reader over bytes in memory (see ``LoadingResult``).
public enum LoadingBenchmark {
  /// Reads `bytes` bytes `repetitions` times in timed passes and returns the median rate.
  ///
  /// A first, untimed pass of one read says how many whole reads (`rounds`) make a pass last
  /// `minimumPassSeconds` plus a tenth (as the query passes of ``BenchmarkRunner``); with 0,
  /// each pass is one read.
  /// - Parameters:
  ///   - file: the name to report.
  ///   - bytes: the size of what `read` parses.
  ///   - repetitions: timed passes, >= 1.
  ///   - minimumPassSeconds: target length of a pass, >= 0.
  ///   - read: parses the bytes once and returns `(rows kept, rows rejected)`; every call must
  ///     give the same counts.
  /// - Returns: the median rate and the counts of the last read.
  public static func run(
    file: String, bytes: Int, repetitions: Int, minimumPassSeconds: Double,
    read: () -> (rows: Int, rejected: Int)
  ) -> LoadingResult {
    let t0 = SystemProbes.monotonicNanoseconds()
    var counts = read()
    let first = Double(SystemProbes.monotonicNanoseconds() &- t0) * 1e-9
    let rounds =
      minimumPassSeconds > 0
      ? max(1, min(1_000_000, Int((1.1 * minimumPassSeconds / max(first, 1e-6)).rounded(.up))))
      : 1
    var rates: [Double] = []
    for _ in 0..<max(1, repetitions) {
      let start = SystemProbes.monotonicNanoseconds()
      for _ in 0..<rounds { counts = read() }
      let seconds = Double(SystemProbes.monotonicNanoseconds() &- start) * 1e-9
      rates.append(Double(bytes) * Double(rounds) / max(seconds, 1e-9))
    }
    rates.sort()
    let n = rates.count
    let median = n % 2 == 1 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2
    return LoadingResult(
      file: file, bytes: bytes, rows: counts.rows, rejected: counts.rejected, rounds: rounds,
      bytesPerSecond: median)
  }
}
