import Foundation
import JSONText
import GeofenceTransitions
import TrackFormats

/// Output formats for events.
public enum EventFormat: String, CaseIterable, Sendable {
  /// One JSON object per line (JSON Lines).
  case jsonl
  /// RFC 4180 CSV with a header row.
  case csv
  /// A GeoJSON (RFC 7946) FeatureCollection of Point features, written as a whole.
  case geojson
}

/// The one encoder of ``GeofenceEvent``: the replay and stream output, the outbox payload and
/// the upload wire (`docs/openapi.yaml`, `Event`) use the same members, in this order:
///
/// | member | value |
/// |---|---|
/// | `id` | the stable event id |
/// | `type` | `"enter"`, `"exit"`, `"dwell"` |
/// | `geofence_id`, `geofence_name` | the geofence (name `null` when it has none) |
/// | `metadata` | the geofence's metadata object unchanged, or `null` |
/// | `url` | ``GeofenceEvent/url`` or `null` |
/// | `device_id` | the device |
/// | `user_id`, `anonymous_id` | who the event belongs to, or `null` |
/// | `session_id`, `session_index`, `event_index` | the session (string, integers from 1); only when the engine keeps sessions |
/// | `time` | RFC 3339 UTC with milliseconds, or `null` for a track without times |
/// | `processed_at` | when the engine created it (RFC 3339); only with ``includesProcessingTime`` |
/// | `latitude`, `longitude` | degrees, shortest round-trip decimal |
/// | `accuracy` | metres or `null` |
/// | `distance_m` | metres, rounded to millimetres |
/// | `dwell_s`, `visit_s` | seconds rounded to milliseconds, or `null` |
/// | `after_gap`, `gap_start` | boolean; RFC 3339 or `null` |
/// | `removal` | boolean |
/// | `fix_index` | 0-based fix in its file (only when known) |
/// | `inferred` | `true` for an inferred crossing (``GeofenceEvent/inferred``); absent otherwise |
/// | `track` | the input file (only when the caller names one) |
///
/// CSV has one column per member (`metadata` as JSON text; no session columns), with empty
/// fields for `null`;
/// the `inferred` column (`true` or empty) only with ``includesInferredColumn``.
///
/// A value. ``encode(_:track:into:)`` writes into the caller's buffer and allocates only when
/// it grows (JSON Lines, GeoJSON); the `String` forms allocate their result.
public struct GeofenceEventEncoder: Sendable {
  public let format: EventFormat
  /// Whether `processed_at` is written. Default false: the output then depends only on the
  /// input, so a run repeated (or restarted) on the same input writes the same bytes.
  public var includesProcessingTime: Bool
  private var featureCount = 0
  /// Whether CSV output has an `inferred` column, after `track`. Default false, so that CSV
  /// without crossing inference keeps its columns; JSON writes `inferred` whenever it is true.
  public var includesInferredColumn = false

  public init(format: EventFormat = .jsonl, includesProcessingTime: Bool = false) {
    self.format = format
    self.includesProcessingTime = includesProcessingTime
  }

  static let csvColumns = [
    "id", "type", "geofence_id", "geofence_name", "metadata", "url", "device_id", "user_id",
    "anonymous_id", "time", "processed_at", "latitude", "longitude", "accuracy", "distance_m",
    "dwell_s", "visit_s", "after_gap", "gap_start", "removal", "fix_index", "track",
  ]

  /// Text to write before the first event.
  public func header() -> String {
    switch format {
    case .jsonl: return ""
    case .csv:
      return Self.csvColumns.joined(separator: ",") + (includesInferredColumn ? ",inferred" : "")
        + "\n"
    case .geojson: return "{\"type\":\"FeatureCollection\",\"features\":[\n"
    }
  }

  /// Text to write after the last event.
  public func footer() -> String { format == .geojson ? "\n]}\n" : "" }

