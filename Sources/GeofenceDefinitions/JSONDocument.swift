import NumberText

/// The text of one JSON value inside a ``JSONDocument``: where it starts and ends, on which
/// line, and how many arrays and objects enclose it.
public struct JSONSpan: Hashable, Sendable {
  /// Byte offsets of the value's text in ``JSONDocument/bytes``.
  public let start: Int
  public let end: Int
  /// 1-based line where the value starts.
  public let line: Int
  /// Offset of the first byte of that line (for columns).
  let lineStart: Int
  /// Arrays and objects around the value (0 for the document's root).
  public let depth: Int
}

/// JSON text (RFC 8259) read in parts, so that one bad value costs only the part that holds
/// it.
///
/// Opening a document checks only its structure: strings are closed and brackets balance. The
/// elements of an array (``elements(of:)``) and the members of an object (``members(of:)``) are
/// then found without reading their values, and each value is read on its own by
/// ``value(of:)``, which is strict. A definition file whose third element holds `1e400`,
/// `NaN`, a duplicate key or metadata nested too deep thus loses that element only.
///
/// **Strict reading** (``value(of:)``): RFC 8259 exactly. Numbers follow ``NumberText``'s
/// grammar and must lie within ±`Double.greatestFiniteMagnitude`; `NaN`, `Infinity` and hex are
/// not JSON. Strings must be valid UTF-8 without raw control characters; `\u` escapes must
/// pair surrogates. A key may appear once per object (RFC 8259 §4 leaves duplicates to the
/// reader; taking the last silently hides data). Arrays and objects may nest at most
/// ``maximumDepth`` deep, counted from the document's root. Whitespace is space, tab, LF and
/// CR; a UTF-8 byte-order mark before the root value is skipped.
///
/// Errors give the line and column (in bytes) in the whole document. The document keeps its
/// bytes; a span is only valid with the document that produced it.
public struct JSONDocument: Sendable {
  /// Most arrays and objects nested in one another, counted from the root (`[[1]]` is 2).
  /// 512, the limit of Foundation's `JSONSerialization`, which deeper files were written for
  /// never met.
  public static let maximumDepth = 512

  /// The document's bytes.
  public let bytes: [UInt8]
  /// The root value.
  public let root: JSONSpan
  /// What opening found on its way, so that a reader's first calls do not skip the text
  /// again: the root's members (when it is an object), and the elements of the root array or
  /// of the root's `features` array (the array's first byte, and the elements). Nil where
  /// the text was not regular enough to take them on the way (then they are found when asked,
  /// with the errors that gives).
  private let openedMembers: [(key: String, value: JSONSpan)]?
  private let openedElements: (arrayStart: Int, elements: [JSONSpan])?

  /// A document over `bytes` whose structure was not checked as a whole (see
  /// ``recordsBeforeEnd(of:)``): only spans found by that scan may be read from it.
  init(unchecked bytes: [UInt8], root: JSONSpan) {
    self.bytes = bytes
    self.root = root
    openedMembers = nil
    openedElements = nil
  }

  /// The JSON type of a span, from its first byte.
  public enum Kind: Hashable, Sendable {
    case object, array, string, scalar
  }

  /// Opens a document: finds its root value and checks that only whitespace follows.
  /// - Throws: ``JSONReadError`` when there is no value, a string is not closed, brackets
  ///   do not balance, or text follows the root.
  /// - Complexity: O(n) in the document's size.
  public init(bytes: some Sequence<UInt8>) throws(JSONReadError) {
    self.bytes = Array(bytes)
    var start = 0
    if self.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
    let found: (JSONSpan, Cursor.Opened?)
    do {
      found = try self.bytes.withUnsafeBufferPointer { (b) throws(JSONReadError) in
        var c = Cursor(bytes: b, i: start, line: 1, lineStart: 0)
        c.skipSpace()
        guard !c.atEnd else { throw c.error("no JSON value in the text") }
        let before = c
        let span: JSONSpan
        let opened = c.skipRootTakingParts()
        if let opened {
          span = opened.root
        } else {
          c = before
          span = try c.skipValue(depth: 0)
        }
        c.skipSpace()
        guard c.atEnd else { throw c.error("text after the JSON value") }
        return (span, opened)
      }
    }
    root = found.0
    openedMembers = found.1?.members
    openedElements = found.1?.elements
  }

