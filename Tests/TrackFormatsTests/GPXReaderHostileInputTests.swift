import Foundation
import GeofenceGeometry
import Testing
import GeofenceTestSupport

@testable import TrackFormats

/// GPX input that used to crash the reader or be misread: invalid UTF-8 in markup, documents
/// of other namespaces, and the wording of parse errors.
@Suite struct GPXReaderHostileInputTests {
  private func malformed(_ name: String, _ bytes: [UInt8]) throws -> (
    line: Int?, reason: String, pointsRead: Int, description: String
  ) {
    do {
      let r = try GPXReader.read(data: Data(bytes), fileName: name)
      Issue.record("expected an error, read \(r.fixes.count) fixes")
    } catch {
      guard case .malformed(let file, let line, let reason, let pointsRead) = error else {
        Issue.record("expected .malformed, got \(error)")
        return (nil, "", -1, "")
      }
      #expect(file == name)
      return (line, reason, pointsRead, error.description)
    }
    return (nil, "", -1, "")
  }

  /// The 17-byte file `<gpx><a` 0xEF `/></gpx>` and a line feed: byte 8 starts a three-byte
  /// UTF-8 sequence that `/` breaks.
  @Test func invalidUTF8InAnElementNameIsAnErrorWithItsColumn() throws {
    let bytes = Array("<gpx><a".utf8) + [0xEF] + Array("/></gpx>\n".utf8)
    #expect(bytes.count == 17)
    let e = try malformed("crash.gpx", bytes)
    #expect(e.line == 1)
    #expect(e.pointsRead == 0)
    #expect(
      e.reason
        == "invalid UTF-8 at column 8: Input is not proper UTF-8, indicate encoding ! Bytes: 0xEF"
        + " 0x2F 0x3E 0x3C; a file without a byte-order mark or an encoding in its XML declaration"
        + " must be UTF-8 (declare, for example, <?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>"
        + " for Latin-1)")
    #expect(e.description.hasPrefix("crash.gpx:1: invalid UTF-8 at column 8: "))
  }

  /// The same markup bytes in a comment, a processing-instruction target, an attribute name
  /// and a namespace prefix: each is an error, never a crash.
  @Test(arguments: [
    ("<gpx><!--", "--></gpx>"), ("<gpx><?p", " x?></gpx>"), ("<gpx><a b", "=\"1\"/></gpx>"),
    ("<gpx><p", ":a xmlns:p=\"urn:p\"/></gpx>"),
  ])
  func invalidUTF8ElsewhereInMarkupIsAnError(before: String, after: String) throws {
    let bytes = Array(before.utf8) + [0xEF] + Array(after.utf8)
    let e = try malformed("crash.gpx", bytes)
    #expect(e.line == 1)
    #expect(e.reason.hasPrefix("invalid UTF-8 at column "))
    #expect(e.reason.contains("0xEF"))
  }

  /// Latin-1 `ß` (0xDF) in a Garmin extension tag, without an encoding declaration: on line 5,
  /// column 58 is the byte after `<gpxx:Stra` (57 bytes into the line).
  static func latin1Track(declaring encoding: String?) -> [UInt8] {
    let declaration =
      encoding.map { "<?xml version=\"1.0\" encoding=\"\($0)\"?>" }
      ?? "<?xml version=\"1.0\"?>"
    return Array(
      """
      \(declaration)
      <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"
        xmlns:gpxx="http://www.garmin.com/xmlschemas/GpxExtensions/v3">
      <trk><trkseg><trkpt lat="48.1371" lon="11.5754"><time>2020-01-01T00:00:00Z</time></trkpt>
      <trkpt lat="48.1372" lon="11.5755"><extensions><gpxx:Stra
      """.utf8) + [0xDF] + Array("e>Leopoldstra".utf8) + [0xDF]
      + Array(
        """
        e</gpxx:Stra
        """.utf8) + [0xDF]
      + Array(
        """
        e></extensions></trkpt>
        </trkseg></trk></gpx>
        """.utf8)
  }

  @Test func undeclaredLatin1TagBreaksTheFileOffNamingLineAndColumn() throws {
    let r = try GPXReader.read(data: Data(Self.latin1Track(declaring: nil)), fileName: "latin1.gpx")
    #expect(r.fixes.count == 1)
    #expect(r.fixes.first?.time == 1_577_836_800)
    let cut = try #require(r.truncation)
    #expect(cut.line == 5)
    #expect(cut.message.hasPrefix("invalid UTF-8 at column 58: Input is not proper UTF-8"))
    #expect(cut.message.contains("Bytes: 0xDF 0x65 0x3E 0x4C"))
    #expect(cut.message.hasSuffix("the point before it is used, nothing after it is read"))
  }

  @Test func declaredLatin1TagIsRead() throws {
    let r = try GPXReader.read(
      data: Data(Self.latin1Track(declaring: "ISO-8859-1")), fileName: "latin1.gpx")
    #expect(r.fixes.count == 2)
    #expect(r.fixes[1].coordinate == Coordinate(uncheckedLatitude: 48.1372, longitude: 11.5755))
    #expect(r.fixes[0].time == 1_577_836_800)
    #expect(r.skippedRows.isEmpty)
  }

  @Test func rootInAnotherNamespaceIsNotGPX() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.1" xmlns="urn:not-gpx"><trk><trkseg>
      <trkpt lat="1" lon="2"/>
      </trkseg></trk></gpx>
      """
    let e = try malformed("other.gpx", Array(text.utf8))
    #expect(e.line == 2)
    #expect(e.pointsRead == 0)
    #expect(
      e.reason
        == "the root element <gpx> is in the namespace \"urn:not-gpx\", not GPX 1.1"
        + " (http://www.topografix.com/GPX/1/1) or 1.0 (http://www.topografix.com/GPX/1/0):"
        + " not a GPX file")
  }

  @Test func pointsOfAnotherNamespaceAreNotFixes() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1" xmlns:x="urn:x">
      <x:wpt lat="7" lon="7"/>
      <trk><trkseg>
      <x:trkpt lat="9" lon="9"><time>2021-01-01T00:00:00Z</time></x:trkpt>
      <trkpt lat="1.5" lon="2.5"><x:time>2019-01-01T00:00:00Z</x:time><time>2020-01-01T00:00:00Z</time></trkpt>
      <x:rtept lat="8" lon="8"/>
      <trkpt lat="3" lon="4"><x:time>2019-01-01T00:00:00Z</x:time></trkpt>
      </trkseg></trk></gpx>
      """
    let r = try GPXReader.read(data: Data(text.utf8), fileName: "mixed.gpx")
    #expect(r.fixes.count == 2)
    #expect(r.fixes.map(\.coordinate.latitude) == [1.5, 3])
    #expect(r.fixes.map(\.coordinate.longitude) == [2.5, 4])
    #expect(r.fixes.map(\.time) == [1_577_836_800, nil])
    #expect(r.fixes.map(\.sourceIndex) == [0, 1])
    #expect(r.warnings.isEmpty)
  }

  /// GPX 1.0, GPX 1.1 and no namespace (many writers leave `xmlns` out) all read; the points
  /// must be in the root's namespace.
  @Test(arguments: [
    "xmlns=\"http://www.topografix.com/GPX/1/0\"", "xmlns=\"http://www.topografix.com/GPX/1/1\"",
    "",
  ])
  func bothGPXNamespacesAndNoNamespaceAreRead(namespace: String) throws {
    let text = """
      <gpx version="1.0" \(namespace)><trk><trkseg>
      <trkpt lat="-33.5" lon="151.25"><time>2020-01-01T00:00:00Z</time></trkpt>
      </trkseg></trk></gpx>
      """
    let r = try GPXReader.read(data: Data(text.utf8), fileName: "ns.gpx")
    #expect(r.fixes.count == 1)
    #expect(r.fixes[0].coordinate == Coordinate(uncheckedLatitude: -33.5, longitude: 151.25))
    #expect(r.fixes[0].time == 1_577_836_800)
  }

  @Test func errorTextNamesTheProblemLineAndColumn() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
      <trkpt lat="1" lon="2"></trkpt>
      <trkpt lat="1" lon="2">
      </trkseg></trk></gpx>
      """
    let r = try GPXReader.read(data: Data(text.utf8), fileName: "mismatch.gpx")
    #expect(r.fixes.count == 1)
    #expect(
      r.truncation?.description
        == "mismatch.gpx:5: not well-formed XML at column 10: Opening and ending tag mismatch:"
        + " trkpt line 4 and trkseg; the file breaks off here: the point before it is used,"
        + " nothing after it is read")
  }

  /// An external entity is never loaded: its declaration is ignored, so the reference is an
  /// undeclared entity (column 51 is just after `&t;`), and the file's content never reaches
  /// the fix.
  @Test func externalEntitiesAreNeverLoaded() throws {
    let secret = TestScratch.root.appendingPathComponent(
      "gpx-entity-\(UUID().uuidString).txt")
    try "2020-01-01T00:00:00Z".write(to: secret, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: secret) }
    let text = """
      <?xml version="1.0"?>
      <!DOCTYPE gpx [<!ENTITY t SYSTEM "\(secret.absoluteString)">]>
      <gpx><trk><trkseg><trkpt lat="1" lon="2"><time>&t;</time></trkpt></trkseg></trk></gpx>
      """
    let e = try malformed("xxe.gpx", Array(text.utf8))
    #expect(e.line == 3)
    #expect(e.reason == "not well-formed XML at column 51: Entity 't' not defined")
  }

  @Test(arguments: [
    ("", "Document is empty"), ("  \n ", "Document has no root element"),
    ("<", "Document has no root element"),
    ("<?xml version=\"1.0\"?>\n", "Document has no root element"),
  ])
  func documentWithoutRootElementIsReportedAsSuch(text: String, libxml2Message: String) throws {
    let e = try malformed("none.gpx", Array(text.utf8))
    #expect(e.reason == "the file is empty or holds no XML element (\(libxml2Message))")
    #expect(e.pointsRead == 0)
  }
}
