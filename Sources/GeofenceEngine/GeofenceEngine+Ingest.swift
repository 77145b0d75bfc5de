import EventOutbox
import Foundation
import GeofenceGeometry
import GeofenceTransitions
import LocationAuthorization
import TrackFormats

extension GeofenceEngine {
  // MARK: Fixes

  /// Takes one fix of `device` and returns its events (see the type's live semantics).
  ///
  /// The fix passes the engine's time order check, the device's authorization gate and its
  /// detector. With an outbox, the events are committed to it before the call returns (one
  /// transaction; an event already queued with the same id is not added again); while the
  /// authorization decision forbids queueing, none are created at all (the gate drops the
  /// fix). With ``CheckpointPolicy/everyFix`` the device's state is saved too.
  /// - Parameters:
  ///   - fix: the fix; its ``GeofenceGeometry/LocationFix/deviceID`` is ignored.
  ///   - device: the device's id (any non-empty string).
  /// - Returns: the events, EXITs first, then ENTERs, then DWELLs, each by geofence id bytes.
  /// - Throws: ``EngineError/emptyDeviceID`` for an empty `device`;
  ///   ``EngineError/store(_:)`` when the outbox or the checkpoint cannot be written. The fix
  ///   is then not taken: the device's state, its session and the counts are as
  ///   before the call, so taking the same fix again once the store is writable gives the same
  ///   events, with the same ids.
  /// - Complexity: the detector's cost (one index query and O(q + m) for q candidates and m
  ///   regions inside) plus a dictionary lookup of the device; allocates the returned array.
  @discardableResult
  public func ingest(_ fix: LocationFix, device: String) throws(EngineError) -> [GeofenceEvent] {
    var events: [GeofenceEvent] = []
    try ingest(fix, device: device, into: &events)
    return events
  }

  /// ``ingest(_:device:)`` appending to `events`, for callers that reuse one array.
  /// - Returns: what the engine did with the fix.
  @discardableResult
  public func ingest(_ fix: LocationFix, device: String, into events: inout [GeofenceEvent])
    throws(EngineError) -> GateOutcome
  {
    try process(fix, device: device, usesTime: true, into: &events)
  }

  func process(
    _ fix: LocationFix, device: String, usesTime: Bool, into events: inout [GeofenceEvent]
  ) throws(EngineError) -> GateOutcome {
    // With a store written per fix, a fix is all or nothing: when the write fails, the
    // device, the session and the counts are put back as they were, so that the same fix
    // taken again gives the same events (with the same ids) instead of being dropped as a
    // duplicate of a fix whose events were never queued.
    guard outbox != nil || (configuration.checkpoints == .everyFix && storage != .inMemory)
    else { return try processOnce(fix, device: device, usesTime: usesTime, into: &events) }
    let saved = (
      device: devices[DeviceKey(device)], report: report, session: session, use: useCount
    )
    let first = events.count
    do {
      return try processOnce(fix, device: device, usesTime: usesTime, into: &events)
    } catch {
      devices[DeviceKey(device)] = saved.device
      report = saved.report
      session = saved.session
      useCount = saved.use
      events.removeSubrange(first...)
      throw error
    }
  }

  private func processOnce(
    _ fix: LocationFix, device: String, usesTime: Bool, into events: inout [GeofenceEvent]
  ) throws(EngineError) -> GateOutcome {
    let (outcome, timed) = try gate(fix, device: device, usesTime: usesTime)
    if !gated.isEmpty {
      let first = events.count
      let now = clock.now()
      let user = userID
      let anonymous = user == nil ? identityFile?.anonymousID : nil
      for g in gated {
        events.append(
          makeEvent(
            g, device: device, usesTime: timed, user: user, anonymous: anonymous,
            processedAt: now))
      }
      try stampSession(&events, from: first, at: now, skipping: try knownEvents(events[first...]))
      if configuration.flushPolicy.immediateOnTransition { flushRequested = true }
      try enqueue(events[first...])
    }
    if configuration.checkpoints == .everyFix, storage != .inMemory {
      try checkpoint(devices: [device])
    }
    return outcome
  }

