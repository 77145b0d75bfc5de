import GeofenceGeometry
@testable import GeofenceIndex
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Opt-in figures, not pass/fail timings. Run with
/// `GEOFENCE_INDEX_PERF=1 swift test -c release -Xswiftc -enable-testing --filter GridIndexPerformance`
/// (the test target uses `@testable import`, hence `-enable-testing`).
@Suite(.serialized)
struct GridIndexPerformanceTests {
  static var enabled: Bool { getenv("GEOFENCE_INDEX_PERF") != nil }

  /// Seconds taken by `body`.
  func seconds(_ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    let d = clock.measure(body)
    return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
  }

  /// `count` regions with centres uniform in a `sideMeters` square box around Paris.
  func cityRegions(
    count: Int, radii: ClosedRange<Double>, logUniform: Bool, sideMeters: Double = 55_000,
    seed: UInt64
  ) -> [CircularRegion] {
    var rng = SeededGenerator(seed: seed)
    let halfLat = sideMeters / 2 / 111_195.0
    let halfLon = halfLat / cos(radians(fromDegrees: 48.85))
    return (0..<count).map { _ in
      let c = Coordinate(
        uncheckedLatitude: 48.85 + Double.random(in: -halfLat...halfLat, using: &rng),
        longitude: 2.35 + Double.random(in: -halfLon...halfLon, using: &rng))
      let r =
        logUniform
        ? exp(Double.random(in: log(radii.lowerBound)...log(radii.upperBound), using: &rng))
        : Double.random(in: radii, using: &rng)
      // swift-format-ignore: NeverUseForceTry
      return try! CircularRegion(center: c, radiusMeters: r)
    }
  }

  func report(
    _ label: String, _ regions: [CircularRegion], cellSize: Double? = nil,
    edgePerSpan: Double = GridIndex.defaultEdgePerSpan, fixCount: Int = 1_000_000
  ) {
    var index = GridIndex(regions: [])
    let buildSeconds = seconds {
      index = GridIndex.build(
        discs: regions.map(Disc.init), cellSizeDegrees: cellSize, edgePerSpan: edgePerSpan)
    }
    let n = Double(regions.count)

    // 1,000,000 fixes of a random walk (steps up to 15 m) through the box.
    var rng = SeededGenerator(seed: 99)
    var lat = 48.85
    var lon = 2.35
    let step = 15 / 111_195.0
    var fixes: [Coordinate] = []
    fixes.reserveCapacity(1_000_000)
    for _ in 0..<fixCount {
      lat += Double.random(in: -step...step, using: &rng)
      lon += Double.random(in: -step...step, using: &rng) * 1.5
      if abs(lat - 48.85) > 0.24 { lat = 48.85 }
      if abs(lon - 2.35) > 0.36 { lon = 2.35 }
      fixes.append(Coordinate(uncheckedLatitude: lat, longitude: lon))
    }
    var result: [Int32] = []
    result.reserveCapacity(4096)
    var hits = 0
    let querySeconds = seconds {
      for f in fixes {
        index.query(f, into: &result)
        hits &+= result.count
      }
    }
    var candidates = 0
    for f in fixes.prefix(10_000) { candidates += index._candidateCount(at: f) }
    print(
      """
      [GridIndex perf] \(label): n \(regions.count), build \(buildSeconds) s, \
      \(Double(fixes.count) / querySeconds) queries/s (\(querySeconds * 1e9 / Double(fixes.count)) ns/query), \
      hits/query \(Double(hits) / Double(fixes.count)), candidates/query \(Double(candidates) / 10_000), \
      finest cell \(index.finestCellSizeDegrees)°, levels \(index.nonEmptyLevelList), \
      cells \(index.cellCount), entries/region \(Double(index.entryCount) / n), \
      everywhere \(index.everywhereCount), index bytes/region \(Double(index.indexFootprintBytes) / n), \
      geometry bytes/region \(Double(index.geometryFootprintBytes) / n), \
      total bytes/region \(Double(index.memoryFootprintBytes) / n)
      """)
    fflush(nil)
  }

  @Test(.enabled(if: GridIndexPerformanceTests.enabled))
  func cityFigures() {
    let regions = cityRegions(count: 1_000_000, radii: 50...500, logUniform: false, seed: 1)
    report("city 50-500 m, 55 km box", regions)
    report("city 50-500 m, 55 km box, cell 0.01°", regions, cellSize: 0.01)
    if getenv("GEOFENCE_INDEX_PERF_SWEEP") != nil {
      for k in [1.0, 2.0, 3.0] {
        report("city 50-500 m, edge/span \(k)", regions, edgePerSpan: k, fixCount: 200_000)
      }
    }
  }

  /// Mixed radii over a 2,000 km box (in a 55 km box a fifth of 1M log-uniform radii up to
  /// 50 km would contain every point, and the answers alone would dominate).
  @Test(.enabled(if: GridIndexPerformanceTests.enabled))
  func mixedFigures() {
    let regions = cityRegions(
      count: 1_000_000, radii: 20...50_000, logUniform: true, sideMeters: 2_000_000, seed: 2)
    report("mixed 20 m-50 km (log-uniform), 2,000 km box", regions, fixCount: 200_000)
  }

  /// City radii spread over a 2,000 km box: few answers per fix, the grid's own cost shows.
  @Test(.enabled(if: GridIndexPerformanceTests.enabled))
  func sparseFigures() {
    let regions = cityRegions(
      count: 1_000_000, radii: 50...500, logUniform: false, sideMeters: 2_000_000, seed: 3)
    report("city 50-500 m, 2,000 km box", regions)
  }
}
