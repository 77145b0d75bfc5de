import GeofenceGeometry

/// Everything a ``TransitionDetector`` knows about its device, as plain values, so that the
/// detector can be saved and restored across a process restart with the same behaviour: the
/// restored detector, fed the same later fixes, emits exactly the events the original would
/// have.
///
/// Regions are named by **id**, not slot (slots change when a set is rebuilt). A restore
/// against a set that no longer holds an id drops that visit or pending enter without an
/// event, as ``TransitionDetector/migrated(to:slotMap:)`` does for a removed geofence.
///
/// Times are seconds since the Unix epoch; NaN stands for "no time" (a detector created with
/// `usesTime: false`) and `-∞` for "never", as inside the detector. Encoders that cannot write
/// non-finite numbers (JSON) need a strategy for them.
public struct DetectorCheckpoint: Hashable, Sendable, Codable {
  /// One region the device is inside.
  public struct Visit: Hashable, Sendable, Codable {
    public var regionID: String
    /// Fix time of the ENTER (NaN without times).
    public var enterTime: Double
    public var dwellEmitted: Bool
    /// Consecutive accepted fixes satisfying the EXIT rule, and the time of the first.
    public var exitCount: Int
    public var exitSince: Double

    /// Every member, as named above (times in seconds since the Unix epoch, NaN or ±∞ as the
    /// detector writes them). Not validated here: ``TransitionDetector/init(regions:configuration:checkpoint:slotOfID:)``
    /// drops a visit with a negative count or an unknown region id.
    public init(
      regionID: String, enterTime: Double, dwellEmitted: Bool, exitCount: Int, exitSince: Double
    ) {
      self.regionID = regionID
      self.enterTime = enterTime
      self.dwellEmitted = dwellEmitted
      self.exitCount = exitCount
      self.exitSince = exitSince
    }
  }

  /// A region whose ENTER condition held but is not yet confirmed.
  public struct PendingEnter: Hashable, Sendable, Codable {
    public var regionID: String
    public var count: Int
    public var since: Double

    /// Every member, as named above (`since` in seconds since the Unix epoch). Not validated
    /// here; a negative count is dropped on restore.
    public init(regionID: String, count: Int, since: Double) {
      self.regionID = regionID
      self.count = count
      self.since = since
    }
  }

  /// A reference fix of the outlier filter: position (degrees), time (s), accuracy (m).
  public struct Anchor: Hashable, Sendable, Codable {
    public var latitude: Double
    public var longitude: Double
    public var time: Double
    public var accuracy: Double

    /// Every member: degrees, seconds since the Unix epoch, metres. Not validated here; a
    /// coordinate out of range makes the restore refuse the checkpoint.
    public init(latitude: Double, longitude: Double, time: Double, accuracy: Double) {
      self.latitude = latitude
      self.longitude = longitude
      self.time = time
      self.accuracy = accuracy
    }
  }

  /// Finite times a checkpoint may hold, seconds since the Unix epoch: those of RFC 3339 years
  /// 0000 to 9999, the times an event can carry. NaN and ±∞ are the detector's own markers
  /// (no time, before any) and are always allowed.
  public static let representableTimes: Range<Double> = -62_167_219_200..<253_402_300_799

  /// Whether every finite time is in ``representableTimes`` and no visit was entered after the
  /// last accepted fix.
  var timesAreConsistent: Bool {
    func valid(_ t: Double) -> Bool { !t.isFinite || Self.representableTimes.contains(t) }
    let anchors = [lastAccepted, candidate, stayStart].compactMap { $0 }
    guard anchors.allSatisfy({ valid($0.time) }), valid(speedReferenceTime),
      valid(lastFilteredTime), pendingEnters.allSatisfy({ valid($0.since) }),
      visits.allSatisfy({ valid($0.enterTime) && valid($0.exitSince) })
    else { return false }
    if let last = lastAccepted?.time, last.isFinite {
      return visits.allSatisfy { !($0.enterTime > last) }
    }
    return true
  }

  /// Whether the detector uses fix times (false for a track without any).
  public var usesTime: Bool
  /// The regions the device is inside, by id.
  public var visits: [Visit]
  /// Unconfirmed ENTERs (time confirmation only).
  public var pendingEnters: [PendingEnter]
  /// The last accepted fix: the time checks and the outlier filter's reference.
  public var lastAccepted: Anchor?
  /// The time the speed test measures from (seconds; see ``OutlierFilter``), NaN before any.
  public var speedReferenceTime: Double
  /// The time of the previous fix that reached the outlier filter (seconds), `-∞` before any.
  public var lastFilteredTime: Double
  /// The last fix the outlier filter rejected, and how many consistent distinct rejected
  /// fixes lead up to it (a real jump is accepted at ``OutlierFilter/recoveryFixCount``).
  public var candidate: Anchor?
  public var candidateCount: Int
  /// Fixes accepted so far (>= 0).
  public var acceptedFixCount: Int
  /// With crossing inference: the first accepted fix of the run at the place last reported
  /// (see ``CrossingInference/samePlaceMeters``); `nil` otherwise, and in checkpoints written
  /// before it existed.
  public var stayStart: Anchor? = nil
  /// ``DropCounts`` in ``DropReason/allCases`` order.
  public var dropCounts: [Int]

