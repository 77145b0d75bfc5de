import Foundation
import GeofenceGeometry
import NumberText
import XMLStream

/// Reads GPX 1.0 and 1.1 files into fixes.
///
/// - Points: `trkpt` and `rtept` elements, in document order, outside `extensions` and not
///   nested in another point; they share one `sourceIndex` counter. When a file has neither
///   but has `wpt` elements (children of the root), the waypoints are read as the track and a
///   warning says so.
/// - Namespaces: the root must be `gpx` in the GPX 1.1 namespace
///   (``gpx11Namespace``), the GPX 1.0 namespace (``gpx10Namespace``), or no namespace at
///   all (accepted for the many files written without `xmlns`); any prefix may be used. The
///   GPX elements (`trkpt`, `rtept`, `wpt`, `time`, `extensions`) count only in the root's
///   namespace: an element of another namespace with the same local name (`<x:trkpt>`) is
///   skipped like any unknown element. Attributes `lat` and `lon` are read unprefixed, as GPX
///   writes them. Only a `<time>` that is a direct child of the point is its time.
/// - Horizontal accuracy is taken from an `hAcc` element, of any namespace, inside the point's
///   extensions (HealthFit, Garmin TrackPointExtension v2), in metres. `hdop` is unitless and
///   not used.
/// - Encodings: a byte-order mark (UTF-8, UTF-16) or the XML declaration's `encoding`
///   (UTF-8, UTF-16, ISO-8859-1, and the others libxml2 and iconv know). A file with neither
///   must be UTF-8: an invalid byte sequence (for example a Latin-1 `ß` in `<gpxx:Straße>`) is
///   an error naming its line, column and bytes, never a guess.
/// - Times: see ``RFC3339/parse(_:)``. A time without a zone is read as UTC, with one warning
///   per file. An unreadable time, or one outside ``TrackReader/plausibleTimes``, leaves the
///   fix's time `nil`, with one warning per file and kind giving the count and the first
///   line.
/// - A point with a missing or invalid `lat`/`lon` is skipped and listed in `skippedRows`.
/// - External entities and DTDs are never loaded (see ``XMLStream``); an entity declared in
///   the document's internal subset is not defined, so a reference to it is an error.
public enum GPXReader {
  /// The GPX 1.1 namespace, from the GPX 1.1 schema (topografix.com/GPX/1/1/gpx.xsd).
  public static let gpx11Namespace = "http://www.topografix.com/GPX/1/1"
  /// The GPX 1.0 namespace, from the GPX 1.0 schema (topografix.com/GPX/1/0/gpx.xsd).
  public static let gpx10Namespace = "http://www.topografix.com/GPX/1/0"

  /// Reads a whole GPX document.
  ///
  /// - Parameters:
  ///   - data: the file's bytes.
  ///   - fileName: the name used in issues and errors (normally the last path component).
  /// - Returns: the fixes, warnings and skipped points, with `format == .gpx`.
  /// - Returns: also when the bytes stop being well-formed XML (a truncated file, an invalid
  ///   byte) after at least one point: then the points before the fault, with
  ///   ``TrackReadResult/truncation`` naming its line, column and libxml2's description. A
  ///   file whose bytes end with elements open says so ("the file ends early (truncated)
  ///   inside <time> of a <trkpt>"), with libxml2's words in parentheses.
  /// - Throws: `TrackReadError.malformed` naming the line, and in the reason the column and
  ///   libxml2's description of the problem, when the bytes are not well-formed XML
  ///   (including a truncated file) or not valid in the document's encoding before any point;
  ///   also when the root element is not a GPX `gpx` element.
  /// - Complexity: O(n) in the file size; one `LocationFix` per point plus the XML parser's
  ///   buffers.
  public static func read(data: Data, fileName: String) throws(TrackReadError) -> TrackReadResult {
    let handler = GPXParseHandler(fileName: fileName)
    let outcome: Result<Void, XMLStreamError> = data.withUnsafeBytes { bytes in
      Result { () throws(XMLStreamError) in
        try XMLStream.parse(bytes, documentName: fileName, handler: handler)
      }
    }
    if let failure = handler.failure { throw failure }
    if case .failure(let error) = outcome {
      guard handler.rootSeen, handler.pointsRead > 0 else {
        throw .malformed(
          file: fileName, line: error.line,
          reason: describe(error, openElement: handler.openElement),
          pointsRead: handler.pointsRead)
      }
      // The points before the fault are sound: keep them, and say where the file breaks off.
      var partial = handler.result()
      let n = handler.pointsRead
      let points = n == 1 ? "the point before it is used" : "the \(n) points before it are used"
      partial.truncation = TrackIssue(
        file: fileName, line: error.line,
        message: describe(error, openElement: handler.openElement)
          + (error.endsEarly ? "; " : "; the file breaks off here: ") + points
          + ", nothing after it is read")
      return partial
    }
    guard handler.rootSeen else {
      throw .malformed(
        file: fileName, line: nil, reason: "the file holds no XML element", pointsRead: 0)
    }
    return handler.result()
  }

