#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import GeofenceGeometry

/// Seeded generators for the synthetic workloads. The same kind, size, fix count and seed give
/// the same workload, bit for bit.
///
/// Fixes are 1 s apart on tracks of ``fixesPerTrack`` fixes; each track keeps a speed drawn
/// uniformly from ``speedRangeMetersPerSecond``. For metro, global and mixed the fixes do not
/// depend on the region count, so throughput against N compares like with like.
public enum WorkloadGenerator {
  /// Fixes per generated track (the last track may be shorter).
  public static let fixesPerTrack = 1000
  /// Speed of a generated track, m/s: from a walk to a fast urban drive.
  public static let speedRangeMetersPerSecond: ClosedRange<Double> = 1.5...15
  /// Centre of the city and regional boxes: Paris (48.85 N, 2.35 E).
  public static let boxCenter = Coordinate(uncheckedLatitude: 48.85, longitude: 2.35)
  /// The metro box: 55 km × 55 km.
  public static let cityBox = box(center: boxCenter, sideMeters: 55_000)
  /// The mixed-radii box: 550 km × 550 km.
  public static let regionalBox = box(center: boxCenter, sideMeters: 550_000)
  /// Metro radii, metres.
  public static let metroRadiusMeters: ClosedRange<Double> = 50...500
  /// Global radii, metres.
  public static let globalRadiusMeters: ClosedRange<Double> = 100...5_000
  /// Mixed radii, metres: 98 % log-uniform in 20 m – 1 km, 2 % log-uniform in 1 – 50 km.
  public static let mixedRadiusMeters: ClosedRange<Double> = 20...50_000

  /// Generates a synthetic workload.
  /// - Parameters:
  ///   - kind: any kind but `.real` (which is loaded, see ``RealData``).
  ///   - regionCount: number of regions, >= 1.
  ///   - fixCount: total number of fixes, >= 1, cut into tracks of ``fixesPerTrack``.
  ///   - seed: base seed.
  /// - Complexity: O(regionCount + fixCount).
  public static func make(kind: WorkloadKind, regionCount: Int, fixCount: Int, seed: UInt64)
    -> Workload
  {
    precondition(regionCount >= 1 && fixCount >= 1)
    switch kind {
    case .metro:
      let regions = boxRegions(
        cityBox, count: regionCount, seed: seed, radius: { $0.uniform(50, 500) })
      let t = walkInBox(cityBox, fixCount: fixCount, seed: seed)
      return Workload(
        name: "metro", kind: .metro, regions: regions, fixes: t.fixes, fixTimes: t.times,
        trackStarts: t.starts)
    case .global:
      let regions = globalRegions(count: regionCount, seed: seed)
      let t = globalWalk(fixCount: fixCount, seed: seed)
      return Workload(
        name: "global", kind: .global, regions: regions, fixes: t.fixes, fixTimes: t.times,
        trackStarts: t.starts)
    case .mixed:
      let regions = boxRegions(regionalBox, count: regionCount, seed: seed) { rng in
        rng.unit() < 0.98 ? logUniform(&rng, 20, 1_000) : logUniform(&rng, 1_000, 50_000)
      }
      let t = walkInBox(regionalBox, fixCount: fixCount, seed: seed)
      return Workload(
        name: "mixed", kind: .mixed, regions: regions, fixes: t.fixes, fixTimes: t.times,
        trackStarts: t.starts)
    case .transitions:
      // The same region set as metro, so that quiet and transition-heavy compare directly.
      let regions = boxRegions(
        cityBox, count: regionCount, seed: seed, radius: { $0.uniform(50, 500) })
      let t = boundaryTracks(regions: regions, fixCount: fixCount, seed: seed)
      return Workload(
        name: "transitions", kind: .transitions, regions: regions, fixes: t.fixes,
        fixTimes: t.times, trackStarts: t.starts)
    case .real:
      preconditionFailure("real workloads are loaded with RealData, not generated")
    }
  }

  // MARK: Regions

