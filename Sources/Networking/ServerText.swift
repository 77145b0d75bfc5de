/// Text a server chose (an error message, a `version`, a rejection reason), made safe to print
/// on a terminal or to store and print again later.
///
/// A server is not trusted with the client's terminal or logs: its text could carry terminal
/// escapes (`ESC [ 2 J`, an OSC title with `BEL`), line breaks that forge lines of the
/// client's own output, bidirectional overrides that reorder what is shown, megabytes of
/// text, or the client's own API key echoed back (a server that quotes the `Authorization`
/// header in its error). ``displayable(_:redacting:limit:)`` is the one function every such
/// text goes through before it is printed or stored.
public enum ServerText {
  /// The most characters (Unicode scalars) ``displayable(_:redacting:limit:)`` keeps by
  /// default: 300, room for any error message a person reads, far less than a screen.
  public static let defaultLimit = 300

  /// What a secret is replaced with.
  public static let redaction = "[redacted]"

  /// The shortest secret redacted: 4 characters. A shorter key is no secret (every key of 3
  /// characters can be tried in moments), and replacing it would garble ordinary words
  /// (the key `k` in "as[redacted]ed").
  public static let minimumSecretLength = 4

  /// `text` made safe to show and to store.
  ///
  /// In order:
  /// 1. every occurrence of each string of `secrets` (the API key, ...) of at least
  ///    ``minimumSecretLength`` characters is replaced by ``redaction``, longest first;
  /// 2. control characters are escaped: `\n`, `\r` and `\t` as those two characters, every
  ///    other C0 control, DEL and C1 control as `\u{XX}`, and the bidirectional controls
  ///    (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) and the line and
  ///    paragraph separators (U+2028, U+2029) as `\u{XXXX}`. A backslash is left as it is, so
  ///    the function is idempotent below the limit: text it made comes out unchanged;
  /// 3. the result is cut to at most `limit` characters (an escape is never cut in two),
  ///    then `... (N characters)` is added, with `N` the escaped text's length.
  ///
  /// - Parameters:
  ///   - text: the server's text.
  ///   - secrets: strings that must not be shown (shorter ones than ``minimumSecretLength``
  ///     are ignored). Default none.
  ///   - limit: the most characters kept, >= 1. Default ``defaultLimit``.
  /// - Returns: text with no control character, at most `limit` characters plus the note of
  ///   the cut.
  /// - Complexity: O(n × m), `n` the length of `text` and `m` the secrets' total length.
  public static func displayable(
    _ text: String, redacting secrets: [String] = [], limit: Int = defaultLimit
  ) -> String {
    precondition(limit >= 1, "limit must be >= 1")
    var redacted = Array(text.unicodeScalars)
    let marker = Array(redaction.unicodeScalars)
    for secret in secrets.map({ Array($0.unicodeScalars) })
      .filter({ $0.count >= minimumSecretLength })
      .sorted(by: { $0.count > $1.count })
    {
      redacted = replacing(secret, with: marker, in: redacted)
    }
    var out = String.UnicodeScalarView()
    var length = 0
    var kept = 0
    for scalar in redacted {
      let piece = escaped(scalar)
      let count = piece?.unicodeScalars.count ?? 1
      length += count
      guard length <= limit else { continue }
      if let piece { out.append(contentsOf: piece.unicodeScalars) } else { out.append(scalar) }
      kept = length
    }
    guard length > kept else { return String(out) }
    return String(out) + "... (\(length) characters)"
  }

  /// `text` with every occurrence of `pattern` (scalar by scalar, left to right, not
  /// overlapping) replaced by `replacement`.
  private static func replacing(
    _ pattern: [Unicode.Scalar], with replacement: [Unicode.Scalar], in text: [Unicode.Scalar]
  ) -> [Unicode.Scalar] {
    guard text.count >= pattern.count else { return text }
    var out: [Unicode.Scalar] = []
    out.reserveCapacity(text.count)
    var i = 0
    while i < text.count {
      if i + pattern.count <= text.count, text[i..<i + pattern.count].elementsEqual(pattern) {
        out += replacement
        i += pattern.count
      } else {
        out.append(text[i])
        i += 1
      }
    }
    return out
  }

  /// The escape of `scalar`, or `nil` when it is shown as it is.
  private static func escaped(_ scalar: Unicode.Scalar) -> String? {
    switch scalar.value {
    case 0x0A: return "\\n"
    case 0x0D: return "\\r"
    case 0x09: return "\\t"
    case 0x00...0x1F, 0x7F...0x9F:
      return "\\u{" + hex(scalar.value, digits: 2) + "}"
    case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029:
      return "\\u{" + hex(scalar.value, digits: 4) + "}"
    default: return nil
    }
  }

  private static func hex(_ value: UInt32, digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
  }
}
