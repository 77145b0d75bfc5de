import DelimitedText
import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import Testing

@testable import GeofenceDefinitions

// A large CSV file whose data rows hold no quote is read on two threads, its rows cut in two
// (`CSVParts`), the later part's ids looked up when it joins the earlier one. The oracle is
// the same file read on one thread (`CSVReadThreads.maximumParts` 1): both must give the same
// result, row for row, rejection for rejection, line for line. The size threshold is lowered
// so that files of a few thousand rows are cut.

/// `data` read as CSV on up to two threads, files from `minimumBytes` of data rows cut.
private func readInParts(
  _ data: Data, radius: Double? = 100, rows: GeofenceFileReader.CSVRowPath = .direct,
  minimumBytes: Int = 64
) -> Result<GeofenceLoadResult, GeofenceFileError> {
  CSVReadThreads.$minimumBytes.withValue(minimumBytes) {
    load(data, radius: radius, rows: rows, file: "parts.csv")
  }
}

/// `data` read as CSV on the calling thread alone.
private func readWhole(
  _ data: Data, radius: Double? = 100, rows: GeofenceFileReader.CSVRowPath = .direct
) -> Result<GeofenceLoadResult, GeofenceFileError> {
  CSVReadThreads.$maximumParts.withValue(1) {
    load(data, radius: radius, rows: rows, file: "parts.csv")
  }
}

/// Where `text` is cut with the threshold lowered, or nil when it is read on one thread.
private func cut(_ text: String, minimumBytes: Int = 64) -> GeofenceFileReader.CSVParts? {
  let bytes = Array(text.utf8)
  let headerEnd = bytes.firstIndex { $0 == 0x0A || $0 == 0x0D } ?? bytes.count
  return CSVReadThreads.$minimumBytes.withValue(minimumBytes) {
    bytes.withUnsafeBufferPointer { GeofenceFileReader.CSVParts($0, headerEnd: headerEnd) }
  }
}

/// The 1-based line of each byte offset of `text` where a line starts, counting LF, CR LF and
/// lone CR as `DelimitedText` does (written out here, byte by byte).
private func lineStarting(at offset: Int, in text: String) -> Int {
  let bytes = Array(text.utf8)
  var line = 1
  var i = 0
  while i < offset {
    if bytes[i] == 0x0A || (bytes[i] == 0x0D && !(i + 1 < bytes.count && bytes[i + 1] == 0x0A)) {
      line += 1
    }
    i += 1
  }
  return line
}

/// Seeded files of circle rows: ids of one width (`r` and six digits), so that an id can be
/// swapped for another without moving the cut; some ids repeated, some rows rejected, some
/// blank lines, with the line ends and columns asked for.
private struct PartsFile {
  var random: SeededGenerator
  var lineEnd = "\n"
  var delimiter = ","
  var withDetails = false
  /// Share of rows that repeat an earlier id, and that are rejected.
  var repeats = 0.0
  var bad = 0.0

  init(seed: UInt64) { random = SeededGenerator(seed: seed) }

  mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
  mutating func below(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }

  var header: String {
    let names =
      withDetails
      ? ["id", "name", "latitude", "longitude", "radius", "kind", "zone"]
      : ["id", "latitude", "longitude", "radius_m"]
    return names.joined(separator: delimiter)
  }

  mutating func number(_ range: ClosedRange<Double>) -> String {
    let text = String(Double.random(in: range, using: &random))
    return delimiter == "," ? text : text.replacingOccurrences(of: ".", with: ",")
  }

  /// The lines of a file: the header, then `count` rows (and blank lines among them).
  mutating func lines(rows count: Int) -> [String] {
    var lines = [header]
    var ids: [String] = []
    for n in 0..<count {
      if chance(0.01) { lines.append("") }
      var id = "r" + String(1_000_000 + n).dropFirst()
      if !ids.isEmpty && chance(repeats) { id = ids[below(ids.count)] }
      ids.append(id)
      var latitude = number(-89...89)
      var longitude = number(-179...179)
      var radius = number(1...5000)
      var surplus = ""
      if chance(bad) {
        switch below(5) {
        case 0: latitude = "north"
        case 1: longitude = "200"
        case 2: radius = "-5"
        case 3: surplus = delimiter + "x" + delimiter + "surplus"
        default: radius = ""
        }
      }
      var cells = [id, latitude, longitude, radius]
      if withDetails {
        let name = ["Town \(below(100))", "", "  padded  ", "Zürich", "a\tb"][below(5)]
        let kind = ["", "town", "village", " spaced "][below(4)]
        let zone = chance(0.5) ? "z\(below(9))" : ""
        cells = [id, name, latitude, longitude, radius, kind, zone]
      }
      lines.append(cells.joined(separator: delimiter) + surplus)
    }
    return lines
  }