  /// The engine's order check, the device's gate and detector for one fix: leaves the
  /// accepted transitions in ``gated`` and counts the fix in ``report``.
  /// - Returns: the outcome, and whether the device's detector uses fix times.
  func gate(_ fix: LocationFix, device: String, usesTime: Bool) throws(EngineError) -> (
    GateOutcome, timed: Bool
  ) {
    // The last fix's transitions, of whatever device, are never this fix's: cleared before
    // any return, a dropped fix included.
    if !gated.isEmpty { gated.removeAll(keepingCapacity: true) }
    if device.isEmpty { throw .emptyDeviceID }
    if !stateClaimed { try claimState() }
    report.fixes += 1
    // Events carry RFC 3339 times, which name the years 0000-9999 only.
    if usesTime, let t = fix.time, !Self.representableTimes.contains(t) {
      report.dropCounts[.missingTime] += 1
      return (.evaluated(.dropped(.missingTime)), usesTime)
    }
    // One hash of the device id for the whole fix: the slot found (or made) here is
    // mutated in place.
    var slot = devices.index(forKey: DeviceKey(device))
    if slot == nil {
      devices[DeviceKey(device)] = try loadedDevice(device) ?? newDevice(usesTime: usesTime)
      slot = devices.index(forKey: DeviceKey(device))
    }
    guard let slot else { preconditionFailure("the device was just added") }
    // Engine-level order: never reorder, relative to every fix taken (not only accepted).
    // One in-place access to the device: copying it would retain its detector's buffers.
    var timed = usesTime
    useCount &+= 1
    let use = useCount
    let outcome: GateOutcome = modifyDevice(at: slot) { d in
      d.lastUse = use
      timed = d.gate.detector.usesTime
      if usesTime, let reason = d.checkOrder(of: fix) { return .evaluated(.dropped(reason)) }
      d.dirty = true
      // The query buffer is the engine's, lent for the fix: a device in memory holds none.
      d.gate.detector.exchangeQueryBuffer(&queryBuffer)
      defer { d.gate.detector.exchangeQueryBuffer(&queryBuffer) }
      return d.gate.process(fix, into: &gated)
    }
    count(outcome)
    return (outcome, timed)
  }

  /// Claims a directory store for this engine's devices: takes `DIR/state.lock` exclusive
  /// (``DirectoryLock``), so that one engine at a time, in any process, fills the store.
  /// Two engines filling one store would each keep their own state of the same devices and
  /// queue every visit twice, under different event ids, and overwrite each other's
  /// checkpoints.
  ///
  /// The engine calls it before it first takes a fix or changes a device's stored state
  /// (``ingest(_:device:)``, ``replay(_:timeline:ignoringAccuracy:afterEvents:)``,
  /// ``restoreDevice(fromCheckpointRecord:)``, ``updateAuthorization(_:at:)``), whatever it
  /// read before; call it after creating the engine to learn at once. An engine that only delivers, syncs or reads a store never takes the lock, so
  /// `geofence upload`, `geofence sync` and `geofence regions` run beside a filling process.
  /// Does nothing in memory, without an outbox and with ``CheckpointPolicy/none`` (nothing of
  /// the devices is stored), or when the lock is held already. The lock is released with the
  /// engine (or when the process ends, after a kill too).
  /// - Throws: ``EngineError/storeInUse(_:)`` when another engine, in this process or
  ///   another, fills the store; ``EngineError/store(_:)`` when the lock file cannot be
  ///   opened.
  public func claimState() throws(EngineError) {
    guard !stateClaimed else { return }
    guard case .directory(let directory) = storage,
      outbox != nil || configuration.checkpoints != .none
    else {
      stateClaimed = true
      return
    }
    do {
      stateLock = try DirectoryLock(
        directory: directory, fileName: DirectoryLock.stateFileName, exclusive: true)
      stateClaimed = true
    } catch {
      switch error {
      case .held(let path):
        throw .storeInUse(
          "another engine fills \(directory) (it holds \(path)); one process at a time may "
            + "take fixes into a store")
      case .unavailable: throw .store("\(error)")
      }
    }
  }

  /// Counts a fix's gate outcome in ``report``: a fix dropped unauthorized (with each reason
  /// monitoring is off) or by the detector. Accepted fixes add nothing here.
  func count(_ outcome: GateOutcome) {
    switch outcome {
    case .notAuthorized:
      report.notAuthorized += 1
      for blocker in configuration.authorization.decide(authorization).blockers {
        report.blockedCounts[blocker, default: 0] += 1
      }
    case .evaluated(.dropped(let reason)):
      report.dropCounts[reason] += 1
    case .evaluated(.accepted):
      break
    }
  }

