import GeofenceGeometry

/// Loads the real workloads from the repository's `data/` folder with a minimal reader: place
/// sets as circles of a fixed radius, tracks from the GPX and CSV files.
///
/// - Places: RFC 4180 CSV with `latitude` and `longitude` columns (as in
///   `data/places/*_geofences.csv`); rows with an invalid coordinate are skipped.
/// - GPX: every `<trkpt>` and `<rtept>` with `lat` and `lon` attributes; one track per file.
/// - CSV tracks: a header with `latitude` and `longitude` columns (any case), `,` or `;`
///   separated; one track per file, in file order.
///
/// Track times are not read: a real track's fixes get `t` = 0, 1, 2, ... seconds.
public enum RealData {
  /// Radius of a town geofence, metres (the radius used for towns in `data/README.md`).
  public static let townRadiusMeters = 1_500.0
  /// Radius of an airport geofence, metres (as in `data/README.md`).
  public static let airportRadiusMeters = 3_000.0

  /// The real workloads: `real-towns` (the 144k towns of `rg_cities1000_geofences.csv`) and
  /// `real-airports` (the 28k airports of `airports_geofences.csv`), each against every track
  /// under `data/tracks`.
  /// - Parameter dataDirectory: the `data` folder.
  public static func workloads(dataDirectory: String) throws(WorkloadFileError) -> [Workload] {
    let tracks = try loadTracks(directory: dataDirectory + "/tracks")
    var result: [Workload] = []
    for (name, file, radius) in [
      ("real-towns", "rg_cities1000_geofences.csv", townRadiusMeters),
      ("real-airports", "airports_geofences.csv", airportRadiusMeters),
    ] {
      let regions = try loadPlaces(
        path: dataDirectory + "/places/" + file, radiusMeters: radius)
      result.append(
        Workload(
          name: name, kind: .real, regions: regions, fixes: tracks.fixes,
          fixTimes: tracks.times, trackStarts: tracks.starts, hasFixTimes: false))
    }
    return result
  }

  /// Reads a place set as circles of `radiusMeters`, in file order.
  public static func loadPlaces(path: String, radiusMeters: Double) throws(WorkloadFileError)
    -> [CircularRegion]
  {
    let rows = splitCSV(try readFileBytes(path), separator: 44)
    guard let header = rows.first,
      let latColumn = header.firstIndex(where: { $0.lowercased() == "latitude" }),
      let lonColumn = header.firstIndex(where: { $0.lowercased() == "longitude" })
    else {
      throw .malformed(path: path, line: 1, message: "no latitude and longitude columns")
    }
    var regions: [CircularRegion] = []
    regions.reserveCapacity(rows.count)
    for row in rows.dropFirst() where row.count > max(latColumn, lonColumn) {
      guard let lat = Double(row[latColumn]), let lon = Double(row[lonColumn]),
        let c = try? Coordinate(latitude: lat, longitude: lon),
        let region = try? CircularRegion(center: c, radiusMeters: radiusMeters)
      else { continue }
      regions.append(region)
    }
    return regions
  }

  /// Reads every track file under `directory/gpx` and `directory/csv`, in name order.
  public static func loadTracks(directory: String) throws(WorkloadFileError) -> (
    fixes: [Coordinate], times: [Double], starts: [Int]
  ) {
    var fixes: [Coordinate] = []
    var times: [Double] = []
    var starts = [0]
    func add(_ track: [Coordinate]) {
      guard !track.isEmpty else { return }
      fixes.append(contentsOf: track)
      times.append(contentsOf: (0..<track.count).map(Double.init))
      starts.append(fixes.count)
    }
    for name in directoryEntries(directory + "/gpx") where name.lowercased().hasSuffix(".gpx") {
      add(gpxPoints(try readFileBytes(directory + "/gpx/" + name)))
    }
    for name in directoryEntries(directory + "/csv") where name.lowercased().hasSuffix(".csv") {
      add(csvPoints(try readFileBytes(directory + "/csv/" + name)))
    }
    return (fixes, times, starts)
  }