  /// The reason of a `.malformed` error for libxml2's `error`: what is wrong, at which column,
  /// in libxml2's words. A document that ends with elements open is called truncated, inside
  /// `openElement` when given, with libxml2's words in parentheses: its message for a cut
  /// file ("Extra content at the end of the document", for one) does not say so.
  static func describe(_ error: XMLStreamError, openElement: String? = nil) -> String {
    let column = error.column.map { " at column \($0)" } ?? ""
    if error.endsEarly {
      let inside = openElement.map { " inside \($0)" } ?? ""
      return "the file ends early (truncated)\(inside) (libxml2\(column): \(error.message))"
    }
    switch error.code {
    case XMLStreamError.emptyDocumentCode:
      return "the file is empty or holds no XML element (\(error.message))"
    case XMLStreamError.invalidCharacterCode where error.message.contains("UTF-8"):
      return
        "invalid UTF-8\(column): \(error.message); a file without a byte-order mark or an"
        + " encoding in its XML declaration must be UTF-8 (declare, for example,"
        + " <?xml version=\"1.0\" encoding=\"ISO-8859-1\"?> for Latin-1)"
    default:
      return "not well-formed XML\(column): \(error.message)"
    }
  }
}

/// The SAX state of one GPX parse. Not thread-safe; one per `GPXReader.read` call.
final class GPXParseHandler: XMLStreamHandler {
  private enum PointKind { case track, route, waypoint }

  private struct PendingPoint {
    var kind: PointKind
    var depth: Int
    var line: Int
    var lat: String?
    var lon: String?
    var time: String?
    var timeLine: Int
    var hAcc: String?
  }

  private enum Capture { case time, hAcc }

  let fileName: String
  private(set) var failure: TrackReadError?
  private(set) var rootSeen = false
  /// The root's namespace (one of the two GPX namespaces, or `nil` for none): GPX elements
  /// count only in it.
  private var gpxNamespace: String?

  /// Open elements: the local name of a GPX element, `""` for an element of another namespace.
  private var stack: [String] = []
  /// Number of open `extensions` elements: points inside them are not points of the file.
  private var extensionsOpen = 0
  private var pending: PendingPoint?
  private var capture: Capture?
  private var captureDepth = 0
  private var text: [UInt8] = []

  private var trackFixes: [LocationFix] = []
  private var trackWarnings: [TrackIssue] = []
  private var trackSkipped: [TrackIssue] = []
  private var trackPointCount = 0
  private var trackNoZone = NoZoneTally()
  private var trackTimeProblems = TimeProblemTally()

  private var waypointFixes: [LocationFix] = []
  private var waypointWarnings: [TrackIssue] = []
  private var waypointSkipped: [TrackIssue] = []
  private var waypointCount = 0
  private var waypointNoZone = NoZoneTally()
  private var waypointTimeProblems = TimeProblemTally()

  init(fileName: String) {
    self.fileName = fileName
  }