  /// The JSON type of `span`.
  public func kind(of span: JSONSpan) -> Kind {
    switch bytes[span.start] {
    case UInt8(ascii: "{"): return .object
    case UInt8(ascii: "["): return .array
    case UInt8(ascii: "\""): return .string
    default: return .scalar
    }
  }

  /// The elements of the array `span`, their values unread.
  /// - Throws: ``JSONReadError`` when `span` is not an array or its commas are wrong.
  /// - Complexity: O(n) in the array's size.
  public func elements(of span: JSONSpan) throws(JSONReadError) -> [JSONSpan] {
    if let opened = openedElements, opened.arrayStart == span.start { return opened.elements }
    return try bytes.withUnsafeBufferPointer { (b) throws(JSONReadError) in
      var c = Cursor(bytes: b, at: span)
      guard c.take(UInt8(ascii: "[")) else { throw c.error("expected an array") }
      var out: [JSONSpan] = []
      c.skipSpace()
      if c.take(UInt8(ascii: "]")) { return out }
      while true {
        c.skipSpace()
        out.append(try c.skipValue(depth: span.depth + 1))
        c.skipSpace()
        if c.take(UInt8(ascii: "]")) { return out }
        guard c.take(UInt8(ascii: ",")) else {
          throw c.error("expected ',' or ']' after array element \(out.count - 1)")
        }
      }
    }
  }

  /// The members of the object `span` in text order (duplicates kept), values unread.
  /// - Throws: ``JSONReadError`` when `span` is not an object, a key is not a valid string,
  ///   or a colon or comma is missing.
  /// - Complexity: O(n) in the object's size.
  public func members(of span: JSONSpan) throws(JSONReadError) -> [(
    key: String, value: JSONSpan
  )] {
    if let opened = openedMembers, span.start == root.start { return opened }
    var out: [(key: String, value: JSONSpan)] = []
    if let error = members(of: span, into: &out) { throw error }
    return out
  }

  /// The members of the object `span` up to the first one whose structure is wrong (all of
  /// them when none is): what can still be read of a damaged object, for example its id.
  public func readableMembers(of span: JSONSpan) -> [(key: String, value: JSONSpan)] {
    var out: [(key: String, value: JSONSpan)] = []
    _ = members(of: span, into: &out)
    return out
  }

  private func members(of span: JSONSpan, into out: inout [(key: String, value: JSONSpan)])
    -> JSONReadError?
  {
    bytes.withUnsafeBufferPointer { b -> JSONReadError? in
      var c = Cursor(bytes: b, at: span)
      guard c.take(UInt8(ascii: "{")) else { return c.error("expected an object") }
      c.skipSpace()
      if c.take(UInt8(ascii: "}")) { return nil }
      while true {
        c.skipSpace()
        let key: String
        let value: JSONSpan
        do throws(JSONReadError) {
          key = try c.string()
          c.skipSpace()
          guard c.take(UInt8(ascii: ":")) else { return c.error("expected ':' after a key") }
          c.skipSpace()
          value = try c.skipValue(depth: span.depth + 1)
        } catch {
          return error
        }
        c.skipSpace()
        if c.take(UInt8(ascii: "}")) {
          out.append((key, value))
          return nil
        }
        guard c.take(UInt8(ascii: ",")) else { return c.error("expected ',' or '}'") }
        out.append((key, value))
      }
    }
  }

  /// Reads the value of `span` strictly (see the type's discussion).
  /// - Throws: ``JSONReadError`` with the path from `span` down to the bad value.
  /// - Complexity: O(n) in the value's size.
  public func value(of span: JSONSpan) throws(JSONReadError) -> JSONValue {
    try bytes.withUnsafeBufferPointer { (b) throws(JSONReadError) in
      var c = Cursor(bytes: b, at: span)
      let v = try c.value(depth: span.depth)
      guard c.i == span.end else { throw c.error("expected the end of the value") }
      return v
    }
  }

