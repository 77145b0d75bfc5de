import GeofenceDefinitions
import GeofenceTransitions
import JSONText
import NumberText

/// The one JSON form of a ``DeviceCheckpoint``, written and read without `Codable`.
///
/// A stream with many devices saves every changed device after each batch and restores each
/// evicted one at its next fix, so this text is written and read once per device and batch;
/// Foundation's `JSONEncoder` and `JSONDecoder` spent most of such a run. The text is the
/// same as theirs with sorted keys and the ``DeviceCheckpoint/makeEncoder()`` strategy:
/// members sorted by key, optionals that are `nil` left out, whole numbers below 2^53 without
/// a fraction, other numbers in Swift's shortest round-trip form, and the non-finite times as
/// the strings `"inf"`, `"-inf"` and `"nan"`. Strings are escaped by ``JSONText`` (which
/// leaves `/` as it is, where `JSONEncoder` writes `\/`; both read back the same).
extension DeviceCheckpoint {
  /// Appends the checkpoint's JSON object to `out`.
  /// - Complexity: O(m + p) for m visits and p pending enters; allocates only when `out`
  ///   grows.
  func appendJSON(to out: inout [UInt8]) {
    var w = CheckpointJSONWriter(out: out)
    out = []
    w.open()
    w.key("detector")
    Self.appendDetector(detector, to: &w)
    w.key("gate")
    w.open()
    w.member("gapCount", gate.gapCount)
    if let gapStart = gate.gapStart { w.member("gapStart", gapStart) }
    w.member("hasMonitored", gate.hasMonitored)
    w.member("notAuthorizedCount", gate.notAuthorizedCount)
    w.close()
    if let lastSeenLatitude { w.member("lastSeenLatitude", lastSeenLatitude) }
    if let lastSeenLongitude { w.member("lastSeenLongitude", lastSeenLongitude) }
    if let lastSeenTime { w.member("lastSeenTime", lastSeenTime) }
    w.close()
    out = w.out
  }

