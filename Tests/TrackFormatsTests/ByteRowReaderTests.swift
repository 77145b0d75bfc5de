@testable import DelimitedText
import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import NumberText
import Testing

@testable import TrackFormats

/// The row reader as it was before it read bytes: every field a `String`, each cell trimmed as a
/// `Substring`. The oracle of the byte reader.
struct ReferenceRowReader {
  let fileName: String
  let columns: CSVColumns
  let decimalComma: Bool
  var fixes: [LocationFix] = []
  var warnings: [TrackIssue] = []
  var skipped: [TrackIssue] = []
  var noZone = NoZoneTally()
  var timeProblems = TimeProblemTally()

  init(fileName: String, columns: CSVColumns, decimalComma: Bool) {
    self.fileName = fileName
    self.columns = columns
    self.decimalComma = decimalComma
  }

  private func field(_ fields: [String], _ i: Int?) -> Substring? {
    guard let i, i < fields.count else { return nil }
    return DelimitedText.trimmingBlanks(fields[i])
  }

  mutating func read(_ fields: [String], line: Int, index: Int) {
    func skip(_ message: String) {
      skipped.append(TrackIssue(file: fileName, line: line, message: message + "; row skipped"))
    }
    if fields.allSatisfy({ DelimitedText.trimmingBlanks($0).isEmpty }) {
      return skip("the row is empty")
    }
    if fields.count > columns.headerCount,
      fields[columns.headerCount...].contains(where: { !DelimitedText.trimmingBlanks($0).isEmpty })
    {
      return skip("the row has \(fields.count) fields, the header \(columns.headerCount)")
    }
    let needed = max(columns.latitude, columns.longitude) + 1
    guard fields.count >= needed else {
      return skip("the row has \(fields.count) fields; latitude and longitude need \(needed)")
    }
    if let v = field(fields, columns.validity) {
      let value = v.lowercased()
      if value == "no fix" || value == "nofix" || value == "v" || value == "invalid" {
        return skip("the logger marks the row \"\(v)\" (no valid position)")
      }
    }
    let lat: Double
    switch CoordinateText.parse(
      field(fields, columns.latitude) ?? "", hemisphere: field(fields, columns.latitudeHemisphere),
      positive: "N", negative: "S", decimalComma: decimalComma)
    {
    case .success(let v): lat = v
    case .failure(let why): return skip("latitude \(why)")
    }
    let lon: Double
    switch CoordinateText.parse(
      field(fields, columns.longitude) ?? "",
      hemisphere: field(fields, columns.longitudeHemisphere),
      positive: "E", negative: "W", decimalComma: decimalComma)
    {
    case .success(let v): lon = v
    case .failure(let why): return skip("longitude \(why)")
    }
    let coordinate: Coordinate
    do {
      coordinate = try Coordinate(latitude: lat, longitude: lon)
    } catch {
      return skip("\(error)")
    }
    let time = readTime(fields, line: line)
    var accuracy: Double?
    if let a = field(fields, columns.accuracy), !a.isEmpty {
      accuracy = DelimitedText.parseDouble(a, decimalComma: decimalComma)
      if accuracy == nil {
        // Unreadable is not "no accuracy" (which would count the fix as exact): mark it
        // invalid, as a source does with a negative accuracy.
        accuracy = .nan
        warnings.append(
          TrackIssue(
            file: fileName, line: line,
            message:
              "accuracy \"\(a)\" is not a finite number; the fix is invalid (invalidAccuracy)"))
      }
    }
    var device: String?
    if let d = field(fields, columns.device), !d.isEmpty { device = String(d) }
    fixes.append(
      LocationFix(
        coordinate: coordinate, time: time, horizontalAccuracy: accuracy, deviceID: device,
        sourceIndex: index))
  }

  private mutating func readTime(_ fields: [String], line: Int) -> Double? {
    var outcome: TrackTime.Outcome
    var text: String
    if let dateColumn = columns.date, let timeColumn = columns.timeOfDay {
      let d = field(fields, dateColumn) ?? ""
      let t = field(fields, timeColumn) ?? ""
      text = "\(d) \(t)"
      if d.isEmpty && t.isEmpty {
        outcome = .empty
      } else if let days = RFC3339.parseDate(d), let tod = RFC3339.parseTimeOfDay(t) {
        outcome = TrackTime.check(Double(days * 86_400) + tod, hadZone: false, text: text)
      } else {
        outcome = .rejected(
          TimeProblem(
            kind: .unreadable, text: text,
            message: "date and time \"\(text)\" are not readable; the fix has no time"))
      }
    } else if let c = columns.dateTime {
      text = String(field(fields, c) ?? "")
      if let epoch = Self.epochSeconds(text) {
        outcome = TrackTime.check(epoch, hadZone: true, text: text)
      } else {
        outcome = TrackTime.interpret(text, options: .lenient)
      }
    } else {
      return nil
    }
    if case .time(let seconds, let hadZone) = outcome, !hadZone {
      if let o = field(fields, columns.utcOffset), !o.isEmpty {
        if let offset = RFC3339.parseOffset(o) {
          outcome = TrackTime.check(seconds - Double(offset), hadZone: true, text: "\(text) \(o)")
        } else {
          warnings.append(
            TrackIssue(
              file: fileName, line: line,
              message: "UTC offset \"\(o)\" is not readable; the time is read as UTC"))
        }
      }
    }
    switch outcome {
    case .empty:
      return nil
    case .time(let seconds, let hadZone):
      if !hadZone { noZone.add(line: line) }
      return seconds
    case .rejected(let problem):
      timeProblems.add(problem, line: line)
      return nil
    }
  }