  /// Reads a whole document strictly: ``init(bytes:)`` then ``value(of:)`` of the root.
  public static func parse(_ bytes: some Sequence<UInt8>) throws(JSONReadError) -> JSONValue {
    let document = try JSONDocument(bytes: bytes)
    return try document.value(of: document.root)
  }
}

/// A place in a document's bytes and its line, as ``JSONSpan`` gives them: the byte offset,
/// the 1-based line and the offset of that line's first byte.
struct TextPosition {
  var i: Int
  var line: Int
  var lineStart: Int
}

extension JSONDocument {
  /// The list a definition file holds: the root array, or the `features` array of a GeoJSON
  /// `FeatureCollection` root.
  enum ElementList {
    case definitions, features
  }

  /// Reads a whole document in one pass, element by element, where ``init(bytes:)`` and
  /// ``elements(of:)`` would take two (the opening, then each element again): for each
  /// element of the list, in order, `plain(index, position)` first, which reads it from
  /// `position` and moves `position` past it when it takes it; else the element is skipped
  /// as ``elements(of:)`` skips it and handed to `other(index, span)`, its span what
  /// ``elements(of:)`` gives (so a document over the same bytes can read it).
  ///
  /// True when the whole text was such a list and nothing else: a root array, or an object
  /// with exactly one `type` member, the string `"FeatureCollection"`, and
  /// exactly one `features` member, an array; after a byte-order mark and whitespace, with
  /// only whitespace after the root. False, part of the elements possibly handed out, at the
  /// first thing outside that shape or that ``init(bytes:)`` would reject: the caller then
  /// discards what the callbacks did and reads the document the usual way, which gives the
  /// same result for a document of that shape and its own errors for the others.
  /// - Complexity: O(n) in the bytes, plus what the callbacks do; no allocation but the
  ///   root's member names.
  static func readElementsInOnePass(
    _ bytes: UnsafeBufferPointer<UInt8>, list: ElementList,
    plain: (_ index: Int, _ position: inout TextPosition) -> Bool,
    other: (_ index: Int, _ span: JSONSpan) -> Void
  ) -> Bool {
    var c = Cursor(
      bytes: bytes, i: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0, line: 1, lineStart: 0)
    // The array at the cursor, its elements at `depth` + 1.
    func elements(depth: Int) -> Bool {
      guard c.take(UInt8(ascii: "[")) else { return false }
      c.skipSpace()
      if c.take(UInt8(ascii: "]")) { return true }
      var index = 0
      while true {
        c.skipSpace()
        var at = TextPosition(i: c.i, line: c.line, lineStart: c.lineStart)
        if plain(index, &at) {
          (c.i, c.line, c.lineStart) = (at.i, at.line, at.lineStart)
        } else {
          guard let span = try? c.skipValue(depth: depth + 1) else { return false }
          other(index, span)
        }
        index += 1
        c.skipSpace()
        if c.take(UInt8(ascii: "]")) { return true }
        guard c.take(UInt8(ascii: ",")) else { return false }
      }
    }
    c.skipSpace()
    switch list {
    case .definitions:
      guard elements(depth: 0) else { return false }
    case .features:
      guard c.take(UInt8(ascii: "{")) else { return false }
      var (type, features) = (false, false)
      while true {
        c.skipSpace()
        guard let key = try? c.string() else { return false }
        c.skipSpace()
        guard c.take(UInt8(ascii: ":")) else { return false }
        c.skipSpace()
        if key == "features" {
          guard !features, elements(depth: 1) else { return false }
          features = true
        } else {
          guard let value = try? c.skipValue(depth: 1) else { return false }
          if key == "type" {
            guard !type, Cursor.isCollectionType(value, in: bytes) else { return false }
            type = true
          }
        }
        c.skipSpace()
        if c.take(UInt8(ascii: "}")) { break }
        guard c.take(UInt8(ascii: ",")) else { return false }
      }
      guard type, features else { return false }
    }
    c.skipSpace()
    return c.atEnd
  }
}

/// A position in the bytes, with its line, and the readers over it.
private struct Cursor {
  let bytes: UnsafeBufferPointer<UInt8>
  var i: Int
  var line: Int
  var lineStart: Int
  var path: [JSONPathComponent] = []

