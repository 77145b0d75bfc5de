import Foundation
import GeofenceTestSupport
import Testing

@testable import GeofenceDefinitions

// The JSON readers take the common shapes directly (`JSONDocument.directDefinition`,
// `directFeature`: no `JSONValue` object a definition), and opening a document takes the root's
// elements or members on its way (`skipRootTakingParts`). The oracles: the general reading
// forced for every element, and a document opened without those parts (`init(unchecked:)`),
// over seeded random texts of every form the readers meet (escapes, non-ASCII and invalid
// UTF-8, numbers out of range or not JSON, duplicate keys, nested values, missing commas).

/// Random JSON-ish text for definition and feature files.
private struct TextMaker {
  var rng: SeededGenerator
  /// Off for about half the elements: then every value is of the common shapes (plain
  /// strings, valid numbers) and the objects are well formed, so that those elements are
  /// the ones the direct readings take.
  var hostile = true

  mutating func pick<T>(_ options: [T]) -> T {
    options[Int.random(in: 0..<options.count, using: &rng)]
  }
  mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

  mutating func number() -> String {
    if !hostile {
      return chance(0.5)
        ? String(Double.random(in: -90...90, using: &rng))
        : pick(["0", "-0", "250", "1.5e2", "2.35", "48.850000000000001"])
    }
    return pick([
      "48.85", "-0", "0", "2.35", "1e400", "-1e400", "1.5e3", "01", "NaN", "Infinity", "0x10",
      "91", "-180", "180.000000000000001", "500", "1e-320", "12345678901234567890", "-",
      String(Double.random(in: -90...90, using: &rng)),
      String(Double.random(in: 1...5000, using: &rng)),
    ])
  }

  mutating func string() -> String {
    if !hostile {
      return pick([
        "\"a\"", "\"caf\u{E9}\"", "\"  padded  \"", "\"id-\(Int.random(in: 0..<40, using: &rng))\"",
        "\"   \"", "\"x \"", "\"\u{A0}\"", "\"a\u{A0}\"", "\"geofence.refresh\"",
      ])
    }
    return pick([
      "\"a\"", "\"\"", "\"caf\u{E9}\"", "\"tab\\tescaped\"", "\"quote\\\"\"", "\"\\u00e9\"",
      "\"\\ud800\"", "\"raw\ttab\"", "\"  padded  \"",
      "\"id-\(Int.random(in: 0..<40, using: &rng))\"",
      "\"\u{1F600}\"", "\"x\\/y\"",
    ])
  }

  mutating func value(depth: Int = 0) -> String {
    switch Int.random(in: 0..<(hostile ? 10 : 8), using: &rng) {
    case 0...3: return number()
    case 4...6: return string()
    case 7: return pick(["null", "true", "false", "nul", "True"])
    case 8: return depth > 1 ? "1" : "{\"k\":\(value(depth: depth + 1))}"
    default: return depth > 1 ? "2" : "[\(value(depth: depth + 1)),\(number())]"
    }
  }

  mutating func key(_ known: [String]) -> String {
    hostile && chance(0.1)
      ? pick(["\"caf\u{E9}\"", "\"la\\u0074itude\"", "\"extra\"", "\"\""]) : "\"\(pick(known))\""
  }

  mutating func space() -> String { chance(0.2) ? pick([" ", "\n", "\r\n", "\t ", "  \n  "]) : "" }

  mutating func object(_ members: [(String, String)]) -> String {
    var parts = members.map { "\(space())\($0.0)\(space()):\(space())\($0.1)" }
    if hostile, chance(0.05), !parts.isEmpty { parts.append(parts[0]) }  // a duplicate key
    var text = "{" + parts.joined(separator: ",") + space() + "}"
    if hostile, chance(0.02) { text = text.replacingOccurrences(of: ",", with: " ") }  // no commas
    return text
  }

  /// An id: a string, or (one time in four) an integer as the plain readings take it or
  /// just outside what they take (leading zero, 16 digits, sign, fraction, exponent).
  mutating func id() -> String {
    guard chance(0.25) else { return string() }
    return pick([
      "\(Int.random(in: 0..<40, using: &rng))", "0", "007", "-5", "4.0", "4e1",
      "123456789012345", "1234567890123456", "9007199254740993",
    ])
  }