  /// Unix epoch seconds from a plain number: seconds below 1e11 in magnitude, milliseconds
  /// from 1e11 up. `nil` when `text` is not a plain decimal number.
  static func epochSeconds(_ text: String) -> Double? {
    guard !text.isEmpty else { return nil }
    var sawDigit = false
    for (k, b) in text.utf8.enumerated() {
      if b >= 48 && b <= 57 {
        sawDigit = true
      } else if !(b == UInt8(ascii: ".") || (k == 0 && b == UInt8(ascii: "-"))) {
        return nil
      }
    }
    guard sawDigit, let v = NumberText.double(text) else { return nil }
    return abs(v) >= 1e11 ? v / 1000 : v
  }
}

/// ``CSVTrackReader/read(data:fileName:)`` as it was, over ``ReferenceRowReader``, for CSV
/// files (no PLT or dash-cam logs).
func referenceRead(_ data: Data, fileName: String) throws(TrackReadError) -> TrackReadResult {
  let (text, usedLatin1) = DelimitedText.decode(data)
  var warnings: [TrackIssue] = []
  if usedLatin1 {
    warnings.append(
      TrackIssue(
        file: fileName, line: nil, message: "the file is not valid UTF-8; read as ISO-8859-1"))
  }
  let lines = LineScanner(text: text)
  guard let header = lines.firstContentLine() else {
    throw .malformed(
      file: fileName, line: nil, reason: "the file holds no header line", pointsRead: 0)
  }
  let delimiter = DelimitedText.detectDelimiter(in: header.text)
  let lineOffset = header.line - 1
  var reader: ReferenceRowReader?
  var columnError: TrackReadError?
  var index = 0
  let tokenIssues = DelimitedText.forEachRecord(
    in: lines.substring(fromLine: header.line), delimiter: delimiter
  ) { fields, recordLine in
    guard columnError == nil else { return }
    guard reader != nil else {
      let headerFields = fields.map { String(DelimitedText.trimmingBlanks($0)) }
      do throws(TrackReadError) {
        let columns = try CSVColumns(header: headerFields, file: fileName, line: header.line)
        var state = ReferenceRowReader(
          fileName: fileName, columns: columns, decimalComma: delimiter == UInt8(ascii: ";"))
        state.warnings = warnings
        if !columns.hasTime {
          state.warnings.append(
            TrackIssue(
              file: fileName, line: header.line,
              message: "the header names no time column; the fixes have no time"))
        }
        reader = state
      } catch {
        columnError = error
      }
      return
    }
    if let first = fields.first, DelimitedText.trimmingBlanks(first).hasPrefix("#") { return }
    reader?.read(fields, line: recordLine + lineOffset, index: index)
    index += 1
  }
  if let columnError { throw columnError }
  guard var state = reader else {
    throw .malformed(
      file: fileName, line: header.line, reason: "the file holds no header line", pointsRead: 0)
  }
  for issue in tokenIssues {
    state.skipped.append(
      TrackIssue(file: fileName, line: issue.line + lineOffset, message: issue.message))
  }
  state.warnings += state.timeProblems.warnings(file: fileName)
  if let w = state.noZone.warning(file: fileName) { state.warnings.append(w) }
  return TrackReadResult(
    fixes: state.fixes, warnings: state.warnings, skippedRows: state.skipped, format: .csv)
}

/// Fixes compared field by field, NaN accuracies equal to each other.
func sameFixes(_ a: [LocationFix], _ b: [LocationFix]) -> Bool {
  a.count == b.count
    && zip(a, b).allSatisfy { x, y in
      x.coordinate == y.coordinate && x.time?.bitPattern == y.time?.bitPattern
        && x.horizontalAccuracy?.bitPattern == y.horizontalAccuracy?.bitPattern
        && x.deviceID == y.deviceID && x.sourceIndex == y.sourceIndex
    }
}