  /// Fix times an event can carry: RFC 3339 years 0000 to 9999, seconds since the Unix epoch
  /// (``TrackFormats/RFC3339/format(_:)``). A fix outside is dropped as
  /// ``GeofenceTransitions/DropReason/missingTime``.
  static let representableTimes = DetectorCheckpoint.representableTimes

  /// Mutates the device at `slot` of ``devices`` in place.
  func modifyDevice<T>(at slot: [DeviceKey: Device].Index, _ body: (inout Device) -> T) -> T {
    body(&devices.values[slot])
  }

  /// Mutates the device in place (it must be in ``devices``).
  func withDevice<T>(_ device: String, _ body: (inout Device) -> T) -> T {
    body(&devices[DeviceKey(device), default: newDevice(usesTime: true)])
  }

  func newDevice(usesTime: Bool) -> Device {
    Device(
      gate: MonitoringGate(
        detector: TransitionDetector(
          regions: live.regions, configuration: configuration.transitions, usesTime: usesTime),
        policy: configuration.authorization, state: authorization))
  }

  /// The device in memory, else restored from the store, else nil.
  /// - Throws: ``EngineError/damagedCheckpoint(device:reason:)`` when the store holds a row
  ///   for the device that cannot be decoded or restored (the row is left as it is);
  ///   ``EngineError/store(_:)`` when the store cannot be read.
  func loadedDevice(_ device: String) throws(EngineError) -> Device? {
    if let d = devices[DeviceKey(device)] { return d }
    guard configuration.checkpoints != .none else { return nil }
    let stored: DeviceStateStore.StoredCheckpoint?
    do { stored = try stateStore.load(device: device) } catch { throw .store("\(error)") }
    switch stored {
    case nil: return nil
    case .damaged(let reason)?: throw .damagedCheckpoint(device: device, reason: reason)
    case .intact(let saved)?:
      guard let d = restoredDevice(from: saved) else {
        throw .damagedCheckpoint(
          device: device,
          reason: "inconsistent checkpoint (a coordinate or time out of range, a negative count)")
      }
      return d
    }
  }

  /// A device restored from `saved` against the live set, or nil when the checkpoint is
  /// inconsistent (see ``GeofenceTransitions/TransitionDetector/init(regions:configuration:checkpoint:slotOfID:)``).
  func restoredDevice(from saved: DeviceCheckpoint) -> Device? {
    let live = self.live
    if let seen = saved.lastSeenTime, seen.isFinite,
      !DetectorCheckpoint.representableTimes.contains(seen)
    {
      return nil
    }
    guard
      let detector = TransitionDetector(
        regions: live.regions, configuration: configuration.transitions,
        checkpoint: saved.detector, slotOfID: { live.slot(of: $0) })
    else { return nil }
    var coordinate: Coordinate?
    if let lat = saved.lastSeenLatitude, let lon = saved.lastSeenLongitude {
      coordinate = try? Coordinate(latitude: lat, longitude: lon)
    }
    return Device(
      gate: MonitoringGate(
        detector: detector, policy: configuration.authorization, state: authorization,
        restoring: saved.gate),
      lastSeenTime: saved.lastSeenTime, lastSeenCoordinate: coordinate)
  }

  func makeEvent(
    _ g: GatedEvent, device: String, usesTime: Bool, user: String?, anonymous: String?,
    processedAt: Double
  ) -> GeofenceEvent {
    let t = g.transition
    let slot = Int(t.slot)
    let details = live.details(at: slot)
    let id = eventID(
      slot: slot, type: t.type,
      milliseconds: usesTime ? t.fix.time.map { Int64(($0 * 1000).rounded()) } : nil,
      inferred: t.inferred,
      fixIndex: t.fix.sourceIndex, device: device)
    return GeofenceEvent(
      id: id, type: t.type, geofenceID: live.id(at: slot), geofenceName: details?.name,
      metadataJSON: details?.metadataJSON, url: details?.url, deviceID: device,
      userID: user, anonymousID: anonymous, time: usesTime ? t.fix.time : nil,
      processedAt: processedAt, latitude: t.fix.coordinate.latitude,
      longitude: t.fix.coordinate.longitude, accuracy: t.fix.horizontalAccuracy,
      distanceMeters: t.distanceMeters, dwellSeconds: t.dwellSeconds,
      visitSeconds: t.visitSeconds, afterGap: g.afterGap, gapStart: g.gapStart,
      fixIndex: t.fix.sourceIndex >= 0 ? t.fix.sourceIndex : nil, inferred: t.inferred)
  }

