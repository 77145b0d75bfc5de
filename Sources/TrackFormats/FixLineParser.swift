import GeofenceGeometry
import NumberText

/// One fix of a live stream, as ``FixLineParser`` reads it.
public struct StreamFix: Sendable {
  /// The line's `device_id`: non-empty.
  public var deviceID: String
  /// Position (WGS84 degrees, validated), time (seconds since the Unix epoch, within
  /// ``TrackReader/plausibleTimes``) and horizontal accuracy in metres (`nil` when absent or
  /// `null`; not range-checked here: the detector drops negative ones as invalid). Its
  /// `deviceID` is `nil` and `sourceIndex` -1.
  public var fix: LocationFix

  public init(deviceID: String, fix: LocationFix) {
    self.deviceID = deviceID
    self.fix = fix
  }
}

/// Reads one JSON Lines fix: a JSON object (RFC 8259) with the members
/// - `device_id`: a non-empty string without control characters (``DeviceIDText``);
/// - `time`: an RFC 3339 date-time (a zone is required) or a number of seconds since the
///   Unix epoch, within ``TrackReader/plausibleTimes`` (1980-01-06, the GPS epoch, to 2100) like
///   every track reader's times: a fix from far in the future would make its device drop every
///   later fix as stale;
/// - `latitude`, `longitude`: numbers in degrees, [-90, 90] and [-180, 180];
/// - `accuracy` (optional, or `null`): horizontal accuracy in metres, a number.
///
/// Other members are skipped, whatever their value (their strings are not checked for valid
/// escapes). A line that repeats one of the five members is refused (which of two device ids
/// or positions is meant cannot be told; RFC 8259 §4 leaves duplicate names to the reader). A number longer than 63 characters is refused
/// (RFC 8259 §9 lets a parser limit numbers; GNSS values need about 20).
///
/// The parser works on the line's UTF-8 bytes. In the steady state it allocates nothing per
/// member: numbers are read in place (``NumberText/NumberText``, the grammar of every reader),
/// times by ``RFC3339/parse(utf8:)``, and the device id becomes a `String` (stored inline,
/// without allocation, up to 15 UTF-8 bytes) only once per line; a string with escapes is
/// decoded on a slower path.
public enum FixLineParser {
  /// Why a line is not a fix. ``description`` names the member.
  public struct Failure: Error, Sendable, CustomStringConvertible {
    public var description: String
  }

  /// Parses one line (without its line end).
  /// - Returns: the fix (``LocationFix/sourceIndex`` is -1), or the reason the line is not one.
  /// - Complexity: O(n) in the line's length.
  public static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<StreamFix, Failure> {
    if let fix = parseCommonForm(line) { return .success(fix) }
    return parseAnyForm(line)
  }

  /// The members in the order producers write them, without spaces:
  /// `{"device_id":"…","time":…,"latitude":…,"longitude":…}`, optionally with
  /// `,"accuracy":…` before the brace, and an ASCII device id without escapes. Any other
  /// line, and a line of that form that is not a fix (an implausible time, a coordinate out
  /// of range), gives nil and is read by ``parseAnyForm(_:)``, so the result is always that
  /// function's.
  /// - Complexity: O(n) in the line's length; allocates nothing for a device id of up to 15
  ///   bytes.
  static func parseCommonForm(_ line: UnsafeBufferPointer<UInt8>) -> StreamFix? {
    var p = Cursor(bytes: line)
    guard p.takeLiteral("{\"device_id\":\"") else { return nil }
    let start = p.i
    var j = start
    while j < line.count {
      let b = line[j]
      if b == UInt8(ascii: "\"") { break }
      // Escapes, control characters and non-ASCII bytes take the general path.
      guard b >= 0x20, b < 0x7F, b != UInt8(ascii: "\\") else { return nil }
      j += 1
    }
    guard j < line.count, j > start else { return nil }
    p.i = j + 1
    guard p.takeLiteral(",\"time\":") else { return nil }
    let time: Double
    if let range = p.stringRange() {
      guard let t = RFC3339.parse(utf8: UnsafeBufferPointer(rebasing: line[range])), t.hadZone
      else { return nil }
      time = t.seconds
    } else {
      guard let n = p.number() else { return nil }
      time = n
    }
    guard p.takeLiteral(",\"latitude\":"), let latitude = p.number(),
      p.takeLiteral(",\"longitude\":"), let longitude = p.number()
    else { return nil }
    var accuracy: Double?
    if p.takeLiteral(",\"accuracy\":") {
      if !p.takeLiteral("null") {
        guard let n = p.number() else { return nil }
        accuracy = n
      }
    }
    guard p.take(UInt8(ascii: "}")), p.atEnd, TrackReader.plausibleTimes.contains(time),
      let coordinate = try? Coordinate(latitude: latitude, longitude: longitude)
    else { return nil }
    return StreamFix(
      deviceID: String(decoding: UnsafeBufferPointer(rebasing: line[start..<j]), as: UTF8.self),
      fix: LocationFix(coordinate: coordinate, time: time, horizontalAccuracy: accuracy))
  }

