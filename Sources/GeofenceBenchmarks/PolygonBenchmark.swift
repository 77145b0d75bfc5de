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
/// - **index only**: the grid index query on the polygons' bounding caps (the first filter);
/// - **ours**: that query, then ``PolygonRegion/contains(_:)`` on each candidate;
/// - **GEOS**: the same query, then GEOS prepared geometry `covers` (`GEOSPreparedCovers_r`,
///   with a point made per test, as a C API caller does) on each candidate, on fewer fixes.
///   The candidates are the same, so the ratio is that of the two point-in-polygon tests.
public enum PolygonBenchmark {
  public struct Result: Sendable {
    public var workload: String
    public var polygonCount: Int
    public var vertexCount: Int
    /// Bytes of the polygons' vertices and edge indexes (``PolygonRegion/memoryBytes``), per
    /// vertex, and the edge index's share of them.
    public var bytesPerVertex: Double
    public var indexBytesPerVertex: Double
    public var fixes: Int
    public var geosFixes: Int
    /// Fixes per second, single thread: the index alone, ours, GEOS.
    public var indexFixesPerSecond: Double
    public var fixesPerSecond: Double
    public var geosFixesPerSecond: Double
    /// Mean candidates (bounding caps containing the fix) and matches per fix.
    public var candidatesPerFix: Double
    public var matchesPerFix: Double
    /// Whether ours and GEOS gave the same number of matches on the GEOS fixes.
    public var agreesWithGEOS: Bool
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
  ///   - workload: its circles become the polygons; its fixes are queried.
  ///   - geosFixes: how many fixes GEOS answers (it is much slower).
  ///   - seed: for the vertex counts and shapes.
  public static func run(_ workload: Workload, geosFixes: Int = 100_000, seed: UInt64 = 1) throws
    -> Result
  {
    var rng = BenchmarkRandom(seed: seed, stream: 23)
    var rings: [[SIMD2<Double>]] = []
    var geofences: [Geofence] = []
    rings.reserveCapacity(workload.regions.count)
    for (slot, circle) in workload.regions.enumerated() {
      let n = Int(exp(rng.uniform(log(4), log(1000.999))))
      let ring = polygon(inscribedIn: circle, vertices: n, using: &rng)
      rings.append(ring)
      let region = try PolygonRegion(polygons: [[ring]])
      geofences.append(Geofence(id: String(slot), shape: .polygon(region)))
    }
    let set = RegionSet(geofences: geofences)
    let vertices = set.polygons.reduce(0) { $0 + $1.vertexCount }
    let bytes = set.polygons.reduce(0) { $0 + $1.memoryBytes }
    let fixes = workload.fixes
    var buffer = SlotBuffer()

    // Index only.
    var candidates = 0
    var start = SystemProbes.monotonicNanoseconds()
    for fix in fixes {
      set.index.query(fix, into: &buffer)
      candidates += buffer.count
    }
    let indexSeconds = seconds(since: start)

    // Ours.
    var matches = 0
    start = SystemProbes.monotonicNanoseconds()
    let polygons = set.polygons
    for fix in fixes {
      set.index.query(fix, into: &buffer)
      for slot in buffer where polygons[Int(slot)].contains(fix) { matches += 1 }
    }
    let oursSeconds = seconds(since: start)

    // GEOS on the same candidates, first `geosFixes` fixes.
    let context = try GEOSContext()
    let prepared = try rings.map { ring in try context.polygon(rings: [[ring]]).prepared() }
    let geosCount = min(geosFixes, fixes.count)
    var geosMatches = 0
    var oursOnGEOSFixes = 0
    start = SystemProbes.monotonicNanoseconds()
    for fix in fixes[..<geosCount] {
      set.index.query(fix, into: &buffer)
      for slot in buffer where try prepared[Int(slot)].covers(x: fix.longitude, y: fix.latitude) {
        geosMatches += 1
      }
    }
    let geosSeconds = seconds(since: start)
    for fix in fixes[..<geosCount] {
      set.index.query(fix, into: &buffer)
      for slot in buffer where polygons[Int(slot)].contains(fix) { oursOnGEOSFixes += 1 }
    }
    let edgeIndexBytes = set.polygons.reduce(0) { $0 + $1.memoryBytes - $1.vertexCount * 16 }
    let n = Double(max(1, fixes.count))
    return Result(
      workload: workload.name, polygonCount: geofences.count, vertexCount: vertices,
      bytesPerVertex: Double(bytes) / Double(max(1, vertices)),
      indexBytesPerVertex: Double(edgeIndexBytes) / Double(max(1, vertices)),
      fixes: fixes.count, geosFixes: geosCount,
      indexFixesPerSecond: Double(fixes.count) / indexSeconds,
      fixesPerSecond: Double(fixes.count) / oursSeconds,
      geosFixesPerSecond: Double(geosCount) / geosSeconds,
      candidatesPerFix: Double(candidates) / n, matchesPerFix: Double(matches) / n,
      agreesWithGEOS: geosMatches == oursOnGEOSFixes)
  }

  static func seconds(since start: UInt64) -> Double {
    max(1e-9, Double(SystemProbes.monotonicNanoseconds() - start) / 1e9)
  }
}