  /// The checkpoint's JSON text (see ``appendJSON(to:)``).
  var jsonText: String {
    var out: [UInt8] = []
    out.reserveCapacity(512)
    appendJSON(to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  private static func appendDetector(_ d: DetectorCheckpoint, to w: inout CheckpointJSONWriter) {
    w.open()
    w.member("acceptedFixCount", d.acceptedFixCount)
    if let candidate = d.candidate {
      w.key("candidate")
      appendAnchor(candidate, to: &w)
    }
    w.member("candidateCount", d.candidateCount)
    w.key("dropCounts")
    w.openArray()
    for c in d.dropCounts {
      w.comma()
      w.integer(c)
    }
    w.closeArray()
    if let lastAccepted = d.lastAccepted {
      w.key("lastAccepted")
      appendAnchor(lastAccepted, to: &w)
    }
    w.member("lastFilteredTime", d.lastFilteredTime)
    w.key("pendingEnters")
    w.openArray()
    for p in d.pendingEnters {
      w.comma()
      w.open()
      w.member("count", p.count)
      w.member("regionID", p.regionID)
      w.member("since", p.since)
      w.close()
    }
    w.closeArray()
    w.member("speedReferenceTime", d.speedReferenceTime)
    if let stayStart = d.stayStart {
      w.key("stayStart")
      appendAnchor(stayStart, to: &w)
    }
    w.member("usesTime", d.usesTime)
    w.key("visits")
    w.openArray()
    for v in d.visits {
      w.comma()
      w.open()
      w.member("dwellEmitted", v.dwellEmitted)
      w.member("enterTime", v.enterTime)
      w.member("exitCount", v.exitCount)
      w.member("exitSince", v.exitSince)
      w.member("regionID", v.regionID)
      w.close()
    }
    w.closeArray()
    w.close()
  }

  private static func appendAnchor(_ a: DetectorCheckpoint.Anchor, to w: inout CheckpointJSONWriter)
  {
    w.open()
    w.member("accuracy", a.accuracy)
    w.member("latitude", a.latitude)
    w.member("longitude", a.longitude)
    w.member("time", a.time)
    w.close()
  }

  /// Reads a checkpoint from the JSON of ``appendJSON(to:)`` (or of `JSONEncoder` with
  /// ``makeEncoder()``): members in any order, unknown members ignored, as `JSONDecoder` does.
  /// - Throws: ``CheckpointJSONError`` naming the first member that is missing or has the
  ///   wrong type (an integer member must be a whole number, a time a number or one of the
  ///   three strings).
  /// - Complexity: O(n) in the text's size.
  init(json bytes: [UInt8]) throws(CheckpointJSONError) {
    // The text this module writes is read in one pass, in its member order; anything else
    // (another order, an escaped string, spaces) by the general reader.
    if let fast = bytes.withUnsafeBufferPointer({ b in
      var r = CheckpointFastReader(bytes: b)
      return r.checkpoint()
    }) {
      self = fast
      return
    }
    let value: JSONValue
    do { value = try JSONDocument.parse(bytes) } catch {
      throw CheckpointJSONError(message: "\(error)")
    }
    try self.init(jsonValue: value)
  }

  /// Reads a checkpoint from a parsed JSON object (see ``init(json:)``).
  init(jsonValue value: JSONValue) throws(CheckpointJSONError) {
    let o = try CheckpointJSONObject(value, path: "checkpoint")
    let g = try CheckpointJSONObject(o.required("gate"), path: "gate")
    self.init(
      gate: GateCheckpoint(
        hasMonitored: try g.bool("hasMonitored"), gapStart: try g.optionalDouble("gapStart"),
        gapCount: try g.int("gapCount"), notAuthorizedCount: try g.int("notAuthorizedCount")),
      detector: try Self.detector(o.required("detector")),
      lastSeenTime: try o.optionalDouble("lastSeenTime"),
      lastSeenLatitude: try o.optionalDouble("lastSeenLatitude"),
      lastSeenLongitude: try o.optionalDouble("lastSeenLongitude"))
  }

  private static func detector(_ value: JSONValue) throws(CheckpointJSONError)
    -> DetectorCheckpoint
  {
    let d = try CheckpointJSONObject(value, path: "detector")
    func anchor(_ key: String) throws(CheckpointJSONError) -> DetectorCheckpoint.Anchor? {
      guard let v = d.members[key], v != .null else { return nil }
      let a = try CheckpointJSONObject(v, path: key)
      return .init(
        latitude: try a.double("latitude"), longitude: try a.double("longitude"),
        time: try a.double("time"), accuracy: try a.double("accuracy"))
    }
    var visits: [DetectorCheckpoint.Visit] = []
    for (k, v) in try d.array("visits").enumerated() {
      let o = try CheckpointJSONObject(v, path: "visits[\(k)]")
      visits.append(
        .init(
          regionID: try o.string("regionID"), enterTime: try o.double("enterTime"),
          dwellEmitted: try o.bool("dwellEmitted"), exitCount: try o.int("exitCount"),
          exitSince: try o.double("exitSince")))
    }
    var pending: [DetectorCheckpoint.PendingEnter] = []
    for (k, v) in try d.array("pendingEnters").enumerated() {
      let o = try CheckpointJSONObject(v, path: "pendingEnters[\(k)]")
      pending.append(
        .init(
          regionID: try o.string("regionID"), count: try o.int("count"),
          since: try o.double("since")))
    }
    var drops: [Int] = []
    for (k, v) in try d.array("dropCounts").enumerated() {
      drops.append(try CheckpointJSONObject.int(v, path: "dropCounts[\(k)]"))
    }
    return DetectorCheckpoint(
      usesTime: try d.bool("usesTime"), visits: visits, pendingEnters: pending,
      lastAccepted: try anchor("lastAccepted"),
      speedReferenceTime: try d.double("speedReferenceTime"),
      lastFilteredTime: try d.double("lastFilteredTime"), candidate: try anchor("candidate"),
      candidateCount: try d.int("candidateCount"), acceptedFixCount: try d.int("acceptedFixCount"),
      stayStart: try anchor("stayStart"), dropCounts: drops)
  }
}

/// Why a checkpoint's JSON could not be read.
struct CheckpointJSONError: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}

/// The members of one JSON object of a checkpoint, read by name and type.
private struct CheckpointJSONObject {
  let members: [String: JSONValue]
  let path: String

