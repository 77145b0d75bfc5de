import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Testing

private let csv = """
  ID,Name,Lat,Longitude,Radius,kind
  a1,"Sion, VS",46.23,7.36,150,town
  a2,Zero,46.0,7.0,0,
  a3,Negative,46.0,7.0,-5,
  a4,NotANumber,46.0,7.0,NaN,
  a5,Infinite,46.0,7.0,inf,
  a6,Text,46.0,7.0,wide,
  a7,Default,46.0,7.0,,
  a8,North,91,7.0,10,
  a9,East,46,180.5,10,
  a10,Word,north,7,10,
  a11,NoLongitude,46,,10,
  ,NoID,46,7,10,
  a1,Duplicate,46,7,10,
  a12,"Two
  lines",46,7,10,
  a13,Next,46,7,10,
  a14,Extra,46,7,10,x,surplus
  a15,Short,46,7

  """

private func read(_ text: String, radius: Double?) throws(GeofenceFileError) -> GeofenceLoadResult {
  try GeofenceFileReader.read(
    data: Data(text.utf8), format: .csv, fileName: "test.csv", defaultRadiusMeters: radius)
}

private func at(_ line: Int) -> DefinitionLocation {
  DefinitionLocation(file: "test.csv", position: .line(line))
}

@Test func csvRejectsEachInvalidRowWithItsLineAndLoadsTheRest() throws {
  let result = try read(csv, radius: 100)
  #expect(result.geofences.map(\.id) == ["a1", "a7", "a12", "a13", "a15"])
  #expect(
    result.locations.map(\.position) == [.line(2), .line(8), .line(15), .line(17), .line(19)])
  #expect(result.geofences[0].name == "Sion, VS")
  #expect(result.geofences[0].region.radiusMeters == 150)
  #expect(result.geofences[0].metadataJSON == #"{"kind":"town"}"#)
  #expect(result.geofences[1].region.radiusMeters == 100)
  #expect(result.geofences[1].metadataJSON == nil)
  #expect(result.geofences[2].name == "Two\nlines")

  let rejected = result.rejected
  #expect(rejected.count == 12)
  #expect(rejected[0] == GeofenceRejection(location: at(3), id: "a2", reason: .invalidRadius(0)))
  #expect(rejected[1] == GeofenceRejection(location: at(4), id: "a3", reason: .invalidRadius(-5)))
  // `nan` and `inf` are not numbers in the one number grammar (RFC 8259).
  #expect(
    rejected[2]
      == GeofenceRejection(location: at(5), id: "a4", reason: .notANumber(.radius, text: "NaN")))
  #expect(
    rejected[3]
      == GeofenceRejection(location: at(6), id: "a5", reason: .notANumber(.radius, text: "inf")))
  #expect(
    rejected[4]
      == GeofenceRejection(location: at(7), id: "a6", reason: .notANumber(.radius, text: "wide")))
  #expect(
    rejected[5] == GeofenceRejection(location: at(9), id: "a8", reason: .latitudeOutOfRange(91)))
  #expect(
    rejected[6]
      == GeofenceRejection(location: at(10), id: "a9", reason: .longitudeOutOfRange(180.5)))
  #expect(
    rejected[7]
      == GeofenceRejection(
        location: at(11), id: "a10", reason: .notANumber(.latitude, text: "north")))
  #expect(
    rejected[8] == GeofenceRejection(location: at(12), id: "a11", reason: .missing(.longitude)))
  #expect(rejected[9] == GeofenceRejection(location: at(13), id: nil, reason: .missing(.id)))
  #expect(
    rejected[10]
      == GeofenceRejection(location: at(14), id: "a1", reason: .duplicateID(firstDefinedAt: at(2))))
  #expect(
    rejected[11]
      == GeofenceRejection(
        location: at(18), id: "a14",
        reason: .malformedRecord("row has 7 fields, the header has 6")))
  #expect(
    rejected[10].description == #"test.csv:14 (id "a1"): duplicate id, first defined at test.csv:2"#
  )
  #expect(
    rejected[0].description
      == #"test.csv:3 (id "a2"): radius 0.0 m is not a finite value in (0, 20037509] (half the WGS84 equator)"#
  )
}

@Test func csvWithoutADefaultRadiusRejectsRowsWithoutOne() throws {
  let result = try read(csv, radius: nil)
  #expect(result.geofences.map(\.id) == ["a1", "a12", "a13"])
  let missing = result.rejected.filter { $0.reason == .missing(.radius) }
  #expect(missing.map(\.location) == [at(8), at(19)])
  #expect(missing.map(\.id) == ["a7", "a15"])
}

