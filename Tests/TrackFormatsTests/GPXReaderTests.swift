import Foundation
import GeofenceGeometry
import Testing

@testable import TrackFormats

/// First or last point of a file as written in it (copied from the file by hand).
struct PointLiteral: Sendable, CustomStringConvertible {
  var lat: Double
  var lon: Double
  /// RFC 3339 text of the point's time, or nil when the point has none (or an invalid one).
  var time: String?
  var description: String { "(\(lat), \(lon)) \(time ?? "-")" }
}

/// What a real file must read as.
struct FileExpectation: Sendable, CustomStringConvertible {
  var name: String
  var fixes: Int
  var timed: Int
  var warnings: Int
  var first: PointLiteral
  var last: PointLiteral
  var format: TrackFileFormat = .gpx
  var description: String { name }
}

func check(_ r: TrackReadResult, _ e: FileExpectation) throws {
  #expect(r.format == e.format)
  #expect(r.fixes.count == e.fixes)
  #expect(r.fixes.filter { $0.time != nil }.count == e.timed)
  #expect(r.warnings.count == e.warnings, "\(r.warnings)")
  #expect(r.skippedRows.isEmpty, "\(r.skippedRows)")
  let first = try #require(r.fixes.first)
  let last = try #require(r.fixes.last)
  for (fix, literal) in [(first, e.first), (last, e.last)] {
    #expect(abs(fix.coordinate.latitude - literal.lat) < 1e-12, "\(e.name) \(literal)")
    #expect(abs(fix.coordinate.longitude - literal.lon) < 1e-12, "\(e.name) \(literal)")
    if let t = literal.time {
      let expected = TrackFixtures.t(t)
      #expect(fix.time.map { abs($0 - expected) < 1e-6 } == true, "\(e.name) \(literal)")
    } else {
      #expect(fix.time == nil, "\(e.name) \(literal)")
    }
  }
  #expect(first.sourceIndex == 0)
  #expect(last.sourceIndex == e.fixes - 1)
}