  /// Where the document stands, for the message of a file that ends early: the innermost open
  /// GPX element, with the point it belongs to (`<time> of a <trkpt>`), or `nil` when none is
  /// open.
  var openElement: String? {
    guard let innermost = stack.last(where: { !$0.isEmpty }) else { return nil }
    guard let point = pending else { return "<\(innermost)>" }
    let name: String
    switch point.kind {
    case .track: name = "trkpt"
    case .route: name = "rtept"
    case .waypoint: name = "wpt"
    }
    return stack.count > point.depth && stack.last != ""
      ? "<\(innermost)> of a <\(name)>" : "<\(name)>"
  }

  /// Points read so far (for the error message of a broken file).
  var pointsRead: Int { trackPointCount > 0 ? trackFixes.count : waypointFixes.count }

  func result() -> TrackReadResult {
    if trackPointCount == 0 && waypointCount > 0 {
      var warnings = [
        TrackIssue(
          file: fileName, line: nil,
          message:
            "the file has no track or route points; its \(waypointCount) waypoints are read as the track"
        )
      ]
      warnings += waypointWarnings
      warnings += waypointTimeProblems.warnings(file: fileName)
      if let w = waypointNoZone.warning(file: fileName) { warnings.append(w) }
      return TrackReadResult(
        fixes: waypointFixes, warnings: warnings, skippedRows: waypointSkipped, format: .gpx)
    }
    var warnings = trackWarnings
    warnings += trackTimeProblems.warnings(file: fileName)
    if let w = trackNoZone.warning(file: fileName) { warnings.append(w) }
    if trackPointCount == 0 {
      warnings.append(
        TrackIssue(
          file: fileName, line: nil, message: "the file holds no track, route or waypoint points"))
    }
    return TrackReadResult(
      fixes: trackFixes, warnings: warnings, skippedRows: trackSkipped, format: .gpx)
  }

  func startElement(_ element: XMLStartElement) -> XMLStreamDecision {
    if !rootSeen {
      rootSeen = true
      guard element.localName == "gpx" else {
        failure = .malformed(
          file: fileName, line: element.line,
          reason: "the root element is <\(element.qualifiedName)>, not <gpx>: not a GPX file",
          pointsRead: 0)
        return .stop
      }
      switch element.namespaceURI {
      case nil, GPXReader.gpx11Namespace?, GPXReader.gpx10Namespace?:
        gpxNamespace = element.namespaceURI
      case let other?:
        failure = .malformed(
          file: fileName, line: element.line,
          reason:
            "the root element <\(element.qualifiedName)> is in the namespace \"\(other)\", not"
            + " GPX 1.1 (\(GPXReader.gpx11Namespace)) or 1.0 (\(GPXReader.gpx10Namespace)):"
            + " not a GPX file",
          pointsRead: 0)
        return .stop
      }
    }
    let isGPX = element.namespaceURI == gpxNamespace
    let local = isGPX ? element.localName : ""
    let parentIsRoot = stack.count == 1
    stack.append(local)
    if local == "extensions" { extensionsOpen += 1 }
    if let depth = pending?.depth {
      if capture == nil {
        if local == "time" && stack.count == depth + 1 {
          capture = .time
          pending?.timeLine = element.line
        } else if element.localName == "hAcc" {
          capture = .hAcc
        }
        if capture != nil {
          captureDepth = stack.count
          text.removeAll(keepingCapacity: true)
        }
      }
      return .proceed
    }
    guard extensionsOpen == 0 else { return .proceed }
    let kind: PointKind
    switch local {
    case "trkpt": kind = .track
    case "rtept": kind = .route
    case "wpt" where parentIsRoot: kind = .waypoint
    default: return .proceed
    }
    pending = PendingPoint(
      kind: kind, depth: stack.count, line: element.line, lat: element.attribute("lat"),
      lon: element.attribute("lon"), time: nil, timeLine: element.line, hAcc: nil)
    return .proceed
  }

  func characters(_ utf8: UnsafeBufferPointer<UInt8>) {
    if capture != nil { text.append(contentsOf: utf8) }
  }

  func endElement(localName: String, namespaceURI: String?) {
    if let c = capture, stack.count == captureDepth {
      let value = String(decoding: text, as: UTF8.self)
      switch c {
      case .time: pending?.time = value
      case .hAcc: pending?.hAcc = value
      }
      capture = nil
    }
    if let point = pending, stack.count == point.depth {
      finish(point)
      pending = nil
    }
    if let last = stack.popLast(), last == "extensions" { extensionsOpen -= 1 }
  }