  static func boxRegions(
    _ box: BoundingBox, count: Int, seed: UInt64,
    radius: (inout BenchmarkRandom) -> Double
  ) -> [CircularRegion] {
    var rng = BenchmarkRandom(seed: seed, stream: 1)
    var regions: [CircularRegion] = []
    regions.reserveCapacity(count)
    for _ in 0..<count {
      let c = randomPoint(in: box, &rng)
      let r = radius(&rng)
      regions.append(makeRegion(c, r))
    }
    return regions
  }

  /// Area-uniform centres and radii, except that region `j < globalHubCount` is centred on
  /// hub `j` (``globalHubs(seed:)``), where some tracks start.
  static func globalRegions(count: Int, seed: UInt64) -> [CircularRegion] {
    var rng = BenchmarkRandom(seed: seed, stream: 2)
    let hubs = globalHubs(seed: seed)
    var regions: [CircularRegion] = []
    regions.reserveCapacity(count)
    for j in 0..<count {
      let c = areaUniformPoint(&rng)
      regions.append(makeRegion(j < hubs.count ? hubs[j] : c, rng.uniform(100, 5_000)))
    }
    return regions
  }

  /// Number of hubs of the global workload.
  public static let globalHubCount = 64

  /// The hubs of the global workload: centres of its first ``globalHubCount`` regions and
  /// starts of every tenth track (offset 2), so that every global set, however small, has
  /// containment pairs for the contenders' checksums to compare, many of them at the edges:
  /// hub `j` lies, by `j mod 4`, within 0.001° of the antimeridian (so its region straddles
  /// it); within 0.02° of a pole (its region covers the pole); or area-uniform. They depend
  /// only on the seed, not on the region or fix count.
  static func globalHubs(seed: UInt64) -> [Coordinate] {
    var rng = BenchmarkRandom(seed: seed, stream: 6)
    return (0..<globalHubCount).map { j in
      switch j % 4 {
      case 0:
        let lat = areaUniformPoint(&rng).latitude
        let lon = rng.uniform(179.999, 180)
        return Coordinate(uncheckedLatitude: lat, longitude: j % 8 == 0 ? lon : -lon)
      case 1:
        let lat = 90 - rng.uniform(0, 0.02)
        return Coordinate(
          uncheckedLatitude: j % 8 == 1 ? lat : -lat, longitude: rng.uniform(-180, 180))
      default:
        return areaUniformPoint(&rng)
      }
    }
  }

  static func makeRegion(_ center: Coordinate, _ radiusMeters: Double) -> CircularRegion {
    do {
      return try CircularRegion(center: center, radiusMeters: radiusMeters)
    } catch {
      preconditionFailure("generated radius \(radiusMeters) m is invalid")
    }
  }

  // MARK: Tracks

  struct Tracks {
    var fixes: [Coordinate] = []
    var times: [Double] = []
    var starts: [Int] = [0]

    init(capacity: Int) {
      fixes.reserveCapacity(capacity)
      times.reserveCapacity(capacity)
    }

    mutating func append(_ c: Coordinate, time: Double) {
      fixes.append(c)
      times.append(time)
    }

    mutating func endTrack() { starts.append(fixes.count) }
  }

  /// Lengths of the tracks for `fixCount` fixes.
  static func trackLengths(_ fixCount: Int) -> [Int] {
    var lengths: [Int] = []
    var left = fixCount
    while left > 0 {
      let n = min(left, fixesPerTrack)
      lengths.append(n)
      left -= n
    }
    return lengths
  }

  /// Random-walk tracks inside `box`: start uniform in the box, heading drifts by up to ±20° a
  /// second, and turns back toward the centre of the box when a step would leave it.
  static func walkInBox(_ box: BoundingBox, fixCount: Int, seed: UInt64) -> Tracks {
    var rng = BenchmarkRandom(seed: seed, stream: 3)
    var out = Tracks(capacity: fixCount)
    let center = Coordinate(
      uncheckedLatitude: (box.minLatitude + box.maxLatitude) / 2,
      longitude: (box.minLongitude + box.maxLongitude) / 2)
    for length in trackLengths(fixCount) {
      let speed = rng.uniform(
        speedRangeMetersPerSecond.lowerBound, speedRangeMetersPerSecond.upperBound)
      var position = randomPoint(in: box, &rng)
      var heading = rng.uniform(0, 2 * Double.pi)
      for i in 0..<length {
        out.append(position, time: Double(i))
        heading += rng.uniform(-0.35, 0.35)
        var next = destination(from: position, bearing: heading, distanceMeters: speed)
        if !box.contains(next) {
          heading = initialBearing(from: position, to: center) + rng.uniform(-0.5, 0.5)
          next = destination(from: position, bearing: heading, distanceMeters: speed)
          if !box.contains(next) { next = position }
        }
        position = next
      }
      out.endTrack()
    }
    return out
  }

