import JSONText
import Testing

@Suite struct JSONTextTests {
  /// Every control character below U+0020, by hand from RFC 8259 §7: the five short forms,
  /// `\u00XX` (lowercase hex) for the other 27.
  @Test func everyControlCharacterIsEscaped() {
    let short: [UInt32: String] = [
      0x08: #"\b"#, 0x09: #"\t"#, 0x0A: #"\n"#, 0x0C: #"\f"#, 0x0D: #"\r"#,
    ]
    let hex = Array("0123456789abcdef")
    for value in UInt32(0)..<0x20 {
      let scalar = Unicode.Scalar(value)!
      let expected =
        short[value] ?? "\\u00" + String(hex[Int(value >> 4)]) + String(hex[Int(value & 15)])
      #expect(JSONText.quoted(String(Character(scalar))) == "\"" + expected + "\"", "U+\(value)")
    }
    #expect(JSONText.quoted("\u{00}\u{1F}") == #""\u0000\u001f""#)
  }

  @Test func quotesBackslashesAndEverythingElse() {
    #expect(JSONText.quoted(#"a"b\c"#) == #""a\"b\\c""#)
    // `/`, DEL and non-ASCII text are verbatim; so is a string with nothing to escape.
    #expect(JSONText.quoted("a/b\u{7F}é🌺") == "\"a/b\u{7F}é🌺\"")
    #expect(JSONText.quoted("") == #""""#)
    #expect(JSONText.quoted("tab\there é") == #""tab\there é""#)
    var out = "x="
    JSONText.appendQuoted("\u{0C}", to: &out)
    #expect(out == #"x="\f""#)
  }

  @Test func numbersInBothStyles() {
    // Whole numbers below 2^53 without a fraction; others in shortest round-trip form.
    #expect(JSONText.number(5) == "5")
    #expect(JSONText.number(-12) == "-12")
    #expect(JSONText.number(-0.0) == "0")
    #expect(JSONText.number(1.5) == "1.5")
    #expect(JSONText.number(0.1) == "0.1")
    #expect(JSONText.number(9_007_199_254_740_991) == "9007199254740991")
    #expect(JSONText.number(9_007_199_254_740_992) == "9007199254740992.0")
    #expect(JSONText.number(1e16) == "1e+16")
    #expect(JSONText.number(1e30) == "1e+30")
    #expect(JSONText.number(.nan) == "null")
    #expect(JSONText.number(-.infinity) == "null")
    // Swift's description, always.
    #expect(JSONText.number(5, style: .shortestRoundTrip) == "5.0")
    #expect(JSONText.number(-0.0, style: .shortestRoundTrip) == "-0.0")
    #expect(JSONText.number(21.3, style: .shortestRoundTrip) == "21.3")
    #expect(JSONText.number(1e16, style: .shortestRoundTrip) == "1e+16")
    #expect(JSONText.number(.infinity, style: .shortestRoundTrip) == "null")
  }

  @Test func roundingToDecimals() {
    #expect(JSONText.rounded(12.3456, decimals: 3) == 12.346)
    #expect(JSONText.rounded(12.3454, decimals: 3) == 12.345)
    #expect(JSONText.rounded(2.25, decimals: 1) == 2.3)  // 22.5 rounds away from zero
    #expect(JSONText.rounded(-2.25, decimals: 1) == -2.3)
    #expect(JSONText.rounded(7.6, decimals: 0) == 8)
    #expect(JSONText.rounded(7.6, decimals: -3) == 8)  // clamped to 0 places
    #expect(JSONText.number(JSONText.rounded(0.1 + 0.2, decimals: 3)) == "0.3")
    #expect(JSONText.rounded(.infinity, decimals: 2) == .infinity)
    #expect(JSONText.rounded(.nan, decimals: 2).isNaN)
  }

  @Test func objectWriterWritesMembersInOrder() {
    var json = JSONObjectWriter()
    #expect(json.finish() == "{}")
    json.add("type", string: "enter")
    json.add("n", number: 3)
    json.add("x", number: 2.5)
    json.add("none", number: nil)
    json.add("bad", number: .nan)
    json.add("count", integer: -4)
    json.add("ok", bool: true)
    json.addNull("gap")
    json.add("raw", raw: "[1,2]")
    json.add("k\"ey", string: "v\n")
    #expect(
      json.finish()
        == #"{"type":"enter","n":3,"x":2.5,"none":null,"bad":null,"count":-4,"ok":true,"#
        + #""gap":null,"raw":[1,2],"k\"ey":"v\n"}"#)
    var decimal = JSONObjectWriter(numberStyle: .shortestRoundTrip)
    decimal.add("n", number: 3)
    #expect(decimal.finish() == #"{"n":3.0}"#)
  }

  /// The byte writer gives `Double.description` (shortest round trip) for every finite
  /// double, and the integer digits of `String(Int64)`, without making a string.
  @Test func bytesMatchTheStandardLibrarysText() {
    var g = SystemRandomNumberGenerator()
    var values: [Double] = [0, -0.0, 5, 1.5, 1e16, 9_007_199_254_740_992, 1e-7, 0.1, 123.456]
    values += [.leastNonzeroMagnitude, .greatestFiniteMagnitude, -48.99991351797134]
    for _ in 0..<20_000 {
      values.append(Double(bitPattern: g.next()))
      values.append(Double.random(in: -180...180, using: &g))
    }
    var bytes: [UInt8] = []
    for v in values where v.isFinite {
      bytes.removeAll(keepingCapacity: true)
      JSONText.appendNumber(v, style: .shortestRoundTrip, to: &bytes)
      #expect(String(decoding: bytes, as: UTF8.self) == v.description)
    }
    for n in [0, 7, -7, 10, 1_234_567_890_123, Int64.max, Int64.min] {
      bytes.removeAll(keepingCapacity: true)
      JSONText.appendInteger(n, to: &bytes)
      #expect(String(decoding: bytes, as: UTF8.self) == String(n))
    }
    bytes.removeAll()
    JSONText.appendQuoted("a\"\\\u{01}\u{1F}é\n", to: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == #""a\"\\\u0001\u001fé\n""#)
  }

  /// `writeQuoted` into storage sized by `quotedCount` gives the bytes of `appendQuoted`, for
  /// every pair of byte values, alone, between plain text and repeated.
  @Test func writingIntoSizedStorageEqualsAppending() {
    var texts: [[UInt8]] = [[], Array("plain text".utf8)]
    for a in UInt8.min...UInt8.max {
      for b in UInt8.min...UInt8.max {
        texts.append([a, b])
      }
      texts.append([UInt8(ascii: "k")] + [a] + Array("ey é".utf8) + [a, a, a])
    }
    for text in texts {
      var appended: [UInt8] = [0x7B]
      text.withUnsafeBufferPointer { JSONText.appendQuoted(utf8: $0, to: &appended) }
      let written = text.withUnsafeBufferPointer { bytes in
        let count = JSONText.quotedCount(utf8: bytes)
        return [UInt8](unsafeUninitializedCapacity: count + 1) { out, initialized in
          out[0] = 0x7B
          initialized = JSONText.writeQuoted(utf8: bytes, into: out, at: 1)
          #expect(initialized == count + 1)
        }
      }
      #expect(written == appended, "\(text)")
    }
  }
}
