import GeofenceGeometry

/// The result of replaying a whole track file.
public struct ReplayResult: Sendable {
  /// Every event, grouped by device in the order each device first appears in the input, and
  /// within a device in the order the detector emitted them (by fix time).
  public var events: [TransitionEvent]
  /// Dropped fixes by reason, over all devices (preparation and detector together).
  public var dropCounts: DropCounts
  /// Human-readable warnings about the input (one line each, no trailing newline).
  public var warnings: [String]
  /// The devices in order of first appearance (`nil` for fixes without a device id).
  public var deviceIDs: [String?]

  public init(
    events: [TransitionEvent], dropCounts: DropCounts, warnings: [String], deviceIDs: [String?]
  ) {
    self.events = events
    self.dropCounts = dropCounts
    self.warnings = warnings
    self.deviceIDs = deviceIDs
  }
}

/// One device's fixes of a file, ready for the detector (see ``ReplayPreparation``).
public struct PreparedTrack: Sendable {
  /// The device (`nil` for fixes without a device id).
  public var deviceID: String?
  /// The fixes to process, in order.
  public var fixes: [LocationFix]
  /// False when no fix of the device has a time: process with a detector created with
  /// `usesTime: false`, in file order.
  public var usesTime: Bool
}

/// The one replay preparation: how a file's fixes become per-device sequences for the
/// detector. `geofence replay`, `geofence run` and ``TransitionDetector/replay(_:regions:configuration:)``
/// all use it, so they apply the same drop rules.
///
/// Fixes are split by ``LocationFix/deviceID`` (one sequence per device, in order of first
/// appearance; `nil` is a device of its own). Each device's fixes are then prepared:
/// 1. a fix with a negative or NaN accuracy is dropped (``DropReason/invalidAccuracy``);
/// 2. a fix without a finite time is dropped (``DropReason/missingTime``), unless **no** fix
///    of the device has a time: then the track is kept in file order for a detector with
///    `usesTime: false` (no dwell, no outlier filter) and a warning is added;
/// 3. the remaining fixes are sorted by time with a **stable** sort (equal times keep file
///    order; a warning reports how many fixes were out of order);
/// 4. a fix with the same time as the fix kept before it is dropped:
///    ``DropReason/duplicateFix`` when the position is the same too, else
///    ``DropReason/conflictingTimestamp`` (the first in file order wins).
public struct ReplayPreparation: Sendable {
  /// The devices' sequences, in order of first appearance.
  public var tracks: [PreparedTrack]
  /// Fixes dropped by the preparation, by reason.
  public var dropCounts: DropCounts
  /// Human-readable warnings about the input (one line each, no trailing newline).
  public var warnings: [String]

  /// Prepares a file's fixes (in file order).
  /// - Complexity: O(n log n) for the sort of n fixes.
  public init(_ fixes: [LocationFix]) {
    var deviceIDs: [String?] = []
    // Devices by the bytes of their ids (``DeviceKey``).
    var groupOfDevice: [DeviceKey?: Int] = [:]
    var groups: [[Int]] = []
    for (i, fix) in fixes.enumerated() {
      let key = fix.deviceID.map(DeviceKey.init)
      if let g = groupOfDevice[key] {
        groups[g].append(i)
      } else {
        groupOfDevice[key] = groups.count
        deviceIDs.append(fix.deviceID)
        groups.append([i])
      }
    }
    var tracks: [PreparedTrack] = []
    var drops = DropCounts()
    var warnings: [String] = []
    for (g, members) in groups.enumerated() {
      let label = deviceIDs[g].map { "device \"\($0)\"" } ?? "track"
      var valid: [Int] = []
      valid.reserveCapacity(members.count)
      for i in members {
        if let a = fixes[i].horizontalAccuracy, !(a >= 0) {
          drops[.invalidAccuracy] += 1
        } else {
          valid.append(i)
        }
      }
      let timed = valid.filter { fixes[$0].time?.isFinite == true }
      if timed.isEmpty {
        if !valid.isEmpty {
          warnings.append(
            "\(label): no fix has a time; \(valid.count) fixes processed in file order, without dwell"
          )
        }
        tracks.append(
          PreparedTrack(deviceID: deviceIDs[g], fixes: valid.map { fixes[$0] }, usesTime: false))
        continue
      }
      let missing = valid.count - timed.count
      if missing > 0 {
        drops[.missingTime] += missing
        warnings.append("\(label): \(missing) fixes without a valid time dropped")
      }
      // Stable sort: ties broken by position in the file.
      let order = timed.sorted { a, b in
        let ta = fixes[a].time ?? 0
        let tb = fixes[b].time ?? 0
        return ta < tb || (ta == tb && a < b)
      }
      var moved = 0
      var latest = -Double.infinity
      for i in timed {
        let t = fixes[i].time ?? 0
        if t < latest { moved += 1 } else { latest = t }
      }
      if moved > 0 {
        warnings.append("\(label): \(moved) fixes were out of time order and were sorted by time")
      }
      var prepared: [LocationFix] = []
      prepared.reserveCapacity(order.count)
      var kept: LocationFix? = nil
      for i in order {
        let fix = fixes[i]
        if let k = kept, k.time == fix.time {
          drops[k.coordinate == fix.coordinate ? .duplicateFix : .conflictingTimestamp] += 1
          continue
        }
        kept = fix
        prepared.append(fix)
      }
      tracks.append(PreparedTrack(deviceID: deviceIDs[g], fixes: prepared, usesTime: true))
    }
    self.tracks = tracks
    self.dropCounts = drops
    self.warnings = warnings
  }
}

extension TransitionDetector {
  /// Replays a whole file's fixes, possibly from several devices, and returns the events.
  ///
  /// The fixes are prepared by ``ReplayPreparation`` (split by device, invalid accuracy,
  /// missing times, stable time sort, same-time duplicates), then each device's sequence goes
  /// through one detector's ``process(_:into:)``.
  ///
  /// - Parameters:
  ///   - fixes: the file's fixes in file order.
  ///   - regions: the monitored regions.
  ///   - configuration: the rules.
  /// - Returns: events, drop counts and warnings.
  /// - Complexity: O(n log n) for the sort of n fixes plus n calls of ``process(_:into:)``.
  public static func replay(
    _ fixes: [LocationFix], regions: RegionSet,
    configuration: TransitionConfiguration = TransitionConfiguration()
  ) -> ReplayResult {
    let preparation = ReplayPreparation(fixes)
    var events: [TransitionEvent] = []
    var drops = preparation.dropCounts
    for track in preparation.tracks {
      var detector = TransitionDetector(
        regions: regions, configuration: configuration, usesTime: track.usesTime)
      for fix in track.fixes { detector.process(fix, into: &events) }
      drops += detector.dropCounts
    }
    return ReplayResult(
      events: events, dropCounts: drops, warnings: preparation.warnings,
      deviceIDs: preparation.tracks.map(\.deviceID))
  }
}
