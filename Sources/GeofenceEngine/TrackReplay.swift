import GeofenceGeometry
import GeofenceTransitions
import TrackFormats

/// What replaying one track file produced.
public struct TrackReplayReport: Sendable {
  /// The track file as named on input.
  public var file: String
  /// Events in output order: grouped by device (first appearance), then by fix time, and at
  /// one fix EXIT, ENTER, DWELL by region id.
  public var events: [EventRecord]
  /// Fixes the reader returned (rows or points that parsed).
  public var fixesRead: Int
  /// Fixes the detector accepted.
  public var fixesUsed: Int
  /// Fixes dropped by the detector or the replay preparation, by reason.
  public var dropCounts: DropCounts
  /// Rows or points the reader skipped, with file, line and reason.
  public var skippedRows: [TrackIssue]
  /// Warnings from the reader and the replay (file-level notes such as "no time zone").
  public var warnings: [String]
  /// The fixes in time order per device, for drawing.
  public var tracks: [[Coordinate]]

  /// Events by type (`enter`, `exit`, `dwell`).
  public var eventCounts: [String: Int] {
    events.reduce(into: [:]) { $0[$1.type, default: 0] += 1 }
  }
}

/// The replay pipeline: a track read from a file, through the transition detector, to
/// ``EventRecord``s. The same code serves the CLI and library users.
public enum TrackReplay {
  /// Replays the fixes of one track file against `regions`.
  ///
  /// - Parameters:
  ///   - track: what ``TrackReader`` returned for the file.
  ///   - file: the file name to report.
  ///   - regions: the monitored regions; `geofences[i]` must describe slot `i`.
  ///   - geofences: the geofence definitions (names for the output).
  ///   - configuration: the detector's rules.
  ///   - ignoringAccuracy: when true the detector sees every fix without its horizontal
  ///     accuracy (so EXIT is `d > r + h` and no accuracy rule applies: the naive baseline);
  ///     events still report the accuracy the file gave.
  /// - Returns: events, counts and warnings. Never throws: bad fixes are counted, not fatal.
  /// - Complexity: O(n log n) for n fixes (the stable time sort) plus one detector step per fix.
  public static func replay(
    _ track: TrackReadResult, file: String, regions: RegionSet, geofences: [Geofence],
    configuration: TransitionConfiguration, ignoringAccuracy: Bool = false
  ) -> TrackReplayReport {
    var fixes = track.fixes
    var accuracyOfSource: [Int: Double] = [:]
    if ignoringAccuracy {
      for i in fixes.indices {
        if let a = fixes[i].horizontalAccuracy { accuracyOfSource[fixes[i].sourceIndex] = a }
        fixes[i].horizontalAccuracy = nil
      }
    }
    let result = TransitionDetector.replay(fixes, regions: regions, configuration: configuration)
    var events: [EventRecord] = []
    events.reserveCapacity(result.events.count)
    for e in result.events {
      let g = geofences[Int(e.slot)]
      events.append(
        EventRecord(
          type: e.type.rawValue, regionID: g.id, regionName: g.name, deviceID: e.fix.deviceID,
          time: e.fix.time, fixIndex: e.fix.sourceIndex, latitude: e.fix.coordinate.latitude,
          longitude: e.fix.coordinate.longitude,
          accuracy: e.fix.horizontalAccuracy ?? accuracyOfSource[e.fix.sourceIndex],
          distanceMeters: e.distanceMeters, dwellSeconds: e.dwellSeconds))
    }
    // Per-device polylines in time order (stable), for the map.
    var byDevice: [String?: Int] = [:]
    var tracks: [[(Double, Int, Coordinate)]] = []
    for (i, fix) in track.fixes.enumerated() {
      let g: Int
      if let known = byDevice[fix.deviceID] {
        g = known
      } else {
        g = tracks.count
        byDevice[fix.deviceID] = g
        tracks.append([])
      }
      tracks[g].append((fix.time ?? Double(i), i, fix.coordinate))
    }
    let polylines = tracks.map { points in
      points.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
    }
    return TrackReplayReport(
      file: file, events: events, fixesRead: track.fixes.count,
      fixesUsed: track.fixes.count - result.dropCounts.total, dropCounts: result.dropCounts,
      skippedRows: track.skippedRows,
      warnings: track.warnings.map(\.description) + result.warnings.map { "\(file): \($0)" },
      tracks: polylines)
  }

  /// The geofences worth drawing on a map of `tracks`: every geofence with an event, plus those
  /// whose disc contains a sampled track point (at most `limit` in all, nearest first).
  /// - Complexity: one index query per sampled point (at most 2,000 points per track).
  public static func geofencesNear(
    _ tracks: [[Coordinate]], events: [EventRecord], regions: RegionSet, geofences: [Geofence],
    limit: Int = 200
  ) -> [Geofence] {
    var chosen: [Int32: Double] = [:]
    var slotOfID: [String: Int32] = [:]
    for (i, g) in geofences.enumerated() { slotOfID[g.id] = Int32(i) }
    for e in events { if let s = slotOfID[e.regionID] { chosen[s] = 0 } }
    var result: [Int32] = []
    for track in tracks {
      let step = max(1, track.count / 2_000)
      var i = 0
      while i < track.count {
        regions.index.query(track[i], into: &result)
        for s in result {
          let d = haversineDistance(regions.regions[Int(s)].center, track[i])
          chosen[s] = min(chosen[s] ?? .infinity, d)
        }
        i += step
      }
    }
    let ordered = chosen.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.prefix(limit)
    return ordered.map { geofences[Int($0.key)] }
  }
}
