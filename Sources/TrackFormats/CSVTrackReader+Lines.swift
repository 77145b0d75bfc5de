import DelimitedText
import Foundation
import GeofenceGeometry

/// Reads a CSV track one line at a time, with the header aliases, number and time rules of
/// ``CSVTrackReader`` (for fixes that arrive live, as `geofence stream` reads them).
///
/// Each line must hold one whole record (a quoted field may not span lines).
public struct CSVLineReader: Sendable {
  private var rows: RowReader
  private let delimiter: UInt8
  /// Data rows read so far (the next fix's ``GeofenceGeometry/LocationFix/sourceIndex``).
  public private(set) var rowCount = 0
  /// Warnings about the last line read, whose fix is still taken: an accuracy that is not a
  /// finite number (the fix is invalid), an unreadable UTC offset, and, once per reader, the
  /// first time without a zone (read as UTC; later ones are not reported).
  public private(set) var warnings: [TrackIssue] = []
  private var reportedNoZone = false

  /// - Parameters:
  ///   - header: the header line, without its line end.
  ///   - fileName: the name used in issues.
  ///   - line: the header's line number.
  /// - Throws: ``TrackReadError/missingColumns(file:line:found:)`` (or another case) when the
  ///   header names no latitude or longitude column.
  public init(header: String, fileName: String, line: Int) throws(TrackReadError) {
    delimiter = DelimitedText.detectDelimiter(in: Substring(header))
    let (records, _) = DelimitedText.records(in: header, delimiter: delimiter)
    let fields = (records.first?.fields ?? []).map { String(DelimitedText.trimmingBlanks($0)) }
    let columns = try CSVColumns(header: fields, file: fileName, line: line)
    rows = RowReader(
      fileName: fileName, columns: columns, decimalComma: delimiter == UInt8(ascii: ";"))
  }

  /// Whether the header names a time column.
  public var hasTime: Bool { rows.columns.hasTime }

  /// Reads one data line.
  ///
  /// The rules of a JSON Lines fix (``FixLineParser``) hold, so that both forms of one input
  /// give the same events: when the header names a device column, a row whose device cell is
  /// empty is refused (which device it belongs to cannot be told); an accuracy that is not a
  /// number refuses the row (a file reader keeps such a fix as invalid instead, with a
  /// warning); and a line with an odd number of `"` is refused, being part of a quoted field
  /// that spans lines (the line before it was refused as never closed).
  /// - Returns: the fix, or the issue that skips the line (with its line number and reason);
  ///   `nil` for a `#` comment or blank line. ``warnings`` holds the line's warnings.
  public mutating func read(_ text: String, line: Int) -> Result<LocationFix, TrackIssue>? {
    warnings.removeAll(keepingCapacity: true)
    let trimmed = text.drop { $0 == " " || $0 == "\t" }
    if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
    if text.utf8.reduce(0, { $0 + ($1 == UInt8(ascii: "\"") ? 1 : 0) }) % 2 == 1 {
      rowCount += 1
      return .failure(
        TrackIssue(
          file: rows.fileName, line: line,
          message: "an odd number of '\"': a quoted field may not span lines; row skipped"))
    }
    rows.fixes.removeAll(keepingCapacity: true)
    rows.skipped.removeAll(keepingCapacity: true)
    rows.warnings.removeAll(keepingCapacity: true)
    rows.unreadableAccuracy = nil
    var text = text
    var sawRecord = false
    var records = 0
    let issues = text.withUTF8 { bytes in
      DelimitedText.forEachRecord(utf8: bytes, delimiter: delimiter) { fields, _ in
        records += 1
        guard !sawRecord else { return }
        sawRecord = true
        rows.read(fields, line: line, index: rowCount)
      }
    }
    // A carriage return outside quotes ends a record: the line held two, and reading the
    // first alone would cut a value short without a word (`1\r0` read as 1).
    if records > 1 {
      rowCount += 1
      return .failure(
        TrackIssue(
          file: rows.fileName, line: line,
          message: "a carriage return inside the line, outside quotes; row skipped"))
    }
    if let issue = issues.first {
      return .failure(TrackIssue(file: rows.fileName, line: line, message: issue.message))
    }
    guard sawRecord else { return nil }
    rowCount += 1
    if let fix = rows.fixes.first {
      if fix.time == nil, rows.columns.hasTime {
        return .failure(
          TrackIssue(file: rows.fileName, line: line, message: "no valid time; row skipped"))
      }
      if fix.deviceID == nil, rows.columns.device != nil {
        return .failure(
          TrackIssue(file: rows.fileName, line: line, message: "empty device id; row skipped"))
      }
      if let accuracy = rows.unreadableAccuracy {
        return .failure(
          TrackIssue(
            file: rows.fileName, line: line,
            message: "accuracy \"\(accuracy)\" is not a finite number; row skipped"))
      }
      warnings.append(contentsOf: rows.warnings)
      if !reportedNoZone, rows.noZone.count > 0 {
        reportedNoZone = true
        warnings.append(
          TrackIssue(
            file: rows.fileName, line: line,
            message: "a time without a zone is read as UTC (later ones are not reported)"))
      }
      return .success(fix)
    }
    return .failure(
      rows.skipped.first
        ?? TrackIssue(file: rows.fileName, line: line, message: "no fix in the row"))
  }
}
extension TrackIssue: Error {}
