import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import Testing

@testable import GeofenceBenchmarks

@Suite struct WorkloadFilesTests {
  func temporaryDirectory() throws -> String {
    let url = TestScratch.root
      .appendingPathComponent("bench-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
  }

  @Test(arguments: [WorkloadKind.metro, .global, .mixed, .transitions])
  func roundTripIsExact(kind: WorkloadKind) throws {
    let w = WorkloadGenerator.make(kind: kind, regionCount: 500, fixCount: 2_300, seed: 13)
    let dir = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let names = WorkloadFiles.fileNames(for: w)
    #expect(names.regions == "\(kind.rawValue)-500-regions.csv")
    try WorkloadFiles.writeRegions(w.regions, to: dir + "/" + names.regions)
    try WorkloadFiles.writeFixes(w, to: dir + "/" + names.fixes)
    let back = try WorkloadFiles.read(
      name: w.name, kind: kind, regionsPath: dir + "/" + names.regions,
      fixesPath: dir + "/" + names.fixes)
    #expect(back.regions == w.regions)
    #expect(back.fixes == w.fixes)
    #expect(back.fixTimes == w.fixTimes)
    #expect(back.trackStarts == w.trackStarts)
    let text = try String(contentsOfFile: dir + "/" + names.fixes, encoding: .utf8)
    #expect(text.hasPrefix("track,t,latitude,longitude\n0,0.0,"))
  }

  @Test func malformedRowsAreReported() throws {
    let dir = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/r.csv"
    try "id,latitude,longitude,radius_m\n0,1,2,30\n1,91,2,30\n".write(
      toFile: path, atomically: true, encoding: .utf8)
    #expect(throws: WorkloadFileError.self) { try WorkloadFiles.readRegions(path) }
    try "id,latitude,longitude,radius_m\n0,1,2,30\n2,1,2,30\n".write(
      toFile: path, atomically: true, encoding: .utf8)
    #expect(throws: WorkloadFileError.self) { try WorkloadFiles.readRegions(path) }
    try "id,latitude,longitude,radius_m\r\n0,1,2,30\r\n1,1.5,-2,0.5\r\n".write(
      toFile: path, atomically: true, encoding: .utf8)
    let regions = try WorkloadFiles.readRegions(path)
    #expect(regions.count == 2)
    #expect(regions[1].radiusMeters == 0.5)
  }

  @Test func gpxAndCSVPoints() {
    let gpx = Array(
      """
      <gpx><trk><trkseg><trkpt lat="46.5" lon="6.6"><ele>1</ele></trkpt>
      <trkpt lon='-122.1' lat='37.2'/></trkseg></trk><rte><rtept
       lat="1" lon="2"/></rte><wpt lat="9" lon="9"/></gpx>
      """.utf8)
    #expect(
      RealData.gpxPoints(gpx) == [
        Coordinate(uncheckedLatitude: 46.5, longitude: 6.6),
        Coordinate(uncheckedLatitude: 37.2, longitude: -122.1),
        Coordinate(uncheckedLatitude: 1, longitude: 2),
      ])
    let csv = Array("user_id;longitude;latitude\n0;7.5;47.1\n0;nan;47\n".utf8)
    #expect(RealData.csvPoints(csv) == [Coordinate(uncheckedLatitude: 47.1, longitude: 7.5)])
    let rows = RealData.splitCSV(Array("a,b\n\"x, \"\"y\"\"\",2\r\n".utf8), separator: 44)
    #expect(rows == [["a", "b"], ["x, \"y\"", "2"]])
  }

  @Test func realAirportsAndTracksLoad() throws {
    let data = TestPaths.data.path
    let airports = try RealData.loadPlaces(
      path: data + "/places/airports_geofences.csv", radiusMeters: RealData.airportRadiusMeters)
    #expect(airports.count == 28_298)
    let tracks = try RealData.loadTracks(directory: data + "/tracks")
    #expect(tracks.fixes.count > 10_000)
    #expect(tracks.starts.count > 10)
  }
}
