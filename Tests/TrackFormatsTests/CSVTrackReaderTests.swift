import Foundation
import GeofenceGeometry
import Testing

@testable import TrackFormats

@Suite struct CSVTrackReaderTests {
  // Row counts from `wc -l` minus the header; first/last rows copied from the files.
  static let repoFiles: [FileExpectation] = [
    // `user_id;longitude;latitude;accuracy;tracked_at`, times without a zone (one warning).
    .init(
      name: "posmo_trajectory.csv", fixes: 1327, timed: 1327, warnings: 1,
      first: .init(lat: 47.0516249, lon: 7.0389004, time: "2019-01-25T20:00:16.178999901Z"),
      last: .init(lat: 46.5169352, lon: 6.6274571, time: "2019-01-25T20:52:13Z"), format: .csv),
    // `user_id;tracked_at;latitude;longitude;elevation;accuracy`, newest row first.
    .init(
      name: "google_trajectory.csv", fixes: 416, timed: 416, warnings: 0,
      first: .init(lat: 47.3766094, lon: 8.5484732, time: "2012-12-18T21:30:35Z"),
      last: .init(lat: 47.3661502, lon: 8.5493352, time: "2012-12-18T11:53:30Z"), format: .csv),
  ]

  @Test func everyRepoCSVFileIsListed() {
    let onDisk = Set(
      TrackFixtures.files(in: TrackFixtures.repoTracks.appendingPathComponent("csv")).map(
        \.lastPathComponent))
    #expect(onDisk == Set(Self.repoFiles.map(\.name)))
  }

