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
