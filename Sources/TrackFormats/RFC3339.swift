/// RFC 3339 / xsd:dateTime timestamps as seconds since the Unix epoch (UTC), without
/// `DateFormatter`.
///
/// Calendar arithmetic uses the proleptic Gregorian calendar and H. Hinnant's
/// `days_from_civil` / `civil_from_days` algorithms
/// (<https://howardhinnant.github.io/date_algorithms.html>): exact integer arithmetic,
/// no tables, no allocation.
public enum RFC3339 {
  /// Parses an RFC 3339 / xsd:dateTime timestamp.
  ///
  /// Accepted spellings (surrounding ASCII spaces are ignored):
  /// - `YYYY-MM-DDTHH:MM:SS`, with `T`, `t` or one or more spaces between date and time;
  /// - seconds may be omitted (`HH:MM`) and may carry a fraction of any length after `.` or
  ///   `,` (digits beyond the 17th are ignored);
  /// - zone `Z`, `z`, `±HH:MM`, `±HHMM` or `±HH`, optionally after spaces, or `UTC`/`GMT`;
  /// - no zone: read as UTC and `hadZone` is `false` (the caller decides whether to warn).
  ///
  /// Boundary rules: month 1–12, day within the month (leap years per the Gregorian rule),
  /// hour 0–23, minute 0–59, second 0–60 (a leap second `:60` counts as the first second of
  /// the next minute), zone offset hours 0–23 and minutes 0–59. Years are four digits,
  /// 0000–9999.
  ///
  /// - Parameter text: the timestamp.
  /// - Returns: seconds since 1970-01-01T00:00:00Z and whether a zone was given, or `nil`
  ///   when `text` is not such a timestamp.
  /// - Complexity: O(n) in the length of `text`; allocates nothing for native strings.
  public static func parse(_ text: some StringProtocol) -> (seconds: Double, hadZone: Bool)? {
    parse(text, options: .rfc3339)
  }

