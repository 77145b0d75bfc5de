import DelimitedText
import GeofenceGeometry
import JSONText
import NumberText

extension GeofenceFileReader.CSVRowReader {
  /// Reads a data row from its bytes straight into the load, without a
  /// ``RawGeofenceDefinition``, a ``JSONValue`` or a `String` for any cell but the id: the name
  /// and the metadata text are written into the columns' byte arena
  /// (``GeofenceColumns/detailText``), the metadata escaped from the cells' bytes. Only a row
  /// that certainly loads is taken: one whose id, latitude, longitude and radius cells are
  /// plain (see
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
  /// - Complexity: O(n) in the row's length; allocates only an id beyond 15 UTF-8 bytes (and a
  ///   `String` for a name or metadata cell that must be trimmed), and when the columns grow.
  mutating func readDirectly(
    _ fields: DelimitedFields, line: Int, into accumulator: inout GeofenceLoadAccumulator
  ) -> Bool {
    let count = fields.count
    guard count <= layout.names.count, layout.idColumn < count,
      layout.metadataColumn == nil, layout.geometryColumn == nil
    else { return false }
    let idCell = fields[layout.idColumn]
    // A reserved or long id takes the general path, which rejects it or counts its characters.
    guard GeofenceFileReader.isPlainCell(idCell), !GeofenceValidator.needsGeneralCheck(id: idCell),
      let latitudeColumn = layout.latitudeColumn, let longitudeColumn = layout.longitudeColumn
    else { return false }
    // The id's bucket is read now, so that its likely cache miss overlaps the work below.
    let probe = accumulator.idProbe(utf8: idCell)
    guard let latitude = plainNumber(fields, latitudeColumn),
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
    // The name and metadata go straight into the columns' arena, as the general path would
    // give them: the trimmed name (none when blank), then the metadata object.
    let details = accumulator.writeDetails { text in
      if let written = appendPlainDetails(fields, to: &text) { return written }
      return (appendName(fields, to: &text), appendMetadata(fields, to: &text))
    }
    accumulator.add(
      id: String(decoding: idCell, as: UTF8.self), probe: probe, circle: circle,
      writtenDetails: details, at: .line(line))
    return true
  }

  /// Appends the row's name and metadata text to `out`, as ``appendName(_:to:)`` and
  /// ``appendMetadata(_:to:)`` would, when each of those cells is plain (see
  /// ``GeofenceFileReader/isPlainCell(_:)``) or empty, so that nothing is trimmed: written in
  /// one pass into the reused ``detailBuffer`` (doubled when a row's text might not fit), then
  /// copied in one piece.
  /// - Returns: the bytes of the name (−1 for none) and of the metadata (0 for none); nil,
  ///   having appended nothing, when a cell is neither plain nor empty.
  /// - Complexity: O(n) in the cells' length; allocates only when `out` or the buffer grows.
  mutating func appendPlainDetails(_ fields: DelimitedFields, to out: inout [UInt8]) -> (
    name: Int, metadata: Int
  )? {
    while true {
      switch writePlainDetails(fields) {
      case .written(let name, let total):
        detailBuffer.withUnsafeBufferPointer { out.append(contentsOf: $0[0..<total]) }
        return (name, total - max(name, 0))
      case .notPlain:
        return nil
      case .needsRoom:
        detailBuffer = [UInt8](repeating: 0, count: max(4096, 2 * detailBuffer.count))
      }
    }
  }

  /// What ``writePlainDetails(_:)`` did.
  enum PlainDetails {
    /// Written: the name's bytes (−1 for none) and all the bytes written.
    case written(name: Int, total: Int)
    /// A name or metadata cell is neither plain nor empty; the buffer holds nothing of use.
    case notPlain
    /// The buffer may be too short for the row's text.
    case needsRoom
  }

