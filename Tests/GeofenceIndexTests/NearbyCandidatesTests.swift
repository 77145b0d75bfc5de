import GeofenceGeometry
import GeofenceIndex
import GeofenceTestSupport
import Testing

/// `forEachCandidate(near:withinMeters:)` against a brute-force scan: every region whose edge
/// is within the distance is given, removed ones never, and small searches stay local.
@Suite struct NearbyCandidatesTests {
  enum Layout: String, CaseIterable {
    case city, global, antimeridian, polar, mixedSizes
  }

  static func regions(_ layout: Layout, count: Int, random: inout SeededGenerator)
    -> [CircularRegion]
  {
    (0..<count).map { _ in
      let lat: Double
      let lon: Double
      var radius = Double.random(in: 50...500, using: &random)
      switch layout {
      case .city:
        lat = Double.random(in: 46.9...47.1, using: &random)
        lon = Double.random(in: 6.8...7.1, using: &random)
      case .global:
        lat = Double.random(in: -89...89, using: &random)
        lon = Double.random(in: -180...180, using: &random)
        radius = Double.random(in: 100...50_000, using: &random)
      case .antimeridian:
        lat = Double.random(in: -10...10, using: &random)
        lon =
          Double.random(in: 0...1, using: &random) < 0.5
          ? Double.random(in: 179.9...180, using: &random)
          : Double.random(in: -180 ... -179.9, using: &random)
      case .polar:
        lat = Double.random(in: 89.8...90, using: &random)
        lon = Double.random(in: -180...180, using: &random)
      case .mixedSizes:
        lat = Double.random(in: 40...50, using: &random)
        lon = Double.random(in: 0...10, using: &random)
        radius =
          Double.random(in: 0...1, using: &random) < 0.1
          ? Double.random(in: 10_000...300_000, using: &random) : radius
      }
      return try! CircularRegion(
        center: Coordinate(latitude: lat, longitude: lon), radiusMeters: radius)
    }
  }

  @Test(arguments: Layout.allCases)
  func givesEveryRegionWithinTheDistance(layout: Layout) {
    var random = SeededGenerator(seed: 20_261_202 &+ UInt64(layout.rawValue.utf8.count))
    var regions = Self.regions(layout, count: 3_000, random: &random)
    var index = GridIndex(regions: regions)
    // Some removals and pending inserts as well.
    for slot in stride(from: 0, to: 3_000, by: 17) { index.remove(at: Int32(slot)) }
    for extra in Self.regions(layout, count: 40, random: &random) {
      _ = index.insert(extra)
      regions.append(extra)
    }
    var missing = 0
    var extraRemoved = 0
    var given = 0
    for _ in 0..<300 {
      let anchor = regions[Int.random(in: 0..<regions.count, using: &random)].center
      let point = try! Coordinate(
        latitude: min(
          90, max(-90, anchor.latitude + Double.random(in: -0.05...0.05, using: &random))),
        longitude: layout == .antimeridian
          ? (Double.random(in: 0...1, using: &random) < 0.5 ? 180 : -180)
          : anchor.longitude)
      let meters = Double.random(in: 0...20_000, using: &random)
      var seen = Set<Int32>()
      index.forEachCandidate(near: point, withinMeters: meters) { slot in
        seen.insert(slot)
        if index.isRemoved(slot) { extraRemoved += 1 }
      }
      given += seen.count
      for (slot, region) in regions.enumerated() where !index.isRemoved(Int32(slot)) {
        let edge = max(0, haversineDistance(region.center, point) - region.radiusMeters)
        if edge <= meters && !seen.contains(Int32(slot)) { missing += 1 }
      }
    }
    #expect(missing == 0, "\(layout): \(missing) regions within the distance not given")
    #expect(extraRemoved == 0)
    #expect(given > 0)
  }

  @Test func aSmallSearchInACityStaysLocal() {
    var random = SeededGenerator(seed: 7)
    let regions = Self.regions(.city, count: 20_000, random: &random)
    let index = GridIndex(regions: regions)
    var total = 0
    let point = try! Coordinate(latitude: 47, longitude: 6.95)
    index.forEachCandidate(near: point, withinMeters: 300) { _ in total += 1 }
    // Brute force: regions whose edge is within 300 m.
    let within = regions.filter { haversineDistance($0.center, point) - $0.radiusMeters <= 300 }
    #expect(total >= within.count)
    // The city is 22 km × 23 km; a 300 m search visits a few cells, not the city.
    #expect(total < regions.count / 20, "\(total) candidates of \(regions.count)")
  }

  @Test func outOfRangeOrHugeSearchesGiveEveryLiveRegion() {
    var random = SeededGenerator(seed: 9)
    let regions = Self.regions(.global, count: 500, random: &random)
    var index = GridIndex(regions: regions)
    index.remove(at: 3)
    var count = 0
    index.forEachCandidate(
      near: Coordinate(uncheckedLatitude: 95, longitude: 0), withinMeters: 10
    ) { _ in count += 1 }
    #expect(count == 499)
    count = 0
    index.forEachCandidate(near: try! Coordinate(latitude: 0, longitude: 0), withinMeters: .nan) {
      _ in count += 1
    }
    #expect(count == 499)
  }
}
