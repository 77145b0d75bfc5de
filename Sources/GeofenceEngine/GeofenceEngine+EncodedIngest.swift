import EventOutbox
import GeofenceGeometry
import JSONText
import GeofenceTransitions
import TrackFormats

extension GeofenceEngine {
  /// ``ingest(_:device:into:)`` writing the fix's events straight into `out` as `encoder`
  /// writes them (the same bytes as encoding the returned ``GeofenceEvent``s one by one),
  /// without making the events: for a caller that only writes them out, such as a stream.
  ///
  /// Without an outbox, without sessions and for JSON Lines, an event then costs no
  /// allocation (beyond `out`'s growth): its id is written from its hash, and its geofence's
  /// members are copied from bytes kept per slot (made at the slot's first event, and again
  /// after the set changes). Otherwise the events are made and encoded.
  /// - Returns: what the engine did with the fix, and how many events it wrote.
  /// - Throws: as ``ingest(_:device:into:)``.
  /// - Complexity: as ``ingest(_:device:into:)``, plus O(bytes written).
  @discardableResult
  public func ingest(
    _ fix: LocationFix, device: String, encoder: inout GeofenceEventEncoder,
    into out: inout [UInt8]
  ) throws(EngineError) -> (outcome: GateOutcome, events: Int) {
    guard outbox == nil, configuration.sessions == nil, encoder.format == .jsonl else {
      var events: [GeofenceEvent] = []
      let outcome = try process(fix, device: device, usesTime: true, into: &events)
      events.withUnsafeBufferPointer { all in
        for e in all { encoder.encode(e, into: &out) }
      }
      return (outcome, events.count)
    }
    let (outcome, timed) = try gate(fix, device: device, usesTime: true)
    let count = gated.count
    if count > 0 {
      var events: [GatedEvent] = []
      swap(&events, &gated)
      defer { swap(&events, &gated) }
      writeEvents(
        events, timed: timed, device: device,
        processingTime: encoder.includesProcessingTime, into: &out)
    }
    if configuration.checkpoints == .everyFix, storage != .inMemory {
      try checkpoint(devices: [device])
    }
    return (outcome, count)
  }

  /// ``ingest(_:device:encoder:into:)`` for a run of fixes of one device, in order: the same
  /// bytes, counts and state as taking them one by one, with one lookup of the device for the
  /// run instead of one per fix (a caller that groups its input by device, such as a stream,
  /// takes each group as one run).
  ///
  /// After fix `j`'s events, `eventEnds` gets `out.count` appended: fix `j`'s events are
  /// `out[eventEnds[j - 1] ..< eventEnds[j]]` (from the count of `out` at the call for the
  /// first fix). Its capacity is kept, so a caller that reuses it allocates nothing.
  /// - Parameters:
  ///   - fixes: the device's fixes, in the order it made them.
  ///   - device: the device's id (any non-empty string).
  /// - Throws: as ``ingest(_:device:into:)``; the fixes before the one that failed were taken
  ///   and their ends appended.
  /// - Complexity: as ``ingest(_:device:encoder:into:)`` per fix, without the device lookup;
  ///   allocates nothing beyond the growth of `out` and `eventEnds` (in the cases where the
  ///   single-fix form allocates nothing).
  public func ingest(
    _ fixes: UnsafeBufferPointer<LocationFix>, device: String,
    encoder: inout GeofenceEventEncoder, into out: inout [UInt8], eventEnds: inout [Int]
  ) throws(EngineError) {
    guard outbox == nil, configuration.sessions == nil, encoder.format == .jsonl,
      configuration.checkpoints != .everyFix || storage == .inMemory
    else {
      for fix in fixes {
        try ingest(fix, device: device, encoder: &encoder, into: &out)
        eventEnds.append(out.count)
      }
      return
    }
    if device.isEmpty { throw .emptyDeviceID }
    if !stateClaimed { try claimState() }
    // Fixes whose time no event can carry are dropped before the device is looked up (and
    // made), as by `gate`.
    var first = 0
    while first < fixes.count, let t = fixes[first].time, !Self.representableTimes.contains(t) {
      report.fixes += 1
      report.dropCounts[.missingTime] += 1
      eventEnds.append(out.count)
      first += 1
    }
    guard first < fixes.count else { return }
    var slot = devices.index(forKey: DeviceKey(device))
    if slot == nil {
      devices[DeviceKey(device)] = try loadedDevice(device) ?? newDevice(usesTime: true)
      slot = devices.index(forKey: DeviceKey(device))
    }
    guard let slot else { preconditionFailure("the device was just added") }
    // The engine's scratch buffers as locals for the run: one access each instead of one per
    // fix (the engine is a class, whose stored properties are checked at run time).
    var events: [GatedEvent] = []
    swap(&events, &gated)
    defer { swap(&events, &gated) }
    var use = useCount
    let processingTime = encoder.includesProcessingTime
    modifyDevice(at: slot) { d in
      let timed = d.gate.detector.usesTime
      d.gate.detector.exchangeQueryBuffer(&queryBuffer)
      defer { d.gate.detector.exchangeQueryBuffer(&queryBuffer) }
      var fixCount = 0
      for j in first..<fixes.count {
        let fix = fixes[j]
        fixCount += 1
        defer { eventEnds.append(out.count) }
        if let t = fix.time, !Self.representableTimes.contains(t) {
          report.dropCounts[.missingTime] += 1
          continue
        }
        use &+= 1
        d.lastUse = use
        if !events.isEmpty { events.removeAll(keepingCapacity: true) }
        if let reason = d.checkOrder(of: fix) {
          report.dropCounts[reason] += 1
          continue
        }
        d.dirty = true
        count(d.gate.process(fix, into: &events))
        if !events.isEmpty {
          writeEvents(
            events, timed: timed, device: device, processingTime: processingTime, into: &out)
        }
      }
      report.fixes += fixCount
    }
    useCount = use
  }