  init(bytes: UnsafeBufferPointer<UInt8>, i: Int, line: Int, lineStart: Int) {
    self.bytes = bytes
    self.i = i
    self.line = line
    self.lineStart = lineStart
  }

  init(bytes: UnsafeBufferPointer<UInt8>, at span: JSONSpan) {
    self.init(bytes: bytes, i: span.start, line: span.line, lineStart: span.lineStart)
  }

  var atEnd: Bool { i >= bytes.count }

  func error(_ message: String) -> JSONReadError {
    JSONReadError(message: message, line: line, column: i - lineStart + 1, path: path)
  }

  /// Advances over one byte, counting line ends (LF, CRLF, CR).
  @inline(__always)
  mutating func step() {
    let b = bytes[i]
    i += 1
    if b == 0x0A || (b == 0x0D && !(i < bytes.count && bytes[i] == 0x0A)) {
      line += 1
      lineStart = i
    }
  }

  mutating func skipSpace() {
    while i < bytes.count {
      switch bytes[i] {
      case 0x20, 0x09, 0x0A, 0x0D: step()
      default: return
      }
    }
  }

  mutating func take(_ b: UInt8) -> Bool {
    guard i < bytes.count, bytes[i] == b else { return false }
    i += 1
    return true
  }

  @inline(__always)
  static func isDelimiter(_ b: UInt8) -> Bool { JSONDocument.endsScalar(b) }

  // MARK: Structure only

