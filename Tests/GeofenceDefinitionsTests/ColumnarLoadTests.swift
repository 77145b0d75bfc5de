import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Testing

// The readers load into columns (ids, packed circles, side tables for names, metadata and
// polygons) and deduplicate with an id table. The oracle here takes the other way, written
// out by hand: each definition as a `RawGeofenceDefinition`, validated one by one with the
// public `GeofenceValidator.validate`, the first valid definition of an id kept through a
// dictionary. Geofences compare field by field, so centres, radii, unit vectors and thresholds
// agree bit for bit.

/// One definition of a file as the oracle sees it: where it is and what it holds, or a
/// rejection the oracle cannot derive from a raw definition (a record the reader refuses whole).
private enum Row {
  case definition(DefinitionLocation, RawGeofenceDefinition)
  case refused(GeofenceRejection)
}

/// Validates each row, the first valid definition of an id winning.
private func oracle(_ rows: [Row], defaultRadiusMeters: Double?) -> (
  geofences: [Geofence], locations: [DefinitionLocation], rejections: [String]
) {
  var geofences: [Geofence] = []
  var locations: [DefinitionLocation] = []
  var rejections: [String] = []
  var first: [String: DefinitionLocation] = [:]
  for row in rows {
    switch row {
    case .refused(let r): rejections.append(r.description)
    case .definition(let location, let raw):
      switch GeofenceValidator.validate(raw, defaultRadiusMeters: defaultRadiusMeters) {
      case .failure(let problem):
        rejections.append(
          GeofenceRejection(
            location: location, id: GeofenceValidator.identifier(of: raw), reason: problem
          ).description)
      case .success(let g):
        if let at = first[g.id] {
          rejections.append(
            GeofenceRejection(
              location: location, id: g.id, reason: .duplicateID(firstDefinedAt: at)
            )
            .description)
        } else {
          first[g.id] = location
          geofences.append(g)
          locations.append(location)
        }
      }
    }
  }
  return (geofences, locations, rejections)
}

private func expectSame(
  _ result: GeofenceLoadResult, _ expected: [Row], defaultRadiusMeters: Double?,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let want = oracle(expected, defaultRadiusMeters: defaultRadiusMeters)
  #expect(result.count == want.geofences.count, sourceLocation: sourceLocation)
  #expect(result.geofences == want.geofences, sourceLocation: sourceLocation)
  #expect(result.columns.ids == want.geofences.map(\.id), sourceLocation: sourceLocation)
  #expect(
    result.columns.circles == want.geofences.map { PackedCircle($0.region) },
    sourceLocation: sourceLocation)
  // Bit for bit (`==` on Double takes -0.0 for 0.0).
  func bits(_ c: PackedCircle) -> [UInt64] {
    [c.center.latitude.bitPattern, c.center.longitude.bitPattern, c.radiusMeters.bitPattern]
  }
  #expect(
    result.columns.circles.map(bits) == want.geofences.map { bits(PackedCircle($0.region)) },
    sourceLocation: sourceLocation)
  #expect(result.locations == want.locations, sourceLocation: sourceLocation)
  #expect(
    result.locations.map(\.description) == want.locations.map(\.description),
    sourceLocation: sourceLocation)
  #expect(result.rejected.map(\.description) == want.rejections, sourceLocation: sourceLocation)
}

private func csvAt(_ line: Int, _ file: String = "places.csv") -> DefinitionLocation {
  DefinitionLocation(file: file, position: .line(line))
}

private func raw(
  _ id: JSONValue?, _ latitude: JSONValue?, _ longitude: JSONValue?, _ radius: JSONValue? = nil,
  name: JSONValue? = nil, metadata: JSONValue? = nil, geometry: JSONValue? = nil,
  text: Bool = false
) -> RawGeofenceDefinition {
  RawGeofenceDefinition(
    id: id, latitude: latitude, longitude: longitude, radius: radius, name: name,
    metadata: metadata, geometry: geometry, isFromText: text)
}

