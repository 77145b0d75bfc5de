import GeofenceGeometry
import GeofenceIndex
import GeofenceTransitions

/// One transition reported by a ``GeofenceMonitor``, addressed by geofence id (slots change
/// when the set is replaced).
public struct MonitorEvent: Hashable, Sendable {
  /// What happened.
  public var type: TransitionType
  /// The geofence's id.
  public var geofenceID: String
  /// The device, `nil` for fixes without a device id.
  public var deviceID: String?
  /// The fix that caused the event; `nil` for an EXIT caused by removing the geofence.
  public var fix: LocationFix?
  /// Seconds since 1970: the fix time, or for a removal EXIT the time given to
  /// ``GeofenceMonitor/apply(_:at:options:)``.
  public var time: Double?
  /// Metres from the geofence's centre to the fix; `nil` for a removal EXIT.
  public var distanceMeters: Double?
  /// For DWELL: seconds inside at the dwell fix.
  public var dwellSeconds: Double?
  /// True for an EXIT emitted because the geofence was removed from the set (not because the
  /// device moved).
  public var isRemoval: Bool

  public init(
    type: TransitionType, geofenceID: String, deviceID: String?, fix: LocationFix?,
    time: Double?, distanceMeters: Double?, dwellSeconds: Double? = nil, isRemoval: Bool = false
  ) {
    self.type = type
    self.geofenceID = geofenceID
    self.deviceID = deviceID
    self.fix = fix
    self.time = time
    self.distanceMeters = distanceMeters
    self.dwellSeconds = dwellSeconds
    self.isRemoval = isRemoval
  }
}

/// How ``GeofenceMonitor/apply(_:at:options:)`` treats a changed set.
public struct MonitorApplyOptions: Hashable, Sendable {
  /// Emit an EXIT, flagged ``MonitorEvent/isRemoval``, for each device inside a removed
  /// geofence. Default false: the visit is dropped silently.
  public var emitsExitForRemovedGeofences = false

  public init(emitsExitForRemovedGeofences: Bool = false) {
    self.emitsExitForRemovedGeofences = emitsExitForRemovedGeofences
  }
}

/// What one ``GeofenceMonitor/apply(_:at:options:)`` did.
public struct MonitorApplyReport: Sendable {
  /// Removal EXITs (empty unless asked for).
  public var events: [MonitorEvent]
  /// Whether the spatial index was rebuilt: only when the insertions since the last build pass
  /// the index's limit (``GeofenceIndex/GridIndex/pendingLimit``); otherwise added, removed and
  /// moved geofences are applied in place.
  public var rebuiltIndex: Bool
  /// Visits carried over to the new set, over all devices.
  public var carriedVisits: Int
  /// Visits dropped with their geofence, over all devices.
  public var droppedVisits: Int
}