  /// Skips one value, checking only that strings close and brackets balance.
  mutating func skipValue(depth: Int) throws(JSONReadError) -> JSONSpan {
    guard i < bytes.count else { throw error("expected a value, found the end of the text") }
    let start = i
    let startLine = line
    let startLineStart = lineStart
    func span() -> JSONSpan {
      JSONSpan(start: start, end: i, line: startLine, lineStart: startLineStart, depth: depth)
    }
    switch bytes[i] {
    case UInt8(ascii: "\""):
      try skipString()
    case UInt8(ascii: "["), UInt8(ascii: "{"):
      var open = 0
      repeat {
        guard i < bytes.count else {
          var at = self
          at.i = start
          at.line = startLine
          at.lineStart = startLineStart
          throw at.error("array or object opened here is never closed")
        }
        switch bytes[i] {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "["), UInt8(ascii: "{"):
          open += 1
          i += 1
        case UInt8(ascii: "]"), UInt8(ascii: "}"):
          open -= 1
          i += 1
        case 0x0A, 0x0D: step()
        default:
          i += 1
          skipPlain(quote: 0x22, 0x5B, 0x5D, 0x7B, 0x7D)
        }
      } while open > 0
    case UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ","), UInt8(ascii: ":"):
      throw error("expected a value, found '\(Character(Unicode.Scalar(bytes[i])))'")
    default:
      while i < bytes.count, !Self.isDelimiter(bytes[i]) { i += 1 }
    }
    return span()
  }

  mutating func skipString() throws(JSONReadError) {
    let opening = self
    i += 1
    while i < bytes.count {
      switch bytes[i] {
      case UInt8(ascii: "\""):
        i += 1
        return
      case UInt8(ascii: "\\"):
        i += 1
        if i < bytes.count { step() }
      case 0x0A, 0x0D: step()
      default:
        i += 1
        skipPlain(quote: 0x22, 0x5C, 0x22, 0x22, 0x22)
      }
    }
    throw opening.error("string opened here is never closed")
  }

  /// Advances, 8 bytes a step, over bytes that are none of `a` ... `e`, LF or CR (so that no
  /// line is counted), stopping at the first 8 bytes that hold one (the byte-by-byte loops
  /// take it from there). Each byte of a word is compared at once: `x - 0x01…01 & ~x &
  /// 0x80…80` is nonzero when a byte of `x` is zero (its lowest such byte flagged exactly).
  @inline(__always)
  mutating func skipPlain(quote a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, _ e: UInt8) {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    @inline(__always) func zeros(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
    guard let base = bytes.baseAddress else { return }
    let (ma, mb, mc, md, me) = (
      ones &* UInt64(a), ones &* UInt64(b), ones &* UInt64(c), ones &* UInt64(d),
      ones &* UInt64(e)
    )
    let (lf, cr) = (ones &* 0x0A, ones &* 0x0D)
    while i + 8 <= bytes.count {
      let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
      let hit =
        zeros(w ^ ma) | zeros(w ^ mb) | zeros(w ^ mc) | zeros(w ^ md) | zeros(w ^ me)
        | zeros(w ^ lf) | zeros(w ^ cr)
      if hit != 0 {
        i += hit.trailingZeroBitCount >> 3
        return
      }
      i += 8
    }
  }

  /// What ``skipRootTakingParts()`` found.
  struct Opened {
    var root: JSONSpan
    var members: [(key: String, value: JSONSpan)]?
    var elements: (arrayStart: Int, elements: [JSONSpan])?
  }

  /// Skips the root value, at the cursor, as ``skipValue(depth:)`` does, taking on the way
  /// what ``JSONDocument/elements(of:)`` and ``JSONDocument/members(of:)`` would find: the
  /// elements of a root array, or the members of a root object and the elements of its
  /// `features` array. Nil, the cursor anywhere, at the first thing those would reject or
  /// ``skipValue(depth:)`` would throw at: the caller then skips the root again the usual
  /// way, which gives the same errors as before.
  mutating func skipRootTakingParts() -> Opened? {
    guard i < bytes.count else { return nil }
    let start = self
    func root() -> JSONSpan {
      JSONSpan(start: start.i, end: i, line: start.line, lineStart: start.lineStart, depth: 0)
    }
    switch bytes[i] {
    case UInt8(ascii: "["):
      guard let elements = skipElements(depth: 0) else { return nil }
      return Opened(root: root(), members: nil, elements: (start.i, elements))
    case UInt8(ascii: "{"):
      i += 1
      var members: [(key: String, value: JSONSpan)] = []
      var features: (arrayStart: Int, elements: [JSONSpan])?
      skipSpace()
      if take(UInt8(ascii: "}")) { return Opened(root: root(), members: members, elements: nil) }
      while true {
        skipSpace()
        guard let key = try? string() else { return nil }
        skipSpace()
        guard take(UInt8(ascii: ":")) else { return nil }
        skipSpace()
        let value: JSONSpan
        if key == "features", features == nil, i < bytes.count, bytes[i] == UInt8(ascii: "[") {
          let array = self
          guard let elements = skipElements(depth: 1) else { return nil }
          value = JSONSpan(
            start: array.i, end: i, line: array.line, lineStart: array.lineStart, depth: 1)
          features = (array.i, elements)
        } else {
          guard let skipped = try? skipValue(depth: 1) else { return nil }
          value = skipped
        }
        members.append((key, value))
        skipSpace()
        if take(UInt8(ascii: "}")) {
          return Opened(root: root(), members: members, elements: features)
        }
        guard take(UInt8(ascii: ",")) else { return nil }
      }
    default:
      return nil
    }
  }

  /// The elements of the array at the cursor (at depth `depth`), skipped as
  /// ``JSONDocument/elements(of:)`` does; nil where that would throw.
  mutating func skipElements(depth: Int) -> [JSONSpan]? {
    guard take(UInt8(ascii: "[")) else { return nil }
    var out: [JSONSpan] = []
    skipSpace()
    if take(UInt8(ascii: "]")) { return out }
    while true {
      skipSpace()
      guard let element = try? skipValue(depth: depth + 1) else { return nil }
      out.append(element)
      skipSpace()
      if take(UInt8(ascii: "]")) { return out }
      guard take(UInt8(ascii: ",")) else { return nil }
    }
  }

  // MARK: Strict values

  mutating func value(depth: Int) throws(JSONReadError) -> JSONValue {
    skipSpace()
    guard i < bytes.count else { throw error("expected a value, found the end of the text") }
    switch bytes[i] {
    case UInt8(ascii: "{"):
      guard depth < JSONDocument.maximumDepth else {
        throw error("more than \(JSONDocument.maximumDepth) nested arrays and objects")
      }
      i += 1
      var members: [String: JSONValue] = [:]
      skipSpace()
      if take(UInt8(ascii: "}")) { return .object(members) }
      while true {
        skipSpace()
        let keyPosition = self
        let key = try string()
        if members[key] != nil {
          var at = keyPosition
          at.path.append(.key(key))
          throw at.error("key \"\(Self.shown(key))\" appears twice in the object")
        }
        skipSpace()
        guard take(UInt8(ascii: ":")) else { throw error("expected ':' after a key") }
        path.append(.key(key))
        members[key] = try value(depth: depth + 1)
        skipSpace()
        if take(UInt8(ascii: "}")) {
          path.removeLast()
          return .object(members)
        }
        // The member's key stays in the path: the text after its value is what is wrong.
        guard take(UInt8(ascii: ",")) else { throw error("expected ',' or '}' in an object") }
        path.removeLast()
      }
    case UInt8(ascii: "["):
      guard depth < JSONDocument.maximumDepth else {
        throw error("more than \(JSONDocument.maximumDepth) nested arrays and objects")
      }
      i += 1
      var elements: [JSONValue] = []
      skipSpace()
      if take(UInt8(ascii: "]")) { return .array(elements) }
      while true {
        path.append(.index(elements.count))
        elements.append(try value(depth: depth + 1))
        skipSpace()
        if take(UInt8(ascii: "]")) {
          path.removeLast()
          return .array(elements)
        }
        guard take(UInt8(ascii: ",")) else { throw error("expected ',' or ']' in an array") }
        path.removeLast()
      }
    case UInt8(ascii: "\""):
      return .string(try string())
    default:
      return try scalar()
    }
  }

  /// `true`, `false`, `null` or a number: the run of bytes up to the next delimiter.
  mutating func scalar() throws(JSONReadError) -> JSONValue {
    let start = i
    while i < bytes.count, !Self.isDelimiter(bytes[i]) { i += 1 }
    let token = UnsafeBufferPointer(rebasing: bytes[start..<i])
    if let literal = JSONDocument.literal(token) { return literal }
    var at = self
    at.i = start
    guard !token.isEmpty else {
      throw at.error("expected a value, found '\(Character(Unicode.Scalar(bytes[i])))'")
    }
    switch NumberText.parse(token) {
    case .success(let v): return .number(v)
    case .failure(.outOfRange):
      throw at.error("number \(Self.shown(token)) is out of range (beyond ±1.8e308)")
    case .failure(.notANumber):
      throw at.error(
        "\(Self.shown(token)) is not a JSON value (NaN, Infinity and hex are not JSON)")
    }
  }

  /// A string value: quotes removed, escapes decoded, UTF-8 checked.
  mutating func string() throws(JSONReadError) -> String {
    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
      throw error("expected a string")
    }
    let opening = self
    i += 1
    let start = i
    // Fast path: no escape.
    while i < bytes.count {
      let b = bytes[i]
      if b == UInt8(ascii: "\"") {
        let raw = UnsafeBufferPointer(rebasing: bytes[start..<i])
        i += 1
        guard let s = String(validating: raw, as: UTF8.self) else {
          throw opening.error("string is not valid UTF-8")
        }
        return s
      }
      if b == UInt8(ascii: "\\") { break }
      if b < 0x20 { throw error("control character in a string (it must be escaped)") }
      i += 1
    }
    var decoded = Array(bytes[start..<i])
    while i < bytes.count {
      let b = bytes[i]
      switch b {
      case UInt8(ascii: "\""):
        i += 1
        guard let s = String(validating: decoded, as: UTF8.self) else {
          throw opening.error("string is not valid UTF-8")
        }
        return s
      case UInt8(ascii: "\\"):
        let escape = self
        i += 1
        guard i < bytes.count else { break }
        let e = bytes[i]
        i += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(e)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
          guard var v = hex4() else { throw escape.error("\\u must be followed by 4 hex digits") }
          if (0xD800...0xDBFF).contains(v) {
            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(),
              (0xDC00...0xDFFF).contains(low)
            else { throw escape.error("unpaired surrogate in a \\u escape") }
            v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
          }
          guard let scalar = Unicode.Scalar(v) else {
            throw escape.error("unpaired surrogate in a \\u escape")
          }
          decoded.append(contentsOf: String(Character(scalar)).utf8)
        default:
          throw escape.error("invalid escape \\\(Character(Unicode.Scalar(e)))")
        }
      default:
        if b < 0x20 { throw error("control character in a string (it must be escaped)") }
        decoded.append(b)
        i += 1
      }
    }
    throw opening.error("string opened here is never closed")
  }

  mutating func hex4() -> UInt32? {
    guard i + 4 <= bytes.count else { return nil }
    var v: UInt32 = 0
    for _ in 0..<4 {
      let b = bytes[i]
      let d: UInt8
      switch b {
      case 0x30...0x39: d = b - 0x30
      case 0x41...0x46: d = b - 0x41 + 10
      case 0x61...0x66: d = b - 0x61 + 10
      default: return nil
      }
      v = v << 4 | UInt32(d)
      i += 1
    }
    return v
  }

  /// Text for a message, at most 40 characters.
  static func shown(_ token: UnsafeBufferPointer<UInt8>) -> String {
    shown(String(decoding: token, as: UTF8.self))
  }

  static func shown(_ s: String) -> String {
    s.count <= 40 ? s : String(s.prefix(40)) + "…"
  }
}

