import Foundation
import GeofenceTestSupport
import JSONText
import Testing

@Suite struct JSONTextWriterTests {
  /// The writer's text of one call, in a buffer of `bound` bytes.
  func written(bound: Int = 64, _ body: (inout JSONText.Writer) -> Void) -> String {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer in
      var w = JSONText.Writer(buffer)
      body(&w)
      return String(decoding: w.written, as: UTF8.self)
    }
  }

  /// The text `writeThousandths` stands for: the rounded value's shortest round-trip text.
  func reference(_ x: Double) -> String {
    JSONText.number(JSONText.rounded(x, decimals: 3) + 0, style: .shortestRoundTrip)
  }

  @Test func thousandthsByHand() {
    let cases: [(Double, String)] = [
      (440.773, "440.773"), (107, "107.0"), (0.05, "0.05"), (0.0504, "0.05"), (0.0005, "0.001"),
      (0.0004, "0.0"), (-0.0004, "0.0"), (-0.0, "0.0"), (0, "0.0"), (-1.5, "-1.5"),
      (12.3456, "12.346"), (0.007, "0.007"), (1_000_000.25, "1000000.25"),
      (999_999_999_999.999, "999999999999.999"), (.infinity, "null"), (.nan, "null"),
      (1e15, "1000000000000000.0"), (1e16, "1e+16"),
    ]
    for (x, text) in cases {
      #expect(written { $0.writeThousandths(x) } == text, "\(x)")
      #expect(reference(x) == text, "reference of \(x)")
    }
  }

  /// Seeded values of every magnitude from 1e-5 to 1e14, both signs, and exact thousandths
  /// near the fast path's limit, against the general path.
  @Test func thousandthsMatchTheRoundedShortestText() {
    var rng = SeededGenerator(seed: 0x7E57_1000)
    for _ in 0..<200_000 {
      let exponent = Double.random(in: -5...14, using: &rng)
      var x = Double.random(in: 1..<10, using: &rng) * pow(10, exponent.rounded(.down))
      if Bool.random(using: &rng) { x = -x }
      #expect(written { $0.writeThousandths(x) } == reference(x), "\(x)")
      let k = Double(Int64.random(in: -999_999_999_999_999...999_999_999_999_999, using: &rng))
      let exact = k / 1000
      #expect(written { $0.writeThousandths(exact) } == reference(exact), "\(exact)")
    }
  }

  /// Numbers against `Double.description` and the integer rule; integers and strings: the
  /// bytes of the `append` functions.
  @Test func sameBytesAsTheAppendFunctions() {
    var rng = SeededGenerator(seed: 0x7E57_2000)
    for _ in 0..<100_000 {
      let x = Double(bitPattern: rng.next())
      // The documented text, from the standard library (the writer is the one formatter).
      let shortest = x.isFinite ? x.description : "null"
      let whole = x.isFinite && x == x.rounded() && abs(x) < 9_007_199_254_740_992
      #expect(written { $0.writeNumber(x, style: .shortestRoundTrip) } == shortest)
      #expect(
        written { $0.writeNumber(x, style: .integersWithoutFraction) }
          == (whole ? String(Int64(x)) : shortest))
      let n = Int64(bitPattern: rng.next()) >> Int64.random(in: 0...63, using: &rng)
      var digits: [UInt8] = []
      JSONText.appendInteger(n, to: &digits)
      #expect(written { $0.write(integer: n) } == String(decoding: digits, as: UTF8.self))
    }
    for s in [
      "", "plain", "a\"b\\c", "\u{00}\u{1F}\n\t", "é🌺/", String(repeating: "\u{01}", count: 10),
    ] {
      let bound = JSONText.Writer.quotedBound(byteCount: s.utf8.count)
      #expect(written(bound: bound) { $0.writeQuoted(s) } == JSONText.quoted(s))
    }
    #expect(
      written {
        $0.write("{\"a\":"); $0.write(byte: UInt8(ascii: "1")); $0.write("}")
      } == "{\"a\":1}")
  }
}
