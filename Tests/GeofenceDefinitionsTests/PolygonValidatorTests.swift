import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Testing

/// One feature per polygon problem, in one file: each is rejected alone, with its reason.
private let cases: [(id: String, coordinates: String, type: String, reason: String?)] = [
  ("valid", "[[[0,0],[1,0],[1,1],[0,1],[0,0]]]", "Polygon", nil),
  // GEOS's reasons (`GEOSisValidReason_r`), each naming the place of the fault.
  ("bow-tie", "[[[0,0],[10,10],[10,0],[0,10],[0,0]]]", "Polygon", "Self-intersection[5 5]"),
  (
    "ring-self-intersection", "[[[0,0],[4,0],[4,4],[2,0],[0,4],[0,0]]]", "Polygon",
    "Ring Self-intersection[2 0]"
  ),
  (
    "hole-outside", "[[[0,0],[4,0],[4,4],[0,4],[0,0]],[[5,5],[6,5],[6,6],[5,6],[5,5]]]",
    "Polygon", "Hole lies outside shell[5 5]"
  ),
  (
    "holes-nested",
    "[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[1,1],[9,1],[9,9],[1,9],[1,1]],[[2,2],[8,2],[8,8],[2,8],[2,2]]]",
    "Polygon", "Holes are nested[2 2]"
  ),
  (
    "interior-disconnected",
    "[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[5,0],[10,5],[5,10],[0,5],[5,0]]]", "Polygon",
    "Interior is disconnected[0 5]"
  ),
  (
    "nested-shells",
    "[[[[0,0],[10,0],[10,10],[0,10],[0,0]]],[[[2,2],[8,2],[8,8],[2,8],[2,2]]]]", "MultiPolygon",
    "Nested shells[2 2]"
  ),
  (
    "too-few-points", "[[[0,0],[1,1],[1,1],[0,0]]]", "Polygon",
    "Too few points in geometry component[0 0]"
  ),
  (
    "not-closed", "[[[0,0],[1,0],[1,1],[0,1]]]", "Polygon",
    "GEOSGeom_createLinearRing_r (polygon 0, ring 0) failed: IllegalArgumentException: Points of LinearRing do not form a closed linestring"
  ),
  (
    "three-positions", "[[[0,0],[1,0],[0,0]]]", "Polygon",
    "Too few points in geometry component[0 0]"
  ),
  // Checked before GEOS.
  // An empty ring, which GEOS takes as valid: as the only ring it left no box (the longitude
  // normalisation looped forever), as a hole it reached the area with no position (a crash).
  ("empty-ring", "[[]]", "Polygon", "polygon 0, ring 0 has 0 positions; a ring needs at least 4"),
  (
    "empty-hole", "[[[0,0],[1,0],[1,1],[0,0]],[]]", "Polygon",
    "polygon 0, ring 1 has 0 positions; a ring needs at least 4"
  ),
  (
    "empty-part-ring", "[[[[0,0],[1,0],[1,1],[0,0]]],[[]]]", "MultiPolygon",
    "polygon 1, ring 0 has 0 positions; a ring needs at least 4"
  ),
  (
    "empty-multipolygon-ring", "[[[]]]", "MultiPolygon",
    "polygon 0, ring 0 has 0 positions; a ring needs at least 4"
  ),
  (
    "latitude-out-of-range", "[[[0,0],[1,0],[1,91],[0,0]]]", "Polygon",
    "polygon 0, ring 0, position 2: [1.0, 91.0] is not a finite longitude in [-540, 540] and latitude in [-90, 90]"
  ),
  (
    "around-the-pole", "[[[0,80],[90,80],[180,80],[-90,80],[0,80]]]", "Polygon",
    "polygon 0, ring 0 winds around the North Pole; cut it at ±180 and close it along latitude 90 in steps of at most 180° of longitude (edges are straight in longitude: [180, 90], [0, 90], [-180, 90])"
  ),
  (
    "pole-cap-closed-in-one-edge",
    "[[[-180,80],[-90,80],[0,80],[90,80],[180,80],[180,90],[-180,90],[-180,80]]]", "Polygon",
    "polygon 0, ring 0 winds around the North Pole; cut it at ±180 and close it along latitude 90 in steps of at most 180° of longitude (edges are straight in longitude: [180, 90], [0, 90], [-180, 90])"
  ),
  (
    "jump-across-the-antimeridian", "[[[179,0],[-179,0],[-179,1],[179,1],[179,0]]]", "Polygon",
    "polygon 0, ring 0, position 0: the edge to the next position steps more than 180° of longitude (edges are straight in longitude, so it runs the long way round); cut the polygon at ±180 (RFC 7946 3.1.9), write longitudes past 180, or, for a band all the way round, add a vertex at least every 180°"
  ),
  (
    "structure", "[[[0,0],[1,0],\"x\",[0,0]]]", "Polygon",
    "polygon 0, ring 0, position 2 must be an array [longitude, latitude]"
  ),
  // Accepted: wrong winding (fixed), longitudes past 180 (normalised), cut at ±180.
  ("clockwise", "[[[0,0],[0,1],[1,1],[1,0],[0,0]]]", "Polygon", nil),
  ("past-180", "[[[170,0],[190,0],[190,5],[170,5],[170,0]]]", "Polygon", nil),
  // The two the messages point to: a polar cap closed along 90 in steps of 180°, and a band
  // all the way round with a vertex every 180°.
  (
    "pole-cap-in-steps",
    "[[[-180,80],[-90,80],[0,80],[90,80],[180,80],[180,90],[0,90],[-180,90],[-180,80]]]",
    "Polygon", nil
  ),
  (
    "band-all-round", "[[[-180,-10],[0,-10],[180,-10],[180,10],[0,10],[-180,10],[-180,-10]]]",
    "Polygon", nil
  ),
  ("in-0-360", "[[[350,0],[355,0],[355,5],[350,5],[350,0]]]", "Polygon", nil),
  (
    "cut-at-180",
    "[[[[170,0],[180,0],[180,5],[170,5],[170,0]]],[[[-180,0],[-170,0],[-170,5],[-180,5],[-180,0]]]]",
    "MultiPolygon", nil
  ),
]

