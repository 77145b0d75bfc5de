import Foundation
import GeofenceGeometry
import GeofenceTransitions
import LocationAuthorization
import TrackFormats

/// One track file to replay.
public struct ReplayInput: Sendable {
  /// The file as named on input, for reports and warnings.
  public var file: String
  /// What ``TrackFormats/TrackReader`` returned for it.
  public var track: TrackReadResult
  /// The device of the fixes without a device id: the file's name without its folders, so
  /// that one track given as `t.csv`, `./t.csv` or by its absolute path is one device (and
  /// its events keep their ids) whatever the working directory.
  public var device: String

  /// - Parameter device: the device of fixes without one; nil (the default) for the last
  ///   component of `file` (`file` itself when it has none, as `-`).
  public init(file: String, track: TrackReadResult, device: String? = nil) {
    self.file = file
    self.track = track
    let name = (file as NSString).lastPathComponent
    self.device = device ?? (name.isEmpty ? file : name)
  }
}

/// What replaying one track file produced.
public struct TrackReplayReport: Sendable {
  /// The track file as named on input.
  public var file: String
  /// Events in output order: grouped by device (first appearance), then by fix time, and at
  /// one fix EXIT, ENTER, DWELL by geofence id.
  public var events: [GeofenceEvent]
  /// Fixes the reader returned (rows or points that parsed).
  public var fixesRead: Int
  /// Fixes dropped by the preparation, the gate or the detector, by reason.
  public var dropCounts: DropCounts
  /// Fixes dropped because monitoring was off.
  public var notAuthorized: Int
  /// Rows or points the reader skipped, with file, line and reason.
  public var skippedRows: [TrackIssue]
  /// Warnings from the reader and the preparation.
  public var warnings: [String]
  /// The fixes in time order per device, for drawing.
  public var tracks: [[Coordinate]]

  /// Fixes the detector accepted.
  public var fixesUsed: Int { fixesRead - dropCounts.total - notAuthorized }

  /// Events by type.
  public var eventCounts: EventCounts {
    var counts = EventCounts()
    for e in events { counts[e.type] += 1 }
    return counts
  }
}

