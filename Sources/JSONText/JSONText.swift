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
  /// - Complexity: O(n) in the UTF-8 length of `s`; a string with nothing to escape is
  ///   appended in one copy.
  public static func appendQuoted(_ s: String, to out: inout String) {
    out += "\""
    // Fast path: nothing to escape.
    if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    ) {
      out += s
      out += "\""
      return
    }
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\u{08}": out += "\\b"
      case "\u{0C}": out += "\\f"
      default:
        if scalar.value < 0x20 {
          let hex = String(scalar.value, radix: 16)
          out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    out += "\""
  }

  /// `s` as a JSON string literal, escaped as by ``appendQuoted(_:to:)``.
  /// - Complexity: O(n) in the UTF-8 length of `s`.
  public static func quoted(_ s: String) -> String {
    var out = ""
    appendQuoted(s, to: &out)
    return out
  }

  /// `x` as a JSON number in `style`; `null` for NaN and ±infinity, which JSON cannot express.
  /// - Parameters:
  ///   - x: the number.
  ///   - style: how a whole number is written. Default
  ///     ``NumberStyle/integersWithoutFraction``.
  /// - Complexity: O(1).
  public static func number(_ x: Double, style: NumberStyle = .integersWithoutFraction) -> String {
    guard x.isFinite else { return "null" }
    switch style {
    case .integersWithoutFraction:
      if x == x.rounded(), abs(x) < exactIntegerLimit { return String(Int64(x)) }
      return x.description
    case .shortestRoundTrip:
      return x.description
    }
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
