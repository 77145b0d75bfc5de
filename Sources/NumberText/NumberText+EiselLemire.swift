extension NumberText {
  /// The correctly rounded `Double` nearest to `w` × 10^`q`, by the Eisel–Lemire method
  /// (Lemire, "Number Parsing at a Gigabyte per Second", Software: Practice and Experience
  /// 51(8), 2021, algorithm 1, with the subnormal and round-to-even handling of its section
  /// 8), or `nil` when the 128-bit product cannot decide the rounding (rare: then the caller
  /// asks `strtod`).
  ///
  /// - Parameters:
  ///   - w: the decimal significand, not zero, at most 19 digits.
  ///   - q: the decimal exponent; outside [-342, 308] the answer is `nil`.
  /// - Returns: the magnitude's bits as a positive `Double` (infinity when it rounds beyond
  ///   `Double.greatestFiniteMagnitude`), or `nil`.
  /// - Complexity: O(1): one or two 64 × 64-bit multiplications, one table read.
  @inline(__always)
  static func eiselLemire(_ w: UInt64, _ q: Int) -> Double? {
    guard w != 0, q >= smallestPowerOfFive, q <= largestPowerOfFive else { return nil }
    // binary64: 52 explicit mantissa bits, minimum exponent -1023, infinite exponent 0x7FF.
    let lz = w.leadingZeroBitCount
    let w = w << lz
    let index = 2 * (q - smallestPowerOfFive)
    let (productHigh, productLow) = powersOfFive.withUnsafeBufferPointer { table in
      var first = w.multipliedFullWidth(by: table[index])
      // The upper 55 bits decide the answer unless the 9 bits below them are all ones:
      // then the next 64 bits of 5^q may carry into them.
      if first.high & 0x1FF == 0x1FF {
        let second = w.multipliedFullWidth(by: table[index + 1])
        let (low, carry) = first.low.addingReportingOverflow(second.high)
        first.low = low
        if carry { first.high &+= 1 }
      }
      return (first.high, first.low)
    }
    // The product may be short of the exact one by less than one unit of its low word: when
    // that word is all ones, a carry could change the result (outside q in [-27, 55], where
    // 5^q fits the table exactly or the bound of the paper's section 6 holds).
    if productLow == UInt64.max, q < -27 || q > 55 { return nil }
    let upperBit = Int(productHigh >> 63)
    let shift = upperBit + 64 - 52 - 3
    var mantissa = productHigh >> UInt64(shift)
    // floor(log2(10^q)) + 63, by 217706 / 2^16 ≈ log2(10) (exact over [-342, 308]).
    var power2 = ((217_706 &* q) >> 16) + 63 + upperBit - lz + 1023
    if power2 <= 0 {
      // Subnormal (or zero).
      if -power2 + 1 >= 64 { return 0 }
      mantissa >>= UInt64(-power2 + 1)
      mantissa += mantissa & 1
      mantissa >>= 1
      power2 = mantissa < (1 << 52) ? 0 : 1
      return Double(bitPattern: UInt64(power2) << 52 | mantissa & ((1 << 52) - 1))
    }
    // Exactly halfway between two doubles: only possible for q in [-4, 23] (section 8);
    // there round to even instead of up.
    if productLow <= 1, q >= -4, q <= 23, mantissa & 3 == 1,
      mantissa << UInt64(shift) == productHigh
    {
      mantissa &= ~1
    }
    mantissa += mantissa & 1
    mantissa >>= 1
    if mantissa >= 2 << 52 {
      mantissa = 1 << 52
      power2 += 1
    }
    mantissa &= ~(1 << 52)
    if power2 >= 0x7FF { return .infinity }
    return Double(bitPattern: UInt64(power2) << 52 | mantissa)
  }
}