  /// Random-walk tracks over the sphere. Track `k` starts, by `k mod 10`: 0, 0.0005° from the
  /// antimeridian heading across it; 1, within 0.2° of a pole (alternating north and south);
  /// 2, within 100 m (the smallest global radius) of hub `(k / 10) mod 64`
  /// (``globalHubs(seed:)``), inside its region; otherwise area-uniform. Steps follow great
  /// circles, so tracks cross the antimeridian and pass over the poles.
  static func globalWalk(fixCount: Int, seed: UInt64) -> Tracks {
    var rng = BenchmarkRandom(seed: seed, stream: 4)
    let hubs = globalHubs(seed: seed)
    var out = Tracks(capacity: fixCount)
    for (k, length) in trackLengths(fixCount).enumerated() {
      let speed = rng.uniform(
        speedRangeMetersPerSecond.lowerBound, speedRangeMetersPerSecond.upperBound)
      var position: Coordinate
      var heading = rng.uniform(0, 2 * Double.pi)
      switch k % 10 {
      case 0:
        // 0.0005° (at most 56 m) from the antimeridian, heading toward it.
        let lat = areaUniformPoint(&rng).latitude
        let east = (k / 10) % 2 == 0
        position = Coordinate(uncheckedLatitude: lat, longitude: east ? 179.9995 : -179.9995)
        heading = (east ? 0.5 : 1.5) * Double.pi
      case 1:
        let offset = rng.uniform(0, 0.2)
        let lat = (k / 10) % 2 == 0 ? 90 - offset : -90 + offset
        position = Coordinate(uncheckedLatitude: lat, longitude: rng.uniform(-180, 180))
      case 2:
        position = destination(
          from: hubs[(k / 10) % hubs.count], bearing: rng.uniform(0, 2 * Double.pi),
          distanceMeters: rng.uniform(0, 100))
      default:
        position = areaUniformPoint(&rng)
      }
      for i in 0..<length {
        out.append(position, time: Double(i))
        heading += rng.uniform(-0.35, 0.35)
        let next = destination(from: position, bearing: heading, distanceMeters: speed)
        // Carry on along the great circle: the new heading is the final bearing of the step,
        // which stays right across the poles (where the initial bearing flips by π).
        if next != position {
          heading = initialBearing(from: next, to: position) + Double.pi
        }
        position = next
      }
      out.endTrack()
    }
    return out
  }

  /// Tracks that sit on region boundaries. A track is cut into legs of ``boundaryLegFixes``
  /// fixes; each leg picks a random region of radius `r` and swings across its boundary: the
  /// distance from the centre is `r + a cos(π (j + 1/4) / p)` at fix `j` of the leg, with
  /// `a = max(25 m, 0.12 r)` (beyond the detector's default hysteresis `max(20 m, 0.1 r)`) and
  /// `p` uniform in 2...5 fixes (raised until a step is at most 65 m, under the default outlier
  /// filter's 70 m/s), while the bearing from the centre turns at 3 m/s. So the fix crosses the
  /// boundary every `p` fixes and is never within `0.38 a` of it. Fixes are 1 s apart within a
  /// leg; consecutive legs are ``boundaryLegGapSeconds`` apart, so the jump to the next region
  /// reads as a new start rather than an impossible speed.
  static func boundaryTracks(regions: [CircularRegion], fixCount: Int, seed: UInt64) -> Tracks {
    var rng = BenchmarkRandom(seed: seed, stream: 5)
    var out = Tracks(capacity: fixCount)
    for length in trackLengths(fixCount) {
      var i = 0
      var time = 0.0
      while i < length {
        let slot = Int(rng.next() % UInt64(regions.count))
        let region = regions[slot]
        let r = region.radiusMeters
        let a = max(25, 0.12 * r)
        var p = 2 + Int(rng.next() % 4)
        while 2 * a * sin(Double.pi / Double(2 * p)) > 65 { p += 1 }
        var angle = rng.uniform(0, 2 * Double.pi)
        let leg = min(boundaryLegFixes, length - i)
        for j in 0..<leg {
          let d = r + a * cos(Double.pi * (Double(j) + 0.25) / Double(p))
          out.append(
            destination(from: region.center, bearing: angle, distanceMeters: d), time: time)
          angle += 3 / r
          time += 1
        }
        time += boundaryLegGapSeconds - 1
        i += leg
      }
      out.endTrack()
    }
    return out
  }