  mutating func definition() -> String {
    hostile = chance(0.5)
    let keys = ["id", "latitude", "longitude", "radius", "name", "metadata", "geometry", "note"]
    var members: [(String, String)] = []
    if chance(0.9) { members.append(("\"id\"", chance(0.8) ? id() : value())) }
    if chance(0.9) { members.append(("\"latitude\"", chance(0.8) ? number() : value())) }
    if chance(0.9) { members.append(("\"longitude\"", chance(0.8) ? number() : value())) }
    if chance(0.7) { members.append(("\"radius\"", chance(0.8) ? number() : value())) }
    for _ in 0..<Int.random(in: 0..<(hostile ? 3 : 1), using: &rng) {
      members.append((key(keys), value()))
    }
    members.shuffle(using: &rng)
    return chance(0.03) ? value() : object(members)
  }

  /// A number of features or definitions in `count`.
  mutating func elements(features: Bool, count: Range<Int>) -> [String] {
    (0..<Int.random(in: count, using: &rng)).map { _ in features ? feature() : definition() }
  }

  mutating func feature() -> String {
    hostile = chance(0.5)
    var geometry: [(String, String)] = []
    if chance(0.95) {
      geometry.append(
        ("\"type\"", chance(0.9) ? "\"Point\"" : pick(["\"Polygon\"", "\"Line\"", "3"])))
    }
    if chance(0.95) {
      let count = pick([2, 2, 2, 3, 3, 4, 1, 0])
      let coordinates = (0..<count).map { _ in chance(0.9) ? number() : value(depth: 2) }
      geometry.append(
        ("\"coordinates\"", chance(0.95) ? "[\(coordinates.joined(separator: ","))]" : value()))
    }
    if chance(0.05) { geometry.append(("\"bbox\"", "[1,2]")) }
    var properties: [(String, String)] = []
    if chance(0.7) { properties.append(("\"radius\"", chance(0.8) ? number() : value())) }
    if chance(0.4) { properties.append(("\"name\"", string())) }
    if chance(0.2) { properties.append(("\"id\"", id())) }
    for _ in 0..<Int.random(in: 0..<3, using: &rng) {
      properties.append((key(["color", "metadata", "kind", "radius"]), value()))
    }
    var members: [(String, String)] = []
    if chance(0.97) { members.append(("\"type\"", chance(0.95) ? "\"Feature\"" : "\"Other\"")) }
    if chance(0.8) { members.append(("\"id\"", chance(0.8) ? id() : value())) }
    if chance(0.97) { members.append(("\"geometry\"", chance(0.95) ? object(geometry) : value())) }
    if chance(0.9) {
      members.append(
        ("\"properties\"", chance(0.9) ? object(properties) : pick(["null", "3", "[]"])))
    }
    members.shuffle(using: &rng)
    return object(members)
  }
}

/// Reads a JSON or GeoJSON file with the direct readings on or off; the thrown error as a value.
private func load(_ data: Data, direct: Bool) -> Result<GeofenceLoadResult, GeofenceFileError> {
  var accumulator = GeofenceLoadAccumulator(file: "fuzz.json", defaultRadiusMeters: 250)
  do throws(GeofenceFileError) {
    guard case .whole(let document) = try GeofenceFileReader.parseJSON(data, file: "fuzz.json")
    else { return .failure(GeofenceFileError(file: "fuzz.json", reason: .empty)) }
    if document.kind(of: document.root) == .array {
      let elements: [JSONSpan]
      do { elements = try document.elements(of: document.root) } catch {
        return .failure(
          GeofenceFileError(file: "fuzz.json", reason: .malformedJSON(error.description)))
      }
      GeofenceFileReader.readElements(
        elements, of: .definitions, in: document, into: &accumulator, direct: direct)
    } else {
      try GeofenceFileReader.readFeatureCollection(
        document.root, in: document, file: "fuzz.json", into: &accumulator, direct: direct)
    }
  } catch {
    return .failure(error)
  }
  return .success(accumulator.result)
}

