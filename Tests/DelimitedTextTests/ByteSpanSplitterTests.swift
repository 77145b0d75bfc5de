import DelimitedText
import GeofenceTestSupport
import Testing

/// The record splitter as it was before it handed out byte spans: a byte-at-a-time state
/// machine building each field in a buffer. Kept as the oracle of the span splitter.
private func referenceRecords(_ utf8: [UInt8], delimiter: UInt8) -> (
  records: [DelimitedRecord], issues: [DelimitedTextIssue]
) {
  var records: [DelimitedRecord] = []
  var issues: [DelimitedTextIssue] = []
  let quote = UInt8(ascii: "\"")
  let cr = UInt8(ascii: "\r")
  let lf = UInt8(ascii: "\n")
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
    field.removeAll()
    fieldWasQuoted = false
  }
  var quoteIndex = 0
  while i <= n {
    let b = i < n ? utf8[i] : lf
    if inQuotes {
      if i == n {
        // Never closed: the record is dropped up to the end of the quote's line, and the
        // lines after it are read again.
        let span =
          recordLine < quoteStartLine
          ? "lines \(recordLine)-\(quoteStartLine) are skipped" : "the line is skipped"
        issues.append(
          DelimitedTextIssue(
            line: quoteStartLine,
            message: "quoted field opened here is never closed; \(span), "
              + "the lines after it are read"))
        i = quoteIndex + 1
        while i < n && utf8[i] != lf && utf8[i] != cr { i += 1 }
        if i < n { i += utf8[i] == cr && i + 1 < n && utf8[i + 1] == lf ? 2 : 1 }
        line = quoteStartLine + 1
        recordLine = line
        inQuotes = false
        fields.removeAll()
        field.removeAll()
        fieldWasQuoted = false
        if i >= n { break }
        continue
      }
      if b == quote {
        if i + 1 < n, utf8[i + 1] == quote {
          field.append(quote)
          i += 2
          continue
        }
        inQuotes = false
        // Spanning lines and followed by text: a stray quote, refused as never closed.
        if line > quoteStartLine, i + 1 < n, utf8[i + 1] != delimiter, utf8[i + 1] != lf,
          utf8[i + 1] != cr
        {
          i = n
          inQuotes = true
          continue
        }
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
      quoteIndex = i
    } else if b == delimiter {
      endField()
    } else if b == lf || b == cr {
      if b == cr, i + 1 < n, utf8[i + 1] == lf { i += 1 }
      let blank = fields.isEmpty && field.isEmpty && !fieldWasQuoted
      if !blank {
        endField()
        records.append(DelimitedRecord(fields: fields, line: recordLine))
      }
      fields.removeAll()
      field.removeAll()
      fieldWasQuoted = false
      line += 1
      recordLine = line
    } else {
      field.append(b)
    }
    i += 1
  }
  return (records, issues)
}

/// The span splitter, its fields made into strings.
private func spanRecords(_ utf8: [UInt8], delimiter: UInt8) -> (
  records: [DelimitedRecord], issues: [DelimitedTextIssue]
) {
  var records: [DelimitedRecord] = []
  let issues = utf8.withUnsafeBufferPointer { bytes in
    DelimitedText.forEachRecord(utf8: bytes, delimiter: delimiter) { fields, line in
      records.append(
        DelimitedRecord(fields: (0..<fields.count).map { fields.string($0) }, line: line))
    }
  }
  return (records, issues)
}

@Test func spanSplitterEqualsTheByteAtATimeSplitterOnRandomText() {
  // Every byte the splitter treats specially, with ordinary ones, blanks and UTF-8.
  let alphabet: [[UInt8]] = [
    [UInt8(ascii: "a")], [UInt8(ascii: "7")], [UInt8(ascii: ",")], [UInt8(ascii: ";")],
    [UInt8(ascii: "\"")], [UInt8(ascii: "\"")], [UInt8(ascii: "\r")], [UInt8(ascii: "\n")],
    [UInt8(ascii: " ")], [9], Array("é".utf8), Array("\r\n".utf8), Array("\"\"".utf8),
  ]
  for seed in UInt64(1)...400 {
    var rng = SeededGenerator(seed: seed)
    let length = Int.random(in: 0...60, using: &rng)
    var text: [UInt8] = []
    for _ in 0..<length { text += alphabet.randomElement(using: &rng) ?? [] }
    for delimiter in [UInt8(ascii: ","), UInt8(ascii: ";"), 9] {
      let expected = referenceRecords(text, delimiter: delimiter)
      let got = spanRecords(text, delimiter: delimiter)
      #expect(got.records == expected.records, "seed \(seed), delimiter \(delimiter)")
      #expect(got.issues == expected.issues, "seed \(seed), delimiter \(delimiter)")
    }
  }
}

@Test func spanSplitterHandsOutUnquotedFieldsAsSpansOfTheText() {
  let text = Array("id,name\n1,\"a \"\"b\"\"\"x,\n".utf8)
  var seen: [[String]] = []
  _ = text.withUnsafeBufferPointer { bytes in
    DelimitedText.forEachRecord(utf8: bytes, delimiter: UInt8(ascii: ",")) { fields, _ in
      seen.append((0..<fields.count).map { fields.string($0) })
      // An unquoted field points into the text itself.
      let first = fields[0]
      let start = bytes.baseAddress.map { UInt(bitPattern: $0) } ?? 0
      let address = first.baseAddress.map { UInt(bitPattern: $0) } ?? 0
      #expect(address >= start && address < start + UInt(bytes.count))
    }
  }
  #expect(seen == [["id", "name"], ["1", "a \"b\"x", ""]])
}
