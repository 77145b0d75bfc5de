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
/// - A quoted field never closed (it would run to the end of the file), or one that spans
///   lines and whose closing quote is followed by text (a stray quote closed by another row's
///   quote), is reported as an issue naming the line where it opened; its record is not
///   returned, and the records after that line are read as if the record had ended there, so
///   a stray quote costs only its own row.
public enum DelimitedText {
  /// Candidate delimiters, in the order ties are broken: comma, semicolon, tab.
  public static let candidateDelimiters: [UInt8] = [UInt8(ascii: ","), UInt8(ascii: ";"), 9]

  /// Decodes file bytes as text: UTF-16 when they start with its byte-order mark
  /// (``utf16Text(_:)``), else UTF-8, or ISO-8859-1 when the bytes are not valid UTF-8
  /// (every byte sequence is valid ISO-8859-1). A run of NUL bytes at the start of a line (the
  /// padding a logger leaves in a preallocated file when it stops, before the lines it writes
  /// after a restart) is removed; a NUL inside a line is kept, so the field holding it is
  /// refused by its own rules (not a number, a control character in an id) instead of being
  /// joined silently with its neighbours (`0<NUL>.5` read as 0.5). Every UTF-8 byte-order
  /// mark is removed (U+FEFF), not only a leading one: files
  /// joined with `cat` carry one at the start of each part, and U+FEFF as a zero-width
  /// no-break space inside text is deprecated (Unicode §23.8), so it would only end up,
  /// invisible, inside an id or a header name.
  /// - Returns: the text and whether the ISO-8859-1 fallback was used.
  /// - Complexity: O(n) in the data's size.
  public static func decode(_ data: Data) -> (text: String, usedLatin1: Bool) {
    let (utf8, usedLatin1) = decodedUTF8(data)
    return (String(decoding: utf8, as: UTF8.self), usedLatin1)
  }

  /// ``decode(_:)`` as bytes: valid UTF-8, without line-leading NUL bytes and byte-order marks, for the
  /// readers that split and parse bytes without making a `String` of the whole file.
  /// - Returns: the UTF-8 bytes and whether the ISO-8859-1 fallback was used.
  /// - Complexity: O(n) in the data's size: one copy, one pass for NULs and marks, one
  ///   ASCII scan of 8 bytes a step (the full UTF-8 validation only when a byte is not ASCII).
  public static func decodedUTF8(_ data: Data) -> (utf8: [UInt8], usedLatin1: Bool) {
    if let text = utf16Text(data) { return (Array(text.utf8), false) }
    var bytes = [UInt8](data)
    if bytes.contains(0) { removeLineLeadingNULs(&bytes) }
    removeByteOrderMarks(&bytes)
    let ascii = bytes.withUnsafeBytes { isPlainASCII($0) }
    if ascii || String(validating: bytes, as: UTF8.self) != nil {
      return (bytes, false)
    }
    // ISO-8859-1 byte b is U+00bb: transcode to UTF-8 directly (at most two bytes each).
    var utf8: [UInt8] = []
    utf8.reserveCapacity(bytes.count + bytes.count / 8)
    for b in bytes {
      if b < 0x80 {
        utf8.append(b)
      } else {
        utf8.append(0xC0 | b >> 6)
        utf8.append(0x80 | b & 0x3F)
      }
    }
    return (utf8, true)
  }

