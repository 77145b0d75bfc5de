import NumberText

/// A direct reading of the common definition shapes, without a ``JSONValue`` object (and its
/// dictionary) for each one: a definition object whose members are strings and scalars, and a
/// GeoJSON `Point` feature whose `geometry` and `properties` are such objects. Each returns
/// exactly the ``RawGeofenceDefinition`` that the general reading
/// (``RawGeofenceDefinition/decode(_:in:)``, ``GeofenceFileReader/readFeatures(_:in:into:)``)
/// gives for the same text, or nil for any text it does not take, which then goes the general
/// way: a string with an escape, a key beyond ASCII, a nested object or array other than the
/// feature's own, a duplicate key, more than ``directMemberLimit`` members, a number that is
/// not JSON or out of range, or anything else the general reading would reject. It never
/// rejects: every rejection is worded by the general reading.
extension JSONDocument {
  /// Most members an object read directly may have.
  static let directMemberLimit = 16

  /// The definition object at `span` (see the extension's discussion), or nil.
  /// - Complexity: O(n) in the span's length; allocates only the strings it returns.
  func directDefinition(_ span: JSONSpan) -> RawGeofenceDefinition? {
    bytes.withUnsafeBufferPointer { b -> RawGeofenceDefinition? in
      var scan = DirectScan(bytes: b, at: span.start)
      var definition = RawGeofenceDefinition(id: nil, latitude: nil, longitude: nil, radius: nil)
      let read = scan.object { key, scan in
        guard let value = scan.flatValue() else { return false }
        switch key {
        case "id": definition.id = value
        case "latitude": definition.latitude = value
        case "longitude": definition.longitude = value
        case "radius": definition.radius = value
        case "name": definition.name = value
        case "metadata": definition.metadata = value
        case "geometry": definition.geometry = value
        default: break  // unknown keys are ignored, once read as valid JSON
        }
        return true
      }
      guard read, scan.i == span.end else { return nil }
      return definition
    }
  }

  /// The GeoJSON `Point` feature at `span` (see the extension's discussion), or nil.
  /// - Complexity: O(n) in the span's length; allocates the strings it returns and, when the
  ///   feature has properties other than `id`, `name` and `radius`, their dictionary.
  func directFeature(_ span: JSONSpan) -> RawGeofenceDefinition? {
    bytes.withUnsafeBufferPointer { b -> RawGeofenceDefinition? in
      var scan = DirectScan(bytes: b, at: span.start)
      var isFeature = false
      var id: JSONValue?
      var properties: [DirectScan.Member] = []
      var isPoint = false
      var coordinates: [JSONValue] = []
      var hasCoordinates = false
      let read = scan.object { key, scan in
        switch key {
        case "type":
          guard case .string("Feature")? = scan.flatValue() else { return false }
          isFeature = true
        case "id":
          guard let value = scan.flatValue() else { return false }
          id = value
        case "geometry":
          return scan.object { key, scan in
            switch key {
            case "type":
              guard case .string("Point")? = scan.flatValue() else { return false }
              isPoint = true
            case "coordinates":
              guard let values = scan.flatArray() else { return false }
              coordinates = values
              hasCoordinates = true
            default:
              guard scan.flatValue() != nil else { return false }
            }
            return true
          }
        case "properties":
          if scan.takeNull() { return true }
          return scan.object { key, scan in
            guard let value = scan.flatValue() else { return false }
            properties.append(DirectScan.Member(key: key, value: value))
            return true
          }
        default:
          guard scan.flatValue() != nil else { return false }
        }
        return true
      }
      // The general reading rejects a feature without a Point geometry of two or more
      // coordinates; every such feature goes its way.
      guard read, scan.i == span.end, isFeature, isPoint, hasCoordinates, coordinates.count >= 2
      else { return nil }
      func property(_ key: String) -> JSONValue? {
        properties.first(where: { $0.key == key })?.value
      }
      if id == nil || id == .null { id = property("id") }
      // A `metadata` property holding an object would be read as the metadata: a flat
      // object has none (an object value is never read directly).
      var metadata: [String: JSONValue] = [:]
      for member in properties where !["id", "name", "radius"].contains(member.key) {
        metadata[member.key] = member.value
      }
      return RawGeofenceDefinition(
        id: id, latitude: coordinates[1], longitude: coordinates[0],
        radius: property("radius"), name: property("name"), metadata: .object(metadata))
    }
  }
}

/// The scanner of ``JSONDocument/directDefinition(_:)`` and
/// ``JSONDocument/directFeature(_:)``: a position in the bytes, and readers that give up
/// (nil or false) on anything outside the direct shapes.
private struct DirectScan {
  struct Member {
    var key: String
    var value: JSONValue
  }