  init(_ value: JSONValue, path: String) throws(CheckpointJSONError) {
    guard case .object(let m) = value else {
      throw CheckpointJSONError(message: "\(path): not an object")
    }
    members = m
    self.path = path
  }

  func required(_ key: String) throws(CheckpointJSONError) -> JSONValue {
    guard let v = members[key], v != .null else {
      throw CheckpointJSONError(message: "\(path).\(key): missing")
    }
    return v
  }

  func bool(_ key: String) throws(CheckpointJSONError) -> Bool {
    guard case .bool(let b) = try required(key) else {
      throw CheckpointJSONError(message: "\(path).\(key): not a boolean")
    }
    return b
  }

  func string(_ key: String) throws(CheckpointJSONError) -> String {
    guard case .string(let s) = try required(key) else {
      throw CheckpointJSONError(message: "\(path).\(key): not a string")
    }
    return s
  }

  func array(_ key: String) throws(CheckpointJSONError) -> [JSONValue] {
    guard case .array(let a) = try required(key) else {
      throw CheckpointJSONError(message: "\(path).\(key): not an array")
    }
    return a
  }

  func int(_ key: String) throws(CheckpointJSONError) -> Int {
    try Self.int(required(key), path: "\(path).\(key)")
  }

  /// A whole number that an `Int` holds exactly (below 2^53 in magnitude).
  static func int(_ v: JSONValue, path: String) throws(CheckpointJSONError) -> Int {
    guard case .number(let x) = v, x == x.rounded(), abs(x) < 9_007_199_254_740_992 else {
      throw CheckpointJSONError(message: "\(path): not a whole number")
    }
    return Int(x)
  }

  func double(_ key: String) throws(CheckpointJSONError) -> Double {
    try Self.double(required(key), path: "\(path).\(key)")
  }

  func optionalDouble(_ key: String) throws(CheckpointJSONError) -> Double? {
    guard let v = members[key], v != .null else { return nil }
    return try Self.double(v, path: "\(path).\(key)")
  }

  /// A number, or `"inf"`, `"-inf"`, `"nan"` (the ``DeviceCheckpoint/makeEncoder()`` strategy).
  static func double(_ v: JSONValue, path: String) throws(CheckpointJSONError) -> Double {
    switch v {
    case .number(let x): return x
    case .string("inf"): return .infinity
    case .string("-inf"): return -.infinity
    case .string("nan"): return .nan
    default: throw CheckpointJSONError(message: "\(path): not a number")
    }
  }
}

/// Writes one checkpoint object: members in the order given (the caller sorts them), commas
/// between them.
private struct CheckpointJSONWriter {
  var out: [UInt8]
  /// Whether the innermost open object or array has a member yet.
  var needsComma = false

  mutating func open() {
    out.append(UInt8(ascii: "{"))
    needsComma = false
  }

  mutating func close() {
    out.append(UInt8(ascii: "}"))
    needsComma = true
  }

  mutating func openArray() {
    out.append(UInt8(ascii: "["))
    needsComma = false
  }

  mutating func closeArray() {
    out.append(UInt8(ascii: "]"))
    needsComma = true
  }

  mutating func comma() {
    if needsComma { out.append(UInt8(ascii: ",")) }
    needsComma = true
  }