  mutating func text(rows count: Int) -> String {
    lines(rows: count).joined(separator: lineEnd) + lineEnd
  }
}

@Suite struct CSVPartsTests {
  /// Plain rows, rows with names and metadata, repeated ids, rejected rows, CRLF, semicolons
  /// with decimal commas: each file is cut, and reads as on one thread.
  @Test(arguments: 0..<6)
  func aFileReadInTwoPartsIsTheFileReadWhole(seed: Int) throws {
    var file = PartsFile(seed: UInt64(seed))
    switch seed {
    case 0: break
    case 1: file.withDetails = true
    case 2:
      file.repeats = 0.2
      file.bad = 0.1
    case 3:
      file.lineEnd = "\r\n"
      file.repeats = 0.1
      file.bad = 0.05
    case 4:
      file.delimiter = ";"
      file.withDetails = true
      file.repeats = 0.1
      file.bad = 0.05
    default:
      file.lineEnd = "\r"
      file.withDetails = true
      file.repeats = 0.1
    }
    let text = file.text(rows: 3000)
    let parts = try #require(cut(text), "seed \(seed)")
    #expect(parts.laterFirstLine == lineStarting(at: parts.split, in: text))
    let data = Data(text.utf8)
    let whole = readWhole(data)
    expectSame(readInParts(data), whole, "seed \(seed)")
    expectSame(readInParts(data, rows: .general), whole, "seed \(seed), general rows")
    expectSame(readInParts(data, radius: nil), readWhole(data, radius: nil), "seed \(seed)")
    // `read(data:…)`, the path of every command, joins the later part only after releasing
    // the file's bytes: the same load.
    let held = CSVReadThreads.$minimumBytes.withValue(64) {
      Result { () throws(GeofenceFileError) in
        try GeofenceFileReader.read(
          data: Data(text.utf8), format: .csv, fileName: "parts.csv", defaultRadiusMeters: 100)
      }
    }
    expectSame(held, whole, "seed \(seed), read(data:)")
    let result = try whole.get()
    #expect(result.count > 0)
    if file.repeats > 0 {
      #expect(result.rejected.contains { if case .duplicateID = $0.reason { true } else { false } })
    }
  }

  /// A file of blank lines reserves room for the rows it can hold, not one per line feed: on
  /// one thread and in parts, the load's arrays stay within a few times the file's size
  /// (about 52 B a line feed were reserved before, 13 times the size of this file).
  @Test func blankLinesDoNotReserveRowsTheFileCannotHold() throws {
    let text = "id,latitude,longitude\n" + String(repeating: "\n", count: 600_000) + "a,1,2\n"
    let data = Data(text.utf8)
    for load in [readWhole(data), readInParts(data)] {
      let result = try load.get()
      #expect(result.geofences.map(\.id) == ["a"])
      #expect(result.location(at: 0).position == .line(600_002))
      #expect(result.footprintBytes < 12 * data.count, "\(result.footprintBytes) bytes")
    }
  }

  /// Lone CRs, CR LF pairs and blank lines before the cut: the later part's line numbers
  /// still count every line end.
  @Test func lineEndsOfEveryKindBeforeTheCutKeepTheLaterLinesRight() throws {
    var file = PartsFile(seed: 7)
    file.repeats = 0.05
    file.bad = 0.05
    let ends = ["\n", "\r\n", "\r", "\n\n", "\r\n\r\n", "\r\r\n"]
    var random = SeededGenerator(seed: 8)
    let lines = file.lines(rows: 2000)
    var text = ""
    for line in lines { text += line + ends[Int.random(in: 0..<ends.count, using: &random)] }
    let parts = try #require(cut(text))
    #expect(parts.laterFirstLine == lineStarting(at: parts.split, in: text))
    let data = Data(text.utf8)
    expectSame(readInParts(data), readWhole(data), "mixed line ends")
  }