  /// `text` without leading and trailing XML white space (space, tab, CR, LF: XML 1.0 `S`).
  static func trimmingXMLSpace(_ text: String) -> Substring {
    // Every XML space is one ASCII byte: trim on the UTF-8 view (a CR LF pair is two).
    let utf8 = text.utf8
    func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
    guard let first = utf8.firstIndex(where: { !isSpace($0) }) else {
      return text[text.endIndex...]
    }
    let last = utf8.lastIndex(where: { !isSpace($0) }) ?? first
    return text[first..<utf8.index(after: last)]
  }

  /// A number attribute or element as Swift's `Double(_:)` reads it (`strtod`'s grammar:
  /// `+5`, `.5`, `1e3`, `0x1p3`, `inf` and `nan` included). Text in RFC 8259's grammar (every
  /// number a GPX writer emits) is converted by ``NumberText/NumberText``, which rounds
  /// correctly as `strtod` does, so the value is the same and `strtod` runs only for the rest.
  static func number(_ text: Substring) -> Double? {
    if case .success(let value)? = text.utf8.withContiguousStorageIfAvailable({
      NumberText.parse($0)
    }) {
      return value
    }
    return Double(text)
  }

  private func finish(_ point: PendingPoint) {
    let index: Int
    let element: String
    switch point.kind {
    case .track, .route:
      index = trackPointCount
      trackPointCount += 1
      element = point.kind == .track ? "trkpt" : "rtept"
    case .waypoint:
      index = waypointCount
      waypointCount += 1
      element = "wpt"
    }
    var warnings: [TrackIssue] = []
    defer {
      if point.kind == .waypoint {
        waypointWarnings += warnings
      } else {
        trackWarnings += warnings
      }
    }
    func skip(_ message: String) {
      let issue = TrackIssue(file: fileName, line: point.line, message: message)
      if point.kind == .waypoint {
        waypointSkipped.append(issue)
      } else {
        trackSkipped.append(issue)
      }
    }
    guard let latText = point.lat else { return skip("<\(element)> has no lat attribute; skipped") }
    guard let lonText = point.lon else { return skip("<\(element)> has no lon attribute; skipped") }
    guard let lat = Self.number(Self.trimmingXMLSpace(latText)) else {
      return skip("<\(element)> lat=\"\(latText)\" is not a number; skipped")
    }
    guard let lon = Self.number(Self.trimmingXMLSpace(lonText)) else {
      return skip("<\(element)> lon=\"\(lonText)\" is not a number; skipped")
    }
    let coordinate: Coordinate
    do {
      coordinate = try Coordinate(latitude: lat, longitude: lon)
    } catch {
      return skip("<\(element)> \(error); skipped")
    }
    var time: Double?
    if let raw = point.time {
      let trimmed = String(Self.trimmingXMLSpace(raw))
      switch TrackTime.interpret(trimmed) {
      case .empty:
        break
      case .time(let seconds, let hadZone):
        time = seconds
        if !hadZone {
          if point.kind == .waypoint {
            waypointNoZone.add(line: point.timeLine)
          } else {
            trackNoZone.add(line: point.timeLine)
          }
        }
      case .rejected(let problem):
        if point.kind == .waypoint {
          waypointTimeProblems.add(problem, line: point.timeLine)
        } else {
          trackTimeProblems.add(problem, line: point.timeLine)
        }
      }
    }
    var accuracy: Double?
    if let raw = point.hAcc {
      accuracy = Self.number(Self.trimmingXMLSpace(raw))
    }
    let fix = LocationFix(
      coordinate: coordinate, time: time, horizontalAccuracy: accuracy, sourceIndex: index)
    if point.kind == .waypoint {
      waypointFixes.append(fix)
    } else {
      trackFixes.append(fix)
    }
  }
}

/// Counts times read without a zone, for the one warning per file.
struct NoZoneTally {
  private(set) var count = 0
  private(set) var firstLine: Int?

