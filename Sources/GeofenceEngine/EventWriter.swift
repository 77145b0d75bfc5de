import EventOutbox
import Foundation
import TrackFormats

/// Output formats for events.
public enum EventFormat: String, CaseIterable, Sendable {
  /// One JSON object per line (JSON Lines).
  case jsonl
  /// RFC 4180 CSV with a header row.
  case csv
  /// A GeoJSON FeatureCollection of Point features (written as a whole at the end).
  case geojson
}

/// Serialises ``EventRecord``s. Field names are the same in every format:
/// `type, region_id, region_name, device_id, time, fix_index, latitude, longitude, accuracy,
/// distance_m, dwell_s`. `time` is RFC 3339 UTC with milliseconds; absent values are JSON
/// `null` / empty CSV fields. `distance_m` is rounded to millimetres, `dwell_s` to
/// milliseconds.
public struct EventWriter {
  public let format: EventFormat
  private var featureCount = 0

  public init(format: EventFormat) { self.format = format }

  /// Text to write before the first event.
  public func header() -> String {
    switch format {
    case .jsonl: return ""
    case .csv:
      return
        "type,region_id,region_name,device_id,time,fix_index,latitude,longitude,accuracy,distance_m,dwell_s,track\n"
    case .geojson: return "{\"type\":\"FeatureCollection\",\"features\":[\n"
    }
  }

  /// Text for one event.
  public mutating func line(for e: EventRecord, track: String? = nil) -> String {
    switch format {
    case .jsonl:
      return jsonObject(e, track: track) + "\n"
    case .csv:
      let fields: [String] = [
        e.type, e.regionID, e.regionName ?? "", e.deviceID ?? "",
        e.time.map { RFC3339.format($0) } ?? "", String(e.fixIndex), number(e.latitude),
        number(e.longitude), e.accuracy.map(number) ?? "", rounded(e.distanceMeters, 1000),
        e.dwellSeconds.map { rounded($0, 1000) } ?? "", track ?? "",
      ]
      return fields.map(csvField).joined(separator: ",") + "\n"
    case .geojson:
      let prefix = featureCount == 0 ? "" : ",\n"
      featureCount += 1
      return prefix
        + "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[\(number(e.longitude)),\(number(e.latitude))]},\"properties\":\(jsonObject(e, track: track))}"
    }
  }

  /// Text to write after the last event.
  public func footer() -> String {
    format == .geojson ? "\n]}\n" : ""
  }

  private func jsonObject(_ e: EventRecord, track: String?) -> String {
    var s = "{\"type\":\(JSONText.quoted(e.type)),\"region_id\":\(JSONText.quoted(e.regionID))"
    s += ",\"region_name\":\(e.regionName.map(JSONText.quoted) ?? "null")"
    s += ",\"device_id\":\(e.deviceID.map(JSONText.quoted) ?? "null")"
    s += ",\"time\":\(e.time.map { JSONText.quoted(RFC3339.format($0)) } ?? "null")"
    s += ",\"fix_index\":\(e.fixIndex),\"latitude\":\(number(e.latitude))"
    s += ",\"longitude\":\(number(e.longitude))"
    s += ",\"accuracy\":\(e.accuracy.map(number) ?? "null")"
    s += ",\"distance_m\":\(rounded(e.distanceMeters, 1000))"
    if let d = e.dwellSeconds { s += ",\"dwell_s\":\(rounded(d, 1000))" }
    if let track { s += ",\"track\":\(JSONText.quoted(track))" }
    return s + "}"
  }
}

/// Shortest round-trip decimal text of a finite number (Swift's `description`), or `null`.
func number(_ v: Double) -> String {
  v.isFinite ? v.description : "null"
}

/// `v` rounded to 1/`scale` and printed without exponent noise.
func rounded(_ v: Double, _ scale: Double) -> String {
  guard v.isFinite else { return "null" }
  let r = (v * scale).rounded() / scale
  return r.description
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
func csvField(_ s: String) -> String {
  if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
    return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }
  return s
}
