/// A definition file that cannot be read at all. Individual bad definitions are not errors:
/// they are reported as ``GeofenceRejection``s and the valid ones load.
public struct GeofenceFileError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: Hashable, Sendable {
    /// The file could not be read (missing, a directory, no permission); the system's message.
    case unreadable(String)
    /// The file is not valid JSON; the parser's message.
    case malformedJSON(String)
    /// Valid JSON of the wrong shape: neither an array of definitions nor a GeoJSON
    /// `FeatureCollection` (or `Feature`) with a `features` array.
    case unexpectedJSONStructure(String)
    /// The file has no records at all.
    case empty
    /// The first CSV record is not a header naming the required columns; the names found.
    case missingCSVHeader(found: [String])
    /// The CSV header names one field in two columns (`lat,latitude`, `radius,radius`):
    /// which one is meant cannot be told, as a JSON definition that gives a member twice is
    /// refused. The field's name, the columns (1-based) and their header text.
    case ambiguousCSVHeader(field: String, columns: [Int], headers: [String])
    /// The JSON text ends inside the list of definitions (a file cut short); the parser's
    /// message. The definitions complete before the end are read all the same (see
    /// ``GeofenceLoadResult/truncations``).
    case truncated(String)
  }

  /// The file's path as given to the reader.
  public var file: String
  public var reason: Reason

  public init(file: String, reason: Reason) {
    self.file = file
    self.reason = reason
  }

  public var description: String {
    switch reason {
    case .unreadable(let why): return "\(file): cannot read the file: \(why)"
    case .malformedJSON(let why): return "\(file): not valid JSON: \(why)"
    case .unexpectedJSONStructure(let why): return "\(file): \(why)"
    case .empty: return "\(file): the file is empty"
    case .truncated(let why):
      return "\(file): the file ends early (truncated): \(why)"
    case .ambiguousCSVHeader(let field, let columns, let headers):
      let named = zip(columns, headers).map { "\($0) (\"\($1)\")" }.joined(separator: ", ")
      return
        "\(file): the CSV header names the \(field) more than once, in columns \(named); "
        + "which one is meant cannot be told"
    case .missingCSVHeader(let found):
      let shown = found.prefix(12).map { "\"\($0)\"" }.joined(separator: ", ")
      return
        "\(file): no CSV header: the first line must name the columns id, latitude and "
        + "longitude (any order, any case; name and radius optional), or id and geometry for "
        + "polygons, found \(shown)"
    }
  }
}