@Suite struct GPXReaderTests {
  // Counts from `grep -c '<trkpt\|<rtept'`; first/last points copied from the files.
  static let repoFiles: [FileExpectation] = [
    .init(
      name: "ExampleTrack.gpx", fixes: 5120, timed: 5120, warnings: 0,
      first: .init(lat: 45.840660, lon: 4.830770, time: "2020-10-29T07:45:38.000Z"),
      last: .init(lat: 45.787920, lon: 4.809660, time: "2020-10-29T10:36:26.999Z")),
    .init(
      name: "ExampleTrack_NoTime.gpx", fixes: 274, timed: 0, warnings: 0,
      first: .init(lat: 45.189590, lon: 5.785810), last: .init(lat: 45.189010, lon: 5.788570)),
    .init(
      name: "Lannion_Plestin_parcours24.4RE.gpx", fixes: 381, timed: 381, warnings: 0,
      first: .init(lat: 48.727860236540437, lon: -3.45848573371768, time: "2013-03-08T11:15:36Z"),
      last: .init(lat: 48.669963497668505, lon: -3.643429493531585, time: "2013-03-08T09:34:29Z")),
    // Every time is the 32-bit time_t minimum: all 184 are warned about and left nil.
    .init(
      name: "Mojstrovka.gpx", fixes: 184, timed: 0, warnings: 1,
      first: .init(lat: 46.434981, lon: 13.748273), last: .init(lat: 46.435231, lon: 13.748253)),
    .init(
      name: "around-visnjan-with-car.gpx", fixes: 104, timed: 104, warnings: 0,
      first: .init(lat: 45.2735188510, lon: 13.7142099626, time: "2020-12-18T06:15:50Z"),
      last: .init(lat: 45.2733349521, lon: 13.7139970623, time: "2020-12-18T06:24:24Z")),
    .init(
      name: "caltopo-export.gpx", fixes: 6, timed: 6, warnings: 0,
      first: .init(lat: 36.44834803417325, lon: -118.17100617103279, time: "2019-08-12T23:45:00Z"),
      last: .init(lat: 36.49673483334482, lon: -118.33698051050305, time: "2019-08-13T21:46:00Z")),
    .init(
      name: "cerknicko-jezero.gpx", fixes: 296, timed: 296, warnings: 0,
      first: .init(lat: 45.772175035, lon: 14.357659249, time: "2010-08-05T14:23:59Z"),
      last: .init(lat: 45.790873384, lon: 14.304442042, time: "2010-08-05T16:23:49Z")),
    .init(
      name: "cerknicko-without-times.gpx", fixes: 296, timed: 5, warnings: 0,
      first: .init(lat: 45.772175035, lon: 14.357659249),
      last: .init(lat: 45.790873384, lon: 14.304442042, time: "2010-08-05T16:23:49Z")),
    .init(
      name: "ecology-trail-and-lovers-lane-loop.gpx", fixes: 139, timed: 0, warnings: 0,
      first: .init(lat: 37.79804000, lon: -122.457440),
      last: .init(lat: 37.79804000, lon: -122.457440)),
    .init(
      name: "endomondo.gpx", fixes: 5181, timed: 5181, warnings: 0,
      first: .init(lat: 46.371277, lon: 13.846199, time: "2016-07-22T08:32:47Z"),
      last: .init(lat: 46.386698, lon: 13.907867, time: "2016-07-22T11:26:30Z")),
    .init(
      name: "garmin-activity.gpx", fixes: 988, timed: 988, warnings: 0,
      first: .init(
        lat: 37.24173816852271556854248046875, lon: -121.9723242335021495819091796875,
        time: "2017-07-29T14:46:35.000Z"),
      last: .init(
        lat: 37.240441404283046722412109375, lon: -121.97119376622140407562255859375,
        time: "2017-07-29T16:18:13.000Z")),
    .init(
      name: "garmin_with_extensions.gpx", fixes: 3540, timed: 3540, warnings: 0,
      first: .init(lat: 47.4844814278, lon: 10.9756895620, time: "2019-05-01T04:31:11Z"),
      last: .init(lat: 47.4845455494, lon: 10.9758830164, time: "2019-05-01T14:41:35Z")),
    // Waypoints only: read as the track, with one warning.
    .init(
      name: "iso8859-1encoded.gpx", fixes: 8, timed: 8, warnings: 1,
      first: .init(lat: 44.2805478, lon: 20.5402796, time: "2013-07-29T23:40:30.453Z"),
      last: .init(lat: 44.2521762, lon: 20.6774742, time: "2013-07-29T23:42:00.625Z")),
    .init(
      name: "korita-zbevnica.gpx", fixes: 871, timed: 513, warnings: 0,
      first: .init(lat: 45.380600095, lon: 14.144491442),
      last: .init(lat: 45.452453708, lon: 14.018215053, time: "2010-10-03T13:19:31Z")),
    .init(
      name: "myfile_multseg.gpx", fixes: 1559, timed: 1559, warnings: 0,
      first: .init(lat: 37.622025375096, lon: -77.587098570964, time: "2021-07-21T12:37:41.000Z"),
      last: .init(lat: 37.617506815624, lon: -77.590237112943, time: "2021-07-21T13:03:56.000Z")),
    .init(
      name: "route.gpx", fixes: 55, timed: 0, warnings: 0,
      first: .init(lat: 45.2787641494, lon: 13.726695478),
      last: .init(lat: 45.2787783011, lon: 13.7266552448)),
    .init(
      name: "santa_rosa_marathon_strava.gpx", fixes: 9890, timed: 9890, warnings: 0,
      first: .init(lat: 38.4340980, lon: -122.7151630, time: "2016-08-28T13:03:35Z"),
      last: .init(lat: 38.4351900, lon: -122.7153600, time: "2016-08-28T15:57:11Z")),
    .init(
      name: "timezero.gpx", fixes: 6, timed: 6, warnings: 0,
      first: .init(
        lat: 49.3635449998312, lon: 0.0801483333364938, time: "2010-01-01T14:48:37.5195429Z"),
      last: .init(
        lat: 49.4573700325059, lon: 0.0342948235267376, time: "2016-04-03T14:13:12.6759358Z")),
    .init(
      name: "track-with-empty-segment.gpx", fixes: 9, timed: 9, warnings: 0,
      first: .init(lat: 50.7772126, lon: 6.0819695, time: "2013-07-06T17:26:26Z"),
      last: .init(lat: 50.7776715, lon: 6.0827203, time: "2013-07-06T17:27:42Z")),
    .init(
      name: "track-with-less-sec-time.gpx", fixes: 2, timed: 2, warnings: 0,
      first: .init(lat: 57.011456, lon: 9.992872, time: "2015-12-11T14:43:13.000Z"),
      last: .init(lat: 57.01147, lon: 9.992874, time: "2015-12-11T14:43:13.994Z")),
    .init(
      name: "unicode_with_bom.gpx", fixes: 1, timed: 1, warnings: 1,
      first: .init(lat: 43.309634, lon: 3.515386, time: "2016-05-27T10:08:47.8Z"),
      last: .init(lat: 43.309634, lon: 3.515386, time: "2016-05-27T10:08:47.8Z")),
    .init(
      name: "visnjan.gpx", fixes: 413, timed: 413, warnings: 0,
      first: .init(lat: 45.273245, lon: 13.715185, time: "2014-08-22T16:48:52Z"),
      last: .init(lat: 45.273292, lon: 13.71389, time: "2014-08-22T17:19:42Z")),
  ]

