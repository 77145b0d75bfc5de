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
/// CSV has one column per member (`metadata` as JSON text), with empty fields for `null`;
/// the `inferred` column (`true` or empty) only with ``includesInferredColumn``.
///
/// Not `Sendable`-sensitive: a value. Each call allocates its output string.
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

  /// The text of one event in ``format`` (a line ending in `\n` for JSON Lines and CSV).
  /// - Parameter track: the input file to name in `track`, if any.
  public mutating func encode(_ e: GeofenceEvent, track: String? = nil) -> String {
    switch format {
    case .jsonl:
      return Self.object(e, track: track, processingTime: includesProcessingTime) + "\n"
    case .csv:
      return csvLine(e, track: track)
    case .geojson:
      let prefix = featureCount == 0 ? "" : ",\n"
      featureCount += 1
      return prefix
        + "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":["
        + Self.number(e.longitude) + "," + Self.number(e.latitude) + "]},\"properties\":"
        + Self.object(e, track: track, processingTime: includesProcessingTime) + "}"
    }
  }

  /// The event's JSON object without its `id` member, as the outbox stores it (the outbox
  /// writes `{"id": ...}` first on upload, which gives back ``object(_:track:processingTime:)``).
  public static func payload(_ e: GeofenceEvent, processingTime: Bool = true) -> String {
    "{" + members(e, track: nil, processingTime: processingTime) + "}"
  }

  /// The event's whole JSON object.
  public static func object(_ e: GeofenceEvent, track: String? = nil, processingTime: Bool)
    -> String
  {
    "{\"id\":" + JSONText.quoted(e.id) + ","
      + members(e, track: track, processingTime: processingTime) + "}"
  }

  private static func members(_ e: GeofenceEvent, track: String?, processingTime: Bool)
    -> String
  {
    // One growing string, appended in place: concatenating temporaries cost more than the
    // numbers themselves.
    var s = ""
    s.reserveCapacity(400 + (e.metadataJSON?.utf8.count ?? 0))
    func member(_ name: StaticString, _ value: String) {
      s.append(",\"")
      s.append(name.description)
      s.append("\":")
      s.append(value)
    }
    func quoted(_ name: StaticString, _ value: String?) {
      s.append(",\"")
      s.append(name.description)
      s.append("\":")
      if let value { JSONText.appendQuoted(value, to: &s) } else { s.append("null") }
    }
    s.append("\"type\":\"")
    s.append(e.type.rawValue)
    s.append("\"")
    quoted("geofence_id", e.geofenceID)
    quoted("geofence_name", e.geofenceName)
    member("metadata", e.metadataJSON ?? "null")
    quoted("url", e.url)
    quoted("device_id", e.deviceID)
    quoted("user_id", e.userID)
    quoted("anonymous_id", e.anonymousID)
    quoted("time", e.time.map { RFC3339.format($0) })
    if processingTime { quoted("processed_at", e.processedAt.map { RFC3339.format($0) }) }
    member("latitude", number(e.latitude))
    member("longitude", number(e.longitude))
    member("accuracy", e.accuracy.map(number) ?? "null")
    member("distance_m", rounded(e.distanceMeters))
    member("dwell_s", e.dwellSeconds.map { rounded($0) } ?? "null")
    member("visit_s", e.visitSeconds.map { rounded($0) } ?? "null")
    member("after_gap", e.afterGap ? "true" : "false")
    quoted("gap_start", e.gapStart.map { RFC3339.format($0) })
    member("removal", e.isRemoval ? "true" : "false")
    if let i = e.fixIndex { member("fix_index", String(i)) }
    if let track { quoted("track", track) }
    if e.inferred { member("inferred", "true") }
    return s
  }

  private func csvLine(_ e: GeofenceEvent, track: String?) -> String {
    let fields: [String] = [
      e.id, e.type.rawValue, e.geofenceID, e.geofenceName ?? "", e.metadataJSON ?? "",
      e.url ?? "", e.deviceID, e.userID ?? "", e.anonymousID ?? "",
      e.time.map { RFC3339.format($0) } ?? "",
      includesProcessingTime ? (e.processedAt.map { RFC3339.format($0) } ?? "") : "",
      Self.number(e.latitude), Self.number(e.longitude), e.accuracy.map(Self.number) ?? "",
      Self.rounded(e.distanceMeters), e.dwellSeconds.map { Self.rounded($0) } ?? "",
      e.visitSeconds.map { Self.rounded($0) } ?? "", e.afterGap ? "true" : "false",
      e.gapStart.map { RFC3339.format($0) } ?? "", e.isRemoval ? "true" : "false",
      e.fixIndex.map(String.init) ?? "", track ?? "",
    ]
    if includesInferredColumn {
      return (fields + [e.inferred ? "true" : ""]).map(Self.csvField).joined(separator: ",")
        + "\n"
    }
    return fields.map(Self.csvField).joined(separator: ",") + "\n"
  }

  private static func string(_ s: String?) -> String { s.map(JSONText.quoted) ?? "null" }

  /// Shortest round-trip decimal text of a finite number, or `null` (``JSONText``).
  static func number(_ v: Double) -> String { JSONText.number(v, style: .shortestRoundTrip) }

  /// `v` rounded to `decimals` places (``JSONText/rounded(_:decimals:)``), in
  /// ``number(_:)``'s form.
  static func rounded(_ v: Double, decimals: Int = 3) -> String {
    number(JSONText.rounded(v, decimals: decimals))
  }

  /// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
  public static func csvField(_ s: String) -> String {
    if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
      return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
    return s
  }
}
