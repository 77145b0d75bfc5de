import DelimitedText
import Foundation
import GeofenceGeometry

/// The definition file formats.
public enum GeofenceFileFormat: String, Hashable, Sendable, CaseIterable {
  /// A JSON array of objects `{"id", "latitude", "longitude", "radius", "name"?, "metadata"?}`.
  case json
  /// A GeoJSON `FeatureCollection` of `Point` features with a `radius` property in metres.
  case geojson
  /// CSV with a header naming `id`, `latitude`, `longitude` and optionally `name`, `radius`.
  case csv

  /// Chooses the format of a file from its extension and its first non-blank byte.
  ///
  /// - `.csv` is CSV.
  /// - `.json`, `.geojson` and any other extension: the first byte that is not whitespace (after
  ///   a UTF-8 byte-order mark) decides: `[` is ``json``, `{` is ``geojson``. A `.json` file
  ///   holding a GeoJSON object is therefore read as GeoJSON, and a `.geojson` file holding an
  ///   array as a definition list. Anything else is CSV, unless the extension is `.json` or
  ///   `.geojson`, which then stays JSON so that the parser reports what is wrong.
  /// - Parameters:
  ///   - pathExtension: the file's extension without the dot, any case.
  ///   - data: the file's bytes (only the first non-blank byte is examined).
  /// - Complexity: O(k), k the number of leading blank bytes.
  public static func detect(pathExtension: String, data: Data) -> GeofenceFileFormat {
    let ext = pathExtension.lowercased()
    if ext == "csv" { return .csv }
    let fallback: GeofenceFileFormat = ext == "geojson" ? .geojson : ext == "json" ? .json : .csv
    let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    let body = data.starts(with: bom) ? data.dropFirst(bom.count) : data[...]
    let blanks: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]
    switch body.first(where: { !blanks.contains($0) }) {
    case UInt8(ascii: "[")?: return .json
    case UInt8(ascii: "{")?: return .geojson
    default: return fallback
    }
  }
}

/// Reads geofence definition files (JSON, GeoJSON, CSV) into validated geofences.
///
/// Every definition is validated with ``GeofenceValidator``. A bad definition is rejected on its
/// own, with its location (file and CSV line, or JSON array index and line), its id when known
/// and the reason; the valid ones load. In JSON and GeoJSON each element is read on its own
/// (``JSONDocument``): a value that is not valid JSON (`1e400`, `NaN`, nesting deeper than 512)
/// rejects its definition only, naming the field. Within a file ids are unique: the first *loaded* definition of
/// an id wins and later ones are rejected with a reason naming its location (a definition that
/// was itself rejected claims no id). Only a file whose structure cannot be parsed at all (an
/// unclosed string or bracket, a missing comma between elements) throws, except text that ends
/// inside the list of definitions (a file cut short): the complete definitions before the end
/// load, and the file is named in ``GeofenceLoadResult/truncations``.
public enum GeofenceFileReader {
  /// Reads one definition file.
  ///
  /// The format is chosen by ``GeofenceFileFormat/detect(pathExtension:data:)``.
  /// - Parameters:
  ///   - url: a file URL. Locations in the result name it by `url.relativePath` (the path as
  ///     given).
  ///   - defaultRadiusMeters: radius in metres for definitions without one (for example the
  ///     command line's `--radius`); `nil` rejects such definitions.
  /// - Returns: the geofences and the rejected definitions.
  /// - Throws: ``GeofenceFileError`` when the file cannot be read or parsed at all.
  /// - Complexity: O(n) in the file's size.
  public static func read(contentsOf url: URL, defaultRadiusMeters: Double?)
    throws(GeofenceFileError) -> GeofenceLoadResult
  {
    let file = url.relativePath
    let data: Data
    do {
      data = try TextFile.read(atPath: url.path)
    } catch {
      throw GeofenceFileError(file: file, reason: .unreadable(error.reason))
    }
    let format = GeofenceFileFormat.detect(pathExtension: url.pathExtension, data: data)
    return try read(
      data: consume data, format: format, fileName: file,
      defaultRadiusMeters: defaultRadiusMeters)
  }

