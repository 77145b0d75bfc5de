import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceTestSupport
import Testing

private let places = TestPaths.data.appendingPathComponent("places")

@Test func readsEveryRowOfTheReverseGeocoderCitiesWithADefaultRadius() throws {
  let url = places.appendingPathComponent("rg_cities1000_geofences.csv")
  let result = try GeofenceFileReader.read(contentsOf: url, defaultRadiusMeters: 250)
  #expect(result.rejected.isEmpty)
  #expect(result.geofences.count == 144_563)
  #expect(result.locations.count == 144_563)

  // First data row: rg000001,El Tarter,42.57952,1.65362,city,AD,Canillo,
  let first = try #require(result.geofences.first)
  #expect(first.id == "rg000001")
  #expect(first.name == "El Tarter")
  #expect(first.region.center == Coordinate(uncheckedLatitude: 42.57952, longitude: 1.65362))
  #expect(first.region.radiusMeters == 250)
  #expect(first.metadataJSON == #"{"admin1":"Canillo","country":"AD","type":"city"}"#)
  #expect(result.locations.first?.position == .line(2))

  // Last row: rg144563,Chitungwiza,-18.01274,31.07555,city,ZW,Harare,
  let last = try #require(result.geofences.last)
  #expect(last.id == "rg144563")
  #expect(last.name == "Chitungwiza")
  #expect(last.region.center == Coordinate(uncheckedLatitude: -18.01274, longitude: 31.07555))
  #expect(last.metadataJSON == #"{"admin1":"Harare","country":"ZW","type":"city"}"#)
  #expect(result.locations.last?.position == .line(144_564))

  // The data README counts 2 empty names and 25 names with commas.
  #expect(result.geofences.filter { $0.name == nil }.count == 2)
  #expect(result.geofences.filter { $0.name?.contains(",") == true }.count == 25)
}

@Test func readsTheAirportsIncludingTheSouthPoleAndTheAntimeridian() throws {
  let url = places.appendingPathComponent("airports_geofences.csv")
  let result = try GeofenceFileReader.read(contentsOf: url, defaultRadiusMeters: 10_000)
  #expect(result.rejected.isEmpty)
  #expect(result.geofences.count == 28_298)
  let byID = Dictionary(
    uniqueKeysWithValues: zip(result.geofences.map(\.id), zip(result.geofences, result.locations)))

  // NZSP,South Pole Station Airport,-90.0,0.0,airport,,,,AQ,9300,Antarctica/McMurdo,
  let (pole, poleLocation) = try #require(byID["NZSP"])
  #expect(pole.name == "South Pole Station Airport")
  #expect(pole.region.center == Coordinate(uncheckedLatitude: -90, longitude: 0))
  #expect(poleLocation.position == .line(18_044))
  #expect(
    pole.metadataJSON
      == #"{"country":"AQ","elevation_ft":"9300","type":"airport","tz":"Antarctica/McMurdo"}"#)
  // Any longitude is the same point at the pole.
  #expect(pole.region.contains(Coordinate(uncheckedLatitude: -89.99, longitude: 137)))

  // NFMO,Moala Airport,-18.5667,179.951 and NFNM,Matei Airport,-16.6906,-179.877.
  let (moala, _) = try #require(byID["NFMO"])
  #expect(moala.region.center == Coordinate(uncheckedLatitude: -18.5667, longitude: 179.951))
  let (matei, _) = try #require(byID["NFNM"])
  #expect(matei.region.center == Coordinate(uncheckedLatitude: -16.6906, longitude: -179.877))
  // 6.2 km east of Moala, across the antimeridian: 0.059° of longitude at 18.57° S.
  let acrossTheAntimeridian = Coordinate(uncheckedLatitude: -18.5667, longitude: -179.99)
  #expect(moala.region.contains(acrossTheAntimeridian))
  #expect(abs(moala.region.distance(to: acrossTheAntimeridian) - 6_219.06) < 0.01)

  // Coordinate duplicates are distinct geofences: only ids must be unique.
  let (brussels, _) = try #require(byID["EBBR"])
  let (melsbroek, _) = try #require(byID["EBMB"])
  #expect(brussels.region.center == melsbroek.region.center)

  // A quoted name with commas.
  let (zhushan, _) = try #require(byID["_ZSP"])
  #expect(zhushan.name == "Zhushan Majiadu Airport (under construction, unknown coordinates)")
}

@Test func rejectsEveryAirportWithoutADefaultRadius() throws {
  let url = places.appendingPathComponent("airports_geofences.csv")
  let result = try GeofenceFileReader.read(contentsOf: url, defaultRadiusMeters: nil)
  #expect(result.geofences.isEmpty)
  #expect(result.rejected.count == 28_298)
  #expect(
    result.rejected.first
      == GeofenceRejection(
        location: DefinitionLocation(file: url.relativePath, position: .line(2)), id: "00AA",
        reason: .missing(.radius)))
}

@Test func readsTheHawaiiPlacesWithEmptyNamesAndKureAtoll() throws {
  let url = places.appendingPathComponent("osm_places_hawaii.csv")
  let result = try GeofenceFileReader.read(contentsOf: url, defaultRadiusMeters: 500)
  #expect(result.rejected.isEmpty)
  #expect(result.geofences.count == 490)
  #expect(result.geofences.filter { $0.name == nil }.count == 12)
  // osm:522217082,Kure Atoll,28.4226458,-178.3251007,0,island (line 391)
  let index = try #require(result.geofences.firstIndex { $0.id == "osm:522217082" })
  let kure = result.geofences[index]
  #expect(kure.name == "Kure Atoll")
  #expect(kure.region.center == Coordinate(uncheckedLatitude: 28.4226458, longitude: -178.3251007))
  #expect(kure.metadataJSON == #"{"population":"0","type":"island"}"#)
  #expect(result.locations[index].position == .line(391))
}
