import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import Testing
import TrackFormats

/// Parses `line` through the byte-level entry point.
private func parse(_ line: String) -> Result<StreamFix, FixLineParser.Failure> {
  Array(line.utf8).withUnsafeBufferPointer { FixLineParser.parse($0) }
}

private func parsed(_ line: String) throws -> StreamFix {
  try parse(line).get()
}

/// The failure's description, or nil when the line parsed.
private func failure(_ line: String) -> String? {
  if case .failure(let f) = parse(line) { return f.description }
  return nil
}

/// 2026-11-30T05:00:00Z: 56 years after 1970 with 14 leap days, then 334 days into 2026
/// (January–October, 304, and 29 days of November): 20,787 days × 86,400 s + 5 h.
private let t0 = 1_796_014_800.0

@Suite struct FixLineParserTests {
  static let valid =
    #"{"device_id":"phone-1","time":"2026-11-30T05:00:00Z","latitude":21.3,"longitude":-157.85,"accuracy":12.5}"#

  @Test func readsEveryMember() throws {
    let f = try parsed(Self.valid)
    #expect(f.deviceID == "phone-1")
    #expect(f.fix.time == t0)
    #expect(f.fix.coordinate.latitude == 21.3 && f.fix.coordinate.longitude == -157.85)
    #expect(f.fix.horizontalAccuracy == 12.5)
    #expect(f.fix.sourceIndex == -1)
  }

