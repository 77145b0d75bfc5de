import CLibXML2

/// A streaming (SAX2) XML parser over libxml2 that never loads anything from outside the
/// document.
///
/// - Safety: the parser runs with `XML_PARSE_NONET` and without `XML_PARSE_NOENT`,
///   `XML_PARSE_DTDLOAD`, `XML_PARSE_DTDATTR` or `XML_PARSE_DTDVALID`; it installs no
///   entity-declaration, entity-lookup or external-subset callback, so no external entity or
///   DTD is ever fetched (no network, no file access), and an entity declared in an internal
///   subset is not defined: a reference to it is the error `XML_ERR_UNDECLARED_ENTITY`.
///   The five predefined entities and character references are replaced.
/// - Encodings: a byte-order mark (UTF-8, UTF-16) or the XML declaration's `encoding`
///   chooses the decoding (libxml2's built-in encodings and iconv's); without either the
///   document must be UTF-8, and a byte sequence that is not is an error
///   (`XML_ERR_INVALID_CHAR`) naming its line, column and bytes.
/// - Limits: libxml2's defaults without `XML_PARSE_HUGE` (element depth 256, a name at most
///   50,000 bytes, a text node at most 10,000,000 bytes).
/// - Threads: each call has its own parser context; calls may run concurrently.
public enum XMLStream {
  /// Parses `bytes` as one XML document, calling `handler` for each element and text.
  ///
  /// - Parameters:
  ///   - bytes: the whole document.
  ///   - documentName: the name libxml2 gives the document (used for nothing else).
  ///   - handler: receives the events; returning ``XMLStreamDecision/stop`` from
  ///     `startElement` ends the parse early, without an error.
  /// - Throws: ``XMLStreamError`` with libxml2's first error (and its line and column) when
  ///   the document is not well-formed or cannot be decoded. The handler has then seen the
  ///   events before the error.
  /// - Complexity: O(n) in the document size; memory is the parser's buffers plus one
  ///   `String` per distinct element name and namespace URI (names are interned).
  public static func parse<Handler: XMLStreamHandler>(
    _ bytes: UnsafeRawBufferPointer, documentName: String, handler: Handler
  ) throws(XMLStreamError) {
    XMLStreamSession.initializeLibrary
    // libxml2's push parser calls an empty input "Extra content at the end of the document".
    if bytes.isEmpty {
      throw XMLStreamError(
        code: XMLStreamError.emptyDocumentCode, message: "Document is empty", line: 1, column: 1)
    }
    let session = XMLStreamSessionFor(handler)
    try session.run(bytes, documentName: documentName)
  }
}

/// The state of one parse, reached from libxml2's callbacks through the user-data pointer.
/// A class with one overridable entry point per event, because a C callback cannot name the
/// generic handler type.
class XMLStreamSession {
  /// libxml2's one-time global initialisation (`xmlInitParser`), which its documentation asks
  /// for before parsing from several threads.
  static let initializeLibrary: Void = { xmlInitParser() }()

  /// Bytes handed to `xmlParseChunk` at a time (a document larger than `Int32.max` bytes
  /// cannot be passed in one call).
  static let chunkBytes = 1 << 20
  /// `XML_ERR_DOCUMENT_END`: content after the root element, or (push parser) no root at all.
  static let documentEndCode = 5

  var context: xmlParserCtxtPtr?
  var firstError: XMLStreamError?
  var stopped = false
  var sawElement = false
  /// Elements started and not yet ended.
  var openElements = 0
  /// Set for the last `xmlParseChunk` call, which only tells libxml2 that the input is over.
  var atEndOfInput = false
  /// Interned names: libxml2 interns names and namespace URIs in the parser's dictionary, so
  /// one pointer always holds the same text during a parse.
  private var names: [UnsafeRawPointer: String] = [:]
  /// The names last found, by a few bits of their pointer: most documents use a few dozen
  /// names, so a name is usually found here with one comparison, without hashing.
  private var recentNames = [(pointer: UnsafeRawPointer?, name: String)](
    repeating: (nil, ""), count: 64)

  func start(_ element: XMLStartElement) -> XMLStreamDecision { .proceed }
  func end(localName: String, namespaceURI: String?) {}
  func characters(_ utf8: UnsafeBufferPointer<UInt8>) {}

  final func name(_ pointer: UnsafePointer<xmlChar>?) -> String? {
    guard let pointer else { return nil }
    let key = UnsafeRawPointer(pointer)
    let slot = Int(truncatingIfNeeded: UInt(bitPattern: key) >> 3) & 63
    if recentNames[slot].pointer == key { return recentNames[slot].name }
    if let known = names[key] {
      recentNames[slot] = (key, known)
      return known
    }
    let text = String(cString: pointer)  // repairs invalid UTF-8; libxml2 has checked it
    names[key] = text
    recentNames[slot] = (key, text)
    return text
  }

  final var position: (line: Int, column: Int) {
    guard let input = context?.pointee.input else { return (0, 0) }
    return (Int(input.pointee.line), Int(input.pointee.col))
  }

