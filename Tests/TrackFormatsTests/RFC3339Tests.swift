import Foundation
import GeofenceTestSupport
import Testing

@testable import TrackFormats

@Suite struct RFC3339Tests {
  /// Hand-computed values: 2019-01-01 is day 17897 since 1970-01-01 (49 years with 12 leap
  /// days: 49 * 365 + 12), and so on.
  @Test(arguments: [
    ("2019-01-25T20:00:16Z", 1_548_446_416.0, true),
    ("1970-01-01T00:00:00Z", 0, true),
    ("2000-01-01T00:00:00Z", 946_684_800, true),
    ("2000-02-29T12:00:00Z", 951_825_600, true),
    ("1901-12-13T20:45:52Z", -2_147_483_648, true),
    ("2038-01-19T03:14:07Z", 2_147_483_647, true),
    ("2019-01-25t20:00:16z", 1_548_446_416, true),
    ("2019-01-25 20:00:16", 1_548_446_416, false),
    ("2019-01-25T20:00:16", 1_548_446_416, false),
    ("  2019-01-25T20:00:16Z  ", 1_548_446_416, true),
    ("2019-01-25T21:00:16+01:00", 1_548_446_416, true),
    ("2019-01-25T13:00:16-0700", 1_548_446_416, true),
    ("2019-01-25T13:00:16-07", 1_548_446_416, true),
    ("2019-01-25T20:00:16 UTC", 1_548_446_416, true),
    ("2019-01-25T20:00Z", 1_548_446_400, true),
    ("2015-12-11T15:43:13.994+01:00", 1_449_844_993.994, true),
    ("2010-01-01T14:48:37.5195429Z", 1_262_357_317.5195429, true),
    ("2019-01-25 20:00:16.178999901", 1_548_446_416.178999901, false),
    ("2016-05-27T10:08:47.8Z", 1_464_343_727.8, true),
    ("2019-01-25T20:00:16,5Z", 1_548_446_416.5, true),
    ("2016-12-31T23:59:60Z", 1_483_228_800, true),
  ])
  func parsesSpellings(text: String, seconds: Double, hadZone: Bool) throws {
    let r = try #require(RFC3339.parse(text))
    #expect(abs(r.seconds - seconds) < 1e-6, "\(text): \(r.seconds) != \(seconds)")
    #expect(r.hadZone == hadZone)
  }

  @Test(arguments: [
    "", "garbage", "2019-01-25", "2019-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
    "2100-02-29T00:00:00Z", "2019-13-01T00:00:00Z", "2019-00-10T00:00:00Z",
    "2019-04-31T00:00:00Z", "2019-01-25T24:00:00Z", "2019-01-25T20:60:00Z",
    "2019-01-25T20:00:61Z", "2019-01-25T20:00:16.Z", "2019-01-25T20:00:16+25:00",
    "2019-01-25T20:00:16Zjunk", "2019/01/25 20:00:16", "19-01-25T20:00:16Z", "2019-1-25T20:00:16Z",
  ])
  func rejectsInvalid(text: String) {
    #expect(RFC3339.parse(text) == nil, "\(text) should not parse")
  }

  @Test func lenientOptionsAcceptSlashesAndShortFields() throws {
    let r = try #require(RFC3339.parse("2005/05/01 10:12:47", options: .lenient))
    #expect(r.seconds == 1_114_942_367)
    #expect(!r.hadZone)
    #expect(RFC3339.parse("2005/5/1 10:12:47", options: .lenient)?.seconds == 1_114_942_367)
    #expect(RFC3339.parseDate("250724") == RFC3339.parseDate("2025-07-24"))
    #expect(RFC3339.parseDate("20250724") == RFC3339.parseDate("2025/07/24"))
    #expect(RFC3339.parseDate("250230") == nil)
    #expect(RFC3339.parseTimeOfDay("173418") == 63_258)
    #expect(RFC3339.parseTimeOfDay("10:53:26.500") == 39_206.5)
    #expect(RFC3339.parseTimeOfDay("25:00:00") == nil)
    #expect(RFC3339.parseOffset("+00:00") == 0)
    #expect(RFC3339.parseOffset("-07:00") == -25_200)
    #expect(RFC3339.parseOffset("+0530") == 19_800)
  }

  @Test(arguments: [
    (1_548_446_416.178999901, "2019-01-25T20:00:16.179Z"),
    (0, "1970-01-01T00:00:00.000Z"),
    (-0.001, "1969-12-31T23:59:59.999Z"),
    (-2_147_483_648, "1901-12-13T20:45:52.000Z"),
    (951_825_600.5, "2000-02-29T12:00:00.500Z"),
    (1_483_228_799.9996, "2017-01-01T00:00:00.000Z"),
    (253_402_300_799, "9999-12-31T23:59:59.000Z"),
    // The last half millisecond of 9999 rounds down: up would be year 10000.
    (253_402_300_799.9995, "9999-12-31T23:59:59.999Z"),
    (253_402_300_799.9999, "9999-12-31T23:59:59.999Z"),
    (-62_167_219_200, "0000-01-01T00:00:00.000Z"),
  ])
  func formatsUTCWithMilliseconds(seconds: Double, text: String) {
    #expect(RFC3339.format(seconds) == text)
  }

  /// Random millisecond instants survive format -> parse, and agree with Foundation's
  /// Gregorian calendar (an independent oracle).
  @Test func roundTripsAgainstFoundationCalendar() throws {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
    let seed: UInt64 = 0x5EED_3339
    var rng = SeededGenerator(seed: seed)
    for _ in 0..<2000 {
      let millis = Int64.random(in: -2_208_988_800_000...4_102_444_800_000, using: &rng)
      let seconds = Double(millis) / 1000
      let text = RFC3339.format(seconds)
      let back = try #require(RFC3339.parse(text), "seed \(seed): \(text)")
      #expect(abs(back.seconds - seconds) < 1e-6, "seed \(seed): \(text)")
      let date = Date(timeIntervalSince1970: seconds)
      let c = calendar.dateComponents([.year, .month, .day], from: date)
      let (y, m, d) = RFC3339.civil(fromDays: Int64((seconds / 86_400).rounded(.down)))
      #expect(
        c.year == Int(y) && c.month == Int(m) && c.day == Int(d),
        "seed \(seed): \(text) vs \(c)")
    }
  }

  @Test func civilAndDaysAreInverse() {
    for days in stride(from: Int64(-800_000), through: 800_000, by: 997) {
      let (y, m, d) = RFC3339.civil(fromDays: days)
      #expect(RFC3339.days(fromCivilYear: y, month: m, day: d) == days)
    }
  }
}