  /// An id defined on each side of the cut, on the two rows next to it: the later row is
  /// rejected, naming the earlier; and ids repeated within each part and across.
  @Test func duplicatesAcrossTheCutNameTheEarlierPart() throws {
    var file = PartsFile(seed: 11)
    file.repeats = 0.05
    var lines = file.lines(rows: 4000)
    let text = lines.joined(separator: "\n") + "\n"
    let parts = try #require(cut(text))
    // The first row after the cut, and the last before it (`lines[k]` is line k + 1).
    var later = parts.laterFirstLine - 1
    while lines[later].isEmpty { later += 1 }
    var earlier = parts.laterFirstLine - 2
    while lines[earlier].isEmpty { earlier -= 1 }
    let earlierID = String(lines[earlier].prefix(7))
    lines[later] = earlierID + lines[later].dropFirst(7)
    let swapped = lines.joined(separator: "\n") + "\n"
    // Ids of one width: the cut does not move.
    #expect(cut(swapped)?.split == parts.split)
    let data = Data(swapped.utf8)
    let whole = readWhole(data)
    expectSame(readInParts(data), whole, "swapped")
    let result = try readInParts(data).get()
    let rejection = result.rejected.first { $0.location.position == .line(later + 1) }
    let firstLine = try #require(
      result.locations[try #require(result.columns.ids.firstIndex(of: earlierID))].position)
    #expect(
      rejection
        == GeofenceRejection(
          location: DefinitionLocation(file: "parts.csv", position: .line(later + 1)),
          id: earlierID,
          reason: .duplicateID(firstDefinedAt: .init(file: "parts.csv", position: firstLine))))
  }