  mutating func key(_ name: StaticString) {
    comma()
    out.append(UInt8(ascii: "\""))
    JSONText.append(name, to: &out)
    out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    needsComma = false
  }

  mutating func integer(_ n: Int) { JSONText.appendInteger(Int64(n), to: &out) }

  mutating func member(_ name: StaticString, _ n: Int) {
    key(name)
    integer(n)
    needsComma = true
  }

  mutating func member(_ name: StaticString, _ b: Bool) {
    key(name)
    JSONText.append(b ? "true" : "false", to: &out)
    needsComma = true
  }

  mutating func member(_ name: StaticString, _ s: String) {
    key(name)
    JSONText.appendQuoted(s, to: &out)
    needsComma = true
  }

  mutating func member(_ name: StaticString, _ x: Double) {
    key(name)
    if x.isNaN {
      JSONText.append("\"nan\"", to: &out)
    } else if x == .infinity {
      JSONText.append("\"inf\"", to: &out)
    } else if x == -.infinity {
      JSONText.append("\"-inf\"", to: &out)
    } else {
      JSONText.appendNumber(x, to: &out)
    }
    needsComma = true
  }
}

/// Reads exactly the text of ``DeviceCheckpoint/appendJSON(to:)``: its member order, no
/// whitespace, strings without escapes. Returns `nil` at the first difference, and the
/// caller reads the text with the general reader instead, so that this is only a shortcut.
struct CheckpointFastReader {
  let bytes: UnsafeBufferPointer<UInt8>
  var i = 0

  init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

  mutating func checkpoint() -> DeviceCheckpoint? {
    guard take("{\"detector\":"), let detector = detector(), take(",\"gate\":{\"gapCount\":"),
      let gapCount = integer()
    else { return nil }
    var gapStart: Double?
    if take(",\"gapStart\":") {
      guard let x = time() else { return nil }
      gapStart = x
    }
    guard take(",\"hasMonitored\":"), let hasMonitored = bool(),
      take(",\"notAuthorizedCount\":"), let notAuthorized = integer(), take("}")
    else { return nil }
    guard case .some(let latitude) = optionalTime(",\"lastSeenLatitude\":"),
      case .some(let longitude) = optionalTime(",\"lastSeenLongitude\":"),
      case .some(let seen) = optionalTime(",\"lastSeenTime\":"), take("}"), i == bytes.count
    else { return nil }
    return DeviceCheckpoint(
      gate: GateCheckpoint(
        hasMonitored: hasMonitored, gapStart: gapStart, gapCount: gapCount,
        notAuthorizedCount: notAuthorized),
      detector: detector, lastSeenTime: seen, lastSeenLatitude: latitude,
      lastSeenLongitude: longitude)
  }

