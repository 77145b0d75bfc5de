import GeofenceGeometry
import GeofenceTestSupport
import Testing

@testable import TrackFormats

/// ``FixLineParser``'s path for the common member order against the general parser, its
/// oracle: on seeded lines in the common form, in other orders, with spaces, escapes,
/// missing or `null` accuracy, RFC 3339 and epoch times, and with one byte changed, both give
/// the same fix or the same failure, and the common path takes only lines the general one
/// reads as that fix.
@Suite struct FixLineParserCommonFormTests {
  /// A fix line from `random`: mostly the common form, else one of its variations.
  static func line(_ random: inout SeededGenerator) -> String {
    let devices = [
      "t12", "phone-1", "a", "device-with-a-longer-name-0042", #"d\u00e9v"#, "dév", #"a\"b"#,
      "", " ", "x\u{7F}",
    ]
    let device = devices[Int.random(in: 0..<devices.count, using: &random)]
    let times = [
      "1700000123.5", "1700000000.0", "1796014800", "1.7960148e9", #""2026-11-30T05:00:00Z""#,
      #""2026-11-30T05:00:00.125+02:00""#, #""2026-11-30T05:00:00""#, "315964799", "-1",
      "4102444800.5", "17000001235", "1700000123.50", "01700000000",
    ]
    let time = times[Int.random(in: 0..<times.count, using: &random)]
    func coordinate(_ limit: Double) -> String {
      switch Int.random(in: 0..<8, using: &random) {
      case 0: return "0"
      case 1: return "\(limit)"
      case 2: return "\(limit + 0.5)"
      case 3: return "-\(Int.random(in: 0...Int(limit), using: &random))"
      default: return "\(Double.random(in: -limit...limit, using: &random))"
      }
    }
    var members = [
      #""device_id":"\#(device)""#, #""time":\#(time)"#, #""latitude":\#(coordinate(90))"#,
      #""longitude":\#(coordinate(180))"#,
    ]
    switch Int.random(in: 0..<4, using: &random) {
    case 0: members.append(#""accuracy":null"#)
    case 1: members.append(#""accuracy":\#(Double.random(in: 0...100, using: &random))"#)
    case 2: members.append(#""accuracy":-3"#)
    default: break
    }
    switch Int.random(in: 0..<10, using: &random) {
    case 0: members.shuffle(using: &random)
    case 1: members.insert(#""speed":1.5"#, at: Int.random(in: 0...members.count, using: &random))
    case 2: members.append(members[Int.random(in: 0..<members.count, using: &random)])
    case 3: members.removeLast()
    default: break
    }
    let separator = Int.random(in: 0..<10, using: &random) == 0 ? ", " : ","
    var text = "{" + members.joined(separator: separator) + "}"
    switch Int.random(in: 0..<12, using: &random) {
    case 0: text += " "
    case 1: text = " " + text
    case 2: text += "x"
    case 3:
      // One byte changed, anywhere.
      var bytes = Array(text.utf8)
      bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(
        in: 0x20...0x7E, using: &random)
      text = String(decoding: bytes, as: UTF8.self)
    default: break
    }
    return text
  }

  static func same(
    _ a: Result<StreamFix, FixLineParser.Failure>, _ b: Result<StreamFix, FixLineParser.Failure>
  ) -> Bool {
    switch (a, b) {
    case (.success(let x), .success(let y)):
      return x.deviceID == y.deviceID && x.fix == y.fix
    case (.failure(let x), .failure(let y)):
      return x.description == y.description
    default:
      return false
    }
  }

  @Test(arguments: [1, 2, 3, 4] as [UInt64])
  func agreesWithTheGeneralParser(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    var common = 0
    for _ in 0..<20_000 {
      let text = Self.line(&random)
      Array(text.utf8).withUnsafeBufferPointer { line in
        let general = FixLineParser.parseAnyForm(line)
        if let fix = FixLineParser.parseCommonForm(line) {
          common += 1
          #expect(
            Self.same(.success(fix), general), "seed \(seed): \(text) (the common path)")
        }
        #expect(Self.same(FixLineParser.parse(line), general), "seed \(seed): \(text)")
      }
    }
    // Most lines take the common path, so both paths are compared.
    #expect(common > 1_000, "seed \(seed)")
  }

  @Test func readsTheCommonFormAsTheGeneralParserDoes() throws {
    let text =
      #"{"device_id":"t7","time":1700000123.25,"latitude":48.99991351797134,"longitude":2.613196899618344,"accuracy":null}"#
    let fix = try #require(
      Array(text.utf8).withUnsafeBufferPointer { FixLineParser.parseCommonForm($0) })
    #expect(fix.deviceID == "t7")
    #expect(fix.fix.time == 1_700_000_123.25)
    #expect(fix.fix.coordinate.latitude == 48.99991351797134)
    #expect(fix.fix.coordinate.longitude == 2.613196899618344)
    #expect(fix.fix.horizontalAccuracy == nil)
    #expect(fix.fix.sourceIndex == -1)
  }
}
