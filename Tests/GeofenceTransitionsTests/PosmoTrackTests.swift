import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

// A real phone track: a train ride from near Neuchâtel to Lausanne (2019-01-25, 52 minutes,
// 1,327 fixes) in which GNSS fixes alternate with network fixes (accuracy reported as 0) that
// jump 1-15 km and back within 5 s. Regions: the GeoNames towns within 5 km of the track, as
// 1.5 km discs.

/// The fields of one CSV line given as UTF-8 bytes, split on `separator`, honouring double
/// quotes ("" inside quotes is a quote).
private func fields(_ line: ArraySlice<UInt8>, separator: UInt8) -> [String] {
  let quote = UInt8(ascii: "\"")
  var out: [String] = []
  var field: [UInt8] = []
  var quoted = false
  var i = line.startIndex
  while i < line.endIndex {
    let c = line[i]
    if quoted {
      if c == quote {
        if i + 1 < line.endIndex && line[i + 1] == quote {
          field.append(quote)
          i += 1
        } else {
          quoted = false
        }
      } else {
        field.append(c)
      }
    } else if c == quote {
      quoted = true
    } else if c == separator {
      out.append(String(decoding: field, as: UTF8.self))
      field.removeAll(keepingCapacity: true)
    } else {
      field.append(c)
    }
    i += 1
  }
  out.append(String(decoding: field, as: UTF8.self))
  return out
}

/// The data lines (after the header) of a file, as UTF-8 byte slices without line ends.
private func dataLines(_ relativePath: String) throws -> [ArraySlice<UInt8>] {
  let bytes = [UInt8](try Data(contentsOf: TestPaths.data.appendingPathComponent(relativePath)))
  return bytes.split(separator: UInt8(ascii: "\n")).dropFirst().map { line in
    line.last == UInt8(ascii: "\r") ? line.dropLast() : line
  }
}

/// Seconds since the epoch of a zone-less `YYYY-MM-DD HH:MM:SS[.fraction]`, read as UTC.
private func utcSeconds(_ text: String) -> Double? {
  let parts = text.split(separator: " ")
  guard parts.count == 2 else { return nil }
  let date = parts[0].split(separator: "-").compactMap { Int($0) }
  let clock = parts[1].split(separator: ":")
  guard date.count == 3, clock.count == 3, let hh = Double(clock[0]), let mm = Double(clock[1]),
    let ss = Double(clock[2])
  else { return nil }
  // Days from civil (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
  let (y0, m, d) = (date[0], date[1], date[2])
  let y = m <= 2 ? y0 - 1 : y0
  let era = (y >= 0 ? y : y - 399) / 400
  let yoe = y - era * 400
  let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
  let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
  let days = era * 146_097 + doe - 719_468
  return Double(days) * 86_400 + hh * 3600 + mm * 60 + ss
}

struct Town {
  var id: String
  var name: String
  var center: Coordinate
}

struct PosmoFixture {
  var fixes: [LocationFix]
  var towns: [Town]
  var regions: RegionSet

  static func load() throws -> PosmoFixture {
    var fixes: [LocationFix] = []
    for (i, line) in try dataLines("tracks/csv/posmo_trajectory.csv").enumerated() {
      // user_id;longitude;latitude;accuracy;tracked_at (longitude first)
      let f = fields(line, separator: UInt8(ascii: ";"))
      guard f.count == 5, let lon = Double(f[1]), let lat = Double(f[2]) else { continue }
      fixes.append(
        LocationFix(
          coordinate: try Coordinate(latitude: lat, longitude: lon), time: utcSeconds(f[4]),
          horizontalAccuracy: Double(f[3]), deviceID: f[0], sourceIndex: i))
    }
    let lats = fixes.map(\.coordinate.latitude)
    let lons = fixes.map(\.coordinate.longitude)
    let (minLat, maxLat) = ((lats.min() ?? 0) - 0.1, (lats.max() ?? 0) + 0.1)
    let (minLon, maxLon) = ((lons.min() ?? 0) - 0.1, (lons.max() ?? 0) + 0.1)

    var towns: [Town] = []
    for line in try dataLines("places/rg_cities1000_geofences.csv") {
      // id,name,latitude,longitude,...
      let f = fields(line, separator: UInt8(ascii: ","))
      guard f.count >= 4, let lat = Double(f[2]), let lon = Double(f[3]),
        lat >= minLat, lat <= maxLat, lon >= minLon, lon <= maxLon
      else { continue }
      let center = try Coordinate(latitude: lat, longitude: lon)
      if fixes.contains(where: { haversineDistance($0.coordinate, center) <= 5000 }) {
        towns.append(Town(id: f[0], name: f[1], center: center))
      }
    }
    let regions = RegionSet(
      ids: towns.map(\.id),
      regions: try towns.map { try CircularRegion(center: $0.center, radiusMeters: 1500) })
    return PosmoFixture(fixes: fixes, towns: towns, regions: regions)
  }
}