  mutating func add(line: Int?) {
    if count == 0 { firstLine = line }
    count += 1
  }

  func warning(file: String) -> TrackIssue? {
    guard count > 0 else { return nil }
    let times = count == 1 ? "1 time has" : "\(count) times have"
    return TrackIssue(
      file: file, line: firstLine, message: "\(times) no time zone; read as UTC (first here)")
  }
}

/// Why a time field gave the fix no time.
struct TimeProblem {
  enum Kind {
    /// The text is not a time the reader knows.
    case unreadable
    /// The time is outside ``TrackReader/plausibleTimes``.
    case implausible
  }

  var kind: Kind
  /// The field as written.
  var text: String
  /// The warning for this one field.
  var message: String
}

/// Counts the time fields that gave no time, for one warning per file and kind (a logger that
/// writes a placeholder time writes it on every row).
struct TimeProblemTally {
  private var unreadable = 0
  private var implausible = 0
  private var firstUnreadable: (problem: TimeProblem, line: Int?)?
  private var firstImplausible: (problem: TimeProblem, line: Int?)?

  mutating func add(_ problem: TimeProblem, line: Int?) {
    switch problem.kind {
    case .unreadable:
      if unreadable == 0 { firstUnreadable = (problem, line) }
      unreadable += 1
    case .implausible:
      if implausible == 0 { firstImplausible = (problem, line) }
      implausible += 1
    }
  }

  /// At most one warning per kind, at the line of its first field: that field's own warning
  /// when it is the only one, else the count with the first field's text.
  func warnings(file: String) -> [TrackIssue] {
    let range = TrackTime.plausibleRangeText
    var issues: [TrackIssue] = []
    for (count, first, what) in [
      (unreadable, firstUnreadable, "cannot be read"),
      (implausible, firstImplausible, "are outside \(range)"),
    ] {
      guard let first else { continue }
      let message =
        count == 1
        ? first.problem.message
        : "\(count) times \(what); those fixes have no time (first here: \"\(first.problem.text)\")"
      issues.append(TrackIssue(file: file, line: first.line, message: message))
    }
    return issues
  }
}

/// Turns a time field into seconds with the plausibility rule shared by the readers.
enum TrackTime {
  enum Outcome {
    case empty
    case time(Double, hadZone: Bool)
    case rejected(TimeProblem)
  }

  /// ``TrackReader/plausibleTimes`` as the warnings write it, `first ... last` in RFC 3339.
  static let plausibleRangeText =
    "\(RFC3339.format(TrackReader.plausibleTimes.lowerBound)) ... "
    + RFC3339.format(TrackReader.plausibleTimes.upperBound)

  static func interpret(_ text: String, options: RFC3339.Options = .rfc3339) -> Outcome {
    if text.isEmpty { return .empty }
    guard let (seconds, hadZone) = RFC3339.parse(text, options: options) else {
      return .rejected(
        TimeProblem(
          kind: .unreadable, text: text,
          message: "time \"\(text)\" is not a date and time; the fix has no time"))
    }
    return check(seconds, hadZone: hadZone, text: text)
  }

  /// ``interpret(_:options:)`` of UTF-8 bytes: the text is made only for a rejection.
  static func interpret(utf8 bytes: UnsafeBufferPointer<UInt8>, options: RFC3339.Options)
    -> Outcome
  {
    if bytes.isEmpty { return .empty }
    guard let (seconds, hadZone) = RFC3339.parse(bytes: bytes, options: options) else {
      return interpret(String(decoding: bytes, as: UTF8.self), options: options)
    }
    return check(seconds, hadZone: hadZone, text: String(decoding: bytes, as: UTF8.self))
  }

  /// `text` is the field as written, made only when the time is rejected.
  static func check(_ seconds: Double, hadZone: Bool, text: @autoclosure () -> String)
    -> Outcome
  {
    guard TrackReader.plausibleTimes.contains(seconds) else {
      let text = text()
      return .rejected(
        TimeProblem(
          kind: .implausible, text: text,
          message: "time \"\(text)\" is outside \(plausibleRangeText); the fix has no time"))
    }
    return .time(seconds, hadZone: hadZone)
  }
}
