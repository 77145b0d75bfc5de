/// The one JSON string escaper and number formatter of the package (RFC 8259).
///
/// Every JSON text the engine writes goes through these functions: the canonical text behind
/// geofence content hashes (`JSONValue.canonicalText`), the outbox's upload bodies, the
/// pipeline's event payloads and the event writer's JSON Lines and GeoJSON. Their output is
/// therefore fixed: changing a byte changes content hashes and golden files.
public enum JSONText {
  /// How ``number(_:style:)`` writes a finite number that is a whole number.
  public enum NumberStyle: Hashable, Sendable {
    /// A whole number of magnitude below 2^53 (where every integer is exact in a `Double`)
    /// without a fraction: `5`, `-12`, `0` (also for `-0.0`). Every other finite number in
    /// Swift's shortest round-trip form (`Double.description`): `1.5`, `9007199254740992.0` (2^53), `1e+16`.
    /// The form of canonical text and event payloads.
    case integersWithoutFraction
    /// Always Swift's shortest round-trip form, `Double.description`: `5.0`, `-0.0`, `1.5`,
    /// `1e+16`. The form of the event writer's `jsonl`, `csv` and `geojson` output.
    case shortestRoundTrip
  }

  /// 2^53: below it every integer is exactly representable as a `Double` (IEEE 754 binary64,
  /// 53-bit significand).
  static let exactIntegerLimit: Double = 9_007_199_254_740_992

  /// Appends `s` as a JSON string literal (RFC 8259 §7): quoted, with `"` and `\` escaped,
  /// the control characters U+0008, U+0009, U+000A, U+000C and U+000D by their short escapes
  /// `\b \t \n \f \r`, every other control character below U+0020 as `\u00XX` (lowercase hex),
  /// and every other character verbatim, `/` and U+007F included (the output is UTF-8 text).
  ///
  /// The escaping works on UTF-8 bytes: every character it escapes is ASCII, and no byte of
  /// a multi-byte UTF-8 sequence is below 0x80, so a byte-wise pass escapes exactly those
  /// characters.
  /// - Complexity: O(n) in the UTF-8 length of `s`; allocates only when `out` grows.
  public static func appendQuoted(_ s: String, to out: inout [UInt8]) {
    var s = s
    s.withUTF8 { appendQuoted(utf8: $0, to: &out) }
  }

  /// ``appendQuoted(_:to:)-([UInt8])`` of text given as UTF-8 bytes (valid UTF-8, for a
  /// reader that holds a field's bytes and no `String`).
  /// - Complexity: O(n) in the byte count; allocates only when `out` grows.
  public static func appendQuoted(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    var start = 0
    for i in bytes.indices {
      let b = bytes[i]
      guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
      out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
      start = i + 1
      out.append(UInt8(ascii: "\\"))
      switch b {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
      case 0x0A: out.append(UInt8(ascii: "n"))
      case 0x0D: out.append(UInt8(ascii: "r"))
      case 0x09: out.append(UInt8(ascii: "t"))
      case 0x08: out.append(UInt8(ascii: "b"))
      case 0x0C: out.append(UInt8(ascii: "f"))
      default:
        let hex: StaticString = "0123456789abcdef"
        append("u00", to: &out)
        out.append(hex.utf8Start[Int(b >> 4)])
        out.append(hex.utf8Start[Int(b & 0xF)])
      }
    }
    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    out.append(UInt8(ascii: "\""))
  }

  /// The number of bytes of the JSON string literal of `bytes` as
  /// ``appendQuoted(utf8:to:)`` writes it: the two quotes, each byte, and one more for each
  /// short escape (`\"`, `\\`, `\n`, ...) or five more for each `\u00XX`.
  /// - Complexity: O(n) in the byte count; no allocation.
  @inlinable
  public static func quotedCount(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Int {
    var n = bytes.count + 2
    for b in bytes where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
      n += hasShortEscape(b) ? 1 : 5
    }
    return n
  }