  /// Reads several definition files and merges them with
  /// ``GeofenceLoadResult/merging(_:)``: an id defined in an earlier file wins over the same id
  /// in a later one, which is rejected.
  /// - Parameters:
  ///   - urls: file URLs, in priority order.
  ///   - defaultRadiusMeters: see ``read(contentsOf:defaultRadiusMeters:)``.
  /// - Throws: ``GeofenceFileError`` for the first file that cannot be read or parsed.
  /// - Complexity: O(n) in the files' total size.
  public static func read(contentsOf urls: [URL], defaultRadiusMeters: Double?)
    throws(GeofenceFileError) -> GeofenceLoadResult
  {
    var results: [GeofenceLoadResult] = []
    for url in urls {
      results.append(try read(contentsOf: url, defaultRadiusMeters: defaultRadiusMeters))
    }
    return GeofenceLoadResult.merging(results)
  }

  /// Reads definitions held in memory.
  ///
  /// For ``GeofenceFileFormat/json`` and ``GeofenceFileFormat/geojson`` the top-level JSON
  /// value decides how it is read: an array is a definition list, an object a GeoJSON
  /// `FeatureCollection` (or `Feature`).
  /// - Parameters:
  ///   - data: the file's bytes.
  ///   - format: the format, for example from ``GeofenceFileFormat/detect(pathExtension:data:)``.
  ///   - fileName: the name locations and errors use.
  ///   - defaultRadiusMeters: see ``read(contentsOf:defaultRadiusMeters:)``.
  /// - Throws: ``GeofenceFileError`` when the data cannot be parsed at all.
  /// - Complexity: O(n) in the data's size.
  public static func read(
    data: consuming Data, format: GeofenceFileFormat, fileName: String,
    defaultRadiusMeters: Double?
  ) throws(GeofenceFileError) -> GeofenceLoadResult {
    var accumulator = GeofenceLoadAccumulator(
      file: fileName, defaultRadiusMeters: defaultRadiusMeters)
    switch format {
    case .csv:
      try readCSV(data, into: &accumulator, holdingPart: true)
      // The bytes are released (when the caller holds no other copy) before the part read on
      // another thread is joined, so that the join's new pages do not add to the file's.
      _ = consume data
      accumulator.joinHeldPart()
    case .json, .geojson:
      // The file's bytes as the documents hold them; `data` is released (when the caller
      // holds no other copy) once copied.
      let bytes = [UInt8](consume data)
      if readsJSONInOnePass,
        let read = readInOnePass(bytes, file: fileName, defaultRadiusMeters: defaultRadiusMeters)
      {
        return read.result
      }
      let document: JSONDocument
      switch try parseJSON(bytes, file: fileName) {
      case .whole(let whole): document = whole
      case .truncated(let salvage, let fault):
        readElements(
          salvage.records, of: salvage.areFeatures ? .features : .definitions,
          in: salvage.document, into: &accumulator)
        accumulator.result.truncations.append(
          GeofenceFileError(file: fileName, reason: .truncated(fault.description)))
        return accumulator.result
      }
      switch document.kind(of: document.root) {
      case .array:
        let elements: [JSONSpan]
        do { elements = try document.elements(of: document.root) } catch {
          throw GeofenceFileError(file: fileName, reason: .malformedJSON(error.description))
        }
        readElements(elements, of: .definitions, in: document, into: &accumulator)
      case .object:
        try readFeatureCollection(
          document.root, in: document, file: fileName, into: &accumulator)
      case .string, .scalar:
        let found = (try? document.value(of: document.root))?.typeName ?? "value that is not JSON"
        throw GeofenceFileError(
          file: fileName,
          reason: .unexpectedJSONStructure(
            "expected an array of definitions or a GeoJSON FeatureCollection, found a "
              + found))
      }
    }
    return accumulator.result
  }

  /// A JSON definition file opened: whole, or cut short with its complete records found.
  enum OpenedJSON {
    case whole(JSONDocument)
    /// The text ends inside the list of definitions; the parser's error for the whole text.
    case truncated(TruncatedRecords, JSONReadError)
  }

  /// Opens the document, checking its structure only (``JSONDocument/init(bytes:)``): values
  /// are read element by element, so that one bad value costs only its definition. Text that
  /// ends inside the list of definitions gives the complete ones before the end
  /// (``JSONDocument/recordsBeforeEnd(of:)``).
  static func parseJSON(_ data: some Collection<UInt8>, file: String) throws(GeofenceFileError)
    -> OpenedJSON
  {
    if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
      throw GeofenceFileError(file: file, reason: .empty)
    }
    do {
      return .whole(try JSONDocument(bytes: data))
    } catch {
      if let salvage = JSONDocument.recordsBeforeEnd(of: data) {
        return .truncated(salvage, error)
      }
      throw GeofenceFileError(file: file, reason: .malformedJSON(error.description))
    }
  }
}
