/// JSON text helpers shared by the outbox and the event writers.
public enum JSONText {
  /// `s` as a JSON string literal (RFC 8259 §7): `"` and `\` escaped, `\n`, `\r`, `\t` by
  /// their short escapes and every other control character below U+0020 as `\uXXXX`; all
  /// other characters verbatim (the output is UTF-8 text).
  /// - Complexity: O(n) in the string's length.
  public static func quoted(_ s: String) -> String {
    // Most strings need no escape: one scan of the UTF-8 bytes, then one copy.
    if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
      return "\"" + s + "\""
    }
    var out = "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }
}