  @Test func everyRepoGPXFileIsListed() {
    let onDisk = Set(
      TrackFixtures.files(in: TrackFixtures.repoTracks.appendingPathComponent("gpx")).map(
        \.lastPathComponent))
    #expect(onDisk == Set(Self.repoFiles.map(\.name)))
  }

  @Test(arguments: repoFiles)
  func readsRepoFile(_ e: FileExpectation) throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("gpx/\(e.name)")
    try check(TrackReader.read(contentsOf: url), e)
  }

  @Test func mojstrovkaTimesAreRejectedWithLines() throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("gpx/Mojstrovka.gpx")
    let r = try TrackReader.read(contentsOf: url)
    // One warning for the file's 184 `<time>1901-12-13T20:45:52...` points (the 32-bit
    // time_t minimum; counted with grep), at the first one's line.
    #expect(r.warnings.count == 1)
    let w = try #require(r.warnings.first)
    #expect(w.line == 14)
    #expect(
      w.message
        == "184 times are outside 1980-01-06T00:00:00.000Z ... 2100-01-01T00:00:00.000Z;"
        + " those fixes have no time (first here: \"1901-12-13T20:45:52.2073437Z\")")
    #expect(r.fixes.allSatisfy { $0.time == nil })
  }

  @Test func fitwriteTimesWithoutZoneWarnOnce() throws {
    guard let shared = TrackFixtures.sharedTracks else { return }
    let r = try TrackReader.read(
      contentsOf: shared.appendingPathComponent("gpx/fitwrite-track.gpx"))
    #expect(r.warnings.count == 1)
    #expect(r.warnings[0].message.contains("52 times have no time zone"))
    #expect(r.fixes[0].time == TrackFixtures.t("2002-05-25T17:06:21.25Z"))
  }

  @Test func hAccExtensionIsHorizontalAccuracy() throws {
    let url = TrackFixtures.repoTracks.appendingPathComponent("gpx/myfile_multseg.gpx")
    let r = try TrackReader.read(contentsOf: url)
    // <gpxtpx:hAcc>6.406485</gpxtpx:hAcc> in the first trkpt's extensions.
    #expect(r.fixes[0].horizontalAccuracy == 6.406485)
  }

  // MARK: Hand-made files

  static let header = """
    <?xml version="1.0" encoding="UTF-8"?>
    <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
    """

  @Test func truncatedFileKeepsThePointsBeforeTheCut() throws {
    let text = """
      \(Self.header)
      <trk><trkseg>
      <trkpt lat="1" lon="2"><time>2020-01-01T00:00:00Z</time></trkpt>
      <trkpt lat="1.1" lon="2"><time>2020-01-01T00:00:01Z</time></trkpt>
      <trkpt lat="1.2" lon="2"><time>2020-01-01T00:00:02Z</time></trkpt>
      <trkpt lat="1.3" lon="2"><time>2020-01-01T00:0
      """
    let r = try TrackFixtures.read("cut.gpx", text)
    #expect(r.fixes.map(\.coordinate.latitude) == [1, 1.1, 1.2])
    #expect(r.fixes.map(\.time) == [1_577_836_800, 1_577_836_801, 1_577_836_802])
    let cut = try #require(r.truncation)
    #expect(cut.file == "cut.gpx")
    #expect(cut.line == 7)
    #expect(cut.message.hasPrefix("the file ends early (truncated) inside <time> of a <trkpt>"))
    #expect(cut.description.hasPrefix("cut.gpx:7: "))
    #expect(cut.message.contains("the 3 points before it are used"))
  }

  @Test func fileCutBetweenElementsKeepsItsPoint() throws {
    let text = "\(Self.header)\n<trk><trkseg>\n<trkpt lat=\"1\" lon=\"2\"></trkpt>\n"
    let r = try TrackFixtures.read("cut2.gpx", text)
    #expect(r.fixes.map(\.coordinate) == [Coordinate(uncheckedLatitude: 1, longitude: 2)])
    let cut = try #require(r.truncation)
    #expect(cut.line != nil)
    #expect(cut.message.contains("the point before it"))
  }

  @Test func fileCutBeforeAnyPointThrows() throws {
    let text = "\(Self.header)\n<trk><trkseg>\n<trkpt lat=\"1\" lon="
    let e = try #require(TrackFixtures.error("cut3.gpx", text))
    guard case .malformed(_, let line, _, let pointsRead) = e else {
      Issue.record("expected .malformed, got \(e)")
      return
    }
    #expect(line == 4)
    #expect(pointsRead == 0)
  }

  @Test func xmlWhoseRootIsNotGPXThrows() throws {
    let text = """
      <?xml version="1.0"?>
      <kml xmlns="http://www.opengis.net/kml/2.2">
      <Placemark><Point><coordinates>1,2</coordinates></Point></Placemark>
      </kml>
      """
    let e = try #require(TrackFixtures.error("places.gpx", text))
    guard case .malformed(let file, let line, let reason, 0) = e else {
      Issue.record("expected .malformed with 0 points, got \(e)")
      return
    }
    #expect(file == "places.gpx")
    #expect(line == 2)
    #expect(reason.contains("<kml>"))
  }

  @Test func textThatIsNotXMLThrows() throws {
    let e = try #require(TrackFixtures.error("notes.gpx", "just some notes\nnot xml\n"))
    guard case .malformed("notes.gpx", let line, _, 0) = e else {
      Issue.record("expected .malformed, got \(e)")
      return
    }
    #expect(line == 1)
  }

  @Test func emptyGPXFileThrows() throws {
    let e = try #require(TrackFixtures.error("empty.gpx", ""))
    guard case .malformed("empty.gpx", _, _, 0) = e else {
      Issue.record("expected .malformed, got \(e)")
      return
    }
  }

  @Test func badCoordinatesAreSkippedWithTheirLines() throws {
    let text = """
      \(Self.header)
      <trk><trkseg>
      <trkpt lat="45" lon="7"/>
      <trkpt lat="91.5" lon="7"/>
      <trkpt lat="abc" lon="7"/>
      <trkpt lon="7"/>
      <trkpt lat="46" lon="-180.5"/>
      <trkpt lat="47" lon="180"/>
      </trkseg></trk></gpx>
      """
    let r = try TrackFixtures.read("bad.gpx", text)
    #expect(r.fixes.map(\.sourceIndex) == [0, 5])
    #expect(r.fixes.map(\.coordinate.latitude) == [45, 47])
    #expect(r.skippedRows.map(\.line) == [5, 6, 7, 8])
    #expect(r.skippedRows[0].description.hasPrefix("bad.gpx:5: "))
    #expect(r.skippedRows[0].message.contains("91.5"))
    #expect(r.skippedRows[1].message.contains("abc"))
    #expect(r.skippedRows[2].message.contains("no lat"))
  }

  @Test func iso88591EncodingIsHonoured() throws {
    // "Vézelay" with é as the single byte 0xE9: invalid UTF-8, valid ISO-8859-1.
    var bytes = Array(
      """
      <?xml version="1.0" encoding="ISO-8859-1"?>
      <gpx version="1.0" xmlns="http://www.topografix.com/GPX/1/0">
      <trk><name>V
      """.utf8)
    bytes.append(0xE9)
    bytes += Array(
      """
      zelay</name><trkseg>
      <trkpt lat="47.466222" lon="3.747318"><time>2007-08-13T07:52:19Z</time></trkpt>
      </trkseg></trk></gpx>
      """.utf8)
    let r = try TrackFixtures.read("latin1.gpx", bytes: bytes)
    #expect(r.fixes.count == 1)
    #expect(r.fixes[0].time == 1_186_991_539)
  }

  @Test func byteOrderMarkAndCRLFAreAccepted() throws {
    let text = """
      \(Self.header)
      <trk><trkseg>
      <trkpt lat="1" lon="2"><time>2020-01-01T00:00:00Z</time></trkpt>
      <trkpt lat="x" lon="2"/>
      </trkseg></trk></gpx>
      """.replacingOccurrences(of: "\n", with: "\r\n")
    let r = try TrackFixtures.read("bom.gpx", bytes: [0xEF, 0xBB, 0xBF] + Array(text.utf8))
    #expect(r.fixes.count == 1)
    #expect(r.fixes[0].time == 1_577_836_800)
    #expect(r.skippedRows.map(\.line) == [5])
  }

  @Test func namespacePrefixesAreMatchedByLocalName() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx:gpx xmlns:gpx="http://www.topografix.com/GPX/1/1" version="1.1">
      <gpx:trk><gpx:trkseg>
      <gpx:trkpt lat="1" lon="2"><gpx:time>2020-01-01T00:00:00Z</gpx:time></gpx:trkpt>
      <gpx:trkpt lat="1.5" lon="2.5"/>
      </gpx:trkseg></gpx:trk>
      </gpx:gpx>
      """
    let r = try TrackFixtures.read("prefixed.gpx", text)
    #expect(r.fixes.count == 2)
    #expect(r.fixes[0].time == 1_577_836_800)
    #expect(r.fixes[1].coordinate == Coordinate(uncheckedLatitude: 1.5, longitude: 2.5))
  }

  @Test func timeInsideExtensionsOrMetadataIsNotThePointTime() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1" xmlns:x="urn:x">
      <metadata><time>2001-01-01T00:00:00Z</time></metadata>
      <trk><extensions><time>2002-01-01T00:00:00Z</time></extensions><trkseg>
      <trkpt lat="1" lon="2"><extensions><x:time>2003-01-01T00:00:00Z</x:time><time>2004-01-01T00:00:00Z</time></extensions></trkpt>
      <trkpt lat="1" lon="2"><extensions><x:p><time>2005-01-01T00:00:00Z</time></x:p></extensions><time>2020-01-01T00:00:00Z</time></trkpt>
      <trkpt lat="1" lon="2"><unknown a="b"><trkpt lat="9" lon="9"/><deeper>text</deeper></unknown></trkpt>
      <extensions><trkpt lat="8" lon="8"/><rte><rtept lat="8" lon="8"/></rte></extensions>
      </trkseg></trk></gpx>
      """
    let r = try TrackFixtures.read("ext.gpx", text)
    #expect(r.fixes.count == 3)
    #expect(r.fixes.map(\.coordinate.latitude) == [1, 1, 1])
    #expect(r.fixes.map(\.time) == [nil, 1_577_836_800, nil])
    #expect(r.warnings.isEmpty)
  }

  @Test func timesWithoutZoneWarnOncePerFile() throws {
    let text = """
      \(Self.header)
      <trk><trkseg>
      <trkpt lat="1" lon="2"><time>2020-01-01T00:00:00</time></trkpt>
      <trkpt lat="1" lon="2"><time>2020-01-01T00:00:01.250000</time></trkpt>
      <trkpt lat="1" lon="2"><time>2020-01-01T00:00:02Z</time></trkpt>
      </trkseg></trk></gpx>
      """
    let r = try TrackFixtures.read("nozone.gpx", text)
    #expect(r.fixes.map(\.time) == [1_577_836_800, 1_577_836_801.25, 1_577_836_802])
    #expect(r.warnings.count == 1)
    #expect(r.warnings[0].line == 4)
    #expect(r.warnings[0].message.contains("2 times have no time zone"))
  }

  @Test func unreadableAndAbsurdTimesLeaveTimeNil() throws {
    let text = """
      \(Self.header)
      <trk><trkseg>
      <trkpt lat="1" lon="2"><time>yesterday</time></trkpt>
      <trkpt lat="1" lon="2"><time>1901-12-13T20:45:52Z</time></trkpt>
      <trkpt lat="1" lon="2"><time>1970-01-01T00:00:00Z</time></trkpt>
      <trkpt lat="1" lon="2"><time></time></trkpt>
      <trkpt lat="1" lon="2"><time>
        2020-01-01T00:00:00Z
      </time></trkpt>
      </trkseg></trk></gpx>
      """
    let r = try TrackFixtures.read("times.gpx", text)
    #expect(r.fixes.map(\.time) == [nil, nil, nil, nil, 1_577_836_800])
    // One warning per kind, at its first line: the lone unreadable time in its own words.
    #expect(r.warnings.map(\.line) == [4, 5])
    #expect(
      r.warnings.map(\.message) == [
        "time \"yesterday\" is not a date and time; the fix has no time",
        "2 times are outside 1980-01-06T00:00:00.000Z ... 2100-01-01T00:00:00.000Z; those fixes"
          + " have no time (first here: \"1901-12-13T20:45:52Z\")",
      ])
  }

  @Test func segmentsRoutesAndIndexesInDocumentOrder() throws {
    let text = """
      \(Self.header)
      <wpt lat="5" lon="5"/>
      <rte><rtept lat="1" lon="1"/><rtept lat="2" lon="2"/></rte>
      <trk><trkseg></trkseg><trkseg><trkpt lat="3" lon="3"/></trkseg><trkseg/></trk>
      <trk/>
      <rte><rtept lat="4" lon="4"/></rte>
      </gpx>
      """
    let r = try TrackFixtures.read("mixed.gpx", text)
    #expect(r.fixes.map(\.coordinate.latitude) == [1, 2, 3, 4])
    #expect(r.fixes.map(\.sourceIndex) == [0, 1, 2, 3])
    #expect(r.warnings.isEmpty)
  }

  @Test func waypointOnlyFileIsReadAsTrackWithWarning() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx><wpt lat="5" lon="6"><time>2020-01-01T00:00:00Z</time></wpt><wpt lat="7" lon="8"/></gpx>
      """
    let r = try TrackFixtures.read("wpt.gpx", text)
    #expect(r.fixes.map(\.coordinate.longitude) == [6, 8])
    #expect(r.fixes.map(\.sourceIndex) == [0, 1])
    #expect(r.warnings.count == 1)
    #expect(r.warnings[0].message.contains("waypoints are read as the track"))
  }

  @Test func gpx10WithCDATAAndEntities() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.0" xmlns="http://www.topografix.com/GPX/1/0">
      <trk><name>a &amp; b</name><trkseg>
      <trkpt lat="1" lon="2"><time><![CDATA[2020-01-01T00:00:00Z]]></time></trkpt>
      </trkseg></trk></gpx>
      """
    let r = try TrackFixtures.read("v10.gpx", text)
    #expect(r.fixes.map(\.time) == [1_577_836_800])
  }

  @Test func gpxWithoutPointsWarns() throws {
    let r = try TrackFixtures.read("none.gpx", "<?xml version=\"1.0\"?><gpx><trk/></gpx>")
    #expect(r.fixes.isEmpty)
    #expect(r.warnings.map(\.message) == ["the file holds no track, route or waypoint points"])
  }
}
