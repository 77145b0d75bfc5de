import GEOSBridge
import GeofenceGeometry
import GeofenceIndex
import GeofenceTransitions

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Point-in-polygon throughput on a workload's fixes: each circle of the workload becomes a
/// star-shaped (generally concave) polygon inscribed in it, of 4 to 1,000 vertices
/// (log-uniform), and every fix is answered with the exact set of polygons that contain it.
///
/// Three figures, in one run and on the same fixes:
/// - **index only**: the first filter, ``RegionSet/polygonIndex`` (a planar grid over the
///   polygons' longitude/latitude boxes), each candidate counted;
/// - **ours**: ``RegionSet/forEachPolygon(containing:_:)``, that filter then
///   ``PolygonRegion/contains(_:)`` on each candidate, adding each match to a ``Checksum`` (as
///   every contender does);
/// - **GEOS through the Swift bridge**: the grid index query on the polygons' bounding caps
///   (``RegionSet/index``), then GEOS prepared geometry `covers`
///   (`GEOSPreparedCovers_r`, with a point made per test, as a C API caller does) on each
///   candidate, on fewer fixes. The caps' candidates are a superset of the boxes', so the ratio
///   is that of the two first filters and point-in-polygon tests plus the bridge's cost;
///   `tools/bench/polygon_peers.c` times GEOS from C on the same files.
///
/// Index only and ours are medians of `repetitions` passes, each replaying the fixes as many
/// whole times as it takes to last `minimumPassSeconds` (as ``BenchmarkRunner``).
public enum PolygonBenchmark {
  public struct Result: Sendable {
    public var workload: String
    public var polygonCount: Int
    public var vertexCount: Int
    /// Bytes of the polygons' vertices and edge indexes (``PolygonRegion/memoryBytes``), per
    /// vertex, and the edge indexes' share of them (bands and cell grid).
    public var bytesPerVertex: Double
    public var indexBytesPerVertex: Double
    /// Bytes of the set's box grid (``RegionSet/polygonIndex``, by capacity) per vertex.
    public var boxGridBytesPerVertex: Double
    public var fixes: Int
    public var geosFixes: Int
    /// Fixes per second, single thread: the index alone, ours, GEOS through the bridge.
    public var indexFixesPerSecond: Double
    public var fixesPerSecond: Double
    public var geosFixesPerSecond: Double
    /// Mean candidates (boxes of the box index containing the fix, less those whose polygon
    /// certainly misses it) and matches per fix.
    public var candidatesPerFix: Double
    /// Mean candidates a fix that the box index answers as certainly inside, without the
    /// polygon's edge test (an inner box or a subcell the polygon wholly covers).
    public var decidedPerFix: Double
    public var matchesPerFix: Double
    /// The (fix, polygon) pairs of ours over every fix.
    public var checksum: Checksum
    /// Whether ours and GEOS gave the same pairs on the GEOS fixes.
    public var agreesWithGEOS: Bool
  }

  /// The polygons of `workload`: one ring for each circle, in slot order (see ``run``).
  public static func rings(for workload: Workload, seed: UInt64 = 1) -> [[SIMD2<Double>]] {
    var rng = BenchmarkRandom(seed: seed, stream: 23)
    return workload.regions.map { circle in
      let n = Int(exp(rng.uniform(log(4), log(1000.999))))
      return polygon(inscribedIn: circle, vertices: n, using: &rng)
    }
  }

  /// Writes `rings` as one WKT `POLYGON` a line (line k, 0-based, is slot k), coordinates as
  /// longitude then latitude in shortest round-trip decimals, so that GEOS, shapely and PostGIS
  /// read the identical doubles.
  public static func writeWKT(_ rings: [[SIMD2<Double>]], to path: String)
    throws(WorkloadFileError)
  {
    var out = try TextFileWriter(path: path)
    for ring in rings {
      var line = "POLYGON (("
      for (i, v) in ring.enumerated() {
        if i > 0 { line += ", " }
        line += "\(v.x) \(v.y)"
      }
      try out.write(line + "))\n")
    }
    try out.close()
  }

  /// The polygon of a circle: `n` vertices at increasing angles, each at 70–100 % of the radius
  /// (measured on the local plate carrée), closed.
  static func polygon(
    inscribedIn circle: CircularRegion, vertices n: Int, using rng: inout BenchmarkRandom
  )
    -> [SIMD2<Double>]
  {
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    let ry = circle.radiusMeters / metersPerDegree
    let rx = ry / cos(circle.center.latitude * Double.pi / 180)
    var ring: [SIMD2<Double>] = []
    ring.reserveCapacity(n + 1)
    for i in 0..<n {
      let angle = (Double(i) + rng.uniform(0.1, 0.9)) / Double(n) * 2 * Double.pi
      let s = rng.uniform(0.7, 1)
      ring.append(
        SIMD2(
          circle.center.longitude + s * rx * cos(angle),
          circle.center.latitude + s * ry * sin(angle)))
    }
    ring.append(ring[0])
    return ring
  }

