#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Monotonic clock readings and process figures for the runner.
public enum SystemProbes {
  /// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`); only differences are meaningful.
  @inline(__always)
  public static func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
  }

  /// The process's resident set in bytes (Linux `/proc/self/statm`), or 0 when unknown.
  public static func residentBytes() -> Int {
    guard let bytes = try? readFileBytes("/proc/self/statm") else { return 0 }
    let fields = String(decoding: bytes.dropLast(), as: UTF8.self).split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }

  /// Number of online processors (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
  public static func processorCount() -> Int {
    max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
  }
}
