/// libxml2 found the document not well-formed, or could not decode it.
///
/// Carries libxml2's own description of the first error (an `xmlError` of level
/// `XML_ERR_ERROR` or `XML_ERR_FATAL`), so that a message names the problem, for example
/// `"Opening and ending tag mismatch: trkpt line 3 and trkseg"` or
/// `"Input is not proper UTF-8, indicate encoding ! Bytes: 0xDF 0x65 0x3E 0x0A"`.
public struct XMLStreamError: Error, Hashable, Sendable, CustomStringConvertible {
  /// libxml2's error code (`xmlParserErrors`): for example 4 `XML_ERR_DOCUMENT_EMPTY`,
  /// 5 `XML_ERR_DOCUMENT_END`, 9 `XML_ERR_INVALID_CHAR` (which covers invalid UTF-8),
  /// 26 `XML_ERR_UNDECLARED_ENTITY`, 73 `XML_ERR_GT_REQUIRED`, 76 `XML_ERR_TAG_NAME_MISMATCH`,
  /// 77 `XML_ERR_TAG_NOT_FINISHED`.
  public var code: Int
  /// libxml2's message on one line (its line breaks replaced by spaces), without the position.
  public var message: String
  /// 1-based line of the error, or `nil` when libxml2 gave none.
  public var line: Int?
  /// 1-based column (in bytes of the decoded UTF-8) of the error, or `nil` when libxml2 gave
  /// none.
  public var column: Int?
  /// Whether the input ended inside the document: libxml2 reported the error only once it was
  /// told that no more bytes follow, with at least one element still open (a truncated file;
  /// libxml2's message then often says something else, such as "Extra content at the end of
  /// the document").
  public var endsEarly: Bool

  public init(code: Int, message: String, line: Int?, column: Int?, endsEarly: Bool = false) {
    self.code = code
    self.message = message
    self.line = line
    self.column = column
    self.endsEarly = endsEarly
  }

  /// The code that means the input bytes are not valid in the document's encoding.
  public static let invalidCharacterCode = 9
  /// The code (`XML_ERR_DOCUMENT_EMPTY`) that means the document holds no element at all: it
  /// is empty, white space, or ends before its root element.
  public static let emptyDocumentCode = 4

  /// `line L, column C: message`, leaving out the parts libxml2 did not give.
  public var description: String {
    switch (line, column) {
    case (let line?, let column?): return "line \(line), column \(column): \(message)"
    case (let line?, nil): return "line \(line): \(message)"
    default: return message
    }
  }
}