@Test func csvColumnsMayComeInAnyOrderAndCase() throws {
  let text = "RADIUS;LONGITUDE;Country;ID;LATITUDE\n75;7,5;CH;x1;46,25\n"
  let result = try read(text, radius: nil)
  #expect(result.rejected.isEmpty)
  let geofence = try #require(result.geofences.first)
  #expect(geofence.id == "x1")
  #expect(geofence.name == nil)
  #expect(geofence.region.center == Coordinate(uncheckedLatitude: 46.25, longitude: 7.5))
  #expect(geofence.region.radiusMeters == 75)
  #expect(geofence.metadataJSON == #"{"Country":"CH"}"#)
}

@Test func csvReportsAnUnterminatedQuoteAsARejection() throws {
  let result = try read("id,latitude,longitude\nq1,1,2\nq2,\"3,4\n", radius: 10)
  #expect(result.geofences.map(\.id) == ["q1"])
  #expect(result.rejected.count == 1)
  #expect(result.rejected.first?.location == at(3))
  if case .malformedRecord(let message)? = result.rejected.first?.reason {
    #expect(message.contains("never closed"))
  } else {
    Issue.record("expected malformedRecord")
  }
}

@Test func csvWithoutAHeaderIsAThrownError() {
  #expect(
    throws: GeofenceFileError(
      file: "test.csv", reason: .missingCSVHeader(found: ["a1", "Sion", "46.2", "7.3"]))
  ) {
    try read("a1,Sion,46.2,7.3\n", radius: 10)
  }
  #expect(throws: GeofenceFileError(file: "test.csv", reason: .empty)) {
    try read("\n\n", radius: 10)
  }
  let error = GeofenceFileError(file: "test.csv", reason: .missingCSVHeader(found: ["a1", "b"]))
  #expect(error.description.hasPrefix("test.csv: no CSV header"))
}

/// A header that names one field in two columns is refused, as the track reader and a JSON
/// definition with a member given twice are: which column is meant cannot be told.
@Test func csvHeaderNamingAFieldTwiceIsAThrownError() {
  let cases: [(header: String, field: String, columns: [Int], headers: [String])] = [
    ("id,name,lat,latitude,lon,radius", "latitude", [3, 4], ["lat", "latitude"]),
    ("id,name,latitude,longitude,radius,Radius_M", "radius", [5, 6], ["radius", "Radius_M"]),
    ("id,ID,latitude,longitude", "id", [1, 2], ["id", "ID"]),
    ("id,lng,latitude,long", "longitude", [2, 4], ["lng", "long"]),
  ]
  for c in cases {
    let error = GeofenceFileError(
      file: "test.csv",
      reason: .ambiguousCSVHeader(field: c.field, columns: c.columns, headers: c.headers))
    #expect(throws: error) { try read(c.header + "\nx,X,50,0,0,100\n", radius: 10) }
  }
  let error = GeofenceFileError(
    file: "t.csv",
    reason: .ambiguousCSVHeader(field: "latitude", columns: [3, 4], headers: ["lat", "latitude"]))
  #expect(
    error.description
      == #"t.csv: the CSV header names the latitude more than once, in columns 3 ("lat"), "#
      + #"4 ("latitude"); which one is meant cannot be told"#)
}

