import GeofenceGeometry
import GeofenceIndex
import GeofenceTestSupport
import GeofenceTransitions
import Testing

/// The planner's rules one by one, and its choice against a brute-force ranking.
@Suite struct RegionBudgetPlannerTests {
  static func circle(_ lat: Double, _ lon: Double, _ r: Double) -> CircularRegion {
    try! CircularRegion(center: Coordinate(latitude: lat, longitude: lon), radiusMeters: r)
  }

  static func point(_ lat: Double, _ lon: Double) -> Coordinate {
    try! Coordinate(latitude: lat, longitude: lon)
  }

  /// A random regional set: `n` circles of 100-2,000 m in a `span`° × `span`° square from
  /// (46, 6).
  static func randomSet(_ n: Int, seed: UInt64, span: Double = 1) -> RegionSet {
    var random = SeededGenerator(seed: seed)
    var geofences: [Geofence] = []
    for i in 0..<n {
      let region = circle(
        Double.random(in: 46...(46 + span), using: &random),
        Double.random(in: 6...(6 + span), using: &random),
        Double.random(in: 100...2_000, using: &random))
      geofences.append(Geofence(id: "g\(i)", region: region))
    }
    return RegionSet(geofences: geofences)
  }

  /// Sparse (1° square) and dense (0.05°: hundreds of candidates, many of them inside, so the
  /// selection and the id tie-break both work).
  @Test(arguments: [(1, 1.0), (2, 1.0), (20, 1.0), (100, 1.0), (20, 0.05), (100, 0.05)])
  func choosesTheNearestEdgesAsABruteForceRankingDoes(budget: Int, span: Double) {
    let set = Self.randomSet(5_000, seed: UInt64(budget), span: span)
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: budget))
    var random = SeededGenerator(seed: 99)
    for _ in 0..<50 {
      let p = Self.point(
        Double.random(in: 46...(46 + span), using: &random),
        Double.random(in: 6...(6 + span), using: &random))
      let accuracy = Double.random(in: 0...300, using: &random)
      let plan = planner.plan(position: p, accuracyMeters: accuracy, registered: [])
      // The oracle: every geofence within reach of the largest refresh circle (5 km plus
      // margin and accuracy), ranked by (edge distance, id bytes).
      let reach = 5_000 + 50 + accuracy
      var ranked: [(Double, String)] = []
      for slot in 0..<set.count {
        let r = set.region(at: Int32(slot))
        let d = RegionBudgetPlanner.edgeDistance(from: UnitVector(p), to: r)
        // The planner's chord formula is the haversine distance less the radius.
        let haversine = max(0, haversineDistance(r.center, p) - r.radiusMeters)
        #expect(abs(d - haversine) < 1e-6)
        if d <= reach { ranked.append((d, set.ids[slot])) }
      }
      ranked.sort { a, b in
        a.0 != b.0 ? a.0 < b.0 : Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
      }
      #expect(plan.ids == ranked.prefix(budget - 1).map(\.1))
      #expect(plan.edgeDistancesMeters == ranked.prefix(budget - 1).map(\.0))
      let next = ranked.count >= budget ? ranked[budget - 1].0 : .infinity
      #expect(plan.nextEdgeDistanceMeters == next)
      let expectedRadius = min(5_000, max(100, next - 50 - accuracy))
      #expect(abs(plan.refreshRadiusMeters - expectedRadius) < 1e-9)
      #expect(plan.refreshGuaranteed == (next - 50 - accuracy >= 100))
      #expect(plan.refreshCenter == p)
    }
  }

  @Test func theGeofenceTheDeviceIsInIsNeverEvictedForNearerCentres() {
    // A 5 km circle whose centre is 4 km away holds the device; 30 small circles have
    // centres 500-800 m away but edges 400-700 m away.
    var geofences = [Geofence(id: "zz-big", region: Self.circle(47.036, 7.0, 5_000))]
    for i in 0..<30 {
      let lat = 47.0 + 0.0045 + Double(i) * 0.0001
      geofences.append(Geofence(id: "small\(i)", region: Self.circle(lat, 7.0, 100)))
    }
    let set = RegionSet(geofences: geofences)
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: 3))
    let plan = planner.plan(position: Self.point(47.0, 7.0), accuracyMeters: 10, registered: [])
    #expect(plan.ids.first == "zz-big")
    #expect(plan.edgeDistancesMeters.first == 0)
    #expect(plan.ids.count == 2)
  }

  @Test func tiesAreBrokenByID() {
    let r = Self.circle(47, 7, 200)
    let set = RegionSet(geofences: [
      Geofence(id: "c", region: r), Geofence(id: "a", region: r), Geofence(id: "b", region: r),
    ])
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: 3))
    let plan = planner.plan(position: Self.point(47.01, 7), accuracyMeters: nil, registered: [])
    #expect(plan.ids == ["a", "b"])
    // "c" is as near as the chosen ones: the refresh circle stops 50 m short of their edge.
    #expect(plan.nextEdgeDistanceMeters == plan.edgeDistancesMeters[0])
    #expect(abs(plan.refreshRadiusMeters - (plan.nextEdgeDistanceMeters - 50)) < 1e-9)
    #expect(plan.refreshGuaranteed)
    // Inside all three: "c" is 0 m away, so the circle is clamped to 100 m, unguaranteed.
    let inside = planner.plan(position: Self.point(47, 7), accuracyMeters: nil, registered: [])
    #expect(inside.ids == ["a", "b"] && inside.nextEdgeDistanceMeters == 0)
    #expect(inside.refreshRadiusMeters == 100 && !inside.refreshGuaranteed)
  }

  @Test func theRefreshCircleComesFirstAndRemovalsBeforeIt() {
    let set = Self.randomSet(2_000, seed: 5)
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: 20))
    let first = planner.plan(position: Self.point(46.5, 6.5), accuracyMeters: 20, registered: [])
    #expect(first.registration.first == RegionBudgetPlanner.refreshIdentifier)
    #expect(first.registration.count == 20)
    let second = planner.plan(
      position: Self.point(46.6, 6.6), accuracyMeters: 20, registered: first.registration)
    let ops = second.operations
    let refresh = ops.firstIndex {
      if case .registerRefresh = $0 { return true } else { return false }
    }!
    for (i, op) in ops.enumerated() {
      switch op {
      case .remove: #expect(i < refresh)
      case .add: #expect(i > refresh)
      case .registerRefresh(let center, let radius):
        #expect(center == Self.point(46.6, 6.6) && radius == second.refreshRadiusMeters)
      }
    }
  }

  @Test func aSmallMoveChangesOnlyWhatItMustNoTeardown() {
    let set = Self.randomSet(5_000, seed: 11)
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: 20))
    var registration: [String] = []
    var random = SeededGenerator(seed: 12)
    var p = Self.point(46.5, 6.5)
    for _ in 0..<200 {
      let plan = planner.plan(position: p, accuracyMeters: 15, registered: registration)
      let before = Set(registration)
      let after = Set(plan.registration)
      // Only the symmetric difference is touched; what stays is neither removed nor added.
      #expect(Set(plan.removals) == before.subtracting(after))
      #expect(
        Set(plan.additions)
          == after.subtracting(before).subtracting([
            RegionBudgetPlanner.refreshIdentifier
          ]))
      // Applying the operations in order never exceeds the budget.
      var live = before
      for op in plan.operations {
        switch op {
        case .remove(let id): live.remove(id)
        case .registerRefresh: live.insert(RegionBudgetPlanner.refreshIdentifier)
        case .add(let id): live.insert(id)
        }
        #expect(live.count <= 20)
      }
      #expect(live == after)
      registration = plan.registration
      p = Self.point(
        p.latitude + Double.random(in: -0.003...0.003, using: &random),
        p.longitude + Double.random(in: -0.003...0.003, using: &random))
    }
  }

  @Test func failedRemovalsAndUnknownIDsAreRemovedAgain() {
    let set = Self.randomSet(1_000, seed: 13)
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: 5))
    let p = Self.point(46.5, 6.5)
    let plan = planner.plan(position: p, accuracyMeters: 0, registered: [])
    // The OS still reports a geofence a previous removal failed to drop, an id the set
    // no longer has, and one of the chosen ones.
    let stale = (0..<set.count).map { set.ids[$0] }.first { !plan.ids.contains($0) }!
    let again = planner.plan(
      position: p, accuracyMeters: 0, registered: [stale, "gone", plan.ids[0], stale])
    #expect(again.removals == [stale, "gone"])
    #expect(again.additions == Array(plan.ids.dropFirst()))
    var live = Set([stale, "gone", plan.ids[0]])
    for op in again.operations {
      switch op {
      case .remove(let id): live.remove(id)
      case .registerRefresh: live.insert(RegionBudgetPlanner.refreshIdentifier)
      case .add(let id): live.insert(id)
      }
      #expect(live.count <= 5)
    }
  }

  @Test func anEmptySetStillGetsARefreshCircle() {
    var planner = RegionBudgetPlanner(
      set: RegionSet(geofences: []), configuration: .init(budget: 20))
    let plan = planner.plan(position: Self.point(0, 0), accuracyMeters: 30, registered: ["old"])
    #expect(plan.ids.isEmpty)
    #expect(plan.refreshRadiusMeters == 5_000)
    #expect(plan.refreshGuaranteed)
    #expect(plan.nextEdgeDistanceMeters == .infinity)
    #expect(plan.removals == ["old"])
    #expect(plan.registration == [RegionBudgetPlanner.refreshIdentifier])
  }

  @Test func theRefreshRadiusIsTheNextEdgeLessMarginAndAccuracy() {
    // Centres 1, 2 and 3 km north (1 km ≈ 0.008993° of latitude), radius 100 m.
    let degreesPerMeter = 180 / (Double.pi * EarthModel.meanRadiusMeters)
    let set = RegionSet(
      geofences: (1...3).map {
        Geofence(
          id: "r\($0)", region: Self.circle(Double($0) * 1_000 * degreesPerMeter, 0, 100))
      })
    var planner = RegionBudgetPlanner(set: set, configuration: .init(budget: 2))
    let plan = planner.plan(position: Self.point(0, 0), accuracyMeters: 40, registered: [])
    #expect(plan.ids == ["r1"])
    // r2's edge is 1,900 m away: 1,900 − 50 − 40.
    #expect(abs(plan.nextEdgeDistanceMeters - 1_900) < 1e-6)
    #expect(abs(plan.refreshRadiusMeters - 1_810) < 1e-6)
  }
}