  /// Each time checked by hand against t0 (or the epoch).
  @Test(arguments: [
    ("2026-11-30T05:00:00Z", t0),
    ("2026-11-30t05:00:00z", t0),
    ("2026-11-30T07:30:00+02:30", t0),
    ("2026-11-30T07:30:00+0230", t0),
    ("2026-11-30T00:00:00-05", t0),
    ("2026-11-29T23:00:00.25-06:00", t0 + 0.25),
    ("2026-11-30T05:00:00.125Z", t0 + 0.125),
    ("2026-11-30T05:00:00,5Z", t0 + 0.5),
    ("1980-01-06T00:00:00Z", 315_964_800),
    ("2099-12-31T23:59:59.5Z", 4_102_444_799.5),
    // 10,957 days to 2000-01-01, + 31 + 28 to February 29, + 12 h.
    ("2000-02-29T12:00:00Z", 951_825_600),
    // A leap second is the first second of the next minute: 2017-01-01T00:00:00Z.
    ("2016-12-31T23:59:60Z", 1_483_228_800),
  ])
  func readsRFC3339Times(text: String, seconds: Double) throws {
    let f = try parsed(
      #"{"device_id":"d","time":"\#(text)","latitude":0,"longitude":0}"#)
    #expect(f.fix.time == seconds, "\(text)")
  }

  @Test(arguments: [
    ("1796014800", t0), ("1796014800.5", t0 + 0.5), ("1.7960148e9", t0), ("17960148E2", t0),
    ("315964800", 315_964_800), ("4102444800", 4_102_444_800), ("1796014800e0", t0),
  ])
  func readsEpochSeconds(text: String, seconds: Double) throws {
    let f = try parsed(#"{"device_id":"d","time":\#(text),"latitude":0,"longitude":0}"#)
    #expect(f.fix.time == seconds, "\(text)")
  }

  @Test(arguments: [
    (#"d\u00e9v"#, "dév"),
    (#"D\u00C9V"#, "DÉV"),
    (#"car-\ud83d\ude97"#, "car-\u{1F697}"),
    (#"a\"b\\c\/d"#, #"a"b\c/d"#),
    (#"a\u0062\u002Fc"#, "ab/c"),
    ("dév", "dév"),
  ])
  func decodesEscapedDeviceIDs(raw: String, expected: String) throws {
    let f = try parsed(#"{"device_id":"\#(raw)","time":1796014800,"latitude":0,"longitude":0}"#)
    #expect(f.deviceID == expected)
  }

  @Test func skipsUnknownMembersWithNestedValues() throws {
    let f = try parsed(
      #"{"meta":{"a":[1,{"b":null,"latitude":99}],"c":"}]\"","d":{}},"device_id":"d","#
        + #""tags":[true,false,[],[[-1.5e3]]],"time":1796014800,"note":"x","latitude":1,"#
        + #""longitude":2,"empty":[],"accuracy":null}"#)
    #expect(f.deviceID == "d")
    #expect(f.fix.coordinate.latitude == 1 && f.fix.coordinate.longitude == 2)
    #expect(f.fix.horizontalAccuracy == nil)
  }

  @Test func allowsSpaceAndRefusesARepeatedMember() throws {
    let f = try parsed(
      " { \"device_id\" : \"a\" ,\t\"time\":1796014800, \"latitude\":1 ,\"longitude\":3 } "
    )
    #expect(f.fix.coordinate.latitude == 1 && f.fix.coordinate.longitude == 3)
    #expect(
      failure(#"{"device_id":"a","time":1796014800,"latitude":1,"latitude":2,"longitude":3}"#)
        == "latitude is given twice")
    #expect(
      failure(#"{"device_id":"a","time":1796014800,"device_id":"b","latitude":1,"longitude":3}"#)
        == "device_id is given twice")
    #expect(
      failure(#"{"device_id":"a","time":1,"time":1796014800,"latitude":1,"longitude":3}"#)
        == "time is given twice")
    // A number out of range or too long is named as such, not as "not a number".
    #expect(
      failure(#"{"device_id":"a","time":1796014800,"latitude":1e400,"longitude":3}"#)
        == "latitude 1e400 is out of range (beyond ±1.8e308)")
    #expect(
      failure(#"{"device_id":"a","time":-1e999,"latitude":1,"longitude":3}"#)
        == "time -1e999 is out of range (beyond ±1.8e308)")
    let long = "1." + String(repeating: "5", count: 70)
    #expect(
      failure(#"{"device_id":"a","time":1796014800,"latitude":1,"longitude":\#(long)}"#)
        == "longitude has 72 characters; at most 63 are read")
    #expect(
      failure(#"{"device_id":"a","time":1796014800,"latitude":"1","longitude":3}"#)
        == "latitude must be a number")
    #expect(
      failure(#"{"device_id":"a","time":1796014800,"latitude":1,"longitude":3,"accuracy":x}"#)
        == "accuracy must be a number or null")
    // A raw control character in a string is named, not taken for another type.
    #expect(
      failure("{\"device_id\":\"a\u{0}b\",\"time\":1796014800,\"latitude\":1,\"longitude\":3}")
        == "device_id holds a raw control character (U+0000-U+001F must be escaped)")
    #expect(
      failure(#"{"device_id":7,"time":1796014800,"latitude":1,"longitude":3}"#)
        == "device_id must be a string")
    // Unknown members may repeat: they are skipped.
    let other = try parsed(
      #"{"x":1,"device_id":"a","x":2,"time":1796014800,"latitude":1,"longitude":3}"#)
    #expect(other.deviceID == "a")
  }

  /// Each malformed line fails, and the description names the member (or the structure).
  @Test(arguments: [
    (#"[1,2]"#, "JSON object"),
    (#"hello"#, "JSON object"),
    (#""#, "JSON object"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0} x"#, "text after the object"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0}}"#, "text after the object"),
    (#"{"time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
    // Outside 1980-2100 (TrackReader.plausibleTimes): milliseconds, the year 10000, 1970.
    (#"{"device_id":"d","time":1548446441000,"latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":253402300800,"latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":0,"latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":"2200-01-01T00:00:00Z","latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":1796014800,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":0}"#, "longitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":91,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":-90.5,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":180.01}"#, "longitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":NaN,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":Infinity}"#, "longitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":-Infinity}"#, "longitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":1e999,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1e999,"latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":1796014800,"latitude":01,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0,"accuracy":05}"#, "accuracy"),
    (#"{"device_id":"d","time":1796014800,"latitude":+1,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":.5,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":1.,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":1e,"longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":"1","longitude":0}"#, "latitude"),
    (#"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0,"accuracy":"5"}"#, "accuracy"),
    (#"{"device_id":"d","time":"2026-11-30T05:00:00","latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":"2026-11-31T05:00:00Z","latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":"yesterday","latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":"d","time":true,"latitude":0,"longitude":0}"#, "time"),
    (#"{"device_id":5,"time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
    (#"{"device_id":"","time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
    (#"{"device_id":"\ud83d","time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
    (#"{"device_id":"\ude97x","time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
    (#"{"device_id":"\q","time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
    (#"{"device_id":"\u00g1","time":1796014800,"latitude":0,"longitude":0}"#, "device_id"),
  ])
  func malformedLineNamesTheMember(line: String, member: String) {
    let description = failure(line)
    #expect(description?.contains(member) == true, "\(line) → \(description ?? "parsed")")
  }

  @Test(arguments: [
    #"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0"#,
    #"{"device_id":"d" "time":1796014800,"latitude":0,"longitude":0}"#,
    #"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0,}"#,
    #"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0,"x":[1,}"#,
    #"{"device_id":"d","time":1796014800,"latitude":0,"longitude":0,"x":tru}"#,
    #"{device_id:"d","time":1796014800,"latitude":0,"longitude":0}"#,
  ])
  func structuralErrorsFailWithAColumn(line: String) {
    let description = failure(line)
    #expect(description != nil, "\(line) parsed")
  }

  /// A control character inside a string and invalid UTF-8 in the device id fail.
  @Test func rejectsControlCharactersAndInvalidUTF8() {
    #expect(
      failure("{\"device_id\":\"a\u{01}b\",\"time\":1796014800,\"latitude\":0,\"longitude\":0}")
        != nil)
    var bytes = Array(#"{"device_id":"ab","time":1796014800,"latitude":0,"longitude":0}"#.utf8)
    bytes[15] = 0xFF
    let result = bytes.withUnsafeBufferPointer { FixLineParser.parse($0) }
    guard case .failure(let f) = result else {
      Issue.record("invalid UTF-8 parsed")
      return
    }
    #expect(f.description.contains("device_id"))
    // Escaped, a control character is still refused in the device id (not in other strings).
    for escaped in [#"a\u0000b"#, #"a\nb"#, #"\u007f"#] {
      #expect(
        failure(#"{"device_id":"\#(escaped)","time":1796014800,"latitude":0,"longitude":0}"#)?
          .contains("control character") == true, "\(escaped)")
    }
    #expect(
      (try? parsed(
        #"{"device_id":"d","note":"a\u0000b","time":1796014800,"latitude":0,"longitude":0}"#))?
        .deviceID == "d")
  }

  /// Nesting far beyond the parser's depth limit fails instead of overflowing the stack.
  @Test func deepNestingFails() {
    let deep = String(repeating: "[", count: 100_000)
    #expect(failure(#"{"x":\#(deep)"#) != nil)
    let nested = String(repeating: "[", count: 50) + String(repeating: "]", count: 50)
    #expect(
      (try? parsed(
        #"{"x":\#(nested),"device_id":"d","time":1796014800,"latitude":0,"longitude":0}"#))?
        .deviceID == "d")
  }

  /// Random byte mutations of valid lines never crash; the valid lines always parse to their
  /// values; and a mutated line that parses agrees with Foundation's JSON reader on every
  /// member it took, whenever Foundation reads the line as well.
  @Test(arguments: 0..<4 as Range<UInt64>)
  func fuzzedLinesNeverCrash(seed: UInt64) throws {
    var g = SeededGenerator(seed: seed)
    let lines = [
      Self.valid,
      #"{"time":1796014800.25,"longitude":8.5484732,"latitude":47.3766094,"device_id":"d\u00e9v"}"#,
      #"{"device_id":"x","extra":{"a":[1,2,{"b":"c"}]},"time":"2026-11-30T07:30:00+02:30","latitude":-33.9,"longitude":18.4,"accuracy":null}"#,
    ]
    let expected: [(String, Double, Double, Double, Double?)] = [
      ("phone-1", t0, 21.3, -157.85, 12.5),
      ("dév", t0 + 0.25, 47.3766094, 8.5484732, nil),
      ("x", t0, -33.9, 18.4, nil),
    ]
    let alphabet =
      Array(#"{}[]":,\\-+.0123456789eE nultrfa"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xFF]
    var parsedCount = 0
    for i in 0..<3_000 {
      let k = i % lines.count
      let f = try parsed(lines[k])
      #expect(
        (f.deviceID, f.fix.time, f.fix.coordinate.latitude, f.fix.coordinate.longitude)
          == (expected[k].0, expected[k].1, expected[k].2, expected[k].3))
      #expect(f.fix.horizontalAccuracy == expected[k].4)

      var bytes = Array(lines[k].utf8)
      for _ in 0..<Int.random(in: 1...4, using: &g) {
        let at = Int.random(in: 0..<bytes.count, using: &g)
        let byte =
          Bool.random(using: &g)
          ? alphabet[Int.random(in: 0..<alphabet.count, using: &g)]
          : UInt8.random(in: 0...255, using: &g)
        switch Int.random(in: 0..<3, using: &g) {
        case 0: bytes[at] = byte
        case 1: bytes.insert(byte, at: at)
        default: if bytes.count > 1 { bytes.remove(at: at) }
        }
      }
      let result = bytes.withUnsafeBufferPointer { FixLineParser.parse($0) }
      guard case .success(let fix) = result else { continue }
      parsedCount += 1
      #expect(fix.fix.coordinate.latitude.magnitude <= 90)
      #expect(fix.fix.coordinate.longitude.magnitude <= 180)
      #expect(fix.fix.time?.isFinite == true && !fix.deviceID.isEmpty)
      guard
        let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
      else { continue }
      let line = String(decoding: bytes, as: UTF8.self)
      #expect(object["device_id"] as? String == fix.deviceID, "seed \(seed): \(line)")
      #expect(
        (object["latitude"] as? NSNumber)?.doubleValue == fix.fix.coordinate.latitude,
        "seed \(seed): \(line)")
      #expect(
        (object["longitude"] as? NSNumber)?.doubleValue == fix.fix.coordinate.longitude,
        "seed \(seed): \(line)")
      if let time = object["time"] as? NSNumber {
        #expect(time.doubleValue == fix.fix.time, "seed \(seed): \(line)")
      }
    }
    // Some mutations (inside a value, in the unknown member) leave a valid line.
    #expect(parsedCount > 0)
  }

  /// Every number spelling reads as the nearest double, as glibc's `strtod` (correctly
  /// rounded) gives it: short and 15 to 20 digit significands, leading zeros, exponents
  /// around the fast path's limits, negative zero.
  @Test(arguments: 0..<2 as Range<UInt64>)
  func numbersReadAsStrtodReadsThem(seed: UInt64) throws {
    var g = SeededGenerator(seed: seed)
    var texts = ["0", "-0", "0.0", "-0.0", "90", "-90", "9e1", "0.9e2", "45.000000000000000001"]
    texts += ["89.99999999999999", "89.999999999999999", "1e-22", "1.5e-23", "0.000000000000001"]
    texts += ["9007199254740993e-14", "9007199254740992e-14", "4.5E+1", "12345678901234567e-15"]
    for _ in 0..<20_000 {
      let digits = Int.random(in: 1...20, using: &g)
      var significand = (0..<digits).map { _ in String(Int.random(in: 0...9, using: &g)) }
        .joined()
      significand = String(significand.drop { $0 == "0" })
      if significand.isEmpty { significand = "0" }
      let point = Int.random(in: 0...significand.count, using: &g)
      var text = String(significand.prefix(point))
      if text.isEmpty { text = "0" }
      if point < significand.count { text += "." + significand.dropFirst(point) }
      if Bool.random(using: &g) { text += "e" + String(Int.random(in: -30...3, using: &g)) }
      if Bool.random(using: &g) { text = "-" + text }
      texts.append(text)
    }
    var checked = 0
    for text in texts {
      let expected = strtod(text, nil)
      guard expected.magnitude <= 90 else { continue }
      let f = try parsed(
        #"{"device_id":"d","time":1796014800,"latitude":"# + text + #","longitude":0}"#)
      #expect(
        f.fix.coordinate.latitude.bitPattern == expected.bitPattern,
        "\(text): \(f.fix.coordinate.latitude) != \(expected)")
      checked += 1
    }
    #expect(checked > 10_000)
  }
}

@Suite struct CSVLineReaderTests {
  @Test func readsAliasedColumns() throws {
    var reader = try CSVLineReader(
      header: "lat,lng,timestamp,hacc,device_id", fileName: "live.csv", line: 1)
    #expect(reader.hasTime)
    let firstRow = reader.read("21.3,-157.85,2026-11-30T05:00:00Z,12.5,phone-1", line: 2)
    let first = try #require(firstRow).get()
    #expect(first.coordinate.latitude == 21.3 && first.coordinate.longitude == -157.85)
    #expect(first.time == t0)
    #expect(first.horizontalAccuracy == 12.5)
    #expect(first.deviceID == "phone-1")
    #expect(first.sourceIndex == 0)
    let comment = reader.read("# a comment", line: 3)
    let blank = reader.read("", line: 4)
    #expect(comment == nil && blank == nil)
    let secondRow = reader.read("21.31,-157.86,2026-11-30T07:30:01+02:30,,phone-2", line: 5)
    let second = try #require(secondRow).get()
    #expect(second.time == t0 + 1)
    #expect(second.horizontalAccuracy == nil)
    #expect(second.deviceID == "phone-2")
    #expect(second.sourceIndex == 1)
    #expect(reader.rowCount == 2)
  }

  @Test func readsSemicolonsWithDecimalCommas() throws {
    var reader = try CSVLineReader(
      header: "latitude;longitude;time;accuracy", fileName: "eu.csv", line: 1)
    let row = reader.read("47,3766094;8,5484732;2012-12-18T21:30:35Z;5,5", line: 2)
    let fix = try #require(row).get()
    #expect(fix.coordinate.latitude == 47.3766094 && fix.coordinate.longitude == 8.5484732)
    // 2012-12-18T21:30:35Z, by Python's datetime: 1,355,866,235.
    #expect(fix.time == 1_355_866_235)
    #expect(fix.horizontalAccuracy == 5.5)
  }

  @Test func aBadRowIsAnIssueWithItsLine() throws {
    var reader = try CSVLineReader(
      header: "lat,lng,timestamp,hacc,device_id", fileName: "live.csv", line: 1)
    for (text, line) in [
      ("north,-157.85,2026-11-30T05:00:00Z,1,d", 2), ("91,-157.85,2026-11-30T05:00:00Z,1,d", 3),
      ("21.3,-157.85,not a time,1,d", 4), ("21.3,-157.85,\"2026-11-30T05:00:00Z,1,d", 5),
    ] {
      let row = reader.read(text, line: line)
      guard case .failure(let issue)? = row else {
        Issue.record("\(text) was read")
        continue
      }
      #expect(issue.line == line && issue.file == "live.csv", "\(text)")
      #expect(!issue.message.isEmpty)
    }
    // The reader goes on after a bad row.
    let next = reader.read("21.3,-157.85,2026-11-30T05:00:00Z,1,d", line: 6)
    #expect((try? next?.get())?.time == t0)
  }

  @Test func aHeaderWithoutCoordinatesIsRefused() {
    #expect(throws: TrackReadError.self) {
      try CSVLineReader(header: "time,device_id", fileName: "x.csv", line: 1)
    }
  }

  /// A header giving one value in two columns is refused with both named, as a JSON Lines
  /// fix that gives a member twice is; two different device names (`user_id`, `device_id`)
  /// are not a clash.
  @Test func aHeaderNamingAValueTwiceIsRefused() throws {
    for (header, columns) in [
      ("lat,lon,time,lat", #"1 ("lat"), 4 ("lat")"#),
      ("latitude,lat,lon,time", #"1 ("latitude"), 2 ("lat")"#),
      ("lat,lon,time,hacc,accuracy", #"4 ("hacc"), 5 ("accuracy")"#),
      ("lat,lon,time,device,Device", #"4 ("device"), 5 ("Device")"#),
      ("lat,lon,time,time", #"3 ("time"), 4 ("time")"#),
      ("timestamp,lat,lon,timestamp", #"1 ("timestamp"), 4 ("timestamp")"#),
    ] {
      do {
        _ = try CSVLineReader(header: header, fileName: "h.csv", line: 1)
        Issue.record("\(header) was taken")
      } catch {
        #expect("\(error)".contains("more than once, in columns \(columns)"), "\(error)")
        #expect("\(error)".hasPrefix("h.csv:1: the header names the "), "\(error)")
      }
    }
    let both = try CSVLineReader(header: "lat,lon,time,user_id,device_id", fileName: "h", line: 1)
    #expect(both.hasTime)
    let dateAndTime = try CSVLineReader(header: "date,time,lat,lon", fileName: "h", line: 1)
    #expect(dateAndTime.hasTime)
  }

  /// The device rules of a JSON Lines fix hold for a CSV row: an empty device cell, a control
  /// character and bytes that are not UTF-8 each skip their row alone, with its line.
  @Test func aRowWithoutAUsableDeviceIsAnIssue() throws {
    var reader = try CSVLineReader(header: "lat,lon,time,device_id", fileName: "d.csv", line: 1)
    for (text, line, why) in [
      ("1,2,2026-11-30T05:00:00Z,", 2, "empty device id"),
      ("1,2,2026-11-30T05:00:00Z,a\u{0}b", 3, "control character"),
      ("1,2,2026-11-30T05:00:00Z,a\u{7F}", 4, "control character"),
    ] {
      guard case .failure(let issue)? = reader.read(text, line: line) else {
        Issue.record("\(text) was read")
        continue
      }
      #expect(issue.line == line && issue.message.contains(why), "\(issue)")
    }
    let row1 = reader.read("1,2,2026-11-30T05:00:00Z,phone é", line: 5)
    let ok = try #require(row1).get()
    #expect(ok.deviceID == "phone é")
  }

  /// A line holds one whole record: a quoted field left open refuses its line, and the line
  /// that would close it (an odd number of `"`) is refused too, not read as a fix of device
  /// `x"`. Doubled quotes inside a quoted field are fine.
  @Test func aQuotedFieldSpanningLinesRefusesBothLines() throws {
    var reader = try CSVLineReader(header: "device,time,lat,lon", fileName: "q.csv", line: 1)
    let open = reader.read(#""q"#, line: 2)
    let close = reader.read(#"x",2024-01-01T00:00:03Z,47.0,7.0"#, line: 3)
    for (row, line) in [(open, 2), (close, 3)] {
      guard case .failure(let issue)? = row else {
        Issue.record("line \(line) was taken")
        continue
      }
      #expect(issue.line == line, "\(issue)")
    }
    let quoted = reader.read(#""a ""b""",2024-01-01T00:00:04Z,47.0,7.0"#, line: 4)
    #expect(try #require(quoted).get().deviceID == #"a "b""#)
  }

  /// Warnings of a row whose fix is taken: the first time without a zone, once; a bad
  /// accuracy refuses its row.
  @Test func warningsComeWithTheirLine() throws {
    var reader = try CSVLineReader(header: "lat,lon,time,accuracy", fileName: "w.csv", line: 1)
    let row2 = reader.read("1,2,2026-11-30T05:00:00Z,5", line: 2)
    _ = try #require(row2).get()
    #expect(reader.warnings.isEmpty)
    let row3 = reader.read("1,2,2026-11-30T05:00:01Z,n/a", line: 3)
    // As a JSON Lines fix whose accuracy is not a number: the row is refused.
    guard case .failure(let bad)? = row3 else {
      Issue.record("a row with accuracy n/a was taken")
      return
    }
    #expect(bad.line == 3 && bad.message == #"accuracy "n/a" is not a finite number; row skipped"#)
    let row3b = reader.read("1,2,2026-11-30T05:00:01Z,5", line: 3)
    _ = try #require(row3b).get()
    #expect(reader.warnings.isEmpty)
    let row4 = reader.read("1,2,2026-11-30 05:00:02,5", line: 4)
    _ = try #require(row4).get()
    #expect(reader.warnings.map(\.line) == [4])
    #expect(reader.warnings.first?.message.contains("without a zone is read as UTC") == true)
    let row5 = reader.read("1,2,2026-11-30 05:00:03,5", line: 5)
    _ = try #require(row5).get()
    #expect(reader.warnings.isEmpty)
  }
}