  /// The text of one event in ``format`` (a line ending in `\n` for JSON Lines and CSV):
  /// the bytes of ``encode(_:track:into:)`` as a string.
  /// - Parameter track: the input file to name in `track`, if any.
  public mutating func encode(_ e: GeofenceEvent, track: String? = nil) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(512 + (e.metadataJSON?.utf8.count ?? 0))
    encode(e, track: track, into: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Appends the UTF-8 text of one event in ``format`` to `out`: the encoder's one path,
  /// which the `String` forms go through.
  /// - Parameter track: the input file to name in `track`, if any.
  /// - Complexity: O(n) in the event's text; for JSON Lines and GeoJSON allocates only when
  ///   `out` grows (CSV makes its fields as strings).
  public mutating func encode(_ e: GeofenceEvent, track: String? = nil, into out: inout [UInt8]) {
    switch format {
    case .jsonl:
      Self.appendObject(
        e, track: track, processingTime: includesProcessingTime, newline: true, to: &out)
    case .csv:
      out.append(contentsOf: csvLine(e, track: track).utf8)
    case .geojson:
      if featureCount > 0 { JSONText.append(",\n", to: &out) }
      featureCount += 1
      JSONText.append(
        "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[", to: &out)
      Self.appendNumber(e.longitude, to: &out)
      out.append(UInt8(ascii: ","))
      Self.appendNumber(e.latitude, to: &out)
      JSONText.append("]},\"properties\":", to: &out)
      Self.appendObject(e, track: track, processingTime: includesProcessingTime, to: &out)
      out.append(UInt8(ascii: "}"))
    }
  }

  /// The event's JSON object without its `id` member, as the outbox stores it (the outbox
  /// writes `{"id": ...}` first on upload, which gives back ``object(_:track:processingTime:)``).
  public static func payload(_ e: GeofenceEvent, processingTime: Bool = true) -> String {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: objectBound(e, track: nil)) {
      buffer in
      var w = JSONText.Writer(buffer)
      w.write(byte: UInt8(ascii: "{"))
      writeMembers(e, track: nil, processingTime: processingTime, to: &w)
      w.write(byte: UInt8(ascii: "}"))
      return String(decoding: w.written, as: UTF8.self)
    }
  }

  /// The event's whole JSON object.
  public static func object(_ e: GeofenceEvent, track: String? = nil, processingTime: Bool)
    -> String
  {
    var out: [UInt8] = []
    out.reserveCapacity(512 + (e.metadataJSON?.utf8.count ?? 0))
    appendObject(e, track: track, processingTime: processingTime, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends the event's whole JSON object to `out` (and `\n` when `newline`): written
  /// through a ``JSONText/Writer`` into a buffer of ``objectBound(_:track:)`` bytes on the
  /// stack (on the heap for an event with large metadata), then appended in one copy.
  static func appendObject(
    _ e: some EncodableEvent, track: String?, processingTime: Bool, newline: Bool = false,
    to out: inout [UInt8]
  ) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: objectBound(e, track: track)) {
      buffer in
      var w = JSONText.Writer(buffer)
      w.write("{\"id\":")
      e.writeQuotedID(to: &w)
      w.write(byte: UInt8(ascii: ","))
      writeMembers(e, track: track, processingTime: processingTime, to: &w)
      w.write(byte: UInt8(ascii: "}"))
      if newline { w.write(byte: UInt8(ascii: "\n")) }
      out.append(contentsOf: w.written)
    }
  }

  /// An upper bound of the bytes ``appendObject(_:track:processingTime:newline:to:)`` writes
  /// for `e`: the member names and fixed words of every member (under 512 bytes), at most 16
  /// numbers and times of ``JSONText/Writer/numberBound`` bytes each, and each string at its
  /// ``JSONText/Writer/quotedBound(byteCount:)``. O(1).
  static func objectBound(_ e: some EncodableEvent, track: String?) -> Int {
    func quoted(_ s: String?) -> Int {
      JSONText.Writer.quotedBound(byteCount: s?.utf8.count ?? 0)
    }
    return 512 + 16 * JSONText.Writer.numberBound + e.geofenceMembersBound
      + quoted(e.deviceID) + quoted(e.userID) + quoted(e.anonymousID) + quoted(e.sessionID)
      + quoted(track)
  }

