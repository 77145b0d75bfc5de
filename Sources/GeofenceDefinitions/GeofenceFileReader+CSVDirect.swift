import DelimitedText
import GeofenceGeometry
import JSONText
import NumberText

extension GeofenceFileReader.CSVRowReader {
  /// Reads a data row from its bytes straight into the load, without a
  /// ``RawGeofenceDefinition``, a ``JSONValue`` or a `String` for any cell but the id, the name
  /// and the metadata text the columns keep. Only a row that certainly loads is taken: one
  /// whose id, latitude, longitude and radius cells are plain (see
  /// ``GeofenceFileReader/isPlainCell(_:)``; a radius cell may also be empty or absent when
  /// there is a default radius), whose numbers parse and pass the checks of
  /// ``GeofenceValidator``, and which has no more fields than the header. Its id, circle,
  /// name and metadata are then those the general path
  /// (``readGeneral(_:line:into:)``) gives, built by the same functions; it is recorded the same
  /// way, a duplicate id rejected as there.
  ///
  /// - Returns: true when the row was recorded; false, having recorded nothing, when it must
  ///   take the general path (which alone words a rejection, so every rejection but a
  ///   duplicate id is made there).
  /// - Complexity: O(n) in the row's length; allocates the strings the columns keep (an id or a
  ///   name beyond 15 UTF-8 bytes, the metadata text).
  mutating func readDirectly(
    _ fields: DelimitedFields, line: Int, into accumulator: inout GeofenceLoadAccumulator
  ) -> Bool {
    let count = fields.count
    guard count <= layout.names.count, layout.idColumn < count,
      layout.metadataColumn == nil, layout.geometryColumn == nil
    else { return false }
    let idCell = fields[layout.idColumn]
    // A reserved id takes the general path, which rejects it.
    guard GeofenceFileReader.isPlainCell(idCell), !GeofenceValidator.isReserved(utf8: idCell),
      let latitudeColumn = layout.latitudeColumn, let longitudeColumn = layout.longitudeColumn,
      let latitude = plainNumber(fields, latitudeColumn),
      let longitude = plainNumber(fields, longitudeColumn)
    else { return false }
    let radius: Double
    if let column = layout.radiusColumn, column < count, fields[column].count > 0 {
      guard let value = plainNumber(fields, column) else { return false }
      radius = value
    } else if let fallback = accumulator.defaultRadiusMeters {
      radius = fallback
    } else {
      return false
    }
    guard radius <= GeofenceValidator.maximumRadiusMeters,
      let center = try? Coordinate(latitude: latitude, longitude: longitude),
      let circle = try? PackedCircle(center: center, radiusMeters: radius)
    else { return false }
    // The general path's name: the trimmed cell, none when blank.
    var name = layout.nameColumn.flatMap { GeofenceFileReader.cellText(fields, $0) }
    if let text = name, text.isBlankText { name = nil }
    let valid = ValidatedDefinition(
      id: String(decoding: idCell, as: UTF8.self), name: name, circle: circle, polygon: nil,
      metadataJSON: metadataText(fields))
    accumulator.add(valid, at: .line(line))
    return true
  }

  /// ``renderMetadata(_:)``'s text, written straight into the `String`'s storage when each
  /// metadata cell is plain or empty (an empty cell is left out there too): measured first
  /// (``JSONText/JSONText/quotedCount(utf8:)``), then written once, with no buffer between.
  /// A row with another cell (blank, padded, starting or ending beyond ASCII) is rendered by
  /// ``renderMetadata(_:)``.
  /// - Complexity: O(n) in the metadata cells' length; allocates the `String` only (none up to
  ///   15 bytes).
  mutating func metadataText(_ fields: DelimitedFields) -> String? {
    let count = fields.count
    var length = 0
    for (index, prefix) in layout.metadataKeys where index < count {
      let cell = fields[index]
      if cell.isEmpty { continue }
      guard GeofenceFileReader.isPlainCell(cell) else { return renderMetadata(fields) }
      length += 1 + prefix.count + JSONText.quotedCount(utf8: cell)
    }
    if length == 0 { return nil }
    length += 1
    return layout.metadataKeyText.withUnsafeBufferPointer { keyText in
      String(unsafeUninitializedCapacity: length) { out in
        var at = 0
        for (index, prefix) in layout.metadataKeys where index < count {
          let cell = fields[index]
          if cell.isEmpty { continue }
          out[at] = at == 0 ? UInt8(ascii: "{") : UInt8(ascii: ",")
          at += 1
          _ = UnsafeMutableBufferPointer(rebasing: out[at..<(at + prefix.count)]).initialize(
            fromContentsOf: UnsafeBufferPointer(rebasing: keyText[prefix]))
          at += prefix.count
          at = JSONText.writeQuoted(utf8: cell, into: out, at: at)
        }
        out[at] = UInt8(ascii: "}")
        return at + 1
      }
    }
  }

  /// The number in cell `index` when the row has it, the cell is plain and it parses; else nil
  /// (the general path then decides).
  @inline(__always)
  private func plainNumber(_ fields: DelimitedFields, _ index: Int) -> Double? {
    guard index < fields.count else { return nil }
    let cell = fields[index]
    guard GeofenceFileReader.isPlainCell(cell),
      case .success(let value) = NumberText.parse(cell, decimalComma: decimalComma)
    else { return nil }
    return value
  }
}
