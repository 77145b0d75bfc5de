import JSONText

/// A JSON value, as read from a definition file or a server response (by ``JSONDocument``).
///
/// Numbers are `Double`: integers beyond ±2^53 lose precision. Objects are unordered; their
/// canonical text (``canonicalText``) sorts keys, so two equal objects always print the same.
public enum JSONValue: Hashable, Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  /// A short name of the value's JSON type, for messages: `null`, `boolean`, `number`,
  /// `string`, `array`, `object`.
  public var typeName: String {
    switch self {
    case .null: return "null"
    case .bool: return "boolean"
    case .number: return "number"
    case .string: return "string"
    case .array: return "array"
    case .object: return "object"
    }
  }

  /// Canonical JSON text: no insignificant whitespace, object keys sorted by their UTF-8 bytes,
  /// `/` not escaped, control characters as `\uXXXX` (except `\b \f \n \r \t`), integral
  /// numbers of magnitude below 2^53 without a fraction (`5`, not `5.0`), other numbers in
  /// Swift's shortest round-trip form (`1.5`, `1e+30`). Non-finite numbers, which JSON cannot
  /// express, are written as `null`.
  /// - Complexity: O(n log n) in the size of the value (key sorting).
  public var canonicalText: String {
    var out = ""
    JSONValue.write(self, to: &out)
    return out
  }

  private static func write(_ value: JSONValue, to out: inout String) {
    switch value {
    case .null:
      out += "null"
    case .bool(let b):
      out += b ? "true" : "false"
    case .number(let x):
      out += numberText(x)
    case .string(let s):
      writeString(s, to: &out)
    case .array(let values):
      out += "["
      for (i, v) in values.enumerated() {
        if i > 0 { out += "," }
        write(v, to: &out)
      }
      out += "]"
    case .object(let members):
      out += "{"
      let keys = members.keys.sorted(by: utf8Precedes)
      for (i, key) in keys.enumerated() {
        if i > 0 { out += "," }
        writeString(key, to: &out)
        out += ":"
        if let v = members[key] { write(v, to: &out) }
      }
      out += "}"
    }
  }

  /// Orders strings by their UTF-8 bytes, the key order of ``canonicalText``.
  static func utf8Precedes(_ a: String, _ b: String) -> Bool {
    a.utf8.lexicographicallyPrecedes(b.utf8)
  }

  private static func numberText(_ x: Double) -> String {
    JSONText.number(x, style: .integersWithoutFraction)
  }

  /// Appends `s` as a JSON string literal (quoted and escaped as in ``canonicalText``, by
  /// ``JSONText/JSONText/appendQuoted(_:to:)``).
  static func writeString(_ s: String, to out: inout String) {
    JSONText.appendQuoted(s, to: &out)
  }
}