  let bytes: UnsafeBufferPointer<UInt8>
  var i: Int

  /// The bytes that end a scalar: whitespace and JSON's punctuation (as the general reading).
  static func isDelimiter(_ b: UInt8) -> Bool {
    switch b {
    case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "["),
      UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "\""):
      return true
    default: return false
    }
  }

  init(bytes: UnsafeBufferPointer<UInt8>, at start: Int) {
    self.bytes = bytes
    self.i = start
  }

  mutating func skipSpace() {
    while i < bytes.count {
      switch bytes[i] {
      case 0x20, 0x09, 0x0A, 0x0D: i += 1
      default: return
      }
    }
  }

  mutating func take(_ byte: UInt8) -> Bool {
    guard i < bytes.count, bytes[i] == byte else { return false }
    i += 1
    return true
  }

  /// `null` (and the delimiter after it).
  mutating func takeNull() -> Bool {
    skipSpace()
    guard i + 4 <= bytes.count, bytes[i] == UInt8(ascii: "n"), bytes[i + 1] == UInt8(ascii: "u"),
      bytes[i + 2] == UInt8(ascii: "l"), bytes[i + 3] == UInt8(ascii: "l"),
      i + 4 == bytes.count || DirectScan.isDelimiter(bytes[i + 4])
    else { return false }
    i += 4
    return true
  }

  /// An object: `member` is called with each key (ASCII, no escape, not seen before in the
  /// object), the position at its value, and must read the value. False when the text is
  /// not such an object, or `member` returns false.
  mutating func object(_ member: (String, inout DirectScan) -> Bool) -> Bool {
    skipSpace()
    guard take(UInt8(ascii: "{")) else { return false }
    skipSpace()
    if take(UInt8(ascii: "}")) { return true }
    var keys: [Range<Int>] = []
    while true {
      skipSpace()
      guard take(UInt8(ascii: "\"")) else { return false }
      let start = i
      while i < bytes.count {
        let b = bytes[i]
        if b == UInt8(ascii: "\"") { break }
        guard b >= 0x20, b < 0x80, b != UInt8(ascii: "\\") else { return false }
        i += 1
      }
      guard i < bytes.count, keys.count < JSONDocument.directMemberLimit else { return false }
      let key = start..<i
      i += 1
      for seen in keys where seen.count == key.count {
        if bytes[seen].elementsEqual(bytes[key]) { return false }
      }
      keys.append(key)
      skipSpace()
      guard take(UInt8(ascii: ":")) else { return false }
      let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[key]), as: UTF8.self)
      guard member(text, &self) else { return false }
      skipSpace()
      if take(UInt8(ascii: "}")) { return true }
      guard take(UInt8(ascii: ",")) else { return false }
    }
  }

  /// An array of strings and scalars.
  mutating func flatArray() -> [JSONValue]? {
    skipSpace()
    guard take(UInt8(ascii: "[")) else { return nil }
    var values: [JSONValue] = []
    skipSpace()
    if take(UInt8(ascii: "]")) { return values }
    while true {
      guard let value = flatValue() else { return nil }
      values.append(value)
      skipSpace()
      if take(UInt8(ascii: "]")) { return values }
      guard take(UInt8(ascii: ",")) else { return nil }
    }
  }

  /// A string without escapes, or `true`, `false`, `null` or a number, read as the general
  /// reading does; nil for anything else (an object or array among them).
  mutating func flatValue() -> JSONValue? {
    skipSpace()
    guard i < bytes.count else { return nil }
    switch bytes[i] {
    case UInt8(ascii: "\""):
      i += 1
      let start = i
      while i < bytes.count {
        let b = bytes[i]
        if b == UInt8(ascii: "\"") { break }
        guard b >= 0x20, b != UInt8(ascii: "\\") else { return nil }
        i += 1
      }
      guard i < bytes.count,
        let s = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
      else { return nil }
      i += 1
      return .string(s)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      return nil
    default:
      let start = i
      while i < bytes.count, !DirectScan.isDelimiter(bytes[i]) { i += 1 }
      let token = UnsafeBufferPointer(rebasing: bytes[start..<i])
      func equals(_ s: StaticString) -> Bool {
        s.utf8CodeUnitCount == token.count
          && (0..<token.count).allSatisfy { token[$0] == s.utf8Start[$0] }
      }
      if equals("true") { return .bool(true) }
      if equals("false") { return .bool(false) }
      if equals("null") { return .null }
      guard !token.isEmpty, case .success(let v) = NumberText.parse(token) else { return nil }
      return .number(v)
    }
  }
}
