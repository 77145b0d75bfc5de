import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import Testing

@testable import GeofenceDefinitions

// The direct CSV path writes each row's name and metadata object text straight from the
// cells' bytes into the columns' byte arena (`GeofenceColumns.detailText`). The oracle is the
// general path forced for every row (a `String` a cell, `JSONText.appendQuoted` of each):
// over seeded files whose coordinates are valid (so that most rows take the direct path) and
// whose name and metadata cells hold every form (quotes, backslashes, control characters,
// non-ASCII, blank and padded cells, numeric-looking text, long text), both must give the same
// names and metadata byte for byte, and the same rows and rejections.

/// Random files of valid circles with many name and metadata forms.
private struct DetailFuzzer {
  var random: SeededGenerator

  mutating func below(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
  mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
  mutating func pick<T>(_ xs: [T]) -> T { xs[below(xs.count)] }

  static let fixed = [
    "", "", "", " ", "x", "Alpha", "say \"hi\"", "back\\slash", "a/b", "tab\tin", "line\nbreak",
    "cr\rx", "ctl\u{1}\u{8}\u{C}\u{1F}x", "del\u{7F}x", "Zürich", "Lavāsān", "日本語", "📍pin",
    "ü", "ends ü", "ü starts", " padded", "padded ", "\u{A0}nbsp", "nbsp\u{A0}", "\u{2009}",
    "0", "-0", "46.5", "1e5", "0012", "true", "null", "{\"a\":1}", "[1,2]", "\"\"",
    "\"quoted\"", "a,b", "a;b", "\\u0041", String(repeating: "long-", count: 40),
  ]

  /// A name or metadata cell's text.
  mutating func text() -> String {
    switch below(4) {
    case 0: return "Place \(below(100_000))"
    case 1:
      // Printable ASCII at random, quotes and backslashes included.
      return String(
        (0..<(1 + below(12))).map { _ in Character(Unicode.Scalar(UInt8(0x21 + below(94)))) })
    default: return pick(Self.fixed)
    }
  }

  /// One field as written: quoted when it must be, or at random.
  mutating func field(_ text: String, delimiter: Character) -> String {
    let must =
      text.contains(delimiter) || text.contains("\"") || text.contains("\n")
      || text.contains("\r")
    if !must && !chance(0.1) { return text }
    return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  mutating func file() -> (data: Data, delimiter: Character) {
    let delimiter: Character = pick([",", ",", ";", "\t"])
    var header = ["id", "latitude", "longitude"]
    if chance(0.8) { header.append(pick(["name", "Name"])) }
    if chance(0.3) { header.append("radius") }
    let keys = [
      "type", "country", "admin1", "Émile", "a\"q", "back\\slash", "日本", "zeta", "Type",
      "population", "ctl\u{1}", "iata", "", "elevation_ft",
    ]
    for _ in 0..<below(9) { header.append(pick(keys)) }
    header.shuffle(using: &random)
    let d = String(delimiter)
    var out = header.map { field($0, delimiter: delimiter) }.joined(separator: d) + "\n"
    for row in 0..<(30 + below(120)) {
      var cells: [String] = []
      for column in header {
        switch column.lowercased() {
        case "id": cells.append(chance(0.03) ? "r\(below(row + 1))" : "r\(row)")
        case "latitude": cells.append(String(Double.random(in: -90...90, using: &random)))
        case "longitude": cells.append(String(Double.random(in: -180...180, using: &random)))
        case "radius": cells.append(chance(0.2) ? "" : String(below(5000) + 1))
        default: cells.append(text())
        }
      }
      if chance(0.04) { cells.removeLast(below(cells.count)) }
      out += cells.map { field($0, delimiter: delimiter) }.joined(separator: d) + "\n"
    }
    return (Data(out.utf8), delimiter)
  }
}

@Suite struct CSVDirectDetailsTests {
  @Test func namesAndMetadataFromTheArenaEqualTheGeneralPathByteForByte() {
    var directRows = 0
    var generalRows = 0
    var withMetadata = 0
    for seed in UInt64(1)...300 {
      var fuzzer = DetailFuzzer(random: SeededGenerator(seed: seed))
      let (data, delimiter) = fuzzer.file()
      let direct = load(data, radius: 1500, rows: .direct)
      expectSame(direct, load(data, radius: 1500, rows: .general), "seed \(seed)")
      if case .success(let result) = direct {
        let c = result.columns
        withMetadata += (0..<c.count).filter { c.details(at: $0)?.metadataJSON != nil }.count
      }
      let split = CSVDirectRowTests.rowsTaken(data, delimiter: delimiter, radius: 1500)
      directRows += split.direct
      generalRows += split.general
    }
    // Most rows take the direct path; those with a cell to trim take the general one.
    #expect(directRows > 8_000, "\(directRows) rows direct, \(generalRows) general")
    #expect(generalRows > 500, "\(directRows) rows direct, \(generalRows) general")
    #expect(withMetadata > 10_000, "\(withMetadata) rows with metadata")
  }

  @Test func handWrittenDetailsAreTheCanonicalText() throws {
    let text = #"""
      id,name,lat,lon,type,note,Émile,pop
      a,Alpha,1,2,city,"say ""hi""",é,0012
      b,,1,2,,,,
      c,Gamma,1,2,,"back\slash",,
      d, Delta ,1,2, town ,,,
      a,Dup,1,2,x,,,
      e,"tab\#there",1,2,,"ctl\#u{1}x",,-0

      """#
    let result = try #require(try? load(Data(text.utf8), radius: 100, rows: .direct).get())
    let c = result.columns
    #expect(c.ids == ["a", "b", "c", "d", "e"])
    #expect(
      c.details(at: 0)
        == GeofenceDetails(
          name: "Alpha",
          metadataJSON: #"{"note":"say \"hi\"","pop":"0012","type":"city","Émile":"é"}"#))
    #expect(c.details(at: 1) == nil)
    #expect(
      c.details(at: 2) == GeofenceDetails(name: "Gamma", metadataJSON: #"{"note":"back\\slash"}"#))
    #expect(c.details(at: 3) == GeofenceDetails(name: "Delta", metadataJSON: #"{"type":"town"}"#))
    #expect(
      c.details(at: 4)
        == GeofenceDetails(name: "tab\there", metadataJSON: #"{"note":"ctl\u0001x","pop":"-0"}"#))
    #expect(
      result.rejected.map(\.description) == [
        #"fuzz.csv:6 (id "a"): duplicate id, first defined at fuzz.csv:2"#
      ])
    // The duplicate's bytes were taken back: the arena holds the five rows' text alone.
    let texts = (0..<c.count).compactMap { c.details(at: $0) }
      .map { ($0.name?.utf8.count ?? 0) + ($0.metadataJSON?.utf8.count ?? 0) }
    #expect(c.detailText.count == texts.reduce(0, +))
  }

  @Test func detailsGivenAsStringsReadBackFromTheArena() throws {
    var columns = GeofenceColumns()
    let circle = try PackedCircle(
      center: try Coordinate(latitude: 1, longitude: 2), radiusMeters: 10)
    let cases: [(String?, String?)] = [
      (nil, nil), ("", nil), (nil, "{}"), ("Zürich", #"{"k":"v"}"#), ("e\u{301}", nil),
      (nil, #"{"a":"\u0001"}"#), (String(repeating: "n", count: 100), ""),
    ]
    for (k, (name, metadata)) in cases.enumerated() {
      #expect(
        columns.append(
          id: "g\(k)", circle: circle, polygon: nil, name: name, metadataJSON: metadata) == nil)
    }
    for (k, (name, metadata)) in cases.enumerated() {
      let d = columns.details(at: k)
      if name == nil && metadata == nil {
        #expect(d == nil)
      } else {
        #expect(d?.name.map { Array($0.utf8) } == name.map { Array($0.utf8) }, "row \(k)")
        #expect(d?.metadataJSON.map { Array($0.utf8) } == metadata.map { Array($0.utf8) })
      }
    }
    // A duplicate id appends nothing.
    let before = columns.detailText.count
    #expect(
      columns.append(id: "g3", circle: circle, polygon: nil, name: "x", metadataJSON: nil) == 3)
    #expect(columns.detailText.count == before)
  }
}

@Test func lineCountCountsEveryLineFeedAtEveryOffset() {
  var random = SeededGenerator(seed: 7)
  for length in 0..<200 {
    let bytes = (0..<length).map { _ in
      [UInt8(0x0A), 0x0D, 0x8A, 0x0B, 0x00, 0xFF, UInt8(ascii: "a")][
        Int.random(in: 0..<7, using: &random)]
    }
    let count = bytes.withUnsafeBufferPointer { GeofenceFileReader.lineCount($0) }
    #expect(count == bytes.filter { $0 == 0x0A }.count, "length \(length)")
  }
}
