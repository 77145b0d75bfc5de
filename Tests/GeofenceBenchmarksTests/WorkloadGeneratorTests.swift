import GeofenceGeometry
import Testing

@testable import GeofenceBenchmarks

@Suite struct WorkloadGeneratorTests {
  static let generatedKinds: [WorkloadKind] = [.metro, .global, .mixed, .transitions]

  @Test(arguments: generatedKinds)
  func sameSeedSameWorkload(kind: WorkloadKind) {
    let a = WorkloadGenerator.make(kind: kind, regionCount: 300, fixCount: 2_500, seed: 7)
    let b = WorkloadGenerator.make(kind: kind, regionCount: 300, fixCount: 2_500, seed: 7)
    let c = WorkloadGenerator.make(kind: kind, regionCount: 300, fixCount: 2_500, seed: 8)
    #expect(a.regions == b.regions)
    #expect(a.fixes == b.fixes)
    #expect(a.fixTimes == b.fixTimes)
    #expect(a.trackStarts == b.trackStarts)
    #expect(a.regions != c.regions)
    #expect(a.fixes != c.fixes)
  }

  @Test(arguments: generatedKinds)
  func shapeOfTracks(kind: WorkloadKind) {
    let w = WorkloadGenerator.make(kind: kind, regionCount: 50, fixCount: 2_500, seed: 1)
    #expect(w.regions.count == 50)
    #expect(w.fixes.count == 2_500)
    #expect(w.trackStarts == [0, 1_000, 2_000, 2_500])
    for k in 0..<w.trackCount {
      let times = w.trackRange(k).map { w.fixTimes[$0] }
      if kind == .transitions {
        #expect(times.first == 0)
        let steps = Set(zip(times, times.dropFirst()).map { $1 - $0 })
        #expect(steps == [1, WorkloadGenerator.boundaryLegGapSeconds])
      } else {
        #expect(times == (0..<times.count).map(Double.init))
      }
    }
  }

  @Test func fixesDoNotDependOnRegionCount() {
    for kind in [WorkloadKind.metro, .global, .mixed] {
      let a = WorkloadGenerator.make(kind: kind, regionCount: 10, fixCount: 1_000, seed: 3)
      let b = WorkloadGenerator.make(kind: kind, regionCount: 1_000, fixCount: 1_000, seed: 3)
      #expect(a.fixes == b.fixes, "\(kind)")
    }
  }

  @Test func metroStaysInTheCityBox() {
    let w = WorkloadGenerator.make(kind: .metro, regionCount: 5_000, fixCount: 20_000, seed: 11)
    let box = WorkloadGenerator.cityBox
    for r in w.regions {
      #expect(box.contains(r.center))
      #expect((50.0...500.0).contains(r.radiusMeters))
    }
    #expect(w.fixes.allSatisfy { box.contains($0) })
    // Box side is 55 km.
    let side = haversineDistance(
      Coordinate(uncheckedLatitude: box.minLatitude, longitude: 2.35),
      Coordinate(uncheckedLatitude: box.maxLatitude, longitude: 2.35))
    #expect(abs(side - 55_000) < 1)
    // Consecutive fixes are one second at 1.5-15 m/s apart.
    var maxStep = 0.0
    for k in 0..<w.trackCount {
      for f in w.trackRange(k).dropFirst() {
        maxStep = max(maxStep, haversineDistance(w.fixes[f - 1], w.fixes[f]))
      }
    }
    #expect(maxStep <= 15.000001)
  }

