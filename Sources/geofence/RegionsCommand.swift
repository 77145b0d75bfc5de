import Foundation
import GeofenceEngine
import GeofenceGeometry
import JSONText
import GeofenceSync
import Networking
import TrackFormats

/// `geofence regions`: the stored, synced set, one geofence per line.
enum RegionsCommand {
  static let help = """
    usage: geofence regions --store DIR [--format csv|json|jsonl|geojson]

    Lists the geofence set that 'geofence sync' stored in DIR (DIR/geofences.sqlite), one
    geofence per line, in id order. The version, the last sync time and the staleness go to
    standard error.

      --store DIR             the store
      --format F              csv (default): id,name,latitude,longitude,radius_m,metadata,
                              geometry (a polygon: its GeoJSON geometry, the circle columns
                              empty; metadata as JSON text), which 'geofence replay
                              --regions' reads back as the same set (so every value is
                              written as it is, without the ' that event CSV puts before
                              text a spreadsheet would take for a formula); json: an
                              array of {"id","name","latitude","longitude",
                              "radius","metadata"} (a polygon: "geometry" instead of the
                              circle), the definition list 'geofence replay --regions' reads;
                              jsonl: the same objects, one per line; geojson: an RFC 7946
                              FeatureCollection of Point features with "radius" (metres) and
                              Polygon/MultiPolygon features, with "name" and "metadata"

    exit status: 0; 64 usage error; 65 the store is damaged (see 'geofence repair'); 66 no
    geofence store in DIR; 74 the store cannot be read or standard output cannot be written.
    """

