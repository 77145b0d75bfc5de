import GeofenceGeometry

/// The layout a track file was read as.
public enum TrackFileFormat: String, Hashable, Sendable, CustomStringConvertible {
  /// GPX 1.0 or 1.1 (`trkpt`, `rtept`, or `wpt` when the file holds nothing else).
  case gpx
  /// Delimited text with a header row naming the columns (comma, semicolon or tab).
  case csv
  /// GeoLife trajectory or OziExplorer track point file (`.plt`): six header lines, then
  /// `lat,lon,code,altitude,days,date,time` rows without a header row.
  case plt
  /// 70mai dash-cam `GPSData*.txt` log: `$V02` marker lines between recordings, then rows
  /// `epoch_seconds,A|V,lat,lon,...` without a header row.
  case dashCamLog

  public var description: String { rawValue }
}

/// A problem tied to a place in a track file: a skipped record or a warning.
public struct TrackIssue: Hashable, Sendable, CustomStringConvertible {
  /// The file name as given to the reader (normally the last path component).
  public var file: String
  /// 1-based line number, or `nil` when the issue concerns the whole file.
  public var line: Int?
  /// What was wrong and what the reader did about it.
  public var message: String

  public init(file: String, line: Int?, message: String) {
    self.file = file
    self.line = line
    self.message = message
  }

  /// `file:line: message`, or `file: message` when there is no line.
  public var description: String {
    if let line { return "\(file):\(line): \(message)" }
    return "\(file): \(message)"
  }
}

/// The fixes read from one track file, with everything the reader skipped or had to guess.
public struct TrackReadResult: Hashable, Sendable {
  /// The fixes in file order. `sourceIndex` is the record's 0-based index as written (GPX
  /// `trkpt`/`rtept` in document order, or CSV data row), so skipped records leave gaps.
  /// Fixes are not sorted: files with out-of-order times keep their order.
  public var fixes: [LocationFix]
  /// Things read with an assumption (a time without a zone read as UTC, an unreadable time
  /// left `nil`, waypoints read as the track, ...). The fixes concerned are still returned.
  public var warnings: [TrackIssue]
  /// Records that gave no fix (bad or missing latitude/longitude, a logger's "no fix" row),
  /// each with its line and the reason.
  public var skippedRows: [TrackIssue]
  /// The layout the file was read as.
  public var format: TrackFileFormat
  /// When the file breaks off (a GPX file truncated or not well-formed after some points):
  /// where and why. ``fixes`` then holds the points before the fault and nothing after it;
  /// callers report the file as damaged (exit 65) and still use those points.
  public var truncation: TrackIssue?

  public init(
    fixes: [LocationFix], warnings: [TrackIssue], skippedRows: [TrackIssue],
    format: TrackFileFormat, truncation: TrackIssue? = nil
  ) {
    self.fixes = fixes
    self.warnings = warnings
    self.skippedRows = skippedRows
    self.format = format
    self.truncation = truncation
  }
}

/// Why a track file could not be read at all.
///
/// A reader returns every readable fix of a file or throws one of these. A GPX file that breaks
/// off after some points is returned with the points before the fault and
/// ``TrackReadResult/truncation`` set, not thrown.
public enum TrackReadError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The file could not be opened or read (missing, a directory, no permission).
  case unreadable(file: String, reason: String)
  /// The contents match no supported layout (neither XML nor delimited text).
  case unrecognizedFormat(file: String, reason: String)
  /// The file is of a known kind but broken before any point could be read: not well-formed
  /// XML, truncated, an XML root other than `<gpx>`, or empty. `pointsRead` counts the points
  /// read before the error (0, but for a root other than `<gpx>`).
  case malformed(file: String, line: Int?, reason: String, pointsRead: Int)
  /// A delimited-text header names no latitude or no longitude column.
  /// `header` holds the header fields as written (trimmed).
  case missingColumns(file: String, line: Int, expected: String, header: [String])

  /// The file name the error is about.
  public var file: String {
    switch self {
    case .unreadable(let file, _), .unrecognizedFormat(let file, _),
      .malformed(let file, _, _, _), .missingColumns(let file, _, _, _):
      return file
    }
  }

  public var description: String {
    switch self {
    case .unreadable(let file, let reason):
      return "\(file): cannot read the file: \(reason)"
    case .unrecognizedFormat(let file, let reason):
      return "\(file): not a track file this reader knows: \(reason)"
    case .malformed(let file, let line, let reason, let pointsRead):
      let place = line.map { "\(file):\($0)" } ?? file
      let points = pointsRead == 1 ? "1 point" : "\(pointsRead) points"
      return "\(place): \(reason) (\(points) read before the error; none returned)"
    case .missingColumns(let file, let line, let expected, let header):
      let names = header.map { "\"\($0)\"" }.joined(separator: ", ")
      return "\(file):\(line): the header names no \(expected) column; found [\(names)]"
    }
  }
}
