import Foundation
import Testing

@testable import TrackFormats

/// The outcome expected for one file of the shared data folder. Counts and time spans come
/// from the folder's README (which was written from the files by other tools), not from this
/// reader.
struct SharedExpectation: Sendable, CustomStringConvertible {
  var path: String
  var fixes: Int
  var timed: Int
  var skipped: Int = 0
  /// Earliest and latest valid time, RFC 3339, and the precision the README states them to.
  var span: (first: String, last: String, toleranceSeconds: Double)?
  var format: TrackFileFormat = .gpx
  var description: String { path }
}

/// Files under the shared data folder, which may hold files that cannot be redistributed:
/// each one reads with the expected counts and span, and never throws anything but
/// `TrackReadError`. Skipped when the folder is absent.
@Suite(.enabled(if: TrackFixtures.sharedTracks != nil))
struct SharedTrackSurveyTests {
  static func gpx(
    _ name: String, _ fixes: Int, _ timed: Int, _ first: String? = nil, _ last: String? = nil,
    tolerance: Double = 1
  ) -> SharedExpectation {
    SharedExpectation(
      path: "gpx/\(name)", fixes: fixes, timed: timed,
      span: first.flatMap { f in last.map { (f, $0, tolerance) } })
  }

  static func csv(
    _ name: String, _ fixes: Int, skipped: Int = 0, _ first: String, _ last: String,
    format: TrackFileFormat = .csv
  ) -> SharedExpectation {
    SharedExpectation(
      path: "csv/\(name)", fixes: fixes, timed: fixes, skipped: skipped, span: (first, last, 1),
      format: format)
  }

