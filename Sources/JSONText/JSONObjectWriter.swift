/// Writes one flat JSON object, member by member, into a `String`.
///
/// Keys and strings are escaped with ``JSONText/appendQuoted(_:to:)``, numbers written with
/// ``JSONText/number(_:style:)``. Members appear in the order they are added; the writer does
/// not check for duplicate keys. Raw values are copied as given and must be valid JSON.
///
/// ```swift
/// var json = JSONObjectWriter()
/// json.add("type", string: "enter")
/// json.add("distance_m", number: 12)
/// json.finish()  // {"type":"enter","distance_m":12}
/// ```
public struct JSONObjectWriter: Sendable {
  private var text = "{"
  private var isEmpty = true
  /// How numbers are written. Default ``JSONText/NumberStyle/integersWithoutFraction``.
  public var numberStyle: JSONText.NumberStyle

  /// An empty object.
  /// - Parameter numberStyle: how numbers are written.
  public init(numberStyle: JSONText.NumberStyle = .integersWithoutFraction) {
    self.numberStyle = numberStyle
  }

  /// Adds `key` with `raw`, a JSON text copied verbatim (a nested object, an array, ...).
  /// - Complexity: amortised O(k + r), the lengths of the key and the value.
  public mutating func add(_ key: String, raw: String) {
    if !isEmpty { text += "," }
    isEmpty = false
    JSONText.appendQuoted(key, to: &text)
    text += ":"
    text += raw
  }

  /// Adds `key` with a string value.
  public mutating func add(_ key: String, string: String) {
    if !isEmpty { text += "," }
    isEmpty = false
    JSONText.appendQuoted(key, to: &text)
    text += ":"
    JSONText.appendQuoted(string, to: &text)
  }

  /// Adds `key` with a number; `nil`, NaN and ±infinity are written as `null`.
  public mutating func add(_ key: String, number: Double?) {
    add(key, raw: number.map { JSONText.number($0, style: numberStyle) } ?? "null")
  }

  /// Adds `key` with an integer, written exactly.
  public mutating func add(_ key: String, integer: Int) { add(key, raw: String(integer)) }

  /// Adds `key` with `true` or `false`.
  public mutating func add(_ key: String, bool: Bool) { add(key, raw: bool ? "true" : "false") }

  /// Adds `key` with `null`.
  public mutating func addNull(_ key: String) { add(key, raw: "null") }

  /// The object's text so far, closed: `{...}`. The writer can still be added to.
  /// - Complexity: O(n), a copy of the text.
  public func finish() -> String { text + "}" }
}
