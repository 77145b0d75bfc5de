import Foundation
import Testing

@testable import TrackFormats

/// A real GPX file cut at several places reads as "ends early", with the points whose closing
/// tag lies before the cut.
@Suite struct GPXReaderTruncationTests {
  /// One place to cut: the first `marker` at or after `fraction` of the file, plus `skip` bytes.
  struct Cut: Sendable, CustomStringConvertible {
    var name: String
    var marker: String
    var fraction: Double
    var skip: Int
    /// The innermost open element the message must name.
    var inside: String
    var description: String { name }
  }

  static let cuts = [
    Cut(
      name: "inside an attribute", marker: "<trkpt lat=\"", fraction: 0.4, skip: 14,
      inside: "<trkseg>"),
    Cut(
      name: "inside <time>", marker: "<time>", fraction: 0.15, skip: 10,
      inside: "<time> of a <trkpt>"),
    Cut(
      name: "inside a closing tag", marker: "</time>", fraction: 0.6, skip: 4,
      inside: "<time> of a <trkpt>"),
    Cut(
      name: "between elements", marker: "</trkpt>", fraction: 0.5, skip: 8,
      inside: "<trkseg>"),
    Cut(name: "just before </gpx>", marker: "</gpx>", fraction: 0.9, skip: 0, inside: "<gpx>"),
  ]

  static func offset(of marker: String, from start: Int, in bytes: [UInt8]) -> Int? {
    let m = Array(marker.utf8)
    var i = start
    while i + m.count <= bytes.count {
      if bytes[i] == m[0], Array(bytes[i..<i + m.count]) == m { return i }
      i += 1
    }
    return nil
  }

  static func occurrences(of marker: String, in bytes: ArraySlice<UInt8>) -> Int {
    let m = Array(marker.utf8)
    var n = 0
    var i = bytes.startIndex
    while i + m.count <= bytes.endIndex {
      if bytes[i] == m[0], Array(bytes[i..<i + m.count]) == m {
        n += 1
        i += m.count
      } else {
        i += 1
      }
    }
    return n
  }

  @Test(arguments: cuts) func cutFileEndsEarly(_ cut: Cut) throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("gpx/ExampleTrack.gpx")
    let bytes = try [UInt8](Data(contentsOf: url))
    let whole = try GPXReader.read(data: Data(bytes), fileName: "ExampleTrack.gpx")
    #expect(whole.truncation == nil)
    #expect(whole.fixes.count == Self.occurrences(of: "</trkpt>", in: bytes[...]))

    let at =
      try #require(
        Self.offset(of: cut.marker, from: Int(Double(bytes.count) * cut.fraction), in: bytes))
      + cut.skip
    let kept = bytes[..<at]
    let r = try GPXReader.read(data: Data(kept), fileName: "cut.gpx")
    let points = Self.occurrences(of: "</trkpt>", in: kept)
    #expect(points > 0)
    #expect(r.fixes.count == points)
    #expect(r.fixes == Array(whole.fixes.prefix(points)))
    let issue = try #require(r.truncation)
    // libxml2 notices the end on the last line of the kept bytes that holds more than
    // white space.
    let text = kept.prefix(through: try #require(kept.lastIndex(where: { $0 > 0x20 })))
    #expect(issue.line == text.count(where: { $0 == UInt8(ascii: "\n") }) + 1)
    #expect(
      issue.message.hasPrefix("the file ends early (truncated) inside \(cut.inside) (libxml2"),
      "\(issue.message)")
    #expect(
      issue.message.hasSuffix(
        "); the \(points) points before it are used, nothing after it is read"),
      "\(issue.message)")
    #expect(!issue.message.contains("breaks off"))
  }
}