  static let expectations: [SharedExpectation] = [
    gpx("ExampleTrack.gpx", 5120, 5120, "2020-10-29T07:45:38Z", "2020-10-29T10:36:27Z"),
    gpx("ExampleTrack_NoTime.gpx", 274, 0),
    gpx(
      "Lannion_Plestin_parcours24.4RE.gpx", 381, 381, "2013-03-08T09:32Z", "2013-03-08T13:14Z",
      tolerance: 60),
    gpx("Mojstrovka.gpx", 184, 0),
    gpx("around-visnjan-with-car.gpx", 104, 104, "2020-12-18T06:15:50Z", "2020-12-18T06:24:24Z"),
    gpx("bike_gpx.gpx", 1812, 1812, "2013-04-30T19:23:57Z", "2013-04-30T19:54:11Z"),
    gpx(
      "caltopo-export.gpx", 6, 6, "2019-08-12T23:45Z", "2019-08-13T21:46Z", tolerance: 60),
    gpx("cerknicko-jezero.gpx", 296, 296, "2010-08-05T14:23:59Z", "2010-08-05T16:23:49Z"),
    gpx("cerknicko-without-times.gpx", 296, 5),
    gpx("dg100.gpx", 12027, 12027, "2020-02-14T18:04Z", "2020-05-08T15:34Z", tolerance: 60),
    gpx("ecology-trail-and-lovers-lane-loop.gpx", 139, 0),
    gpx("endomondo.gpx", 5181, 5181, "2016-07-22T08:32:47Z", "2016-07-22T11:26:30Z"),
    gpx("fitwrite-track.gpx", 64, 52, "2002-05-25T17:06:21.25Z", "2002-05-25T18:52:56.98Z"),
    gpx("garmin-activity.gpx", 988, 988, "2017-07-29T14:46:35Z", "2017-07-29T16:18:13Z"),
    gpx(
      "garmin-edge-800-output.gpx", 1286, 1286, "2012-04-12T12:53:58Z", "2012-04-12T13:54:19Z"),
    gpx(
      "garmin-forerunner-10-output.gpx", 514, 514, "2013-06-13T03:56:35Z",
      "2013-06-13T04:24:51Z"),
    gpx(
      "garmin-oregon-700-output.gpx", 997, 997, "2018-09-19T08:52:13Z", "2018-09-19T10:32:56Z"),
    gpx("garmin_g1000_gpx.gpx", 442, 442, "2014-03-29T22:50:22Z", "2014-03-29T22:57:57Z"),
    gpx(
      "garmin_with_extensions.gpx", 3540, 3540, "2019-05-01T04:31:11Z", "2019-05-01T14:41:35Z"),
    gpx("garminconnect.gpx", 68, 68, "2023-01-16T18:02:26Z", "2023-01-16T18:07:24Z"),
    gpx("globalsat_gh625XT.gpx", 174, 174, "2016-01-15T20:58:59Z", "2016-01-15T21:14:29Z"),
    gpx("gtrnctr_power.gpx", 5109, 5109, "2010-05-28T01:16:36Z", "2010-05-28T02:41:44Z"),
    gpx("igc1.gpx", 124, 121, "2004-04-24T00:25Z", "2004-04-25T03:50Z", tolerance: 60),
    gpx(
      "iso8859-1encoded.gpx", 8, 8, "2013-07-29T23:40:30.453Z", "2013-07-29T23:42:00.625Z"),
    gpx("korita-zbevnica.gpx", 871, 513, "2010-10-03T09:36Z", "2010-10-03T13:19Z", tolerance: 60),
    gpx(
      "mtk_logger_m241_multiple_tracks.gpx", 14263, 14263, "2012-11-07T09:11Z",
      "2015-04-07T17:36Z", tolerance: 60),
    gpx("myfile_multseg.gpx", 1559, 1559, "2021-07-21T12:37:41Z", "2021-07-21T13:03:56Z"),
    gpx("route.gpx", 55, 0),
    gpx(
      "santa_rosa_marathon_strava.gpx", 9890, 9890, "2016-08-28T13:03:35Z",
      "2016-08-28T15:57:11Z"),
    gpx("sbn-v13.gpx", 3453, 3453, "2010-02-01T12:31:38.545Z", "2010-02-01T13:30:40Z"),
    gpx("skytraq-miniHomer2_8.gpx", 8713, 8713, "2013-08-15T05:04:11Z", "2013-08-15T15:41:19Z"),
    gpx("tcxtest.gpx", 1202, 1202, "2008-08-21T13:08:52Z", "2008-08-21T14:58:06Z"),
    gpx("timezero.gpx", 6, 6, "2010-01-01T12:00Z", "2016-04-03T12:00Z", tolerance: 43_200),
    gpx("track-with-empty-segment.gpx", 9, 9, "2013-07-06T17:26:26Z", "2013-07-06T17:27:42Z"),
    gpx("track-with-less-sec-time.gpx", 2, 2, "2015-12-11T14:43:13Z", "2015-12-11T14:43:13Z"),
    gpx("unicode_with_bom.gpx", 1, 1),
    gpx("visnjan.gpx", 413, 413, "2014-08-22T16:48:52Z", "2014-08-22T17:19:42Z"),
    gpx("vitovtt-sample.gpx", 1866, 1866, "2007-03-10T19:02:21Z", "2007-03-10T19:40:55Z"),
    gpx("wahoo-element-bolt.gpx", 1101, 1101, "2018-03-20T07:08:44Z", "2018-03-20T07:27:30Z"),
    csv(
      "20070813_short.plt", 44, "2007-08-13T07:52:19Z", "2007-08-13T07:57:02Z", format: .plt),
    csv("24173415.CSV", 742, "2025-07-24T17:34:18Z", "2025-07-24T17:45:41Z"),
    csv(
      "70mai_A810_GPSData000001.txt", 7138, skipped: 2, "2025-02-21T20:45:56Z",
      "2025-02-22T08:50:30Z", format: .dashCamLog),
    csv("garmin_g1000.csv", 442, "2014-03-29T22:50:22Z", "2014-03-29T22:57:57Z"),
    csv(
      "geolife_000_20081023025304.plt", 908, "2008-10-23T02:53:04Z", "2008-10-23T11:11:12Z",
      format: .plt),
    csv(
      "geolife_001_20081024234405.plt", 7075, "2008-10-24T23:44:05Z", "2008-10-25T11:30:01Z",
      format: .plt),
    csv(
      "geolife_002_20081026024152.plt", 6077, "2008-10-26T02:41:52Z", "2008-10-26T11:31:55Z",
      format: .plt),
    csv(
      "geolife_003_20081031031627.plt", 2695, "2008-10-31T03:16:27Z", "2008-10-31T11:30:03Z",
      format: .plt),
    csv(
      "geolife_005_20081027225701.plt", 3829, "2008-10-27T22:57:01Z", "2008-10-28T14:38:48Z",
      format: .plt),
    csv("geolife_trajectory.csv", 2293, "2008-10-26T05:59:34Z", "2008-10-26T13:22:30Z"),
    csv("google_trajectory.csv", 416, "2012-12-18T11:53:30Z", "2012-12-18T21:30:35Z"),
    csv("iblue747.csv", 747, "2005-05-01T10:12:47Z", "2005-05-01T14:54:00Z"),
    csv(
      "mtk_logger_bt-qt1000xt.csv", 584, skipped: 1, "2015-07-15T10:53:26Z",
      "2015-07-16T16:56:44Z"),
    csv("posmo_trajectory.csv", 1327, "2019-01-25T20:00:16.178999901Z", "2019-01-25T20:52:13Z"),
    csv("v900_advanced_mode.csv", 21, "2009-02-04T06:26:22Z", "2009-02-04T06:38:26Z"),
  ]