  /// Writes the row's name, then its metadata object text, into ``detailBuffer`` from its
  /// start, checking before each cell that the longest text it could give (every byte
  /// escaped as `\u00XX`) fits.
  /// - Complexity: O(n) in the cells' length; no allocation.
  private mutating func writePlainDetails(_ fields: DelimitedFields) -> PlainDetails {
    let count = fields.count
    var name = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    if let column = layout.nameColumn, column < count {
      name = fields[column]
      guard name.isEmpty || GeofenceFileReader.isPlainCell(name) else { return .notPlain }
    }
    let keys = layout.metadataKeys
    return layout.metadataKeyText.withUnsafeBufferPointer { keyText in
      detailBuffer.withUnsafeMutableBufferPointer { buffer in
        // Room for the name and a closing brace.
        guard name.count &+ 1 <= buffer.count else { return .needsRoom }
        var at = 0
        Self.copy(name, into: buffer, at: &at)
        for (index, prefix) in keys where index < count {
          let cell = fields[index]
          if cell.isEmpty { continue }
          guard GeofenceFileReader.isPlainCell(cell) else { return .notPlain }
          // A separator, the key, the quoted cell, and the closing brace.
          guard at &+ 4 &+ prefix.count &+ 6 &* cell.count <= buffer.count else {
            return .needsRoom
          }
          buffer[at] = at == name.count ? UInt8(ascii: "{") : UInt8(ascii: ",")
          at &+= 1
          Self.copy(UnsafeBufferPointer(rebasing: keyText[prefix]), into: buffer, at: &at)
          Self.writeQuoted(cell, into: buffer, at: &at)
        }
        if at > name.count {
          buffer[at] = UInt8(ascii: "}")
          at &+= 1
        }
        return .written(name: name.isEmpty ? -1 : name.count, total: at)
      }
    }
  }

  /// Copies `bytes` to `buffer` at `at`, advancing `at`: a byte loop, cheaper than a call to
  /// `memmove` for the few bytes of a cell or a key.
  @inline(__always)
  private static func copy(
    _ bytes: UnsafeBufferPointer<UInt8>, into buffer: UnsafeMutableBufferPointer<UInt8>,
    at: inout Int
  ) {
    var k = at
    for b in bytes {
      buffer[k] = b
      k &+= 1
    }
    at = k
  }

  /// Writes `cell` as a JSON string literal at `at`, advancing `at`: copied between quotes
  /// when it has nothing to escape, else by ``JSONText/JSONText/writeQuoted(utf8:into:at:)``
  /// (the one escaper), which writes the same bytes in that case.
  /// - Precondition: `buffer` has 6 × `cell.count` + 2 bytes from `at`.
  @inline(__always)
  private static func writeQuoted(
    _ cell: UnsafeBufferPointer<UInt8>, into buffer: UnsafeMutableBufferPointer<UInt8>,
    at: inout Int
  ) {
    let start = at
    var k = at &+ 1
    buffer[start] = UInt8(ascii: "\"")
    for b in cell {
      if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
        at = JSONText.writeQuoted(utf8: cell, into: buffer, at: start)
        return
      }
      buffer[k] = b
      k &+= 1
    }
    buffer[k] = UInt8(ascii: "\"")
    at = k &+ 1
  }

  /// Appends the general path's name of the row to `out`: the trimmed cell (a plain cell as
  /// it is, see ``GeofenceFileReader/isPlainCell(_:)``), nothing when it is blank or absent.
  /// - Returns: the number of bytes appended, or −1 for no name.
  /// - Complexity: O(n) in the cell's length; allocates only a `String` for a cell that is not
  ///   plain, and when `out` grows.
  func appendName(_ fields: DelimitedFields, to out: inout [UInt8]) -> Int {
    guard let column = layout.nameColumn, column < fields.count else { return -1 }
    let cell = fields[column]
    if GeofenceFileReader.isPlainCell(cell) {
      out.append(contentsOf: cell)
      return cell.count
    }
    guard let text = GeofenceFileReader.cellText(fields, column), !text.isBlankText else {
      return -1
    }
    out.append(contentsOf: text.utf8)
    return text.utf8.count
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
