import DelimitedText
import Foundation
import JSONText
import NumberText

extension GeofenceFileReader {
  /// Header names (lower-cased, trimmed) accepted for each column.
  static let csvColumnNames: [(field: DefinitionField, names: Set<String>)] = [
    (.id, ["id"]),
    (.name, ["name"]),
    (.latitude, ["latitude", "lat"]),
    (.longitude, ["longitude", "lon", "lng", "long"]),
    (.radius, ["radius", "radius_m", "radius_meters", "radius_metres"]),
    (.metadata, ["metadata"]),
    (.geometry, ["geometry"]),
  ]

  /// Reads CSV (or semicolon- or tab-separated text, detected from the header).
  ///
  /// - The first record is the header. Names are matched case-insensitively after trimming;
  ///   columns may come in any order. `id`, `latitude` (`lat`) and `longitude` (`lon`, `lng`,
  ///   `long`) are required; `name` and `radius` (`radius_m`, `radius_meters`) are optional.
  ///   A header that names one of these fields (or `metadata`, `geometry`) twice, `lat,latitude`
  ///   say, is refused whole (``GeofenceFileError/Reason/ambiguousCSVHeader(field:columns:headers:)``):
  ///   which column is meant cannot be told.
  /// - Every other column with a non-empty header is kept in the metadata object, keyed by its
  ///   header as written, its value the cell text; empty cells are left out.
  /// - A `metadata` column holds a JSON object (RFC 8259) whose members join the metadata
  ///   object, and a `geometry` column a GeoJSON `Polygon` or `MultiPolygon` geometry that
  ///   takes the place of latitude, longitude and radius (left empty): the columns
  ///   `geofence regions --format csv` writes, so its output reads back as the same set. A cell
  ///   that is not such JSON, or a member also given by a column of its own, rejects its row.
  /// - Cells are trimmed; an empty cell is an absent value (so an empty radius takes the
  ///   default). Numbers follow ``NumberText/NumberText`` (RFC 8259: no hex such as
  ///   `0x1p12`, no `inf` or `nan`, nothing beyond ±1.8e308); with `;` or tab as the
  ///   delimiter, a decimal comma (`46,5`) is accepted.
  /// - A row with more non-empty fields than the header is rejected; a shorter row has its
  ///   last cells absent.
  /// - A large file whose data rows hold no `"` is read on two threads
  ///   (``readCSVParts(_:_:reader:delimiter:into:)``), with the same result.
  /// - Parameter rows: how data rows are read: ``CSVRowPath/direct`` (the default) tries
  ///   each row from its bytes first; ``CSVRowPath/general`` takes every row through a
  ///   ``RawGeofenceDefinition`` (the tests' oracle for the direct path).
  /// - Parameter holdingPart: when the file is read on two threads, leave the later part and
  ///   the issues in ``GeofenceLoadAccumulator/heldPart`` for the caller to join
  ///   (``GeofenceLoadAccumulator/joinHeldPart()``) once it has released `data`; false joins
  ///   them here.
  static func readCSV(
    _ data: Data, into accumulator: inout GeofenceLoadAccumulator, rows: CSVRowPath = .direct,
    holdingPart: Bool = false
  ) throws(GeofenceFileError) {
    let file = accumulator.file
    // The file as UTF-8 bytes: rows are split and parsed from them, and a `String` is made only
    // for the cells that stay one (id, name, metadata values).
    var reader: CSVRowReader?
    var headerError: GeofenceFileError?
    let issues = DelimitedText.withDecodedUTF8(data) { bytes -> [DelimitedTextIssue] in
      let firstLineEnd = bytes.firstIndex { $0 == 0x0A || $0 == 0x0D } ?? bytes.count
      let firstLine = String(
        decoding: UnsafeBufferPointer(rebasing: bytes[..<firstLineEnd]), as: UTF8.self)
      let delimiter = DelimitedText.detectDelimiter(in: firstLine[...])
      let decimalComma = delimiter != UInt8(ascii: ",")
      if let parts = CSVParts(bytes, headerEnd: firstLineEnd) {
        // The header is the first line (it holds no quote), its record read alone.
        DelimitedText.forEachRecord(
          utf8: UnsafeBufferPointer(rebasing: bytes[..<firstLineEnd]), delimiter: delimiter
        ) { fields, _ in
          do throws(GeofenceFileError) {
            reader = try CSVRowReader(
              header: fields, file: file, decimalComma: decimalComma, path: rows)
          } catch {
            headerError = error
          }
        }
        guard let reader else { return [] }
        return readCSVParts(bytes, parts, reader: reader, delimiter: delimiter, into: &accumulator)
      }
      var haveHeader = false
      return DelimitedText.forEachRecord(utf8: bytes, delimiter: delimiter) { fields, line in
        if haveHeader {
          // In place: the reader's layout is not copied (nor its arrays retained) per row.
          reader?.read(fields, line: line, into: &accumulator)
          return
        }
        if headerError != nil { return }
        do throws(GeofenceFileError) {
          reader = try CSVRowReader(
            header: fields, file: file, decimalComma: decimalComma, path: rows)
          haveHeader = true
        } catch {
          headerError = error
          return
        }
        accumulator.reserveCapacity(
          Self.rowCapacity(lineFeeds: Self.lineCount(bytes), bytes: bytes.count))
        // Names and metadata are about as long as the cells they come from.
        if let layout = reader?.layout, layout.hasDetails {
          accumulator.result.columns.detailText.reserveCapacity(bytes.count)
        }
      }
    }.result
    if let headerError { throw headerError }
    if reader == nil { throw GeofenceFileError(file: file, reason: .empty) }
    guard accumulator.heldPart != nil else {
      accumulator.rejectIssues(issues)
      return
    }
    accumulator.heldPart?.issues = issues
    if !holdingPart { accumulator.joinHeldPart() }
  }

