import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Testing

private let geojson = """
  {"type": "FeatureCollection", "features": [
    {"type": "Feature", "id": "g1",
     "geometry": {"type": "Point", "coordinates": [7.36, 46.23, 491]},
     "properties": {"name": "Sion", "radius": 50, "category": "cafe", "open": true}},
    {"type": "Feature",
     "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 0], [1, 1]]},
     "properties": {"id": "g2", "radius": 10}},
    {"type": "Feature", "properties": {"id": "g3"},
     "geometry": {"type": "Point", "coordinates": [1, 2]}},
    {"type": "Feature", "id": "g4", "properties": {"radius": "big"},
     "geometry": {"type": "Point", "coordinates": [1, 2]}},
    {"type": "Feature", "id": 17, "properties": {"radius": 80},
     "geometry": {"type": "Point", "coordinates": [-179.9999, -16]}},
    {"type": "Feature", "id": "g5", "properties": {"radius": 5},
     "geometry": {"type": "Point", "coordinates": [200, 10]}},
    {"type": "Feature", "id": "g6", "properties": {"radius": 5}, "geometry": null},
    {"type": "Feature", "id": "g1", "properties": {"radius": 5},
     "geometry": {"type": "Point", "coordinates": [3, 4]}},
    {"type": "Feature", "id": "g7", "properties": {"radius": 5},
     "geometry": {"type": "Point", "coordinates": [3]}},
    {"type": "Feature", "properties": {"radius": 5},
     "geometry": {"type": "Point", "coordinates": [3, 4]}}
  ]}
  """

private func at(_ index: Int) -> DefinitionLocation {
  DefinitionLocation(file: "zones.geojson", position: .index(index))
}

@Test func geoJSONReadsPointFeaturesAndRejectsTheRestWithReasons() throws {
  let result = try GeofenceFileReader.read(
    data: Data(geojson.utf8), format: .geojson, fileName: "zones.geojson",
    defaultRadiusMeters: nil)
  #expect(result.geofences.map(\.id) == ["g1", "17"])
  #expect(result.locations == [at(0), at(4)])
  let g1 = result.geofences[0]
  #expect(g1.name == "Sion")
  #expect(g1.region.center == Coordinate(uncheckedLatitude: 46.23, longitude: 7.36))
  #expect(g1.region.radiusMeters == 50)
  #expect(g1.metadataJSON == #"{"category":"cafe","open":true}"#)
  #expect(
    result.geofences[1].region.center == Coordinate(uncheckedLatitude: -16, longitude: -179.9999))
  #expect(result.geofences[1].metadataJSON == nil)

  #expect(
    result.rejected == [
      GeofenceRejection(location: at(1), id: "g2", reason: .unsupportedGeometry("LineString")),
      GeofenceRejection(location: at(2), id: "g3", reason: .missing(.radius)),
      GeofenceRejection(
        location: at(3), id: "g4",
        reason: .wrongType(.radius, expected: "a number", found: "string")),
      GeofenceRejection(location: at(5), id: "g5", reason: .longitudeOutOfRange(200)),
      GeofenceRejection(location: at(6), id: "g6", reason: .missing(.geometry)),
      GeofenceRejection(location: at(7), id: "g1", reason: .duplicateID(firstDefinedAt: at(0))),
      GeofenceRejection(
        location: at(8), id: "g7",
        reason: .wrongType(
          .coordinates, expected: "an array [longitude, latitude]", found: "array")),
      GeofenceRejection(location: at(9), id: nil, reason: .missing(.id)),
    ])
  #expect(
    result.rejected[0].description
      == #"zones.geojson[1] (line 5) (id "g2"): geometry type LineString is not supported (only Point, Polygon and MultiPolygon)"#
  )
}

@Test func geoJSONWithoutAFeaturesArrayIsAThrownError() {
  #expect(
    throws: GeofenceFileError(
      file: "x.geojson",
      reason: .unexpectedJSONStructure("GeoJSON FeatureCollection has no \"features\" array"))
  ) {
    try GeofenceFileReader.read(
      data: Data(#"{"type":"FeatureCollection"}"#.utf8), format: .geojson,
      fileName: "x.geojson", defaultRadiusMeters: 10)
  }
}

/// A `metadata` property holding an object is the metadata itself (the form `geofence regions
/// --format geojson` writes and the reference server reads), so a listing reads back
/// unchanged; any other `metadata` value is an ordinary property.
@Test func geoJSONMetadataPropertyObjectIsTheMetadata() throws {
  let text = """
    {"type": "FeatureCollection", "features": [
      {"type": "Feature", "id": "a", "geometry": {"type": "Point", "coordinates": [6.6, 46.5]},
       "properties": {"name": "A", "radius": 100, "metadata": {"url": "https://e.com/a", "n": 1}}},
      {"type": "Feature", "id": "p", "properties": {"metadata": {"z": true}},
       "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}},
      {"type": "Feature", "id": "s", "geometry": {"type": "Point", "coordinates": [1, 2]},
       "properties": {"radius": 5, "metadata": "plain", "k": 2}}
    ]}
    """
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .geojson, fileName: "m.geojson", defaultRadiusMeters: nil)
  #expect(result.rejected.isEmpty)
  #expect(
    result.geofences.map(\.metadataJSON) == [
      #"{"n":1,"url":"https://e.com/a"}"#, #"{"z":true}"#, #"{"k":2,"metadata":"plain"}"#,
    ])
}
