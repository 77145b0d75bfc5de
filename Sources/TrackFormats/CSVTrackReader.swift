import DelimitedText
import Foundation
import GeofenceGeometry
import NumberText

/// Reads tracks from delimited text: CSV with a header row, and GeoLife / OziExplorer `.plt`.
///
/// **Layout.** Bytes are decoded by ``DelimitedText/decode(_:)`` (UTF-16 with its mark, UTF-8,
/// else ISO-8859-1; NUL padding at line starts removed). Empty lines and lines starting with `#` before the header are skipped. The
/// delimiter (`,` `;` or tab) is detected from the header; fields follow RFC 4180. A file whose
/// first line starts with `Geolife trajectory` or `OziExplorer Track Point File` is read as
/// PLT (see ``TrackFileFormat/plt``), one whose first line is a `$V0…` marker as a 70mai
/// dash-cam log (see ``TrackFileFormat/dashCamLog``).
///
/// **Columns** are found by header name, case-insensitively, ignoring surrounding spaces, a
/// trailing unit in brackets (`accuracy (m)`) and a trailing ` N/S` or ` E/W`:
/// - latitude: `lat`, `latitude`; longitude: `lon`, `lng`, `long`, `longitude` (any order);
/// - time: one column `time`, `timestamp`, `tracked_at`, `datetime`, `date_time`, ..., or a
///   `date` column plus a `time` column (also `Lcl Date`/`Lcl Time`, `UTC Date`/`UTC Time`),
///   and an optional offset column (`UTCOfst`, `utc_offset`) that is subtracted;
/// - horizontal accuracy in metres: `accuracy`, `horizontal_accuracy`, `hacc`;
/// - device: `device`, `device_id`, `user_id` (kept per row in `deviceID`); a row whose
///   device id holds a control character or is not valid UTF-8 is skipped (``DeviceIDText``);
/// - hemisphere: `N/S` and `E/W` columns; suffixes or prefixes (`49.07N`, `W125.76`) are
///   always accepted, and so are fixed-width degrees with leading zeros (`035.208829E`);
/// - validity: a `valid` column whose value is `No fix`, `V` or `invalid` skips the row.
///
/// A header that names the latitude, the longitude or the accuracy in two columns, or one
/// device, date or time column name twice, is refused: which column is meant cannot be told.
/// A row with a non-empty field beyond the header's last is skipped and named (a shifted row,
/// an unquoted delimiter in a field); empty extra fields (a trailing delimiter) are ignored.
///
/// **Numbers** follow ``NumberText/NumberText`` (RFC 8259's grammar: no hex such as `0x2F.6`,
/// no `inf` or `nan`, nothing beyond ±1.8e308) with `.`; a decimal comma is accepted when the
/// delimiter is `;`. An accuracy that is not such a number (`inf`, `1e400`, `n/a`) makes the
/// fix invalid: it is read with a NaN accuracy, which the detector drops as
/// `invalidAccuracy`, and a warning names the line.
///
/// **Times**: RFC 3339 and its common variants (`2019-01-25 20:00:16.178999901`,
/// `2005/05/01 10:12:47`), dates `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYYMMDD` or `YYMMDD`
/// (20YY) with times `HH:MM:SS[.f]` or `HHMMSS`, or Unix epoch numbers: a magnitude below
/// 1e11 is seconds (1e11 s is the year 5138), from 1e11 up it is milliseconds (1e11 ms is
/// 1973-03-03), so every plausible GNSS time is read correctly either way. Times without a
/// zone are read as UTC with one warning per file. Unreadable or implausible times (outside
/// ``TrackReader/plausibleTimes``) leave the fix's time `nil` with a warning.
///
/// **Rows** that give no position (too few fields, latitude or longitude missing, not a number
/// or out of range, a "no fix" validity) are listed in `skippedRows` with their line and reason;
/// the other rows are read. `sourceIndex` is the 0-based data row (records after the header;
/// lines starting with `#` are comments, not rows).
public enum CSVTrackReader {
  /// Reads a whole delimited-text track file.
  ///
  /// - Parameters:
  ///   - data: the file's bytes.
  ///   - fileName: the name used in issues and errors.
  /// - Returns: the fixes with `format` `.csv`, `.plt` or `.dashCamLog`.
  /// - Throws: `TrackReadError.missingColumns` when the header names no latitude or longitude
  ///   column; `.malformed` when the file holds no header line, or when the header names the
  ///   latitude, the longitude or the accuracy in two columns (or one device, date or time
  ///   column name twice).
  /// - Complexity: O(n) in the file size.
  public static func read(data: Data, fileName: String) throws(TrackReadError) -> TrackReadResult {
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
    if header.text.hasPrefix("Geolife trajectory")
      || header.text.hasPrefix("OziExplorer Track Point File")
    {
      return PLTReader.read(
        lines: lines, fileName: fileName, isGeoLife: header.text.hasPrefix("Geolife"),
        warnings: warnings)
    }
    if DelimitedText.trimmingBlanks(header.text).hasPrefix("$V0") {
      return DashCamLogReader.read(
        lines: lines, firstLine: header.line, fileName: fileName, warnings: warnings)
    }
    let delimiter = DelimitedText.detectDelimiter(in: header.text)
    let lineOffset = header.line - 1
    // Records are turned into fixes as they are split: the file's cells are never all held
    // at once (a 12 MB track of short columns took over 100 MB as records).
    var reader: RowReader?
    var columnError: TrackReadError?
    var index = 0
    func handle(_ fields: DelimitedFields, _ recordLine: Int) {
      guard columnError == nil else { return }
      guard reader != nil else {
        let headerFields = (0..<fields.count).map {
          String(DelimitedText.trimmingBlanks(fields.string($0)))
        }
        do throws(TrackReadError) {
          let columns = try CSVColumns(header: headerFields, file: fileName, line: header.line)
          var state = RowReader(
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
      if DelimitedText.trimmingBlanks(utf8: fields[0]).first == UInt8(ascii: "#") { return }
      reader?.read(fields, line: recordLine + lineOffset, index: index)
      index += 1
    }
    // Fields are read from the text's bytes (a native string's are contiguous).
    let body = lines.substring(fromLine: header.line)
    let tokenIssues =
      body.utf8.withContiguousStorageIfAvailable {
        DelimitedText.forEachRecord(utf8: $0, delimiter: delimiter, handle)
      }
      ?? Array(body.utf8).withUnsafeBufferPointer {
        DelimitedText.forEachRecord(utf8: $0, delimiter: delimiter, handle)
      }
    if let columnError { throw columnError }
    guard var state = reader else {
      throw .malformed(
        file: fileName, line: header.line, reason: "the file holds no header line",
        pointsRead: 0)
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
}

// MARK: - Lines

/// Line access to decoded text (LF, CRLF or CR line ends, as ``DelimitedText`` counts them).
struct LineScanner {
  let text: String
  /// UTF-8 offset where each line starts; index 0 is line 1.
  let starts: [Int]

  init(text: String) {
    self.text = text
    var text = text
    self.starts = text.withUTF8 { utf8 in
      var starts = [0]
      var previousCR = false
      for (i, b) in utf8.enumerated() {
        if b == 10 {
          if previousCR {
            starts[starts.count - 1] = i + 1
          } else {
            starts.append(i + 1)
          }
          previousCR = false
        } else if b == 13 {
          starts.append(i + 1)
          previousCR = true
        } else {
          previousCR = false
        }
      }
      return starts
    }
  }

  var lineCount: Int { starts.count }

  /// Line `n` (1-based) without its line end.
  func line(_ n: Int) -> Substring {
    let utf8 = text.utf8
    let start = utf8.index(utf8.startIndex, offsetBy: starts[n - 1])
    var end = n < starts.count ? utf8.index(utf8.startIndex, offsetBy: starts[n]) : utf8.endIndex
    while end > start {
      let before = utf8.index(before: end)
      guard utf8[before] == 10 || utf8[before] == 13 else { break }
      end = before
    }
    return text[start..<end]
  }

  /// The text from the start of line `n` (1-based) to the end, without a copy.
  func substring(fromLine n: Int) -> Substring {
    guard n - 1 < starts.count else { return ""[...] }
    let utf8 = text.utf8
    return text[utf8.index(utf8.startIndex, offsetBy: starts[n - 1])...]
  }

  /// The text from the start of line `n` (1-based) to the end.
  func text(fromLine n: Int) -> String {
    guard n - 1 < starts.count else { return "" }
    let utf8 = text.utf8
    return String(text[utf8.index(utf8.startIndex, offsetBy: starts[n - 1])...])
  }

  /// The first line that is neither blank nor a `#` comment.
  func firstContentLine() -> (line: Int, text: Substring)? {
    for n in 1...lineCount {
      let l = line(n)
      let trimmed = l.drop { $0 == " " || $0 == "\t" }
      if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
      return (n, l)
    }
    return nil
  }
}

// MARK: - Columns

/// Where each known quantity sits in a header.
struct CSVColumns {
  var latitude: Int
  var longitude: Int
  var latitudeHemisphere: Int?
  var longitudeHemisphere: Int?
  var dateTime: Int?
  var date: Int?
  var timeOfDay: Int?
  var utcOffset: Int?
  var accuracy: Int?
  var device: Int?
  var validity: Int?
  /// The header's number of fields: a row with a non-empty field beyond it is skipped (a
  /// shifted row, an unquoted delimiter in a field, whose values cannot be trusted).
  var headerCount = Int.max

  var hasTime: Bool { dateTime != nil || date != nil }

  static let latitudeNames: Set<String> = ["lat", "latitude", "lat_deg", "latitude_deg"]
  static let longitudeNames: Set<String> = [
    "lon", "lng", "long", "longitude", "lon_deg", "lng_deg", "longitude_deg",
  ]
  static let dateTimeNames: Set<String> = [
    "timestamp", "tracked_at", "datetime", "date_time", "date/time", "recorded_at",
    "timestamp_utc", "time",
  ]
  static let dateNames: Set<String> = [
    "date", "lcl_date", "utc_date", "gmt_date", "local_date", "date_utc", "gps_date",
  ]
  static let timeOfDayNames: Set<String> = [
    "time", "lcl_time", "utc_time", "gmt_time", "local_time", "time_utc", "gps_time",
  ]
  static let offsetNames: Set<String> = [
    "utcofst", "utc_offset", "utcoffset", "tz_offset", "timezone_offset",
  ]
  static let accuracyNames: Set<String> = [
    "accuracy", "horizontal_accuracy", "horizontalaccuracy", "hacc", "h_acc", "accuracy_m",
    "horizontal_accuracy_m",
  ]
  static let deviceNames: Set<String> = [
    "device", "device_id", "deviceid", "user_id", "userid", "uid",
  ]
  static let northSouthNames: Set<String> = ["n/s", "ns", "lat_ref", "latitude_ref"]
  static let eastWestNames: Set<String> = ["e/w", "ew", "lon_ref", "longitude_ref"]
  static let validityNames: Set<String> = ["valid", "validity", "fix_status"]

  /// Normalises a header field: lower case, no trailing `(unit)`, `[unit]`, ` N/S` or ` E/W`,
  /// and runs of spaces, tabs and `-` turned into one `_` (`Device ID` -> `device_id`).
  static func key(_ field: String) -> String {
    var s = String(DelimitedText.trimmingBlanks(field.lowercased()))
    for (open, close) in [("(", ")"), ("[", "]")] where s.hasSuffix(close) {
      if let r = s.range(of: open, options: .backwards) {
        s = String(DelimitedText.trimmingBlanks(s[..<r.lowerBound]))
      }
    }
    for suffix in [" n/s", " e/w"] where s.hasSuffix(suffix) && s.count > suffix.count {
      s.removeLast(suffix.count)
    }
    return s.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "-" }).joined(
      separator: "_")
  }

  init(header: [String], file: String, line: Int) throws(TrackReadError) {
    let keys = header.map(Self.key)
    func first(_ names: Set<String>, excluding: Int? = nil) -> Int? {
      keys.indices.first { names.contains(keys[$0]) && $0 != excluding }
    }
    // Two columns for one value (`lat,latitude`, or one device name twice): which one is meant
    // cannot be told, as a JSON Lines fix that gives a member twice is refused.
    for (role, names, sameName) in [
      ("latitude", Self.latitudeNames, false), ("longitude", Self.longitudeNames, false),
      ("accuracy", Self.accuracyNames, false), ("device", Self.deviceNames, true),
      ("time", Self.dateTimeNames.union(Self.dateNames).union(Self.timeOfDayNames), true),
    ] {
      let matches = keys.indices.filter { names.contains(keys[$0]) }
      guard matches.count > 1 else { continue }
      let clash =
        sameName
        ? matches.filter { i in matches.filter { keys[$0] == keys[i] }.count > 1 } : matches
      guard clash.count > 1 else { continue }
      let named = clash.map { "\($0 + 1) (\"\(header[$0])\")" }.joined(separator: ", ")
      throw .malformed(
        file: file, line: line,
        reason: "the header names the \(role) more than once, in columns \(named); "
          + "which one is meant cannot be told", pointsRead: 0)
    }
    let lat = first(Self.latitudeNames)
    let lon = first(Self.longitudeNames)
    guard let lat, let lon else {
      let missing =
        lat == nil && lon == nil ? "latitude or longitude" : lat == nil ? "latitude" : "longitude"
      let expected: String
      switch missing {
      case "latitude": expected = "latitude (lat, latitude)"
      case "longitude": expected = "longitude (lon, lng, long, longitude)"
      default: expected = "latitude (lat, latitude) or longitude (lon, lng, long, longitude)"
      }
      throw .missingColumns(file: file, line: line, expected: expected, header: header)
    }
    latitude = lat
    longitude = lon
    latitudeHemisphere = first(Self.northSouthNames)
    longitudeHemisphere = first(Self.eastWestNames)
    let dateColumn = first(Self.dateNames)
    let timeColumn = first(Self.timeOfDayNames, excluding: dateColumn)
    let combined = keys.indices.first {
      Self.dateTimeNames.contains(keys[$0]) && keys[$0] != "time"
    }
    if let combined {
      dateTime = combined
    } else if let dateColumn, let timeColumn {
      date = dateColumn
      timeOfDay = timeColumn
    } else {
      dateTime = timeColumn ?? dateColumn
    }
    utcOffset = first(Self.offsetNames)
    accuracy = first(Self.accuracyNames)
    device = first(Self.deviceNames)
    validity = first(Self.validityNames)
    headerCount = header.count
  }
}

/// Parses latitude/longitude text with optional hemisphere letters.
enum CoordinateText {
  enum Failure: Error, CustomStringConvertible {
    case empty
    case notANumber(String)
    case badHemisphere(String)
    var description: String {
      switch self {
      case .empty: return "is empty"
      case .notANumber(let s): return "\"\(s)\" is not a number"
      case .badHemisphere(let s): return "hemisphere \"\(s)\" is not N, S, E or W"
      }
    }
  }

  /// `text` may carry the hemisphere letter as a suffix or prefix (`49.07N`, `W125.7`);
  /// `hemisphere` is the value of a separate N/S or E/W column. `negative` flips the sign.
  static func parse(
    _ text: Substring, hemisphere: Substring?, positive: Character, negative: Character,
    decimalComma: Bool
  ) -> Result<Double, Failure> {
    var t = text
    if t.isEmpty { return .failure(.empty) }
    var sign = 1.0
    // The hemisphere letter, either case. ASCII (every coordinate) is compared as a byte, the
    // rest through the Unicode upper case, as it always was.
    let positiveByte = positive.asciiValue
    let negativeByte = negative.asciiValue
    func letter(_ c: Character) -> Double? {
      if let a = c.asciiValue {
        let upper = a >= 0x61 && a <= 0x7A ? a &- 0x20 : a
        if upper == positiveByte { return 1 }
        if upper == negativeByte { return -1 }
        if positiveByte != nil && negativeByte != nil { return nil }
      }
      let u = c.uppercased()
      if u == String(positive) { return 1 }
      if u == String(negative) { return -1 }
      return nil
    }
    if let last = t.last, let s = letter(last) {
      sign = s
      t = t.dropLast()
    } else if let first = t.first, let s = letter(first) {
      sign = s
      t = t.dropFirst()
    }
    if let h = hemisphere, !h.isEmpty {
      guard h.count == 1, let s = letter(h[h.startIndex]) else {
        return .failure(.badHemisphere(String(h)))
      }
      sign = s
    }
    // Fixed-width degrees (`035.208829E`, as Columbus V900 loggers write them): the integer
    // part's leading zeros, which RFC 8259 does not allow, are dropped first.
    let signed = t
    var minus = ""
    if t.first == "-" {
      minus = "-"
      t = t.dropFirst()
    }
    var droppedZeros = false
    while t.first == "0", let next = t.dropFirst().first, next.isASCII, next.isNumber {
      t = t.dropFirst()
      droppedZeros = true
    }
    // Without dropped zeros the number is the text as it stands (no new string).
    let number = droppedZeros ? Substring(minus + t) : signed
    guard let v = DelimitedText.parseDouble(number, decimalComma: decimalComma)
    else {
      return .failure(.notANumber(String(text)))
    }
    return .success(sign < 0 ? -abs(v) : v)
  }
}

// MARK: - PLT

/// GeoLife and OziExplorer `.plt` track files.
///
/// Six header lines, then `lat,lon,code,altitude_ft,days,date,time`, where `days` is a
/// Delphi date (days since 1899-12-30, fraction = time of day). GeoLife writes `date` as
/// `YYYY-MM-DD` and `time` as `HH:MM:SS` in GMT (per the dataset's user guide); those two
/// columns give the time and no zone warning is given. OziExplorer writes a localised date
/// (`13-août-07`) and a `time` column that can be a second behind `days`, and local or UTC
/// time at the user's choice: `days` gives the time, with one no-zone warning. A `days` value
/// with d decimals resolves 86400 / 10^d seconds (8.64 ms for 7 decimals); a time within half
/// that of a whole second is snapped to it, others are rounded to the millisecond.
enum PLTReader {
  static let headerLines = 6
  /// Days from 1899-12-30 (the Delphi/OLE epoch) to 1970-01-01.
  static let delphiEpochOffsetDays = 25_569.0

  static func read(lines: LineScanner, fileName: String, isGeoLife: Bool, warnings: [TrackIssue])
    -> TrackReadResult
  {
    var warnings = warnings
    var skipped: [TrackIssue] = []
    var fixes: [LocationFix] = []
    var noZone = NoZoneTally()
    var timeProblems = TimeProblemTally()
    let body = lines.text(fromLine: headerLines + 1)
    let (records, issues) = DelimitedText.records(in: body, delimiter: UInt8(ascii: ","))
    for (index, record) in records.enumerated() {
      let line = record.line + headerLines
      let f = record.fields.map { String(DelimitedText.trimmingBlanks($0)) }
      func skip(_ message: String) {
        skipped.append(TrackIssue(file: fileName, line: line, message: message + "; row skipped"))
      }
      guard f.count >= 2 else {
        skip("the row has \(f.count) field(s); a PLT point needs latitude and longitude")
        continue
      }
      guard let lat = NumberText.double(f[0]) else {
        skip("latitude \"\(f[0])\" is not a number")
        continue
      }
      guard let lon = NumberText.double(f[1]) else {
        skip("longitude \"\(f[1])\" is not a number")
        continue
      }
      let coordinate: Coordinate
      do {
        coordinate = try Coordinate(latitude: lat, longitude: lon)
      } catch {
        skip("\(error)")
        continue
      }
      var seconds: Double?
      if f.count > 6, let days = RFC3339.parseDate(f[5]), let tod = RFC3339.parseTimeOfDay(f[6]) {
        seconds = Double(days * 86_400) + tod
      } else if f.count > 4 {
        seconds = secondsFromDayNumber(f[4])
      }
      var time: Double?
      if let s = seconds {
        let text = f.count > 6 ? "\(f[4]) \(f[5]) \(f[6])" : f.count > 4 ? f[4] : ""
        switch TrackTime.check(s, hadZone: isGeoLife, text: text) {
        case .time(let t, let hadZone):
          time = t
          if !hadZone { noZone.add(line: line) }
        case .rejected(let problem):
          timeProblems.add(problem, line: line)
        case .empty:
          break
        }
      } else if f.count > 4 {
        timeProblems.add(
          TimeProblem(
            kind: .unreadable, text: f[4],
            message: "the row's time is not readable; the fix has no time"), line: line)
      }
      fixes.append(LocationFix(coordinate: coordinate, time: time, sourceIndex: index))
    }
    for issue in issues {
      skipped.append(
        TrackIssue(file: fileName, line: issue.line + headerLines, message: issue.message))
    }
    warnings += timeProblems.warnings(file: fileName)
    if let w = noZone.warning(file: fileName) { warnings.append(w) }
    return TrackReadResult(fixes: fixes, warnings: warnings, skippedRows: skipped, format: .plt)
  }

  /// Unix seconds from a Delphi day number such as `39307.3279977`, snapped to the whole
  /// second when within the number's resolution, else rounded to the millisecond.
  static func secondsFromDayNumber(_ text: String) -> Double? {
    guard let days = NumberText.double(text) else { return nil }
    let decimals = text.firstIndex(of: ".").map { text.distance(from: $0, to: text.endIndex) - 1 }
    let seconds = (days - delphiEpochOffsetDays) * 86_400
    let halfResolution = 43_200 / pow(10, Double(decimals ?? 0))
    let whole = seconds.rounded()
    if abs(seconds - whole) <= max(halfResolution, 1e-6) { return whole }
    return (seconds * 1000).rounded() / 1000
  }
}

// MARK: - 70mai dash-cam log

/// 70mai dash-cam `GPSData*.txt` logs.
///
/// Lines starting with `$` (`$V02`) mark the start of a recording and are not rows. Each row
/// is `epoch_seconds,status,lat,lon,...`: Unix seconds (UTC as the camera's clock has it),
/// `A` (valid) or `V` (void, written with epoch 0 and `nan` coordinates), then latitude and
/// longitude in degrees. The remaining columns are undocumented and ignored. `V` rows are
/// listed in `skippedRows`.
enum DashCamLogReader {
  static func read(lines: LineScanner, firstLine: Int, fileName: String, warnings: [TrackIssue])
    -> TrackReadResult
  {
    var warnings = warnings
    var skipped: [TrackIssue] = []
    var fixes: [LocationFix] = []
    var timeProblems = TimeProblemTally()
    let body = lines.text(fromLine: firstLine)
    let (records, issues) = DelimitedText.records(in: body, delimiter: UInt8(ascii: ","))
    var index = 0
    for record in records {
      let line = record.line + firstLine - 1
      let f = record.fields.map { String(DelimitedText.trimmingBlanks($0)) }
      if f.count == 1 && f[0].hasPrefix("$") { continue }
      defer { index += 1 }
      func skip(_ message: String) {
        skipped.append(TrackIssue(file: fileName, line: line, message: message + "; row skipped"))
      }
      guard f.count >= 4 else {
        skip("the row has \(f.count) field(s); a log row needs time, status, latitude, longitude")
        continue
      }
      if f[1].uppercased() == "V" {
        skip("status \"V\" (no valid position)")
        continue
      }
      guard let lat = NumberText.double(f[2]), let lon = NumberText.double(f[3]) else {
        skip("latitude \"\(f[2])\" or longitude \"\(f[3])\" is not a number")
        continue
      }
      let coordinate: Coordinate
      do {
        coordinate = try Coordinate(latitude: lat, longitude: lon)
      } catch {
        skip("\(error)")
        continue
      }
      var time: Double?
      if let epoch = RowReader.epochSeconds(f[0]) {
        switch TrackTime.check(epoch, hadZone: true, text: f[0]) {
        case .time(let t, _): time = t
        case .rejected(let problem): timeProblems.add(problem, line: line)
        case .empty: break
        }
      } else {
        timeProblems.add(
          TimeProblem(
            kind: .unreadable, text: f[0],
            message: "time \"\(f[0])\" is not Unix seconds; the fix has no time"), line: line)
      }
      fixes.append(LocationFix(coordinate: coordinate, time: time, sourceIndex: index))
    }
    for issue in issues {
      skipped.append(
        TrackIssue(file: fileName, line: issue.line + firstLine - 1, message: issue.message))
    }
    warnings += timeProblems.warnings(file: fileName)
    return TrackReadResult(
      fixes: fixes, warnings: warnings, skippedRows: skipped, format: .dashCamLog)
  }
}
