import DelimitedText
import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import Testing

@testable import GeofenceDefinitions

// The CSV reader takes a row from its bytes straight into the columns when it can
// (`CSVRowReader.readDirectly`), and otherwise through a `RawGeofenceDefinition` and the
// validator (`readGeneral`). The oracle is the general path forced for every row: over seeded
// random files of every cell form (quotes, escapes, blanks, bad and huge numbers, decimal
// commas, Unicode, Latin-1, NULs, byte-order marks, CR / CRLF / LF, short and long rows,
// duplicate ids), both must give the same result, bit for bit and word for word.

/// Reads `data` as CSV with the row path given; the thrown error as a value (also used by
/// `CSVDirectDetailsTests`).
func load(
  _ data: Data, radius: Double?, rows: GeofenceFileReader.CSVRowPath, file: String = "fuzz.csv"
) -> Result<GeofenceLoadResult, GeofenceFileError> {
  var accumulator = GeofenceLoadAccumulator(file: file, defaultRadiusMeters: radius)
  do {
    try GeofenceFileReader.readCSV(data, into: &accumulator, rows: rows)
  } catch {
    return .failure(error)
  }
  return .success(accumulator.result)
}

/// Records every difference between the direct and the general path's results.
func expectSame(
  _ direct: Result<GeofenceLoadResult, GeofenceFileError>,
  _ general: Result<GeofenceLoadResult, GeofenceFileError>, _ context: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  switch (direct, general) {
  case (.failure(let a), .failure(let b)):
    #expect(a == b, "\(context)", sourceLocation: sourceLocation)
    #expect(a.description == b.description, "\(context)", sourceLocation: sourceLocation)
  case (.success(let a), .success(let b)):
    #expect(a == b, "\(context)", sourceLocation: sourceLocation)
    let c = a.columns
    let d = b.columns
    #expect(c.ids == d.ids, "\(context)", sourceLocation: sourceLocation)
    // Bit for bit: `==` on Double takes -0.0 for 0.0.
    func bits(_ p: PackedCircle) -> [UInt64] {
      [p.center.latitude.bitPattern, p.center.longitude.bitPattern, p.radiusMeters.bitPattern]
    }
    #expect(
      c.circles.map(bits) == d.circles.map(bits), "\(context)", sourceLocation: sourceLocation)
    #expect(
      (0..<c.count).map { c.details(at: $0) } == (0..<d.count).map { d.details(at: $0) },
      "\(context)", sourceLocation: sourceLocation)
    // The metadata text byte for byte (`String ==` compares canonically).
    #expect(
      (0..<c.count).map { c.details(at: $0).map { [UInt8]($0.name?.utf8 ?? "".utf8) } }
        == (0..<d.count).map { d.details(at: $0).map { [UInt8]($0.name?.utf8 ?? "".utf8) } },
      "\(context)", sourceLocation: sourceLocation)
    #expect(
      (0..<c.count).map { c.details(at: $0).map { [UInt8]($0.metadataJSON?.utf8 ?? "".utf8) } }
        == (0..<d.count).map {
          d.details(at: $0).map { [UInt8]($0.metadataJSON?.utf8 ?? "".utf8) }
        }, "\(context)", sourceLocation: sourceLocation)
    #expect(
      c.ids.map { [UInt8]($0.utf8) } == d.ids.map { [UInt8]($0.utf8) }, "\(context)",
      sourceLocation: sourceLocation)
    #expect(
      a.locations.map(\.description) == b.locations.map(\.description), "\(context)",
      sourceLocation: sourceLocation)
    #expect(
      a.rejected.map(\.description) == b.rejected.map(\.description), "\(context)",
      sourceLocation: sourceLocation)
    #expect(a.rejected == b.rejected, "\(context)", sourceLocation: sourceLocation)
    #expect(a.truncations == b.truncations, "\(context)", sourceLocation: sourceLocation)
  default:
    Issue.record("\(context): one path threw, the other did not", sourceLocation: sourceLocation)
  }
}

/// Random delimited files of geofence definitions.
private struct CSVFuzzer {
  var random: SeededGenerator

  enum Column: Equatable {
    case id, name, latitude, longitude, radius
    case metadata(String)
  }