  /// The members `geofence_id`, `geofence_name`, `metadata` and `url`, each after a comma:
  /// the part of an event that depends only on its geofence (``GeofenceEngine`` keeps it per
  /// slot, so that an event of the stream does not read the geofence again).
  static func appendGeofenceMembers(
    id: String, name: String?, metadataJSON: String?, url: String?, to out: inout [UInt8]
  ) {
    let bound = geofenceMembersBound(id: id, name: name, metadataJSON: metadataJSON, url: url)
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer in
      var w = JSONText.Writer(buffer)
      writeGeofenceMembers(id: id, name: name, metadataJSON: metadataJSON, url: url, to: &w)
      out.append(contentsOf: w.written)
    }
  }

  /// An upper bound of the bytes of ``appendGeofenceMembers(id:name:metadataJSON:url:to:)``.
  static func geofenceMembersBound(id: String, name: String?, metadataJSON: String?, url: String?)
    -> Int
  {
    func quoted(_ s: String?) -> Int {
      JSONText.Writer.quotedBound(byteCount: s?.utf8.count ?? 0)
    }
    return 64 + quoted(id) + quoted(name) + (metadataJSON?.utf8.count ?? 0) + quoted(url)
  }

  static func writeGeofenceMembers(
    id: String, name: String?, metadataJSON: String?, url: String?, to w: inout JSONText.Writer
  ) {
    writeStringMember(",\"geofence_id\":", id, to: &w)
    writeStringMember(",\"geofence_name\":", name, to: &w)
    w.write(",\"metadata\":")
    if let metadataJSON {
      var text = metadataJSON
      text.withUTF8 { w.write(bytes: $0) }
    } else {
      w.write("null")
    }
    writeStringMember(",\"url\":", url, to: &w)
  }

  /// `name` (for example `,"key":`), then `value` as a JSON string, or `null`.
  @inline(__always)
  static func writeStringMember(
    _ name: StaticString, _ value: String?, to w: inout JSONText.Writer
  ) {
    w.write(name)
    if let value {
      w.writeQuoted(value)
    } else {
      w.write("null")
    }
  }

  /// The members after `id`, from `"type"` on, without the braces, into `w`, which holds
  /// ``objectBound(_:track:)`` bytes.
  private static func writeMembers(
    _ e: some EncodableEvent, track: String?, processingTime: Bool, to w: inout JSONText.Writer
  ) {
    // `name` is `,"key":` (the first member's without the comma).
    func string(_ name: StaticString, _ value: String?) {
      writeStringMember(name, value, to: &w)
    }
    func time(_ name: StaticString, _ value: Double?) {
      w.write(name)
      if let value {
        w.write(byte: UInt8(ascii: "\""))
        w.write(count: RFC3339.byteCount) { RFC3339.write(value, into: $0) }
        w.write(byte: UInt8(ascii: "\""))
      } else {
        w.write("null")
      }
    }
    func number(_ name: StaticString, _ value: Double?) {
      w.write(name)
      if let value {
        // A negative zero (an accuracy or coordinate written `-0`) as `0.0`: `v + 0` is +0.
        w.writeNumber(value + 0, style: .shortestRoundTrip)
      } else {
        w.write("null")
      }
    }
    func thousandths(_ name: StaticString, _ value: Double?) {
      w.write(name)
      if let value { w.writeThousandths(value) } else { w.write("null") }
    }
    func bool(_ name: StaticString, _ value: Bool) {
      w.write(name)
      if value { w.write("true") } else { w.write("false") }
    }
    // The common runs of fixed text (the type, absent members) are written in one copy
    // each: the same bytes as member by member.
    switch e.type {
    case .enter: w.write("\"type\":\"enter\"")
    case .exit: w.write("\"type\":\"exit\"")
    case .dwell: w.write("\"type\":\"dwell\"")
    }
    e.writeGeofenceMembers(to: &w)
    string(",\"device_id\":", e.deviceID)
    let user = e.userID
    let anonymous = e.anonymousID
    if user == nil && anonymous == nil {
      w.write(",\"user_id\":null,\"anonymous_id\":null")
    } else {
      string(",\"user_id\":", user)
      string(",\"anonymous_id\":", anonymous)
    }
    if let session = e.sessionID {
      string(",\"session_id\":", session)
      w.write(",\"session_index\":")
      w.write(integer: Int64(e.sessionIndex ?? 0))
      w.write(",\"event_index\":")
      w.write(integer: Int64(e.eventIndex ?? 0))
    }
    time(",\"time\":", e.time)
    if processingTime { time(",\"processed_at\":", e.processedAt) }
    number(",\"latitude\":", e.latitude)
    number(",\"longitude\":", e.longitude)
    number(",\"accuracy\":", e.accuracy)
    thousandths(",\"distance_m\":", e.distanceMeters)
    let dwell = e.dwellSeconds
    let visit = e.visitSeconds
    if dwell == nil && visit == nil {
      w.write(",\"dwell_s\":null,\"visit_s\":null")
    } else {
      thousandths(",\"dwell_s\":", dwell)
      thousandths(",\"visit_s\":", visit)
    }
    let afterGap = e.afterGap
    let gapStart = e.gapStart
    let removal = e.isRemoval
    if !afterGap && gapStart == nil && !removal {
      w.write(",\"after_gap\":false,\"gap_start\":null,\"removal\":false")
    } else {
      bool(",\"after_gap\":", afterGap)
      time(",\"gap_start\":", gapStart)
      bool(",\"removal\":", removal)
    }
    if let i = e.fixIndex {
      w.write(",\"fix_index\":")
      w.write(integer: Int64(i))
    }
    if let track { string(",\"track\":", track) }
    if e.inferred { w.write(",\"inferred\":true") }
  }

  private func csvLine(_ e: GeofenceEvent, track: String?) -> String {
    // Text that comes from geofence definitions, devices or users is neutralised against
    // spreadsheet formulas; numbers, times and the fixed words are written as they are.
    let text = [
      e.id, e.type.rawValue, e.geofenceID, e.geofenceName ?? "", e.metadataJSON ?? "",
      e.url ?? "", e.deviceID, e.userID ?? "", e.anonymousID ?? "",
    ].map(Self.csvTextField)
    let time: String = e.time.map { RFC3339.format($0) } ?? ""
    let processed: String =
      includesProcessingTime ? (e.processedAt.map { RFC3339.format($0) } ?? "") : ""
    let accuracy: String = e.accuracy.map(Self.number) ?? ""
    let dwell: String = e.dwellSeconds.map { Self.rounded($0) } ?? ""
    let visit: String = e.visitSeconds.map { Self.rounded($0) } ?? ""
    let gapStart: String = e.gapStart.map { RFC3339.format($0) } ?? ""
    let fixIndex: String = e.fixIndex.map(String.init) ?? ""
    var fields: [String] = [time, processed, Self.number(e.latitude), Self.number(e.longitude)]
    fields += [accuracy, Self.rounded(e.distanceMeters), dwell, visit]
    fields += [e.afterGap ? "true" : "false", gapStart, e.isRemoval ? "true" : "false", fixIndex]
    fields = fields.map(Self.csvField)
    var all = text + fields + [Self.csvTextField(track ?? "")]
    if includesInferredColumn { all.append(e.inferred ? "true" : "") }
    return all.joined(separator: ",") + "\n"
  }

  /// Shortest round-trip decimal text of a finite number, or `null` (``JSONText``); a
  /// negative zero is written `0.0`, as by ``appendNumber(_:to:)``.
  static func number(_ v: Double) -> String {
    JSONText.number(v + 0, style: .shortestRoundTrip)
  }

  /// ``number(_:)``'s text appended to `out`: the shortest round-trip decimal, a negative
  /// zero (an accuracy or coordinate written `-0`) as `0.0` (`v + 0` is +0 for v = -0).
  @inline(__always)
  static func appendNumber(_ v: Double, to out: inout [UInt8]) {
    JSONText.appendNumber(v + 0, style: .shortestRoundTrip, to: &out)
  }

  /// `v` rounded to `decimals` places (``JSONText/rounded(_:decimals:)``), in
  /// ``number(_:)``'s form.
  static func rounded(_ v: Double, decimals: Int = 3) -> String {
    number(JSONText.rounded(v, decimals: decimals))
  }

  /// A CSV field of free text (a name, an id, metadata, a URL): ``csvField(_:)``, after a
  /// single quote (`'`) is put in front of text starting with `=`, `+`, `-`, `@`, a tab or a
  /// carriage return, so that a spreadsheet opening the file shows the text instead of running
  /// it as a formula (OWASP, "CSV Injection": `=HYPERLINK(...)` would otherwise become a
  /// link that leaks data or runs a command). Such a field is also quoted. The quote is part
  /// of the field for any other reader: a tool reading the file back sees `'=x` for `=x`.
  /// Numbers are written with ``csvField(_:)``, so a negative latitude stays `-33.9`.
  ///
  /// A control character other than tab, line feed and carriage return (U+0000–U+001F,
  /// U+007F: a NUL, a terminal's escape sequence) is written as U+FFFD: RFC 4180's text holds
  /// none, and a terminal or spreadsheet showing the file would act on it. The JSON forms keep
  /// such text as written, escaped.
  public static func csvTextField(_ s: String) -> String {
    let s =
      s.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }
      )
      ? String(
        String.UnicodeScalarView(
          s.unicodeScalars.map { v in
            (v.value < 0x20 && v != "\t" && v != "\n" && v != "\r") || v.value == 0x7F
              ? "\u{FFFD}" : v
          }))
      : s
    guard let first = s.unicodeScalars.first,
      first == "=" || first == "+" || first == "-" || first == "@" || first == "\t"
        || first == "\r"
    else { return csvField(s) }
    return "\"'" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
  public static func csvField(_ s: String) -> String {
    if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
      return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
    return s
  }
}

