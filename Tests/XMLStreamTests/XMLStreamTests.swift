import Testing
import XMLStream

/// Records every event as text, for comparison with the expected sequence.
private final class Recorder: XMLStreamHandler {
  var events: [String] = []
  var stopAt: String?
  private var text: [UInt8] = []

  func startElement(_ element: XMLStartElement) -> XMLStreamDecision {
    flush()
    let attributes = ["a", "b"].compactMap { name in element.attribute(name).map { "\(name)=\($0)" }
    }
    events.append(
      "start \(element.qualifiedName) {\(element.namespaceURI ?? "-")} \(element.line):\(element.column)"
        + (attributes.isEmpty ? "" : " " + attributes.joined(separator: " ")))
    return element.localName == stopAt ? .stop : .proceed
  }

  func endElement(localName: String, namespaceURI: String?) {
    flush()
    events.append("end \(localName)")
  }

  func characters(_ utf8: UnsafeBufferPointer<UInt8>) { text.append(contentsOf: utf8) }

  private func flush() {
    if !text.isEmpty { events.append("text \(String(decoding: text, as: UTF8.self))") }
    text.removeAll()
  }
}

private func parse(_ bytes: [UInt8], stopAt: String? = nil) throws(XMLStreamError) -> [String] {
  let recorder = Recorder()
  recorder.stopAt = stopAt
  let result: Result<Void, XMLStreamError> = bytes.withUnsafeBytes { raw in
    Result { () throws(XMLStreamError) in
      try XMLStream.parse(raw, documentName: "t.xml", handler: recorder)
    }
  }
  try result.get()
  return recorder.events
}

@Suite struct XMLStreamTests {
  @Test func namespacesAttributesTextAndPositions() throws {
    let doc = """
      <r xmlns="urn:d" xmlns:p="urn:p" a="1" p:b="2">
      <p:c b="x &amp; &#233;&#38;#38;"><![CDATA[<raw>]]>t&lt;</p:c></r>
      """
    let events = try parse(Array(doc.utf8))
    #expect(
      events == [
        "start r {urn:d} 1:47 a=1", "text \n", "start p:c {urn:p} 2:33 b=x & é&#38;",
        "text <raw>t<",
        "end c", "end r",
      ], "\(events)")
  }

  /// Columns are those of each start tag's `>` (or the `/` of `/>`).
  @Test func stopEndsTheParseWithoutAnError() throws {
    let events = try parse(Array("<a><b/><c>".utf8), stopAt: "b")
    #expect(events == ["start a {-} 1:3", "start b {-} 1:6"], "\(events)")
  }

  @Test func utf16WithByteOrderMarkIsDecoded() throws {
    var bytes: [UInt8] = [0xFF, 0xFE]
    for unit in "<a>é</a>".utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
    let events = try parse(bytes)
    #expect(events == ["start a {-} 1:3", "text é", "end a"], "\(events)")
  }

  @Test func errorsCarryLibxml2sMessageLineAndColumn() {
    #expect(
      throws: XMLStreamError(
        code: 76, message: "Opening and ending tag mismatch: b line 2 and a", line: 2, column: 8)
    ) {
      try parse(Array("<a>\n<b></a>".utf8))
    }
    #expect(throws: XMLStreamError(code: 4, message: "Document is empty", line: 1, column: 1)) {
      try parse([])
    }
  }

  /// A document cut short is told apart from one with a fault in its middle, whatever libxml2
  /// calls it.
  @Test func inputThatEndsInsideAnElementEndsEarly() {
    for text in ["<a>\n<b>te", "<a>\n<b x=\"1", "<a><b></b>\n", "<a></"] {
      do {
        _ = try parse(Array(text.utf8))
        Issue.record("\(text.debugDescription) parsed")
      } catch {
        #expect(error.endsEarly, "\(text.debugDescription): \(error)")
        #expect(error.line == (text.hasPrefix("<a>\n") ? 2 : 1), "\(text.debugDescription)")
      }
    }
    for text in ["<a>\n<b></a>", "<a></a><b>", "<a>&x;</a>"] {
      do {
        _ = try parse(Array(text.utf8))
        Issue.record("\(text.debugDescription) parsed")
      } catch {
        #expect(!error.endsEarly, "\(text.debugDescription): \(error)")
      }
    }
  }
}
