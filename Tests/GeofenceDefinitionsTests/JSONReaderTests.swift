import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Testing
import GeofenceTestSupport

private let json = """
  [
    {"id": "j1", "latitude": 46.2, "longitude": 7.3, "radius": 100, "name": "Sion",
     "metadata": {"z": 1, "a": {"y": true, "b": null}, "s": "x/y", "f": 2.5}},
    {"id": "j2", "latitude": 46.2, "longitude": 7.3, "radius": 0},
    {"id": "j3", "latitude": 46.2, "longitude": 7.3, "radius": -1.5},
    {"id": "j4", "latitude": 46.2, "longitude": 7.3, "radius": "100"},
    {"id": "j5", "latitude": 46.2, "longitude": 7.3},
    {"id": "  ", "latitude": 46.2, "longitude": 7.3, "radius": 5},
    {"latitude": 46.2, "longitude": 7.3, "radius": 5},
    {"id": "j6", "latitude": -90.5, "longitude": 7.3, "radius": 5},
    {"id": "j7", "latitude": 0, "longitude": -181, "radius": 5},
    {"id": "j8", "latitude": "46", "longitude": 7.3, "radius": 5},
    {"id": "j9", "longitude": 7.3, "radius": 5},
    {"id": "j1", "latitude": 1, "longitude": 1, "radius": 5},
    {"id": "j10", "latitude": 1, "longitude": 1, "radius": 5, "metadata": [1]},
    42,
    {"id": 7, "latitude": -90, "longitude": 180, "radius": 1e7, "name": null},
    {"id": "j11", "latitude": 1, "longitude": 1, "radius": null},
    {"id": true, "latitude": 1, "longitude": 1, "radius": 5}
  ]
  """

private func read(_ text: String, format: GeofenceFileFormat = .json, radius: Double? = nil)
  throws(GeofenceFileError) -> GeofenceLoadResult
{
  try GeofenceFileReader.read(
    data: Data(text.utf8), format: format, fileName: "defs.json", defaultRadiusMeters: radius)
}

private func at(_ index: Int) -> DefinitionLocation {
  DefinitionLocation(file: "defs.json", position: .index(index))
}

@Test func jsonRejectsEachInvalidDefinitionWithItsIndexAndLoadsTheRest() throws {
  let result = try read(json)
  #expect(result.geofences.map(\.id) == ["j1", "7"])
  #expect(result.locations == [at(0), at(14)])
  let j1 = result.geofences[0]
  #expect(j1.name == "Sion")
  #expect(j1.region.center == Coordinate(uncheckedLatitude: 46.2, longitude: 7.3))
  #expect(j1.region.radiusMeters == 100)
  #expect(j1.metadataJSON == #"{"a":{"b":null,"y":true},"f":2.5,"s":"x/y","z":1}"#)
  let seven = result.geofences[1]
  #expect(seven.name == nil)
  #expect(seven.region.center == Coordinate(uncheckedLatitude: -90, longitude: 180))
  #expect(seven.region.radiusMeters == 10_000_000)

  #expect(
    result.rejected == [
      GeofenceRejection(location: at(1), id: "j2", reason: .invalidRadius(0)),
      GeofenceRejection(location: at(2), id: "j3", reason: .invalidRadius(-1.5)),
      GeofenceRejection(
        location: at(3), id: "j4",
        reason: .wrongType(.radius, expected: "a number", found: "string")),
      GeofenceRejection(location: at(4), id: "j5", reason: .missing(.radius)),
      GeofenceRejection(location: at(5), id: nil, reason: .emptyID),
      GeofenceRejection(location: at(6), id: nil, reason: .missing(.id)),
      GeofenceRejection(location: at(7), id: "j6", reason: .latitudeOutOfRange(-90.5)),
      GeofenceRejection(location: at(8), id: "j7", reason: .longitudeOutOfRange(-181)),
      GeofenceRejection(
        location: at(9), id: "j8",
        reason: .wrongType(.latitude, expected: "a number", found: "string")),
      GeofenceRejection(location: at(10), id: "j9", reason: .missing(.latitude)),
      GeofenceRejection(
        location: at(11), id: "j1", reason: .duplicateID(firstDefinedAt: at(0))),
      GeofenceRejection(
        location: at(12), id: "j10",
        reason: .wrongType(.metadata, expected: "an object", found: "array")),
      GeofenceRejection(
        location: at(13), id: nil,
        reason: .malformedRecord("definition must be an object, found number")),
      GeofenceRejection(location: at(15), id: "j11", reason: .missing(.radius)),
      GeofenceRejection(
        location: at(16), id: nil,
        reason: .wrongType(.id, expected: "a string or an integer", found: "boolean")),
    ])
  #expect(
    result.rejected[2].description
      == #"defs.json[3] (line 6) (id "j4"): radius must be a number, found string"#)
}