  /// ``parse(_:)`` over UTF-8 bytes, without making a string (the stream reader's hot path).
  public static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>) -> (
    seconds: Double, hadZone: Bool
  )? {
    parse(bytes: bytes, options: .rfc3339)
  }

  /// Formats `seconds` as RFC 3339 in UTC with milliseconds, e.g. `2019-01-25T20:00:16.179Z`.
  ///
  /// The value is rounded to the nearest millisecond, except in the last half millisecond of
  /// 9999, which is written as 9999-12-31T23:59:59.999Z (rounding would give year 10000).
  /// - Parameter seconds: seconds since the Unix epoch; finite and within years 0000–9999
  ///   (-62_167_219_200 ..< 253_402_300_800).
  /// - Precondition: `seconds` is in that range.
  /// - Complexity: O(1).
  public static func format(_ seconds: Double) -> String {
    var out = [UInt8]()
    out.reserveCapacity(24)
    append(seconds, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends ``format(_:)``'s 24 bytes of text for `seconds` to `out` (the event encoder's
  /// path, which makes no `String`).
  /// - Precondition: `seconds` is finite and within years 0000–9999, as for ``format(_:)``.
  /// - Complexity: O(1); allocates only when `out` grows.
  public static func append(_ seconds: Double, to out: inout [UInt8]) {
    // The 24 bytes are made on the stack and appended in one copy.
    var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &text) { t in
      let bytes = t.bindMemory(to: UInt8.self)
      write(seconds, into: bytes)
      out.append(contentsOf: bytes)
    }
  }

  /// The number of bytes ``write(_:into:)`` writes: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
  public static let byteCount = 24

  /// Writes ``format(_:)``'s 24 bytes of text for `seconds` into `out` (a writer that sized
  /// its buffer in advance).
  /// - Precondition: `seconds` is finite and within years 0000–9999, as for ``format(_:)``;
  ///   `out` holds at least ``byteCount`` bytes.
  /// - Complexity: O(1); no allocation.
  public static func write(_ seconds: Double, into t: UnsafeMutableBufferPointer<UInt8>) {
    precondition(
      seconds.isFinite && seconds >= -62_167_219_200 && seconds < 253_402_300_800,
      "RFC3339.format: \(seconds) s is outside years 0000-9999")
    precondition(t.count >= byteCount)
    // The last representable millisecond: rounding up from there would reach year 10000,
    // which four digits cannot hold.
    let totalMillis = min(Int64((seconds * 1000).rounded()), 253_402_300_799_999)
    let millisPerDay: Int64 = 86_400_000
    var days = totalMillis / millisPerDay
    var millisOfDay = totalMillis % millisPerDay
    if millisOfDay < 0 {
      millisOfDay += millisPerDay
      days -= 1
    }
    let (y, m, d) = civil(fromDays: days)
    let secondOfDay = millisOfDay / 1000
    func put(_ value: Int64, width: Int, at offset: Int) {
      var v = value
      for k in stride(from: offset + width - 1, through: offset, by: -1) {
        t[k] = UInt8(ascii: "0") + UInt8(v % 10)
        v /= 10
      }
    }
    put(y, width: 4, at: 0)
    t[4] = UInt8(ascii: "-")
    put(m, width: 2, at: 5)
    t[7] = UInt8(ascii: "-")
    put(d, width: 2, at: 8)
    t[10] = UInt8(ascii: "T")
    put(secondOfDay / 3600, width: 2, at: 11)
    t[13] = UInt8(ascii: ":")
    put(secondOfDay / 60 % 60, width: 2, at: 14)
    t[16] = UInt8(ascii: ":")
    put(secondOfDay % 60, width: 2, at: 17)
    t[19] = UInt8(ascii: ".")
    put(millisOfDay % 1000, width: 3, at: 20)
    t[23] = UInt8(ascii: "Z")
  }

  // MARK: - Calendar

  /// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d` (Hinnant's
  /// `days_from_civil`). `m` is 1–12, `d` 1–31; no range check.
  @inlinable
  public static func days(fromCivilYear y: Int64, month m: Int64, day d: Int64) -> Int64 {
    let y = m <= 2 ? y - 1 : y
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400  // [0, 399]
    let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1  // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy  // [0, 146096]
    return era * 146_097 + doe - 719_468
  }

  /// The proleptic Gregorian date of `days` since 1970-01-01 (Hinnant's `civil_from_days`).
  @inlinable
  public static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097  // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365  // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)  // [0, 365]
    let mp = (5 * doy + 2) / 153  // [0, 11]
    let d = doy - (153 * mp + 2) / 5 + 1  // [1, 31]
    let m = mp < 10 ? mp + 3 : mp - 9  // [1, 12]
    return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
  }

  /// Number of days in month `m` (1–12) of year `y` (Gregorian leap-year rule).
  @inlinable
  public static func daysInMonth(year y: Int64, month m: Int64) -> Int64 {
    switch m {
    case 2: return (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }
}

// MARK: - Lenient parsing shared with the CSV reader

extension RFC3339 {
  /// Spelling variations beyond RFC 3339 that delimited-text loggers write.
  struct Options {
    /// Accept `/` as the date separator (`2005/05/01`), and one-digit months and days.
    var lenientDate: Bool

    static let rfc3339 = Options(lenientDate: false)
    static let lenient = Options(lenientDate: true)
  }

  static func parse(_ text: some StringProtocol, options: Options) -> (
    seconds: Double, hadZone: Bool
  )? {
    if let r = text.utf8.withContiguousStorageIfAvailable({ parse(bytes: $0, options: options) }) {
      return r
    }
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBufferPointer { parse(bytes: $0, options: options) }
  }

  /// Parses a time of day `HH:MM[:SS[.fraction]]` or `HHMMSS[.fraction]` into seconds after
  /// midnight, or `nil`.
  static func parseTimeOfDay(_ text: some StringProtocol) -> Double? {
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBufferPointer { parseTimeOfDay(utf8: $0) }
  }

  /// ``parseTimeOfDay(_:)`` of UTF-8 bytes.
  static func parseTimeOfDay(utf8 buf: UnsafeBufferPointer<UInt8>) -> Double? {
    var c = ByteCursor(buf)
    c.skipSpaces()
    guard let t = c.timeOfDay(compactAllowed: true) else { return nil }
    c.skipSpaces()
    return c.atEnd ? t : nil
  }

  /// Parses a zone offset `±HH:MM`, `±HHMM`, `±HH`, `Z` or `UTC` into seconds east of UTC.
  static func parseOffset(_ text: some StringProtocol) -> Int64? {
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBufferPointer { parseOffset(utf8: $0) }
  }

  /// ``parseOffset(_:)`` of UTF-8 bytes.
  static func parseOffset(utf8 buf: UnsafeBufferPointer<UInt8>) -> Int64? {
    var c = ByteCursor(buf)
    c.skipSpaces()
    guard let z = c.zone() else { return nil }
    c.skipSpaces()
    return c.atEnd ? z : nil
  }

  /// Parses a calendar date `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYYMMDD` or `YYMMDD` (years
  /// 2000–2099) into days since 1970-01-01, or `nil`.
  static func parseDate(_ text: some StringProtocol) -> Int64? {
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBufferPointer { parseDate(utf8: $0) }
  }

  /// ``parseDate(_:)`` of UTF-8 bytes.
  static func parseDate(utf8 buf: UnsafeBufferPointer<UInt8>) -> Int64? {
    var c = ByteCursor(buf)
    c.skipSpaces()
    let start = c.i
    var digits = 0
    while let b = c.peek(), b >= 48 && b <= 57 {
      digits += 1
      c.i += 1
    }
    c.i = start
    let days: Int64?
    if digits == 6 || digits == 8 {
      guard let y = c.digits(digits == 6 ? 2 : 4), let m = c.digits(2), let d = c.digits(2)
      else { return nil }
      days = validDays(year: digits == 6 ? 2000 + y : y, month: m, day: d)
    } else {
      days = c.date(lenient: true)
    }
    c.skipSpaces()
    return c.atEnd ? days : nil
  }

  static func validDays(year y: Int64, month m: Int64, day d: Int64) -> Int64? {
    guard (1...12).contains(m), d >= 1, d <= daysInMonth(year: y, month: m) else { return nil }
    return days(fromCivilYear: y, month: m, day: d)
  }

  static func parse(bytes: UnsafeBufferPointer<UInt8>, options: Options) -> (
    seconds: Double, hadZone: Bool
  )? {
    var c = ByteCursor(bytes)
    c.skipSpaces()
    guard let days = c.date(lenient: options.lenientDate) else { return nil }
    guard let sep = c.peek() else { return nil }
    switch sep {
    case UInt8(ascii: "T"), UInt8(ascii: "t"): c.i += 1
    case UInt8(ascii: " "): c.skipSpaces()
    default: return nil
    }
    guard let timeOfDay = c.timeOfDay(compactAllowed: false) else { return nil }
    c.skipSpaces()
    var hadZone = false
    var offset: Int64 = 0
    if !c.atEnd {
      guard let z = c.zone() else { return nil }
      hadZone = true
      offset = z
      c.skipSpaces()
      guard c.atEnd else { return nil }
    }
    return (Double(days * 86_400 - offset) + timeOfDay, hadZone)
  }
}

/// A read position in ASCII bytes, for the timestamp parsers.
struct ByteCursor {
  let b: UnsafeBufferPointer<UInt8>
  var i = 0

  init(_ b: UnsafeBufferPointer<UInt8>) { self.b = b }

  var atEnd: Bool { i >= b.count }
  func peek() -> UInt8? { i < b.count ? b[i] : nil }

  mutating func skipSpaces() {
    while i < b.count, b[i] == 32 || b[i] == 9 { i += 1 }
  }

  mutating func take(_ byte: UInt8) -> Bool {
    guard i < b.count, b[i] == byte else { return false }
    i += 1
    return true
  }

  /// Exactly `n` decimal digits.
  mutating func digits(_ n: Int) -> Int64? {
    guard i + n <= b.count else { return nil }
    var v: Int64 = 0
    for k in i..<(i + n) {
      let d = b[k] &- 48
      guard d < 10 else { return nil }
      v = v * 10 + Int64(d)
    }
    i += n
    return v
  }

  /// One to `max` decimal digits.
  mutating func digits(upTo max: Int) -> Int64? {
    var v: Int64 = 0
    var n = 0
    while n < max, i < b.count, b[i] &- 48 < 10 {
      v = v * 10 + Int64(b[i] &- 48)
      i += 1
      n += 1
    }
    return n == 0 ? nil : v
  }

  /// `YYYY-MM-DD` (or, when lenient, `YYYY/M/D` with `-` or `/`) as days since 1970-01-01.
  mutating func date(lenient: Bool) -> Int64? {
    guard let y = digits(4), let sep = peek(),
      sep == UInt8(ascii: "-") || (lenient && sep == UInt8(ascii: "/"))
    else { return nil }
    i += 1
    guard let m = lenient ? digits(upTo: 2) : digits(2), take(sep),
      let d = lenient ? digits(upTo: 2) : digits(2)
    else { return nil }
    return RFC3339.validDays(year: y, month: m, day: d)
  }

  /// `HH:MM[:SS[.fraction]]`, or `HHMMSS[.fraction]` when `compactAllowed`, as seconds after
  /// midnight. A leap second (`:60`) is kept as 60.
  mutating func timeOfDay(compactAllowed: Bool) -> Double? {
    guard let h = digits(2) else { return nil }
    var m: Int64
    var s: Int64 = 0
    var hasSeconds = false
    if take(UInt8(ascii: ":")) {
      guard let mm = digits(2) else { return nil }
      m = mm
      if take(UInt8(ascii: ":")) {
        guard let ss = digits(2) else { return nil }
        s = ss
        hasSeconds = true
      }
    } else if compactAllowed, let mm = digits(2), let ss = digits(2) {
      m = mm
      s = ss
      hasSeconds = true
    } else {
      return nil
    }
    guard h <= 23, m <= 59, s <= 60 else { return nil }
    var fraction = 0.0
    if hasSeconds, let p = peek(), p == UInt8(ascii: ".") || p == UInt8(ascii: ",") {
      i += 1
      var v: Int64 = 0
      var scale: Double = 1
      var n = 0
      while i < b.count, b[i] &- 48 < 10 {
        if n < 17 {
          v = v * 10 + Int64(b[i] &- 48)
          scale *= 10
        }
        n += 1
        i += 1
      }
      guard n > 0 else { return nil }
      fraction = Double(v) / scale
    }
    return Double(h * 3600 + m * 60 + s) + fraction
  }

  /// `Z`, `z`, `UTC`, `GMT`, `±HH:MM`, `±HHMM` or `±HH` as seconds east of UTC.
  mutating func zone() -> Int64? {
    guard let p = peek() else { return nil }
    if p == UInt8(ascii: "Z") || p == UInt8(ascii: "z") {
      i += 1
      return 0
    }
    if i + 3 <= b.count {
      let word = (b[i] | 0x20, b[i + 1] | 0x20, b[i + 2] | 0x20)
      if word == (117, 116, 99) || word == (103, 109, 116) {  // "utc", "gmt"
        i += 3
        return 0
      }
    }
    guard p == UInt8(ascii: "+") || p == UInt8(ascii: "-") else { return nil }
    i += 1
    guard let h = digits(2) else { return nil }
    var m: Int64 = 0
    if take(UInt8(ascii: ":")) {
      guard let mm = digits(2) else { return nil }
      m = mm
    } else if let mm = digits(2) {
      m = mm
    }
    guard h <= 23, m <= 59 else { return nil }
    let offset = h * 3600 + m * 60
    return p == UInt8(ascii: "-") ? -offset : offset
  }
}