extension GeofenceEngine {
  /// Replays whole track files through the engine: the one replay preparation of
  /// `geofence replay` and `geofence run`.
  ///
  /// Each file's fixes are prepared by ``GeofenceTransitions/ReplayPreparation`` (per device,
  /// with its drop rules); a fix without a device id belongs to the device named by the file.
  /// Then every timed fix of every file is taken in one time order (stable: equal times keep
  /// file and input order), the `timeline`'s changes applied before the first fix at or after
  /// their time, and the remaining changes after the last. Tracks without any time follow, in
  /// file order, under the final authorization state, with a detector that ignores time (no
  /// dwell, no outlier filter; their events have no time and their ids use the fix index).
  ///
  /// - Parameters:
  ///   - inputs: the files.
  ///   - timeline: authorization changes. Default none.
  ///   - ignoringAccuracy: the detector sees every fix without its horizontal accuracy (the
  ///     naive baseline); events still report the accuracy the file gave.
  ///   - afterEvents: called after each fix that created events (to send due batches).
  /// - Returns: one report per input, in input order.
  /// - Throws: ``EngineError/store(_:)`` from the outbox or the checkpoints.
  /// - Complexity: O(n log n) for n fixes plus one ``ingest(_:device:)`` each.
  nonisolated(nonsending) public func replay(
    _ inputs: [ReplayInput], timeline: AuthorizationTimeline = AuthorizationTimeline(changes: []),
    ignoringAccuracy: Bool = false, afterEvents: (() async -> Void)? = nil
  ) async throws(EngineError) -> [TrackReplayReport] {
    // One fix to take: its group (a device of one input) and its place in that group's
    // prepared fixes, 16 bytes, so that ordering every fix copies no fix.
    struct Item {
      var time: Double
      var group: Int32
      var index: Int32
    }
    var reports: [TrackReplayReport] = []
    var timed: [Item] = []
    var untimed: [Item] = []
    var accuracyOfSource: [[Int: Double]] = []
    var groupsOfInput: [Range<Int>] = []
    // Per group: its input, its device and its prepared fixes.
    var groupInput: [Int] = []
    var groupDevice: [String] = []
    var groupFixes: [[LocationFix]] = []
    for (i, input) in inputs.enumerated() {
      var fixes = input.track.fixes
      var accuracies: [Int: Double] = [:]
      if ignoringAccuracy {
        for k in fixes.indices {
          if let a = fixes[k].horizontalAccuracy { accuracies[fixes[k].sourceIndex] = a }
          fixes[k].horizontalAccuracy = nil
        }
      }
      accuracyOfSource.append(accuracies)
      let preparation = ReplayPreparation(fixes)
      fixes = []
      let first = groupFixes.count
      groupsOfInput.append(first..<(first + preparation.tracks.count))
      for track in preparation.tracks {
        let group = Int32(groupFixes.count)
        for (k, fix) in track.fixes.enumerated() {
          let item = Item(time: fix.time ?? 0, group: group, index: Int32(k))
          if track.usesTime { timed.append(item) } else { untimed.append(item) }
        }
        groupInput.append(i)
        groupDevice.append(track.deviceID ?? input.device)
        groupFixes.append(track.fixes)
      }
      reports.append(
        TrackReplayReport(
          file: input.file, events: [], fixesRead: input.track.fixes.count,
          dropCounts: preparation.dropCounts, notAuthorized: 0,
          skippedRows: input.track.skippedRows,
          warnings: input.track.warnings.map(\.description)
            + preparation.warnings.map { "\(input.file): \($0)" },
          tracks: Self.polylines(input.track.fixes)))
    }
    // Stable: equal times keep input order, which (group, index) is.
    timed.sort { ($0.time, $0.group, $0.index) < ($1.time, $1.group, $1.index) }

    var eventsByGroup: [[GeofenceEvent]] = Array(repeating: [], count: groupFixes.count)
    var scratch: [GeofenceEvent] = []
    func fix(of item: Item) -> LocationFix { groupFixes[Int(item.group)][Int(item.index)] }
    nonisolated(nonsending) func take(_ item: Item, _ fix: LocationFix, usesTime: Bool)
      async throws(EngineError)
    {
      let group = Int(item.group)
      let input = groupInput[group]
      scratch.removeAll(keepingCapacity: true)
      let outcome = try process(fix, device: groupDevice[group], usesTime: usesTime, into: &scratch)
      switch outcome {
      case .notAuthorized: reports[input].notAuthorized += 1
      case .evaluated(.dropped(let reason)): reports[input].dropCounts[reason] += 1
      case .evaluated(.accepted): break
      }
      guard !scratch.isEmpty else { return }
      for var e in scratch {
        if ignoringAccuracy { e.accuracy = accuracyOfSource[input][fix.sourceIndex] }
        eventsByGroup[group].append(e)
      }
      if let afterEvents { await afterEvents() }
    }
    var next = 0
    let changes = timeline.changes
    for item in timed {
      let fix = fix(of: item)
      let t = fix.time ?? .infinity
      while next < changes.count, changes[next].time <= t {
        try updateAuthorization(changes[next].state, at: changes[next].time)
        next += 1
      }
      try await take(item, fix, usesTime: true)
    }
    while next < changes.count {
      try updateAuthorization(changes[next].state, at: changes[next].time)
      next += 1
    }
    for item in untimed { try await take(item, fix(of: item), usesTime: false) }

    for (i, range) in groupsOfInput.enumerated() {
      for g in range { reports[i].events += eventsByGroup[g] }
    }
    return reports
  }

  /// Forgets every device held in memory (not the saved checkpoints): the next fix of a
  /// device starts it afresh unless it was checkpointed. `geofence replay` calls it between
  /// files so that each file is replayed on its own.
  public func forgetDevicesInMemory() { devices.removeAll() }

  /// Per-device polylines in time order (stable), for the map.
  static func polylines(_ fixes: [LocationFix]) -> [[Coordinate]] {
    var byDevice: [DeviceKey?: Int] = [:]
    var tracks: [[(Double, Int, Coordinate)]] = []
    for (i, fix) in fixes.enumerated() {
      let g: Int
      let key = fix.deviceID.map(DeviceKey.init)
      if let known = byDevice[key] {
        g = known
      } else {
        g = tracks.count
        byDevice[key] = g
        tracks.append([])
      }
      tracks[g].append((fix.time ?? Double(i), i, fix.coordinate))
    }
    return tracks.map { points in points.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2) }
  }

  /// The geofences worth drawing on a map of `tracks`: every geofence with an event, plus those
  /// whose disc contains a sampled track point (at most `limit` in all, nearest first).
  /// - Complexity: one index query per sampled point (at most 2,000 points per track).
  public func geofencesNear(
    _ tracks: [[Coordinate]], events: [GeofenceEvent], limit: Int = 200
  ) -> [Geofence] {
    var chosen: [Int32: Double] = [:]
    for e in events { if let s = live.slot(of: e.geofenceID) { chosen[s] = 0 } }
    var result: [Int32] = []
    let regions = live.regions
    for track in tracks {
      let step = max(1, track.count / 2_000)
      var i = 0
      while i < track.count {
        regions.index.query(track[i], into: &result)
        for s in result {
          let d = haversineDistance(regions.center(at: s), track[i])
          chosen[s] = min(chosen[s] ?? .infinity, d)
        }
        i += step
      }
    }
    let ordered = chosen.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.prefix(limit)
    return ordered.map { live.geofence(at: Int($0.key)) }
  }
}
