import NumberText

/// A direct reading of the common definition shapes, without a ``JSONValue`` object (and its
/// dictionary) for each one: a definition object of the known members (`id`, `latitude`,
/// `longitude`, `radius`, `name`, `metadata`, `geometry`) holding strings and scalars, and a
/// GeoJSON `Point` feature of `type`, `id`, `geometry` and `properties` whose geometry and
/// properties are such objects. Each returns exactly the ``RawGeofenceDefinition`` that the
/// general reading (``RawGeofenceDefinition/decode(_:in:)``,
/// ``GeofenceFileReader/readFeatures(_:in:into:direct:)``) gives for the same text, or nil for
/// any text it does not take, which then goes the general way: a string with an escape, a
/// key beyond ASCII or not among those, a nested object or array other than the feature's
/// own, a duplicate key, a number that is not JSON or out of range, or anything else the
/// general reading would reject. It never rejects: every rejection is worded by the general
/// reading.
extension JSONDocument {
  /// The definition object at `span` (see the extension's discussion), or nil.
  /// - Complexity: O(n) in the span's length; allocates only the strings it returns.
  func directDefinition(_ span: JSONSpan) -> RawGeofenceDefinition? {
    bytes.withUnsafeBufferPointer { b -> RawGeofenceDefinition? in
      var scan = DirectScan(bytes: b, at: span.start)
      var definition = RawGeofenceDefinition(id: nil, latitude: nil, longitude: nil, radius: nil)
      var members = DirectScan.Members()
      while true {
        switch scan.next(&members) {
        case .fail: return nil
        case .end:
          return scan.i == span.end ? definition : nil
        case .key(let key):
          // Another key (ignored by the general reading once read as valid JSON) goes the
          // general way, which also finds its duplicates.
          guard
            let field = DirectScan.definitionKeys.firstIndex(where: { DirectScan.key(key, is: $0) }
            ),
            members.first(field), let value = scan.flatValue()
          else { return nil }
          switch field {
          case 0: definition.id = value
          case 1: definition.latitude = value
          case 2: definition.longitude = value
          case 3: definition.radius = value
          case 4: definition.name = value
          case 5: definition.metadata = value
          default: definition.geometry = value
          }
        }
      }
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
      var propertyID: JSONValue?
      var radius: JSONValue?
      var name: JSONValue?
      var metadata: [String: JSONValue] = [:]
      var isPoint = false
      var longitude: JSONValue?
      var latitude: JSONValue?
      var members = DirectScan.Members()
      members: while true {
        switch scan.next(&members) {
        case .fail: return nil
        case .end: break members
        case .key(let key):
          // Other members (`bbox`, foreign members) go the general way.
          guard
            let field = DirectScan.featureKeys.firstIndex(where: { DirectScan.key(key, is: $0) }),
            members.first(field)
          else { return nil }
          if field == 0 {
            guard case .string("Feature")? = scan.flatValue() else { return nil }
            isFeature = true
          } else if field == 1 {
            guard let value = scan.flatValue() else { return nil }
            id = value
          } else if field == 2 {
            var geometry = DirectScan.Members()
            geometry: while true {
              switch scan.next(&geometry) {
              case .fail: return nil
              case .end: break geometry
              case .key(let key):
                guard
                  let field = DirectScan.geometryKeys.firstIndex(where: {
                    DirectScan.key(key, is: $0)
                  }),
                  geometry.first(field)
                else { return nil }
                if field == 0 {
                  guard case .string("Point")? = scan.flatValue() else { return nil }
                  isPoint = true
                } else {
                  // The general reading takes the first two of two or more values.
                  guard scan.openArray() else { return nil }
                  var count = 0
                  while let value = scan.nextElement(first: count == 0) {
                    if count == 0 { longitude = value } else if count == 1 { latitude = value }
                    count += 1
                  }
                  guard scan.closedArray, count >= 2 else { return nil }
                }
              }
            }
          } else {
            if scan.takeNull() { continue }
            var properties = DirectScan.Members()
            properties: while true {
              switch scan.next(&properties) {
              case .fail: return nil
              case .end: break properties
              case .key(let key):
                guard let value = scan.flatValue() else { return nil }
                if DirectScan.key(key, is: "id") {
                  guard properties.first(0) else { return nil }
                  propertyID = value
                } else if DirectScan.key(key, is: "radius") {
                  guard properties.first(1) else { return nil }
                  radius = value
                } else if DirectScan.key(key, is: "name") {
                  guard properties.first(2) else { return nil }
                  name = value
                } else {
                  // Every other property is metadata (a duplicate goes the general way). A
                  // `metadata` property holding an object would be the metadata itself; an
                  // object is never read directly.
                  let text = String(decoding: key, as: UTF8.self)
                  guard metadata.updateValue(value, forKey: text) == nil else { return nil }
                }
              }
            }
          }
        }
      }
      // The general reading rejects a feature without a Point geometry of two or more
      // coordinates; every such feature goes its way.
      guard scan.i == span.end, isFeature, isPoint, let longitude, let latitude else {
        return nil
      }
      if id == nil || id == .null { id = propertyID }
      return RawGeofenceDefinition(
        id: id, latitude: latitude, longitude: longitude, radius: radius, name: name,
        metadata: .object(metadata))
    }
  }
}

