#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import GeofenceGeometry

/// Reads and writes a workload as two CSV files that every contender reads.
///
/// - Regions file: header `id,latitude,longitude,radius_m`, then one row per region, `id` being
///   the slot (0, 1, 2, ... in order), degrees and metres as shortest round-trip decimals, so a
///   reader with a correct `strtod` gets the identical doubles.
/// - Fixes file: header `track,t,latitude,longitude`, then one row per fix in fix-index order;
///   `track` is the 0-based track number (tracks are contiguous), `t` seconds since the track
///   started.
///
/// Both files are UTF-8 with `\n` line ends and no quoting.
public enum WorkloadFiles {
  public static let regionsHeader = "id,latitude,longitude,radius_m"
  public static let fixesHeader = "track,t,latitude,longitude"

  /// File names used for a workload in a directory: `<name>-<N>-regions.csv` and
  /// `<name>-<N>-fixes.csv`.
  public static func fileNames(for workload: Workload) -> (regions: String, fixes: String) {
    let stem = "\(workload.name)-\(workload.regions.count)"
    return ("\(stem)-regions.csv", "\(stem)-fixes.csv")
  }

  /// Writes the regions file.
  public static func writeRegions(_ regions: [CircularRegion], to path: String)
    throws(WorkloadFileError)
  {
    var out = try TextFileWriter(path: path)
    try out.write(regionsHeader + "\n")
    for (i, r) in regions.enumerated() {
      try out.write("\(i),\(r.center.latitude),\(r.center.longitude),\(r.radiusMeters)\n")
    }
    try out.close()
  }

  /// Writes the fixes file.
  public static func writeFixes(_ workload: Workload, to path: String) throws(WorkloadFileError) {
    var out = try TextFileWriter(path: path)
    try out.write(fixesHeader + "\n")
    for k in 0..<workload.trackCount {
      for f in workload.trackRange(k) {
        let c = workload.fixes[f]
        try out.write("\(k),\(workload.fixTimes[f]),\(c.latitude),\(c.longitude)\n")
      }
    }
    try out.close()
  }

  /// Reads the regions file.
  /// - Throws: ``WorkloadFileError`` when the file cannot be read, a row is malformed, an id is
  ///   not its row's slot, a coordinate or radius is invalid, or it holds no region.
  public static func readRegions(_ path: String) throws(WorkloadFileError) -> [CircularRegion] {
    let bytes = try readFileBytes(path)
    // Exact capacity, so that the index's memory figure carries no growth slack.
    var regions: [CircularRegion] = []
    regions.reserveCapacity(lineCount(bytes))
    try parseNumericRows(bytes, path: path, header: regionsHeader, columns: 4) {
      (line, v) throws(WorkloadFileError) in
      guard v[0] == Double(regions.count) else {
        let id = v[0] == v[0].rounded() && abs(v[0]) < 1e15 ? String(Int64(v[0])) : "\(v[0])"
        throw .malformed(
          path: path, line: line, message: "id \(id) is not the slot \(regions.count)")
      }
      do {
        let c = try Coordinate(latitude: v[1], longitude: v[2])
        regions.append(try CircularRegion(center: c, radiusMeters: v[3]))
      } catch {
        throw .malformed(path: path, line: line, message: "\(error)")
      }
    }
    if regions.isEmpty {
      throw .malformed(path: path, line: 2, message: "no regions after the header")
    }
    return regions
  }