  /// Every member (outside this module the checkpoint is rebuilt from its JSON this way).
  public init(
    usesTime: Bool, visits: [Visit], pendingEnters: [PendingEnter], lastAccepted: Anchor?,
    speedReferenceTime: Double, lastFilteredTime: Double, candidate: Anchor?,
    candidateCount: Int, acceptedFixCount: Int, stayStart: Anchor? = nil, dropCounts: [Int]
  ) {
    self.usesTime = usesTime
    self.visits = visits
    self.pendingEnters = pendingEnters
    self.lastAccepted = lastAccepted
    self.speedReferenceTime = speedReferenceTime
    self.lastFilteredTime = lastFilteredTime
    self.candidate = candidate
    self.candidateCount = candidateCount
    self.acceptedFixCount = acceptedFixCount
    self.stayStart = stayStart
    self.dropCounts = dropCounts
  }
}

extension TransitionDetector {
  /// The detector's state for ``init(regions:configuration:checkpoint:)``.
  /// - Complexity: O(m + p) for m visits and p pending enters; allocates.
  public var checkpoint: DetectorCheckpoint {
    func anchor(_ a: Anchor?) -> DetectorCheckpoint.Anchor? {
      a.map {
        .init(
          latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude, time: $0.time,
          accuracy: $0.accuracy)
      }
    }
    return DetectorCheckpoint(
      usesTime: usesTime,
      visits: visits.map {
        .init(
          regionID: regions.id(at: $0.slot), enterTime: $0.enterTime,
          dwellEmitted: $0.dwellEmitted, exitCount: $0.exitCount, exitSince: $0.exitSince)
      }.sorted { $0.regionID < $1.regionID },
      pendingEnters: pendingEnters.map {
        .init(regionID: regions.id(at: $0.slot), count: $0.count, since: $0.since)
      },
      lastAccepted: anchor(lastAccepted), speedReferenceTime: speedReferenceTime,
      lastFilteredTime: lastFilteredTime, candidate: anchor(candidate),
      candidateCount: candidateCount, acceptedFixCount: acceptedFixCount,
      stayStart: anchor(stayStart), dropCounts: DropReason.allCases.map { dropCounts[$0] })
  }

  /// Restores a detector saved with ``checkpoint``.
  ///
  /// - Parameters:
  ///   - regions: the monitored set; visits and pending enters are looked up by id in it
  ///     with `slotOfID`, and those it does not hold (or holds only as removed) are dropped.
  ///   - configuration: the rules (the caller's; a checkpoint holds state, not rules).
  ///   - checkpoint: the saved state.
  ///   - slotOfID: the live slot of a region id, or `nil`.
  /// - Returns: `nil` when the checkpoint is inconsistent (a coordinate out of range, a
  ///   finite time outside ``DetectorCheckpoint/representableTimes``, a visit entered after
  ///   the last accepted fix, a negative count, or the wrong number of drop counts): the
  ///   caller starts the device afresh.
  /// - Complexity: O(m + p) lookups of `slotOfID`.
  public init?(
    regions: RegionSet, configuration: TransitionConfiguration, checkpoint c: DetectorCheckpoint,
    slotOfID: (String) -> Int32?
  ) {
    func anchor(_ a: DetectorCheckpoint.Anchor?) -> Anchor?? {
      guard let a else { return .some(nil) }
      guard let coordinate = try? Coordinate(latitude: a.latitude, longitude: a.longitude)
      else { return nil }
      return .some(Anchor(coordinate: coordinate, time: a.time, accuracy: a.accuracy))
    }
    guard c.dropCounts.count == DropReason.allCases.count, c.candidateCount >= 0,
      c.acceptedFixCount >= 0, c.timesAreConsistent, case .some(let last) = anchor(c.lastAccepted),
      case .some(let candidate) = anchor(c.candidate), case .some(let stay) = anchor(c.stayStart)
    else { return nil }
    self.init(regions: regions, configuration: configuration, usesTime: c.usesTime)
    for v in c.visits {
      guard let slot = slotOfID(v.regionID), !regions.isRemoved(slot), v.exitCount >= 0
      else { continue }
      if insideSet.contains(slot) { continue }
      var visit = Visit(
        slot: slot, enterTime: v.enterTime, in: regions, configuration: configuration)
      visit.dwellEmitted = v.dwellEmitted
      visit.exitCount = v.exitCount
      visit.exitSince = v.exitSince
      visits.append(visit)
      insideSet.insert(slot)
      if !v.dwellEmitted { earliestUndwelledEnter = min(earliestUndwelledEnter, v.enterTime) }
    }
    for p in c.pendingEnters {
      guard let slot = slotOfID(p.regionID), !regions.isRemoved(slot), p.count >= 0 else {
        continue
      }
      pendingEnters.append(PendingEnter(slot: slot, count: p.count, since: p.since, seen: false))
    }
    lastAccepted = last
    stayStart = stay
    self.candidate = candidate
    speedReferenceTime = c.speedReferenceTime
    lastFilteredTime = c.lastFilteredTime
    candidateCount = c.candidateCount
    acceptedFixCount = c.acceptedFixCount
    var drops = DropCounts()
    for (reason, count) in zip(DropReason.allCases, c.dropCounts) { drops[reason] = count }
    dropCounts = drops
  }

  /// Position and accuracy (metres, 0 when unknown) of the last accepted fix, if any.
  public var lastAcceptedPosition: (coordinate: Coordinate, accuracyMeters: Double)? {
    lastAccepted.map { ($0.coordinate, $0.accuracy) }
  }
}