  @Test func globalIsAreaUniformAndReachesPolesAndAntimeridian() {
    let w = WorkloadGenerator.make(kind: .global, regionCount: 20_000, fixCount: 20_000, seed: 5)
    #expect(w.regions.allSatisfy { (100.0...5_000.0).contains($0.radiusMeters) })
    // Area-uniform: about half the centres have |latitude| < 30° (sin 30° = 0.5).
    let low = w.regions.filter { abs($0.center.latitude) < 30 }.count
    #expect(abs(Double(low) / 20_000 - 0.5) < 0.02)
    let north = w.regions.filter { $0.center.latitude > 0 }.count
    #expect(abs(Double(north) / 20_000 - 0.5) < 0.02)
    #expect(w.fixes.contains { abs($0.latitude) > 89.8 })
    #expect(w.fixes.contains { $0.longitude > 179.9 })
    #expect(w.fixes.contains { $0.longitude < -179.9 })
    #expect(
      w.fixes.allSatisfy {
        (-90.0...90.0).contains($0.latitude) && (-180.0...180.0).contains($0.longitude)
      })
    // Steps across the antimeridian and the poles are still short on the sphere.
    var maxStep = 0.0
    for k in 0..<w.trackCount {
      for f in w.trackRange(k).dropFirst() {
        maxStep = max(maxStep, haversineDistance(w.fixes[f - 1], w.fixes[f]))
      }
    }
    #expect(maxStep <= 15.000001)
  }

  /// Every global set, even of 10 regions, has pairs to compare, and some are in regions that
  /// straddle the antimeridian or cover a pole (by haversine distance, not the engine's test).
  @Test func globalHubsGivePairsAtTheEdges() {
    let hubs = WorkloadGenerator.globalHubs(seed: 1)
    #expect(hubs.count == WorkloadGenerator.globalHubCount)
    for n in [10, 64, 3_000] {
      let w = WorkloadGenerator.make(kind: .global, regionCount: n, fixCount: 25_000, seed: 1)
      #expect(w.regions.prefix(64).map(\.center) == Array(hubs.prefix(n)))
      var pairs = 0
      var antimeridian = 0
      var polar = 0
      for fix in w.fixes {
        for region in w.regions.prefix(64)
        where haversineDistance(fix, region.center) <= region.radiusMeters {
          pairs += 1
          let c = region.center
          if 180 - abs(c.longitude) < 0.001 && (abs(fix.longitude) > 179.99) {
            antimeridian += 1
          }
          if 90 - abs(c.latitude) < 0.02 && 90 - abs(fix.latitude) < 0.05 { polar += 1 }
        }
      }
      // Tracks 2, 12 and 22 start inside hubs 0, 1 and 2 (antimeridian, north pole, uniform).
      #expect(pairs > 300, "N = \(n)")
      #expect(antimeridian > 0 && polar > 0, "N = \(n): \(antimeridian) \(polar)")
    }
  }

  @Test func mixedSpansItsRadii() {
    let w = WorkloadGenerator.make(kind: .mixed, regionCount: 20_000, fixCount: 5_000, seed: 9)
    let box = WorkloadGenerator.regionalBox
    #expect(w.regions.allSatisfy { (20.0...50_000.0).contains($0.radiusMeters) })
    #expect(w.regions.allSatisfy { box.contains($0.center) })
    #expect(w.fixes.allSatisfy { box.contains($0) })
    let large = w.regions.filter { $0.radiusMeters > 1_000 }.count
    #expect(abs(Double(large) / 20_000 - 0.02) < 0.005)
    #expect(w.regions.contains { $0.radiusMeters < 25 })
    #expect(w.regions.contains { $0.radiusMeters > 30_000 })
  }

  @Test func transitionTracksCrossBoundariesEveryFewFixes() {
    let w = WorkloadGenerator.make(kind: .transitions, regionCount: 2_000, fixCount: 5_000, seed: 4)
    let metro = WorkloadGenerator.make(kind: .metro, regionCount: 2_000, fixCount: 10, seed: 4)
    #expect(w.regions == metro.regions)
    // Count transitions with a brute-force membership diff.
    var transitions = 0
    for k in 0..<w.trackCount {
      var previous: Set<Int> = []
      for f in w.trackRange(k) {
        let v = UnitVector(w.fixes[f])
        let now = Set(w.regions.indices.filter { w.regions[$0].contains(v) })
        if f > w.trackRange(k).lowerBound { transitions += now.symmetricDifference(previous).count }
        previous = now
      }
    }
    // At least one transition every 5 fixes.
    #expect(transitions >= w.fixes.count / 5)
    // Steps within a leg stay under the detector's default outlier speed (70 m/s).
    var maxStep = 0.0
    for k in 0..<w.trackCount {
      for f in w.trackRange(k).dropFirst() where w.fixTimes[f] - w.fixTimes[f - 1] == 1 {
        maxStep = max(maxStep, haversineDistance(w.fixes[f - 1], w.fixes[f]))
      }
    }
    #expect(maxStep < 70)
  }
}
