import EventOutbox
import Foundation
import GeofenceGeometry
import GeofenceSync
import GeofenceTransitions
import Networking
import RetryTiming

/// What one ``GeofenceEngine/sync(full:)`` did.
public struct EngineSyncReport: Sendable {
  /// The sync client's report: kind, versions, the diff, rejections, requests.
  public var sync: SyncReport
  /// Removal EXITs (only with ``GeofenceEngine/Configuration/emitsExitForRemovedGeofences``),
  /// already in the outbox when there is one.
  public var events: [GeofenceEvent]
  /// Visits carried over to the new set, over all devices in memory.
  public var carriedVisits: Int
  /// Visits ended with their removed geofence.
  public var droppedVisits: Int
  /// Whether the index was rebuilt (else the change was applied in place).
  public var rebuiltIndex: Bool
}

extension GeofenceEngine {
  /// Fetches the geofence set (``GeofenceSync/GeofenceSyncClient``), and applies the change to
  /// the one live set that gate and detector use, without losing who is inside what:
  /// - geofences whose geometry did not change (name or metadata may have) keep every
  ///   device's state, pending confirmation and dwell timer: no new ENTER, and DWELL still
  ///   fires at `enterTime + loiteringDelaySeconds`;
  /// - removed geofences end their visits silently, or with a flagged EXIT
  ///   (``Configuration/emitsExitForRemovedGeofences``) at the clock's time and the device's
  ///   last accepted position;
  /// - a geofence whose shape changed (centre, radius, or a polygon's geometry, vertices or
  ///   holes, even within the same bounding box) keeps its visits and is re-evaluated at each
  ///   device's next accepted fix (EXIT then if the device is beyond the new shape's
  ///   hysteresis; a moved geofence that now contains the device is entered);
  /// - added geofences start outside.
  ///
  /// Devices saved in `state.sqlite` but not in memory pick the change up when they are
  /// restored (visits of removed geofences are then dropped silently).
  ///
  /// **Other processes on the same store.** A sync holds the directory's `sync.lock`
  /// exclusive from before its first request until its change is stored and applied, so two
  /// syncs of one store (a `geofence sync` from cron beside a `stream --server`) never stage
  /// their listings into each other; a sync that finds the lock held waits for it, up to its
  /// deadline (``GeofenceSync/SyncConfiguration/deadlineSeconds``), and then fails as in use.
  /// When the store holds a set that another process synced since this engine's live set was
  /// loaded or synced (its generation differs), the live set is first brought to the stored
  /// one by the same rules (removals end visits, with their EXITs when configured; moved
  /// geofences are re-evaluated), and the sync's change is applied after it: the changes
  /// asked for are those since the stored version, so without this step they would land on
  /// a set that lacks the other process's changes.
  /// - Parameter full: list everything, unconditionally (no `If-None-Match`), instead of asking
  ///   for changes: the stored set is replaced by the server's, which puts right a set that
  ///   drifted from it under one version name.
  /// - Throws: ``EngineError/invalidConfiguration(_:)`` without ``Configuration/sync`` or with
  ///   a fixed set; ``EngineError/sync(_:)`` when the sync failed (the stored and live sets
  ///   are kept, the stored one marked stale); ``EngineError/storeInUse(_:)`` when another
  ///   process's sync of the directory held `sync.lock` until the deadline, or at once while
  ///   another sync of this engine awaits.
  nonisolated(nonsending) public func sync(full: Bool = false) async throws(EngineError)
    -> EngineSyncReport
  {
    guard var syncConfiguration = configuration.sync else {
      throw .invalidConfiguration("no sync configured")
    }
    guard !hasFixedSet else {
      throw .invalidConfiguration("the engine monitors a fixed set; sync is off")
    }
    syncConfiguration.reportsChangedGeofences = true
    guard !syncInProgress else {
      throw .storeInUse("a sync of this engine is already in progress; try again after it")
    }
    syncInProgress = true
    defer { syncInProgress = false }
    let lock = try await takeSyncLock(waitingAtMost: syncConfiguration.deadlineSeconds)
    defer { withExtendedLifetime(lock) {} }
    let caughtUp = try catchUpWithStore()
    let client = GeofenceSyncClient(
      configuration: syncConfiguration, store: geofenceStore, transport: transport,
      clock: clock)
    let report: SyncReport
    do { report = try await client.sync(full: full) } catch { throw .sync(error) }
    var applied = try apply(report)
    if let caughtUp {
      // The sync's own step counted the visits carried through both steps.
      applied.events = caughtUp.events + applied.events
      applied.droppedVisits += caughtUp.dropped
      applied.rebuiltIndex = applied.rebuiltIndex || caughtUp.rebuilt
    }
    return applied
  }