/// The live geofence set of a running engine, and the per-device transition state over it.
///
/// Owns the current geofences (by slot), their ``GeofenceTransitions/RegionSet`` and one
/// ``GeofenceTransitions/TransitionDetector`` per device. ``apply(_:at:options:)`` installs a
/// synced change without losing who is inside what:
/// - geofences whose geometry did not change (including those whose name or metadata changed)
///   keep every device's inside/outside state, pending confirmation and dwell timer: no new
///   ENTER, and DWELL still fires at `enterTime + loiteringDelaySeconds`;
/// - removed geofences drop their state silently, or with a flagged EXIT
///   (``MonitorApplyOptions/emitsExitForRemovedGeofences``);
/// - a geofence whose centre or radius changed keeps its visits, and is re-evaluated against
///   the new geometry at each device's next accepted fix: the device EXITs then if it is
///   outside the new disc by more than the hysteresis, and ENTERs a moved geofence that now
///   contains it;
/// - added geofences start outside and ENTER at the next fix inside.
///
/// **Cost of apply.** Name or metadata changes: O(k) for k changed geofences. Added, removed
/// and moved geofences change the live index in place, without a rebuild: a removal is O(1)
/// (the slot is retired), an addition or a move goes to the index's short list of recent
/// insertions (O(1), queried until the index folds it in with a rebuild every ~√n insertions,
/// see ``GeofenceIndex/GridIndex/insert(_:)``). Each device's visits are then remapped, O(m)
/// for m visits. Not `Sendable`: use from one isolation domain.
public final class GeofenceMonitor {
  /// Geofence per slot of ``regions``; slots of removed or moved geofences keep their last
  /// definition (``GeofenceTransitions/RegionSet/isRemoved(_:)`` tells them).
  private var slotGeofences: [Geofence]
  /// The monitored geofences, in slot order.
  /// - Complexity: O(n) for n slots; allocates.
  public var geofences: [Geofence] {
    slotGeofences.indices.filter { !regions.isRemoved(Int32($0)) }.map { slotGeofences[$0] }
  }
  /// Number of monitored geofences. O(1).
  public var count: Int { regions.liveCount }
  /// The regions, by slot. Slots are stable: a removed or moved geofence retires its slot, and
  /// added or moved geofences get new slots at the end.
  public private(set) var regions: RegionSet
  /// The detector rules, shared by every device.
  public let configuration: TransitionConfiguration
  /// Cell size for rebuilt indexes (see ``GeofenceIndex/GridIndex``); `nil` for the default.
  public let cellSizeDegrees: Double?
  private var slotByID: [String: Int32]
  private var detectors: [String?: TransitionDetector] = [:]
  private var scratch: [TransitionEvent] = []

  /// - Parameters:
  ///   - geofences: the initial set; ids unique.
  ///   - configuration: detector rules for every device.
  ///   - cellSizeDegrees: index cell size, `nil` for the index's default.
  /// - Complexity: O(n log n) for n geofences (the region set).
  public init(
    geofences: [Geofence], configuration: TransitionConfiguration = TransitionConfiguration(),
    cellSizeDegrees: Double? = nil
  ) {
    self.slotGeofences = geofences
    self.configuration = configuration
    self.cellSizeDegrees = cellSizeDegrees
    self.regions = RegionSet(geofences: geofences, cellSizeDegrees: cellSizeDegrees)
    var slots: [String: Int32] = [:]
    slots.reserveCapacity(geofences.count)
    for (i, g) in geofences.enumerated() { slots[g.id] = Int32(i) }
    self.slotByID = slots
  }

  /// The geofence with `id`, if monitored.
  public func geofence(id: String) -> Geofence? {
    slotByID[id].map { slotGeofences[Int($0)] }
  }

  /// Ids of the geofences `deviceID` is inside, sorted.
  public func insideIDs(device deviceID: String?) -> [String] {
    guard let detector = detectors[deviceID] else { return [] }
    return detector.insideSlots.map { slotGeofences[Int($0)].id }.sorted()
  }

  /// Feeds one fix of its device (``GeofenceGeometry/LocationFix/deviceID``) and returns the
  /// events, in the detector's order.
  /// - Complexity: one detector step (see ``GeofenceTransitions/TransitionDetector``) plus a
  ///   dictionary lookup of the device.
  public func process(_ fix: LocationFix) -> [MonitorEvent] {
    scratch.removeAll(keepingCapacity: true)
    var detector =
      detectors.removeValue(forKey: fix.deviceID)
      ?? TransitionDetector(regions: regions, configuration: configuration)
    detector.process(fix, into: &scratch)
    detectors[fix.deviceID] = detector
    return scratch.map { e in
      MonitorEvent(
        type: e.type, geofenceID: slotGeofences[Int(e.slot)].id, deviceID: fix.deviceID,
        fix: e.fix,
        time: e.fix.time, distanceMeters: e.distanceMeters, dwellSeconds: e.dwellSeconds)
    }
  }

  /// Replaces the monitored set by `newGeofences`, as ``apply(_:at:options:)`` of the diff.
  public func replace(
    with newGeofences: [Geofence], at time: Double?, options: MonitorApplyOptions = .init()
  ) -> MonitorApplyReport {
    apply(GeofenceDiff(from: geofences, to: newGeofences), at: time, options: options)
  }