  final func record(_ error: UnsafePointer<xmlError>) {
    let e = error.pointee
    guard firstError == nil, !stopped, e.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
    var message = e.message.map { String(cString: $0) } ?? "XML error \(e.code)"
    message = String(
      message.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " "))
    while message.last == " " { message.removeLast() }
    firstError = XMLStreamError(
      code: Int(e.code), message: message, line: e.line > 0 ? Int(e.line) : nil,
      column: e.int2 > 0 ? Int(e.int2) : nil, endsEarly: atEndOfInput && openElements > 0)
  }

  final func run(_ bytes: UnsafeRawBufferPointer, documentName: String) throws(XMLStreamError) {
    var sax = xmlSAXHandler()
    sax.initialized = clibxml2_sax2_magic
    sax.startElementNs = { user, localName, prefix, uri, _, _, attributeCount, _, attributes in
      guard let user else { return }
      // The session outlives the parse (`run` holds it): no retain for the call.
      Unmanaged<XMLStreamSession>.fromOpaque(user)._withUnsafeGuaranteedRef { session in
        session.handleStart(localName, prefix, uri, attributeCount, attributes)
      }
    }
    sax.endElementNs = { user, localName, _, uri in
      guard let user else { return }
      Unmanaged<XMLStreamSession>.fromOpaque(user)._withUnsafeGuaranteedRef { session in
        guard !session.stopped else { return }
        session.openElements -= 1
        session.end(localName: session.name(localName) ?? "", namespaceURI: session.name(uri))
      }
    }
    let text: charactersSAXFunc = { user, bytes, count in
      guard let user, let bytes, count > 0 else { return }
      Unmanaged<XMLStreamSession>.fromOpaque(user)._withUnsafeGuaranteedRef { session in
        guard !session.stopped else { return }
        session.characters(UnsafeBufferPointer(start: bytes, count: Int(count)))
      }
    }
    sax.characters = text
    sax.ignorableWhitespace = text
    sax.cdataBlock = text
    sax.serror = { user, error in
      guard let user, let error else { return }
      Unmanaged<XMLStreamSession>.fromOpaque(user).takeUnretainedValue().record(error)
    }

    let user = Unmanaged.passUnretained(self).toOpaque()
    let all = bytes.bindMemory(to: CChar.self)
    // The first four bytes let libxml2 detect a byte-order mark or UTF-16 before anything else.
    let head = min(4, all.count)
    guard
      let context = documentName.withCString({ name in
        xmlCreatePushParserCtxt(&sax, user, all.baseAddress, Int32(head), name)
      })
    else {
      throw XMLStreamError(
        code: -1, message: "libxml2 could not create a parser (out of memory)", line: nil,
        column: nil)
    }
    self.context = context
    defer {
      if let document = context.pointee.myDoc { xmlFreeDoc(document) }
      xmlFreeParserCtxt(context)
      self.context = nil
    }
    _ = xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue))

    // All the bytes first, then an empty chunk that says the input is over: an error found
    // only then, with elements open, means the document was cut short.
    var offset = head
    while offset < all.count, !stopped, firstError == nil {
      let count = min(Self.chunkBytes, all.count - offset)
      _ = xmlParseChunk(context, all.baseAddress.map { $0 + offset }, Int32(count), 0)
      offset += count
    }
    if !stopped, firstError == nil {
      atEndOfInput = true
      _ = xmlParseChunk(context, nil, 0, 1)
    }
    if stopped { return }
    if var firstError {
      // The push parser calls a document that ends before its root element (white space
      // only, a declaration only, a lone `<`) "Extra content at the end of the document".
      if !sawElement && firstError.code == Self.documentEndCode {
        firstError.code = XMLStreamError.emptyDocumentCode
        firstError.message = "Document has no root element"
      }
      throw firstError
    }
    if context.pointee.wellFormed == 0 {
      let (line, column) = position
      throw XMLStreamError(
        code: Int(context.pointee.errNo), message: "the document is not well-formed",
        line: line > 0 ? line : nil, column: column > 0 ? column : nil,
        endsEarly: atEndOfInput && openElements > 0)
    }
  }

  private final func handleStart(
    _ localName: UnsafePointer<xmlChar>?, _ prefix: UnsafePointer<xmlChar>?,
    _ uri: UnsafePointer<xmlChar>?, _ attributeCount: Int32,
    _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
  ) {
    guard !stopped else { return }
    sawElement = true
    openElements += 1
    let (line, column) = position
    let element = XMLStartElement(
      localName: name(localName) ?? "", prefix: name(prefix), namespaceURI: name(uri),
      line: line, column: column, attributes: UnsafePointer(attributes),
      attributeCount: Int(max(0, attributeCount)))
    if start(element) == .stop {
      stopped = true
      if let context { xmlStopParser(context) }
    }
  }
}

/// The session of one handler type.
final class XMLStreamSessionFor<Handler: XMLStreamHandler>: XMLStreamSession {
  let handler: Handler

  init(_ handler: Handler) { self.handler = handler }

  override func start(_ element: XMLStartElement) -> XMLStreamDecision {
    handler.startElement(element)
  }

  override func end(localName: String, namespaceURI: String?) {
    handler.endElement(localName: localName, namespaceURI: namespaceURI)
  }

  override func characters(_ utf8: UnsafeBufferPointer<UInt8>) { handler.characters(utf8) }
}