@Test func csvWithAMarkQuotesBadRowsAndDuplicatesLoadsAsEachRowValidatedAlone() throws {
  // A byte-order mark, CRLF, a quoted id and name with a delimiter and a line break, blank
  // cells, bad numbers, an id defined twice (the second rejected, naming line 2), an id whose
  // first definition is rejected (so the second loads), and a metadata column.
  let text =
    "\u{FEFF}id,name,latitude,longitude,radius,kind\r\n"
    + "a,Alpha,46.5,6.6,150,town\r\n"
    + "\"b,1\",\"Beta\nline\",-33.8688,151.2093,,\r\n"
    + "c,,91,0,10,x\r\n"
    + "a,Again,1,1,1,\r\n"
    + "c,Gamma,0.1,-179.99999999999997,2.5e3,\r\n"
    + "d, ,12,abc,5,\r\n"
    + "  e  ,Echo,-0.0,180,1e-3,village\r\n"
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .csv, fileName: "places.csv", defaultRadiusMeters: 75)
  let rows: [Row] = [
    .definition(
      csvAt(2),
      raw(
        .string("a"), .number(46.5), .number(6.6), .number(150), name: .string("Alpha"),
        metadata: .object(["kind": .string("town")]), text: true)),
    .definition(
      csvAt(3),
      raw(
        .string("b,1"), .number(-33.8688), .number(151.2093), nil, name: .string("Beta\nline"),
        text: true)),
    .definition(
      csvAt(5),
      raw(
        .string("c"), .number(91), .number(0), .number(10),
        metadata: .object(["kind": .string("x")]), text: true)),
    .definition(
      csvAt(6),
      raw(.string("a"), .number(1), .number(1), .number(1), name: .string("Again"), text: true)),
    .definition(
      csvAt(7),
      raw(
        .string("c"), .number(0.1), .number(-179.99999999999997), .number(2500),
        name: .string("Gamma"), text: true)),
    .definition(csvAt(8), raw(.string("d"), .number(12), .string("abc"), .number(5), text: true)),
    .definition(
      csvAt(9),
      raw(
        .string("e"), .number(-0.0), .number(180), .number(0.001), name: .string("Echo"),
        metadata: .object(["kind": .string("village")]), text: true)),
  ]
  expectSame(result, rows, defaultRadiusMeters: 75)
  #expect(result.count == 4)
  #expect(result.columns.details(at: 1)?.name == "Beta\nline")
  #expect(result.columns.details(at: 2)?.name == "Gamma")
  #expect(result.columns.details(at: 2)?.metadataJSON == nil)
  #expect(result.columns.circles[1].radiusMeters == 75)
  #expect(result.columns.circles[3].center.latitude.bitPattern == (-0.0).bitPattern)
}

@Test func jsonWithPolygonsBadValuesAndDuplicatesLoadsAsEachDefinitionValidatedAlone() throws {
  let square: JSONValue = .object([
    "type": .string("Polygon"),
    "coordinates": .array([
      .array([
        .array([.number(6.0), .number(46.0)]), .array([.number(6.1), .number(46.0)]),
        .array([.number(6.1), .number(46.1)]), .array([.number(6.0), .number(46.1)]),
        .array([.number(6.0), .number(46.0)]),
      ])
    ]),
  ])
  let text = """
    [
    {"id": "p", "geometry": {"type": "Polygon", "coordinates": [[[6.0, 46.0], [6.1, 46.0], [6.1, 46.1], [6.0, 46.1], [6.0, 46.0]]]}, "name": "Square", "metadata": {"url": "https://example.org/p", "b": [1, 2]}},
    {"id": 42, "latitude": 10, "longitude": 20, "radius": 30},
    {"id": "q", "latitude": "10", "longitude": 20, "radius": 30},
    {"id": "p", "latitude": 1, "longitude": 2, "radius": 3},
    {"id": "r", "latitude": 1, "longitude": 2},
    {"id": "s", "latitude": 1, "longitude": 2, "radius": 0},
    {"id": " t ", "latitude": -90, "longitude": -180, "radius": 1e7, "name": "  "}
    ]
    """
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .json, fileName: "defs.json", defaultRadiusMeters: nil)
  func at(_ index: Int) -> DefinitionLocation {
    DefinitionLocation(file: "defs.json", position: .index(index), line: index + 2)
  }
  let rows: [Row] = [
    .definition(
      at(0),
      raw(
        .string("p"), nil, nil, nil, name: .string("Square"),
        metadata: .object([
          "url": .string("https://example.org/p"), "b": .array([.number(1), .number(2)]),
        ]), geometry: square)),
    .definition(at(1), raw(.number(42), .number(10), .number(20), .number(30))),
    .definition(at(2), raw(.string("q"), .string("10"), .number(20), .number(30))),
    .definition(at(3), raw(.string("p"), .number(1), .number(2), .number(3))),
    .definition(at(4), raw(.string("r"), .number(1), .number(2))),
    .definition(at(5), raw(.string("s"), .number(1), .number(2), .number(0))),
    .definition(
      at(6), raw(.string(" t "), .number(-90), .number(-180), .number(1e7), name: .string("  "))),
  ]
  expectSame(result, rows, defaultRadiusMeters: nil)
  #expect(result.columns.polygons.count == 1)
  #expect(result.columns.polygon(at: 0) != nil)
  #expect(result.columns.polygon(at: 1) == nil)
  #expect(result.geofences[0].region == result.columns.polygon(at: 0)?.boundingCap)
}