@Suite("Real track: posmo train ride past 1.5 km towns")
struct PosmoTrackTests {
  @Test("defaults: each town entered at most once, in route order, without flapping")
  func defaultsStopFlapping() throws {
    let data = try PosmoFixture.load()
    #expect(data.fixes.count == 1327)
    #expect(data.towns.count >= 25)

    // Naive: d <= r both ways (no hysteresis, accuracy ignored, no filter).
    var naive = TransitionConfiguration()
    naive.hysteresisMinimumMeters = 0
    naive.hysteresisRadiusFraction = 0
    naive.outlierFilter = nil
    var withoutAccuracy = data.fixes
    for i in withoutAccuracy.indices { withoutAccuracy[i].horizontalAccuracy = nil }
    let naiveResult = TransitionDetector.replay(
      withoutAccuracy, regions: data.regions, configuration: naive)

    var hysteresisOnly = TransitionConfiguration()
    hysteresisOnly.outlierFilter = nil
    let hysteresisResult = TransitionDetector.replay(
      data.fixes, regions: data.regions, configuration: hysteresisOnly)

    let result = TransitionDetector.replay(data.fixes, regions: data.regions)

    func transitions(_ r: ReplayResult) -> [TransitionEvent] {
      r.events.filter { $0.type != .dwell }
    }
    func townsEntered(_ r: ReplayResult) -> Int {
      Set(r.events.filter { $0.type == .enter }.map(\.slot)).count
    }
    print(
      """
      posmo: \(data.towns.count) towns within 5 km; enter+exit events \
      naive \(transitions(naiveResult).count) (\(townsEntered(naiveResult)) towns), \
      hysteresis only \(transitions(hysteresisResult).count) (\(townsEntered(hysteresisResult)) towns), \
      defaults \(transitions(result).count) (\(townsEntered(result)) towns); \
      defaults drop \(result.dropCounts.nonZero.map { "\($0.reason.rawValue) \($0.count)" })
      """)
    for e in transitions(result) {
      let name = data.towns[Int(e.slot)].name
      print(
        "  \(e.type.rawValue) \(name) at +\(Int(e.fix.time! - data.fixes.compactMap(\.time).min()!)) s"
      )
    }

    #expect(transitions(naiveResult).count == 83)
    #expect(townsEntered(naiveResult) == 25)
    #expect(transitions(hysteresisResult).count == 77)
    #expect(transitions(result).count == 43)
    #expect(result.warnings.contains { $0.contains("out of time order") })
    #expect(result.dropCounts[.outlier] > 0)

    // Without the outlier filter some towns are entered repeatedly.
    let hysteresisEnters = hysteresisResult.events.filter { $0.type == .enter }
    #expect(Set(hysteresisEnters.map(\.slot)).count < hysteresisEnters.count)

    // Each town entered at most once.
    let enters = result.events.filter { $0.type == .enter }
    #expect(Set(enters.map(\.slot)).count == enters.count)
    #expect(enters.count >= 18)

    // No enter / exit / enter of one town within 10 minutes.
    var lastExit: [Int32: Double] = [:]
    for e in transitions(result) {
      if e.type == .exit { lastExit[e.slot] = e.fix.time! }
      if e.type == .enter, let x = lastExit[e.slot] {
        #expect(e.fix.time! - x > 600, "\(data.towns[Int(e.slot)].name) re-entered")
      }
    }

    // Route order: along-track position of each town on the GNSS part of the track (fixes
    // with a reported accuracy), which the network fixes do not influence; a town's position
    // is that of the nearest point of the polyline. Successive enters may go back by at most
    // one town diameter (3 km): neighbouring towns overlap.
    let gnss = data.fixes.filter { ($0.horizontalAccuracy ?? 0) > 0 }
      .sorted { $0.time! < $1.time! }
    var along: [Double] = [0]
    for (a, b) in zip(gnss, gnss.dropFirst()) {
      along.append(along.last! + haversineDistance(a.coordinate, b.coordinate))
    }
    func routePosition(_ slot: Int32) -> Double {
      // Nearest point on the polyline, in a local equirectangular plane (metres).
      let c = data.towns[Int(slot)].center
      let scale = cos(c.latitude * .pi / 180)
      func plane(_ p: Coordinate) -> (Double, Double) {
        (
          (p.longitude - c.longitude) * scale * metersPerDegree,
          (p.latitude - c.latitude) * metersPerDegree
        )
      }
      var best = (distance: Double.infinity, along: 0.0)
      for k in 0..<(gnss.count - 1) {
        let (ax, ay) = plane(gnss[k].coordinate)
        let (bx, by) = plane(gnss[k + 1].coordinate)
        let (dx, dy) = (bx - ax, by - ay)
        let length2 = dx * dx + dy * dy
        let u = length2 > 0 ? min(1, max(0, -(ax * dx + ay * dy) / length2)) : 0
        let (px, py) = (ax + u * dx, ay + u * dy)
        let distance = (px * px + py * py).squareRoot()
        if distance < best.distance {
          best = (distance, along[k] + u * (along[k + 1] - along[k]))
        }
      }
      return best.along
    }
    let positions = enters.map { routePosition($0.slot) }
    for (i, (a, b)) in zip(positions, positions.dropFirst()).enumerated() {
      #expect(
        b >= a - 3000,
        "\(data.towns[Int(enters[i + 1].slot)].name) entered after \(data.towns[Int(enters[i].slot)].name)"
      )
    }
  }
}