/// The complete records of JSON text that ends early: see ``JSONDocument/recordsBeforeEnd(of:)``.
struct TruncatedRecords {
  /// The text, with a root span from the first value to the end.
  var document: JSONDocument
  /// The records that are complete before the end, in order.
  var records: [JSONSpan]
  /// Whether the records are the `features` of a GeoJSON `FeatureCollection` (else the
  /// elements of a root array).
  var areFeatures: Bool
}

extension JSONDocument {
  /// Finds the records of a definition file whose text breaks off before its end (a download
  /// or a copy cut short): the elements of the root array, or of the `features` array of a
  /// root object, that are complete before the text runs out.
  ///
  /// An element counts when a `,` or `]` follows it, or when it is an object, array or string
  /// closed before the end (a number or literal at the very end may itself be cut). A root
  /// object's members before `features` must be well formed, and a `type` member before it
  /// must be `"FeatureCollection"`. A `features` list that is whole counts when the text ends
  /// after it, before the root object closes (its `}` missing, or a later member cut): then
  /// every feature is complete.
  /// - Returns: `nil` unless the text ends inside that list (or, for `features`, after it
  ///   inside the root), with everything before the end well formed: any other structural
  ///   fault (a missing comma, a stray bracket) gives `nil`, and the caller reports the file as
  ///   malformed.
  /// - Complexity: O(n) in the text's size.
  static func recordsBeforeEnd(of text: some Sequence<UInt8>) -> TruncatedRecords? {
    let bytes = Array(text)
    let found: (JSONSpan, [JSONSpan], Bool)? = bytes.withUnsafeBufferPointer { b in
      var c = Cursor(
        bytes: b, i: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0, line: 1, lineStart: 0)
      c.skipSpace()
      guard !c.atEnd else { return nil }
      let root = JSONSpan(
        start: c.i, end: b.count, line: c.line, lineStart: c.lineStart, depth: 0)
      switch b[c.i] {
      case UInt8(ascii: "["):
        guard let (records, closed) = c.elementsBeforeEnd(depth: 1), !closed else { return nil }
        return (root, records, false)
      case UInt8(ascii: "{"):
        c.i += 1
        var first = true
        var sawType = false
        while true {
          c.skipSpace()
          if !first { guard c.take(UInt8(ascii: ",")) else { return nil } }
          first = false
          c.skipSpace()
          guard !c.atEnd, b[c.i] == UInt8(ascii: "\""),
            let keySpan = try? c.skipValue(depth: 1)
          else { return nil }
          var keyCursor = Cursor(bytes: b, at: keySpan)
          guard let key = try? keyCursor.string() else { return nil }
          c.skipSpace()
          guard c.take(UInt8(ascii: ":")) else { return nil }
          c.skipSpace()
          guard !c.atEnd else { return nil }
          if key == "features" {
            guard b[c.i] == UInt8(ascii: "["), let (records, closed) = c.elementsBeforeEnd(depth: 2)
            else { return nil }
            // A whole list: the text is cut short only when it ends among the root's later
            // members, before the root closes.
            if closed && !c.membersEndBeforeClosing(sawType: sawType) { return nil }
            return (root, records, true)
          }
          guard let value = try? c.skipValue(depth: 1) else { return nil }
          if key == "type" {
            guard !sawType, Cursor.isCollectionType(value, in: b) else { return nil }
            sawType = true
          }
        }
      default:
        return nil
      }
    }
    guard let (root, records, areFeatures) = found else { return nil }
    return TruncatedRecords(
      document: JSONDocument(unchecked: bytes, root: root), records: records,
      areFeatures: areFeatures)
  }
}