  mutating func below(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
  mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
  mutating func pick<T>(_ xs: [T]) -> T { xs[below(xs.count)] }

  /// Text a reader may meet in a name or metadata cell.
  static let texts = [
    "Alpha", "Sion, VS", "Two\nlines", "say \"hi\"", "back\\slash", "  padded  ",
    "\u{A0}nbsp\u{A0}",
    "\u{3000}ideographic", "Lavāsān", "Ōsaka", "Zürich ", "\u{301}combining", "tab\tinside",
    "ctrl\u{1}x\u{1F}", "e\u{301}", "📍pin", "\u{2028}", "\u{FEFF}mark", "nul\u{0}x", "", " ",
    "  ", "\t", "x", "46.5", "Saint-Louis", "a;b", "quote\"", "\"", "\r", "end\r\n",
    "Ŋ", "\u{85}next", "ends with space\u{2009}", "🇨🇭", "x\u{1F1E8}\u{1F1ED}",
  ]

  mutating func text() -> String {
    if chance(0.5) { return pick(["Town \(below(1000))", "Ville-\(below(100))", "p\(below(50))"]) }
    return pick(Self.texts)
  }

  mutating func id(_ earlier: [String]) -> String {
    if !earlier.isEmpty && chance(0.12) { return pick(earlier) }
    let n = below(100_000)
    switch below(20) {
    case 0: return " r\(n) "
    case 1: return pick(["", " ", "\t", "\u{A0}"])
    case 2: return "café\(n)"
    case 3: return "cafe\u{301}\(n)"
    case 4: return "\u{A0}x\(n)"
    case 5: return "x,\(n)"
    case 6: return "q\"\(n)"
    case 7: return "\(n)"
    case 8: return "📍\(n)"
    case 9: return "id;\(n)"
    case 10: return "very-long-identifier-beyond-fifteen-bytes-\(n)"
    default: return "r\(n)"
    }
  }

  /// A number cell for `field`, valid or not; `comma` turns decimal points into commas.
  mutating func number(_ field: Column, comma: Bool) -> String {
    let limit: Double = field == .latitude ? 90 : field == .longitude ? 180 : 50_000
    if chance(0.22) {
      return pick([
        "", " ", " 46.5", "46.5 ", "\u{A0}46.5", "+46.5", ".5", "5.", "01.5", "0x1p3", "nan",
        "inf", "-inf", "1e400", "-1e400", "1e-400", "91", "-90.0000001", "180", "-180",
        "180.0000000001", "abc", "46.5.5", "4 6", "٤٦", "46,5", "1,5e2", "0", "-0", "-0.0",
        "1e308", "2e308", "4.9e-324", "1e-320", "-5", "12345678901234567890.5",
        "0.12345678901234567890123", "9007199254740993", "1E2", "1e+2", "-", "e5", "1e",
        String(repeating: "1", count: 300), "0." + String(repeating: "0", count: 400) + "1",
      ])
    }
    let value = Double.random(in: (field == .radius ? 0 : -limit)...limit, using: &random)
    var s: String
    switch below(6) {
    case 0: s = String(format: "%.5f", value)
    case 1: s = "\(value)"
    case 2: s = "\(Int(value))"
    case 3: s = String(format: "%.17g", value)
    case 4: s = String(format: "%.3e", value)
    default: s = String(format: "%.7f", value)
    }
    if comma && chance(0.7) { s = s.replacingOccurrences(of: ".", with: ",") }
    return s
  }

  /// One field as written: quoted when it must be (or at random), `""` for a quote, at times
  /// with text after the closing quote.
  mutating func field(_ text: String, delimiter: Character) -> String {
    let must =
      text.contains(delimiter) || text.contains("\"") || text.contains("\n")
      || text.contains("\r") || text.unicodeScalars.first == "\""
    if !must && !chance(0.08) { return text }
    var out = "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    if chance(0.03) { out += pick(["x", " ", "tail"]) }
    return out
  }

  /// A file and the default radius to read it with.
  mutating func file() -> (data: Data, radius: Double?, delimiter: Character) {
    let delimiter: Character = pick([",", ",", ";", "\t"])
    let comma = delimiter != ","
    var columns: [Column] = [.latitude, .longitude]
    if !chance(0.03) { columns.append(.id) }
    if chance(0.75) { columns.append(.name) }
    if chance(0.5) { columns.append(.radius) }
    for _ in 0..<below(6) {
      columns.append(
        .metadata(
          pick([
            "type", "country", "Émile", "a\"q", "zeta", "", "id", "name", "lat", "  spaced ",
            "kind", "kind", "Radius", "a\\b", "ctl\u{1}", "日本",
          ])))
    }
    columns.shuffle(using: &random)
    func headerName(_ c: Column) -> String {
      switch c {
      case .id: return pick(["id", "ID", " Id "])
      case .name: return pick(["name", "Name"])
      case .latitude: return pick(["latitude", "lat", "LAT"])
      case .longitude: return pick(["longitude", "lon", "lng", "long"])
      case .radius: return pick(["radius", "radius_m", "Radius_Meters", "radius_metres"])
      case .metadata(let key): return key
      }
    }
    let newline = pick(["\n", "\n", "\r\n", "\r"])
    let d = String(delimiter)
    var out = chance(0.15) ? "\u{FEFF}" : ""
    out += columns.map { field(headerName($0), delimiter: delimiter) }.joined(separator: d)
    out += newline
    var ids: [String] = []
    for _ in 0..<(20 + below(100)) {
      if chance(0.03) { out += newline }
      var cells: [String] = []
      for column in columns {
        switch column {
        case .id:
          let id = id(ids)
          ids.append(id)
          cells.append(id)
        case .name: cells.append(text())
        case .latitude, .longitude, .radius: cells.append(number(column, comma: comma))
        case .metadata:
          cells.append(chance(0.3) ? "" : chance(0.2) ? number(.radius, comma: false) : text())
        }
      }
      if chance(0.05) { cells.removeLast(1 + below(cells.count)) }
      if chance(0.05) { cells += (0...below(2)).map { _ in pick(["", " ", "x", "\t"]) } }
      out += cells.map { field($0, delimiter: delimiter) }.joined(separator: d)
      out += newline
    }
    if chance(0.05) { out += "x\(d)\"unterminated\(newline)more" }
    if chance(0.2) { out.removeLast() }
    var bytes = [UInt8](out.utf8)
    if chance(0.1) {
      // ISO-8859-1: scalars beyond U+00FF become `?`, so the file is not UTF-8 when it holds
      // any byte over 0x7F.
      bytes = out.unicodeScalars.map { $0.value < 0x100 ? UInt8($0.value) : UInt8(ascii: "?") }
    }
    if chance(0.05) {
      for _ in 0..<(1 + below(4)) { bytes.insert(0, at: below(bytes.count + 1)) }
    }
    let radius: Double? = pick([nil, 1500, 1500, 0.5, -5, 1e-320, .infinity])
    return (Data(bytes), radius, delimiter)
  }
}

@Suite struct CSVDirectRowTests {
  @Test func directRowsEqualTheGeneralPathOnRandomFiles() {
    var directRows = 0
    var generalRows = 0
    for seed in UInt64(1)...400 {
      var fuzzer = CSVFuzzer(random: SeededGenerator(seed: seed))
      let (data, radius, delimiter) = fuzzer.file()
      let direct = load(data, radius: radius, rows: .direct)
      let general = load(data, radius: radius, rows: .general)
      expectSame(direct, general, "seed \(seed)")
      let split = Self.rowsTaken(data, delimiter: delimiter, radius: radius)
      directRows += split.direct
      generalRows += split.general
    }
    // Both paths are exercised: many rows are in the common form, many are not (files whose
    // extra columns repeat a field's name, "id" or "lat", are refused whole, by both).
    #expect(directRows > 5_000, "\(directRows) rows direct, \(generalRows) general")
    #expect(generalRows > 3_000, "\(directRows) rows direct, \(generalRows) general")
  }