  @Test(arguments: repoFiles)
  func readsRepoFile(_ e: FileExpectation) throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("csv/\(e.name)")
    try check(TrackReader.read(contentsOf: url), e)
  }

  @Test func posmoColumnsAndFormatting() throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("csv/posmo_trajectory.csv")
    let r = try TrackReader.read(contentsOf: url)
    let first = try #require(r.fixes.first)
    #expect(first.deviceID == "0")
    #expect(first.horizontalAccuracy == 0)
    #expect(r.fixes[4].horizontalAccuracy == 48)
    #expect(r.fixes.last?.horizontalAccuracy == 24)
    #expect(RFC3339.format(try #require(first.time)) == "2019-01-25T20:00:16.179Z")
    #expect(r.warnings[0].line == 2)
    #expect(r.warnings[0].message.contains("1327 times have no time zone"))
  }

  @Test func googleAccuracyAndDevice() throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("csv/google_trajectory.csv")
    let r = try TrackReader.read(contentsOf: url)
    #expect(r.fixes.first?.horizontalAccuracy == 20)
    #expect(r.fixes.last?.horizontalAccuracy == 930)
    #expect(Set(r.fixes.compactMap(\.deviceID)) == ["1"])
  }

  // MARK: Hand-made files

  @Test func badRowsAreSkippedWithLineNumbers() throws {
    let text = """
      lat,lon,time
      47.1,7.1,2020-01-01T00:00:00Z
      91,7.1,2020-01-01T00:00:01Z
      47.2,,2020-01-01T00:00:02Z
      abc,7.1,2020-01-01T00:00:03Z
      47.3
      47.4,7.4,not a time

      ,,
      47.5,7.5,2020-01-01T00:00:05Z
      """
    let r = try TrackFixtures.read("rows.csv", text)
    #expect(r.fixes.map(\.coordinate.latitude) == [47.1, 47.4, 47.5])
    #expect(r.fixes.map(\.sourceIndex) == [0, 5, 7])
    #expect(r.fixes.map(\.time) == [1_577_836_800, nil, 1_577_836_805])
    #expect(r.skippedRows.map(\.line) == [3, 4, 5, 6, 9])
    #expect(r.skippedRows[0].message.contains("latitude"))
    #expect(r.skippedRows[1].message.contains("longitude is empty"))
    #expect(r.skippedRows[2].message.contains("\"abc\""))
    #expect(r.skippedRows[3].message.contains("1 fields"))
    #expect(r.skippedRows[0].description.hasPrefix("rows.csv:3: "))
    #expect(r.warnings.map(\.line) == [7])
  }

  /// A row with a non-empty field beyond the header's is shifted (an unquoted comma in a
  /// field, say): its values cannot be trusted, so it is skipped and named, as the geofence
  /// reader does. Empty extra fields (a trailing comma) are no data and the row is read.
  @Test func rowsWithMoreFieldsThanTheHeaderAreSkipped() throws {
    let text = """
      device,lat,lon,time
      a,47.1,7.1,2020-01-01T00:00:00Z
      Rue de Bourg, 3,47.2,7.2,2020-01-01T00:00:01Z
      a,47.3,7.3,2020-01-01T00:00:02Z,
      a,47.4,7.4,2020-01-01T00:00:03Z, ,
      """
    let r = try TrackFixtures.read("shift.csv", text)
    #expect(r.fixes.map(\.coordinate.latitude) == [47.1, 47.3, 47.4])
    #expect(
      r.skippedRows.map(\.description) == [
        "shift.csv:3: the row has 5 fields, the header 4; row skipped"
      ])
  }

  @Test func headerWithoutCoordinatesThrows() throws {
    let e = try #require(TrackFixtures.error("nocoords.csv", "id,name,x,y\n1,a,2,3\n"))
    guard case .missingColumns("nocoords.csv", 1, let expected, let header) = e else {
      Issue.record("expected .missingColumns, got \(e)")
      return
    }
    #expect(header == ["id", "name", "x", "y"])
    #expect(expected.contains("latitude") && expected.contains("longitude"))
    #expect(e.description.hasPrefix("nocoords.csv:1: the header names no latitude"))
    let onlyLat = try #require(TrackFixtures.error("lat.csv", "# note\nLatitude;b\n1;2\n"))
    guard case .missingColumns("lat.csv", 2, let expected2, _) = onlyLat else {
      Issue.record("expected .missingColumns, got \(onlyLat)")
      return
    }
    #expect(expected2.hasPrefix("longitude"))
  }

  @Test func emptyOrCommentOnlyFileThrows() throws {
    let e = try #require(TrackFixtures.error("empty.csv", "# nothing\n\n"))
    guard case .malformed("empty.csv", nil, _, 0) = e else {
      Issue.record("expected .malformed, got \(e)")
      return
    }
  }

  @Test func quotedFieldsAndDecimalComma() throws {
    let text = """
      "Device ID";"Longitude";"Latitude";"Timestamp";"Accuracy (m)"
      "car; blue";"7,5";"47,25";"2020-01-01T00:00:00Z";"12,5"
      "van ""x\"\"\";6.5;"46,5";2020-01-01T01:00:00+01:00;"3"
      """
    let r = try TrackFixtures.read("quoted.csv", text)
    #expect(r.fixes.count == 2)
    #expect(r.fixes[0].coordinate == Coordinate(uncheckedLatitude: 47.25, longitude: 7.5))
    #expect(r.fixes[0].deviceID == "car; blue")
    #expect(r.fixes[0].horizontalAccuracy == 12.5)
    #expect(r.fixes[1].deviceID == "van \"x\"")
    #expect(r.fixes[1].coordinate == Coordinate(uncheckedLatitude: 46.5, longitude: 6.5))
    #expect(r.fixes.map(\.time) == [1_577_836_800, 1_577_836_800])
    #expect(r.warnings.isEmpty)
  }

  @Test func epochSecondsAndMilliseconds() throws {
    let text = """
      timestamp,latitude,longitude
      1548446416,47,7
      1548446416178,47,7
      1548446416.5,47,7
      0,47,7
      """
    let r = try TrackFixtures.read("epoch.csv", text)
    #expect(r.fixes.map(\.time) == [1_548_446_416, 1_548_446_416.178, 1_548_446_416.5, nil])
    #expect(r.warnings.map(\.line) == [5])
    #expect(RFC3339.format(try #require(r.fixes[1].time)) == "2019-01-25T20:00:16.178Z")
    #expect(RowReader.epochSeconds("99999999999") == 99_999_999_999)
    #expect(RowReader.epochSeconds("100000000000") == 100_000_000)
    #expect(RowReader.epochSeconds("2020-01-01") == nil)
  }

  /// A logger's placeholder time on many rows gives one warning per kind, with the count and
  /// the first row, not one per row.
  @Test func implausibleAndUnreadableTimesWarnOncePerKind() throws {
    let text = """
      time,latitude,longitude
      0,47,7
      2020-01-01T00:00:00Z,47,7
      1970-01-01T00:00:00Z,47,7
      soon,47,7
      0,47,7
      later,47,7
      """
    let r = try TrackFixtures.read("placeholder.csv", text)
    #expect(r.fixes.map(\.time) == [nil, 1_577_836_800, nil, nil, nil, nil])
    #expect(r.warnings.map(\.line) == [5, 2])
    #expect(
      r.warnings.map(\.message) == [
        "2 times cannot be read; those fixes have no time (first here: \"soon\")",
        "3 times are outside 1980-01-06T00:00:00.000Z ... 2100-01-01T00:00:00.000Z; those fixes"
          + " have no time (first here: \"0\")",
      ])
  }

  @Test func multiDeviceTabSeparated() throws {
    let text =
      "device_id\tlat\tlng\ttracked_at\thacc\n"
      + "a\t1\t2\t2020-01-01 00:00:00Z\t5\n" + "b\t3\t4\t2020-01-01 00:00:01Z\t\n"
      + "\t5\t6\t2020-01-01 00:00:02Z\t7\n"
    let r = try TrackFixtures.read("devices.tsv", text)
    #expect(r.fixes.map(\.deviceID) == ["a", "b", nil])
    #expect(r.fixes.map(\.horizontalAccuracy) == [5, nil, 7])
    #expect(r.fixes.map(\.coordinate.longitude) == [2, 4, 6])
  }

  @Test func separateDateAndTimeWithHemisphereColumns() throws {
    let text = """
      INDEX,RCR,DATE,TIME,VALID,LATITUDE,N/S,LONGITUDE,E/W,HEIGHT,
      1,T,2005/05/01,10:12:47,Unknown,51.311770,N,12.413179,E,146
      2,T,2005/05/01,10:13:04,Unknown,33.5,S,70.25,W,146
      3,T,2005/05/01,10:13:05,No fix,33.5,S,70.25,W,146
      4,T,2005/05/01,10:13:06,SPS,33.5,Q,70.25,W,146
      """
    let r = try TrackFixtures.read("iblue.csv", text)
    #expect(r.fixes.count == 2)
    #expect(r.fixes[0].time == 1_114_942_367)
    #expect(r.fixes[1].coordinate == Coordinate(uncheckedLatitude: -33.5, longitude: -70.25))
    #expect(r.skippedRows.map(\.line) == [4, 5])
    #expect(r.skippedRows[0].message.contains("No fix"))
    #expect(r.skippedRows[1].message.contains("hemisphere"))
    #expect(r.warnings.count == 1)
  }

  @Test func hemisphereSuffixesAndCompactDates() throws {
    let text = """
      INDEX,TAG,DATE,TIME,LATITUDE N/S,LONGITUDE E/W,HEIGHT
      1,T,250724,173418,49.0733336N,125.7648551W,38
      2,T,090204,063821,31.769598S,035.208829E,787
      """
    let r = try TrackFixtures.read("columbus.CSV", text)
    #expect(
      r.fixes[0].coordinate == Coordinate(uncheckedLatitude: 49.0733336, longitude: -125.7648551))
    #expect(
      r.fixes[1].coordinate == Coordinate(uncheckedLatitude: -31.769598, longitude: 35.208829))
    #expect(r.fixes[0].time == TrackFixtures.t("2025-07-24T17:34:18Z"))
    #expect(r.fixes[1].time == TrackFixtures.t("2009-02-04T06:38:21Z"))
  }

  @Test func commentLinesBeforeHeaderAndUTCOffsetColumn() throws {
    let text = """
      #airframe_info, log_version="1.00"
      #yyy-mm-dd, hh:mm:ss,   hh:mm,      degrees,      degrees
        Lcl Date, Lcl Time, UTCOfst,     Latitude,    Longitude
      2014-03-29, 15:50:22,  -07:00,   40.2171326, -111.7177124
      # a comment between rows, with, commas
      2014-03-29, 15:50:23,        ,   40.2171326, -111.7177124
      """
    let r = try TrackFixtures.read("g1000.csv", text)
    #expect(r.fixes.count == 2)
    #expect(r.fixes[0].time == TrackFixtures.t("2014-03-29T22:50:22Z"))
    #expect(r.fixes[1].time == TrackFixtures.t("2014-03-29T15:50:23Z"))
    #expect(r.warnings.map(\.line) == [6])
    #expect(r.fixes.map(\.sourceIndex) == [0, 1])
    #expect(r.skippedRows.isEmpty)
  }

  @Test func unterminatedQuoteIsReportedAsSkipped() throws {
    let text = "lat,lon,note\n1,2,ok\n3,4,\"open\n"
    let r = try TrackFixtures.read("quote.csv", text)
    #expect(r.fixes.count == 1)
    #expect(r.skippedRows.map(\.line) == [3])
    #expect(r.warnings.count == 1)  // no time column
  }

  @Test func geoLifePLT() throws {
    let text = """
      Geolife trajectory\r
      WGS 84\r
      Altitude is in Feet\r
      Reserved 3\r
      0,2,255,My Track,0,0,2,8421376\r
      0\r
      39.984702,116.318417,0,492,39744.1201851852,2008-10-23,02:53:04\r
      39.984683,116.31845,0,492,39744.1202546296,2008-10-23,02:53:10\r
      x,116.31845,0,492,39744.1202546296,2008-10-23,02:53:10\r

      """
    let r = try TrackFixtures.read("20081023025304.plt", text)
    #expect(r.format == .plt)
    #expect(r.fixes.count == 2)
    #expect(r.fixes[0].time == TrackFixtures.t("2008-10-23T02:53:04Z"))
    #expect(r.fixes[1].coordinate == Coordinate(uncheckedLatitude: 39.984683, longitude: 116.31845))
    #expect(r.skippedRows.map(\.line) == [9])
    #expect(r.warnings.isEmpty)
  }

  @Test func oziExplorerPLTInLatin1UsesDayNumber() throws {
    var bytes = Array(
      "OziExplorer Track Point File Version 2.1\r\nWGS 84\r\nAltitude is in Feet\r\nReserved 3\r\n0,2,255,V"
        .utf8)
    bytes.append(0xE9)
    bytes += Array("zelay,1,0,2,8421376,0\r\n2390\r\n".utf8)
    bytes += Array("  47.466222,   3.747318,0, 1258.8,39307.3279977, 13-ao".utf8)
    bytes.append(0xFB)
    bytes += Array(
      "t-07, 07:52:19\r\n  47.466150,   3.747233,0, 1236.5,39307.3281134, x, x\r\n".utf8)
    let r = try TrackFixtures.read("20070813_short.PLT", bytes: bytes)
    #expect(r.format == .plt)
    #expect(r.fixes.count == 2)
    #expect(r.fixes[0].time == TrackFixtures.t("2007-08-13T07:52:19Z"))
    // 0.3281134 d = 28349.0 s after midnight = 07:52:29.0 (to the millisecond).
    let t1 = try #require(r.fixes[1].time)
    #expect(abs(t1 - TrackFixtures.t("2007-08-13T07:52:29Z")) < 0.01)
    #expect(r.warnings.contains { $0.message.contains("ISO-8859-1") })
    #expect(r.warnings.contains { $0.message.contains("no time zone") })
  }

  @Test func dashCamLogWithMarkersAndVoidRows() throws {
    let text = """
      $V02
      1740170756,A,46.840330,29.463088,32500,777,-65,5,44,NO20250222-064554-000000F.MP4,0,0,0
      0,V, 0.000000,      nan,-1,45,0,0,0,0,0,0,0
      $V02
      1740170757,A,46.840393,29.463026,32600,888,-81,3,62,NO20250222-064554-000000F.MP4,0,0,0
      1740170758,A,46.8,north
      """
    let r = try TrackFixtures.read("GPSData000001.txt", text)
    #expect(r.format == .dashCamLog)
    #expect(r.fixes.map(\.time) == [1_740_170_756, 1_740_170_757])
    #expect(r.fixes.map(\.sourceIndex) == [0, 2])
    #expect(r.fixes[1].coordinate == Coordinate(uncheckedLatitude: 46.840393, longitude: 29.463026))
    #expect(r.skippedRows.map(\.line) == [3, 6])
    #expect(r.skippedRows[0].message.contains("\"V\""))
  }
}
