import DelimitedText
import GeofenceGeometry
import NumberText

// MARK: - Rows

/// Turns records into fixes for one file, from the bytes of their fields: a `String` is made
/// only for what a fix keeps (the device id) and for the text of an issue.
struct RowReader {
  let fileName: String
  let columns: CSVColumns
  let decimalComma: Bool
  var fixes: [LocationFix] = []
  var warnings: [TrackIssue] = []
  var skipped: [TrackIssue] = []
  /// The accuracy cell of the last row read when it was not a finite number (the fix then
  /// has a NaN accuracy); `nil` otherwise.
  var unreadableAccuracy: String?
  var noZone = NoZoneTally()
  var timeProblems = TimeProblemTally()

  init(fileName: String, columns: CSVColumns, decimalComma: Bool) {
    self.fileName = fileName
    self.columns = columns
    self.decimalComma = decimalComma
  }

  /// Field `i`, blanks trimmed (``DelimitedText/trimmingBlanks(utf8:)``), or `nil` when the
  /// column is absent or the row too short.
  @inline(__always)
  private func field(_ fields: DelimitedFields, _ i: Int?) -> UnsafeBufferPointer<UInt8>? {
    guard let i, i < fields.count else { return nil }
    return DelimitedText.trimmingBlanks(utf8: fields[i])
  }

  private static func text(_ bytes: UnsafeBufferPointer<UInt8>?) -> String {
    bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
  }

  mutating func read(_ fields: DelimitedFields, line: Int, index: Int) {
    func skip(_ message: String) {
      skipped.append(TrackIssue(file: fileName, line: line, message: message + "; row skipped"))
    }
    if (0..<fields.count).allSatisfy({ DelimitedText.trimmingBlanks(utf8: fields[$0]).isEmpty }) {
      return skip("the row is empty")
    }
    if fields.count > columns.headerCount,
      (columns.headerCount..<fields.count).contains(where: {
        !DelimitedText.trimmingBlanks(utf8: fields[$0]).isEmpty
      })
    {
      return skip("the row has \(fields.count) fields, the header \(columns.headerCount)")
    }
    let needed = max(columns.latitude, columns.longitude) + 1
    guard fields.count >= needed else {
      return skip("the row has \(fields.count) fields; latitude and longitude need \(needed)")
    }
    if let v = field(fields, columns.validity), Self.marksNoFix(v) {
      return skip("the logger marks the row \"\(Self.text(v))\" (no valid position)")
    }
    let lat: Double
    switch CoordinateText.parse(
      utf8: field(fields, columns.latitude), hemisphere: field(fields, columns.latitudeHemisphere),
      positive: "N", negative: "S", decimalComma: decimalComma)
    {
    case .success(let v): lat = v
    case .failure(let why): return skip("latitude \(why)")
    }
    let lon: Double
    switch CoordinateText.parse(
      utf8: field(fields, columns.longitude),
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
      accuracy = try? NumberText.parse(a, decimalComma: decimalComma).get()
      if accuracy == nil {
        // Unreadable is not "no accuracy" (which would count the fix as exact): mark it
        // invalid, as a source does with a negative accuracy.
        accuracy = .nan
        unreadableAccuracy = Self.text(a)
        warnings.append(
          TrackIssue(
            file: fileName, line: line,
            message:
              "accuracy \"\(Self.text(a))\" is not a finite number; the fix is invalid"
              + " (invalidAccuracy)"))
      }
    }
    var device: String?
    if let d = field(fields, columns.device), !d.isEmpty {
      if DeviceIDText.hasControlCharacter(d) {
        return skip("the device id holds a control character (U+0000-U+001F, U+007F)")
      }
      guard let valid = String(validating: d, as: UTF8.self) else {
        return skip("the device id is not valid UTF-8")
      }
      device = valid
    }
    fixes.append(
      LocationFix(
        coordinate: coordinate, time: time, horizontalAccuracy: accuracy, deviceID: device,
        sourceIndex: index))
  }

  /// Whether a validity cell says the row has no position: `No fix`, `nofix`, `V` or
  /// `invalid`, in any case.
  private static func marksNoFix(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
    guard v.count <= 7 else { return false }
    if v.contains(where: { $0 >= 0x80 }) {
      let value = String(decoding: v, as: UTF8.self).lowercased()
      return value == "no fix" || value == "nofix" || value == "v" || value == "invalid"
    }
    var lower: [UInt8] = []
    lower.reserveCapacity(v.count)
    for b in v { lower.append(b >= 0x41 && b <= 0x5A ? b | 0x20 : b) }
    return lower == Array("no fix".utf8) || lower == Array("nofix".utf8)
      || lower == [UInt8(ascii: "v")] || lower == Array("invalid".utf8)
  }

