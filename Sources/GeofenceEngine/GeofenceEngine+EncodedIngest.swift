import EventOutbox
import GeofenceGeometry
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
      let now = clock.now()
      let user = userID
      let anonymous = user == nil ? identityFile?.anonymousID : nil
      let processingTime = encoder.includesProcessingTime
      for k in 0..<count {
        let g = gated[k]
        let t = g.transition
        let slot = Int(t.slot)
        report.eventCounts[t.type] += 1
        if g.afterGap { report.afterGapEvents += 1 }
        let hash = eventIDHash(
          slot: slot, type: t.type,
          milliseconds: timed ? t.fix.time.map { Int64(($0 * 1000).rounded()) } : nil,
          inferred: t.inferred, fixIndex: t.fix.sourceIndex, device: device)
        let range = geofenceText.range(of: slot, in: live)
        geofenceText.bytes.withUnsafeBufferPointer { text in
          let event = SlotEvent(
            idHash: hash, geofenceText: UnsafeBufferPointer(rebasing: text[range]), gated: g,
            deviceID: device, userID: user, anonymousID: anonymous, usesTime: timed,
            processedAt: now)
          GeofenceEventEncoder.appendObject(
            event, track: nil, processingTime: processingTime, to: &out)
        }
        out.append(UInt8(ascii: "\n"))
      }
      if configuration.flushPolicy.immediateOnTransition { flushRequested = true }
    }
    if configuration.checkpoints == .everyFix, storage != .inMemory {
      try checkpoint(devices: [device])
    }
    return (outcome, count)
  }
}

/// Per slot, the bytes ``GeofenceEventEncoder/appendGeofenceMembers(id:name:metadataJSON:url:to:)``
/// writes for its geofence, in one arena: made at the slot's first event, so that later
/// events read 8 bytes of offsets and the text instead of the geofence's record.
struct SlotGeofenceText {
  /// The members of every slot seen so far, one after another.
  var bytes: [UInt8] = []
  /// Per slot, start and end in ``bytes``; start -1 for a slot not yet seen.
  var ranges: [(start: Int32, end: Int32)] = []

  /// The range of `slot`'s members in ``bytes``, made from `live` when not yet known.
  /// - Complexity: O(1) once made; O(bytes of the geofence's id, name, metadata, URL) the
  ///   first time.
  mutating func range(of slot: Int, in live: LiveGeofenceSet) -> Range<Int> {
    if slot < ranges.count, ranges[slot].start >= 0 {
      return Int(ranges[slot].start)..<Int(ranges[slot].end)
    }
    if slot >= ranges.count {
      ranges.append(
        contentsOf: repeatElement(
          (start: Int32(-1), end: Int32(-1)), count: live.slotGeofences.count - ranges.count))
    }
    let start = bytes.count
    let g = live.slotGeofences[slot]
    GeofenceEventEncoder.appendGeofenceMembers(
      id: g.id, name: g.name, metadataJSON: g.metadataJSON, url: live.eventFields[slot].url,
      to: &bytes)
    ranges[slot] = (Int32(start), Int32(bytes.count))
    return start..<bytes.count
  }

  /// Forgets every slot (after the set changed). Keeps the capacity.
  mutating func removeAll() {
    bytes.removeAll(keepingCapacity: true)
    ranges.removeAll(keepingCapacity: true)
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

  func appendQuotedID(to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    idHash.appendID(to: &out)
    out.append(UInt8(ascii: "\""))
  }

  func appendGeofenceMembers(to out: inout [UInt8]) { out.append(contentsOf: geofenceText) }

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
  var fixIndex: Int? { gated.transition.fix.sourceIndex >= 0 ? gated.transition.fix.sourceIndex : nil }
  var inferred: Bool { gated.transition.inferred }
}