  /// The stable event id (see the type's "Event ids"): `OutboxEventID` over geofence id,
  /// lifetime, type, fix time in whole milliseconds (`milliseconds`, as decimal digits,
  /// followed by `~` for an inferred event, whose time is the interpolated one, so that it
  /// never shares an id with an event of a fix) or `#` and the fix index for a track without
  /// times, and device.
  /// - Complexity: O(bytes of the components); one allocation (the id).
  func eventID(
    slot: Int, type: TransitionType, milliseconds: Int64?, inferred: Bool = false,
    fixIndex: Int, device: String
  ) -> String {
    eventIDHash(
      slot: slot, type: type, milliseconds: milliseconds, inferred: inferred,
      fixIndex: fixIndex, device: device
    ).id()
  }

  /// ``eventID(slot:type:milliseconds:inferred:fixIndex:device:)`` before it becomes text.
  /// - Complexity: O(bytes of the components); allocates nothing for a fix with a time
  ///   that is not inferred.
  func eventIDHash(
    slot: Int, type: TransitionType, milliseconds: Int64?, inferred: Bool = false,
    fixIndex: Int, device: String
  ) -> OutboxEventID.Builder {
    Self.eventIDHash(
      live.eventIDStart(at: slot), type: type, milliseconds: milliseconds,
      inferred: inferred, fixIndex: fixIndex, device: device)
  }

  /// ``eventIDHash(slot:type:milliseconds:inferred:fixIndex:device:)`` continuing the slot's
  /// hash `slotHash` (``LiveGeofenceSet/eventIDStart(at:)``).
  static func eventIDHash(
    _ slotHash: OutboxEventID.Builder, type: TransitionType, milliseconds: Int64?,
    inferred: Bool, fixIndex: Int, device: String
  ) -> OutboxEventID.Builder {
    var id = slotHash
    id.add(type.rawValue)
    if let milliseconds {
      if inferred { id.add(String(milliseconds) + "~") } else { id.add(decimal: milliseconds) }
    } else {
      id.add("#\(fixIndex)")
    }
    id.add(device)
    return id
  }

  /// With sessions and an outbox: the indices of `events` already queued or recently
  /// delivered (made again from a fix taken again after a crash), which the outbox will not
  /// add again and which must not advance the session's event count.
  func knownEvents(_ events: ArraySlice<GeofenceEvent>) throws(EngineError) -> Set<Int> {
    guard configuration.sessions != nil, let outbox else { return [] }
    var known: Set<Int> = []
    do {
      for k in events.indices where try outbox.knows(id: events[k].id) { known.insert(k) }
    } catch { throw .store("outbox: \(error)") }
    return known
  }

  func enqueue(_ events: ArraySlice<GeofenceEvent>) throws(EngineError) {
    for e in events {
      report.eventCounts[e.type] += 1
      if e.afterGap { report.afterGapEvents += 1 }
      if e.isRemoval { report.removalEvents += 1 }
    }
    guard let outbox, !events.isEmpty else { return }
    do {
      report.enqueued += try outbox.enqueue(
        contentsOf: events.map {
          OutboxEvent(id: $0.id, payload: GeofenceEventEncoder.payload($0))
        })
    } catch { throw .store("outbox: \(error)") }
  }

  // MARK: Checkpoints

  /// Saves every device changed since the last checkpoint to `state.sqlite`, in one
  /// transaction. Nothing to do in memory.
  /// - Throws: ``EngineError/store(_:)``.
  public func checkpoint() throws(EngineError) {
    // By index: iterating the pairs would copy (retain) every device's buffers.
    var dirty: [String] = []
    for i in devices.indices where devices.values[i].dirty { dirty.append(devices.keys[i].id) }
    try checkpoint(devices: dirty)
  }

  func checkpoint(devices ids: [String]) throws(EngineError) {
    guard storage != .inMemory, configuration.checkpoints != .none, !ids.isEmpty else { return }
    var rows: [(String, DeviceCheckpoint)] = []
    rows.reserveCapacity(ids.count)
    for id in ids {
      guard let i = devices.index(forKey: DeviceKey(id)) else { continue }
      rows.append((id, Self.checkpoint(of: devices.values[i])))
    }
    do { try stateStore.save(rows) } catch { throw .store("checkpoint: \(error)") }
    for id in ids { devices[DeviceKey(id)]?.dirty = false }
  }