  private mutating func readTime(_ fields: DelimitedFields, line: Int) -> Double? {
    var outcome: TrackTime.Outcome
    let text: () -> String
    if let dateColumn = columns.date, let timeColumn = columns.timeOfDay {
      let d = field(fields, dateColumn)
      let t = field(fields, timeColumn)
      text = { "\(Self.text(d)) \(Self.text(t))" }
      if (d?.isEmpty ?? true) && (t?.isEmpty ?? true) {
        outcome = .empty
      } else if let d, let t, let days = RFC3339.parseDate(utf8: d),
        let tod = RFC3339.parseTimeOfDay(utf8: t)
      {
        outcome = TrackTime.check(Double(days * 86_400) + tod, hadZone: false, text: text())
      } else {
        let written = text()
        outcome = .rejected(
          TimeProblem(
            kind: .unreadable, text: written,
            message: "date and time \"\(written)\" are not readable; the fix has no time"))
      }
    } else if let c = columns.dateTime {
      let bytes = field(fields, c)
      text = { Self.text(bytes) }
      if let bytes, let epoch = Self.epochSeconds(utf8: bytes) {
        outcome = TrackTime.check(epoch, hadZone: true, text: text())
      } else if let bytes {
        outcome = TrackTime.interpret(utf8: bytes, options: .lenient)
      } else {
        outcome = .empty
      }
    } else {
      return nil
    }
    if case .time(let seconds, let hadZone) = outcome, !hadZone {
      if let o = field(fields, columns.utcOffset), !o.isEmpty {
        if let offset = RFC3339.parseOffset(utf8: o) {
          outcome = TrackTime.check(
            seconds - Double(offset), hadZone: true, text: "\(text()) \(Self.text(o))")
        } else {
          warnings.append(
            TrackIssue(
              file: fileName, line: line,
              message: "UTC offset \"\(Self.text(o))\" is not readable; the time is read as UTC"))
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
    var text = text
    return text.withUTF8 { epochSeconds(utf8: $0) }
  }

  /// ``epochSeconds(_:)`` of UTF-8 bytes.
  static func epochSeconds(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Double? {
    guard !bytes.isEmpty else { return nil }
    var sawDigit = false
    for (k, b) in bytes.enumerated() {
      if b >= 48 && b <= 57 {
        sawDigit = true
      } else if !(b == UInt8(ascii: ".") || (k == 0 && b == UInt8(ascii: "-"))) {
        return nil
      }
    }
    guard sawDigit, case .success(let v) = NumberText.parse(bytes) else { return nil }
    return abs(v) >= 1e11 ? v / 1000 : v
  }
}

extension CoordinateText {
  /// ``parse(_:hemisphere:positive:negative:decimalComma:)`` of UTF-8 bytes (`nil` for an
  /// absent field, read as empty). ASCII text (every coordinate a logger writes) is read from
  /// the bytes; other text goes through the `Character` rules of the string form.
  static func parse(
    utf8 text: UnsafeBufferPointer<UInt8>?, hemisphere: UnsafeBufferPointer<UInt8>?,
    positive: Character, negative: Character, decimalComma: Bool
  ) -> Result<Double, Failure> {
    guard let text, !text.isEmpty else { return .failure(.empty) }
    let ascii = !text.contains { $0 >= 0x80 } && !(hemisphere?.contains { $0 >= 0x80 } ?? false)
    guard ascii, let positiveByte = positive.asciiValue, let negativeByte = negative.asciiValue
    else {
      let string = String(decoding: text, as: UTF8.self)
      let h = hemisphere.map { String(decoding: $0, as: UTF8.self)[...] }
      return parse(
        string[...], hemisphere: h, positive: positive, negative: negative,
        decimalComma: decimalComma)
    }
    func letter(_ b: UInt8) -> Double? {
      let upper = b >= 0x61 && b <= 0x7A ? b &- 0x20 : b
      if upper == positiveByte { return 1 }
      if upper == negativeByte { return -1 }
      return nil
    }
    var start = 0
    var end = text.count
    var sign = 1.0
    if let s = letter(text[end - 1]) {
      sign = s
      end -= 1
    } else if let s = letter(text[0]) {
      sign = s
      start = 1
    }
    if let h = hemisphere, !h.isEmpty {
      // One character: one byte, or CR LF (one `Character`, and no letter).
      guard h.count == 1, let s = letter(h[0]) else {
        return .failure(.badHemisphere(String(decoding: h, as: UTF8.self)))
      }
      sign = s
    }
    // Fixed-width degrees (`035.208829E`): the integer part's leading zeros, which RFC 8259
    // does not allow, are dropped first; the minus sign is then applied to the rest.
    var digits = start
    let minus = digits < end && text[digits] == UInt8(ascii: "-")
    if minus { digits += 1 }
    var droppedZeros = false
    while digits + 1 < end, text[digits] == UInt8(ascii: "0"), text[digits + 1] &- 0x30 < 10 {
      digits += 1
      droppedZeros = true
    }
    let numberStart = droppedZeros ? digits : start
    let number = DelimitedText.trimmingSpacesAndTabs(
      UnsafeBufferPointer(rebasing: text[numberStart..<end]))
    guard case .success(var v) = NumberText.parse(number, decimalComma: decimalComma) else {
      return .failure(.notANumber(String(decoding: text, as: UTF8.self)))
    }
    if droppedZeros && minus { v = -v }
    return .success(sign < 0 ? -abs(v) : v)
  }
}