@Test func jsonDefaultRadiusAppliesToDefinitionsWithoutOne() throws {
  let result = try read(json, radius: 50)
  #expect(result.geofences.map(\.id) == ["j1", "j5", "7", "j11"])
  #expect(result.geofences[1].region.radiusMeters == 50)
}

@Test func unparseableJSONIsAThrownErrorNamingTheFile() throws {
  do {
    _ = try read(#"[{"id": "a", "latitude": 1}, ]]"#)
    Issue.record("expected an error")
  } catch {
    #expect(error.file == "defs.json")
    guard case .malformedJSON(let why) = error.reason else {
      Issue.record("expected malformedJSON, got \(error)")
      return
    }
    #expect(!why.isEmpty)
    #expect(error.description.hasPrefix("defs.json: not valid JSON: "))
  }
  #expect(throws: GeofenceFileError(file: "defs.json", reason: .empty)) { try read("  \n") }
  #expect(throws: GeofenceFileError.self) { try read(#""just a string""#) }
  #expect(throws: GeofenceFileError.self) { try read(#"{"type": "Point"}"#) }
}

@Test func aMissingFileIsAThrownError() {
  let url = URL(fileURLWithPath: "/nonexistent/places.csv")
  do {
    _ = try GeofenceFileReader.read(contentsOf: url, defaultRadiusMeters: 10)
    Issue.record("expected an error")
  } catch {
    #expect(error.file == "/nonexistent/places.csv")
    if case .unreadable = error.reason {} else { Issue.record("got \(error)") }
  }
}

@Test func formatIsChosenByExtensionAndContent() {
  let array = Data("  \n[]".utf8)
  let object = Data("\u{FEFF}{}".utf8)
  let text = Data("id,latitude".utf8)
  #expect(GeofenceFileFormat.detect(pathExtension: "json", data: array) == .json)
  #expect(GeofenceFileFormat.detect(pathExtension: "json", data: object) == .geojson)
  #expect(GeofenceFileFormat.detect(pathExtension: "GeoJSON", data: object) == .geojson)
  #expect(GeofenceFileFormat.detect(pathExtension: "geojson", data: array) == .json)
  #expect(GeofenceFileFormat.detect(pathExtension: "CSV", data: array) == .csv)
  #expect(GeofenceFileFormat.detect(pathExtension: "txt", data: text) == .csv)
  #expect(GeofenceFileFormat.detect(pathExtension: "", data: array) == .json)
  #expect(GeofenceFileFormat.detect(pathExtension: "json", data: text) == .json)
  #expect(GeofenceFileFormat.detect(pathExtension: "txt", data: Data()) == .csv)
}

@Test func jsonWithAByteOrderMarkIsRead() throws {
  let result = try read("\u{FEFF}[{\"id\":\"b\",\"latitude\":1,\"longitude\":2,\"radius\":3}]")
  #expect(result.geofences.map(\.id) == ["b"])
}

@Test func filesOnDiskAreReadInTheirDetectedFormat() throws {
  let dir = TestScratch.root.appendingPathComponent(
    "geofence-defs-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: dir) }
  let collection = dir.appendingPathComponent("zones.json")
  try Data(
    #"{"type":"FeatureCollection","features":[{"type":"Feature","id":"f","geometry":{"type":"Point","coordinates":[7,46]},"properties":{"radius":9}}]}"#
      .utf8
  ).write(to: collection)
  let list = dir.appendingPathComponent("zones.txt")
  try Data(#"[{"id":"l","latitude":46,"longitude":7,"radius":9}]"#.utf8).write(to: list)
  let zones = try GeofenceFileReader.read(contentsOf: collection, defaultRadiusMeters: nil)
  #expect(zones.geofences.map(\.id) == ["f"])
  let listed = try GeofenceFileReader.read(contentsOf: list, defaultRadiusMeters: nil)
  #expect(listed.geofences.map(\.id) == ["l"])

  let both = try GeofenceFileReader.read(
    contentsOf: [collection, list, collection], defaultRadiusMeters: nil)
  #expect(both.geofences.map(\.id) == ["f", "l"])
  let first = collection.relativePath
  #expect(
    both.rejected.map(\.description) == [
      "\(first)[0] (line 1) (id \"f\"): duplicate id, first defined at \(first)[0] (line 1)"
    ])
}