  /// ``parse(_:)`` for any member order, spacing and escapes.
  static func parseAnyForm(_ line: UnsafeBufferPointer<UInt8>) -> Result<StreamFix, Failure> {
    var p = Cursor(bytes: line)
    p.skipSpace()
    guard p.take(UInt8(ascii: "{")) else {
      return .failure(Failure(description: "not a JSON object"))
    }
    var device: String?
    var time: Double?
    var latitude: Double?
    var longitude: Double?
    var accuracy: Double?
    var first = true
    /// The known members read so far, one bit each (``Key/rawValue``).
    var seen: UInt8 = 0
    while true {
      p.skipSpace()
      if p.take(UInt8(ascii: "}")) { break }
      if !first {
        guard p.take(UInt8(ascii: ",")) else { return fail("expected ',' or '}'", at: p) }
        p.skipSpace()
      }
      first = false
      guard let key = p.stringRange() else { return fail("expected a member name", at: p) }
      p.skipSpace()
      guard p.take(UInt8(ascii: ":")) else { return fail("expected ':'", at: p) }
      p.skipSpace()
      let member = Key(line, key)
      if member != .other {
        let bit: UInt8 = 1 << member.rawValue
        guard seen & bit == 0 else {
          return .failure(Failure(description: "\(member.name) is given twice"))
        }
        seen |= bit
      }
      switch member {
      case .deviceID:
        guard let range = p.stringRange() else {
          return .failure(Failure(description: p.stringProblem("device_id")))
        }
        guard let s = p.decodedString(range) else {
          return .failure(
            Failure(description: "device_id must be valid UTF-8 with valid escapes"))
        }
        guard !s.isEmpty else {
          return .failure(Failure(description: "device_id must be a non-empty string"))
        }
        guard !DeviceIDText.hasControlCharacter(s.utf8) else {
          return .failure(
            Failure(
              description: "device_id must not hold a control character (U+0000-U+001F, U+007F)"))
        }
        device = s
      case .time:
        if let range = p.stringRange() {
          let parsed = UnsafeBufferPointer(rebasing: line[range])
          guard let t = RFC3339.parse(utf8: parsed), t.hadZone else {
            return .failure(
              Failure(description: "time must be an RFC 3339 date-time with a zone offset"))
          }
          time = t.seconds
        } else if let n = p.number() {
          time = n
        } else {
          return .failure(
            Failure(
              description: p.numberProblem("time", expected: "an RFC 3339 string or epoch seconds"))
          )
        }
      case .latitude:
        guard let n = p.number() else {
          return .failure(Failure(description: p.numberProblem("latitude")))
        }
        latitude = n
      case .longitude:
        guard let n = p.number() else {
          return .failure(Failure(description: p.numberProblem("longitude")))
        }
        longitude = n
      case .accuracy:
        if p.takeLiteral("null") {
          accuracy = nil
        } else {
          guard let n = p.number() else {
            return .failure(
              Failure(description: p.numberProblem("accuracy", expected: "a number or null")))
          }
          accuracy = n
        }
      case .other:
        guard p.skipValue(depth: 0) else { return fail("invalid JSON value", at: p) }
      }
    }
    p.skipSpace()
    guard p.atEnd else { return fail("text after the object", at: p) }
    guard let device else { return .failure(Failure(description: "missing device_id")) }
    guard let time else { return .failure(Failure(description: "missing time")) }
    guard let latitude, let longitude else {
      return .failure(Failure(description: "missing latitude or longitude"))
    }
    guard TrackReader.plausibleTimes.contains(time) else {
      return .failure(
        Failure(
          description:
            "time must lie in 1980-01-06 ... 2100-01-01 (epoch seconds \(Int(TrackReader.plausibleTimes.lowerBound)) ... \(Int(TrackReader.plausibleTimes.upperBound)); milliseconds are not seconds)"
        ))
    }
    guard let coordinate = try? Coordinate(latitude: latitude, longitude: longitude) else {
      return .failure(
        Failure(
          description: "latitude must be in [-90, 90] and longitude in [-180, 180] degrees"))
    }
    return .success(
      StreamFix(
        deviceID: device,
        fix: LocationFix(coordinate: coordinate, time: time, horizontalAccuracy: accuracy)))
  }