  @Test func directRowsEqualTheGeneralPathOnThePlaceSets() throws {
    let places = TestPaths.data.appendingPathComponent("places")
    for name in [
      "rg_cities1000_geofences.csv", "geonames_cities15000.csv", "airports_geofences.csv",
      "osm_places_hawaii.csv",
    ] {
      let data = try Data(contentsOf: places.appendingPathComponent(name))
      expectSame(
        load(data, radius: 1500, rows: .direct, file: name),
        load(data, radius: 1500, rows: .general, file: name), name)
    }
  }

  @Test func handWrittenRowsOfEachFormLoadAsThroughTheGeneralPath() {
    // Each line a row form: plain, padded, quoted, blank cells, bad numbers, extra fields,
    // a duplicate, an id whose first definition is rejected, decimal commas.
    let files = [
      "id,name,lat,lon,radius,kind\na,Alpha,1,2,3,town\n b ,Beta,1,2,,\nc,\" \",1,2,3, \n"
        + "a,Dup,1,2,3,x\nd,,91,2,3,\nd,Delta,-0.0,180,1e-3,\ne,x,1,2,3,y,\ne,x,1,2,3,y,z\n"
        + "f,\"F\"\"\",1,2,0,\ng,G,1,2, 5,\"\"\n",
      "ID;Lat;Long;Name;Radius\nx;46,5;7,25;Zürich;100\ny;46.5;7.25; Bern ;\nz;46,5;7;;-1\n",
      "id\tlatitude\tlongitude\nt1\t1\t2\nt2\t\"1\t\"\t2\n\"t3\"\t1,5\t2,5\n",
    ]
    for (k, text) in files.enumerated() {
      for radius in [nil, 250] as [Double?] {
        let data = Data(text.utf8)
        expectSame(
          load(data, radius: radius, rows: .direct), load(data, radius: radius, rows: .general),
          "file \(k), radius \(radius as Any)")
      }
    }
  }

  /// How many data rows of `data` the direct path takes and how many it leaves to the general
  /// path, each row tried alone on an empty load (so duplicates count as taken).
  static func rowsTaken(_ data: Data, delimiter: Character, radius: Double?) -> (
    direct: Int, general: Int
  ) {
    var direct = 0
    var general = 0
    var reader: GeofenceFileReader.CSVRowReader?
    _ = DelimitedText.withDecodedUTF8(data) { bytes in
      DelimitedText.forEachRecord(utf8: bytes, delimiter: delimiter.asciiValue ?? 0) {
        fields, line in
        guard var rows = reader else {
          let header = (0..<fields.count).map { fields.string($0) }
          if let layout = try? GeofenceFileReader.CSVLayout(header: header, file: "f") {
            reader = GeofenceFileReader.CSVRowReader(
              layout: layout, decimalComma: delimiter != ",", path: .direct)
          }
          return
        }
        var accumulator = GeofenceLoadAccumulator(file: "f", defaultRadiusMeters: radius)
        if rows.readDirectly(fields, line: line, into: &accumulator) {
          direct += 1
        } else {
          general += 1
        }
      }
    }
    return (direct, general)
  }
}