@Test func csvMetadataIsTheCanonicalJSONOfTheExtraColumns() throws {
  let text = #"""
    id,latitude,longitude,zeta,"a""q",Émile,alpha,zeta,
    m1,1,2,"back\slash","say ""hi"" ",é,,second,
    m2,1,2,,,,,,

    """#
  let result = try read(text, radius: 10)
  #expect(result.rejected.isEmpty)
  let expected = JSONValue.object([
    "zeta": .string("back\\slash"), "a\"q": .string("say \"hi\""), "Émile": .string("é"),
  ])
  #expect(result.geofences.first?.metadataJSON == expected.canonicalText)
  #expect(
    result.geofences.first?.metadataJSON
      == #"{"a\"q":"say \"hi\"","zeta":"back\\slash","Émile":"é"}"#)
  #expect(result.geofences.last?.metadataJSON == nil)
}

/// Ids up to 256 characters (Unicode scalars, the sync protocol's limit) load in every
/// format; a longer one is rejected alone. A 256-character id of two-byte characters (512
/// bytes) is counted by characters, not bytes.
@Test func idsLongerThanTheProtocolAllowsAreRejectedAlone() throws {
  let ok = String(repeating: "a", count: 256)
  let long = String(repeating: "b", count: 257)
  let wide = String(repeating: "é", count: 256)
  let csvResult = try read(
    "id,latitude,longitude,radius\n\(ok),46,7,100\n\(long),46,7,100\n\(wide),46,7,100\n"
      + "c,46,7,100\n",
    radius: nil)
  #expect(csvResult.geofences.map(\.id) == [ok, wide, "c"])
  #expect(
    csvResult.rejected == [GeofenceRejection(location: at(3), id: nil, reason: .idTooLong(257))])
  #expect(
    csvResult.rejected.first?.reason.description
      == "id is 257 characters long; at most 256 are allowed")
  for format in [GeofenceFileFormat.json, .geojson] {
    let definitions = [ok, long, wide, "c"].map { id in
      format == .json
        ? #"{"id":"\#(id)","latitude":46,"longitude":7,"radius":100}"#
        : #"{"type":"Feature","id":"\#(id)","geometry":{"type":"Point","coordinates":[7,46]},"#
          + #""properties":{"radius":100}}"#
    }.joined(separator: ",")
    let text =
      format == .json
      ? "[\(definitions)]" : #"{"type":"FeatureCollection","features":["# + definitions + "]}"
    let result = try GeofenceFileReader.read(
      data: Data(text.utf8), format: format, fileName: "t", defaultRadiusMeters: nil)
    #expect(result.geofences.map(\.id) == [ok, wide, "c"], "\(format)")
    #expect(result.rejected.map(\.reason) == [.idTooLong(257)], "\(format)")
  }
}

/// A geofence file saved as UTF-16 with its mark (either byte order) reads as its UTF-8 twin.
@Test func utf16GeofenceFilesReadAsTheirUTF8Twin() throws {
  let text = "id,name,latitude,longitude,radius\ncafé,Café Zürich,47.37,8.54,150\nb,📍,0,0,10\n"
  let plain = try read(text, radius: nil)
  for little in [true, false] {
    var data = Data(little ? [0xFF, 0xFE] : [0xFE, 0xFF])
    for unit in text.utf16 {
      data +=
        little ? [UInt8(unit & 0xFF), UInt8(unit >> 8)] : [UInt8(unit >> 8), UInt8(unit & 0xFF)]
    }
    let wide = try GeofenceFileReader.read(
      data: data, format: .csv, fileName: "test.csv", defaultRadiusMeters: nil)
    #expect(wide.geofences == plain.geofences)
    #expect(wide.geofences.map(\.id) == ["café", "b"])
    #expect(wide.rejected.isEmpty)
  }
}

/// An id holding a control character (a NUL, an ESC that would drive a terminal showing the
/// CSV output, a line end) is rejected alone, in every format, as a device id is.
@Test func idsWithControlCharactersAreRejectedAlone() throws {
  let csvResult = try read(
    "id,latitude,longitude,radius\na\u{1B}[31mb,46,7,100\n\"x\ny\",46,7,100\nc,46,7,100\n",
    radius: nil)
  #expect(csvResult.geofences.map(\.id) == ["c"])
  #expect(csvResult.rejected.map(\.reason) == [.controlCharacterInID, .controlCharacterInID])
  let json = try GeofenceFileReader.read(
    data: Data(
      #"[{"id":"n\u0000l","latitude":46,"longitude":7,"radius":100},{"id":"d\u007f","latitude":46,"longitude":7,"radius":100},{"id":"c","latitude":46,"longitude":7,"radius":100}]"#
        .utf8),
    format: .json, fileName: "t.json", defaultRadiusMeters: nil)
  #expect(json.geofences.map(\.id) == ["c"])
  #expect(json.rejected.map(\.reason) == [.controlCharacterInID, .controlCharacterInID])
  #expect(
    json.rejected.first?.reason.description
      == "id holds a control character (U+0000-U+001F or U+007F)")
}

@Test func theRefreshCircleIdIsRejectedAsReservedInEveryFormat() throws {
  // The planner names its refresh circle geofence.refresh: a geofence with that id would be
  // listed twice by `plan` and push out the real one.
  let csvResult = try read(
    "id,name,latitude,longitude,radius\n geofence.refresh ,Real,46,7,100\nB,B,46,7.001,100\n",
    radius: nil)
  #expect(csvResult.geofences.map(\.id) == ["B"])
  #expect(
    csvResult.rejected == [
      GeofenceRejection(location: at(2), id: nil, reason: .reservedID("geofence.refresh"))
    ])
  #expect(
    csvResult.rejected.first?.reason.description
      == #"id "geofence.refresh" is reserved (the region budget planner's refresh circle)"#)
  // A plain cell (the direct CSV path) is rejected the same way, the rows around it kept.
  let plain = try read(
    "id,name,latitude,longitude,radius\nA,A,46,7,100\ngeofence.refresh,R,46,7,100\n"
      + "geofence.refresh2,C,46,7,100\n",
    radius: nil)
  #expect(plain.geofences.map(\.id) == ["A", "geofence.refresh2"])
  #expect(
    plain.rejected == [
      GeofenceRejection(location: at(3), id: nil, reason: .reservedID("geofence.refresh"))
    ])

  let json = try GeofenceFileReader.read(
    data: Data(
      #"[{"id":"geofence.refresh","latitude":46,"longitude":7,"radius":100},{"id":"geofence.refresh2","latitude":46,"longitude":7,"radius":100}]"#
        .utf8),
    format: .json, fileName: "test.json", defaultRadiusMeters: nil)
  #expect(json.geofences.map(\.id) == ["geofence.refresh2"])
  #expect(json.rejected.map(\.reason) == [.reservedID("geofence.refresh")])
}

/// The columns `geofence regions --format csv` writes read back as the set: a `metadata`
/// column's JSON object (joined by other columns) and a `geometry` column's polygon give the
/// geofences the JSON reader gives for the same definitions; a cell that is not JSON, not an
/// object, or a member given twice rejects its own row.
@Test func csvMetadataAndGeometryColumnsReadBackAsJSONDefinitions() throws {
  let text = #"""
    id,name,latitude,longitude,radius_m,metadata,geometry,floor
    a,"Café, ""x""",46.5,6.6,100.0,"{""deep"":{""k"":[1,2]},""n"":1}",,
    b,,46.6,6.7,200.0,,,3
    p,Square,,,,"{""z"":true}","{""type"":""Polygon"",""coordinates"":[[[6.5,46.4],[6.7,46.4],[6.7,46.6],[6.5,46.6],[6.5,46.4]]]}",2
    bad-json,,1,1,5,"{""n"":",,
    not-object,,1,1,5,[1],,
    twice,,1,1,5,"{""floor"":1}",,4
    circle-too,,1,1,5,,"{""type"":""Polygon"",""coordinates"":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}",
    """#
  let loaded = try GeofenceFileReader.read(
    data: Data(text.utf8), format: .csv, fileName: "back.csv", defaultRadiusMeters: nil)
  let oracle = try GeofenceFileReader.read(
    data: Data(
      #"""
      [{"id":"a","name":"Café, \"x\"","latitude":46.5,"longitude":6.6,"radius":100,
        "metadata":{"deep":{"k":[1,2]},"n":1}},
       {"id":"b","latitude":46.6,"longitude":6.7,"radius":200,"metadata":{"floor":"3"}},
       {"id":"p","name":"Square","metadata":{"z":true,"floor":"2"},"geometry":{"type":"Polygon",
        "coordinates":[[[6.5,46.4],[6.7,46.4],[6.7,46.6],[6.5,46.6],[6.5,46.4]]]}}]
      """#.utf8), format: .json, fileName: "oracle.json", defaultRadiusMeters: nil)
  #expect(oracle.rejected.isEmpty)
  #expect(loaded.geofences == oracle.geofences)
  #expect(
    loaded.geofences.map(\.metadataJSON) == [
      #"{"deep":{"k":[1,2]},"n":1}"#, #"{"floor":"3"}"#, #"{"floor":"2","z":true}"#,
    ])
  #expect(loaded.rejected.map(\.id) == ["bad-json", "not-object", "twice", "circle-too"])
  let reasons = loaded.rejected.map(\.reason.description)
  #expect(reasons[0].hasPrefix("metadata: "), "\(reasons[0])")
  // The cell's own text was read: the place is in it, with no empty path before it.
  #expect(reasons[0].hasSuffix(" of its JSON text)"), "\(reasons[0])")
  #expect(!reasons[0].contains("(at ,"), "\(reasons[0])")
  #expect(reasons[1] == "metadata must be a JSON object, found array")
  #expect(
    reasons[2] == #"metadata member "floor" is given by the metadata column and by its own column"#)
  #expect(
    reasons[3].hasPrefix(
      "a geofence with a geometry must not also give latitude, longitude, radius"))

  // A file of polygons needs no coordinate columns; a circle row in it has no centre.
  let polygons = try GeofenceFileReader.read(
    data: Data(
      #"""
      id,name,geometry
      p,Square,"{""type"":""Polygon"",""coordinates"":[[[6.5,46.4],[6.7,46.4],[6.7,46.6],[6.5,46.6],[6.5,46.4]]]}"
      c,Circle,
      """#.utf8), format: .csv, fileName: "polygons.csv", defaultRadiusMeters: 100)
  #expect(polygons.geofences.map(\.id) == ["p"])
  #expect(polygons.geofences.first?.shape == oracle.geofences.last?.shape)
  #expect(polygons.rejected.map(\.id) == ["c"])
  #expect(throws: GeofenceFileError.self) {
    try GeofenceFileReader.read(
      data: Data("id,name,latitude\na,A,1\n".utf8), format: .csv, fileName: "x.csv",
      defaultRadiusMeters: 100)
  }
}