@Suite struct JSONDirectTests {
  /// Definition lists and feature collections of random elements: the direct readings give
  /// the same load, bit for bit and word for word, as the general reading of every element.
  @Test(arguments: 0..<12)
  func directEqualsGeneral(seed: Int) {
    var maker = TextMaker(rng: SeededGenerator(seed: UInt64(seed) &+ 500))
    var (elementCount, directCount, plainCount) = (0, 0, 0)
    for round in 0..<40 {
      let features = round % 2 == 1
      let elements = maker.elements(features: features, count: 1..<30)
      let list = "[" + elements.joined(separator: "," + maker.space()) + "]"
      let text = features ? "{\"type\":\"FeatureCollection\",\"features\":\(list)}" : list
      let data = Data(text.utf8)
      if let document = try? JSONDocument(bytes: data),
        let list = features
          ? (try? document.members(of: document.root).last?.value) : document.root,
        let spans = try? document.elements(of: list)
      {
        elementCount += spans.count
        directCount +=
          spans.filter {
            (features ? document.directFeature($0) : document.directDefinition($0)) != nil
          }.count
        plainCount += document.bytes.withUnsafeBufferPointer { bytes in
          spans.filter {
            (features
              ? document.plainReading($0, of: .features, in: bytes)
              : document.plainReading($0, of: .definitions, in: bytes))
              != nil
          }.count
        }
      }
      let direct = load(data, direct: true)
      let general = load(data, direct: false)
      switch (direct, general) {
      case (.success(let a), .success(let b)):
        #expect(a == b, "seed \(seed) round \(round): \(text)")
      case (.failure(let a), .failure(let b)):
        #expect(a.description == b.description, "seed \(seed) round \(round)")
      default:
        Issue.record("seed \(seed) round \(round): \(direct) against \(general) for \(text)")
      }
    }
    // The direct readings take a good share of the elements, so that they are what is
    // compared, not only their fallbacks.
    #expect(directCount * 5 > elementCount, "seed \(seed): \(directCount) of \(elementCount)")
    #expect(plainCount * 30 > elementCount, "seed \(seed): \(plainCount) of \(elementCount)")
  }

