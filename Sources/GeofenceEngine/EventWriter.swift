import Foundation
import JSONText
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
        number(e.longitude), e.accuracy.map(number) ?? "", rounded(e.distanceMeters, decimals: 3),
        e.dwellSeconds.map { rounded($0, decimals: 3) } ?? "", track ?? "",
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
    s += ",\"distance_m\":\(rounded(e.distanceMeters, decimals: 3))"
    if let d = e.dwellSeconds { s += ",\"dwell_s\":\(rounded(d, decimals: 3))" }
    if let track { s += ",\"track\":\(JSONText.quoted(track))" }
    return s + "}"
  }
}

/// Shortest round-trip decimal text of a finite number (`5.0`, not `5`), or `null`.
private func number(_ v: Double) -> String {
  JSONText.number(v, style: .shortestRoundTrip)
}

/// `v` rounded to `decimals` places, as ``number(_:)`` prints it.
private func rounded(_ v: Double, decimals: Int) -> String {
  number(JSONText.rounded(v, decimals: decimals))
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
func csvField(_ s: String) -> String {
  if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
    return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }
  return s
}
