import Foundation
import GeofenceEngine
import GeofenceGeometry
import Testing

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// The map is well-formed XML (checked by Foundation's XML parser, an independent reader)
/// whatever the names hold: markup characters, control characters and the two characters
/// outside XML's `Char` production that JSON, CSV and UTF-8 allow (U+FFFE, U+FFFF).
@Test func theMapIsWellFormedWhateverTheNamesHold() throws {
  let names = ["Café <&> \"x\"", "bell\u{7}tab\tline\nend", "Caf\u{FFFF}", "x\u{FFFE}y", "📍"]
  let geofences = try names.enumerated().map { k, name in
    Geofence(
      id: "g\(k)", name: name,
      region: try CircularRegion(
        center: Coordinate(latitude: 47, longitude: 7 + Double(k) * 0.001), radiusMeters: 50))
  }
  let track = try (0..<10).map { try Coordinate(latitude: 47, longitude: 7 + Double($0) * 0.0005) }
  let svg = SVGMap().render(
    tracks: [track], geofences: geofences, events: [], title: "t\u{FFFF} <map>")
  let parser = XMLParser(data: Data(svg.utf8))
  #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
  #expect(svg.contains("Caf\u{FFFD}"))
  #expect(!svg.unicodeScalars.contains("\u{FFFF}") && !svg.unicodeScalars.contains("\u{FFFE}"))
}