  /// Elements of the common shapes are taken directly (so the comparison above covers the
  /// direct readings, not only their fallbacks).
  @Test func commonShapesAreDirect() throws {
    let list = try JSONDocument(
      bytes: Data(#"[{"id":"a","latitude":48.85,"longitude":2.35,"radius":200,"name":"A"}]"#.utf8))
    let definition = try #require(list.directDefinition(list.elements(of: list.root)[0]))
    #expect(definition.id == .string("a"))
    #expect(definition.latitude == .number(48.85))
    #expect(definition.radius == .number(200))
    let collection = try JSONDocument(
      bytes: Data(
        (#"{"type":"FeatureCollection","features":[{"type":"Feature","id":"b","#
          + #""geometry":{"type":"Point","coordinates":[2.35,48.85]},"#
          + #""properties":{"radius":150,"color":"red"}}]}"#).utf8))
    let features = try collection.elements(
      of: try #require(collection.members(of: collection.root).last?.value))
    let feature = try #require(collection.directFeature(features[0]))
    #expect(feature.id == .string("b"))
    #expect(feature.longitude == .number(2.35))
    #expect(feature.latitude == .number(48.85))
    #expect(feature.metadata == .object(["color": .string("red")]))
  }

  /// The plain readings give byte ranges and numbers for the commonest shapes, and the load
  /// records them as the general reading would: an integer id as its digits, a name of
  /// spaces as none, a duplicate id rejected at its element naming the first.
  @Test func plainReadingsOfCommonShapes() throws {
    let text =
      "[\n" + #"{"id":"a","latitude":48.85,"longitude":2.35,"radius":200,"name":"Gare A"},"#
      + "\n" + #"{"longitude":-1.5,"id":42,"latitude":-3.25,"name":"   "},"# + "\n"
      + #"{"id":"a","latitude":1,"longitude":2}"# + "\n]"
    let document = try JSONDocument(bytes: Data(text.utf8))
    let spans = try document.elements(of: document.root)
    let (first, second) = try document.bytes.withUnsafeBufferPointer { bytes in
      (
        try #require(document.plainReading(spans[0], of: .definitions, in: bytes)),
        try #require(document.plainReading(spans[1], of: .definitions, in: bytes))
      )
    }
    #expect(String(decoding: document.bytes[first.id], as: UTF8.self) == "a")
    #expect(first.latitude == 48.85 && first.longitude == 2.35 && first.radius == 200)
    #expect(first.name.map { String(decoding: document.bytes[$0], as: UTF8.self) } == "Gare A")
    #expect(String(decoding: document.bytes[second.id], as: UTF8.self) == "42")
    #expect(second.latitude == -3.25 && second.longitude == -1.5)
    #expect(second.radius == nil && second.name == nil)

    let loaded = try load(Data(text.utf8), direct: true).get()
    #expect(loaded.geofences.map(\.id) == ["a", "42"])
    #expect(loaded.geofences.map(\.name) == ["Gare A", nil])
    #expect(loaded.geofences[1].region.radiusMeters == 250)  // the default radius
    #expect(
      loaded.rejected
        == [
          GeofenceRejection(
            location: DefinitionLocation(file: "fuzz.json", position: .index(2), line: 4),
            id: "a",
            reason: .duplicateID(
              firstDefinedAt: DefinitionLocation(
                file: "fuzz.json", position: .index(0), line: 2)))
        ])
    #expect(loaded == (try load(Data(text.utf8), direct: false).get()))

    // Shapes left to the other readings: a padded id, an id with a leading zero or 16
    // digits, a name starting with a space, a null radius, an unknown member.
    for other in [
      #"{"id":" a","latitude":1,"longitude":2}"#, #"{"id":"a ","latitude":1,"longitude":2}"#,
      #"{"id":007,"latitude":1,"longitude":2}"#,
      #"{"id":1234567890123456,"latitude":1,"longitude":2}"#,
      #"{"id":"a","latitude":1,"longitude":2,"name":" b"}"#,
      #"{"id":"a","latitude":1,"longitude":2,"radius":null}"#,
      #"{"id":"a","latitude":1,"longitude":2,"note":1}"#,
    ] {
      let one = try JSONDocument(bytes: Data("[\(other)]".utf8))
      let span = try one.elements(of: one.root)[0]
      #expect(
        one.bytes.withUnsafeBufferPointer { one.plainReading(span, of: .definitions, in: $0) }
          == nil)
    }

    let collection = try JSONDocument(
      bytes: Data(
        (#"{"type":"FeatureCollection","features":[{"type":"Feature","#
          + #""geometry":{"type":"Point","coordinates":[2.35,48.85,35]},"#
          + #""properties":{"radius":150,"id":"b","name":"Caf\#u{E9}"}}]}"#).utf8))
    let features = try collection.elements(
      of: try #require(collection.members(of: collection.root).last?.value))
    let feature = try collection.bytes.withUnsafeBufferPointer {
      try #require(collection.plainReading(features[0], of: .features, in: $0))
    }
    #expect(String(decoding: collection.bytes[feature.id], as: UTF8.self) == "b")
    #expect(feature.longitude == 2.35 && feature.latitude == 48.85 && feature.radius == 150)
    #expect(
      feature.name.map { String(decoding: collection.bytes[$0], as: UTF8.self) } == "Caf\u{E9}")
  }

  /// A definition list or feature collection read in one pass (`readInOnePass`) loads what
  /// the two passes load, row for row, rejection for rejection and line for line, or fails
  /// with the same words: random elements (plain ones among them, some spread over lines
  /// with LF, CR LF or CR), in documents of every shape around them (a byte-order mark,
  /// `type` after `features`, other members, a repeated `features` or `type`, a single
  /// `Feature`, text after the root, a cut anywhere).
  @Test(arguments: 0..<8)
  func onePassEqualsTwoPasses(seed: Int) {
    var maker = TextMaker(rng: SeededGenerator(seed: UInt64(seed) &+ 1300))
    var (texts, onePass, plainRows) = (0, 0, 0)
    for round in 0..<50 {
      let features = round % 2 == 1
      let elements = maker.elements(features: features, count: 0..<90).map {
        maker.chance(0.1) ? $0.replacingOccurrences(of: ",", with: ",\r") : $0
      }
      let list = "[" + maker.space() + elements.joined(separator: "," + maker.space()) + "]"
      var text: String
      if features {
        var members = ["\"type\":\"FeatureCollection\"", "\"features\":\(list)"]
        if maker.chance(0.2) { members.append("\"bbox\":[1,2,3,4]") }
        if maker.chance(0.05) { members.append("\"features\":[]") }
        if maker.chance(0.05) { members.append("\"type\":\"FeatureCollection\"") }
        if maker.chance(0.05) { members[0] = "\"type\":\"Feature\\u0043ollection\"" }
        if maker.chance(0.05) { members[0] = "\"type\":\"Feature\"" }
        members.shuffle(using: &maker.rng)
        text = "{" + members.joined(separator: "," + maker.space()) + "}"
      } else {
        text = list
      }
      if maker.chance(0.1) { text = "\u{FEFF}" + maker.space() + text }
      if maker.chance(0.1) { text += maker.pick([" ", "\n", "x", "]", ",{}"]) }
      var data = Data(text.utf8)
      if maker.chance(0.1) { data = data.prefix(Int.random(in: 0...data.count, using: &maker.rng)) }
      func read(onePass: Bool) -> Result<GeofenceLoadResult, GeofenceFileError> {
        GeofenceFileReader.$readsJSONInOnePass.withValue(onePass) {
          Result { () throws(GeofenceFileError) in
            try GeofenceFileReader.read(
              data: data, format: features ? .geojson : .json, fileName: "one.json",
              defaultRadiusMeters: 250)
          }
        }
      }
      texts += 1
      if let read = GeofenceFileReader.readInOnePass(
        [UInt8](data), file: "one.json", defaultRadiusMeters: 250)
      {
        onePass += 1
        plainRows += read.result.count
      }
      switch (read(onePass: true), read(onePass: false)) {
      case (.success(let a), .success(let b)):
        #expect(a == b, "seed \(seed) round \(round): \(text)")
      case (.failure(let a), .failure(let b)):
        #expect(a.description == b.description, "seed \(seed) round \(round)")
      case (let a, let b):
        Issue.record("seed \(seed) round \(round): \(a) against \(b) for \(text)")
      }
    }
    // Most documents are read in one pass, so that the comparison covers it, not only the
    // fallback.
    #expect(onePass * 2 > texts, "seed \(seed): \(onePass) of \(texts)")
    #expect(plainRows > 50, "seed \(seed): \(plainRows) rows")
  }

  /// The one pass reserves the columns from the bytes its first elements take, but for at
  /// most 8 times the rows read so far: 64 short elements and one long name reserve for
  /// hundreds of rows, not for the millions their bytes a row would give; a file of equal
  /// elements gets room for about its rows.
  @Test func onePassReservesForTheRowsItCanExpect() throws {
    let short =
      "[" + String(repeating: "0,", count: 64)
      + #"{"id":"a","latitude":10,"longitude":20,"radius":100,"name":""#
      + String(repeating: "x", count: 1_000_000) + #""}]"#
    let skewed = try #require(
      GeofenceFileReader.readInOnePass(
        Array(short.utf8), file: "skewed.json", defaultRadiusMeters: nil))
    #expect(skewed.result.count == 1)
    #expect(skewed.result.columns.ids.capacity <= 8 * 64)
    let even =
      "["
      + (0..<5_000).map { #"{"id":"\#($0)","latitude":1,"longitude":2,"radius":10}"# }
      .joined(separator: ",") + "]"
    let regular = try #require(
      GeofenceFileReader.readInOnePass(
        Array(even.utf8), file: "even.json", defaultRadiusMeters: nil))
    #expect(regular.result.count == 5_000)
    #expect((5_000...5_600).contains(regular.result.columns.ids.capacity))
  }

  /// Opening a document takes the root's elements or members, and the `features` elements,
  /// on its way: the same spans, or the same errors, as finding them afterwards.
  @Test(arguments: 0..<6)
  func openedPartsEqualFoundParts(seed: Int) throws {
    var maker = TextMaker(rng: SeededGenerator(seed: UInt64(seed) &+ 900))
    for round in 0..<60 {
      let elements = (0..<Int.random(in: 0..<6, using: &maker.rng)).map { _ in
        round % 2 == 0 ? maker.definition() : maker.feature()
      }
      var list = "[" + elements.joined(separator: maker.chance(0.1) ? " " : ",") + "]"
      if maker.chance(0.1) { list = "[" + maker.space() + "]" }
      let text =
        round % 3 == 0
        ? list
        : "{\"type\":\"FeatureCollection\",\(maker.chance(0.1) ? "\"features\":[]," : "")"
          + "\"features\":\(list)\(maker.chance(0.2) ? ",\"bbox\":[1,2]" : "")}"
      guard let opened = try? JSONDocument(bytes: Data(text.utf8)) else { continue }
      let plain = JSONDocument(unchecked: opened.bytes, root: opened.root)
      func same<T: Equatable>(_ a: () throws -> T, _ b: () throws -> T) {
        switch (Result(catching: a), Result(catching: b)) {
        case (.success(let x), .success(let y)): #expect(x == y, "\(text)")
        case (.failure(let x), .failure(let y)):
          #expect(String(describing: x) == String(describing: y), "\(text)")
        default: Issue.record("one of the two failed for \(text)")
        }
      }
      if opened.kind(of: opened.root) == .array {
        same({ try opened.elements(of: opened.root) }, { try plain.elements(of: plain.root) })
      } else {
        same(
          { try opened.members(of: opened.root).map { "\($0.key) \($0.value)" } },
          { try plain.members(of: plain.root).map { "\($0.key) \($0.value)" } })
        for member in (try? plain.members(of: plain.root)) ?? [] {
          same({ try opened.elements(of: member.value) }, { try plain.elements(of: member.value) })
        }
      }
    }
  }
}
