#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The one number grammar of every reader: RFC 8259 §6 numbers, read as `Double`.
///
/// Accepted text is `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, with nothing
/// before or after (callers trim). Refused: a leading `+`, leading zeros (`01`), a bare or
/// trailing point (`.5`, `5.`), C hexadecimal floats (`0x2F.6`, `0x1p12`), `inf`, `nan`,
/// `Infinity`, digit separators and spaces. With `decimalComma`, one `,` may stand in place
/// of the point (`46,5`), for the files whose format documents it (semicolon- and
/// tab-separated text).
///
/// A number whose magnitude rounds beyond `Double.greatestFiniteMagnitude` (about
/// 1.797e308, for example `1e400`) is ``Failure/outOfRange``, not infinity: RFC 8259 §6 lets a
/// reader limit the range, and no coordinate, radius, accuracy or time is that large. Tiny
/// magnitudes round to the nearest `Double` (a subnormal or zero), as the RFC allows.
///
/// Conversion is correctly rounded: up to 19 significant digits with a decimal exponent in
/// [-22, 22] and a significand below 2^53 take Clinger's exact fast path (one IEEE multiply or
/// divide); the rest (the 17-digit coordinates of most GNSS logs among them) take the
/// Eisel–Lemire method (``eiselLemire(_:_:)``: a 128-bit product with a table of powers of
/// five); the few numbers that method cannot decide (a product too close to a rounding
/// boundary, more than 19 significant digits whose dropped tail could change the answer, a
/// decimal exponent outside [-342, 308]) go to the C library's `strtod` on a stack copy of
/// the validated text (its grammar is then only the decimal one checked here). Nothing is
/// allocated for numbers up to 256 bytes.
public enum NumberText {
  /// Why text is not a usable number.
  public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The text does not follow the grammar (empty, hex, `inf`, `nan`, a `+`, letters, ...).
    case notANumber
    /// A well-formed number beyond ±`Double.greatestFiniteMagnitude`.
    case outOfRange

