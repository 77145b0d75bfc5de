import Foundation
import Testing

@testable import TrackFormats

@Suite struct TrackReaderTests {
  static let gpx = """
    <?xml version="1.0"?>
    <gpx version="1.1"><trk><trkseg><trkpt lat="1" lon="2"/></trkseg></trk></gpx>
    """

  @Test(arguments: ["a.gpx", "A.GPX", "a.Gpx", "a.txt", "a.xml", "a", "a.csv"])
  func xmlContentIsReadAsGPX(name: String) throws {
    let r = try TrackFixtures.read(name, Self.gpx)
    #expect(r.format == .gpx)
    #expect(r.fixes.count == 1)
  }

  @Test(arguments: ["a.csv", "A.CSV", "a.txt", "a.TXT", "a.tsv", "a.plt", "a.PLT", "a.dat"])
  func delimitedContentIsReadAsCSV(name: String) throws {
    let r = try TrackFixtures.read(name, "lat,lon\n1,2\n")
    #expect(r.format == .csv)
    #expect(r.fixes.count == 1)
  }

  /// UTF-16 with its byte-order mark ("Unicode text" from a spreadsheet) is judged by its
  /// characters: delimited text is transcoded and read as its UTF-8 twin is, XML stays GPX.
  @Test(arguments: [true, false])
  func utf16TextIsReadByItsCharacters(littleEndian: Bool) throws {
    func utf16(_ text: String) -> Data {
      var data = Data(littleEndian ? [0xFF, 0xFE] : [0xFE, 0xFF])
      for unit in text.utf16 {
        data +=
          littleEndian
          ? [UInt8(unit & 0xFF), UInt8(unit >> 8)] : [UInt8(unit >> 8), UInt8(unit & 0xFF)]
      }
      return data
    }
    let csv =
      "time,latitude,longitude,name\n2024-01-01T00:00:00Z,47.5,8.25,Zürich\n2024-01-01T00:00:10Z,-33.5,151.25,📍\n"
    for name in ["t.csv", "t.dat"] {
      let wide = try TrackReader.read(data: utf16(csv), fileName: name)
      let plain = try TrackReader.read(data: Data(csv.utf8), fileName: name)
      #expect(wide.format == .csv)
      #expect(wide.fixes == plain.fixes)
      #expect(wide.fixes.map(\.coordinate.longitude) == [8.25, 151.25])
      #expect(wide.warnings.isEmpty, "\(wide.warnings)")
    }
    let xml =
      "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<gpx version=\"1.1\"><trk><trkseg><trkpt lat=\"1\" lon=\"2\"/></trkseg></trk></gpx>"
    let gpx = try TrackReader.read(data: utf16(xml), fileName: "t.csv")
    #expect(gpx.format == .gpx)
    #expect(gpx.fixes.count == 1)
  }

  @Test func gpxExtensionWithTextContentReportsNotXML() throws {
    let e = try #require(TrackFixtures.error("a.gpx", "lat,lon\n1,2\n"))
    guard case .malformed("a.gpx", 1, _, 0) = e else {
      Issue.record("expected .malformed at line 1, got \(e)")
      return
    }
  }

  @Test func unknownExtensionAndContentIsUnrecognized() throws {
    let e = try #require(TrackFixtures.error("a.bin", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D]))
    guard case .unrecognizedFormat("a.bin", _) = e else {
      Issue.record("expected .unrecognizedFormat, got \(e)")
      return
    }
    #expect(e.description.hasPrefix("a.bin: "))
  }

  @Test func missingFileIsUnreadable() throws {
    let url = URL(fileURLWithPath: "/nonexistent/dir/track.gpx")
    #expect {
      try TrackReader.read(contentsOf: url)
    } throws: { error in
      guard let e = error as? TrackReadError, case .unreadable("track.gpx", _) = e else {
        return false
      }
      return e.file == "track.gpx"
    }
  }

  @Test func directoryIsUnreadable() throws {
    let dir = try TrackFixtures.tempDir()
    defer { try? FileManager.default.removeItem(at: dir) }
    let sub = dir.appendingPathComponent("folder.gpx")
    try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
    #expect {
      try TrackReader.read(contentsOf: sub)
    } throws: { error in
      guard let e = error as? TrackReadError, case .unreadable("folder.gpx", _) = e else {
        return false
      }
      return true
    }
  }

  @Test func issueAndErrorDescriptions() {
    #expect(TrackIssue(file: "f.csv", line: 3, message: "m").description == "f.csv:3: m")
    #expect(TrackIssue(file: "f.csv", line: nil, message: "m").description == "f.csv: m")
    let e = TrackReadError.malformed(file: "f.gpx", line: 9, reason: "cut", pointsRead: 1)
    #expect(e.description == "f.gpx:9: cut (1 point read before the error; none returned)")
  }
}