/// The OS simulator: with every plan guaranteed, a small budget reports what full
/// registration would.
@Suite struct OSRegionMonitorSimulatorTests {
  /// The boundary-rule transitions with every geofence registered (the oracle).
  static func fullRegistration(_ set: RegionSet, _ fixes: [LocationFix]) -> [String] {
    var inside = Array(repeating: false, count: set.count)
    var out: [String] = []
    for fix in fixes {
      for slot in 0..<set.count {
        let now =
          set.region(at: Int32(slot)).distance(to: fix.coordinate)
          <= set.radiusMeters(at: Int32(slot))
        if now != inside[slot] {
          inside[slot] = now
          out.append("\(fix.sourceIndex) \(now ? "enter" : "exit") \(set.ids[slot])")
        }
      }
    }
    return out.sorted()
  }

  @Test(arguments: [4, 5, 20])
  func aGuaranteedBudgetMissesNothing(budget: Int) {
    // Circles in a 67 × 46 km box (300 of 300-1,000 m) and a random walk with jumps, as
    // network fixes give.
    var random = SeededGenerator(seed: 2_026 &+ UInt64(budget))
    var geofences: [Geofence] = []
    for i in 0..<300 {
      geofences.append(
        Geofence(
          id: "g\(i)",
          region: RegionBudgetPlannerTests.circle(
            Double.random(in: 46.7...47.3, using: &random),
            Double.random(in: 7...7.6, using: &random),
            Double.random(in: 300...1_000, using: &random))))
    }
    let set = RegionSet(geofences: geofences)
    var fixes: [LocationFix] = []
    var lat = 47.0
    var lon = 7.3
    for i in 0..<4_000 {
      let step = Double.random(in: 0...1, using: &random) < 0.05 ? 0.02 : 0.002
      lat = min(47.3, max(46.7, lat + Double.random(in: -step...step, using: &random)))
      lon = min(7.6, max(7, lon + Double.random(in: -step...step, using: &random)))
      fixes.append(
        LocationFix(
          coordinate: RegionBudgetPlannerTests.point(lat, lon), time: Double(i) * 10,
          horizontalAccuracy: 20, sourceIndex: i))
    }
    var simulator = OSRegionMonitorSimulator(
      planner: RegionBudgetPlanner(set: set, configuration: .init(budget: budget)))
    let result = simulator.simulate(fixes)
    #expect(result.peakRegistered <= budget)
    #expect(result.plans > 10)
    let oracle = Self.fullRegistration(set, fixes)
    let simulated = result.transitions.map {
      "\($0.fixIndex) \($0.type.rawValue) \(set.id(at: $0.slot))"
    }.sorted()
    #expect(oracle.count > 20)
    // No fix is in more geofences than the budget holds beside the refresh circle, and no
    // plan needed the minimum radius: the OS then reports what full registration reports.
    #expect(result.unguaranteedPlans == 0)
    #expect(simulated == oracle)
  }

  @Test func comparisonCountsMissedAndLateByWindow() {
    // The engine: enter a at 10, exit a at 50, enter a at 90. The OS: enter a at 20 (late
    // by 10), no exit, enter b at 5 (not the engine's).
    let engine: [OSBudgetComparison.Report] = [
      ("a", .enter, 10), ("a", .exit, 50), ("a", .enter, 90), ("a", .dwell, 60),
    ]
    let os: [OSBudgetComparison.Report] = [("b", .enter, 5), ("a", .enter, 20)]
    let c = OSBudgetComparison(engine: engine, os: os)
    #expect(c.engineTransitions == 3)
    // The exit at 50 has no OS exit in (10, 90]; the enter at 90 none in (50, ∞).
    #expect(c.missed == 2)
    #expect(c.late == 1)
    #expect(c.worstLateness == 10)
    #expect(c.osTransitions == 2)
  }
}