  /// How ``readCSV(_:into:rows:)`` reads data rows.
  enum CSVRowPath {
    /// From the row's bytes straight into the columns when every cell it needs is in the
    /// common form (``CSVRowReader/readDirectly(_:line:into:)``); else as ``general``.
    case direct
    /// Through a ``RawGeofenceDefinition`` and ``GeofenceValidator``, every row.
    case general
  }

  /// Rows to reserve room for in a CSV text of `bytes` bytes holding `lineFeeds` LF bytes: the
  /// line feeds (one more than the records, at most), but no more than the rows such a text
  /// can hold valid (each takes an id, a latitude and a longitude of a byte each, two
  /// delimiters and a line end: 6 bytes). So a file of blank lines does not reserve columns
  /// and an id table for rows it cannot have (20 MB of line feeds reserved 256 MB of table).
  static func rowCapacity(lineFeeds: Int, bytes: Int) -> Int {
    min(lineFeeds, bytes / 6 + 1)
  }

  /// Line ends (LF) in `bytes`: an upper bound on its records, to reserve room once. O(n),
  /// 8 bytes a step; no allocation.
  static func lineCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    let raw = UnsafeRawBufferPointer(bytes)
    let words = raw.count / 8
    let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    let lf: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
    var n = 0
    for w in 0..<words {
      let x = raw.loadUnaligned(fromByteOffset: w &* 8, as: UInt64.self) ^ lf
      // The high bit of each byte of `t` is set exactly when that byte of `x` is not zero.
      let t = ((x & lows) &+ lows) | x
      n &+= (~t & ~lows).nonzeroBitCount
    }
    for b in raw[(words * 8)...] where b == 0x0A { n &+= 1 }
    return n
  }
  /// The columns a CSV header names.
  struct CSVLayout {
    var names: [String]
    var idColumn: Int
    /// Absent only in a file of polygons (with a `geometry` column).
    var latitudeColumn: Int?
    var longitudeColumn: Int?
    var nameColumn: Int?
    var radiusColumn: Int?
    /// The `metadata` column (a JSON object per cell), if any.
    var metadataColumn: Int?
    /// The `geometry` column (a GeoJSON geometry per cell), if any.
    var geometryColumn: Int?
    /// Metadata keys in canonical order (UTF-8 bytes), the first column of a repeated name
    /// winning, each pre-rendered as `"key":`: the column, and the range of its prefix in
    /// ``metadataKeyText``.
    var metadataKeys: [(index: Int, prefix: Range<Int>)]
    /// The UTF-8 bytes of every `"key":` of ``metadataKeys``, one after the other.
    var metadataKeyText: [UInt8]

    /// True when rows may have a name or metadata columns' text.
    var hasDetails: Bool { nameColumn != nil || !metadataKeys.isEmpty }

    /// - Throws: ``GeofenceFileError/Reason/missingCSVHeader(found:)`` when `id` has no
    ///   column, or `latitude` or `longitude` has none and neither has `geometry`;
    ///   ``GeofenceFileError/Reason/ambiguousCSVHeader(field:columns:headers:)`` when one field has
    ///   two columns (`lat,latitude`).
    init(header: [String], file: String) throws(GeofenceFileError) {
      names = header.map { $0.trimmingWhitespace() }
      var columnOf: [DefinitionField: Int] = [:]
      var metadataColumns: [(index: Int, key: String)] = []
      for (index, name) in names.enumerated() {
        let lower = name.lowercased()
        if let match = GeofenceFileReader.csvColumnNames.first(where: {
          $0.names.contains(lower)
        }) {
          if let earlier = columnOf[match.field] {
            // Two columns for one field: which one is meant cannot be told.
            throw GeofenceFileError(
              file: file,
              reason: .ambiguousCSVHeader(
                field: match.field.rawValue, columns: [earlier + 1, index + 1],
                headers: [names[earlier], name]))
          }
          columnOf[match.field] = index
          continue
        }
        if !name.isEmpty { metadataColumns.append((index, name)) }
      }
      // Circles need both coordinate columns; a file of polygons only its geometry column.
      guard let idColumn = columnOf[.id],
        (columnOf[.latitude] != nil && columnOf[.longitude] != nil)
          || columnOf[.geometry] != nil
      else {
        throw GeofenceFileError(file: file, reason: .missingCSVHeader(found: names))
      }
      self.idColumn = idColumn
      latitudeColumn = columnOf[.latitude]
      longitudeColumn = columnOf[.longitude]
      var seenKeys: Set<String> = []
      metadataKeys = []
      metadataKeyText = []
      for column
        in metadataColumns
        .filter({ seenKeys.insert($0.key).inserted })
        .sorted(by: { JSONValue.utf8Precedes($0.key, $1.key) })
      {
        var prefix = ""
        JSONValue.writeString(column.key, to: &prefix)
        prefix += ":"
        let start = metadataKeyText.count
        metadataKeyText += prefix.utf8
        metadataKeys.append((column.index, start..<metadataKeyText.count))
      }
      nameColumn = columnOf[.name]
      radiusColumn = columnOf[.radius]
      metadataColumn = columnOf[.metadata]
      geometryColumn = columnOf[.geometry]
    }
  }

  /// Reads the data rows of one file once its header is known: the layout, the number
  /// convention, and buffers reused from row to row.
  struct CSVRowReader {
    let layout: CSVLayout
    let decimalComma: Bool
    let path: CSVRowPath
    var metadata: [UInt8] = []
    /// Where the direct path writes a row's name and metadata before they are copied into the
    /// columns (``appendPlainDetails(_:to:)``); grown as needed.
    var detailBuffer: [UInt8] = []

    init(layout: CSVLayout, decimalComma: Bool, path: CSVRowPath) {
      self.layout = layout
      self.decimalComma = decimalComma
      self.path = path
    }

    /// The reader of the rows under the header record `header`.
    /// - Throws: as ``CSVLayout/init(header:file:)``.
    init(header: DelimitedFields, file: String, decimalComma: Bool, path: CSVRowPath)
      throws(GeofenceFileError)
    {
      let layout = try CSVLayout(header: (0..<header.count).map { header.string($0) }, file: file)
      self.init(layout: layout, decimalComma: decimalComma, path: path)
    }

    /// Validates one data row and records its geofence or its rejection.
    mutating func read(
      _ fields: DelimitedFields, line: Int, into accumulator: inout GeofenceLoadAccumulator
    ) {
      if path == .direct, readDirectly(fields, line: line, into: &accumulator) { return }
      readGeneral(fields, line: line, into: &accumulator)
    }

    /// The general path: the row as a ``RawGeofenceDefinition``, validated by
    /// ``GeofenceValidator``. Every row may take it; it alone names what is wrong with a row.
    mutating func readGeneral(
      _ fields: DelimitedFields, line: Int, into accumulator: inout GeofenceLoadAccumulator
    ) {
      let names = layout.names
      if fields.count > names.count,
        (names.count..<fields.count).contains(where: {
          !fields.string($0).allSatisfy(\.isWhitespace)
        })
      {
        accumulator.reject(
          at: .line(line),
          id: cellText(fields, layout.idColumn),
          reason: .malformedRecord(
            "row has \(fields.count) fields, the header has \(names.count)"))
        return
      }
      var json: (metadata: [String: JSONValue]?, geometry: JSONValue?) = (nil, nil)
      if layout.metadataColumn != nil || layout.geometryColumn != nil {
        switch jsonCells(fields) {
        case .success(let cells): json = cells
        case .failure(let problem):
          accumulator.reject(
            at: .line(line), id: cellText(fields, layout.idColumn), reason: problem)
          return
        }
      }
      var definition = RawGeofenceDefinition(
        id: cellText(fields, layout.idColumn).map(JSONValue.string),
        latitude: layout.latitudeColumn.flatMap {
          numberCell(fields, $0, decimalComma: decimalComma)
        },
        longitude: layout.longitudeColumn.flatMap {
          numberCell(fields, $0, decimalComma: decimalComma)
        },
        radius: layout.radiusColumn.flatMap {
          numberCell(fields, $0, decimalComma: decimalComma)
        },
        name: layout.nameColumn.flatMap { cellText(fields, $0) }.map(JSONValue.string),
        geometry: json.geometry, isFromText: true)
      if let members = json.metadata {
        definition.metadata = .object(members)
      } else {
        definition.renderedMetadataJSON = renderMetadata(fields)
      }
      accumulator.add(definition, at: .line(line))
    }

    /// The row's `metadata` cell as an object joined by the other metadata columns (`nil`
    /// when the cell is blank or there is no such column), and its `geometry` cell as JSON.
    /// - Returns: the problem that rejects the row: a cell that is not JSON, a `metadata`
    ///   cell that is not an object, a member also given by its own column.
    func jsonCells(_ fields: DelimitedFields) -> Result<
      (metadata: [String: JSONValue]?, geometry: JSONValue?), DefinitionProblem
    > {
      func parsed(_ column: Int?, _ field: DefinitionField) -> Result<JSONValue?, DefinitionProblem>
      {
        guard let column, let text = cellText(fields, column) else { return .success(nil) }
        do {
          return .success(try JSONDocument.parse(Array(text.utf8)))
        } catch {
          return .failure(.invalidJSON(field, error))
        }
      }
      let metadata: JSONValue?
      let geometry: JSONValue?
      switch (parsed(layout.metadataColumn, .metadata), parsed(layout.geometryColumn, .geometry)) {
      case (.failure(let problem), _), (_, .failure(let problem)): return .failure(problem)
      case (.success(let m), .success(let g)): (metadata, geometry) = (m, g)
      }
      guard let metadata else { return .success((nil, geometry)) }
      guard case .object(var members) = metadata else {
        return .failure(.wrongType(.metadata, expected: "a JSON object", found: metadata.typeName))
      }
      for (index, _) in layout.metadataKeys {
        guard let text = cellText(fields, index) else { continue }
        let key = layout.names[index]
        guard members[key] == nil else {
          return .failure(
            .malformedRecord(
              "metadata member \"\(key)\" is given by the metadata column and by its own column"))
        }
        members[key] = .string(text)
      }
      return .success((members, geometry))
    }

    /// The metadata object of the row's metadata columns in canonical text (keys in
    /// ``CSVLayout/metadataKeys`` order), or nil when every such cell is blank or absent.
    mutating func renderMetadata(_ fields: DelimitedFields) -> String? {
      metadata.removeAll(keepingCapacity: true)
      if appendMetadata(fields, to: &metadata) == 0 { return nil }
      return String(decoding: metadata, as: UTF8.self)
    }

    /// Appends the UTF-8 text of ``renderMetadata(_:)`` to `out`: each cell trimmed (a plain
    /// cell, see ``GeofenceFileReader/isPlainCell(_:)``, is taken as it is, escaped straight
    /// from its bytes) and left out when blank.
    /// - Returns: the number of bytes appended, 0 (nothing appended) when every metadata cell
    ///   is blank or absent.
    /// - Complexity: O(n) in the metadata cells' length; allocates only a `String` for a cell
    ///   that is not plain, and when `out` grows.
    func appendMetadata(_ fields: DelimitedFields, to out: inout [UInt8]) -> Int {
      let start = out.count
      let count = fields.count
      layout.metadataKeyText.withUnsafeBufferPointer { keyText in
        layout.metadataKeys.withUnsafeBufferPointer { keys in
          for (index, prefix) in keys where index < count {
            let cell = fields[index]
            // A plain cell is escaped from its bytes; another is trimmed first, and left out
            // when blank.
            let trimmed: String?
            if isPlainCell(cell) {
              trimmed = nil
            } else if let text = cellText(fields, index) {
              trimmed = text
            } else {
              continue
            }
            out.append(out.count == start ? UInt8(ascii: "{") : UInt8(ascii: ","))
            out.append(contentsOf: UnsafeBufferPointer(rebasing: keyText[prefix]))
            if let trimmed {
              JSONText.appendQuoted(trimmed, to: &out)
            } else {
              JSONText.appendQuoted(utf8: cell, to: &out)
            }
          }
        }
      }
      if out.count == start { return 0 }
      out.append(UInt8(ascii: "}"))
      return out.count - start
    }
  }

  /// True when `cell` starts and ends with a printable ASCII character, so that trimming
  /// leaves it as it is (most cells).
  @inline(__always)
  static func isPlainCell(_ cell: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let first = cell.first, let last = cell.last else { return false }
    return isPrintableASCII(first) && isPrintableASCII(last)
  }

  /// The trimmed cell, or `nil` when the row is too short or the cell is blank.
  static func cellText(_ fields: DelimitedFields, _ index: Int) -> String? {
    guard index < fields.count else { return nil }
    let cell = fields[index]
    if isPlainCell(cell) { return String(decoding: cell, as: UTF8.self) }
    let trimmed = String(decoding: cell, as: UTF8.self).trimmingWhitespace()
    return trimmed.isEmpty ? nil : trimmed
  }

  /// The cell as `.number` when it parses, as `.string` (reported as not a number) when it does
  /// not, or `nil` when blank.
  static func numberCell(_ fields: DelimitedFields, _ index: Int, decimalComma: Bool)
    -> JSONValue?
  {
    guard index < fields.count else { return nil }
    let cell = fields[index]
    if isPlainCell(cell) {
      if case .success(let value) = NumberText.parse(cell, decimalComma: decimalComma) {
        return .number(value)
      }
      return .string(String(decoding: cell, as: UTF8.self))
    }
    guard let text = cellText(fields, index) else { return nil }
    if let value = NumberText.double(text, decimalComma: decimalComma) { return .number(value) }
    return .string(text)
  }
}
