import Foundation
import Testing

@testable import TrackFormats

/// Every track reader uses the one number grammar (RFC 8259, the decimal comma where
/// documented): no C hex floats, no `inf` or `nan`, nothing beyond ±1.8e308.
@Suite struct NumberGrammarTests {
  func csv(_ text: String) throws -> TrackReadResult {
    try CSVTrackReader.read(data: Data(text.utf8), fileName: "t.csv")
  }

  @Test func hexFloatCoordinatesAreSkippedRows() throws {
    let r = try csv(
      """
      time,lat,lon
      1764478800,0x2F.6,8.5
      1764478801,47.375,0x1p3
      1764478802,47.375,8.5
      1764478803,inf,8.5
      1764478804,1e400,8.5
      """)
    #expect(r.fixes.map(\.coordinate.latitude) == [47.375])
    #expect(r.fixes.map(\.time) == [1_764_478_802])
    #expect(r.skippedRows.map(\.line) == [2, 3, 5, 6])
    #expect(r.skippedRows[0].message == #"latitude "0x2F.6" is not a number; row skipped"#)
    #expect(r.skippedRows[1].message == #"longitude "0x1p3" is not a number; row skipped"#)
  }

  @Test func unreadableAccuracyMakesTheFixInvalidNotInaccurate() throws {
    let r = try csv(
      """
      time,lat,lon,accuracy
      1764478800,47.1,8.5,inf
      1764478801,47.1,8.5,1e400
      1764478802,47.1,8.5,0x10
      1764478803,47.1,8.5,12.5
      """)
    #expect(r.fixes.count == 4)
    #expect(r.fixes[0].horizontalAccuracy?.isNaN == true)
    #expect(r.fixes[1].horizontalAccuracy?.isNaN == true)
    #expect(r.fixes[2].horizontalAccuracy?.isNaN == true)
    #expect(r.fixes[3].horizontalAccuracy == 12.5)
    #expect(r.warnings.map(\.line) == [2, 3, 4])
    #expect(
      r.warnings[0].message
        == #"accuracy "inf" is not a finite number; the fix is invalid (invalidAccuracy)"#)
  }

  @Test func decimalCommaOnlyWithSemicolons() throws {
    let r = try csv("time;lat;lon\n1764478800;47,25;8,5\n")
    #expect(r.fixes.map(\.coordinate.latitude) == [47.25])
    #expect(r.fixes.map(\.coordinate.longitude) == [8.5])
  }

  @Test func fixedWidthDegreesWithLeadingZerosStillRead() throws {
    let r = try csv("time,lat,lon\n1764478800,031.5N,035.208829E\n1764478801,-08.5,-000.25\n")
    #expect(r.fixes.map(\.coordinate.latitude) == [31.5, -8.5])
    #expect(r.fixes.map(\.coordinate.longitude) == [35.208829, -0.25])
  }

  @Test func pltAndDashCamUseTheSameGrammar() throws {
    let plt = """
      Geolife trajectory
      WGS 84
      Altitude is in Feet
      Reserved 3
      0,2,255,My Track,0,0,2,8421376
      0
      39.9,116.3,0,492,39744.1201851852,2008-10-23,02:53:04
      0x27.9,116.3,0,492,39744.1201851852,2008-10-23,02:53:05
      """
    let p = try CSVTrackReader.read(data: Data(plt.utf8), fileName: "a.plt")
    #expect(p.fixes.map(\.coordinate.latitude) == [39.9])
    #expect(p.skippedRows.map(\.line) == [8])
    let log = "$V02\n1764478800,A,47.1,8.5\n1764478801,A,nan,nan\n1764478802,A,0x2F,8.5\n"
    let d = try CSVTrackReader.read(data: Data(log.utf8), fileName: "GPSData000001.txt")
    #expect(d.fixes.map(\.coordinate.latitude) == [47.1])
    #expect(d.skippedRows.count == 2)
  }

  @Test func byteOrderMarkInsideTheFileIsDropped() throws {
    // Two exports joined with `cat`: the second part starts with a byte-order mark.
    var bytes = Array("\u{FEFF}time,lat,lon,device\n1764478800,47.1,8.5,a\n".utf8)
    bytes += Array("\u{FEFF}1764478801,47.2,8.5,b\u{FEFF}\n".utf8)
    let r = try CSVTrackReader.read(data: Data(bytes), fileName: "t.csv")
    #expect(r.fixes.map(\.deviceID) == ["a", "b"])
    #expect(r.fixes.map(\.time) == [1_764_478_800, 1_764_478_801])
  }
}