  /// - Parameters:
  ///   - workload: its circles become the polygons (``rings(for:seed:)``); its fixes are
  ///     queried.
  ///   - repetitions: timed passes of index only and ours (>= 1), median reported.
  ///   - minimumPassSeconds: target length of a pass (0: the fixes once).
  ///   - geosFixes: how many fixes GEOS answers (it is much slower).
  ///   - seed: for the vertex counts and shapes.
  /// - Throws: ``PolygonError`` (never, for these polygons) or a ``GEOSError`` when GEOS fails.
  public static func run(
    _ workload: Workload, repetitions: Int = 3, minimumPassSeconds: Double = 0.2,
    geosFixes: Int = 100_000, seed: UInt64 = 1
  ) throws -> Result {
    let rings = rings(for: workload, seed: seed)
    var geofences: [Geofence] = []
    geofences.reserveCapacity(rings.count)
    for (slot, ring) in rings.enumerated() {
      let region = try PolygonRegion(polygons: [[ring]])
      geofences.append(Geofence(id: String(slot), shape: .polygon(region)))
    }
    let set = RegionSet(geofences: geofences)
    let vertices = set.polygons.reduce(0) { $0 + $1.vertexCount }
    let bytes = set.polygons.reduce(0) { $0 + $1.memoryBytes }
    let fixes = workload.fixes
    var buffer = SlotBuffer()

    // Index only: the polygons' box index.
    var candidates = 0
    var decided = 0
    let indexSeconds = timed(repetitions, minimumPassSeconds) {
      candidates = 0
      decided = 0
      for fix in fixes {
        set.polygonIndex.forEachCandidate(longitude: fix.longitude, latitude: fix.latitude) {
          _, certain in
          candidates &+= 1
          if certain { decided &+= 1 }
        }
      }
    }

    // Ours.
    var sum = Checksum()
    let oursSeconds = timed(repetitions, minimumPassSeconds) {
      sum = Checksum()
      for (f, fix) in fixes.enumerated() {
        set.forEachPolygon(containing: fix) { slot in sum.add(fixIndex: f, slot: slot) }
      }
    }

    // GEOS on the same candidates, first `geosFixes` fixes.
    let context = try GEOSContext()
    let prepared = try rings.map { ring in try context.polygon(rings: [[ring]]).prepared() }
    let geosCount = min(geosFixes, fixes.count)
    var geosSum = Checksum()
    let start = SystemProbes.monotonicNanoseconds()
    for (f, fix) in fixes[..<geosCount].enumerated() {
      set.index.query(fix, into: &buffer)
      for slot in buffer where try prepared[Int(slot)].covers(x: fix.longitude, y: fix.latitude) {
        geosSum.add(fixIndex: f, slot: slot)
      }
    }
    let geosSeconds = seconds(since: start)
    var oursOnGEOSFixes = Checksum()
    for (f, fix) in fixes[..<geosCount].enumerated() {
      set.forEachPolygon(containing: fix) { slot in oursOnGEOSFixes.add(fixIndex: f, slot: slot) }
    }
    let edgeIndexBytes = set.polygons.reduce(0) { $0 + $1.memoryBytes - $1.vertexCount * 16 }
    let n = Double(max(1, fixes.count))
    return Result(
      workload: workload.name, polygonCount: geofences.count, vertexCount: vertices,
      bytesPerVertex: Double(bytes) / Double(max(1, vertices)),
      indexBytesPerVertex: Double(edgeIndexBytes) / Double(max(1, vertices)),
      boxGridBytesPerVertex: Double(set.polygonIndex.memoryFootprintBytes)
        / Double(max(1, vertices)),
      fixes: fixes.count, geosFixes: geosCount,
      indexFixesPerSecond: Double(fixes.count) / indexSeconds,
      fixesPerSecond: Double(fixes.count) / oursSeconds,
      geosFixesPerSecond: Double(geosCount) / geosSeconds,
      candidatesPerFix: Double(candidates) / n, decidedPerFix: Double(decided) / n,
      matchesPerFix: Double(sum.pairs) / n,
      checksum: sum, agreesWithGEOS: geosSum == oursOnGEOSFixes)
  }

  /// The median seconds of one run of `body` over `repetitions` passes, each running `body`
  /// as many times as a first (calibration) run says it takes to last `minimum` seconds plus a
  /// tenth.
  static func timed(_ repetitions: Int, _ minimum: Double, _ body: () -> Void) -> Double {
    var start = SystemProbes.monotonicNanoseconds()
    body()
    let first = seconds(since: start)
    let rounds = minimum > 0 ? max(1, Int((1.1 * minimum / first).rounded(.up))) : 1
    var times: [Double] = []
    for _ in 0..<max(1, repetitions) {
      start = SystemProbes.monotonicNanoseconds()
      for _ in 0..<rounds { body() }
      times.append(seconds(since: start) / Double(rounds))
    }
    times.sort()
    return times[times.count / 2]
  }

  static func seconds(since start: UInt64) -> Double {
    max(1e-9, Double(SystemProbes.monotonicNanoseconds() - start) / 1e9)
  }
}
