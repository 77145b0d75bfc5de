import Foundation
import GeofenceTestSupport
import Testing

@testable import DelimitedText

// `withDecodedUTF8` hands a reader the file's own bytes when decoding would not change them
// (ASCII, or valid UTF-8 without NUL bytes and byte-order marks), checked in place. The oracle
// is `decodedUTF8`, which always copies and decodes: over seeded byte strings of every kind
// (ASCII, multi-byte UTF-8, invalid sequences, surrogates, overlong forms, NULs, marks,
// ISO-8859-1 text), both must give the same bytes and the same fallback flag.

@Suite struct DecodedUTF8Tests {
  /// Random bytes built from pieces a file may hold, valid or not.
  static func bytes(_ random: inout SeededGenerator) -> [UInt8] {
    let pieces: [[UInt8]] = [
      Array("plain, ascii text;\n".utf8), Array("Zürich".utf8), Array("日本語".utf8),
      Array("📍".utf8), Array("\u{FFFD}".utf8), Array("\u{FEFF}".utf8), [0xEF, 0xBB, 0xBF],
      [0x00], [0xE9], [0xC3], [0x80], [0xFF], [0xED, 0xA0, 0x80], [0xC0, 0xAF],
      [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xF0, 0x9F, 0x93], Array("\u{10FFFF}".utf8),
      Array("\u{EFFF}".utf8), Array(repeating: UInt8(ascii: "a"), count: 13),
    ]
    var out: [UInt8] = []
    for _ in 0..<Int.random(in: 0..<40, using: &random) {
      // Mostly valid text, so that the in-place path is taken often.
      let k = Int.random(in: 0..<100, using: &random)
      out += k < 92 ? pieces[k % 5] : pieces[Int.random(in: 0..<pieces.count, using: &random)]
    }
    return out
  }

  @Test func inPlaceBytesEqualTheDecodedCopyOnRandomBytes() {
    var inPlace = 0
    for seed in UInt64(1)...3_000 {
      var random = SeededGenerator(seed: seed)
      let data = Data(Self.bytes(&random))
      let copy = DelimitedText.decodedUTF8(data)
      let (seen, usedLatin1) = DelimitedText.withDecodedUTF8(data) { Array($0) }
      #expect(seen == copy.utf8, "seed \(seed)")
      #expect(usedLatin1 == copy.usedLatin1, "seed \(seed)")
      let valid = data.withUnsafeBytes {
        DelimitedText.isValidUTF8($0.assumingMemoryBound(to: UInt8.self))
      }
      #expect(valid == (String(validating: Array(data), as: UTF8.self) != nil), "seed \(seed)")
      if valid && !data.contains(0) && !data.contains(0xEF) && data.contains(where: { $0 >= 0x80 })
      {
        inPlace += 1
      }
    }
    // The in-place path for non-ASCII text is exercised.
    #expect(inPlace > 150, "\(inPlace) files valid UTF-8 beyond ASCII without NUL or 0xEF")
  }

  @Test func marksNULsAndInvalidBytesStillTakeTheDecodedCopy() {
    let cases: [([UInt8], [UInt8], Bool)] = [
      (Array("Zürich".utf8), Array("Zürich".utf8), false),
      ([0xEF, 0xBB, 0xBF] + Array("Zü".utf8), Array("Zü".utf8), false),
      (Array("Zü".utf8) + [0x00, 0x61], Array("Zü".utf8) + [0x00, 0x61], false),
      ([0x00, 0x00] + Array("Zü\n".utf8) + [0x00], Array("Zü\n".utf8), false),
      ([0x56, 0xE9, 0x7A], Array("Véz".utf8), true),
      (Array("\u{EFFF}ü".utf8), Array("\u{EFFF}ü".utf8), false),
    ]
    for (input, want, latin1) in cases {
      let (seen, usedLatin1) = DelimitedText.withDecodedUTF8(Data(input)) { Array($0) }
      #expect(seen == want)
      #expect(usedLatin1 == latin1)
    }
  }
}