  /// A small file cut by hand: its duplicate rejections, worked out by hand.
  @Test func aSmallFileCutInTwoRejectsTheLaterDuplicatesByLine() throws {
    let text = """
      id,lat,lon,radius
      a,1,1,10
      b,2,2,10

      c,3,3,10
      d,4,4,10
      a,5,5,10
      c,6,6,10
      c,7,7,10
      e,8,8,north

      """
    // The data rows (from the header's LF at byte 17) are 77 bytes: a share of 0.1 to 0.45
    // of them ends inside line 2 to 6, so the later part starts on line 3 to 7 (the line
    // after), before the second `a`.
    let parts = try #require(cut(text, minimumBytes: 1))
    #expect((3...7).contains(parts.laterFirstLine))
    #expect((0.1...0.45).contains(GeofenceFileReader.CSVParts.earlierShare))
    #expect(parts.laterFirstLine == lineStarting(at: parts.split, in: text))
    let result = try readInParts(Data(text.utf8), minimumBytes: 1).get()
    #expect(result.columns.ids == ["a", "b", "c", "d"])
    #expect(result.locations.map(\.position) == [.line(2), .line(3), .line(5), .line(6)])
    func at(_ line: Int) -> DefinitionLocation {
      DefinitionLocation(file: "parts.csv", position: .line(line))
    }
    #expect(
      result.rejected == [
        GeofenceRejection(location: at(7), id: "a", reason: .duplicateID(firstDefinedAt: at(2))),
        GeofenceRejection(location: at(8), id: "c", reason: .duplicateID(firstDefinedAt: at(5))),
        GeofenceRejection(location: at(9), id: "c", reason: .duplicateID(firstDefinedAt: at(5))),
        GeofenceRejection(
          location: at(10), id: "e", reason: .notANumber(.radius, text: "north")),
      ])
    #expect(result == (try readWhole(Data(text.utf8)).get()))
  }

  /// A quote anywhere (here a quoted name near the end) keeps the file on one thread, and
  /// it reads right.
  @Test func aFileWithAQuoteIsReadOnOneThread() throws {
    var file = PartsFile(seed: 13)
    file.withDetails = true
    file.repeats = 0.05
    var lines = file.lines(rows: 3000)
    lines[lines.count - 2] = "r999999,\"Sion,\nVS\",46.2,7.3,100,town,z1"
    let text = lines.joined(separator: "\n") + "\n"
    #expect(cut(text) == nil)
    let data = Data(text.utf8)
    let result = try readInParts(data).get()
    let row = try #require(result.columns.ids.firstIndex(of: "r999999"))
    #expect(result.columns.details(at: row)?.name == "Sion,\nVS")
    #expect(result.locations[row].position == .line(lines.count - 1))
    expectSame(readInParts(data), readWhole(data), "quoted")
    // A quote in the header line alone does too.
    var plain = PartsFile(seed: 14)
    let quotedHeader = "\"id\"" + plain.text(rows: 3000).dropFirst(2)
    #expect(cut(quotedHeader) == nil)
    expectSame(
      readInParts(Data(quotedHeader.utf8)), readWhole(Data(quotedHeader.utf8)), "quoted header")
  }

  /// The join of parts that hold polygons and details, some ids repeated (the row by row
  /// path): the rows and rejections of the same definitions added to one load.
  @Test func joiningPartsWithPolygonsAndDetailsIsAddingTheirRowsToOneLoad() throws {
    let square: JSONValue = try JSONDocument.parse(
      Array(
        #"{"type":"Polygon","coordinates":[[[6,46],[6.1,46],[6.1,46.1],[6,46.1],[6,46]]]}"#.utf8))
    func definition(_ k: Int, id: String) -> RawGeofenceDefinition {
      RawGeofenceDefinition(
        id: .string(id), latitude: k % 3 == 0 ? nil : .number(Double(k % 80)),
        longitude: k % 3 == 0 ? nil : .number(7), radius: k % 3 == 0 ? nil : .number(50),
        name: k % 2 == 0 ? .string("n\(k)") : nil,
        metadata: k % 5 == 0 ? .object(["k": .number(Double(k))]) : nil,
        geometry: k % 3 == 0 ? square : nil, isFromText: true)
    }
    // Repeated ids: in the earlier part, across the cut (after row 25), and in the later
    // part alone (`g40`).
    let ids = (0..<60).map { k in k % 7 == 6 ? "g\(k / 3)" : k == 58 ? "g40" : "g\(k)" }
    for repeated in [false, true] {
      let rowIDs = repeated ? ids : (0..<60).map { "g\($0)" }
      var whole = GeofenceLoadAccumulator(file: "parts.csv", defaultRadiusMeters: nil)
      var earlier = GeofenceLoadAccumulator(file: "parts.csv", defaultRadiusMeters: nil)
      var later = GeofenceLoadAccumulator(
        file: "parts.csv", defaultRadiusMeters: nil, ids: .deferred)
      for (k, id) in rowIDs.enumerated() {
        whole.add(definition(k, id: id), at: .line(k + 2))
        if k < 25 {
          earlier.add(definition(k, id: id), at: .line(k + 2))
        } else {
          later.add(definition(k, id: id), at: .line(k + 2))
        }
      }
      earlier.result.append(deferredPart: later.result)
      let joined = earlier.result
      #expect(joined == whole.result)
      #expect(joined.columns.polygonRows == whole.result.columns.polygonRows)
      #expect(joined.columns.detailOfRow == whole.result.columns.detailOfRow)
      #expect(joined.columns.detailText == whole.result.columns.detailText)
      #expect(joined.columns.polygons.count == whole.result.columns.polygons.count)
      #expect(joined.columns.polygons.count > 10)
      #expect(joined.rejected.count == (repeated ? 7 : 0))
    }
  }

  /// The scan that decides the cut counts lines as `DelimitedText` does, at every offset and
  /// for every kind of line end.
  @Test func theScanCountsLineEndsAsRecordsAreNumbered() {
    var random = SeededGenerator(seed: 21)
    let alphabet: [UInt8] = Array("ab,\n\r".utf8)
    for length in 0..<80 {
      let bytes = (0..<length).map { _ in
        alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
      }
      let scan = bytes.withUnsafeBufferPointer { GeofenceFileReader.CSVParts.scan($0) }
      #expect(scan.lineFeeds == bytes.filter { $0 == 0x0A }.count)
      var ends = 0
      for (i, b) in bytes.enumerated()
      where b == 0x0A || (b == 0x0D && !(i + 1 < bytes.count && bytes[i + 1] == 0x0A)) {
        ends += 1
      }
      #expect(scan.lineEnds == ends, "\(bytes)")
      #expect(!scan.hasQuote)
      let quoted = bytes + [0x22] + bytes
      #expect(quoted.withUnsafeBufferPointer { GeofenceFileReader.CSVParts.scan($0) }.hasQuote)
    }
  }
}