extension Cursor {
  /// From an array's `[`: its elements complete before the end of the text, and whether the
  /// array closed (all its elements, the cursor past its `]`); `nil` when it is empty and
  /// closed or a structural fault comes first (see ``JSONDocument/recordsBeforeEnd(of:)``).
  mutating func elementsBeforeEnd(depth: Int) -> (elements: [JSONSpan], closed: Bool)? {
    guard take(UInt8(ascii: "[")) else { return nil }
    var out: [JSONSpan] = []
    while true {
      skipSpace()
      if atEnd { return (out, false) }
      if out.isEmpty, take(UInt8(ascii: "]")) { return nil }
      let span: JSONSpan
      do { span = try skipValue(depth: depth) } catch { return atEnd ? (out, false) : nil }
      skipSpace()
      if atEnd {
        switch bytes[span.start] {
        case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""): out.append(span)
        default: break
        }
        return (out, false)
      }
      out.append(span)
      if take(UInt8(ascii: "]")) { return (out, true) }
      guard take(UInt8(ascii: ",")) else { return nil }
    }
  }

  /// Whether the text ends among a root object's members after its `features` list (the
  /// cursor just past it), before the object closes: each further member as the whole file
  /// would need it as far as it goes (a key that is a valid string and not `features` again,
  /// a `type`, when not met before and not cut, spelling `"FeatureCollection"`). False when
  /// the object closes, or at anything else.
  mutating func membersEndBeforeClosing(sawType: Bool) -> Bool {
    while true {
      skipSpace()
      if atEnd { return true }
      guard take(UInt8(ascii: ",")) else { return false }
      skipSpace()
      if atEnd { return true }
      let key: String
      do { key = try string() } catch { return atEnd }
      if key == "features" { return false }
      skipSpace()
      if atEnd { return true }
      guard take(UInt8(ascii: ":")) else { return false }
      skipSpace()
      if atEnd { return true }
      let value: JSONSpan
      do { value = try skipValue(depth: 1) } catch { return atEnd }
      // A string cut short threw above; a whole one must be the collection's type.
      if key == "type" && (sawType || !Cursor.isCollectionType(value, in: bytes)) {
        return false
      }
    }
  }

  /// Whether the root member's value at `span` is the string `"FeatureCollection"` (escapes
  /// decoded), as ``GeofenceFileReader/readFeatureCollection(_:in:file:into:direct:)`` reads
  /// a collection's `type`.
  static func isCollectionType(_ span: JSONSpan, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var cursor = Cursor(bytes: bytes, at: span)
    return (try? cursor.value(depth: 1)) == .string("FeatureCollection")
  }
}

extension JSONDocument {
  /// Whether `b` ends a scalar (`true`, `false`, `null`, a number): whitespace or JSON's
  /// punctuation.
  @inline(__always)
  static func endsScalar(_ b: UInt8) -> Bool {
    switch b {
    case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "["),
      UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "\""):
      return true
    default: return false
    }
  }

  /// The JSON literal `token` spells (`true`, `false` or `null`), or nil for any other bytes.
  static func literal(_ token: UnsafeBufferPointer<UInt8>) -> JSONValue? {
    if spells(token, "true") { return .bool(true) }
    if spells(token, "false") { return .bool(false) }
    if spells(token, "null") { return .null }
    return nil
  }

  /// Whether `bytes` are exactly the UTF-8 bytes of `text`. O(n); no allocation.
  static func spells(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
    guard bytes.count == text.utf8CodeUnitCount else { return false }
    for k in 0..<bytes.count where bytes[k] != text.utf8Start[k] { return false }
    return true
  }
}