  /// The text of data that starts with a UTF-16 byte-order mark (`FF FE` little-endian, `FE
  /// FF` big-endian, as spreadsheet programs write "Unicode text"), without the mark; nil for
  /// other data. Unpaired surrogates become U+FFFD, and so does an odd last byte.
  /// - Complexity: O(n).
  public static func utf16Text(_ data: Data) -> String? {
    guard data.count >= 2 else { return nil }
    let first = data[data.startIndex]
    let second = data[data.startIndex + 1]
    let little: Bool
    if first == 0xFF && second == 0xFE {
      little = true
    } else if first == 0xFE && second == 0xFF {
      little = false
    } else {
      return nil
    }
    let units = data.withUnsafeBytes { raw -> [UInt16] in
      let count = (raw.count - 2) / 2
      var units = [UInt16](repeating: 0, count: count + (raw.count % 2))
      for k in 0..<count {
        let a = UInt16(raw[2 + 2 * k])
        let b = UInt16(raw[3 + 2 * k])
        units[k] = little ? a | b << 8 : a << 8 | b
      }
      // An odd last byte is no code unit: a lone surrogate decodes to U+FFFD.
      if raw.count % 2 == 1 { units[count] = 0xD800 }
      return units
    }
    var text = String(decoding: units, as: UTF16.self)
    // A second mark (files joined with `cat`) is dropped as ``decode(_:)`` drops UTF-8 ones.
    if text.unicodeScalars.contains("\u{FEFF}") {
      text.unicodeScalars.removeAll { $0 == "\u{FEFF}" }
    }
    return text
  }

  /// Removes every NUL byte that stands at the start of the data or of a line (after LF or
  /// CR), runs of them included; keeps the others. O(n), in place.
  static func removeLineLeadingNULs(_ bytes: inout [UInt8]) {
    var kept = 0
    var atLineStart = true
    for i in bytes.indices {
      let b = bytes[i]
      if b == 0 && atLineStart { continue }
      atLineStart = b == 0x0A || b == 0x0D
      bytes[kept] = b
      kept += 1
    }
    bytes.removeSubrange(kept...)
  }

  /// Calls `body` with the bytes of ``decodedUTF8(_:)``: with `data`'s own bytes when they are
  /// ASCII without NUL bytes, or valid UTF-8 without NUL bytes and without any 0xEF byte (so
  /// without a byte-order mark): in both cases already what decoding would give. Else with a
  /// decoded copy. A large file is then never held twice.
  /// - Returns: `body`'s result and whether the ISO-8859-1 fallback was used.
  /// - Complexity: O(n): one scan of 8 bytes a step, a second for NUL and 0xEF bytes and the
  ///   UTF-8 validation when a byte is not ASCII, and the decoding when it is needed.
  public static func withDecodedUTF8<R>(
    _ data: Data, _ body: (UnsafeBufferPointer<UInt8>) throws -> R
  ) rethrows -> (result: R, usedLatin1: Bool) {
    let plain = data.withUnsafeBytes { raw in
      isPlainASCII(raw)
        || (!hasNULOrEF(raw) && isValidUTF8(raw.assumingMemoryBound(to: UInt8.self)))
    }
    if plain {
      return (try data.withUnsafeBytes { try body($0.assumingMemoryBound(to: UInt8.self)) }, false)
    }
    let (utf8, usedLatin1) = decodedUTF8(data)
    return (try utf8.withUnsafeBufferPointer { try body($0) }, usedLatin1)
  }

  /// True when every byte is in 0x01 ... 0x7F.
  static func isPlainASCII(_ raw: UnsafeRawBufferPointer) -> Bool {
    let words = raw.count / 8
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    var bad: UInt64 = 0
    for w in 0..<words {
      let x = raw.loadUnaligned(fromByteOffset: w * 8, as: UInt64.self)
      // High bits set, or a zero byte (the classic `(x - 0x01..) & ~x & 0x80..` test).
      bad |= x | ((x &- ones) & ~x)
    }
    if bad & highs != 0 { return false }
    for i in (words * 8)..<raw.count where raw[i] == 0 || raw[i] >= 0x80 { return false }
    return true
  }

  /// True when some byte is 0x00 or 0xEF (the first byte of a UTF-8 byte-order mark).
  static func hasNULOrEF(_ raw: UnsafeRawBufferPointer) -> Bool {
    let words = raw.count / 8
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let ef = ones &* 0xEF
    var found: UInt64 = 0
    for w in 0..<words {
      let x = raw.loadUnaligned(fromByteOffset: w * 8, as: UInt64.self)
      let y = x ^ ef
      // A zero byte of x or of y (the `(x - 0x01..) & ~x & 0x80..` test).
      found |= (x &- ones) & ~x | (y &- ones) & ~y
    }
    if found & highs != 0 { return true }
    for i in (words * 8)..<raw.count where raw[i] == 0 || raw[i] == 0xEF { return true }
    return false
  }