@Test func byteRowReaderEqualsTheStringRowReaderOnRandomFiles() throws {
  let headers = [
    "lat,lon,time,accuracy,device",
    "latitude;longitude;tracked_at;horizontal_accuracy;user_id",
    "Lat,N/S,Lon,E/W,date,time,UTCOfst,valid",
    "longitude\tlatitude\ttimestamp\thacc",
    "lat,lon",
  ]
  let coordinates = [
    "46.5", "-46.51234567890123", "049.07N", "W125.76", "035.208829E", "-007.5", " 12.5 ",
    "\u{A0}8.25\u{A0}", "8,25", "1e400", "inf", "0x1p3", "", "N", "91", "-181", "46.5s",
    "\"47.1\"", "\u{200B}9.5", "4é", "-0", "00", "-00.5",
  ]
  let times = [
    "2024-05-01T10:00:00Z", "2024-05-01 10:00:00", "2005/05/01 10:12:47", "1714557600",
    "1714557600123", "20240501", "garbage", "", "1800-01-01T00:00:00Z", "2024-05-01T10:00:00+02:00",
  ]
  let dates = ["2024-05-01", "240501", "20240501", "2024/5/1", "bad", ""]
  let clock = ["10:00:00", "100000", "10:00:00.5", "25:00:00", ""]
  let offsets = ["+02:00", "-0500", "Z", "UTC", "x", ""]
  let accuracies = ["5", "12.5", "n/a", "inf", "", " 3 ", "1e400", "-1", "5,5"]
  let devices = ["a", "dev 1", "", "é", " x "]
  let hemispheres = ["N", "S", "E", "W", "n", "", "X", "NS"]
  let validity = ["A", "V", "No fix", "invalid", "", "valid"]
  for seed in UInt64(1)...60 {
    var rng = SeededGenerator(seed: seed)
    let header = headers[Int(seed) % headers.count]
    let delimiter = header.contains(";") ? ";" : header.contains("\t") ? "\t" : ","
    let columns = header.split(separator: Character(delimiter)).map(String.init)
    var text = header + "\n"
    for _ in 0..<40 {
      if Int.random(in: 0..<12, using: &rng) == 0 {
        text += ["# comment", "", "  ", "\"open,"][Int.random(in: 0..<4, using: &rng)] + "\n"
        continue
      }
      var cells: [String] = []
      for name in columns {
        let pick: [String]
        switch name.lowercased() {
        case "lat", "lon", "latitude", "longitude": pick = coordinates
        case "time" where columns.contains("date"): pick = clock
        case "time", "tracked_at", "timestamp": pick = times
        case "date": pick = dates
        case "utcofst": pick = offsets
        case "accuracy", "horizontal_accuracy", "hacc": pick = accuracies
        case "device", "user_id": pick = devices
        case "n/s", "e/w": pick = hemispheres
        default: pick = validity
        }
        cells.append(pick.randomElement(using: &rng) ?? "")
      }
      if Int.random(in: 0..<10, using: &rng) == 0 { cells.removeLast() }
      text += cells.joined(separator: delimiter) + (Bool.random(using: &rng) ? "\n" : "\r\n")
    }
    let data = Data(text.utf8)
    let expected = try referenceRead(data, fileName: "t.csv")
    let got = try CSVTrackReader.read(data: data, fileName: "t.csv")
    #expect(sameFixes(got.fixes, expected.fixes), "seed \(seed)")
    #expect(got.warnings == expected.warnings, "seed \(seed)")
    #expect(got.skippedRows == expected.skippedRows, "seed \(seed)")
    #expect(got.fixes.count > 0 || expected.skippedRows.count > 0, "seed \(seed)")
  }
}

@Test func blankTrimmingOfBytesEqualsTheScalarTrimming() {
  let pieces = [" ", "\t", "\u{A0}", "\u{3000}", "\u{200B}", "a", "é", "\u{1F600}", "\n", "b c"]
  for seed in UInt64(1)...300 {
    var rng = SeededGenerator(seed: seed)
    var s = ""
    for _ in 0..<Int.random(in: 0...8, using: &rng) { s += pieces.randomElement(using: &rng) ?? "" }
    let expected = String(DelimitedText.trimmingBlanks(s))
    var copy = s
    let got = copy.withUTF8 {
      String(decoding: DelimitedText.trimmingBlanks(utf8: $0), as: UTF8.self)
    }
    #expect(got == expected, "seed \(seed): \(s.unicodeScalars.map { $0.value })")
  }
}

@Test func gpxNumbersReadAsSwiftsDoubleReadsThem() {
  var texts = [
    "46.5", "-46.5", "+5", ".5", "5.", "1e3", "0x1p3", "inf", "-inf", "nan", "00.5", "-007.25",
    "1e400", "4.9e-324", "2.2250738585072011e-308", "", "abc", "46.5 ", "−1",
  ]
  var rng = SeededGenerator(seed: 7)
  for _ in 0..<2_000 {
    let digits = Int.random(in: 1...19, using: &rng)
    var t = Bool.random(using: &rng) ? "-" : ""
    t += String(Int.random(in: 0...179, using: &rng)) + "."
    for _ in 0..<digits { t += String(Int.random(in: 0...9, using: &rng)) }
    texts.append(t)
  }
  for text in texts {
    let got = GPXParseHandler.number(text[...])
    let expected = Double(text)
    #expect(
      got?.bitPattern == expected?.bitPattern || (got?.isNaN == true && expected?.isNaN == true),
      "\(text)")
  }
}
