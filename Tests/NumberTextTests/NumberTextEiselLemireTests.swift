import Testing

@testable import NumberText

#if canImport(Glibc)
  import Glibc
#endif

/// The Eisel–Lemire path against the C library's `strtod` (glibc's is correctly rounded:
/// an independent implementation by multi-precision arithmetic).
@Suite struct NumberTextEiselLemireTests {
  /// `strtod` of `bytes`, or nil when the result is not finite (the parser's out of range).
  static func oracle(_ bytes: [UInt8]) -> Double? {
    let v = (bytes + [0]).withUnsafeBufferPointer { b in
      b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { strtod($0, nil) }
    }
    return v.isFinite ? v : nil
  }

  static func parsed(_ bytes: [UInt8]) -> Double? {
    bytes.withUnsafeBufferPointer { try? NumberText.parse($0).get() }
  }

  /// Both conversions give the same bits (so -0 and +0 differ).
  static func agrees(_ bytes: [UInt8]) -> Bool {
    let a = parsed(bytes)
    let b = oracle(bytes)
    return a?.bitPattern == b?.bitPattern
  }

  @Test func classicHardCases() {
    let cases = [
      // Halfway between two doubles: ties to even (2^53 + 1, 2^53 + 3, and 1 + 2^-53 with
      // one digit more or less on either side).
      "9007199254740993", "9007199254740995", "9007199254740993.0000000001",
      "1.00000000000000011102230246251565404236316680908203125",
      "1.00000000000000011102230246251565404236316680908203124",
      "1.00000000000000011102230246251565404236316680908203126",
      "7.2057594037927933e16", "1152921504606846976", "1152921504606846977",
      "8.98846567431158e307", "1e23", "8.5e-1", "0.1", "0.2", "0.3", "2.5", "3.5",
      // Subnormals, the smallest normal, the edges of zero.
      "4.9406564584124654e-324", "5e-324", "2.4703282292062327e-324",
      "2.4703282292062328e-324", "2.2250738585072011e-308", "2.2250738585072012e-308",
      "2.2250738585072014e-308", "2.2250738585072009e-308", "1e-320", "1.5e-323",
      "4.9406564584124654417656879286822137236505980e-324",
      // The largest finite double and beyond.
      "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
      "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791",
      // 17-19 significant digits, and more (dropped digits).
      "48.856612345678912", "-122.41941550000001", "2.3627470966245667", "9223372036854775807",
      "18446744073709551615", "9999999999999999999", "12345678901234567890123",
      "0.30000000000000004", "0.1000000000000000055511151231257827",
      "123456789012345678901234567890e-10",
      // Exponents at the ends of the table and beyond it.
      "1e-342", "1e-343", "1e-350", "9.9e-325", "1e308", "1e-22", "1e22", "1e-23", "123e-400",
      "1e-27", "1e-28", "1e55", "1e56", "3e-28", "7e55",
    ]
    for text in cases {
      #expect(Self.agrees(Array(text.utf8)), "\(text)")
    }
  }

  /// Millions of seeded texts of every shape the parser meets; the failing seed and text are
  /// printed.
  @Test(arguments: [1, 2, 3, 4] as [UInt64])
  func agreesWithStrtod(seed: UInt64) {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15 &* seed
    func next() -> UInt64 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return state >> 11
    }
    var text: [UInt8] = []
    text.reserveCapacity(64)
    func digits(_ n: Int, leading: Bool) {
      for k in 0..<n {
        text.append(UInt8(ascii: "0") + UInt8(k == 0 && leading ? 1 + next() % 9 : next() % 10))
      }
    }
    var failures = 0
    for round in 0..<300_000 {
      text.removeAll(keepingCapacity: true)
      if next() & 1 == 0 { text.append(UInt8(ascii: "-")) }
      switch round % 3 {
      case 0:
        // A coordinate: 1-3 integer digits, 10-17 decimals.
        digits(1 + Int(next() % 3), leading: true)
        text.append(UInt8(ascii: "."))
        digits(10 + Int(next() % 8), leading: false)
      case 1:
        // 1-22 significant digits with an exponent anywhere in the double's range.
        digits(1, leading: true)
        text.append(UInt8(ascii: "."))
        digits(Int(next() % 22), leading: false)
        if text.last == UInt8(ascii: ".") { text.append(UInt8(ascii: "0")) }
        text.append(UInt8(ascii: "e"))
        text.append(contentsOf: String(Int(next() % 680) - 345).utf8)
      default:
        // Near a halfway point: the exact midpoint of two neighbouring doubles (exact in
        // 80-bit precision), printed with 17-21 digits.
        let d = Double(
          sign: .plus, exponent: Int(next() % 2000) - 1000,
          significand: 1 + Double(next() % (1 << 52)) / 4_503_599_627_370_496)
        let mid = Float80(d) + Float80(d.ulp) / 2
        var buffer = [CChar](repeating: 0, count: 64)
        let precision = Int32(16 + next() % 5)
        _ = withVaList([precision, mid]) { vsnprintf(&buffer, 64, "%.*Le", $0) }
        text.append(contentsOf: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) })
      }
      if !Self.agrees(text) {
        failures += 1
        if failures < 10 {
          Issue.record("seed \(seed) round \(round): \(String(decoding: text, as: UTF8.self))")
        }
      }
    }
    #expect(failures == 0, "seed \(seed)")
  }

  /// Whole parts and fractions of every length from 0 to 30 digits (so that the eight-digit
  /// steps of the scan start and stop at every offset), zeros leading the fraction or filling
  /// runs anywhere, with and without an exponent, against `strtod`.
  @Test(arguments: [1, 2] as [UInt64])
  func everyDigitCountAgreesWithStrtod(seed: UInt64) {
    var state: UInt64 = 0xD1B5_4A32_D192_ED03 &* seed
    func next() -> UInt64 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return state >> 11
    }
    var text: [UInt8] = []
    func digits(_ n: Int, first: UInt8?) {
      let zeros = next() % 4 == 0
      for k in 0..<n {
        let d = k == 0 ? first ?? UInt8(next() % 10) : zeros && k % 3 == 0 ? 0 : UInt8(next() % 10)
        text.append(UInt8(ascii: "0") + d)
      }
    }
    var failures = 0
    for round in 0..<200_000 {
      text.removeAll(keepingCapacity: true)
      if next() & 1 == 0 { text.append(UInt8(ascii: "-")) }
      let whole = Int(next() % 31)
      if whole == 0 {
        text.append(UInt8(ascii: "0"))
      } else {
        digits(whole, first: UInt8(1 + next() % 9))
      }
      let fraction = Int(next() % 31)
      if fraction > 0 || whole == 0 {
        text.append(UInt8(ascii: "."))
        let leadingZeros = next() % 3 == 0 ? Int(next() % 12) : 0
        for _ in 0..<leadingZeros { text.append(UInt8(ascii: "0")) }
        digits(max(fraction, 1), first: nil)
      }
      if next() % 4 == 0 {
        text.append(UInt8(ascii: "e"))
        text.append(contentsOf: String(Int(next() % 80) - 40).utf8)
      }
      if !Self.agrees(text) {
        failures += 1
        if failures < 10 {
          Issue.record("seed \(seed) round \(round): \(String(decoding: text, as: UTF8.self))")
        }
      }
    }
    #expect(failures == 0, "seed \(seed)")
  }
}
