import Testing

@testable import NumberText

@Suite struct NumberTextTests {
  @Test func readsRFC8259Numbers() {
    let cases: [(String, Double)] = [
      ("0", 0), ("-0", -0.0), ("46.5", 46.5), ("-122.4194", -122.4194), ("1e3", 1000),
      ("1E+3", 1000), ("25e-1", 2.5), ("0.001", 0.001), ("4096", 4096),
      ("1.7976931348623157e308", 1.7976931348623157e308), ("5e-324", 5e-324), ("1e-400", 0),
      ("12345678901234567890123", 1.2345678901234568e22),
      ("0.30000000000000004", 0.30000000000000004), ("9007199254740993", 9007199254740992),
    ]
    for (text, expected) in cases {
      #expect(NumberText.double(text) == expected, "\(text)")
    }
    #expect(NumberText.double("-0")?.sign == .minus)
  }

  @Test func refusesWhatRFC8259DoesNot() {
    for text in [
      "0x2F.6", "0x1p12", "0X10", "inf", "-inf", "Infinity", "nan", "NaN", "+1", ".5", "5.", "01",
      "-", "", " 1", "1 ", "1e", "1e+", "1.5.2", "1,5", "1_000", "٣",
    ] {
      #expect(NumberText.parse(text) == .failure(.notANumber), "\(text)")
    }
  }

  @Test func outOfRangeIsNotInfinity() {
    #expect(NumberText.parse("1e400") == .failure(.outOfRange))
    #expect(NumberText.parse("-1e400") == .failure(.outOfRange))
    #expect(NumberText.parse("1.8e308") == .failure(.outOfRange))
    #expect(NumberText.parse("1e99999999999999999999") == .failure(.outOfRange))
    #expect(NumberText.double("0e99999999999999999999") == 0)
  }

  @Test func decimalCommaOnlyWhenAsked() {
    #expect(NumberText.double("46,5", decimalComma: true) == 46.5)
    #expect(NumberText.double("-0,25e1", decimalComma: true) == -2.5)
    #expect(NumberText.double("46.5", decimalComma: true) == 46.5)
    #expect(NumberText.double("46,5") == nil)
    #expect(NumberText.double("1,000.5", decimalComma: true) == nil)
  }

  @Test func prefixStopsAtTheNumbersEnd() {
    let bytes = Array("12.5e1,\"x\"".utf8)
    let found = bytes.withUnsafeBufferPointer { NumberText.prefix(of: $0, from: 0) }
    #expect(found?.end == 6)
    #expect(found?.value == .success(125))
  }

  /// Random decimal texts against the standard library's conversion (an independent,
  /// correctly rounded implementation), on both paths (fast and `strtod`).
  @Test func agreesWithTheStandardLibrary() {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return state >> 11
    }
    for round in 0..<20_000 {
      var text = next() % 2 == 0 ? "-" : ""
      let intDigits = Int(next() % 12)
      text += intDigits == 0 ? "0" : String(1 + next() % 9)
      for _ in 0..<max(0, intDigits - 1) { text += String(next() % 10) }
      if next() % 3 != 0 {
        text += "."
        for _ in 0...Int(next() % 22) { text += String(next() % 10) }
      }
      if next() % 3 == 0 { text += "e" + String(Int(next() % 80) - 40) }
      let expected = Double(text)
      #expect(NumberText.double(text) == expected, "round \(round): \(text)")
    }
  }
}
