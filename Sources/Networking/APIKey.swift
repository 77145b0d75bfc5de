/// The rules an API key must meet to travel as `Authorization: Bearer KEY`.
public enum APIKey {
  /// Why `key` cannot be sent as a bearer token, or `nil` when it can. The reason never
  /// quotes the key.
  ///
  /// Refused: an empty key or one of blanks only; a key with a control character (a CR or LF
  /// would end the header line early, and `URLSession` drops such a header without a word, so
  /// the request would go out with no `Authorization` at all); a key with a blank at either
  /// end (RFC 9110 §5.5: a field value carries no leading or trailing whitespace, so it
  /// would not arrive as given).
  /// - Complexity: O(n) in the key's length.
  public static func problem(_ key: String) -> String? {
    let scalars = key.unicodeScalars
    if scalars.allSatisfy(\.properties.isWhitespace) {
      return key.isEmpty ? "the API key is empty" : "the API key holds only blanks"
    }
    if scalars.contains(where: { $0 == "\r" || $0 == "\n" }) {
      return "the API key holds a line break (CR or LF)"
    }
    if scalars.contains(where: { $0.properties.generalCategory == .control }) {
      return "the API key holds a control character"
    }
    if let first = scalars.first, let last = scalars.last,
      first.properties.isWhitespace || last.properties.isWhitespace
    {
      return "the API key starts or ends with a blank"
    }
    return nil
  }
}