  private static func fail(_ what: String, at p: Cursor) -> Result<StreamFix, Failure> {
    .failure(Failure(description: "\(what) at column \(p.i + 1)"))
  }

  private enum Key: UInt8 {
    case deviceID, time, latitude, longitude, accuracy, other

    /// The member's name in the line.
    var name: String {
      switch self {
      case .deviceID: return "device_id"
      case .time: return "time"
      case .latitude: return "latitude"
      case .longitude: return "longitude"
      case .accuracy: return "accuracy"
      case .other: return "another member"
      }
    }

    init(_ line: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) {
      func equals(_ s: StaticString) -> Bool {
        guard s.utf8CodeUnitCount == r.count else { return false }
        let p = s.utf8Start
        for k in 0..<r.count where line[r.lowerBound + k] != p[k] { return false }
        return true
      }
      if equals("device_id") {
        self = .deviceID
      } else if equals("time") {
        self = .time
      } else if equals("latitude") {
        self = .latitude
      } else if equals("longitude") {
        self = .longitude
      } else if equals("accuracy") {
        self = .accuracy
      } else {
        self = .other
      }
    }
  }

  private struct Cursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0

    var atEnd: Bool { i >= bytes.count }

    mutating func skipSpace() {
      while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0D {
        i += 1
      }
    }

    mutating func take(_ b: UInt8) -> Bool {
      guard i < bytes.count, bytes[i] == b else { return false }
      i += 1
      return true
    }

    mutating func takeLiteral(_ s: StaticString) -> Bool {
      let n = s.utf8CodeUnitCount
      guard i + n <= bytes.count else { return false }
      for k in 0..<n where bytes[i + k] != s.utf8Start[k] { return false }
      i += n
      return true
    }

    /// The range of a string's contents between its quotes (escapes not decoded), after it.
    mutating func stringRange() -> Range<Int>? {
      guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
      let start = i + 1
      var j = start
      while j < bytes.count {
        let b = bytes[j]
        if b == UInt8(ascii: "\"") {
          i = j + 1
          return start..<j
        }
        if b == UInt8(ascii: "\\") { j += 1 } else if b < 0x20 { return nil }
        j += 1
      }
      return nil
    }

    /// The string of `range` (from ``stringRange()``), escapes decoded; nil for invalid
    /// UTF-8 or escapes.
    func decodedString(_ range: Range<Int>) -> String? {
      let raw = UnsafeBufferPointer(rebasing: bytes[range])
      if !raw.contains(where: { $0 >= 0x80 || $0 == UInt8(ascii: "\\") }) {
        // ASCII is valid UTF-8: no validation pass (the generic one looks up type metadata
        // on every call).
        return String(decoding: raw, as: UTF8.self)
      }
      if !raw.contains(UInt8(ascii: "\\")) {
        return String(validating: raw, as: UTF8.self)
      }
      // Slow path: decode the escapes.
      guard let inner = String(validating: raw, as: UTF8.self) else { return nil }
      return JSONStringUnescape.decode(inner)
    }