/// The scanner of ``JSONDocument/directDefinition(_:)`` and
/// ``JSONDocument/directFeature(_:)``: a position in the bytes, and readers that give up
/// (nil or false) on anything outside the direct shapes.
private struct DirectScan {
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

  /// The keys of a definition object read directly, and of a feature and its geometry, in
  /// the numbering of ``Members/first(_:)``.
  static let definitionKeys: [StaticString] = [
    "id", "latitude", "longitude", "radius", "name", "metadata", "geometry",
  ]
  static let featureKeys: [StaticString] = ["type", "id", "geometry", "properties"]
  static let geometryKeys: [StaticString] = ["type", "coordinates"]

  /// Whether `key` is `name`.
  static func key(_ key: UnsafeBufferPointer<UInt8>, is name: StaticString) -> Bool {
    guard key.count == name.utf8CodeUnitCount else { return false }
    for k in 0..<key.count where key[k] != name.utf8Start[k] { return false }
    return true
  }

  /// Where ``next(_:)`` is in an object: whether it has read the opening brace, and which
  /// of the caller's keys it has met (``first(_:in:)``), so that a duplicate is found.
  struct Members {
    var started = false
    var seen: UInt32 = 0

    /// Whether key number `k` (0 to 31, the caller's numbering) is met for the first time;
    /// records it.
    mutating func first(_ k: Int) -> Bool {
      let bit: UInt32 = 1 << UInt32(k)
      defer { seen |= bit }
      return seen & bit == 0
    }
  }

  /// What ``next(_:)`` found.
  enum Step {
    /// A key (ASCII, no escape); the scan is at its value, which the caller must read
    /// before the next step. The caller finds duplicates (``Members/first(_:)``).
    case key(UnsafeBufferPointer<UInt8>)
    /// The closing brace.
    case end
    /// Text that is not such an object.
    case fail
  }

  /// The next member of the object at the scan (its opening brace on the first call).
  mutating func next(_ members: inout Members) -> Step {
    skipSpace()
    if !members.started {
      guard take(UInt8(ascii: "{")) else { return .fail }
      members.started = true
      skipSpace()
      if take(UInt8(ascii: "}")) { return .end }
    } else {
      if take(UInt8(ascii: "}")) { return .end }
      guard take(UInt8(ascii: ",")) else { return .fail }
      skipSpace()
    }
    guard take(UInt8(ascii: "\"")) else { return .fail }
    let start = i
    while i < bytes.count {
      let b = bytes[i]
      if b == UInt8(ascii: "\"") { break }
      guard b >= 0x20, b < 0x80, b != UInt8(ascii: "\\") else { return .fail }
      i += 1
    }
    guard i < bytes.count else { return .fail }
    let key = UnsafeBufferPointer(rebasing: bytes[start..<i])
    i += 1
    skipSpace()
    guard take(UInt8(ascii: ":")) else { return .fail }
    return .key(key)
  }

  /// The opening bracket of an array.
  mutating func openArray() -> Bool {
    skipSpace()
    closedArray = false
    return take(UInt8(ascii: "["))
  }

  /// Whether the last ``nextElement(first:)`` that gave nil met the closing bracket (rather
  /// than text outside the direct shapes).
  private(set) var closedArray = false

  /// The next element of an array opened by ``openArray()``, a string or scalar; nil at the
  /// closing bracket (``closedArray`` true) or at anything else (false).
  mutating func nextElement(first: Bool) -> JSONValue? {
    skipSpace()
    if take(UInt8(ascii: "]")) {
      closedArray = true
      return nil
    }
    if !first {
      guard take(UInt8(ascii: ",")) else { return nil }
    }
    return flatValue()
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
      var high: UInt8 = 0
      while i < bytes.count {
        let b = bytes[i]
        if b == UInt8(ascii: "\"") { break }
        guard b >= 0x20, b != UInt8(ascii: "\\") else { return nil }
        high |= b
        i += 1
      }
      guard i < bytes.count else { return nil }
      let raw = UnsafeBufferPointer(rebasing: bytes[start..<i])
      i += 1
      // ASCII is valid UTF-8 as it stands; other text is validated as the general reading
      // does.
      if high < 0x80 { return .string(String(decoding: raw, as: UTF8.self)) }
      guard let s = String(validating: raw, as: UTF8.self) else { return nil }
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
