/// A start tag as libxml2 reports it (`startElementNs`), with namespaces resolved.
///
/// Valid only during the ``XMLStreamHandler/startElement(_:)`` call that receives it: the
/// attributes point into the parser's buffers. Copy what you need (``attribute(_:)`` returns
/// a copy).
public struct XMLStartElement {
  /// The element's local name, without a prefix (`trkpt` for `<gpx:trkpt>`).
  public let localName: String
  /// The prefix as written, or `nil` for an unprefixed name.
  public let prefix: String?
  /// The namespace URI the name is in after resolving prefixes and default namespaces, or
  /// `nil` when it is in no namespace.
  public let namespaceURI: String?
  /// 1-based line where the start tag ends.
  public let line: Int
  /// 1-based column, in bytes, of the start tag's end: its `>`, or the `/` of `/>`.
  public let column: Int

  /// libxml2's attribute array: `count` groups of five pointers (local name, prefix, URI,
  /// value start, value end).
  let attributes: UnsafePointer<UnsafePointer<UInt8>?>?
  let attributeCount: Int

  /// The name as written, `prefix:localName` or `localName`.
  public var qualifiedName: String {
    if let prefix { return "\(prefix):\(localName)" }
    return localName
  }

  /// The value of the attribute `name` that has no prefix and no namespace (the way XML
  /// Namespaces reads an unprefixed attribute), with entity and character references
  /// replaced; `nil` when the element has no such attribute.
  ///
  /// - Complexity: O(number of attributes).
  public func attribute(_ name: String) -> String? {
    guard let attributes else { return nil }
    var wanted = name
    return wanted.withUTF8 { wantedBytes -> String? in
      for i in 0..<attributeCount {
        let base = i * 5
        guard let local = attributes[base], attributes[base + 2] == nil,
          Self.equals(local, wantedBytes),
          let start = attributes[base + 3], let end = attributes[base + 4]
        else { continue }
        let bytes = UnsafeBufferPointer(start: start, count: end - start)
        let value = String(decoding: bytes, as: UTF8.self)
        // Without entity substitution libxml2 hands on every `&` of a value (from `&amp;` or
        // `&#38;`) as the five characters `&#38;`, and no other `&` can occur in it.
        return bytes.contains(UInt8(ascii: "&")) ? value.replacingAll("&#38;", with: "&") : value
      }
      return nil
    }
  }

  /// Whether the NUL-terminated `cString` holds exactly `bytes`.
  static func equals(_ cString: UnsafePointer<UInt8>, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    for (i, byte) in bytes.enumerated() where cString[i] != byte { return false }
    return cString[bytes.count] == 0
  }
}

/// What a handler wants after a start tag.
public enum XMLStreamDecision: Sendable {
  /// Go on parsing.
  case proceed
  /// Stop parsing: ``XMLStream/parse(_:documentName:handler:)`` returns without an error and
  /// reports no further event.
  case stop
}

/// Receives a document's events in document order from ``XMLStream/parse(_:documentName:handler:)``.
public protocol XMLStreamHandler: AnyObject {
  /// A start tag (an empty-element tag `<a/>` gives a start and an end).
  func startElement(_ element: XMLStartElement) -> XMLStreamDecision
  /// An end tag; the names are those of the matching start tag.
  func endElement(localName: String, namespaceURI: String?)
  /// Character data in UTF-8: text, CDATA sections and white space between elements, with
  /// entity and character references replaced. One text may arrive in several calls. The
  /// buffer is valid only during the call.
  func characters(_ utf8: UnsafeBufferPointer<UInt8>)
}

extension String {
  /// `self` with every non-overlapping `target`, from the left, replaced by `replacement`.
  fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
    var result = ""
    var rest = self[...]
    while let range = rest.firstRange(of: target) {
      result += rest[..<range.lowerBound]
      result += replacement
      rest = rest[range.upperBound...]
    }
    return result + rest
  }
}
