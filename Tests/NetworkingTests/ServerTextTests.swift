import Networking
import Testing

/// ``ServerText``: what a server's text becomes before the client prints or stores it.
@Suite struct ServerTextTests {
  @Test func controlCharactersAreEscapedAndNothingElseIs() {
    let text = "key is not valid\u{1B}[31m RED \u{1B}]0;pwned\u{07}\nfake: line\r\t\u{7F}\u{85}é\\n"
    #expect(
      ServerText.displayable(text)
        == #"key is not valid\u{1B}[31m RED \u{1B}]0;pwned\u{07}\nfake: line\r\t\u{7F}\u{85}é\n"#)
  }

  @Test func bidirectionalOverridesAndLineSeparatorsAreEscaped() {
    #expect(
      ServerText.displayable("a\u{202E}b\u{2066}c\u{2028}d\u{200F}")
        == #"a\u{202E}b\u{2066}c\u{2028}d\u{200F}"#)
  }

  @Test func theAPIKeyIsRedactedWhereverItIsEchoed() {
    let echoed = "key Bearer SECRETKEY123 is not valid; SECRETKEY123 again"
    #expect(
      ServerText.displayable(echoed, redacting: ["SECRETKEY123", ""])
        == "key Bearer [redacted] is not valid; [redacted] again")
    // The longer secret first: a key that holds another is redacted whole.
    #expect(
      ServerText.displayable("x abcdef y", redacting: ["abcd", "abcdef"]) == "x [redacted] y")
    // A key of under 4 characters is no secret, and ordinary words keep their letters.
    #expect(
      ServerText.displayable("10 were asked for by k", redacting: ["k", "k1", "abc"])
        == "10 were asked for by k")
    // Scalar by scalar: a combining mark after the key does not hide it.
    #expect(
      ServerText.displayable("k=SECRET\u{301}", redacting: ["SECRET"]) == "k=[redacted]\u{301}")
  }

  @Test func longTextIsCutWithItsLengthAndNoEscapeIsCutInTwo() {
    let long = String(repeating: "a", count: 1_000)
    #expect(
      ServerText.displayable(long)
        == String(repeating: "a", count: 300) + "... (1000 characters)")
    // 8 letters then ESC (8 characters escaped): a limit of 10 keeps the letters only.
    #expect(ServerText.displayable("abcdefgh\u{1B}", limit: 10) == "abcdefgh... (14 characters)")
    #expect(ServerText.displayable("abcdefgh\u{1B}", limit: 14) == #"abcdefgh\u{1B}"#)
  }

  @Test func displayableTextComesOutUnchanged() {
    let once = ServerText.displayable("a\u{1B}b\nc [redacted]", redacting: ["k"])
    #expect(ServerText.displayable(once, redacting: ["k"]) == once)
  }
}