  /// Reads a workload from its two files. The times of a `.real` workload are taken as fix
  /// counts (``Workload/hasFixTimes`` false), as ``RealData`` writes them.
  /// - Throws: ``WorkloadFileError`` as ``readRegions(_:)`` does, and when the fixes file
  ///   cannot be read, a row is malformed, tracks are not numbered 0, 1, 2, ... in order, a
  ///   time is not a finite number, a coordinate is invalid, or it holds no fix.
  public static func read(
    name: String, kind: WorkloadKind, regionsPath: String, fixesPath: String
  ) throws(WorkloadFileError) -> Workload {
    let regions = try readRegions(regionsPath)
    let bytes = try readFileBytes(fixesPath)
    var fixes: [Coordinate] = []
    var times: [Double] = []
    fixes.reserveCapacity(lineCount(bytes))
    times.reserveCapacity(lineCount(bytes))
    var starts: [Int] = [0]
    var track = 0.0
    try parseNumericRows(bytes, path: fixesPath, header: fixesHeader, columns: 4) {
      (line, v) throws(WorkloadFileError) in
      if v[0] != track {
        guard v[0] == track + 1, !fixes.isEmpty else {
          throw .malformed(path: fixesPath, line: line, message: "tracks must be 0, 1, 2, ...")
        }
        starts.append(fixes.count)
        track = v[0]
      }
      guard v[1].isFinite else {
        throw .malformed(
          path: fixesPath, line: line, message: "time \(v[1]) is not a finite number")
      }
      do {
        fixes.append(try Coordinate(latitude: v[2], longitude: v[3]))
        times.append(v[1])
      } catch {
        throw .malformed(path: fixesPath, line: line, message: "\(error)")
      }
    }
    if fixes.isEmpty {
      throw .malformed(path: fixesPath, line: 2, message: "no fixes after the header")
    }
    starts.append(fixes.count)
    return Workload(
      name: name, kind: kind, regions: regions, fixes: fixes, fixTimes: times, trackStarts: starts,
      hasFixTimes: kind != .real)
  }

  /// Number of `\n` bytes (an upper bound on the data rows, header excluded, plus one).
  static func lineCount(_ bytes: [UInt8]) -> Int {
    var n = 0
    for b in bytes where b == 10 { n += 1 }
    return n
  }

  /// Parses `header\n` then rows of `columns` comma-separated numbers with `strtod`.
  static func parseNumericRows(
    _ bytes: [UInt8], path: String, header: String, columns: Int,
    row: (Int, [Double]) throws(WorkloadFileError) -> Void
  ) throws(WorkloadFileError) {
    let headerBytes = Array(header.utf8)
    guard bytes.count > headerBytes.count, Array(bytes[0..<headerBytes.count]) == headerBytes
    else {
      throw .malformed(path: path, line: 1, message: "expected the header '\(header)'")
    }
    var values = [Double](repeating: 0, count: columns)
    var failure: WorkloadFileError?
    bytes.withUnsafeBufferPointer { buf in
      // `bytes` is non-empty (it holds at least the header), so it has a base address.
      guard let address = buf.baseAddress else { return }
      let base = UnsafeMutableRawPointer(mutating: address).assumingMemoryBound(to: CChar.self)
      let end = buf.count - 1  // the NUL
      var i = headerBytes.count
      var line = 1
      while i < end {
        // Skip the line end(s).
        while i < end, buf[i] == 10 || buf[i] == 13 {
          if buf[i] == 10 { line += 1 }
          i += 1
        }
        if i >= end { break }
        for c in 0..<columns {
          var next: UnsafeMutablePointer<CChar>? = nil
          values[c] = strtod(base + i, &next)
          let consumed = (next ?? base + i) - (base + i)
          let terminator = buf[i + consumed]
          let expected: Bool =
            c < columns - 1
            ? terminator == 44 : (terminator == 10 || terminator == 13 || terminator == 0)
          if consumed == 0 || !expected {
            let name = header.split(separator: ",").map(String.init)[c]
            let problem =
              consumed == 0
              ? "field \(c + 1) (\(name)) is not a number"
              : c < columns - 1
                ? "field \(c + 1) (\(name)) is not a number followed by a comma"
                : "more than \(columns) fields"
            failure = .malformed(
              path: path, line: line, message: "\(problem); expected \(columns) numbers: \(header)")
            return
          }
          i += consumed + (c < columns - 1 ? 1 : 0)
        }
        do throws(WorkloadFileError) {
          try row(line, values)
        } catch {
          failure = error
          return
        }
      }
    }
    if let failure { throw failure }
  }
}