  /// Writes `events` (the gate's accepted transitions of one fix of `device`) to `out` as
  /// JSON Lines (with `processed_at` when `processingTime`), counting them in ``report``: the
  /// fast path of ``ingest(_:device:encoder:into:)``.
  func writeEvents(
    _ events: [GatedEvent], timed: Bool, device: String, processingTime: Bool,
    into out: inout [UInt8]
  ) {
    // The clock is read only for `processed_at`.
    let now = processingTime ? clock.now() : nil
    let user = userID
    let anonymous = user == nil ? identityFile?.anonymousID : nil
    for g in events {
      let t = g.transition
      let slot = Int(t.slot)
      report.eventCounts[t.type] += 1
      if g.afterGap { report.afterGapEvents += 1 }
      let entry = geofenceText.entry(of: slot) ?? makeGeofenceText(slot)
      let hash = Self.eventIDHash(
        entry.eventID, type: t.type,
        milliseconds: timed ? t.fix.time.map { Int64(($0 * 1000).rounded()) } : nil,
        inferred: t.inferred, fixIndex: t.fix.sourceIndex, device: device)
      let range = Int(entry.start)..<Int(entry.end)
      geofenceText.bytes.withUnsafeBufferPointer { text in
        let event = SlotEvent(
          idHash: hash, geofenceText: UnsafeBufferPointer(rebasing: text[range]), gated: g,
          deviceID: device, userID: user, anonymousID: anonymous, usesTime: timed,
          processedAt: now)
        GeofenceEventEncoder.appendObject(
          event, track: nil, processingTime: processingTime, newline: true, to: &out)
      }
    }
    if configuration.flushPolicy.immediateOnTransition { flushRequested = true }
  }
}

extension GeofenceEngine {
  /// `slot`'s entry of ``geofenceText``, made from the live set's id, details and event id
  /// hash, each read on its own (passing the live set whole copied it, retaining each of its
  /// tables, at every slot's first event).
  @inline(never)
  func makeGeofenceText(_ slot: Int) -> SlotGeofenceText.Entry {
    let id = live.id(at: slot)
    let details = live.details(at: slot)
    let start = live.eventIDStart(at: slot)
    let count = live.slotCount
    return geofenceText.make(
      slot, id: id, details: details, eventIDStart: start, slotCount: count)
  }
}