  @Test func everySharedTrackFileHasAnExpectation() throws {
    let root = try #require(TrackFixtures.sharedTracks)
    var onDisk = Set<String>()
    for sub in ["gpx", "csv"] {
      for url in TrackFixtures.files(in: root.appendingPathComponent(sub)) {
        onDisk.insert("\(sub)/\(url.lastPathComponent)")
      }
    }
    #expect(onDisk == Set(Self.expectations.map(\.path)))
  }

  @Test(arguments: expectations)
  func sharedTrackReadsAsExpected(_ e: SharedExpectation) throws {
    let root = try #require(TrackFixtures.sharedTracks)
    let r = try TrackReader.read(contentsOf: root.appendingPathComponent(e.path))
    #expect(r.format == e.format)
    #expect(r.fixes.count == e.fixes)
    #expect(r.skippedRows.count == e.skipped, "\(r.skippedRows)")
    let times = r.fixes.compactMap(\.time)
    #expect(times.count == e.timed)
    if let span = e.span {
      let first = try #require(times.min())
      let last = try #require(times.max())
      #expect(abs(first - TrackFixtures.t(span.first)) <= span.toleranceSeconds, "\(e.path)")
      #expect(abs(last - TrackFixtures.t(span.last)) <= span.toleranceSeconds, "\(e.path)")
    }
    if ProcessInfo.processInfo.environment["TRACK_SURVEY"] != nil {
      let span =
        times.isEmpty
        ? "-" : "\(RFC3339.format(times.min() ?? 0)) .. \(RFC3339.format(times.max() ?? 0))"
      print(
        "SURVEY | \(e.path) | \(r.format) | \(r.fixes.count) | \(times.count) | \(r.skippedRows.count) | \(r.warnings.count) | \(span) |"
      )
    }
  }

  @Test func seventyMaiVoidRowsAreSkippedWithLines() throws {
    let root = try #require(TrackFixtures.sharedTracks)
    let r = try TrackReader.read(
      contentsOf: root.appendingPathComponent("csv/70mai_A810_GPSData000001.txt"))
    // `grep -n ',V,'`: lines 1910 and 2143.
    #expect(r.skippedRows.map(\.line) == [1910, 2143])
    #expect(r.fixes.first?.time == 1_740_170_756)
    #expect(r.fixes.first?.sourceIndex == 0)
  }
}