  /// True for the bytes escaped as a backslash and one letter: `"`, `\`, and U+0008, U+0009,
  /// U+000A, U+000C, U+000D.
  @inlinable
  static func hasShortEscape(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: return true
    default: return false
    }
  }

  /// Writes the JSON string literal of `bytes`, the same bytes as ``appendQuoted(utf8:to:)``,
  /// into `out` from `offset`, for a writer that measured it with ``quotedCount(utf8:)`` and
  /// writes into storage it sized once (a `String`'s own, for example).
  /// - Precondition: `out` has ``quotedCount(utf8:)`` bytes from `offset`.
  /// - Returns: the offset just after the closing quote.
  /// - Complexity: O(n) in the byte count; no allocation.
  public static func writeQuoted(
    utf8 bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>,
    at offset: Int
  ) -> Int {
    var at = offset
    out[at] = UInt8(ascii: "\"")
    at += 1
    var start = 0
    for i in bytes.indices {
      let b = bytes[i]
      guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
      let run = UnsafeBufferPointer(rebasing: bytes[start..<i])
      _ = UnsafeMutableBufferPointer(rebasing: out[at..<(at + run.count)]).initialize(
        fromContentsOf: run)
      at += run.count
      start = i + 1
      out[at] = UInt8(ascii: "\\")
      switch b {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): out[at + 1] = b
      case 0x0A: out[at + 1] = UInt8(ascii: "n")
      case 0x0D: out[at + 1] = UInt8(ascii: "r")
      case 0x09: out[at + 1] = UInt8(ascii: "t")
      case 0x08: out[at + 1] = UInt8(ascii: "b")
      case 0x0C: out[at + 1] = UInt8(ascii: "f")
      default:
        let hex: StaticString = "0123456789abcdef"
        out[at + 1] = UInt8(ascii: "u")
        out[at + 2] = UInt8(ascii: "0")
        out[at + 3] = UInt8(ascii: "0")
        out[at + 4] = hex.utf8Start[Int(b >> 4)]
        out[at + 5] = hex.utf8Start[Int(b & 0xF)]
        at += 4
      }
      at += 2
    }
    let run = UnsafeBufferPointer(rebasing: bytes[start...])
    _ = UnsafeMutableBufferPointer(rebasing: out[at..<(at + run.count)]).initialize(
      fromContentsOf: run)
    at += run.count
    out[at] = UInt8(ascii: "\"")
    return at + 1
  }

  /// ``appendQuoted(_:to:)-([UInt8])`` into a `String`.
  /// - Complexity: O(n) in the UTF-8 length of `s`; a string with nothing to escape is
  ///   appended in one copy.
  public static func appendQuoted(_ s: String, to out: inout String) {
    // Nothing to escape: the literal is the string between quotes.
    if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    ) {
      out += "\""
      out += s
      out += "\""
      return
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(s.utf8.count + 8)
    appendQuoted(s, to: &bytes)
    out += String(decoding: bytes, as: UTF8.self)
  }

  /// `s` as a JSON string literal, escaped as by ``appendQuoted(_:to:)-([UInt8])``.
  /// - Complexity: O(n) in the UTF-8 length of `s`.
  public static func quoted(_ s: String) -> String {
    var out = ""
    appendQuoted(s, to: &out)
    return out
  }

  /// `x` as a JSON number in `style`; `null` for NaN and ±infinity, which JSON cannot express.
  /// The text of ``appendNumber(_:style:to:)``.
  /// - Parameters:
  ///   - x: the number.
  ///   - style: how a whole number is written. Default
  ///     ``NumberStyle/integersWithoutFraction``.
  /// - Complexity: O(1).
  public static func number(_ x: Double, style: NumberStyle = .integersWithoutFraction) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(32)
    appendNumber(x, style: style, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Appends `x` as a JSON number in `style` (see ``NumberStyle``): `null` for NaN and
  /// ±infinity; a whole number below 2^53 in magnitude as its integer digits with
  /// ``NumberStyle/integersWithoutFraction``; otherwise Swift's shortest round-trip text,
  /// exactly `x.description`, written by `Double.write(to:)` straight into `out` without
  /// making a `String`.
  /// - Complexity: O(1); allocates only when `out` grows.
  public static func appendNumber(
    _ x: Double, style: NumberStyle = .integersWithoutFraction, to out: inout [UInt8]
  ) {
    // One formatter: the writer's, into a buffer on the stack.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Writer.numberBound) { buffer in
      var w = Writer(buffer)
      w.writeNumber(x, style: style)
      out.append(contentsOf: w.written)
    }
  }

  /// Appends the decimal digits of `n` (with `-` when negative).
  /// - Complexity: O(1); allocates only when `out` grows.
  public static func appendInteger(_ n: Int64, to out: inout [UInt8]) {
    withDecimalDigits(n) { out.append(contentsOf: $0) }
  }

  /// Calls `body` with the bytes of `String(n)`: its decimal digits, `-` first when negative.
  /// - Complexity: O(1); allocates nothing.
  public static func withDecimalDigits<R>(_ n: Int64, _ body: (UnsafeRawBufferPointer) -> R)
    -> R
  {
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: -2^63 takes 20
    var count = 0
    var magnitude = n.magnitude
    return withUnsafeMutableBytes(of: &digits) { d in
      repeat {
        d[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
        magnitude /= 10
        count += 1
      } while magnitude > 0
      if n < 0 {
        d[23 - count] = UInt8(ascii: "-")
        count += 1
      }
      return body(UnsafeRawBufferPointer(rebasing: d[(24 - count)...]))
    }
  }

  /// Appends the UTF-8 bytes of `literal` (JSON text the caller has checked: punctuation,
  /// member names without escapes, `true`, `null`, ...).
  /// - Complexity: O(n) in the literal's length; allocates only when `out` grows.
  @inlinable
  public static func append(_ literal: StaticString, to out: inout [UInt8]) {
    out.append(
      contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
  }

  /// `x` rounded half away from zero to `decimals` decimal places: `(x · 10^d).rounded() / 10^d`
  /// in `Double` arithmetic, so the result is the nearest `Double` to that decimal (printed by
  /// ``number(_:style:)`` with no digits beyond them). Non-finite values are returned as they are.
  /// - Parameter decimals: places after the point, in 0...22 (the powers of ten exact in a
  ///   `Double`); values outside are clamped to that range.
  /// - Complexity: O(1).
  public static func rounded(_ x: Double, decimals: Int) -> Double {
    let scale = powersOfTen[min(max(decimals, 0), powersOfTen.count - 1)]
    return (x * scale).rounded() / scale
  }

  /// 10^0 ... 10^22, each exact in binary64.
  static let powersOfTen: [Double] = (0...22).map { n in
    var p = 1.0
    for _ in 0..<n { p *= 10 }
    return p
  }
}
