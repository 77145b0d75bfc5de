import DelimitedText
import Foundation
import Testing

@Test func splitsQuotedFieldsWithDelimitersQuotesAndLineBreaks() {
  let text = "id,name\r\n1,\"Sion, VS\"\r\n2,\"say \"\"hi\"\"\"\n3,\"two\nlines\"\n\n4,\n"
  let (records, issues) = DelimitedText.records(in: text, delimiter: UInt8(ascii: ","))
  #expect(issues.isEmpty)
  #expect(
    records == [
      DelimitedRecord(fields: ["id", "name"], line: 1),
      DelimitedRecord(fields: ["1", "Sion, VS"], line: 2),
      DelimitedRecord(fields: ["2", "say \"hi\""], line: 3),
      DelimitedRecord(fields: ["3", "two\nlines"], line: 4),
      DelimitedRecord(fields: ["4", ""], line: 7),
    ])
}

@Test func reportsAnUnterminatedQuoteWithItsLine() {
  let (records, issues) = DelimitedText.records(
    in: "a;b\n1;2\n3;\"open\n", delimiter: UInt8(ascii: ";"))
  #expect(records.count == 2)
  #expect(issues == [DelimitedTextIssue(line: 3, message: issues.first?.message ?? "")])
  #expect(issues.first?.message.contains("never closed") == true)
  #expect(issues.first?.message.contains("the line is skipped") == true)
  // A stray quote costs its own row: the rows after it are read.
  let (after, spanning) = DelimitedText.records(
    in: "a,b\n1,\"open\n2,3\n4,5\n", delimiter: UInt8(ascii: ","))
  #expect(after.map(\.fields) == [["a", "b"], ["2", "3"], ["4", "5"]])
  #expect(after.map(\.line) == [1, 3, 4])
  #expect(
    spanning == [
      DelimitedTextIssue(
        line: 2,
        message:
          "quoted field opened here is never closed; the line is skipped, the lines after it are read"
      )
    ])
  // A record whose first field spans lines (closed) and whose next field never closes: its
  // lines are named, and the rows after the stray quote's line are read.
  let (rows, spans) = DelimitedText.records(
    in: "\"x\ny\",\"open\n1,2\n3,4", delimiter: UInt8(ascii: ","))
  #expect(rows.map(\.fields) == [["1", "2"], ["3", "4"]])
  #expect(rows.map(\.line) == [3, 4])
  #expect(spans.map(\.line) == [2])
  #expect(spans.first?.message.contains("lines 1-2 are skipped") == true)
}

@Test func detectsTheDelimiterOutsideQuotes() {
  #expect(DelimitedText.detectDelimiter(in: "user_id;longitude;latitude") == UInt8(ascii: ";"))
  #expect(DelimitedText.detectDelimiter(in: "a\tb\tc") == 9)
  #expect(DelimitedText.detectDelimiter(in: "\"x;y;z\",b,c") == UInt8(ascii: ","))
  #expect(DelimitedText.detectDelimiter(in: "single") == UInt8(ascii: ","))
}

@Test func decodesLatin1AndDropsBOMAndLineLeadingNULs() {
  let latin1 = Data([0x56, 0xE9, 0x7A, 0x65, 0x6C, 0x61, 0x79])  // "Vézelay" in ISO-8859-1
  #expect(DelimitedText.decode(latin1) == ("Vézelay", true))
  // A NUL inside a line is kept: its field is then refused by its own rules.
  let bom = Data([0xEF, 0xBB, 0xBF, 0x61, 0x00, 0x62])
  #expect(DelimitedText.decode(bom) == ("a\u{0}b", false))
  // A logger's padding: NUL runs at the start of a line (at the end of the file, or before
  // the lines written after a restart) are removed, after LF, CR or CRLF.
  let padded =
    Data("t,1\n".utf8) + Data(repeating: 0, count: 9) + Data("t,2\r\n".utf8)
    + Data(repeating: 0, count: 3) + Data("t,0\u{0}.5\r".utf8) + Data(repeating: 0, count: 4)
  #expect(DelimitedText.decode(padded) == ("t,1\nt,2\r\nt,0\u{0}.5\r", false))
  #expect(DelimitedText.decode(Data([0, 0, 0x41])) == ("A", false))
}

@Test func parsesDecimalCommaOnlyWhenAsked() {
  #expect(DelimitedText.parseDouble(" 46,5 ", decimalComma: true) == 46.5)
  #expect(DelimitedText.parseDouble("46,5") == nil)
  #expect(DelimitedText.parseDouble("-7.25") == -7.25)
  #expect(DelimitedText.parseDouble("") == nil)
}

@Test func trimsBlanksExactlyAsFoundationsWhitespaceSet() {
  // Oracle: Foundation's `trimmingCharacters(in: .whitespaces)` (tab and Unicode Zs).
  let blanks = [" ", "\t", "\u{00A0}", "\u{1680}", "\u{2000}", "\u{2009}", "\u{202F}", "\u{3000}"]
  let kept = ["\n", "\r", "\u{200B}", "\u{FEFF}", "x"]
  var texts = ["", "a", "46.5", "é", "a b", "👍🏽", "e\u{301}"]
  for b in blanks {
    texts += [b, b + b, b + "1.5", "1.5" + b, b + "a" + b + "b" + b, b + "e\u{301}" + b]
  }
  for k in kept { texts += [k + " 2 " + k, " " + k + " "] }
  for text in texts {
    let expected = text.trimmingCharacters(in: .whitespaces)
    #expect(String(DelimitedText.trimmingBlanks(text)) == expected, "\(Array(text.unicodeScalars))")
    #expect(String(DelimitedText.trimmingBlanks(text[...])) == expected)
  }
  #expect(DelimitedText.trimmingBlanks("\u{00A0} 4 \t") == "4")
}

/// A stray quote that another row's quote closes (the field spans lines and its closing quote
/// is followed by text) costs only its own row: the rows between are read, not swallowed.
@Test func aStrayQuoteClosedByAnotherRowsQuoteCostsOnlyItsRow() {
  let text = "id,name,lat\na,\"Alp,46\nb,Beta,46.1\nc,\"Cee,46.2\nd,Dee,46.3\n"
  let (records, issues) = DelimitedText.records(in: text, delimiter: UInt8(ascii: ","))
  #expect(
    records.map(\.fields) == [
      ["id", "name", "lat"], ["b", "Beta", "46.1"], ["d", "Dee", "46.3"],
    ])
  #expect(issues.map(\.line) == [2, 4])
  // A field that spans lines and closes before a delimiter or a line end is kept.
  let (kept, none) = DelimitedText.records(
    in: "id,name\na,\"two\nlines\"\nb,x\n", delimiter: UInt8(ascii: ","))
  #expect(kept.map(\.fields) == [["id", "name"], ["a", "two\nlines"], ["b", "x"]])
  #expect(none.isEmpty)
}