  /// What ``checkpoint()`` saves of `d`.
  static func checkpoint(of d: Device) -> DeviceCheckpoint {
    DeviceCheckpoint(
      gate: d.gate.checkpoint, detector: d.gate.detector.checkpoint,
      lastSeenTime: d.lastSeenTime, lastSeenLatitude: d.lastSeenCoordinate?.latitude,
      lastSeenLongitude: d.lastSeenCoordinate?.longitude)
  }

  /// When more than `limit` devices are in memory, forgets the least recently used of those
  /// that have no unsaved changes, until `limit` remain (or no clean device is left), so
  /// that an engine fed by very many devices keeps a bounded number in memory; a forgotten
  /// device is restored from `state.sqlite` at its next fix. "Used" means given a fix by
  /// ``ingest(_:device:)`` or loaded by ``deviceState(_:)``. Does nothing in memory storage.
  ///
  /// Call it with some slack below the largest count wanted (say, when 10,000 are held, keep
  /// at most 9,000), so that each call drops many devices at once.
  /// - Parameter limit: how many devices may stay in memory, at least 0. Default 0 (every
  ///   clean device).
  /// - Returns: how many were dropped from memory.
  /// - Complexity: O(d log d) for d devices in memory when more than `limit` are; O(1)
  ///   otherwise.
  @discardableResult
  public func evictCleanDevices(keepingAtMost limit: Int = 0) -> Int {
    guard storage != .inMemory, configuration.checkpoints != .none, devices.count > limit
    else { return 0 }
    var clean: [(lastUse: UInt64, id: String)] = []
    for i in devices.indices where !devices.values[i].dirty {
      clean.append((devices.values[i].lastUse, devices.keys[i].id))
    }
    let excess = min(devices.count - max(limit, 0), clean.count)
    guard excess > 0 else { return 0 }
    clean.sort { $0.lastUse < $1.lastUse }
    for k in 0..<excess { devices[DeviceKey(clean[k].id)] = nil }
    return excess
  }

  /// Number of devices in memory. O(1).
  public var inMemoryDeviceCount: Int { devices.count }

  // MARK: Authorization

  /// Applies a change of authorization that took effect at `time` (seconds since the Unix
  /// epoch) to every device, and keeps it in the store.
  ///
  /// A downgrade keeps region state and queued events and opens a gap (see
  /// ``MonitoringGate``). With consent withdrawn, every queued event is deleted and every
  /// device's region state is forgotten (when consent returns, monitoring starts as on a
  /// fresh install).
  /// - Returns: the policy's decision.
  /// - Complexity: O(d) for d devices, loading every saved device.
  @discardableResult
  public func updateAuthorization(_ state: AuthorizationState, at time: Double)
    throws(EngineError) -> AuthorizationDecision
  {
    try claimState()
    let decision = configuration.authorization.decide(state)
    do {
      if decision.mustDeleteQueuedEvents {
        if let outbox { report.deletedForConsent += try outbox.deleteAll() }
        devices.removeAll()
        try stateStore.forgetAll()
      } else {
        try loadAllDevices()
        for id in devices.keys.map(\.id) {
          withDevice(id) { d in
            let before = d.gate.gapCount
            d.gate.update(state, at: time)
            report.gaps += d.gate.gapCount - before
            d.dirty = true
          }
        }
      }
      if configuration.flushPolicy.onBackground, authorization.appState == .foreground,
        state.appState == .background
      {
        flushRequested = true
      }
      authorization = state
      try stateStore.setValue(state, key: "authorization")
    } catch let e as EngineError { throw e } catch { throw .store("\(error)") }
    try checkpoint()
    return decision
  }

  /// Turns the app's tracking consent on or off at `time` (see ``updateAuthorization(_:at:)``).
  @discardableResult
  public func setConsent(_ consent: Bool, at time: Double) throws(EngineError)
    -> AuthorizationDecision
  {
    var state = authorization
    state.trackingConsent = consent
    return try updateAuthorization(state, at: time)
  }

  func loadAllDevices() throws {
    let statement = try stateStore.database.prepare("SELECT device_id FROM device_state")
    var ids: [String] = []
    while try statement.step() { if let id = statement.string(at: 0) { ids.append(id) } }
    for id in ids where devices[DeviceKey(id)] == nil {
      if let d = try loadedDevice(id) { devices[DeviceKey(id)] = d }
    }
  }
}