@Test func eachInvalidPolygonIsRejectedAloneWithItsReason() throws {
  let features = cases.map { c in
    #"{"type":"Feature","id":"\#(c.id)","properties":{"name":"\#(c.id)"},"geometry":{"type":"\#(c.type)","coordinates":\#(c.coordinates)}}"#
  }
  let text = #"{"type":"FeatureCollection","features":[\#(features.joined(separator: ",\n"))]}"#
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .geojson, fileName: "p.geojson", defaultRadiusMeters: nil)
  #expect(result.geofences.map(\.id) == cases.filter { $0.reason == nil }.map(\.id))
  for (i, c) in cases.enumerated() {
    guard let reason = c.reason else { continue }
    let rejection = result.rejected.first { $0.id == c.id }
    #expect(rejection?.location.position == .index(i))
    #expect(rejection?.reason.description == "invalid polygon: \(reason)", "\(c.id)")
  }
  #expect(result.rejected.count == cases.filter { $0.reason != nil }.count)

  func polygon(_ id: String) throws -> PolygonRegion {
    try #require(result.geofences.first { $0.id == id }?.polygon)
  }
  // The clockwise square is stored counter-clockwise.
  let clockwise = try polygon("clockwise")
  #expect(PolygonRegion.signedArea(clockwise.ring(0)) > 0)
  #expect(clockwise.contains(Coordinate(uncheckedLatitude: 0.5, longitude: 0.5)))
  // Longitudes past 180 stay in one frame starting in [-180, 180); [350, 355] moves to
  // [-10, -5].
  let past = try polygon("past-180")
  #expect(past.minLongitude == 170 && past.maxLongitude == 190)
  #expect(past.contains(Coordinate(uncheckedLatitude: 1, longitude: -175)))
  #expect(!past.contains(Coordinate(uncheckedLatitude: 1, longitude: -169)))
  let shifted = try polygon("in-0-360")
  #expect(shifted.minLongitude == -10 && shifted.maxLongitude == -5)
  let cut = try polygon("cut-at-180")
  #expect(cut.polygonCount == 2)
  #expect(cut.contains(Coordinate(uncheckedLatitude: 1, longitude: 179.5)))
  #expect(cut.contains(Coordinate(uncheckedLatitude: 1, longitude: -179.5)))
  // The index circle of a polygon is its bounding cap.
  let valid = try polygon("valid")
  #expect(result.geofences.first { $0.id == "valid" }?.region == valid.boundingCap)
}

@Test func aDefinitionListTakesAGeometryBesideTheCircleFields() throws {
  let text = #"""
    [{"id": "square", "name": "Square", "metadata": {"url": "https://example.com/sq"},
      "geometry": {"type": "Polygon", "coordinates": [[[6,46],[7,46],[7,47],[6,47],[6,46]]]}},
     {"id": "circle", "latitude": 46.5, "longitude": 6.5, "radius": 100},
     {"id": "bad", "geometry": {"type": "Polygon", "coordinates": [[[0,0],[10,10],[10,0],[0,10],[0,0]]]}}]
    """#
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .json, fileName: "d.json", defaultRadiusMeters: nil)
  #expect(result.geofences.map(\.id) == ["square", "circle"])
  #expect(
    result.geofences[0].polygon?.contains(Coordinate(uncheckedLatitude: 46.5, longitude: 6.5))
      == true)
  #expect(result.geofences[0].metadataJSON == #"{"url":"https://example.com/sq"}"#)
  #expect(result.geofences[1].polygon == nil)
  #expect(result.rejected.map(\.reason.description) == ["invalid polygon: Self-intersection[5 5]"])
}
