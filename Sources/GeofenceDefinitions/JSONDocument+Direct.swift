import DelimitedText
import NumberText

/// A direct reading of the common definition shapes, without a ``JSONValue`` object (and its
/// dictionary) for each one: a definition object of the known members (`id`, `latitude`,
/// `longitude`, `radius`, `name`, `metadata`, `geometry`) holding strings and scalars, and a
/// GeoJSON `Point` feature of `type`, `id`, `geometry` and `properties` whose geometry and
/// properties are such objects. Each returns exactly the ``RawGeofenceDefinition`` that the
/// general reading (``RawGeofenceDefinition/decode(_:in:)``,
/// ``GeofenceFileReader/readElements(_:of:in:into:direct:)``) gives for the same text, or nil
/// for any text it does not take, which then goes the general way: a string with an escape, a
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
        // Another key (ignored by the general reading once read as valid JSON) goes the
        // general way, which also finds its duplicates.
        switch scan.nextField(&members, among: DirectScan.definitionKeys) {
        case .fail: return nil
        case .end:
          return scan.i == span.end ? definition : nil
        case .field(let field):
          guard let value = scan.flatValue() else { return nil }
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
        // Other members (`bbox`, foreign members) go the general way.
        switch scan.nextField(&members, among: DirectScan.featureKeys) {
        case .fail: return nil
        case .end: break members
        case .field(let field):
          if field == 0 {
            guard case .string("Feature")? = scan.flatValue() else { return nil }
            isFeature = true
          } else if field == 1 {
            guard let value = scan.flatValue() else { return nil }
            id = value
          } else if field == 2 {
            var geometry = DirectScan.Members()
            geometry: while true {
              switch scan.nextField(&geometry, among: DirectScan.geometryKeys) {
              case .fail: return nil
              case .end: break geometry
              case .field(let field):
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

/// A circle read from a definition object or a GeoJSON `Point` feature of plain members
/// only (``JSONDocument/plainReading(_:of:in:)``):
/// ranges of the document's bytes and numbers, with no `String` and no ``JSONValue``.
struct PlainCircleReading {
  /// The id's bytes: a string's (printable ASCII, no escape, not starting or ending with a
  /// space, so that trimming leaves it as it is), or an integer's digits (1 to 15, no leading
  /// zero), which are the id's decimal text as ``GeofenceValidator`` writes it.
  var id: Range<Int>
  /// Degrees, as written; not yet range-checked.
  var latitude: Double
  /// Degrees, as written; not yet range-checked.
  var longitude: Double
  /// Metres as written, or nil when the member is absent (the default radius applies).
  var radius: Double?
  /// The name's bytes (valid UTF-8, first byte printable ASCII), or nil when absent or
  /// made of spaces only (no name, as ``GeofenceValidator`` has it).
  var name: Range<Int>?
}

extension JSONDocument {
  /// The plain reading of the element of `list` at `span`
  /// (``plainDefinition(at:in:)``, ``plainFeature(at:in:)``), or nil.
  /// - Parameter bytes: the document's ``bytes``.
  /// - Complexity: O(n) in the span's length; no allocation.
  func plainReading(_ span: JSONSpan, of list: ElementList, in bytes: UnsafeBufferPointer<UInt8>)
    -> PlainCircleReading?
  {
    var at = TextPosition(i: span.start, line: span.line, lineStart: span.lineStart)
    guard let reading = Self.plainReading(at: &at, of: list, in: bytes), at.i == span.end else {
      return nil
    }
    return reading
  }

  /// The plain reading of an element of `list` that starts at `position` (after any
  /// whitespace), its end not known: on success `position` moves just past its closing
  /// brace. Nil for any other text, `position` unchanged.
  static func plainReading(
    at position: inout TextPosition, of list: ElementList, in bytes: UnsafeBufferPointer<UInt8>
  ) -> PlainCircleReading? {
    switch list {
    case .definitions: plainDefinition(at: &position, in: bytes)
    case .features: plainFeature(at: &position, in: bytes)
    }
  }

  /// The definition object at `position` when its members are among `id`, `latitude`,
  /// `longitude`, `radius` and `name`, each once, with an id and coordinates (see
  /// ``PlainCircleReading``) and numbers for the coordinates and radius; nil for any other
  /// text, which ``directDefinition(_:)`` or the general reading then takes. Every value it
  /// gives is what the general reading gives for the same text; the ranges are not checked.
  /// See ``plainReading(at:of:in:)``.
  /// - Complexity: O(n) in the value's length; no allocation.
  static func plainDefinition(at position: inout TextPosition, in bytes: UnsafeBufferPointer<UInt8>)
    -> PlainCircleReading?
  {
    var scan = DirectScan(bytes: bytes, at: position)
    var members = DirectScan.Members()
    var id: Range<Int>?
    var latitude: Double?
    var longitude: Double?
    var radius: Double?
    var name: Range<Int>?
    while true {
      switch scan.next(&members) {
      case .fail: return nil
      case .end:
        guard let id, let latitude, let longitude else { return nil }
        position = scan.position
        return PlainCircleReading(
          id: id, latitude: latitude, longitude: longitude, radius: radius, name: name)
      case .key(let key):
        guard let field = DirectScan.plainKey(key), members.first(field) else { return nil }
        switch field {
        case 0:
          guard let value = scan.plainID() else { return nil }
          id = value
        case 1:
          guard let value = scan.plainNumber() else { return nil }
          latitude = value
        case 2:
          guard let value = scan.plainNumber() else { return nil }
          longitude = value
        case 3:
          guard let value = scan.plainNumber() else { return nil }
          radius = value
        default:
          guard let value = scan.plainName() else { return nil }
          name = value.isEmpty ? nil : value
        }
      }
    }
  }

  /// The GeoJSON feature at `position` when it is a `Point` feature of members `type`, `id`,
  /// `geometry` (`type` and `coordinates` of two or three numbers) and `properties` (absent,
  /// or an object of `id`, `radius` and `name` only), each once, read as
  /// ``plainDefinition(at:in:)`` reads a definition: the id is the feature's, or the
  /// property's when the feature has none. Nil for any other text, which
  /// ``directFeature(_:)`` or the general reading then takes. See ``plainReading(at:of:in:)``.
  /// - Complexity: O(n) in the value's length; no allocation.
  static func plainFeature(at position: inout TextPosition, in bytes: UnsafeBufferPointer<UInt8>)
    -> PlainCircleReading?
  {
    var scan = DirectScan(bytes: bytes, at: position)
    var members = DirectScan.Members()
    var isFeature = false
    var id: Range<Int>?
    var propertyID: Range<Int>?
    var coordinates: (longitude: Double, latitude: Double)?
    var radius: Double?
    var name: Range<Int>?
    while true {
      switch scan.nextField(&members, among: DirectScan.featureKeys) {
      case .fail: return nil
      case .end:
        guard isFeature, let coordinates, let id = id ?? propertyID else { return nil }
        position = scan.position
        return PlainCircleReading(
          id: id, latitude: coordinates.latitude, longitude: coordinates.longitude,
          radius: radius, name: name)
      case .field(let field):
        switch field {
        case 0:
          guard scan.plainLiteral("Feature") else { return nil }
          isFeature = true
        case 1:
          guard let value = scan.plainID() else { return nil }
          id = value
        case 2:
          guard let value = scan.plainPoint() else { return nil }
          coordinates = value
        default:
          var properties = DirectScan.Members()
          properties: while true {
            switch scan.nextField(&properties, among: DirectScan.plainPropertyKeys) {
            case .fail: return nil
            case .end: break properties
            case .field(0):
              guard let value = scan.plainID() else { return nil }
              propertyID = value
            case .field(1):
              guard let value = scan.plainNumber() else { return nil }
              radius = value
            case .field:
              guard let value = scan.plainName() else { return nil }
              name = value.isEmpty ? nil : value
            }
          }
        }
      }
    }
  }
}

/// The scanner of ``JSONDocument/directDefinition(_:)`` and
/// ``JSONDocument/directFeature(_:)``: a position in the bytes, and readers that give up
/// (nil or false) on anything outside the direct shapes.
private struct DirectScan {
  let bytes: UnsafeBufferPointer<UInt8>
  var i: Int
  /// The line of `i` and the offset where it starts, as ``JSONSpan`` counts them (LF, CR LF
  /// and lone CR end a line). Line ends are met in whitespace only: the direct shapes hold
  /// no string with a raw line end.
  var line: Int
  var lineStart: Int

  /// The bytes that end a scalar: whitespace and JSON's punctuation (as the general reading).
  @inline(__always)
  static func isDelimiter(_ b: UInt8) -> Bool { JSONDocument.endsScalar(b) }

  init(bytes: UnsafeBufferPointer<UInt8>, at start: Int, line: Int = 1, lineStart: Int = 0) {
    self.bytes = bytes
    self.i = start
    self.line = line
    self.lineStart = lineStart
  }

  init(bytes: UnsafeBufferPointer<UInt8>, at position: TextPosition) {
    self.init(bytes: bytes, at: position.i, line: position.line, lineStart: position.lineStart)
  }

  /// Where the scan is.
  var position: TextPosition { TextPosition(i: i, line: line, lineStart: lineStart) }

  @inline(__always)
  mutating func skipSpace() {
    while i < bytes.count {
      let b = bytes[i]
      // Nothing above the space is whitespace: most calls end here, at once.
      if b > 0x20 { return }
      switch b {
      case 0x20, 0x09: i += 1
      case 0x0A:
        i += 1
        line += 1
        lineStart = i
      case 0x0D:
        i += 1
        if !(i < bytes.count && bytes[i] == 0x0A) {
          line += 1
          lineStart = i
        }
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
  /// The properties of a feature read by ``JSONDocument/plainFeature(at:in:)``.
  static let plainPropertyKeys: [StaticString] = ["id", "radius", "name"]

  /// Whether `key` is `name`.
  static func key(_ key: UnsafeBufferPointer<UInt8>, is name: StaticString) -> Bool {
    JSONDocument.spells(key, name)
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

  /// What ``nextField(_:among:)`` found.
  enum FieldStep {
    /// The number in the caller's list of a key met for the first time in this object; the
    /// scan is at its value.
    case field(Int)
    /// The closing brace.
    case end
    /// A key not in the list, a repeated one, or text that is not such an object.
    case fail
  }

  /// ``next(_:)``, the key looked up in `keys` and checked against the ones already met.
  mutating func nextField(_ members: inout Members, among keys: [StaticString]) -> FieldStep {
    switch next(&members) {
    case .fail: return .fail
    case .end: return .end
    case .key(let key):
      guard let k = keys.firstIndex(where: { DirectScan.key(key, is: $0) }), members.first(k)
      else { return .fail }
      return .field(k)
    }
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

  /// The number of a key of ``PlainCircleReading``'s definition object: `id`, `latitude`,
  /// `longitude`, `radius`, `name` are 0 to 4; nil for any other key.
  static func plainKey(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
    switch key.count {
    case 2: return DirectScan.key(key, is: "id") ? 0 : nil
    case 4: return DirectScan.key(key, is: "name") ? 4 : nil
    case 6: return DirectScan.key(key, is: "radius") ? 3 : nil
    case 8: return DirectScan.key(key, is: "latitude") ? 1 : nil
    case 9: return DirectScan.key(key, is: "longitude") ? 2 : nil
    default: return nil
    }
  }

  /// A string without escapes whose bytes are all printable ASCII or spaces: the range of its
  /// bytes (quotes excluded); nil for anything else.
  mutating func plainASCIIString() -> Range<Int>? {
    skipSpace()
    guard take(UInt8(ascii: "\"")) else { return nil }
    let start = i
    while i < bytes.count {
      let b = bytes[i]
      if b == UInt8(ascii: "\"") {
        i += 1
        return start..<(i - 1)
      }
      guard b &- 0x20 < 0x5F, b != UInt8(ascii: "\\") else { return nil }
      i += 1
    }
    return nil
  }

  /// An id as ``PlainCircleReading/id`` describes it; nil for anything else.
  mutating func plainID() -> Range<Int>? {
    skipSpace()
    guard i < bytes.count else { return nil }
    if bytes[i] == UInt8(ascii: "\"") {
      guard let id = plainASCIIString(), !id.isEmpty, isPrintableASCII(bytes[id.lowerBound]),
        isPrintableASCII(bytes[id.upperBound - 1])
      else { return nil }
      return id
    }
    let start = i
    while i < bytes.count, bytes[i] &- UInt8(ascii: "0") < 10 { i += 1 }
    let digits = i - start
    guard digits >= 1, digits <= 15, digits == 1 || bytes[start] != UInt8(ascii: "0"),
      i == bytes.count || DirectScan.isDelimiter(bytes[i])
    else { return nil }
    return start..<i
  }

  /// A name as ``PlainCircleReading/name`` describes it, an empty range for a name of spaces
  /// only; nil for anything else (a name starting with another byte, an escape).
  mutating func plainName() -> Range<Int>? {
    skipSpace()
    guard take(UInt8(ascii: "\"")) else { return nil }
    let start = i
    var high: UInt8 = 0
    var spaces = true
    while i < bytes.count {
      let b = bytes[i]
      if b == UInt8(ascii: "\"") { break }
      guard b >= 0x20, b != UInt8(ascii: "\\") else { return nil }
      high |= b
      spaces = spaces && b == 0x20
      i += 1
    }
    guard i < bytes.count else { return nil }
    let name = start..<i
    i += 1
    if spaces { return start..<start }
    guard isPrintableASCII(bytes[start]) else { return nil }
    if high >= 0x80 {
      guard DelimitedText.isValidUTF8(UnsafeBufferPointer(rebasing: bytes[name])) else {
        return nil
      }
    }
    return name
  }

  /// A number as the general reading reads it; nil for anything else (`null` among them).
  mutating func plainNumber() -> Double? {
    skipSpace()
    let start = i
    while i < bytes.count, !DirectScan.isDelimiter(bytes[i]) { i += 1 }
    guard i > start,
      case .success(let v) = NumberText.parse(
        UnsafeBufferPointer(rebasing: bytes[start..<i]))
    else { return nil }
    return v
  }

  /// The string `literal` (no escape); false for anything else.
  mutating func plainLiteral(_ literal: StaticString) -> Bool {
    guard let range = plainASCIIString() else { return false }
    return DirectScan.key(UnsafeBufferPointer(rebasing: bytes[range]), is: literal)
  }

  /// A GeoJSON `Point` geometry object of `type` and `coordinates`, each once, the
  /// coordinates two or three numbers: the first two; nil for anything else.
  mutating func plainPoint() -> (longitude: Double, latitude: Double)? {
    var geometry = DirectScan.Members()
    var isPoint = false
    var point: (longitude: Double, latitude: Double)?
    while true {
      switch nextField(&geometry, among: DirectScan.geometryKeys) {
      case .fail: return nil
      case .end:
        guard isPoint else { return nil }
        return point
      case .field(0):
        guard plainLiteral("Point") else { return nil }
        isPoint = true
      case .field:
        guard openArray(), let longitude = plainNumber() else { return nil }
        skipSpace()
        guard take(UInt8(ascii: ",")), let latitude = plainNumber() else { return nil }
        skipSpace()
        if take(UInt8(ascii: ",")) {
          guard plainNumber() != nil else { return nil }
          skipSpace()
        }
        guard take(UInt8(ascii: "]")) else { return nil }
        point = (longitude, latitude)
      }
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
      if let literal = JSONDocument.literal(token) { return literal }
      guard !token.isEmpty, case .success(let v) = NumberText.parse(token) else { return nil }
      return .number(v)
    }
  }
}
