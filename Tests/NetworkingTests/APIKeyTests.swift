import Networking
import Testing

/// ``APIKey/problem(_:)``: which keys can travel as `Authorization: Bearer KEY`.
@Suite struct APIKeyTests {
  @Test func keysThatCannotBeSentAreNamedWithoutBeingQuoted() {
    #expect(APIKey.problem("") == "the API key is empty")
    #expect(APIKey.problem(" \t ") == "the API key holds only blanks")
    #expect(APIKey.problem("abc\r\nX-Injected: 1") == "the API key holds a line break (CR or LF)")
    #expect(APIKey.problem("abc\r") == "the API key holds a line break (CR or LF)")
    #expect(APIKey.problem("a\u{0}c") == "the API key holds a control character")
    #expect(APIKey.problem("a\u{85}c") == "the API key holds a control character")
    #expect(APIKey.problem("abc ") == "the API key starts or ends with a blank")
  }

  @Test func ordinaryKeysPass() {
    for key in ["k", "demo-key", "SECRETKEY123", "a b", "tok_AZaz09+/=", "clé"] {
      #expect(APIKey.problem(key) == nil, "\(key)")
    }
  }
}
