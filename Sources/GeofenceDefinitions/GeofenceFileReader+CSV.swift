import DelimitedText
import Foundation
import NumberText

extension GeofenceFileReader {
  /// Header names (lower-cased, trimmed) accepted for each column.
  static let csvColumnNames: [(field: DefinitionField, names: Set<String>)] = [
    (.id, ["id"]),
    (.name, ["name"]),
    (.latitude, ["latitude", "lat"]),
    (.longitude, ["longitude", "lon", "lng", "long"]),
    (.radius, ["radius", "radius_m", "radius_meters", "radius_metres"]),
  ]

  /// Reads CSV (or semicolon- or tab-separated text, detected from the header).
  ///
  /// - The first record is the header. Names are matched case-insensitively after trimming;
  ///   columns may come in any order. `id`, `latitude` (`lat`) and `longitude` (`lon`, `lng`,
  ///   `long`) are required; `name` and `radius` (`radius_m`, `radius_meters`) are optional.
  /// - Every other column with a non-empty header is kept in the metadata object, keyed by its
  ///   header as written, its value the cell text; empty cells are left out.
  /// - Cells are trimmed; an empty cell is an absent value (so an empty radius takes the
  ///   default). Numbers follow ``NumberText/NumberText`` (RFC 8259: no hex such as
  ///   `0x1p12`, no `inf` or `nan`, nothing beyond ±1.8e308); with `;` or tab as the
  ///   delimiter, a decimal comma (`46,5`) is accepted.
  /// - A row with more non-empty fields than the header is rejected; a shorter row has its
  ///   last cells absent.
  static func readCSV(_ data: Data, into accumulator: inout GeofenceLoadAccumulator)
    throws(GeofenceFileError)
  {
    let file = accumulator.file
    let text = DelimitedText.decode(data).text
    let firstLine = text.prefix { $0 != "\n" && $0 != "\r" }
    let delimiter = DelimitedText.detectDelimiter(in: firstLine)
    let decimalComma = delimiter != UInt8(ascii: ",")
    let (records, issues) = DelimitedText.records(in: text, delimiter: delimiter)
    guard let header = records.first else {
      throw GeofenceFileError(file: file, reason: .empty)
    }
    let names = header.fields.map { $0.trimmingWhitespace() }
    var columnOf: [DefinitionField: Int] = [:]
    var metadataColumns: [(index: Int, key: String)] = []
    for (index, name) in names.enumerated() {
      let lower = name.lowercased()
      if let match = csvColumnNames.first(where: { $0.names.contains(lower) }) {
        if columnOf[match.field] == nil {
          columnOf[match.field] = index
          continue
        }
      }
      if !name.isEmpty { metadataColumns.append((index, name)) }
    }
    guard let idColumn = columnOf[.id], let latitudeColumn = columnOf[.latitude],
      let longitudeColumn = columnOf[.longitude]
    else {
      throw GeofenceFileError(file: file, reason: .missingCSVHeader(found: names))
    }
    // Metadata keys in canonical order (UTF-8 bytes), the first column of a repeated name
    // winning, each pre-rendered as `"key":`.
    var seenKeys: Set<String> = []
    let metadataKeys: [(index: Int, prefix: String)] =
      metadataColumns
      .filter { seenKeys.insert($0.key).inserted }
      .sorted { JSONValue.utf8Precedes($0.key, $1.key) }
      .map { column in
        var prefix = ""
        JSONValue.writeString(column.key, to: &prefix)
        prefix += ":"
        return (column.index, prefix)
      }
    let nameColumn = columnOf[.name]
    let radiusColumn = columnOf[.radius]
    accumulator.reserveCapacity(records.count - 1)

    for record in records.dropFirst() {
      let fields = record.fields
      if fields.count > names.count,
        fields[names.count...].contains(where: { !$0.allSatisfy(\.isWhitespace) })
      {
        accumulator.reject(
          at: .line(record.line),
          id: cellText(fields, idColumn),
          reason: .malformedRecord(
            "row has \(fields.count) fields, the header has \(names.count)"))
        continue
      }
      var metadata = ""
      for (index, prefix) in metadataKeys {
        guard let value = cellText(fields, index) else { continue }
        metadata += metadata.isEmpty ? "{" : ","
        metadata += prefix
        JSONValue.writeString(value, to: &metadata)
      }
      var definition = RawGeofenceDefinition(
        id: cellText(fields, idColumn).map(JSONValue.string),
        latitude: numberCell(fields, latitudeColumn, decimalComma: decimalComma),
        longitude: numberCell(fields, longitudeColumn, decimalComma: decimalComma),
        radius: radiusColumn.flatMap { numberCell(fields, $0, decimalComma: decimalComma) },
        name: nameColumn.flatMap { cellText(fields, $0) }.map(JSONValue.string),
        isFromText: true)
      if !metadata.isEmpty { definition.renderedMetadataJSON = metadata + "}" }
      accumulator.add(definition, at: .line(record.line))
    }
    for issue in issues {
      accumulator.reject(at: .line(issue.line), id: nil, reason: .malformedRecord(issue.message))
    }
  }

  /// The trimmed cell, or `nil` when the row is too short or the cell is blank.
  private static func cellText(_ fields: [String], _ index: Int) -> String? {
    guard index < fields.count else { return nil }
    let cell = fields[index]
    // Fast path: most cells start and end with a printable ASCII character.
    if let first = cell.utf8.first, let last = cell.utf8.last, (0x21..<0x7F).contains(first),
      (0x21..<0x7F).contains(last)
    {
      return cell
    }
    let trimmed = cell.trimmingWhitespace()
    return trimmed.isEmpty ? nil : trimmed
  }

  /// The cell as `.number` when it parses, as `.string` (reported as not a number) when it does
  /// not, or `nil` when blank.
  private static func numberCell(_ fields: [String], _ index: Int, decimalComma: Bool)
    -> JSONValue?
  {
    guard let text = cellText(fields, index) else { return nil }
    if let value = NumberText.double(text, decimalComma: decimalComma) { return .number(value) }
    return .string(text)
  }
}