    public var description: String {
      switch self {
      case .notANumber: return "is not a number"
      case .outOfRange: return "is out of range (beyond ±1.8e308)"
      }
    }
  }

  /// Parses UTF-8 bytes that must hold exactly one number.
  /// - Parameters:
  ///   - utf8: the text, already trimmed.
  ///   - decimalComma: accept `,` in place of the decimal point.
  /// - Returns: the value, or why the text is not one.
  /// - Complexity: O(n) in the text's length; no allocation up to 256 bytes.
  public static func parse(_ utf8: UnsafeBufferPointer<UInt8>, decimalComma: Bool = false)
    -> Result<Double, Failure>
  {
    guard let scan = scan(utf8, from: 0, decimalComma: decimalComma), scan.end == utf8.count
    else { return .failure(.notANumber) }
    return convert(utf8, scan)
  }

  /// Parses text that must hold exactly one number (see ``parse(_:decimalComma:)-5w2bq``).
  /// - Complexity: O(n); allocates only when the text is not stored contiguously.
  public static func parse(_ text: some StringProtocol, decimalComma: Bool = false)
    -> Result<Double, Failure>
  {
    if let result = text.utf8.withContiguousStorageIfAvailable({
      parse($0, decimalComma: decimalComma)
    }) {
      return result
    }
    let copy = Array(text.utf8)
    return copy.withUnsafeBufferPointer { parse($0, decimalComma: decimalComma) }
  }

  /// The number in `text`, or `nil` when it is not one or out of range.
  public static func double(_ text: some StringProtocol, decimalComma: Bool = false) -> Double? {
    try? parse(text, decimalComma: decimalComma).get()
  }

  /// Reads the longest number starting at `start` (for scanners that find where a number
  /// ends, such as a JSON reader).
  /// - Returns: the value (or why it is unusable) and the offset just after the number's text;
  ///   `nil` when no number starts at `start`.
  /// - Complexity: O(n) in the number's length.
  public static func prefix(
    of utf8: UnsafeBufferPointer<UInt8>, from start: Int, decimalComma: Bool = false
  ) -> (value: Result<Double, Failure>, end: Int)? {
    guard let scan = scan(utf8, from: start, decimalComma: decimalComma) else { return nil }
    return (convert(utf8, scan), scan.end)
  }

  // MARK: Grammar

  struct Scan {
    var start: Int
    var end: Int
    var negative: Bool
    /// Up to 19 significant digits, as an integer.
    var significand: UInt64
    /// Significant digits beyond the 19 kept were dropped (the fast path is not exact).
    var truncated: Bool
    /// Power of ten to apply to `significand`, saturated at ±1,000,000.
    var exponent: Int
  }

  static func scan(_ b: UnsafeBufferPointer<UInt8>, from start: Int, decimalComma: Bool)
    -> Scan?
  {
    let n = b.count
    var i = start
    var s = Scan(
      start: start, end: start, negative: false, significand: 0, truncated: false,
      exponent: 0)
    if i < n, b[i] == UInt8(ascii: "-") {
      s.negative = true
      i += 1
    }
    guard i < n, isDigit(b[i]) else { return nil }
    var digits = 0  // significant digits kept
    // The digits go eight at a time while they fit in the 19 kept (most coordinates and
    // times are 10 to 17 digits), then one at a time.
    if b[i] == 0x30 {
      i += 1
    } else {
      // The first digit is not 0: every digit of the whole part is significant.
      while digits <= 11, let eight = eightDigits(b, at: i) {
        s.significand = s.significand &* 100_000_000 &+ eight
        digits += 8
        i += 8
      }
      while i < n {
        let d = b[i] &- 0x30
        if d > 9 { break }
        if digits < 19 {
          s.significand = s.significand &* 10 &+ UInt64(d)
          digits += 1
        } else {
          if d != 0 { s.truncated = true }
          s.exponent += 1
        }
        i += 1
      }
    }
    if i < n, b[i] == UInt8(ascii: ".") || (decimalComma && b[i] == UInt8(ascii: ",")) {
      i += 1
      guard i < n, isDigit(b[i]) else { return nil }
      if digits == 0 {
        // Zeros before the first significant digit only move the exponent.
        while i < n, b[i] == 0x30 {
          s.exponent -= 1
          i += 1
        }
      }
      while digits <= 11, let eight = eightDigits(b, at: i) {
        s.significand = s.significand &* 100_000_000 &+ eight
        digits += 8
        s.exponent -= 8
        i += 8
      }
      while i < n {
        let d = b[i] &- 0x30
        if d > 9 { break }
        if digits < 19 {
          s.significand = s.significand &* 10 &+ UInt64(d)
          digits += 1
          s.exponent -= 1
        } else if d != 0 {
          s.truncated = true
        }
        i += 1
      }
    }
    if i < n, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
      i += 1
      var negativeExponent = false
      if i < n, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
        negativeExponent = b[i] == UInt8(ascii: "-")
        i += 1
      }
      guard i < n, isDigit(b[i]) else { return nil }
      var e = 0
      while i < n, isDigit(b[i]) {
        if e < 1_000_000 { e = e * 10 + Int(b[i] &- 0x30) }
        i += 1
      }
      s.exponent += negativeExponent ? -e : e
    }
    s.exponent = max(-1_000_000, min(1_000_000, s.exponent))
    s.end = i
    return s
  }

  @inline(__always)
  static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

  /// The value of the eight bytes at `i` when all are ASCII digits, else nil (also when
  /// fewer than eight bytes are left). One unaligned 64-bit load, checked and converted in
  /// a few operations (Lemire, "Number Parsing at a Gigabyte per Second", 2021, §6:
  /// `is_made_of_eight_digits_fast` and `parse_eight_digits_unrolled`).
  @inline(__always)
  static func eightDigits(_ b: UnsafeBufferPointer<UInt8>, at i: Int) -> UInt64? {
    guard i + 8 <= b.count, let base = b.baseAddress else { return nil }
    let v = UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
    // A byte is a digit when neither it + 0x46 nor it − 0x30 sets its high bit.
    let high = ((v &+ 0x4646_4646_4646_4646) | (v &- 0x3030_3030_3030_3030))
    guard high & 0x8080_8080_8080_8080 == 0 else { return nil }
    var x = v &- 0x3030_3030_3030_3030
    // Pairs, then fours, then the eight: the first byte is the most significant digit.
    x = x &* 10 &+ (x >> 8)
    let mask: UInt64 = 0x0000_00FF_0000_00FF
    x =
      ((x & mask) &* (100 &+ (1_000_000 << 32)) &+ ((x >> 16) & mask) &* (1 &+ (10_000 << 32)))
      >> 32
    return x
  }

  // MARK: Conversion

  /// Exact powers of ten, 10^0 ... 10^22 (all representable in a Double).
  static let powersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
  ]

  static func convert(_ b: UnsafeBufferPointer<UInt8>, _ s: Scan) -> Result<Double, Failure> {
    if s.significand == 0 && !s.truncated { return .success(s.negative ? -0.0 : 0.0) }
    if !s.truncated, s.significand <= 1 << 53, (-22...22).contains(s.exponent) {
      let m = Double(s.significand)
      let v = s.exponent >= 0 ? m * powersOfTen[s.exponent] : m / powersOfTen[-s.exponent]
      return .success(s.negative ? -v : v)
    }
    // Eisel–Lemire; with dropped digits the value lies between w and w + 1 units, and the
    // answer holds when both ends round to the same double.
    if let v = eiselLemire(s.significand, s.exponent),
      !s.truncated || eiselLemire(s.significand &+ 1, s.exponent) == v
    {
      guard v.isFinite else { return .failure(.outOfRange) }
      return .success(s.negative ? -v : v)
    }
    let count = s.end - s.start
    guard let base = b.baseAddress else { return .failure(.notANumber) }
    let value = withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) {
      buffer -> Double in
      guard let pointer = buffer.baseAddress else { return .nan }
      for k in 0..<count {
        let byte = base[s.start + k]
        // The grammar is checked: the only non-C character can be a decimal comma.
        buffer[k] = CChar(bitPattern: byte == UInt8(ascii: ",") ? UInt8(ascii: ".") : byte)
      }
      buffer[count] = 0
      return strtod(pointer, nil)
    }
    guard value.isFinite else { return .failure(value.isNaN ? .notANumber : .outOfRange) }
    return .success(value)
  }
}
