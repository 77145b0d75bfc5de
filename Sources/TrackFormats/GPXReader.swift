import Foundation
import GeofenceGeometry

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// Reads GPX 1.0 and 1.1 files into fixes.
///
/// - Points: `trkpt` and `rtept` elements, in document order, outside `extensions` and not
///   nested in another point; they share one `sourceIndex` counter. When a file has neither but has `wpt` elements, the waypoints
///   are read as the track and a warning says so.
/// - Names are matched by local name, so namespace prefixes (`<gpx:trkpt>`) and missing or
///   non-standard namespaces are accepted. Everything else (`extensions`, `metadata`, unknown
///   elements) is skipped; only a `<time>` that is a direct child of the point is its time.
/// - Horizontal accuracy is taken from an `hAcc` element inside the point's extensions
///   (HealthFit, Garmin TrackPointExtension v2), in metres. `hdop` is unitless and not used.
/// - Encodings: whatever the XML declaration names and libxml2 supports (UTF-8, UTF-16,
///   ISO-8859-1, ...); a UTF-8 byte-order mark is accepted.
/// - Times: see ``RFC3339/parse(_:)``. A time without a zone is read as UTC, with one warning
///   per file. An unreadable time, or one outside ``TrackReader/plausibleTimes``, leaves the
///   fix's time `nil` with a warning naming the line.
/// - A point with a missing or invalid `lat`/`lon` is skipped and listed in `skippedRows`.
/// - External entities are never loaded.
public enum GPXReader {
  /// Reads a whole GPX document.
  ///
  /// - Parameters:
  ///   - data: the file's bytes.
  ///   - fileName: the name used in issues and errors (normally the last path component).
  /// - Returns: the fixes, warnings and skipped points, with `format == .gpx`.
  /// - Throws: `TrackReadError.malformed` naming the line when the bytes are not well-formed
  ///   XML (including a truncated file) or the root element is not `gpx`; the points read
  ///   before the error are counted in the error and not returned.
  /// - Complexity: O(n) in the file size; one `LocationFix` per point plus the XML parser's
  ///   own allocations.
  public static func read(data: Data, fileName: String) throws(TrackReadError) -> TrackReadResult {
    let handler = GPXParseHandler(fileName: fileName)
    let parser = XMLParser(data: data)
    parser.shouldProcessNamespaces = false
    parser.shouldReportNamespacePrefixes = false
    parser.shouldResolveExternalEntities = false
    parser.delegate = handler
    let finished = parser.parse()
    if let failure = handler.failure { throw failure }
    if !finished || handler.parseError != nil {
      let code = handler.parseError?.code ?? (parser.parserError as NSError?)?.code ?? -1
      throw .malformed(
        file: fileName, line: handler.parseErrorLine ?? parser.lineNumber,
        reason: describeXMLError(code: code), pointsRead: handler.pointsRead)
    }
    guard handler.rootSeen else {
      throw .malformed(
        file: fileName, line: nil, reason: "the file holds no XML element", pointsRead: 0)
    }
    return handler.result()
  }

  static func describeXMLError(code: Int) -> String {
    switch XMLParser.ErrorCode(rawValue: code) {
    case .some(.prematureDocumentEndError):
      return "not well-formed XML: the document ends early (truncated file?)"
    case .some(.emptyDocumentError):
      return "the file is empty"
    case .some(.documentStartError), .some(.notWellBalancedError):
      return "not well-formed XML: unbalanced or missing elements"
    case .some(.tagNameMismatchError):
      return "not well-formed XML: an end tag does not match its start tag"
    case .some(.gtRequiredError), .some(.ltRequiredError):
      return "not well-formed XML: a tag is cut off or unterminated"
    case .some(.extraContentError):
      return "not well-formed XML: content after the root element"
    case .some(.encodingNotSupportedError), .some(.unknownEncodingError):
      return "the XML declaration names an encoding that is not supported"
    case .some(.invalidCharacterError):
      return "not well-formed XML: invalid character or entity"
    default:
      return "not well-formed XML (XML parser error \(code))"
    }
  }
}

/// The SAX state of one GPX parse. Not thread-safe; one per `GPXReader.read` call.
final class GPXParseHandler: NSObject, XMLParserDelegate {
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
  private(set) var parseError: NSError?
  private(set) var parseErrorLine: Int?
  private(set) var rootSeen = false

  private var stack: [String] = []
  /// Number of open `extensions` elements: points inside them are not points of the file.
  private var extensionsOpen = 0
  private var pending: PendingPoint?
  private var capture: Capture?
  private var captureDepth = 0
  private var text = ""

  private var trackFixes: [LocationFix] = []
  private var trackWarnings: [TrackIssue] = []
  private var trackSkipped: [TrackIssue] = []
  private var trackPointCount = 0
  private var trackNoZone = NoZoneTally()

