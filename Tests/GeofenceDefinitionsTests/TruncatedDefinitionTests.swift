import Foundation
import Testing

@testable import GeofenceDefinitions

/// A JSON or GeoJSON definition file cut short keeps the definitions complete before the end,
/// and names the file as truncated; any other structural fault still fails the file.
@Suite struct TruncatedDefinitionTests {
  func read(_ bytes: some Sequence<UInt8>, _ format: GeofenceFileFormat = .json) throws
    -> GeofenceLoadResult
  {
    try GeofenceFileReader.read(
      data: Data(bytes), format: format, fileName: "cut.json", defaultRadiusMeters: 100)
  }

  /// Every prefix of a five-definition list: the loaded ids are exactly those whose closing
  /// brace lies inside the prefix (found here by searching the text for each `}`), and every
  /// proper prefix past the `[` is reported as truncated.
  @Test func everyPrefixOfAListKeepsTheCompleteDefinitions() throws {
    let text = Array(
      """
      [
        {"id": "a", "latitude": 46.5, "longitude": 6.6, "radius": 100},
        {"id": "b", "latitude": 46.6, "longitude": 6.7, "name": "B \\"quoted\\" }"},
        {"id": "c", "latitude": 46.7, "longitude": 6.8, "metadata": {"k": [1, 2]}},
        {"id": "d", "latitude": 46.8, "longitude": 6.9},
        {"id": "e", "latitude": 46.9, "longitude": 7.0, "radius": 250}
      ]
      """.utf8)
    // The offset just past each definition's closing brace: the last `}` of each line that
    // starts with `{`.
    let lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    var ends: [Int] = []
    for line in lines {
      if line.first(where: { $0 != 0x20 }) == UInt8(ascii: "{"),
        let close = line.lastIndex(of: UInt8(ascii: "}"))
      {
        ends.append(close + 1)  // slices keep the text's indices
      }
    }
    #expect(ends.count == 5)
    let ids = ["a", "b", "c", "d", "e"]
    let whole = try read(text)
    #expect(whole.geofences.map(\.id) == ids)
    #expect(whole.truncations.isEmpty)
    let open = text.firstIndex(of: UInt8(ascii: "["))!
    for cut in (open + 1)..<text.count {
      let result = try read(text[..<cut])
      let expected = Array(ids.prefix(ends.filter { $0 <= cut }.count))
      #expect(result.geofences.map(\.id) == expected, "cut at byte \(cut)")
      #expect(result.truncations.count == 1, "cut at byte \(cut)")
      #expect(result.rejected.isEmpty, "cut at byte \(cut)")
    }
    guard case .truncated(let why)? = try read(text[..<(ends[1] + 5)]).truncations.first?.reason
    else {
      Issue.record("no truncation reported")
      return
    }
    #expect(why.contains("never closed (line 1, column 1)"))
  }

  /// The real polygon file cut after its 10th and inside its 11th feature: the first 10
  /// features load, equal to those of the whole file.
  @Test func aCutGeoJSONFileKeepsItsCompleteFeatures() throws {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../data/polygons/swiss_route_polygons.geojson").standardized
    let bytes = Array(try Data(contentsOf: url))
    let whole = try read(bytes, .geojson)
    #expect(whole.geofences.count == 38)
    let document = try JSONDocument(bytes: bytes)
    let features = try document.members(of: document.root).first { $0.key == "features" }!.value
    let spans = try document.elements(of: features)
    let cut = spans[10].start + (spans[10].end - spans[10].start) / 2
    let result = try read(bytes[..<cut], .geojson)
    #expect(result.geofences == Array(whole.geofences.prefix(10)))
    #expect(result.truncations.map(\.file) == ["cut.json"])
    // Cut just after the 10th feature's closing brace: the same 10.
    #expect(try read(bytes[..<spans[9].end], .geojson).geofences.count == 10)
  }

  /// A feature collection cut after its `features` list closed (the root's `}` missing, or a
  /// later member cut) keeps every feature and names the file as truncated; closed and
  /// followed by other text, it still fails.
  @Test func aCollectionCutAfterItsFeaturesKeepsThemAll() throws {
    let features =
      #"[{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[6.6,46.5]},"#
      + #""properties":{"radius":100}},{"type":"Feature","id":"b","geometry":{"type":"Point","#
      + #""coordinates":[6.7,46.6]},"properties":{}}]"#
    let whole = #"{"type":"FeatureCollection","features":"# + features + #","bbox":[6,46,7,47]}"#
    #expect(try read(Array(whole.utf8), .geojson).geofences.map(\.id) == ["a", "b"])
    for cut in [
      #"{"type":"FeatureCollection","features":"# + features,
      #"{"type":"FeatureCollection","features":"# + features + "\n",
      #"{"type":"FeatureCollection","features":"# + features + ",",
      #"{"type":"FeatureCollection","features":"# + features + #","bbox":[6,46"#,
      #"{"type":"FeatureCollection","features":"# + features + #","bb"#,
      #"{"features":"# + features + #","type":"FeatureColl"#,
    ] {
      let result = try read(Array(cut.utf8), .geojson)
      #expect(result.geofences.map(\.id) == ["a", "b"], "\(cut)")
      #expect(result.truncations.count == 1, "\(cut)")
      #expect(result.rejected.isEmpty, "\(cut)")
    }
    for broken in [
      #"{"type":"FeatureCollection","features":"# + features + "}}",
      #"{"type":"FeatureCollection","features":"# + features + #" "bbox":[1]"#,
      #"{"type":"FeatureCollection","features":"# + features + #",:"#,
      features + "]",
      // Cut, but not a FeatureCollection cut short: its type after the list is another, or
      // repeated, or the list is repeated.
      #"{"features":"# + features + #","type":"Topology""#,
      #"{"features":"# + features + #","type":"Feature","id":"root""#,
      #"{"type":"FeatureCollection","features":"# + features + #","type":"FeatureCollection""#,
      #"{"type":"FeatureCollection","features":"# + features + #","features":[{"type""#,
      #"{"type":"FeatureCollection","features":"# + features + ",\"a\u{01}\":1",
    ] {
      #expect(throws: GeofenceFileError.self, "\(broken)") {
        try read(Array(broken.utf8), .geojson)
      }
    }
  }

  /// Faults other than running out of text still fail the whole file.
  @Test func otherStructuralFaultsStillFailTheFile() {
    let cases = [
      #"[{"id": "a", "latitude": 1, "longitude": 2} {"id": "b", "latitude": 1, "longitude": 2}"#,
      #"[{"id": "a", "latitude": 1, "longitude": 2}, ]]"#,
      #"{"type": "Feature", "features": [{"type": "Feature""#,
      #"{"type": "FeatureCollection", "bbox": [1, 2 "features": ["#,
    ]
    for text in cases {
      #expect(throws: GeofenceFileError.self, "\(text)") { try read(Array(text.utf8), .geojson) }
    }
  }
}