    /// A JSON number (RFC 8259 §6 grammar, ``NumberText/NumberText``), as a finite Double.
    mutating func number() -> Double? {
      guard let (value, end) = NumberText.prefix(of: bytes, from: i), end - i < 64,
        case .success(let v) = value
      else { return nil }
      // The number must end where the value does (`01` is not `0` then `1`).
      if end < bytes.count {
        switch bytes[end] {
        case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0D: break
        default: return nil
        }
      }
      i = end
      return v
    }

    /// Why ``number()`` found no number at the cursor, for the message of member `name`
    /// (`expected` says what else the member may hold): a well-formed number out of range or
    /// longer than 63 characters is named as such, anything else as not a number.
    func numberProblem(_ name: String, expected: String = "a number") -> String {
      if let (value, end) = NumberText.prefix(of: bytes, from: i) {
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[i..<end]), as: UTF8.self)
        if case .failure(.outOfRange) = value {
          return "\(name) \(text) \(NumberText.Failure.outOfRange)"
        }
        if end - i >= 64 { return "\(name) has \(end - i) characters; at most 63 are read" }
      }
      return "\(name) must be \(expected)"
    }

    /// Why ``stringRange()`` found no string at the cursor, for member `name`: a string that
    /// holds a raw control character (RFC 8259 §7 wants them escaped) or is never closed is
    /// named as such; anything else is not a string.
    func stringProblem(_ name: String) -> String {
      guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
        return "\(name) must be a string"
      }
      var j = i + 1
      while j < bytes.count {
        let b = bytes[j]
        if b == UInt8(ascii: "\"") { break }
        if b < 0x20 {
          return "\(name) holds a raw control character (U+0000-U+001F must be escaped)"
        }
        j += b == UInt8(ascii: "\\") ? 2 : 1
      }
      return "\(name) is a string that is never closed"
    }

    /// Skips any JSON value.
    mutating func skipValue(depth: Int) -> Bool {
      guard depth < 64, i < bytes.count else { return false }
      switch bytes[i] {
      case UInt8(ascii: "\""): return stringRange() != nil
      case UInt8(ascii: "{"), UInt8(ascii: "["):
        let close = bytes[i] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        let isObject = close == UInt8(ascii: "}")
        i += 1
        skipSpace()
        if take(close) { return true }
        while true {
          skipSpace()
          if isObject {
            guard stringRange() != nil else { return false }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return false }
            skipSpace()
          }
          guard skipValue(depth: depth + 1) else { return false }
          skipSpace()
          if take(close) { return true }
          guard take(UInt8(ascii: ",")) else { return false }
        }
      case UInt8(ascii: "t"): return takeLiteral("true")
      case UInt8(ascii: "f"): return takeLiteral("false")
      case UInt8(ascii: "n"): return takeLiteral("null")
      default: return number() != nil
      }
    }
  }
}

/// Decodes the escapes of a JSON string's contents (RFC 8259 §7), surrogate pairs included.
enum JSONStringUnescape {
  static func decode(_ s: String) -> String? {
    var out = String.UnicodeScalarView()
    var it = s.unicodeScalars.makeIterator()
    func hex4() -> UInt32? {
      var v: UInt32 = 0
      for _ in 0..<4 {
        guard let c = it.next(), c.isASCII, let d = UInt32(String(c), radix: 16) else {
          return nil
        }
        v = v * 16 + d
      }
      return v
    }
    while let c = it.next() {
      guard c == "\\" else {
        out.append(c)
        continue
      }
      guard let e = it.next() else { return nil }
      switch e {
      case "\"": out.append("\"")
      case "\\": out.append("\\")
      case "/": out.append("/")
      case "b": out.append("\u{08}")
      case "f": out.append("\u{0C}")
      case "n": out.append("\n")
      case "r": out.append("\r")
      case "t": out.append("\t")
      case "u":
        guard var v = hex4() else { return nil }
        if (0xD800...0xDBFF).contains(v) {
          guard it.next() == "\\", it.next() == "u", let low = hex4(),
            (0xDC00...0xDFFF).contains(low)
          else { return nil }
          v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(v) else { return nil }
        out.append(scalar)
      default: return nil
      }
    }
    return String(out)
  }
}