  /// Time between the last fix of a boundary leg and the first fix of the next, seconds (the
  /// outlier filter's default reset gap).
  public static let boundaryLegGapSeconds = 300.0

  /// Fixes per boundary-circling leg of a transition-heavy track.
  public static let boundaryLegFixes = 100

  // MARK: Spherical helpers

  static func box(center: Coordinate, sideMeters: Double) -> BoundingBox {
    let halfLat = degrees(fromRadians: EarthModel.radians(fromMeters: sideMeters / 2))
    let halfLon = halfLat / cos(radians(fromDegrees: center.latitude))
    return BoundingBox(
      minLatitude: center.latitude - halfLat, maxLatitude: center.latitude + halfLat,
      minLongitude: center.longitude - halfLon, maxLongitude: center.longitude + halfLon)
  }

  /// Uniform in latitude and longitude inside a box that does not cross the antimeridian.
  static func randomPoint(in box: BoundingBox, _ rng: inout BenchmarkRandom) -> Coordinate {
    Coordinate(
      uncheckedLatitude: rng.uniform(box.minLatitude, box.maxLatitude),
      longitude: rng.uniform(box.minLongitude, box.maxLongitude))
  }

  /// Uniform by area over the sphere: sin(latitude) uniform in [-1, 1], longitude uniform.
  static func areaUniformPoint(_ rng: inout BenchmarkRandom) -> Coordinate {
    let z = rng.uniform(-1, 1)
    return Coordinate(
      uncheckedLatitude: degrees(fromRadians: asin(z)), longitude: rng.uniform(-180, 180))
  }

  static func logUniform(_ rng: inout BenchmarkRandom, _ lower: Double, _ upper: Double) -> Double {
    lower * exp(rng.unit() * log(upper / lower))
  }

  /// The point `distanceMeters` along the great circle leaving `c` at `bearing` (radians,
  /// clockwise from north), on the ``EarthModel`` sphere. Longitude normalised to [-180, 180].
  public static func destination(from c: Coordinate, bearing: Double, distanceMeters: Double)
    -> Coordinate
  {
    let delta = EarthModel.radians(fromMeters: distanceMeters)
    let phi1 = radians(fromDegrees: c.latitude)
    let lambda1 = radians(fromDegrees: c.longitude)
    let sinPhi2 = min(1, max(-1, sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(bearing)))
    let phi2 = asin(sinPhi2)
    let y = sin(bearing) * sin(delta) * cos(phi1)
    let x = cos(delta) - sin(phi1) * sinPhi2
    let lambda2 = remainder(lambda1 + atan2(y, x), 2 * Double.pi)
    return Coordinate(
      uncheckedLatitude: min(90, max(-90, degrees(fromRadians: phi2))),
      longitude: min(180, max(-180, degrees(fromRadians: lambda2))))
  }

  /// Initial great-circle bearing from `a` to `b`, radians clockwise from north.
  static func initialBearing(from a: Coordinate, to b: Coordinate) -> Double {
    let phi1 = radians(fromDegrees: a.latitude)
    let phi2 = radians(fromDegrees: b.latitude)
    let dLambda = radians(fromDegrees: b.longitude - a.longitude)
    return atan2(
      sin(dLambda) * cos(phi2), cos(phi1) * sin(phi2) - sin(phi1) * cos(phi2) * cos(dLambda))
  }
}
