import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Testing

@Test func mergingRejectsIdsAlreadyLoadedFromAnEarlierFile() throws {
  let first = try GeofenceFileReader.read(
    data: Data("id,latitude,longitude\na,1,1\nb,2,2\n".utf8), format: .csv, fileName: "one.csv",
    defaultRadiusMeters: 10)
  let second = try GeofenceFileReader.read(
    data: Data(
      #"[{"id":"c","latitude":3,"longitude":3,"radius":5},{"id":"b","latitude":4,"longitude":4,"radius":5},{"id":"d","latitude":99,"longitude":0,"radius":5}]"#
        .utf8), format: .json, fileName: "two.json", defaultRadiusMeters: nil)
  let merged = GeofenceLoadResult.merging([first, second])
  #expect(merged.geofences.map(\.id) == ["a", "b", "c"])
  #expect(
    merged.locations.map(\.description) == ["one.csv:2", "one.csv:3", "two.json[0] (line 1)"])
  #expect(
    merged.rejected == [
      GeofenceRejection(
        location: DefinitionLocation(file: "two.json", position: .index(1)), id: "b",
        reason: .duplicateID(
          firstDefinedAt: DefinitionLocation(file: "one.csv", position: .line(3)))),
      GeofenceRejection(
        location: DefinitionLocation(file: "two.json", position: .index(2)), id: "d",
        reason: .latitudeOutOfRange(99)),
    ])
  #expect(merged.geofences[1].region.center == Coordinate(uncheckedLatitude: 2, longitude: 2))
}

@Test func validatorChecksOneDefinition() throws {
  let ok = GeofenceValidator.validate(
    RawGeofenceDefinition(
      id: .string(" shop-1 "), latitude: .number(47.37), longitude: .number(8.54),
      radius: .number(120), name: .string("Shop"),
      metadata: .object(["url": .string("app://shop/1"), "floor": .number(2)])))
  let geofence = try ok.get()
  #expect(geofence.id == "shop-1")
  #expect(geofence.name == "Shop")
  #expect(geofence.region.radiusMeters == 120)
  #expect(geofence.metadataJSON == #"{"floor":2,"url":"app://shop/1"}"#)

  func problem(_ definition: RawGeofenceDefinition, defaultRadius: Double? = nil)
    -> DefinitionProblem?
  {
    if case .failure(let p) = GeofenceValidator.validate(
      definition, defaultRadiusMeters: defaultRadius)
    {
      return p
    }
    return nil
  }
  let base = RawGeofenceDefinition(
    id: .string("x"), latitude: .number(0), longitude: .number(0), radius: .number(1))
  var d = base
  d.radius = .number(.infinity)
  #expect(problem(d) == .invalidRadius(.infinity))
  d.radius = .number(-.infinity)
  #expect(problem(d) == .invalidRadius(-.infinity))
  d.radius = nil
  #expect(problem(d) == .missing(.radius))
  #expect(problem(d, defaultRadius: 30) == nil)
  #expect(problem(d, defaultRadius: 0) == .invalidRadius(0))
  d = base
  d.latitude = .number(.nan)
  if case .latitudeOutOfRange(let v)? = problem(d) {
    #expect(v.isNaN)
  } else {
    Issue.record("expected latitudeOutOfRange(nan)")
  }
  d = base
  d.longitude = .string("7")
  #expect(problem(d) == .wrongType(.longitude, expected: "a number", found: "string"))
  d.isFromText = true
  #expect(problem(d) == .notANumber(.longitude, text: "7"))
  d = base
  d.id = .number(1.5)
  #expect(problem(d) == .wrongType(.id, expected: "a string or an integer", found: "number"))
  d = base
  d.name = .number(3)
  #expect(problem(d) == .wrongType(.name, expected: "a string", found: "number"))
  d = base
  d.metadata = .object([:])
  #expect(try GeofenceValidator.validate(d).get().metadataJSON == nil)
}

@Test func canonicalJSONSortsKeysAndEscapes() {
  let value = JSONValue.object([
    "b": .array([.number(1), .number(-0.25), .number(1e300), .bool(false), .null]),
    "a": .string("quote \" backslash \\ tab \t bell \u{07} é /"),
  ])
  #expect(
    value.canonicalText
      == #"{"a":"quote \" backslash \\ tab \t bell \u0007 é /","b":[1,-0.25,1e+300,false,null]}"#)
}

/// The radius is bounded by half the WGS84 equator (π × 6,378,137 m = 20,037,508.34 m, the
/// sync protocol's bound): the bound itself is accepted, the next metre and 1e9 m are not, in
/// JSON and in CSV (whose direct path must agree with the general one).
@Test func aRadiusBeyondHalfTheEquatorIsRejected() throws {
  func radius(_ r: Double) -> Result<Geofence, DefinitionProblem> {
    GeofenceValidator.validate(
      RawGeofenceDefinition(
        id: .string("g"), latitude: .number(1), longitude: .number(2), radius: .number(r)))
  }
  #expect(try radius(20_037_509).get().region.radiusMeters == 20_037_509)
  #expect(throws: DefinitionProblem.invalidRadius(20_037_510)) { try radius(20_037_510).get() }
  #expect(throws: DefinitionProblem.invalidRadius(1e9)) { try radius(1e9).get() }
  let csv = try GeofenceFileReader.read(
    data: Data("id,latitude,longitude,radius\na,1,2,20037509\nb,1,2,1e9\nc,1,2,5\n".utf8),
    format: .csv, fileName: "r.csv", defaultRadiusMeters: nil)
  #expect(csv.geofences.map(\.id) == ["a", "c"])
  #expect(
    csv.rejected.map(\.description) == [
      #"r.csv:3 (id "b"): radius 1000000000.0 m is not a finite value in (0, 20037509] (half the WGS84 equator)"#
    ])
}

/// A definition with a geometry and a circle field cannot say which shape it means: it is
/// rejected alone, naming the circle fields given (a `null` one counts as absent).
@Test func aGeometryBesideCircleFieldsIsRejected() throws {
  let square: JSONValue = .object([
    "type": .string("Polygon"),
    "coordinates": .array([
      .array(
        [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]].map { .array($0.map { .number($0) }) })
    ]),
  ])
  let plain = GeofenceValidator.validate(
    RawGeofenceDefinition(
      id: .string("p"), latitude: .null, longitude: nil, radius: .null, geometry: square))
  #expect(throws: Never.self) { try plain.get() }
  let both = GeofenceValidator.validate(
    RawGeofenceDefinition(
      id: .string("p"), latitude: .number(0.5), longitude: nil, radius: .number(100),
      geometry: square))
  #expect(throws: DefinitionProblem.circleBesideGeometry([.latitude, .radius])) {
    try both.get()
  }
  let json = try GeofenceFileReader.read(
    data: Data(
      #"[{"id":"a","radius":50,"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}}]"#
        .utf8), format: .json, fileName: "g.json", defaultRadiusMeters: nil)
  #expect(json.geofences.isEmpty)
  #expect(
    json.rejected.map(\.description) == [
      #"g.json[0] (line 1) (id "a"): a geofence with a geometry must not also give radius; which shape is meant cannot be told"#
    ])
}
