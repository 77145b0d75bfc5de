import DelimitedText
import Foundation

/// Reads a track file of any supported layout (GPX, delimited text, PLT).
public enum TrackReader {
  /// Times outside this range are treated as invalid and leave a fix's time `nil`:
  /// from the GPS epoch, 1980-01-06T00:00:00Z (315_964_800 s; no GNSS fix is older), to
  /// 2100-01-01T00:00:00Z (4_102_444_800 s). It rejects the 32-bit `time_t` minimum
  /// (1901-12-13T20:45:52Z) and epoch-0 placeholders that some loggers write.
  public static let plausibleTimes: ClosedRange<Double> = 315_964_800...4_102_444_800

  /// Reads the file at `url`, choosing the reader by content and extension.
  ///
  /// - GPX when the content starts with `<` (after a byte-order mark and white space; UTF-16
  ///   text judged by its characters), or the extension is `gpx` (any case; the GPX reader
  ///   then reports why it is not XML).
  /// - Delimited text (CSV reader, which also recognises PLT headers) when the extension is
  ///   `csv`, `txt`, `tsv` or `plt` (any case), or when the first line holds a comma,
  ///   semicolon or tab.
  ///
  /// - Parameter url: a file URL.
  /// - Returns: the whole file's fixes, warnings and skipped records.
  /// - Throws: `TrackReadError.unreadable` when the file cannot be read,
  ///   `.unrecognizedFormat` when it matches no layout, or the chosen reader's error.
  /// - Complexity: O(n) in the file size; the file is read into memory once.
  public static func read(contentsOf url: URL) throws(TrackReadError) -> TrackReadResult {
    let name = url.lastPathComponent
    let data: Data
    do {
      data = try TextFile.read(atPath: url.path)
    } catch {
      throw .unreadable(file: name, reason: error.reason)
    }
    return try read(data: data, fileName: name)
  }

  /// Reads a track from bytes already in memory; `fileName`'s extension guides the choice of
  /// reader as for ``read(contentsOf:)``.
  public static func read(data: Data, fileName: String) throws(TrackReadError) -> TrackReadResult {
    switch sniff(data: data, fileName: fileName) {
    case .gpx: return try GPXReader.read(data: data, fileName: fileName)
    case .csv, .plt, .dashCamLog: return try CSVTrackReader.read(data: data, fileName: fileName)
    case nil:
      throw .unrecognizedFormat(
        file: fileName,
        reason: data.isEmpty
          ? "the file is empty"
          : "it is neither XML nor delimited text (expected .gpx, .csv, .txt, .tsv or .plt)")
    }
  }

  /// The reader `read` would use, or `nil` when none fits.
  static func sniff(data: Data, fileName: String) -> TrackFileFormat? {
    let ext = (fileName as NSString).pathExtension.lowercased()
    var bytes = data.prefix(4096)
    // UTF-16 text is judged by its characters: XML (GPX, which libxml2 decodes itself) or
    // delimited text (which the CSV reader transcodes).
    if let text = DelimitedText.utf16Text(Data(bytes)) { bytes = Data(text.utf8) }
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
    let first = bytes.first { !($0 == 32 || $0 == 9 || $0 == 10 || $0 == 13) }
    if first == UInt8(ascii: "<") { return .gpx }
    switch ext {
    case "gpx": return .gpx
    case "csv", "txt", "tsv": return .csv
    case "plt": return .plt
    default: break
    }
    let firstLine = bytes.prefix { $0 != 10 && $0 != 13 }
    if firstLine.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: ";") || $0 == 9 })
    {
      return .csv
    }
    return nil
  }
}