/// Per slot, what an event of ``GeofenceEngine/ingest(_:device:encoder:into:)`` reads: the
/// event id's slot hash and the bytes
/// ``GeofenceEventEncoder/appendGeofenceMembers(id:name:metadataJSON:url:to:)`` writes for its
/// geofence, in one arena. Made at the slot's first event, so that later events read one
/// 32-byte entry and the text instead of the set's id, details and hash (three cache misses
/// on a large set). A slot without an event costs 4 bytes.
struct SlotGeofenceText {
  struct Entry {
    /// ``LiveGeofenceSet/eventIDStart(at:)``.
    var eventID: OutboxEventID.Builder
    /// The members' bytes in ``SlotGeofenceText/bytes``.
    var start: Int32
    var end: Int32
  }

  /// The members of every slot made so far, one after another.
  var bytes: [UInt8] = []
  /// The entries made so far, in the order they were made.
  var entries: [Entry] = []
  /// Per slot, the index into ``entries``, or −1 for a slot not yet made.
  var entryOfSlot: [Int32] = []

  /// `slot`'s entry, or nil when not yet made. O(1).
  @inline(__always)
  func entry(of slot: Int) -> Entry? {
    guard slot < entryOfSlot.count else { return nil }
    let k = entryOfSlot[slot]
    return k < 0 ? nil : entries[Int(k)]
  }

  /// Makes `slot`'s entry from its geofence's id, details and event id hash (the live set's
  /// `slotCount` sizes the table at the first call).
  /// - Complexity: O(bytes of the geofence's id, name, metadata and URL), plus O(slot count)
  ///   the first time.
  mutating func make(
    _ slot: Int, id: String, details d: SlotDetails?, eventIDStart: OutboxEventID.Builder,
    slotCount: Int
  ) -> Entry {
    if slot >= entryOfSlot.count {
      entryOfSlot.append(
        contentsOf: repeatElement(-1, count: max(slotCount, slot + 1) - entryOfSlot.count))
    }
    let start = bytes.count
    GeofenceEventEncoder.appendGeofenceMembers(
      id: id, name: d?.name, metadataJSON: d?.metadataJSON, url: d?.url, to: &bytes)
    let e = Entry(eventID: eventIDStart, start: Int32(start), end: Int32(bytes.count))
    entryOfSlot[slot] = Int32(entries.count)
    entries.append(e)
    return e
  }

  /// Heap bytes, by capacity.
  var footprintBytes: Int {
    bytes.capacity + entries.capacity * MemoryLayout<Entry>.stride + entryOfSlot.capacity * 4
  }

  /// Forgets every slot (after the set changed). Keeps the capacity.
  mutating func removeAll() {
    bytes.removeAll(keepingCapacity: true)
    entries.removeAll(keepingCapacity: true)
    entryOfSlot.removeAll(keepingCapacity: true)
  }
}

/// One event as the engine would make it (``GeofenceEngine/makeEvent``), read in place by the
/// encoder: its id as a hash, its geofence's members as bytes.
struct SlotEvent: EncodableEvent {
  var idHash: OutboxEventID.Builder
  var geofenceText: UnsafeBufferPointer<UInt8>
  var gated: GatedEvent
  var deviceID: String
  var userID: String?
  var anonymousID: String?
  var usesTime: Bool
  var processedAt: Double?

  func writeQuotedID(to w: inout JSONText.Writer) { idHash.writeQuotedID(to: &w) }

  func writeGeofenceMembers(to w: inout JSONText.Writer) { w.write(bytes: geofenceText) }

  var geofenceMembersBound: Int { geofenceText.count }

  var type: TransitionType { gated.transition.type }
  var sessionID: String? { nil }
  var sessionIndex: Int? { nil }
  var eventIndex: Int? { nil }
  var time: Double? { usesTime ? gated.transition.fix.time : nil }
  var latitude: Double { gated.transition.fix.coordinate.latitude }
  var longitude: Double { gated.transition.fix.coordinate.longitude }
  var accuracy: Double? { gated.transition.fix.horizontalAccuracy }
  var distanceMeters: Double { gated.transition.distanceMeters }
  var dwellSeconds: Double? { gated.transition.dwellSeconds }
  var visitSeconds: Double? { gated.transition.visitSeconds }
  var afterGap: Bool { gated.afterGap }
  var gapStart: Double? { gated.gapStart }
  var isRemoval: Bool { false }
  var fixIndex: Int? {
    gated.transition.fix.sourceIndex >= 0 ? gated.transition.fix.sourceIndex : nil
  }
  var inferred: Bool { gated.transition.inferred }
}