  /// True when `bytes` are valid UTF-8 (RFC 3629), checked in place (the standard library's
  /// `UTF8Span` validation, the same rules as `String(validating:as:)`).
  public static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    (try? UTF8Span(validating: bytes.span)) != nil
  }

  /// Removes every `EF BB BF` sequence, in place.
  static func removeByteOrderMarks(_ bytes: inout [UInt8]) {
    guard var read = bytes.firstIndex(of: 0xEF) else { return }
    var write = read
    let n = bytes.count
    while read < n {
      if bytes[read] == 0xEF, read + 2 < n, bytes[read + 1] == 0xBB, bytes[read + 2] == 0xBF {
        read += 3
        continue
      }
      bytes[write] = bytes[read]
      write += 1
      read += 1
    }
    bytes.removeLast(n - write)
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
  /// - Complexity: O(n) in the text's length. Holds every record: for large files prefer
  ///   ``forEachRecord(in:delimiter:_:)``.
  public static func records(in text: String, delimiter: UInt8) -> (
    records: [DelimitedRecord], issues: [DelimitedTextIssue]
  ) {
    var records: [DelimitedRecord] = []
    let issues = forEachRecord(in: text[...], delimiter: delimiter) { fields, line in
      records.append(DelimitedRecord(fields: fields, line: line))
    }
    return (records, issues)
  }

  /// Splits `text` into records and hands each to `body` as it is found, with the 1-based line
  /// where it starts (line 1 is the first line of `text`). The fields array is reused for the
  /// next record (a copy kept by `body` stays intact), so memory is bounded by the longest
  /// record, not the file: a 12 MB track of many short columns no longer holds a `String`
  /// per cell of the whole file at once.
  /// - Returns: the issues found (each quoted field never closed).
  /// - Complexity: O(n) in the text's length.
  @discardableResult
  public static func forEachRecord(
    in text: Substring, delimiter: UInt8, _ body: (_ fields: [String], _ line: Int) -> Void
  ) -> [DelimitedTextIssue] {
    if let issues = text.utf8.withContiguousStorageIfAvailable({
      forEachStringRecord(utf8: $0, delimiter: delimiter, body)
    }) {
      return issues
    }
    let copy = Array(text.utf8)
    return copy.withUnsafeBufferPointer {
      forEachStringRecord(utf8: $0, delimiter: delimiter, body)
    }
  }

  private static func forEachStringRecord(
    utf8: UnsafeBufferPointer<UInt8>, delimiter: UInt8, _ body: ([String], Int) -> Void
  ) -> [DelimitedTextIssue] {
    var strings: [String] = []
    return forEachRecord(utf8: utf8, delimiter: delimiter) { fields, line in
      strings.removeAll(keepingCapacity: true)
      for i in 0..<fields.count { strings.append(fields.string(i)) }
      body(strings, line)
    }
  }

  /// Splits UTF-8 `utf8` into records, as ``forEachRecord(in:delimiter:_:)``, and hands each
  /// to `body` as byte spans: no `String` is made for a field unless `body` asks for one.
  /// An unquoted field is a span of `utf8` itself; a quoted field is unquoted (`""` becomes
  /// `"`, the text after the closing quote kept) into a scratch buffer reused for every
  /// record. The spans are valid only during the call of `body`.
  /// - Parameters:
  ///   - utf8: the whole file, or a part of it that starts at the start of a line outside any
  ///     quoted field.
  ///   - delimiter: an ASCII delimiter byte (not `"`, CR or LF).
  ///   - firstLine: the number of the line `utf8` starts on: 1 (the default) for a whole
  ///     file; for a part, 1 plus the line ends before it (each LF, CR LF or lone CR).
  /// - Returns: the issues found (each quoted field never closed; its record is not
  ///   handed to `body`).
  /// - Complexity: O(n) in the text's length; allocates only to grow the reused span and
  ///   scratch buffers (to the size of the longest record).
  @discardableResult
  public static func forEachRecord(
    utf8: UnsafeBufferPointer<UInt8>, delimiter: UInt8, firstLine: Int = 1,
    _ body: (_ fields: DelimitedFields, _ line: Int) -> Void
  ) -> [DelimitedTextIssue] {
    let quote = UInt8(ascii: "\"")
    let cr = UInt8(ascii: "\r")
    let lf = UInt8(ascii: "\n")
    // Two entries a field, in storage owned here (no uniqueness or capacity check a field),
    // doubled when a record has more fields than it holds.
    var spans = UnsafeMutableBufferPointer<Int>.allocate(capacity: 64)
    defer { spans.deallocate() }
    var spanCount = 0
    var scratch: [UInt8] = []
    var issues: [DelimitedTextIssue] = []
    var line = firstLine
    var i = 0
    let n = utf8.count
    records: while i < n {
      let first = utf8[i]
      if first == lf || first == cr {
        // A blank line: not a record.
        i += first == cr && i + 1 < n && utf8[i + 1] == lf ? 2 : 1
        line += 1
        continue
      }
      let recordLine = line
      spanCount = 0
      if !scratch.isEmpty { scratch.removeAll(keepingCapacity: true) }
      while true {
        if spanCount + 2 > spans.count {
          let larger = UnsafeMutableBufferPointer<Int>.allocate(capacity: 2 * spans.count)
          _ = larger.initialize(fromContentsOf: spans)
          spans.deallocate()
          spans = larger
        }
        if i < n && utf8[i] == quote {
          // A quoted field, unquoted into `scratch`; then any text up to the delimiter.
          let start = scratch.count
          let quoteLine = line
          let quoteIndex = i
          var closed = false
          i += 1
          while i < n {
            let b = utf8[i]
            if b == quote {
              if i + 1 < n && utf8[i + 1] == quote {
                scratch.append(quote)
                i += 2
                continue
              }
              i += 1
              closed = true
              break
            }
            if b == lf || (b == cr && !(i + 1 < n && utf8[i + 1] == lf)) { line += 1 }
            scratch.append(b)
            i += 1
          }
          // A field that spans lines and whose closing quote is followed by text (not a
          // delimiter or a line end) was opened by a stray quote and closed by another
          // row's: refused as a field never closed, so that the rows between are read.
          let strayClose =
            closed && line > quoteLine && i < n && utf8[i] != delimiter && utf8[i] != lf
            && utf8[i] != cr
          if !closed || strayClose {
            // Its record is refused up to the end of the line where the quote opened, and the
            // lines after it are read again.
            issues.append(unterminatedQuote(record: recordLine, quote: quoteLine))
            i = quoteIndex + 1
            while i < n && utf8[i] != lf && utf8[i] != cr { i += 1 }
            if i < n { i += utf8[i] == cr && i + 1 < n && utf8[i + 1] == lf ? 2 : 1 }
            line = quoteLine + 1
            continue records
          }
          while i < n {
            let b = utf8[i]
            if b == delimiter || b == lf || b == cr { break }
            scratch.append(b)
            i += 1
          }
          spans[spanCount] = -(start + 1)
          spans[spanCount + 1] = scratch.count
          spanCount += 2
        } else {
          let start = i
          i = endOfUnquotedField(utf8, from: i, delimiter: delimiter)
          spans[spanCount] = start
          spans[spanCount + 1] = i
          spanCount += 2
        }
        if i < n && utf8[i] == delimiter {
          i += 1
          continue
        }
        break
      }
      if i < n {
        i += utf8[i] == cr && i + 1 < n && utf8[i + 1] == lf ? 2 : 1
        line += 1
      }
      let fieldSpans = UnsafeBufferPointer(rebasing: spans[0..<spanCount])
      scratch.withUnsafeBufferPointer { scratch in
        body(DelimitedFields(text: utf8, scratch: scratch, spans: fieldSpans), recordLine)
      }
    }
    return issues
  }

  /// The index of the first delimiter, LF or CR in `utf8` from `start`, or `utf8.count`:
  /// 8 bytes a step (a byte equal to one of the three is a zero byte of the word XORed with
  /// it, found by the classic `(x - 0x01..) & ~x & 0x80..` test, exact for the lowest such
  /// byte), then byte by byte.
  /// - Complexity: O(n) in the bytes passed; no allocation.
  @inline(__always)
  static func endOfUnquotedField(
    _ utf8: UnsafeBufferPointer<UInt8>, from start: Int, delimiter: UInt8
  ) -> Int {
    let n = utf8.count
    var i = start
    if let base = utf8.baseAddress {
      let ones: UInt64 = 0x0101_0101_0101_0101
      let highs: UInt64 = 0x8080_8080_8080_8080
      let d = ones &* UInt64(delimiter)
      let lf = ones &* 0x0A
      let cr = ones &* 0x0D
      while i &+ 8 <= n {
        let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
        let a = w ^ d
        let b = w ^ lf
        let c = w ^ cr
        let found =
          ((a &- ones) & ~a | (b &- ones) & ~b | (c &- ones) & ~c) & highs
        if found != 0 { return i &+ found.littleEndian.trailingZeroBitCount >> 3 }
        i &+= 8
      }
    }
    while i < n {
      let b = utf8[i]
      if b == delimiter || b == 0x0A || b == 0x0D { break }
      i += 1
    }
    return i
  }

  /// The issue of a record starting on line `record` whose quoted field opened on line
  /// `quote` is never closed: that record is skipped, and reading goes on at the line after
  /// `quote` (a stray quote costs its own row, not the rest of the file).
  static func unterminatedQuote(record: Int, quote: Int) -> DelimitedTextIssue {
    let span = record < quote ? "lines \(record)-\(quote) are skipped" : "the line is skipped"
    return DelimitedTextIssue(
      line: quote,
      message: "quoted field opened here is never closed; \(span), the lines after it are read")
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

/// The fields of one record, as byte spans (see
/// ``DelimitedText/forEachRecord(utf8:delimiter:_:)``): valid only while the record is being
/// handled.
public struct DelimitedFields {
  @usableFromInline let text: UnsafeBufferPointer<UInt8>
  @usableFromInline let scratch: UnsafeBufferPointer<UInt8>
  /// Two entries a field: its start and end; a start below 0 is `-(offset + 1)` in `scratch`.
  @usableFromInline let spans: UnsafeBufferPointer<Int>

  init(
    text: UnsafeBufferPointer<UInt8>, scratch: UnsafeBufferPointer<UInt8>,
    spans: UnsafeBufferPointer<Int>
  ) {
    self.text = text
    self.scratch = scratch
    self.spans = spans
  }

  /// Number of fields (at least 1).
  @inlinable public var count: Int { spans.count / 2 }

  /// The UTF-8 bytes of field `i` (0 ..< ``count``), unquoted, not trimmed.
  @inlinable
  public subscript(i: Int) -> UnsafeBufferPointer<UInt8> {
    let start = spans[2 * i]
    let end = spans[2 * i + 1]
    if start >= 0 { return UnsafeBufferPointer(rebasing: text[start..<end]) }
    return UnsafeBufferPointer(rebasing: scratch[(-start - 1)..<end])
  }

  /// Field `i` as a `String` (invalid UTF-8 repaired with U+FFFD, as `String(decoding:)`).
  @inlinable
  public func string(_ i: Int) -> String { String(decoding: self[i], as: UTF8.self) }
}

extension DelimitedText {
  /// `text` without its leading and trailing blanks: tab (U+0009), the Unicode space
  /// separators (general category Zs, such as U+0020 and U+00A0) and U+200B ZERO WIDTH SPACE
  /// (a Zs before Unicode 4.0.1). That is the set of Foundation's `CharacterSet.whitespaces`
  /// on Linux, so the result equals `text.trimmingCharacters(in: .whitespaces)`; line breaks
  /// are not blanks.
  /// - Complexity: O(b) in the blanks removed, plus two scalar reads; no allocation.
  @inlinable
  public static func trimmingBlanks(_ text: Substring) -> Substring {
    let scalars = text.unicodeScalars
    var start = scalars.startIndex
    var end = scalars.endIndex
    while start < end && isBlank(scalars[start]) { start = scalars.index(after: start) }
    while end > start {
      let before = scalars.index(before: end)
      if !isBlank(scalars[before]) { break }
      end = before
    }
    if start == scalars.startIndex && end == scalars.endIndex { return text }
    return Substring(scalars[start..<end])
  }

  /// ``trimmingBlanks(_:)-(Substring)`` of a `String`.
  @inlinable
  public static func trimmingBlanks(_ text: String) -> Substring { trimmingBlanks(text[...]) }

  /// ``trimmingBlanks(_:)-(Substring)`` of valid UTF-8 bytes: the same blanks removed, as a
  /// span of `utf8`. ASCII ends are judged from the byte; a multi-byte character at an end is
  /// decoded and judged by ``isBlank(_:)``.
  /// - Complexity: O(b) in the blanks removed; no allocation.
  @inlinable
  public static func trimmingBlanks(utf8: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<
    UInt8
  > {
    var start = 0
    var end = utf8.count
    while start < end {
      let b = utf8[start]
      if b < 0x80 {
        guard b == 0x20 || b == 0x09 else { break }
        start += 1
        continue
      }
      // A lead byte: 110xxxxx, 1110xxxx or 11110xxx, then 10xxxxxx bytes.
      let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
      guard start + length <= end, isBlank(scalarOf: utf8, start, length) else { break }
      start += length
    }
    while end > start {
      let b = utf8[end - 1]
      if b < 0x80 {
        guard b == 0x20 || b == 0x09 else { break }
        end -= 1
        continue
      }
      var lead = end - 1
      while lead > start, utf8[lead] & 0xC0 == 0x80 { lead -= 1 }
      guard isBlank(scalarOf: utf8, lead, end - lead) else { break }
      end = lead
    }
    return UnsafeBufferPointer(rebasing: utf8[start..<end])
  }

  /// Whether the UTF-8 sequence of `length` (2–4) bytes at `start` is a blank.
  @usableFromInline
  static func isBlank(scalarOf utf8: UnsafeBufferPointer<UInt8>, _ start: Int, _ length: Int)
    -> Bool
  {
    var value = UInt32(utf8[start]) & (0x7F >> UInt32(length))
    for k in 1..<length { value = value << 6 | UInt32(utf8[start + k] & 0x3F) }
    guard let scalar = Unicode.Scalar(value) else { return false }
    return isBlank(scalar)
  }

  /// `utf8` without leading and trailing spaces (U+0020) and tabs, as
  /// ``parseDouble(_:decimalComma:)`` trims a number.
  @inlinable
  public static func trimmingSpacesAndTabs(_ utf8: UnsafeBufferPointer<UInt8>)
    -> UnsafeBufferPointer<UInt8>
  {
    var start = 0
    var end = utf8.count
    while start < end && (utf8[start] == 0x20 || utf8[start] == 0x09) { start += 1 }
    while end > start && (utf8[end - 1] == 0x20 || utf8[end - 1] == 0x09) { end -= 1 }
    return UnsafeBufferPointer(rebasing: utf8[start..<end])
  }

  /// True for tab, the Unicode space separators (general category Zs) and U+200B (see
  /// ``trimmingBlanks(_:)-(Substring)``).
  @inlinable
  public static func isBlank(_ scalar: Unicode.Scalar) -> Bool {
    if scalar.value < 0x80 { return scalar.value == 0x20 || scalar.value == 0x09 }
    return scalar.value == 0x200B || scalar.properties.generalCategory == .spaceSeparator
  }
}
