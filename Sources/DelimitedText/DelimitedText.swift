import Foundation
import NumberText

/// A record of a delimited text file (CSV, semicolon- or tab-separated).
public struct DelimitedRecord: Equatable, Sendable {
  /// The fields, unquoted (`""` inside quotes becomes `"`), not trimmed.
  public var fields: [String]
  /// 1-based line number where the record starts in the file.
  public var line: Int

  public init(fields: [String], line: Int) {
    self.fields = fields
    self.line = line
  }
}

/// A problem found while splitting a file into records.
public struct DelimitedTextIssue: Equatable, Sendable, CustomStringConvertible {
  /// 1-based line number.
  public var line: Int
  public var message: String
  public init(line: Int, message: String) {
    self.line = line
    self.message = message
  }
  public var description: String { "line \(line): \(message)" }
}

/// RFC 4180 tokenizer for delimited text, with the delimiter given or detected.
///
/// - Fields may be quoted with `"`; a quoted field may hold the delimiter, line breaks and `""`
///   (an escaped quote). Text after a closing quote up to the next delimiter is kept verbatim.
/// - Line ends: LF, CRLF or CR. Empty lines are skipped (they are not records).
/// - An unterminated quoted field at the end of the file is reported as an issue naming the
///   line where it began; the partial record is not returned.
public enum DelimitedText {
  /// Candidate delimiters, in the order ties are broken: comma, semicolon, tab.
  public static let candidateDelimiters: [UInt8] = [UInt8(ascii: ","), UInt8(ascii: ";"), 9]

  /// Decodes file bytes as text: UTF-8 (a byte-order mark is removed), or ISO-8859-1 when the
  /// bytes are not valid UTF-8 (every byte sequence is valid ISO-8859-1). NUL bytes (padding
  /// some loggers write) are removed.
  /// - Returns: the text and whether the ISO-8859-1 fallback was used.
  public static func decode(_ data: Data) -> (text: String, usedLatin1: Bool) {
    var bytes = [UInt8](data)
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
    if bytes.contains(0) { bytes.removeAll { $0 == 0 } }
    if let s = String(validating: bytes, as: UTF8.self) { return (s, false) }
    let scalars = bytes.map { Character(Unicode.Scalar($0)) }
    return (String(scalars), true)
  }

  /// Picks the delimiter of `line` (normally the header): the candidate that occurs most often
  /// outside quotes; comma when none occurs.
  /// - Complexity: O(n) in the line's length.
  public static func detectDelimiter(in line: Substring) -> UInt8 {
    var counts = [0, 0, 0]
    var inQuotes = false
    for b in line.utf8 {
      if b == UInt8(ascii: "\"") { inQuotes.toggle() }
      if inQuotes { continue }
      if let i = candidateDelimiters.firstIndex(of: b) { counts[i] += 1 }
    }
    var best = 0
    for i in 1..<counts.count where counts[i] > counts[best] { best = i }
    return candidateDelimiters[best]
  }

  /// Splits `text` into records.
  /// - Parameters:
  ///   - text: the whole file.
  ///   - delimiter: an ASCII delimiter byte.
  /// - Returns: the records in file order and the issues found.
  /// - Complexity: O(n) in the text's length.
  public static func records(in text: String, delimiter: UInt8) -> (
    records: [DelimitedRecord], issues: [DelimitedTextIssue]
  ) {
    var records: [DelimitedRecord] = []
    var issues: [DelimitedTextIssue] = []
    let quote = UInt8(ascii: "\"")
    let cr = UInt8(ascii: "\r")
    let lf = UInt8(ascii: "\n")
    var utf8 = Array(text.utf8)
    utf8.append(lf)  // sentinel: every record ends with a line break
    var fields: [String] = []
    var field: [UInt8] = []
    var line = 1
    var recordLine = 1
    var inQuotes = false
    var quoteStartLine = 1
    var fieldWasQuoted = false
    var i = 0
    let n = utf8.count
    func endField() {
      fields.append(String(decoding: field, as: UTF8.self))
      field.removeAll(keepingCapacity: true)
      fieldWasQuoted = false
    }
    while i < n {
      let b = utf8[i]
      if inQuotes {
        if b == quote {
          if i + 1 < n, utf8[i + 1] == quote {
            field.append(quote)
            i += 2
            continue
          }
          inQuotes = false
        } else {
          if b == lf || (b == cr && !(i + 1 < n && utf8[i + 1] == lf)) { line += 1 }
          field.append(b)
        }
        i += 1
        continue
      }
      if b == quote && field.isEmpty && !fieldWasQuoted {
        inQuotes = true
        fieldWasQuoted = true
        quoteStartLine = line
      } else if b == delimiter {
        endField()
      } else if b == lf || b == cr {
        if b == cr, i + 1 < n, utf8[i + 1] == lf { i += 1 }
        let blank = fields.isEmpty && field.isEmpty && !fieldWasQuoted
        if !blank {
          endField()
          records.append(DelimitedRecord(fields: fields, line: recordLine))
        }
        fields.removeAll(keepingCapacity: true)
        field.removeAll(keepingCapacity: true)
        fieldWasQuoted = false
        line += 1
        recordLine = line
      } else {
        field.append(b)
      }
      i += 1
    }
    if inQuotes {
      // The open field holds the rest of the file (and the sentinel line break): its line
      // breaks, trailing ones aside, say on which line the file ends.
      var content = field[...]
      while let last = content.last, last == lf || last == cr { content = content.dropLast() }
      let lastLine = quoteStartLine + content.reduce(0) { $0 + ($1 == lf ? 1 : 0) }
      let span =
        lastLine > quoteStartLine
        ? "lines \(quoteStartLine)-\(lastLine) (to the end of the file) are skipped with it"
        : "the line is skipped"
      issues.append(
        DelimitedTextIssue(
          line: quoteStartLine,
          message: "quoted field opened here is never closed; \(span)"))
    }
    return (records, issues)
  }

  /// Parses a number with ``NumberText/NumberText`` (RFC 8259's grammar; no hex, `inf` or
  /// `nan`; within ±1.8e308), which may use a decimal comma (`"46,99"`) when `decimalComma`
  /// is true. Surrounding spaces and tabs are ignored. Returns `nil` for empty, non-numeric or
  /// out-of-range text.
  public static func parseDouble(_ text: Substring, decimalComma: Bool = false) -> Double? {
    var t = text[...]
    while let first = t.first, first == " " || first == "\t" { t = t.dropFirst() }
    while let last = t.last, last == " " || last == "\t" { t = t.dropLast() }
    return NumberText.double(t, decimalComma: decimalComma)
  }
}