  private var waypointFixes: [LocationFix] = []
  private var waypointWarnings: [TrackIssue] = []
  private var waypointSkipped: [TrackIssue] = []
  private var waypointCount = 0
  private var waypointNoZone = NoZoneTally()

  init(fileName: String) {
    self.fileName = fileName
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
      if let w = waypointNoZone.warning(file: fileName) { warnings.append(w) }
      return TrackReadResult(
        fixes: waypointFixes, warnings: warnings, skippedRows: waypointSkipped, format: .gpx)
    }
    var warnings = trackWarnings
    if let w = trackNoZone.warning(file: fileName) { warnings.append(w) }
    if trackPointCount == 0 {
      warnings.append(
        TrackIssue(
          file: fileName, line: nil, message: "the file holds no track, route or waypoint points"))
    }
    return TrackReadResult(
      fixes: trackFixes, warnings: warnings, skippedRows: trackSkipped, format: .gpx)
  }

  private static func localName(_ name: String) -> Substring {
    if let colon = name.lastIndex(of: ":") { return name[name.index(after: colon)...] }
    return name[...]
  }

  func parser(
    _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
  ) {
    let local = Self.localName(elementName)
    if !rootSeen {
      rootSeen = true
      if local != "gpx" {
        failure = .malformed(
          file: fileName, line: parser.lineNumber,
          reason: "the root element is <\(elementName)>, not <gpx>: not a GPX file",
          pointsRead: 0)
        parser.abortParsing()
        return
      }
    }
    let parent = stack.last
    stack.append(String(local))
    if local == "extensions" { extensionsOpen += 1 }
    if var point = pending {
      if capture == nil {
        if local == "time" && stack.count == point.depth + 1 {
          capture = .time
          point.timeLine = parser.lineNumber
          pending = point
        } else if local == "hAcc" {
          capture = .hAcc
        }
        if capture != nil {
          captureDepth = stack.count
          text = ""
        }
      }
      return
    }
    guard extensionsOpen == 0 else { return }
    let kind: PointKind
    switch local {
    case "trkpt": kind = .track
    case "rtept": kind = .route
    case "wpt" where parent == "gpx": kind = .waypoint
    default: return
    }
    var lat: String?
    var lon: String?
    for (key, value) in attributeDict {
      switch Self.localName(key) {
      case "lat": lat = value
      case "lon": lon = value
      default: break
      }
    }
    pending = PendingPoint(
      kind: kind, depth: stack.count, line: parser.lineNumber, lat: lat, lon: lon, time: nil,
      timeLine: parser.lineNumber, hAcc: nil)
  }

  func parser(_ parser: XMLParser, foundCharacters string: String) {
    if capture != nil { text += string }
  }

  func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
    if capture != nil { text += String(decoding: CDATABlock, as: UTF8.self) }
  }

  func parser(
    _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
    qualifiedName qName: String?
  ) {
    if let c = capture, stack.count == captureDepth {
      switch c {
      case .time: pending?.time = text
      case .hAcc: pending?.hAcc = text
      }
      capture = nil
    }
    if let point = pending, stack.count == point.depth {
      finish(point)
      pending = nil
    }
    if let last = stack.popLast(), last == "extensions" { extensionsOpen -= 1 }
  }

  func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
    if self.parseError == nil {
      self.parseError = parseError as NSError
      parseErrorLine = parser.lineNumber
    }
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
    guard let lat = Double(latText.trimmingCharacters(in: .whitespaces)) else {
      return skip("<\(element)> lat=\"\(latText)\" is not a number; skipped")
    }
    guard let lon = Double(lonText.trimmingCharacters(in: .whitespaces)) else {
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
      let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
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
      case .rejected(let why):
        warnings.append(TrackIssue(file: fileName, line: point.timeLine, message: why))
      }
    }
    var accuracy: Double?
    if let raw = point.hAcc {
      accuracy = Double(raw.trimmingCharacters(in: .whitespacesAndNewlines))
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

/// Turns a time field into seconds with the plausibility rule shared by the readers.
enum TrackTime {
  enum Outcome {
    case empty
    case time(Double, hadZone: Bool)
    case rejected(String)
  }

  static func interpret(_ text: String, options: RFC3339.Options = .rfc3339) -> Outcome {
    if text.isEmpty { return .empty }
    guard let (seconds, hadZone) = RFC3339.parse(text, options: options) else {
      return .rejected("time \"\(text)\" is not a date and time; the fix has no time")
    }
    return check(seconds, hadZone: hadZone, text: text)
  }

  static func check(_ seconds: Double, hadZone: Bool, text: String) -> Outcome {
    guard TrackReader.plausibleTimes.contains(seconds) else {
      return .rejected(
        "time \"\(text)\" is outside \(RFC3339.format(TrackReader.plausibleTimes.lowerBound)) ... \(RFC3339.format(TrackReader.plausibleTimes.upperBound)); the fix has no time"
      )
    }
    return .time(seconds, hadZone: hadZone)
  }
}