@Test func geoJSONPointsAndPolygonsLoadAsEachFeatureValidatedAlone() throws {
  let text = """
    {"type": "FeatureCollection", "features": [
      {"type": "Feature", "id": "g1", "geometry": {"type": "Point", "coordinates": [7.36, 46.23]},
       "properties": {"name": "Sion", "radius": 50, "category": "cafe"}},
      {"type": "Feature", "id": "g2", "properties": {"radius": 20},
       "geometry": {"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 0]]], [[[5, 5], [6, 5], [6, 6], [5, 5]]]]}},
      {"type": "Feature", "id": "g1", "properties": {"radius": 5},
       "geometry": {"type": "Point", "coordinates": [3, 4]}}
    ]}
    """
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .geojson, fileName: "z.geojson", defaultRadiusMeters: nil)
  #expect(result.columns.ids == ["g1", "g2"])
  #expect(
    result.columns.circles[0]
      == PackedCircle(
        try CircularRegion(
          center: Coordinate(latitude: 46.23, longitude: 7.36), radiusMeters: 50)))
  #expect(
    result.columns.details(at: 0)
      == GeofenceDetails(name: "Sion", metadataJSON: #"{"category":"cafe"}"#))
  let polygon = try #require(result.columns.polygon(at: 1))
  #expect(polygon.polygonStarts.count == 3)
  #expect(result.columns.circles[1] == PackedCircle(polygon.boundingCap))
  // A polygon has no radius: its "radius" property is metadata like any other.
  #expect(
    result.columns.details(at: 1) == GeofenceDetails(name: nil, metadataJSON: #"{"radius":20}"#))
  #expect(
    result.rejected.map(\.description) == [
      #"z.geojson[2] (line 6) (id "g1"): duplicate id, first defined at z.geojson[0] (line 2)"#
    ])
}

@Test func mergingKeepsPriorityOrderAndNamesTheFirstFileOfEachId() throws {
  let one = try GeofenceFileReader.read(
    data: Data("id,latitude,longitude\na,1,1\nb,2,2\nbad,x,2\n".utf8), format: .csv,
    fileName: "one.csv", defaultRadiusMeters: 10)
  let two = try GeofenceFileReader.read(
    data: Data(
      #"[{"id":"b","latitude":4,"longitude":4,"radius":5},{"id":"bad","latitude":3,"longitude":3,"radius":5,"name":"N"}]"#
        .utf8),
    format: .json, fileName: "two.json", defaultRadiusMeters: nil)
  let three = try GeofenceFileReader.read(
    data: Data("id,latitude,longitude,radius\nbad,9,9,9\nc,5,5,5\na,0,0,1\n".utf8), format: .csv,
    fileName: "three.csv", defaultRadiusMeters: nil)
  let merged = GeofenceLoadResult.merging([one, two, three])
  let rows: [Row] = [
    .definition(csvAt(2, "one.csv"), raw(.string("a"), .number(1), .number(1), text: true)),
    .definition(csvAt(3, "one.csv"), raw(.string("b"), .number(2), .number(2), text: true)),
    .definition(csvAt(4, "one.csv"), raw(.string("bad"), .string("x"), .number(2), text: true)),
    .definition(
      DefinitionLocation(file: "two.json", position: .index(0), line: 1),
      raw(.string("b"), .number(4), .number(4), .number(5))),
    .definition(
      DefinitionLocation(file: "two.json", position: .index(1), line: 1),
      raw(.string("bad"), .number(3), .number(3), .number(5), name: .string("N"))),
    .definition(
      csvAt(2, "three.csv"), raw(.string("bad"), .number(9), .number(9), .number(9), text: true)),
    .definition(
      csvAt(3, "three.csv"), raw(.string("c"), .number(5), .number(5), .number(5), text: true)),
    .definition(
      csvAt(4, "three.csv"), raw(.string("a"), .number(0), .number(0), .number(1), text: true)),
  ]
  // The default radius of each file differs; the oracle's comes from the rows that lack one
  // (only one.csv's, 10 m).
  expectSame(merged, rows, defaultRadiusMeters: 10)
}