  static func run(_ argv: [String]) -> Int32 {
    let args: CommandLineArguments
    let store: String
    let format: String
    do throws(UsageError) {
      args = try CommandLineArguments(
        argv, spec: .init(valued: ["store", "format"], flags: ["help", "quiet"]))
      if args.flag("help") {
        print(help)
        return ExitStatus.ok
      }
      guard let s = args.last("store") else { throw UsageError("give --store DIR") }
      store = s
      format = args.last("format") ?? "csv"
      guard ["csv", "json", "jsonl", "geojson"].contains(format) else {
        throw UsageError("--format must be csv, json, jsonl or geojson, got '\(format)'")
      }
      if let extra = args.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
    } catch {
      printError("geofence regions: \(error.message)\nRun 'geofence regions --help' for usage.")
      return ExitStatus.usage
    }
    let path = URL(fileURLWithPath: store).appendingPathComponent("geofences.sqlite").path
    guard FileManager.default.fileExists(atPath: path) else {
      printError("geofence regions: no geofence store in \(store) (run 'geofence sync' first)")
      return ExitStatus.noInput
    }
    // The rows are the set: a damaged row is named even when the indexed snapshot (which the
    // engine opens instead of the rows) still holds the set it was built from.
    if let status = damagedStoreStatus(store, command: "regions") { return status }
    let engine: GeofenceEngine
    let state: StoredSyncState
    do {
      engine = try GeofenceEngine(
        configuration: .init(checkpoints: .none), storage: .directory(store))
      state = try engine.setState()
    } catch {
      if let status = storeInUseStatus(error, command: "regions") { return status }
      if let status = damagedStoreStatus(store, command: "regions") { return status }
      printError("geofence regions: cannot read \(path): \(error)")
      return ExitStatus.ioError
    }
    var out = StandardOutput()
    let geofences = engine.geofences.sorted {
      Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8))
    }
    switch format {
    case "csv":
      out.write("id,name,latitude,longitude,radius_m,metadata,geometry\n")
      for g in geofences {
        let circle = g.polygon == nil
        let fields = [
          GeofenceEventEncoder.csvField(g.id), GeofenceEventEncoder.csvField(g.name ?? ""),
          GeofenceEventEncoder.csvField(circle ? g.region.center.latitude.description : ""),
          GeofenceEventEncoder.csvField(circle ? g.region.center.longitude.description : ""),
          GeofenceEventEncoder.csvField(circle ? g.region.radiusMeters.description : ""),
          GeofenceEventEncoder.csvField(g.metadataJSON ?? ""),
          GeofenceEventEncoder.csvField(g.polygon.map(geometryJSON) ?? ""),
        ]
        out.write(fields.joined(separator: ",") + "\n")
      }
    case "jsonl":
      for g in geofences { out.write(jsonObject(g, geoJSON: false) + "\n") }
    case "json":
      out.write("[\n")
      for (i, g) in geofences.enumerated() {
        out.write((i == 0 ? "" : ",\n") + jsonObject(g, geoJSON: false))
      }
      out.write("\n]\n")
    default:
      out.write("{\"type\":\"FeatureCollection\",\"features\":[\n")
      for (i, g) in geofences.enumerated() {
        out.write((i == 0 ? "" : ",\n") + jsonObject(g, geoJSON: true))
      }
      out.write("\n]}\n")
    }
    out.flush()
    if !args.flag("quiet") {
      // The version and the stale reason came from a server (a store written before the
      // reason was made safe may hold it raw).
      printError(
        "version: \(ServerText.displayable(state.version ?? "none")); geofences: "
          + "\(geofences.count); synced: "
          + (state.syncedAt.map { RFC3339.format($0) } ?? "never") + "; stale: "
          + ServerText.displayable(state.staleReason ?? "no"))
    }
    return ExitStatus.ok
  }

  /// A polygon as an RFC 7946 geometry object: `Polygon` for one part, `MultiPolygon` for
  /// more, with the region's own positions (one longitude frame, outer rings
  /// counter-clockwise) in shortest round-trip form, so reading it back gives the same region.
  static func geometryJSON(_ polygon: PolygonRegion) -> String {
    func ring(_ positions: [SIMD2<Double>]) -> String {
      "["
        + positions.map {
          "[\(JSONText.number($0.x, style: .shortestRoundTrip)),"
            + "\(JSONText.number($0.y, style: .shortestRoundTrip))]"
        }.joined(separator: ",") + "]"
    }
    let parts = polygon.polygons.map { "[" + $0.map(ring).joined(separator: ",") + "]" }
    return parts.count == 1
      ? "{\"type\":\"Polygon\",\"coordinates\":\(parts[0])}"
      : "{\"type\":\"MultiPolygon\",\"coordinates\":[\(parts.joined(separator: ","))]}"
  }

  /// One geofence as a definition object (`geoJSON: false`) or an RFC 7946 feature (a Point
  /// with `radius`, or the polygon), through the one JSON writer; numbers in shortest
  /// round-trip form.
  static func jsonObject(_ g: Geofence, geoJSON: Bool) -> String {
    func set(_ w: inout JSONObjectWriter, _ key: String, _ value: String?) {
      if let value { w.add(key, string: value) } else { w.addNull(key) }
    }
    let lat = JSONText.number(g.region.center.latitude, style: .shortestRoundTrip)
    let lon = JSONText.number(g.region.center.longitude, style: .shortestRoundTrip)
    let radius = JSONText.number(g.region.radiusMeters, style: .shortestRoundTrip)
    var w = JSONObjectWriter(numberStyle: .shortestRoundTrip)
    if geoJSON {
      var properties = JSONObjectWriter(numberStyle: .shortestRoundTrip)
      set(&properties, "name", g.name)
      if g.polygon == nil { properties.add("radius", raw: radius) }
      properties.add("metadata", raw: g.metadataJSON ?? "null")
      w.add("type", string: "Feature")
      w.add("id", string: g.id)
      w.add(
        "geometry",
        raw: g.polygon.map(geometryJSON)
          ?? "{\"type\":\"Point\",\"coordinates\":[\(lon),\(lat)]}")
      w.add("properties", raw: properties.finish())
    } else {
      w.add("id", string: g.id)
      set(&w, "name", g.name)
      if let polygon = g.polygon {
        w.add("geometry", raw: geometryJSON(polygon))
      } else {
        w.add("latitude", raw: lat)
        w.add("longitude", raw: lon)
        w.add("radius", raw: radius)
      }
      w.add("metadata", raw: g.metadataJSON ?? "null")
    }
    return w.finish()
  }
}
