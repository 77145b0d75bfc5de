/// The deterministic random number generator behind every generated workload: SplitMix64
/// (Steele, Lea & Flood, "Fast Splittable Pseudorandom Number Generators", OOPSLA 2014).
///
/// The same seed gives the same stream on every platform and Swift version, so a workload is
/// named by its kind, size and seed alone.
public struct BenchmarkRandom: RandomNumberGenerator, Sendable {
  public var state: UInt64

  public init(seed: UInt64) { self.state = seed }

  /// A generator for one purpose (`stream`) derived from a base seed, so that, for example, the
  /// fixes of a workload do not change when its region count does.
  public init(seed: UInt64, stream: UInt64) {
    var mixer = BenchmarkRandom(seed: seed ^ (stream &* 0xD1B5_4A32_D192_ED03))
    self.state = mixer.next()
  }

  @inlinable
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A double uniform in [0, 1) with 53 random bits.
  @inlinable
  public mutating func unit() -> Double {
    Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
  }

  /// A double uniform in [lower, upper).
  @inlinable
  public mutating func uniform(_ lower: Double, _ upper: Double) -> Double {
    lower + (upper - lower) * unit()
  }
}