@Test func aLoadHoldsAboutFortyFourBytesABareGeofenceWithAShortID() throws {
  var text = "id,latitude,longitude,radius\n"
  for i in 0..<10_000 {
    text += "z\(i),\(Double(i % 90) + 0.5),\(Double(i % 360) - 179.5),\(i + 1)\n"
  }
  let result = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .csv, fileName: "many.csv", defaultRadiusMeters: nil)
  #expect(result.count == 10_000)
  // 16 (inline id) + 24 (circle) + 8 or 16 (two to four 4-byte lookup buckets), + 4 (line).
  #expect(result.columns.footprintBytes <= 56 * result.count)
  #expect(result.footprintBytes <= 60 * result.count)
  #expect(result.columns.ids[9_999] == "z9999")
  #expect(
    result.columns.circles[9_999]
      == PackedCircle(
        try CircularRegion(
          center: Coordinate(latitude: 9.5, longitude: 99.5), radiusMeters: 10_000)))
}

@Test func spellingsOfOneIDAreDuplicatesWhateverTheTablesSeed() throws {
  // `String` compares canonically equivalent spellings equal: composed é and e with a
  // combining accent, the Kelvin sign and K, Å as one scalar, as the Ångström sign and as A
  // with a ring. Each is one id, found as a duplicate whichever seed the id table draws (32
  // loads, each with its own seed; a table hashing the bytes finds them only by chance).
  let spellings: [(first: String, second: String)] = [
    ("caf\u{E9}", "cafe\u{301}"), ("\u{212A}elvin", "Kelvin"), ("\u{C5}", "\u{212B}"),
    ("\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m"), ("x\u{E9}\u{301}", "xe\u{301}\u{301}"),
  ]
  var csv = "id,latitude,longitude,radius\n"
  for (k, s) in spellings.enumerated() { csv += "\(s.first),\(k),1,10\nplain\(k),\(k),2,10\n" }
  for (k, s) in spellings.enumerated() { csv += "\(s.second),\(k),3,10\n" }
  var json = "["
  for (k, s) in spellings.enumerated() {
    json += (k == 0 ? "" : ",") + #"{"id":"\#(s.second)","latitude":1,"longitude":1,"radius":5}"#
  }
  json += "]"
  for _ in 0..<32 {
    let one = try GeofenceFileReader.read(
      data: Data(csv.utf8), format: .csv, fileName: "one.csv", defaultRadiusMeters: nil)
    #expect(one.count == 2 * spellings.count)
    #expect(one.rejected.count == spellings.count)
    for (k, r) in one.rejected.enumerated() {
      #expect(
        r.description
          == "one.csv:\(2 * spellings.count + 2 + k) (id \"\(spellings[k].second)\"): duplicate"
          + " id, first defined at one.csv:\(2 * k + 2)")
      // The row is found by either spelling.
      #expect(one.columns.lookup.find(spellings[k].second, in: one.columns.ids) == Int32(2 * k))
    }
    let two = try GeofenceFileReader.read(
      data: Data(json.utf8), format: .json, fileName: "two.json", defaultRadiusMeters: nil)
    #expect(two.count == spellings.count && two.rejected.isEmpty)
    let merged = GeofenceLoadResult.merging([one, two])
    #expect(merged.count == 2 * spellings.count)
    #expect(merged.rejected.count == 2 * spellings.count)
    #expect(merged.rejected.suffix(spellings.count).map(\.id) == spellings.map(\.second))
  }
}
