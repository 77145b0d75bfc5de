import GeofenceGeometry

/// The families of benchmark workloads.
public enum WorkloadKind: String, CaseIterable, Sendable {
  /// Circles in a 55 km × 55 km city box, radius 50–500 m; random-walk tracks in the box.
  case metro
  /// Circles with area-uniform centres over the whole sphere, radius 100 m – 5 km.
  case global
  /// Radii from 20 m to 50 km in one set, in a 550 km × 550 km regional box.
  case mixed
  /// The metro region set with tracks that cross a region boundary every 2–5 fixes.
  case transitions
  /// A real place set from `data/places` against the real tracks in `data/tracks`.
  case real
}

/// A benchmark input: a set of circular regions and a set of tracks of fixes.
///
/// Regions are addressed by slot (their position in ``regions``); fixes of all tracks are stored
/// back to back in ``fixes``, track `k` occupying `trackStarts[k] ..< trackStarts[k + 1]`. A
/// fix's index in ``fixes`` is the fix index used by ``Checksum``. Each track stands for one
/// device.
public struct Workload: Sendable {
  /// Short name, for example `metro` or `real-towns`.
  public var name: String
  public var kind: WorkloadKind
  /// The regions; slot `i` is `regions[i]`.
  public var regions: [CircularRegion]
  /// Every fix of every track, track by track.
  public var fixes: [Coordinate]
  /// Seconds since the start of the fix's track, parallel to ``fixes``.
  public var fixTimes: [Double]
  /// Offsets into ``fixes``: `trackCount + 1` ascending values from 0 to `fixes.count`.
  public var trackStarts: [Int]
  /// Whether ``fixTimes`` are real fix times. When false (real tracks, whose times are not
  /// read), the times are fix counts and the detector path runs without time
  /// (`TransitionDetector(usesTime: false)`: no time checks, outlier filter or dwell).
  public var hasFixTimes: Bool

  public init(
    name: String, kind: WorkloadKind, regions: [CircularRegion], fixes: [Coordinate],
    fixTimes: [Double], trackStarts: [Int], hasFixTimes: Bool = true
  ) {
    precondition(fixes.count == fixTimes.count, "one time per fix")
    precondition(trackStarts.first == 0 && trackStarts.last == fixes.count, "track offsets")
    self.name = name
    self.kind = kind
    self.regions = regions
    self.fixes = fixes
    self.fixTimes = fixTimes
    self.trackStarts = trackStarts
    self.hasFixTimes = hasFixTimes
  }

  /// Number of tracks (devices).
  public var trackCount: Int { trackStarts.count - 1 }

  /// The fix index range of track `k`.
  public func trackRange(_ k: Int) -> Range<Int> { trackStarts[k]..<trackStarts[k + 1] }

  /// The first `trackCount` tracks only (regions unchanged).
  public func prefix(tracks trackCount: Int) -> Workload {
    let n = min(trackCount, self.trackCount)
    let end = trackStarts[n]
    return Workload(
      name: name, kind: kind, regions: regions, fixes: Array(fixes[..<end]),
      fixTimes: Array(fixTimes[..<end]), trackStarts: Array(trackStarts[...n]),
      hasFixTimes: hasFixTimes)
  }
}

/// Computes the digest of a workload by testing every fix against every region: O(fixes ×
/// regions). The oracle for tests and for small cross-checks.
public func bruteForceChecksum(_ workload: Workload) -> Checksum {
  var sum = Checksum()
  for (f, fix) in workload.fixes.enumerated() {
    let v = UnitVector(fix)
    for (s, region) in workload.regions.enumerated() where region.contains(v) {
      sum.add(fixIndex: f, slot: Int32(s))
    }
  }
  return sum
}