  /// Installs a change of the set (see the type's discussion).
  /// - Parameters:
  ///   - diff: the change, with details (``GeofenceDiff/includesDetails``), relative to the
  ///     monitored set. Removed ids that are not monitored are ignored; an added id that is
  ///     already monitored replaces it.
  ///   - time: the time to give removal EXITs (seconds since 1970).
  ///   - options: see ``MonitorApplyOptions``.
  /// - Returns: removal EXITs and what was done.
  public func apply(
    _ diff: GeofenceDiff, at time: Double?, options: MonitorApplyOptions = .init()
  ) -> MonitorApplyReport {
    precondition(diff.includesDetails, "applying a diff needs its geofences")
    let carriedBefore = detectors.values.reduce(0) { $0 + $1.visitStates.count }

    // Classify by slot: removed, moved (geometry changed: a new slot), renamed in place, new.
    var removedSlots = Set<Int32>()
    for id in diff.removed { if let s = slotByID[id] { removedSlots.insert(s) } }
    var moves: [(old: Int32, geofence: Geofence)] = []
    var renames: [(slot: Int32, geofence: Geofence)] = []
    var additions: [Geofence] = []
    func classify(_ g: Geofence) {
      guard let s = slotByID[g.id], !removedSlots.contains(s) else {
        additions.append(g)
        return
      }
      if slotGeofences[Int(s)].region == g.region {
        renames.append((s, g))
      } else {
        moves.append((s, g))
      }
    }
    for g in diff.geometryChanged { classify(g) }
    for g in diff.metadataChanged { classify(g) }
    for g in diff.added { classify(g) }

    for (s, g) in renames { slotGeofences[Int(s)] = g }
    if removedSlots.isEmpty && moves.isEmpty && additions.isEmpty {
      return MonitorApplyReport(
        events: [], rebuiltIndex: false, carriedVisits: carriedBefore, droppedVisits: 0)
    }

    // Visits of removed geofences end here (silently, or with a flagged EXIT).
    var events: [MonitorEvent] = []
    var dropped = 0
    for (device, detector) in detectors {
      for visit in detector.visitStates where removedSlots.contains(visit.slot) {
        dropped += 1
        if options.emitsExitForRemovedGeofences {
          events.append(
            MonitorEvent(
              type: .exit, geofenceID: slotGeofences[Int(visit.slot)].id, deviceID: device,
              fix: nil, time: time, distanceMeters: nil, isRemoval: true))
        }
      }
    }
    events.sort {
      ($0.deviceID ?? "", $0.geofenceID) < ($1.deviceID ?? "", $1.geofenceID)
    }

    // Detach the detectors from the region set so that the changes below mutate it in place
    // instead of copying its arrays.
    var detached = detectors
    detectors = [:]
    let placeholder = RegionSet(geofences: [])
    for key in Array(detached.keys) { detached[key]?.detachRegions(placeholder) }

    let pendingBefore = regions.index.pendingInsertCount
    var moved: [Int32: Int32] = [:]
    for s in removedSlots {
      regions.remove(s)
      slotByID[slotGeofences[Int(s)].id] = nil
    }
    for (old, g) in moves {
      regions.remove(old)
      let slot = regions.append(id: g.id, region: g.region)
      slotGeofences.append(g)
      slotByID[g.id] = slot
      moved[old] = slot
    }
    for g in additions {
      let slot = regions.append(id: g.id, region: g.region)
      slotGeofences.append(g)
      slotByID[g.id] = slot
    }
    let rebuilt =
      regions.index.pendingInsertCount < pendingBefore + moves.count + additions.count

    for (device, detector) in detached {
      detectors[device] = detector.migrated(to: regions) { old in
        removedSlots.contains(old) ? nil : (moved[old] ?? old)
      }
    }
    return MonitorApplyReport(
      events: events, rebuiltIndex: rebuilt, carriedVisits: carriedBefore - dropped,
      droppedVisits: dropped)
  }
}