  /// The `lat`/`lon` attributes of every `<trkpt` and `<rtept` element, in order.
  static func gpxPoints(_ bytes: [UInt8]) -> [Coordinate] {
    var points: [Coordinate] = []
    let trkpt = Array("<trkpt".utf8)
    let rtept = Array("<rtept".utf8)
    var i = 0
    let n = bytes.count
    func startsWith(_ p: [UInt8], at i: Int) -> Bool {
      i + p.count <= n && bytes[i..<(i + p.count)].elementsEqual(p)
    }
    while i < n {
      guard bytes[i] == 60, startsWith(trkpt, at: i) || startsWith(rtept, at: i) else {
        i += 1
        continue
      }
      var end = i
      while end < n, bytes[end] != 62 { end += 1 }
      let tag = bytes[i..<end]
      if let lat = attribute("lat", in: tag), let lon = attribute("lon", in: tag),
        let c = try? Coordinate(latitude: lat, longitude: lon)
      {
        points.append(c)
      }
      i = end
    }
    return points
  }

  /// The numeric value of ` name="..."` (or single quotes) inside a tag.
  static func attribute(_ name: String, in tag: ArraySlice<UInt8>) -> Double? {
    let key = Array((" " + name + "=").utf8)
    var i = tag.startIndex
    while i + key.count < tag.endIndex {
      // Any whitespace before the name counts.
      let ws = tag[i] == 32 || tag[i] == 9 || tag[i] == 10 || tag[i] == 13
      if ws, tag[(i + 1)..<(i + key.count)].elementsEqual(key.dropFirst()) {
        let quote = tag[i + key.count]
        guard quote == 34 || quote == 39 else { return nil }
        var j = i + key.count + 1
        let start = j
        while j < tag.endIndex, tag[j] != quote { j += 1 }
        return Double(String(decoding: tag[start..<j], as: UTF8.self))
      }
      i += 1
    }
    return nil
  }

  /// Points of a CSV track with `latitude` and `longitude` columns; `[]` if it has none.
  static func csvPoints(_ bytes: [UInt8]) -> [Coordinate] {
    let firstLineEnd = bytes.firstIndex(of: 10) ?? bytes.count
    let separator: UInt8 = bytes[..<firstLineEnd].contains(59) ? 59 : 44
    let rows = splitCSV(bytes, separator: separator)
    guard let header = rows.first,
      let latColumn = header.firstIndex(where: { $0.lowercased() == "latitude" }),
      let lonColumn = header.firstIndex(where: { $0.lowercased() == "longitude" })
    else { return [] }
    var points: [Coordinate] = []
    for row in rows.dropFirst() where row.count > max(latColumn, lonColumn) {
      if let lat = Double(row[latColumn]), let lon = Double(row[lonColumn]),
        let c = try? Coordinate(latitude: lat, longitude: lon)
      {
        points.append(c)
      }
    }
    return points
  }

  /// RFC 4180 rows: `separator`-separated fields, `"` quoting with `""` escapes, `\n` or
  /// `\r\n` line ends; a trailing NUL byte and empty lines are ignored.
  static func splitCSV(_ bytes: [UInt8], separator: UInt8) -> [[String]] {
    var rows: [[String]] = []
    var row: [String] = []
    var field: [UInt8] = []
    var quoted = false
    var i = 0
    let n = bytes.last == 0 ? bytes.count - 1 : bytes.count
    func endRow() {
      row.append(String(decoding: field, as: UTF8.self))
      field.removeAll(keepingCapacity: true)
      if !(row.count == 1 && row[0].isEmpty) { rows.append(row) }
      row = []
    }
    while i < n {
      let b = bytes[i]
      if quoted {
        if b == 34 {
          if i + 1 < n, bytes[i + 1] == 34 {
            field.append(34)
            i += 1
          } else {
            quoted = false
          }
        } else {
          field.append(b)
        }
      } else if b == 34 {
        quoted = true
      } else if b == separator {
        row.append(String(decoding: field, as: UTF8.self))
        field.removeAll(keepingCapacity: true)
      } else if b == 10 {
        endRow()
      } else if b != 13 {
        field.append(b)
      }
      i += 1
    }
    if !field.isEmpty || !row.isEmpty { endRow() }
    return rows
  }
}