/// What ``GeofenceEventEncoder`` reads of an event: a ``GeofenceEvent``, or the engine's
/// borrowed view of one that it encodes without making the event (``GeofenceEngine``'s
/// `ingest(_:device:encoder:into:)`). Both go through the same members in the same order;
/// only the id and the geofence's members are written by the source.
protocol EncodableEvent {
  /// Writes the id as a JSON string (at most 64 bytes, within the bound's fixed part).
  func writeQuotedID(to w: inout JSONText.Writer)
  /// Writes ``GeofenceEventEncoder/appendGeofenceMembers(id:name:metadataJSON:url:to:)``'s
  /// bytes for the event's geofence.
  func writeGeofenceMembers(to w: inout JSONText.Writer)
  /// An upper bound of the bytes ``writeGeofenceMembers(to:)`` writes.
  var geofenceMembersBound: Int { get }
  var type: TransitionType { get }
  var deviceID: String { get }
  var userID: String? { get }
  var anonymousID: String? { get }
  var sessionID: String? { get }
  var sessionIndex: Int? { get }
  var eventIndex: Int? { get }
  var time: Double? { get }
  var processedAt: Double? { get }
  var latitude: Double { get }
  var longitude: Double { get }
  var accuracy: Double? { get }
  var distanceMeters: Double { get }
  var dwellSeconds: Double? { get }
  var visitSeconds: Double? { get }
  var afterGap: Bool { get }
  var gapStart: Double? { get }
  var isRemoval: Bool { get }
  var fixIndex: Int? { get }
  var inferred: Bool { get }
}

extension GeofenceEvent: EncodableEvent {
  func writeQuotedID(to w: inout JSONText.Writer) { w.writeQuoted(id) }

  func writeGeofenceMembers(to w: inout JSONText.Writer) {
    GeofenceEventEncoder.writeGeofenceMembers(
      id: geofenceID, name: geofenceName, metadataJSON: metadataJSON, url: url, to: &w)
  }

  var geofenceMembersBound: Int {
    // The id is written in the bound's fixed part only when short: count it here as well.
    JSONText.Writer.quotedBound(byteCount: id.utf8.count)
      + GeofenceEventEncoder.geofenceMembersBound(
        id: geofenceID, name: geofenceName, metadataJSON: metadataJSON, url: url)
  }
}