  /// The directory store's `sync.lock`, taken exclusive (see ``sync(full:)``); nil in memory.
  /// Waits for another holder, trying every 50 ms, at most `seconds` of real (monotonic) time:
  /// the wait is real, whatever the engine's clock says.
  nonisolated(nonsending) private func takeSyncLock(waitingAtMost seconds: Double)
    async throws(EngineError)
    -> DirectoryLock?
  {
    guard case .directory(let directory) = storage else { return nil }
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, min(seconds, 86_400)) * 1e9)
    while true {
      do {
        return try DirectoryLock(
          directory: directory, fileName: DirectoryLock.syncFileName, exclusive: true)
      } catch .held(let path) {
        if DispatchTime.now().uptimeNanoseconds >= end {
          throw .storeInUse("\(path): another process is syncing the store")
        }
        try? await Task.sleep(nanoseconds: 50_000_000)
      } catch {
        throw .store("\(error)")
      }
    }
  }

  /// When the store's set generation is not the live set's (another process synced the
  /// store), brings the live set to the stored set (``applyChange(_:)``) and returns what
  /// that did; nil when they agree, in memory and for a fixed set.
  private func catchUpWithStore() throws(EngineError) -> (
    events: [GeofenceEvent], carried: Int, dropped: Int, rebuilt: Bool
  )? {
    guard let known = liveGeneration else { return nil }
    let stored: [Geofence]
    let generation: Int64
    do {
      generation = try geofenceStore.setIdentity().generation
      guard generation != known else { return nil }
      stored = try geofenceStore.geofences()
    } catch { throw .store("\(error)") }
    let change = try applyChange(GeofenceDiff(from: live.geofences, to: stored))
    liveGeneration = generation
    return change
  }

  /// Applies a synced change to the live set (see ``sync(full:)``).
  func apply(_ report: SyncReport) throws(EngineError) -> EngineSyncReport {
    let change = try applyChange(report.diff)
    if liveGeneration != nil {
      do { liveGeneration = try geofenceStore.setIdentity().generation } catch {
        throw .store("\(error)")
      }
    }
    return EngineSyncReport(
      sync: report, events: change.events, carriedVisits: change.carried - change.dropped,
      droppedVisits: change.dropped, rebuiltIndex: change.rebuilt)
  }

  /// Applies `diff` to the live set and every device (see ``sync(full:)``): the removal
  /// EXITs (queued in the outbox when there is one), the visits carried before the change,
  /// the visits dropped with their geofences, and whether the index was rebuilt.
  func applyChange(_ diff: GeofenceDiff) throws(EngineError) -> (
    events: [GeofenceEvent], carried: Int, dropped: Int, rebuilt: Bool
  ) {
    // The devices' stored state and their removal EXITs belong to the engine that fills the
    // store (state.lock, see claimState()). One that does not fill it takes the lock for the
    // change only; while another engine fills, this one changes the set alone (its devices
    // in memory follow it, unsaved), and the filler brings its devices to the stored set,
    // with their removal EXITs, when it next syncs (catchUpWithStore()).
    let claimedBefore = stateClaimed
    var ownsDevices = true
    if !claimedBefore {
      do { try claimState() } catch {
        guard case .storeInUse = error else { throw error }
        ownsDevices = false
      }
    }
    defer {
      if !claimedBefore, stateLock != nil {
        stateLock = nil
        stateClaimed = false
      }
    }
    // A device dropped from memory keeps its checkpoint, whose visits name regions by id: one
    // that names a removed geofence is restored now, so that it drops the visit (and gets its
    // removal EXIT) as the devices in memory do. Restored later, it would keep a visit to a
    // geofence that no longer exists, or to a new one given the same id.
    if ownsDevices, !diff.removed.isEmpty, storage != .inMemory, configuration.checkpoints != .none
    {
      let referencing: [String]
      do { referencing = try stateStore.devices(referencingAnyOf: diff.removed) } catch {
        throw .store("\(error)")
      }
      for id in referencing.sorted() where devices[DeviceKey(id)] == nil {
        // A damaged checkpoint stays as it is: its device's fixes are held back anyway.
        if let device = try? loadedDevice(id) { devices[DeviceKey(id)] = device }
      }
    }
    let carriedBefore = devices.values.reduce(0) { $0 + $1.gate.detector.visitStates.count }
    // Detach every detector from the region set so that the set changes in place.
    let placeholder = RegionSet(geofences: [])
    for id in devices.keys.map(\.id) {
      withDevice(id) { $0.gate.detector.detachRegions(placeholder) }
    }
    let change = live.apply(diff)
    geofenceText.removeAll()

    var removals: [GeofenceEvent] = []
    var dropped = 0
    let now = clock.now()
    for id in devices.keys.map(\.id).sorted() {
      withDevice(id) { d in
        for visit in d.gate.detector.visitStates where change.removed.contains(visit.slot) {
          dropped += 1
          guard ownsDevices, configuration.emitsExitForRemovedGeofences,
            let last = d.gate.detector.lastAcceptedPosition
          else { continue }
          let slot = Int(visit.slot)
          let details = live.details(at: slot)
          let user = userID
          removals.append(
            GeofenceEvent(
              id: eventID(
                slot: slot, type: .exit, milliseconds: Int64((now * 1000).rounded()),
                fixIndex: -1, device: id), type: .exit, geofenceID: live.id(at: slot),
              geofenceName: details?.name, metadataJSON: details?.metadataJSON,
              url: details?.url,
              deviceID: id,
              userID: user, anonymousID: user == nil ? identityFile?.anonymousID : nil,
              time: now, processedAt: now, latitude: last.coordinate.latitude,
              longitude: last.coordinate.longitude, accuracy: last.accuracyMeters,
              distanceMeters: live.regions.eventDistance(at: visit.slot, to: last.coordinate),
              visitSeconds: visit.enterTime.isNaN ? nil : now - visit.enterTime,
              isRemoval: true))
        }
        let regions = live.regions
        d.gate.detector = d.gate.detector.migrated(to: regions) { old in
          change.removed.contains(old) ? nil : (change.moved[old] ?? old)
        }
        if ownsDevices { d.dirty = true }
      }
    }
    guard ownsDevices else { return ([], carriedBefore, dropped, change.rebuiltIndex) }
    removals.sort { ($0.deviceID, $0.geofenceID) < ($1.deviceID, $1.geofenceID) }
    try stampSession(&removals, from: 0, at: now)
    try enqueue(removals[...])
    try checkpoint()
    return (removals, carriedBefore, dropped, change.rebuiltIndex)
  }

  // MARK: Upload

  /// Sends every queued event now, batch after batch (see ``EventOutbox/OutboxUploader``),
  /// after saving the device checkpoints; the other destinations are flushed too (see
  /// ``deliver(until:skipping:)``, whose report has them all).
  /// - Parameter deadline: the time on the engine's clock (seconds since the Unix epoch) after
  ///   which no request starts and no wait begins; `nil` (default) for now plus
  ///   ``UploadConfiguration/deadlineSeconds``. Pass one deadline to several calls to bound
  ///   them together.
  /// - Returns: what was sent; ``EventOutbox/UploadReport/stopped`` tells why events remain.
  /// - Throws: ``EngineError/invalidConfiguration(_:)`` without an outbox or an upload
  ///   configuration; ``EngineError/accountMismatch(stored:given:)`` when the outbox holds
  ///   events queued for another API key; ``EngineError/store(_:)``;
  ///   ``EngineError/storeInUse(_:)`` while another delivery of this engine awaits.
  nonisolated(nonsending) public func flush(until deadline: Double? = nil) async throws(EngineError)
    -> UploadReport
  {
    guard outbox != nil else { throw .invalidConfiguration("no outbox configured") }
    guard configuration.upload != nil else {
      throw .invalidConfiguration("no upload server configured")
    }
    return try await deliver(until: deadline).server ?? UploadReport()
  }

  /// Sends only the batches that are due (full, or whose oldest event waited the batch
  /// interval). Call it after ingesting and on a timer.
  /// - Parameter deadline: as for ``flush(until:)``.
  nonisolated(nonsending) public func sendDueBatches(until deadline: Double? = nil)
    async throws(EngineError)
    -> UploadReport
  {
    let uploader = try makeUploader(until: deadline)
    // The delivery awaiting on the owner's actor sends what is due.
    if deliveryInProgress { return UploadReport() }
    deliveryInProgress = true
    defer { deliveryInProgress = false }
    do { return try await uploader.sendDueBatches() } catch {
      throw Self.outboxError(error)
    }
  }

  /// The fingerprint of the API key the outbox's events belong to, if recorded: the outbox's
  /// own record (``EventOutbox/Outbox/account()``), else the one an earlier version kept in
  /// `state.sqlite`.
  public func outboxAccount() throws(EngineError) -> String? {
    do {
      if let recorded = try outbox?.account() { return recorded }
      return try stateStore.value(String.self, key: "outbox_account")
    } catch { throw .store("\(error)") }
  }

  /// Gives the queued events of the directory store `directory` to `key`'s account: the
  /// outbox's record of their account becomes `key`'s fingerprint, whatever it was. For a
  /// user who queued events with a mistyped key (which the server never accepted) and would
  /// otherwise be refused (``EngineError/accountMismatch(stored:given:)``) for good; a
  /// deliberate step, since the binding exists so that events of one account never reach
  /// another. Does nothing when the store has no outbox.
  /// - Returns: the fingerprint recorded before, if any.
  /// - Throws: ``EngineError/store(_:)`` when the outbox cannot be opened or written.
  @discardableResult
  public static func rebindOutbox(directory: String, key: String) throws(EngineError)
    -> String?
  {
    let path = URL(fileURLWithPath: directory).appendingPathComponent("outbox.sqlite").path
    guard FileManager.default.fileExists(atPath: path) else { return nil }
    do {
      let outbox = try Outbox(path: path, recoverInFlight: false)
      let before = try outbox.account()
      try outbox.setAccount(GeofenceSyncClient.fingerprint(ofKey: key))
      return before
    } catch { throw .store("outbox: \(error)") }
  }

  func makeUploader(until deadline: Double?) throws(EngineError) -> OutboxUploader {
    guard let outbox else { throw .invalidConfiguration("no outbox configured") }
    guard let upload = configuration.upload else {
      throw .invalidConfiguration("no upload server configured")
    }
    try checkDelivers()
    try bindOutboxAccount(key: upload.apiKey)
    let uploader = OutboxUploader(
      outbox: outbox, server: upload.server, apiKey: upload.apiKey, transport: transport,
      retryPolicy: upload.retry, requestTimeoutSeconds: upload.timeoutSeconds)
    uploader.deadline = deadline ?? clock.now() + upload.deadlineSeconds
    uploader.stages = serverStages
    return uploader
  }

  /// Binds the outbox to `key`'s account: recorded when none is, or when the outbox holds no
  /// queued event (nothing of the old account is left); refused otherwise. A fingerprint of
  /// `key` recorded by an earlier version (``Networking/KeyFingerprint/legacy(_:)``) is the
  /// same account, and is replaced by the current one. The engine binds its upload key, else
  /// its sync key, else ``Configuration/accountKey``, when it is created.
  /// - Throws: ``EngineError/accountMismatch(stored:given:)`` when events of another account
  ///   are queued; ``EngineError/store(_:)``. Nothing without an outbox.
  ///
  /// The record is kept in the outbox's own file (``EventOutbox/Outbox/account()``), so that
  /// repairing or losing `state.sqlite` does not free its events for another key; a record an
  /// earlier version kept in `state.sqlite` is read when the outbox has none, and moved.
  func bindOutboxAccount(key: String) throws(EngineError) {
    guard let outbox else { return }
    let given = GeofenceSyncClient.fingerprint(ofKey: key)
    do {
      let stored =
        try outbox.account() ?? stateStore.value(String.self, key: "outbox_account")
      if stored == given || stored == KeyFingerprint.legacy(key) {
        if try outbox.account() != given { try outbox.setAccount(given) }
        return
      }
      if let stored, try outbox.counts().queued > 0 {
        throw EngineError.accountMismatch(stored: stored, given: given)
      }
      try outbox.setAccount(given)
    } catch let e as EngineError { throw e } catch { throw .store("\(error)") }
  }
}
