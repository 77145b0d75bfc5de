import Foundation
import Testing

@testable import GeofenceDefinitions

/// One bad value in a JSON or GeoJSON file rejects its own definition only, named by index,
/// line and field.
@Suite struct BadValueIsolationTests {
  func read(_ text: String, _ name: String = "defs.json") throws -> GeofenceLoadResult {
    try GeofenceFileReader.read(
      data: Data(text.utf8), format: .json, fileName: name, defaultRadiusMeters: nil)
  }

  func field(_ problem: DefinitionProblem) -> DefinitionField?? {
    if case .invalidJSON(let field, _) = problem { return .some(field) }
    return nil
  }

  @Test func hugeRadiusNaNAndDeepMetadataCostOneDefinitionEach() throws {
    let deep = String(repeating: "{\"a\":", count: 520) + "1" + String(repeating: "}", count: 520)
    let text = """
      [
        {"id": "a", "latitude": 46.5, "longitude": 6.6, "radius": 100},
        {"id": "b", "latitude": 46.5, "longitude": 6.6, "radius": 1e400},
        {"id": "c", "latitude": NaN, "longitude": 6.6, "radius": 100},
        {"id": "d", "latitude": 46.5, "longitude": 6.6, "radius": 100,
         "metadata": \(deep)},
        {"id": "e", "latitude": 47, "longitude": 7, "radius": 250.5}
      ]
      """
    let result = try read(text)
    #expect(result.geofences.map(\.id) == ["a", "e"])
    #expect(result.geofences[1].region.radiusMeters == 250.5)
    #expect(result.rejected.map(\.location.position) == [.index(1), .index(2), .index(3)])
    #expect(result.rejected.map(\.location.line) == [3, 4, 5])
    #expect(result.rejected.map(\.id) == ["b", "c", "d"])
    #expect(result.rejected.map { field($0.reason) } == [.radius, .latitude, .metadata])
    guard case .invalidJSON(_, let radiusError) = result.rejected[0].reason,
      case .invalidJSON(_, let deepError) = result.rejected[2].reason
    else { return }
    #expect(radiusError.line == 3)
    #expect(radiusError.column == 61)
    #expect(radiusError.message.contains("1e400 is out of range"))
    // The root array is level 1, the definition 2, metadata 3: the 513th level is reached
    // after "metadata" and 510 "a" keys.
    #expect(deepError.path.count == 511)
    #expect(deepError.message == "more than 512 nested arrays and objects")
    #expect(
      result.rejected[0].description
        == "defs.json[1] (line 3) (id \"b\"): radius: number 1e400 is out of range"
        + " (beyond ±1.8e308) (line 3, column 61)")
  }

  @Test func nestingUpTo512IsAccepted() throws {
    // Root array (1) + definition (2) + metadata (3) + 509 more = 512 levels.
    let inner = String(repeating: "[", count: 509) + String(repeating: "]", count: 509)
    func definition(_ inner: String) -> String {
      #"[{"id": "a", "latitude": 1, "longitude": 2, "radius": 3, "metadata": {"x": "#
        + inner + "}}]"
    }
    let result = try read(definition(inner))
    #expect(result.geofences.map(\.id) == ["a"])
    let tooDeep = try read(definition("[" + inner + "]"))
    #expect(tooDeep.geofences.isEmpty)
    #expect(tooDeep.rejected.map(\.id) == ["a"])
  }

  @Test func duplicateKeysAndBadStringsRejectTheirDefinition() throws {
    let text = """
      [{"id": "a", "latitude": 1, "longitude": 2, "radius": 3, "radius": 4},
       {"id": "b", "latitude": 1, "longitude": 2, "radius": 3, "name": "\\ud800"},
       {"id": "c", "latitude": 1, "longitude": 2, "radius": 0x10},
       {"id": "d", "latitude": 1, "longitude": 2, "radius": 3 4},
       {"id": "e", "latitude": 1, "longitude": 2, "radius": 3}]
      """
    let result = try read(text)
    #expect(result.geofences.map(\.id) == ["e"])
    #expect(result.rejected.map(\.id) == ["a", "b", "c", "d"])
    #expect(result.rejected.map { field($0.reason) } == [.radius, .name, .radius, .radius])
  }

  @Test func unreadableIDIsLeftOut() throws {
    let result = try read(#"[{"id": 1e999, "latitude": 1, "longitude": 2, "radius": 3}]"#)
    #expect(result.rejected.count == 1)
    #expect(result.rejected[0].id == nil)
    #expect(field(result.rejected[0].reason) == .id)
  }

  @Test func brokenStructureStillFailsTheFile() throws {
    // Text that runs out inside the list is a file cut short: what is complete loads.
    let cut = try read(#"[{"id": "a", "latitude": 1, "longitude": 2, "radius": 3}"#)
    #expect(cut.geofences.map(\.id) == ["a"])
    #expect(cut.truncations.count == 1)
    let inString = try read(#"[{"id": "a} ]"#)
    #expect(inString.geofences.isEmpty)
    #expect(inString.truncations.map(\.description).first?.contains("string opened") == true)
    #expect(throws: GeofenceFileError.self) { try read(#"[{"id": "a"} {"id": "b"}]"#) }
  }

  @Test func geoJSONFeatureWithBadValueIsRejectedAlone() throws {
    let text = """
      {"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": "ok1",
         "geometry": {"type": "Point", "coordinates": [6.6, 46.5]},
         "properties": {"radius": 100}},
        {"type": "Feature", "id": "bad",
         "geometry": {"type": "Point", "coordinates": [6.6, 46.5]},
         "properties": {"radius": 1e400}},
        {"type": "Feature", "properties": {"id": "lon", "radius": 5},
         "geometry": {"type": "Point", "coordinates": [-Infinity, 46.5]}},
        {"type": "Feature", "id": "ok2",
         "geometry": {"type": "Point", "coordinates": [7.25, 47.5]},
         "properties": {"radius": 200, "note": "x"}}
      ]}
      """
    let result = try GeofenceFileReader.read(
      data: Data(text.utf8), format: .geojson, fileName: "z.geojson", defaultRadiusMeters: nil)
    #expect(result.geofences.map(\.id) == ["ok1", "ok2"])
    #expect(result.geofences[1].region.center.longitude == 7.25)
    #expect(result.geofences[1].metadataJSON == #"{"note":"x"}"#)
    #expect(result.rejected.map(\.location.position) == [.index(1), .index(2)])
    #expect(result.rejected.map(\.location.line) == [5, 8])
    #expect(result.rejected.map(\.id) == ["bad", "lon"])
    #expect(result.rejected.map { field($0.reason) } == [.radius, .longitude])
  }

  @Test func aBadPolygonCoordinateIsNamedByItsAxis() throws {
    // Position [1, 1e999] of a Polygon's ring, and [1e999, 0] of a MultiPolygon's: the
    // latitude and the longitude (the last index of the path), not the ring or the polygon.
    let text = """
      {"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": "lat", "properties": {},
         "geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1e999],[0,0]]]}},
        {"type": "Feature", "id": "lon", "properties": {},
         "geometry": {"type": "MultiPolygon",
                      "coordinates": [[[[0,0],[1e999,0],[1,1],[0,0]]]]}},
        {"type": "Feature", "id": "pt", "properties": {"radius": 5},
         "geometry": {"type": "Point", "coordinates": [1, 1e999]}}
      ]}
      """
    let result = try GeofenceFileReader.read(
      data: Data(text.utf8), format: .geojson, fileName: "p.geojson", defaultRadiusMeters: nil)
    #expect(result.rejected.map(\.id) == ["lat", "lon", "pt"])
    #expect(result.rejected.map { field($0.reason) } == [.latitude, .longitude, .latitude])
  }

  @Test func byteOrderMarkBeforeTheArrayIsSkipped() throws {
    let text = "\u{FEFF}[{\"id\": \"a\", \"latitude\": 1, \"longitude\": 2, \"radius\": 3}]"
    #expect(try read(text).geofences.map(\.id) == ["a"])
  }

  @Test func strictValuesMatchTheRFC() throws {
    let value = try JSONDocument.parse(
      Array(#"{"s": "a\u00e9\ud83d\ude00\n", "n": -1.5e2, "b": [true, false, null]}"#.utf8))
    #expect(
      value
        == .object([
          "s": .string("aé😀\n"), "n": .number(-150),
          "b": .array([.bool(true), .bool(false), .null]),
        ]))
    #expect(throws: JSONReadError.self) { try JSONDocument.parse(Array("[01]".utf8)) }
    #expect(throws: JSONReadError.self) { try JSONDocument.parse(Array("\"\u{01}\"".utf8)) }
    #expect(throws: JSONReadError.self) { try JSONDocument.parse([0x22, 0xFF, 0x22]) }
    #expect(throws: JSONReadError.self) { try JSONDocument.parse(Array("[1,]".utf8)) }
  }
}

@Suite struct DefinitionCSVGrammarTests {
  @Test func hexRadiusAndMidFileByteOrderMarks() throws {
    var bytes = Array("\u{FEFF}id,latitude,longitude,radius\na,1,2,0x1p12\n".utf8)
    bytes += Array("\u{FEFF}b,1,2,4096\nc\u{FEFF},1,2,1e400\n".utf8)
    let result = try GeofenceFileReader.read(
      data: Data(bytes), format: .csv, fileName: "p.csv", defaultRadiusMeters: nil)
    #expect(result.geofences.map(\.id) == ["b"])
    #expect(result.geofences[0].region.radiusMeters == 4096)
    #expect(
      result.rejected == [
        GeofenceRejection(
          location: DefinitionLocation(file: "p.csv", position: .line(2)), id: "a",
          reason: .notANumber(.radius, text: "0x1p12")),
        GeofenceRejection(
          location: DefinitionLocation(file: "p.csv", position: .line(4)), id: "c",
          reason: .notANumber(.radius, text: "1e400")),
      ])
  }
}