  mutating func detector() -> DetectorCheckpoint? {
    guard take("{\"acceptedFixCount\":"), let accepted = integer(),
      case .some(let candidate) = optionalAnchor(",\"candidate\":"),
      take(",\"candidateCount\":"), let candidateCount = integer(),
      take(",\"dropCounts\":[")
    else { return nil }
    var drops: [Int] = []
    drops.reserveCapacity(8)
    if !take("]") {
      repeat {
        guard let n = integer() else { return nil }
        drops.append(n)
      } while take(",")
      guard take("]") else { return nil }
    }
    guard case .some(let lastAccepted) = optionalAnchor(",\"lastAccepted\":"),
      take(",\"lastFilteredTime\":"), let lastFiltered = time(),
      take(",\"pendingEnters\":[")
    else { return nil }
    var pending: [DetectorCheckpoint.PendingEnter] = []
    if !take("]") {
      repeat {
        guard take("{\"count\":"), let count = integer(), take(",\"regionID\":"),
          let id = string(), take(",\"since\":"), let since = time(), take("}")
        else { return nil }
        pending.append(.init(regionID: id, count: count, since: since))
      } while take(",")
      guard take("]") else { return nil }
    }
    guard take(",\"speedReferenceTime\":"), let speedReference = time(),
      case .some(let stayStart) = optionalAnchor(",\"stayStart\":"),
      take(",\"usesTime\":"), let usesTime = bool(), take(",\"visits\":[")
    else { return nil }
    var visits: [DetectorCheckpoint.Visit] = []
    if !take("]") {
      repeat {
        guard take("{\"dwellEmitted\":"), let dwell = bool(), take(",\"enterTime\":"),
          let enter = time(), take(",\"exitCount\":"), let exitCount = integer(),
          take(",\"exitSince\":"), let exitSince = time(), take(",\"regionID\":"),
          let id = string(), take("}")
        else { return nil }
        visits.append(
          .init(
            regionID: id, enterTime: enter, dwellEmitted: dwell, exitCount: exitCount,
            exitSince: exitSince))
      } while take(",")
      guard take("]") else { return nil }
    }
    guard take("}") else { return nil }
    return DetectorCheckpoint(
      usesTime: usesTime, visits: visits, pendingEnters: pending, lastAccepted: lastAccepted,
      speedReferenceTime: speedReference, lastFilteredTime: lastFiltered, candidate: candidate,
      candidateCount: candidateCount, acceptedFixCount: accepted, stayStart: stayStart,
      dropCounts: drops)
  }

  /// `.some(nil)` when the member is absent, `nil` when it is there but unreadable.
  mutating func optionalAnchor(_ key: StaticString) -> DetectorCheckpoint.Anchor?? {
    guard take(key) else { return .some(nil) }
    guard take("{\"accuracy\":"), let accuracy = time(), take(",\"latitude\":"),
      let latitude = time(), take(",\"longitude\":"), let longitude = time(),
      take(",\"time\":"), let t = time(), take("}")
    else { return nil }
    return .some(.init(latitude: latitude, longitude: longitude, time: t, accuracy: accuracy))
  }

  mutating func optionalTime(_ key: StaticString) -> Double?? {
    guard take(key) else { return .some(nil) }
    guard let x = time() else { return nil }
    return .some(x)
  }

  /// Consumes `literal` when the bytes at the cursor are exactly it.
  mutating func take(_ literal: StaticString) -> Bool {
    let n = literal.utf8CodeUnitCount
    guard bytes.count - i >= n else { return false }
    let p = literal.utf8Start
    for k in 0..<n where bytes[i + k] != p[k] { return false }
    i += n
    return true
  }

  mutating func bool() -> Bool? {
    if take("true") { return true }
    if take("false") { return false }
    return nil
  }

  /// A JSON number up to the next `,`, `}` or `]`.
  mutating func number() -> Double? {
    let start = i
    while i < bytes.count {
      let b = bytes[i]
      if b == UInt8(ascii: ",") || b == UInt8(ascii: "}") || b == UInt8(ascii: "]") { break }
      i += 1
    }
    guard i > start,
      case .success(let x) = NumberText.parse(UnsafeBufferPointer(rebasing: bytes[start..<i])),
      x.isFinite
    else { return nil }
    return x
  }

  mutating func integer() -> Int? {
    guard let x = number(), x == x.rounded(), abs(x) < 9_007_199_254_740_992 else { return nil }
    return Int(x)
  }

  mutating func time() -> Double? {
    if take("\"inf\"") { return .infinity }
    if take("\"-inf\"") { return -.infinity }
    if take("\"nan\"") { return .nan }
    return number()
  }

  /// A string without escapes or control characters, valid UTF-8.
  mutating func string() -> String? {
    guard take("\"") else { return nil }
    let start = i
    while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
      if bytes[i] == UInt8(ascii: "\\") || bytes[i] < 0x20 { return nil }
      i += 1
    }
    guard i < bytes.count else { return nil }
    let s = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
    i += 1
    return s
  }
}
