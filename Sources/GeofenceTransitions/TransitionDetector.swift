import GeofenceGeometry
import GeofenceIndex

/// One device's region states: fixes in, ENTER / EXIT / DWELL events out.
///
/// Feed fixes in the order the device reported them with ``process(_:into:)``. For whole files
/// (sorting, de-duplication, several devices) use ``replay(_:regions:configuration:)``.
///
/// ## Rules (see ``TransitionConfiguration`` for every default)
/// A fix is checked in this order, and the first failing check drops it with the named
/// ``DropReason`` (a dropped fix changes no region state):
/// 1. horizontal accuracy negative or NaN: ``DropReason/invalidAccuracy``;
/// 2. (timed detectors) no finite time: ``DropReason/missingTime``; older than the last
///    accepted fix: ``DropReason/staleFix``; same time as the last accepted fix:
///    ``DropReason/duplicateFix`` at the same position, else
///    ``DropReason/conflictingTimestamp`` (the earlier fix wins; the detector never reorders);
/// 3. accuracy above ``TransitionConfiguration/maxAccuracyMeters``: ``DropReason/inaccurate``;
/// 4. implied speed impossible (``OutlierFilter``): ``DropReason/outlier``.
///
/// At an accepted fix at distance `d` from a region of radius `r` with hysteresis
/// `h = max(hysteresisMinimumMeters, hysteresisRadiusFraction · r)` and accuracy `a`:
/// - **ENTER** (outside → inside) when `d <= r` (the index query,
///   `CircularRegion.contains`; the boundary is inside) and, if the fix has an accuracy and
///   ``TransitionConfiguration/requiresAccuracyWithinRadiusToEnter`` is set, `a <= r`.
///   Regions start outside, so the first fix inside a region enters it, unless
///   ``TransitionConfiguration/initialTrigger`` is off.
/// - **EXIT** (inside → outside) when `d - a > r + h`, a missing accuracy counting as 0. Every
///   region the device is inside is checked at every accepted fix, whether or not the index
///   query returns it.
/// - **Polygons** (``RegionSet/polygon(at:)``): the candidates come from the polygon box grid
///   (``RegionSet/forEachPolygon(containing:_:)``), not from the bounding caps the grid index
///   also holds. ENTER when ``PolygonRegion/contains(_:)`` holds and (with
///   the accuracy rule) `a <= r_eq`, the polygon's ``PolygonRegion/equivalentRadiusMeters``;
///   no edge distance is asked of an entering fix. EXIT when the fix is outside the polygon
///   and its distance to the nearest edge (``PolygonRegion/boundaryDistance(to:notBeyond:)``)
///   exceeds `a + h`, `h = max(hysteresisMinimumMeters, hysteresisRadiusFraction · r_eq)`.
///   Event distances are to the nearest edge. Crossing inference skips polygons.
/// - **DWELL** once per visit, at the first accepted fix whose time is
///   `>= enterTime + loiteringDelaySeconds`, judged on fix times only.
/// - With time confirmation (``TransitionConfiguration/confirmationFixCount`` > 1 or
///   ``TransitionConfiguration/confirmationSeconds``), an ENTER or EXIT condition must hold
///   on consecutive accepted fixes before the event is emitted, at the confirming fix.
///
/// With ``TransitionConfiguration/crossingInference`` on, the inferred ENTER/EXIT pairs of the
/// regions the segment from the previous accepted fix passes through come first, in time
/// order (see ``CrossingInference``). Then the events of the fix itself, in this order:
/// every EXIT, then every ENTER, then every
/// DWELL (a region entered at this fix with a loitering delay of 0 dwells at once); within
/// each group by the UTF-8 byte order of the region id (``RegionSet/precedes(_:_:)``).
///
/// A detector created with `usesTime: false` (for tracks without any time) ignores fix times:
/// no time checks, no outlier filter, no dwell, confirmation by fix count only.
///
/// ## Cost
/// Per fix: one index query; for each region the device is inside, a squared-chord test
/// (three multiplies), and a haversine distance only when the fix is about `r + h` or farther
/// from that region's centre; one haversine per event and one or two for the outlier filter;
/// and for each of the q query results one expected hash probe (``SlotSet``) against the m
/// regions inside: O(q + m). In optimised builds the per-fix path performs no heap allocation
/// once its buffers (inside list and set, pending list, query result, event scratch) have
/// reached the largest size the track needs and the caller's `events` array has spare
/// capacity: it uses no Foundation, no dictionaries and no existentials.
public struct TransitionDetector: Sendable {
  /// The monitored regions.
  public internal(set) var regions: RegionSet
  /// The rules.
  public let configuration: TransitionConfiguration
  /// Whether fix times are used (see the type's discussion).
  public let usesTime: Bool
  /// Fixes dropped so far, by reason.
  public internal(set) var dropCounts = DropCounts()
  /// Fixes accepted so far.
  public internal(set) var acceptedFixCount = 0

  /// A region the device is inside.
  ///
  /// It carries a copy of the region's refine record and hysteresis, so that the EXIT test of
  /// a fix inside the disc (nearly every visit at nearly every fix) reads only this array, not
  /// the region set, whose records for the regions a device is in lie scattered in memory.
  struct Visit: Sendable {
    var slot: Int32
    /// Time of the ENTER (NaN without times).
    var enterTime: Double
    var dwellEmitted: Bool
    /// Consecutive accepted fixes satisfying the EXIT rule, and the time of the first.
    var exitCount: Int
    var exitSince: Double
    /// The region's ``CircularRegion/centerVector``.
    var center: UnitVector
    /// ``discChordSquared(_:)`` of the region.
    var discChordSquared: Double
    /// ``TransitionConfiguration/hysteresisMeters(forRadius:)`` of the region.
    var hysteresisMeters: Double
    /// ``staysInsideChordSquared(radiusMeters:hysteresisMeters:)`` of the region.
    var staysInsideChordSquared: Double

    init(slot: Int32, enterTime: Double, region: CircularRegion, hysteresisMeters: Double) {
      self.slot = slot
      self.enterTime = enterTime
      self.dwellEmitted = false
      self.exitCount = 0
      self.exitSince = 0
      self.center = region.centerVector
      self.discChordSquared = Self.discChordSquared(region)
      self.hysteresisMeters = hysteresisMeters
      self.staysInsideChordSquared = Self.staysInsideChordSquared(
        radiusMeters: region.radiusMeters, hysteresisMeters: hysteresisMeters)
    }

    /// The visit of the region in `slot` of `regions`, with its hysteresis. A polygon's visit
    /// has no squared-chord shortcut (both thresholds −1): its EXIT test is the polygon's.
    init(
      slot: Int32, enterTime: Double, in regions: borrowing RegionSet,
      configuration: TransitionConfiguration
    ) {
      let region = regions.region(at: slot)
      self.init(
        slot: slot, enterTime: enterTime, region: region,
        hysteresisMeters: configuration.hysteresisMeters(forRadius: regions.sizeMeters(at: slot)))
      if regions.hasPolygons && regions.polygon(at: slot) != nil {
        discChordSquared = -1
        staysInsideChordSquared = -1
      }
    }

    /// The largest angle, in radians, at which the EXIT test trusts a squared chord: π − 0.01,
    /// about 64 km short of half the circumference. The squared chord between two unit
    /// vectors is rounded by about 1e-15, which resolves a distance `R θ` only to about
    /// `3.2e-9 / sin θ` m: under 0.4 µm up to this angle, but tens of centimetres next to the
    /// antipode, where the haversine distance itself is only good to about 0.3 m.
    static let chordTrustedAngle = Double.pi - 0.01

    /// The region's ``CircularRegion/chordSquaredThreshold`` for the EXIT test's first
    /// shortcut (a fix inside the disc does not exit when `h + a` exceeds 1 µm), or −1 (the
    /// shortcut never applies) for a region whose radius passes ``chordTrustedAngle``.
    static func discChordSquared(_ region: CircularRegion) -> Double {
      region.angularRadius <= chordTrustedAngle ? region.chordSquaredThreshold : -1
    }

    /// The squared chord (unit sphere) of a distance just short of `r + h`: shorter by a
    /// relative 1e-9 and by 1 µm, more than the rounding of the squared chord between two
    /// unit vectors (see ``chordTrustedAngle``) and of the haversine distance away from the
    /// antipode. A fix whose squared chord to the centre is at most this is nearer than
    /// `r + h` by the haversine distance too, so it cannot meet the EXIT rule `d - a > r + h`
    /// for any accuracy `a >= 0`: the hysteresis band is decided without trigonometry.
    /// −1 (no fix: the haversine decides) when `r + h` is within that margin of 0 or its
    /// angle passes ``chordTrustedAngle`` short of π; +∞ (every fix) when it reaches half
    /// the circumference, beyond which no haversine distance lies.
    static func staysInsideChordSquared(radiusMeters r: Double, hysteresisMeters h: Double)
      -> Double
    {
      let reach = (r + h) * (1 - 1e-9) - 1e-6
      guard reach > 0 else { return -1 }
      let angle = EarthModel.radians(fromMeters: reach)
      if angle >= Double.pi { return .infinity }
      return angle <= chordTrustedAngle ? UnitVector.chordSquared(forAngle: angle) : -1
    }

    /// This visit for the region in `slot` of a new set: the same progress, that region's
    /// geometry.
    func rebased(
      slot: Int32, in regions: borrowing RegionSet, configuration: TransitionConfiguration
    ) -> Visit {
      var next = Visit(
        slot: slot, enterTime: enterTime, in: regions, configuration: configuration)
      next.dwellEmitted = dwellEmitted
      next.exitCount = exitCount
      next.exitSince = exitSince
      return next
    }
  }

  /// A region whose ENTER condition holds but is not yet confirmed.
  struct PendingEnter: Sendable {
    var slot: Int32
    var count: Int
    var since: Double
    var seen: Bool
  }

  /// An event about to be emitted at the current fix.
  private struct Emission: Sendable {
    var slot: Int32
    var distanceMeters: Double
    /// Seconds inside: the dwell time of a DWELL, the visit's length for an EXIT (NaN
    /// without times).
    var dwellSeconds: Double
  }

  /// A reference fix for the speed test.
  struct Anchor: Sendable {
    var coordinate: Coordinate
    var time: Double
    var accuracy: Double
  }

  var visits: [Visit] = []
  var pendingEnters: [PendingEnter] = []
  /// The index query's answer, reused from fix to fix. It grows to the longest run of
  /// candidates a query has met (a cell list: thousands of slots in a dense set), so an owner
  /// of many detectors lends one buffer to each in turn (``exchangeQueryBuffer(_:)``).
  private var queryResult = SlotBuffer()
  /// The slots of ``visits``, kept in step with it, so that each query result is matched in
  /// O(1) expected time instead of a search of the inside list.
  var insideSet = SlotSet()
  /// At most the earliest ENTER time of the visits whose DWELL is not emitted yet (+∞ when
  /// there are none): while `time - earliestUndwelledEnter < loiteringDelaySeconds`, no visit
  /// is due (floating-point subtraction is monotonic), and the DWELL pass is skipped. Lowered
  /// at each ENTER, recomputed by each DWELL pass; visits leaving only raise the true value.
  var earliestUndwelledEnter = Double.infinity
  private var exits: [Emission] = []
  private var enters: [Emission] = []
  private var dwells: [Emission] = []
  /// The inferred events of the current segment (``CrossingInference``), reused.
  var inferredScratch: [InferredEmission] = []
  /// The last accepted fix (time checks and speed reference).
  var lastAccepted: Anchor? = nil
  /// Time the speed test measures from: the time of the last accepted fix, except that an
  /// accepted fix repeating the previous accepted fix's exact coordinates keeps the earlier
  /// time (see ``OutlierFilter``).
  var speedReferenceTime: Double = .nan
  /// With crossing inference: the first accepted fix of the current run of accepted fixes
  /// within ``CrossingInference/samePlaceMeters`` of it (its time and position; accuracy
  /// unused), the earliest time the device may have left the place it was last reported at.
  var stayStart: Anchor? = nil
  /// Time of the previous fix that reached the outlier filter.
  var lastFilteredTime: Double = -.infinity
  /// The last rejected fix and the number of consistent distinct rejected fixes up to it.
  var candidate: Anchor? = nil
  var candidateCount = 0

  /// Swaps the detector's reusable query buffer with `buffer`. Its contents between fixes
  /// mean nothing; only its capacity is worth keeping. An owner of many detectors (one per
  /// device) lends one buffer to the detector about to take a fix and takes it back after,
  /// so that the detectors it keeps hold none. O(1).
  public mutating func exchangeQueryBuffer(_ buffer: inout SlotBuffer) {
    swap(&buffer, &queryResult)
  }

  /// Creates a detector with every region outside.
  /// - Parameters:
  ///   - regions: the monitored regions (shared, not copied).
  ///   - configuration: the rules; defaults as documented on each field.
  ///   - usesTime: false for a track without any fix time (see the type's discussion).
  /// - Complexity: O(1).
  public init(
    regions: RegionSet, configuration: TransitionConfiguration = TransitionConfiguration(),
    usesTime: Bool = true
  ) {
    self.regions = regions
    self.configuration = configuration
    self.usesTime = usesTime
  }

  /// The slots of the regions the device is currently inside, in slot order.
  /// - Complexity: O(m log m) for m regions inside; allocates the result.
  public var insideSlots: [Int32] { visits.map(\.slot).sorted() }

  /// Whether the device is currently inside the region in `slot`.
  /// - Complexity: O(m) for m regions inside.
  public func isInside(_ slot: Int32) -> Bool { visits.contains { $0.slot == slot } }

  /// Applies one fix and appends the resulting events to `events`.
  ///
  /// Never reorders: a fix older than the last accepted one is dropped. See the type's
  /// discussion for the checks, the rules and the order of events.
  /// - Parameters:
  ///   - fix: the next fix of this device.
  ///   - events: receives the events of this fix, appended (the array is not cleared).
  /// - Returns: whether the fix was accepted, or why it was dropped.
  /// - Complexity: the index query plus O(q·m + e²) for q query results, m regions inside
  ///   and e events at this fix; no allocation after warm-up (see the type's discussion).
  @discardableResult
  public mutating func process(_ fix: LocationFix, into events: inout [TransitionEvent])
    -> FixOutcome
  {
    if let reason = check(fix) {
      dropCounts[reason] += 1
      return .dropped(reason)
    }
    let time = usesTime ? (fix.time ?? .nan) : .nan
    let accuracy = fix.horizontalAccuracy ?? 0
    let isFirst = acceptedFixCount == 0
    if usesTime, let rules = configuration.crossingInference {
      if let previous = lastAccepted {
        inferCrossings(from: previous, to: fix, time: time, rules: rules, into: &events)
      }
      updateStay(fix, time: time, rules: rules)
    }
    if lastAccepted?.coordinate != fix.coordinate { speedReferenceTime = time }
    lastAccepted = Anchor(coordinate: fix.coordinate, time: time, accuracy: accuracy)
    acceptedFixCount += 1
    applyTransitions(fix, time: time, isFirst: isFirst, into: &events)
    return .accepted
  }

  // MARK: - Checks

  /// The reason to drop `fix`, or nil to accept it. Updates the outlier filter's state.
  private mutating func check(_ fix: LocationFix) -> DropReason? {
    if let a = fix.horizontalAccuracy, !(a >= 0) { return .invalidAccuracy }
    if usesTime {
      guard let t = fix.time, t.isFinite else { return .missingTime }
      if let last = lastAccepted {
        if t < last.time { return .staleFix }
        if t == last.time {
          return fix.coordinate == last.coordinate ? .duplicateFix : .conflictingTimestamp
        }
      }
    }
    if let a = fix.horizontalAccuracy, a > configuration.maxAccuracyMeters { return .inaccurate }
    if usesTime, let filter = configuration.outlierFilter, let time = fix.time,
      !passesOutlierFilter(fix, time: time, filter: filter)
    {
      return .outlier
    }
    return nil
  }

  /// The speed test of ``OutlierFilter`` with its recovery rules.
  private mutating func passesOutlierFilter(
    _ fix: LocationFix, time: Double, filter: OutlierFilter
  ) -> Bool {
    let here = Anchor(
      coordinate: fix.coordinate, time: time, accuracy: fix.horizontalAccuracy ?? 0)
    let gap = time - lastFilteredTime
    lastFilteredTime = time
    guard let accepted = lastAccepted, gap < filter.resetGapSeconds,
      case let last = Anchor(
        coordinate: accepted.coordinate, time: speedReferenceTime, accuracy: accepted.accuracy),
      !Self.isPlausible(from: last, to: here, maxSpeed: filter.maxSpeedMetersPerSecond)
    else {
      candidate = nil
      candidateCount = 0
      return true
    }
    if let c = candidate, time > c.time,
      Self.isPlausible(from: c, to: here, maxSpeed: filter.maxSpeedMetersPerSecond)
    {
      if here.coordinate != c.coordinate { candidateCount += 1 }
    } else {
      candidateCount = 1
    }
    candidate = here
    if candidateCount >= filter.recoveryFixCount {
      candidate = nil
      candidateCount = 0
      return true
    }
    return false
  }

  /// Whether moving from `a` to `b` needs at most `maxSpeed` m/s once both accuracies are
  /// subtracted from the distance. Requires `b.time > a.time`.
  /// Decided first on ``distanceUpperBound(_:_:)``, which needs no trigonometry and settles
  /// almost every fix of a real track (a step of metres against a bound of tens of metres);
  /// the haversine distance decides the rest, so the outcome is that of the haversine test.
  static func isPlausible(from a: Anchor, to b: Anchor, maxSpeed: Double) -> Bool {
    let bound = distanceUpperBound(a.coordinate, b.coordinate) - a.accuracy - b.accuracy
    if bound <= 0 || bound <= maxSpeed * (b.time - a.time) { return true }
    let d = haversineDistance(a.coordinate, b.coordinate)
    let excess = d - a.accuracy - b.accuracy
    return excess <= 0 || excess <= maxSpeed * (b.time - a.time)
  }

  /// An upper bound in metres of `haversineDistance(a, b)`: the length of the path along the
  /// meridian to `b`'s latitude, then along the parallel, measured as if on the equator,
  /// `R (|Δφ| + |Δλ|)` with `Δλ` wrapped to [0°, 180°], widened by a relative 1e-9 and 1 µm
  /// (far above the haversine's rounding, about 1e-14 relative and 1e-8 m). `+∞` for a
  /// latitude outside [−90°, 90°], a longitude difference above 360° or NaN. O(1), no
  /// trigonometry.
  static func distanceUpperBound(_ a: Coordinate, _ b: Coordinate) -> Double {
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    var dLambda = abs(b.longitude - a.longitude)
    if dLambda > 180 { dLambda = 360 - dLambda }
    guard abs(a.latitude) <= 90, abs(b.latitude) <= 90, dLambda >= 0 else { return .infinity }
    let dPhi = abs(b.latitude - a.latitude)
    return (dPhi + dLambda) * metersPerDegree * (1 + 1e-9) + 1e-6
  }

  // MARK: - Transitions

  /// The consecutive fixes a transition must hold for: the configured count, except under
  /// confirmation by time only (``TransitionConfiguration/confirmationFixCount`` `Int.max`)
  /// on a track without times, where the time requirement is ignored and so nothing is
  /// required (1).
  private var requiredFixCount: Int {
    !usesTime && configuration.confirmationFixCount == .max
      ? 1 : configuration.confirmationFixCount
  }

  private func isConfirmed(count: Int, since: Double, now: Double) -> Bool {
    if count >= requiredFixCount { return true }
    if usesTime, let s = configuration.confirmationSeconds, now - since >= s { return true }
    return false
  }

  private mutating func applyTransitions(
    _ fix: LocationFix, time: Double, isFirst: Bool, into events: inout [TransitionEvent]
  ) {
    let point = fix.coordinate
    let accuracy = fix.horizontalAccuracy
    let exitAccuracy = accuracy ?? 0
    if !exits.isEmpty { exits.removeAll(keepingCapacity: true) }
    if !enters.isEmpty { enters.removeAll(keepingCapacity: true) }
    if !dwells.isEmpty { dwells.removeAll(keepingCapacity: true) }

    // The unit vector is needed only when the device is inside a region (EXIT below); the
    // index query computes its own otherwise (and only if a cell has candidates).
    let hasVisits = !visits.isEmpty
    let pointVector = hasVisits ? UnitVector(point) : UnitVector(x: 0, y: 0, z: 0)
    // The regions that contain the fix, for ENTER below; the polygons among them also settle
    // EXIT for the polygons the device is inside. The buffer is moved out for the query: `regions.index.query(..., into: &queryResult)`
    // would read one field of `self` while writing another, and Swift copies the whole index
    // value (a retain and release of each of its arrays) to keep the two accesses apart.
    var found = SlotBuffer()
    swap(&found, &queryResult)
    defer { swap(&found, &queryResult) }
    // Circles come from the grid index, which also holds each polygon's bounding cap (for
    // the region budget planner and the map); the polygons that contain the fix come from the
    // polygon box grid (`RegionSet.forEachPolygon`), which answers most of its candidates
    // without reading the polygon. They follow the circle index's answer in `found`, from
    // `firstPolygonHit` on; a set of polygons only skips the circle index.
    let polygonsApart = regions.hasPolygons
    if !polygonsApart || regions.hasCircles {
      if hasVisits {
        regions.index.query(point, unitVector: pointVector, into: &found)
      } else {
        regions.index.query(point, into: &found)
      }
    } else {
      found.removeAll()
    }
    let firstPolygonHit = found.count
    if polygonsApart {
      regions.forEachPolygon(containing: point) { found.append($0) }
    }
    let polygonHits = firstPolygonHit..<found.count

    // EXIT: every region inside, whether or not the query returns it. A fix inside the disc
    // (the squared-chord test, no trigonometry) cannot satisfy `d - a > r + h` when `h + a`
    // exceeds the test's rounding (1 µm here), nor can a fix nearer than `r + h` by a margin
    // (a second squared-chord test); only fixes at about `r + h` or beyond need a distance.
    var i = 0
    while i < visits.count {
      let slot = visits[i].slot
      let h = visits[i].hysteresisMeters
      let chordSquared = visits[i].center.chordSquared(to: pointVector)
      // Inside the disc (the same comparison as `region.contains(pointVector)`, on the
      // visit's copy, for regions short of `Visit.chordTrustedAngle`), or in the hysteresis
      // band, nearer than `r + h` (see `Visit.staysInsideChordSquared`): no EXIT, and no
      // distance needed.
      if chordSquared <= visits[i].staysInsideChordSquared
        || (h + exitAccuracy > 1e-6 && chordSquared <= visits[i].discChordSquared)
      {
        // Written only when set: a write to `visits` costs a uniqueness check, and a device
        // inside many regions would pay one per visit per fix.
        if visits[i].exitCount != 0 { visits[i].exitCount = 0 }
        i += 1
        continue
      }
      let exitDistance: Double
      let beyond: Double
      if regions.hasPolygons, let polygon = regions.polygon(at: slot) {
        // A polygon: inside keeps the visit (the box grid's answer, `polygonHits`: a few
        // slots at most); outside, the distance to the nearest edge must pass `a + h` (only
        // edges within that reach are measured, then all for the event).
        if polygonHits.contains(where: { found[$0] == slot }) {
          if visits[i].exitCount != 0 { visits[i].exitCount = 0 }
          i += 1
          continue
        }
        let reach = h + exitAccuracy
        let near = polygon.boundaryDistance(to: point, notBeyond: reach)
        exitDistance =
          near > reach ? polygon.boundaryDistance(to: point, notBeyond: .infinity) : near
        beyond = h
      } else {
        exitDistance = haversineDistance(regions.center(at: slot), point)
        beyond = regions.radiusMeters(at: slot) + h
      }
      let d = exitDistance
      if d - exitAccuracy > beyond {
        if visits[i].exitCount == 0 { visits[i].exitSince = time }
        visits[i].exitCount += 1
        if isConfirmed(count: visits[i].exitCount, since: visits[i].exitSince, now: time) {
          exits.append(
            Emission(
              slot: slot, distanceMeters: d, dwellSeconds: time - visits[i].enterTime))
          visits.swapAt(i, visits.count - 1)
          visits.removeLast()
          insideSet.remove(slot)
          continue
        }
      } else if visits[i].exitCount != 0 {
        visits[i].exitCount = 0
      }
      i += 1
    }

    // ENTER: regions whose disc contains the fix and that the device is not inside (the
    // answers were found above, before EXIT).
    let immediate =
      requiredFixCount <= 1
      || (usesTime && configuration.confirmationSeconds == 0)
    let silent = isFirst && !configuration.initialTrigger
    for (k, slot) in found.enumerated() {
      // Already inside (most results): decided before the region's record is read.
      if insideSet.contains(slot) { continue }
      // A polygon's bounding cap in the circle index's answer is not an answer: the box
      // grid's (from `firstPolygonHit` on) is.
      let polygon = polygonsApart ? regions.polygon(at: slot) : nil
      if polygon != nil && k < firstPolygonHit { continue }
      if configuration.requiresAccuracyWithinRadiusToEnter, let a = accuracy,
        a > (polygon?.equivalentRadiusMeters ?? regions.radiusMeters(at: slot))
      {
        continue
      }
      if exits.contains(where: { $0.slot == slot }) { continue }
      if !(silent || immediate) {
        var j = 0
        while j < pendingEnters.count && pendingEnters[j].slot != slot { j += 1 }
        if j == pendingEnters.count {
          pendingEnters.append(PendingEnter(slot: slot, count: 0, since: time, seen: false))
        }
        pendingEnters[j].count += 1
        pendingEnters[j].seen = true
        if !isConfirmed(count: pendingEnters[j].count, since: pendingEnters[j].since, now: time) {
          continue
        }
        pendingEnters[j].seen = false  // removed below
      }
      visits.append(Visit(slot: slot, enterTime: time, in: regions, configuration: configuration))
      insideSet.insert(slot)
      earliestUndwelledEnter = min(earliestUndwelledEnter, time)
      if !silent {
        let distance =
          polygon.map { $0.boundaryDistance(to: point, notBeyond: .infinity) }
          ?? haversineDistance(regions.center(at: slot), point)
        enters.append(Emission(slot: slot, distanceMeters: distance, dwellSeconds: 0))
      }
    }
    // Pending enters not confirmed and not seen at this fix are interrupted.
    if !pendingEnters.isEmpty {
      var j = 0
      while j < pendingEnters.count {
        if pendingEnters[j].seen {
          pendingEnters[j].seen = false
          j += 1
        } else {
          pendingEnters.swapAt(j, pendingEnters.count - 1)
          pendingEnters.removeLast()
        }
      }
    }

    // DWELL: once per visit, judged on fix times; skipped while no visit can be due.
    if usesTime, let delay = configuration.loiteringDelaySeconds,
      !(time - earliestUndwelledEnter < delay)
    {
      var earliest = Double.infinity
      for k in visits.indices where !visits[k].dwellEmitted {
        let inside = time - visits[k].enterTime
        if inside >= delay {
          visits[k].dwellEmitted = true
          let slot = visits[k].slot
          dwells.append(
            Emission(
              slot: slot,
              distanceMeters: regions.hasPolygons
                ? regions.eventDistance(at: slot, to: point)
                : haversineDistance(regions.center(at: slot), point),
              dwellSeconds: inside))
        } else {
          earliest = min(earliest, visits[k].enterTime)
        }
      }
      earliestUndwelledEnter = earliest
    }

    sortEmissions()
    for e in exits {
      events.append(
        TransitionEvent(
          type: .exit, slot: e.slot, fix: fix, distanceMeters: e.distanceMeters,
          visitSeconds: e.dwellSeconds.isNaN ? nil : e.dwellSeconds))
    }
    for e in enters {
      events.append(
        TransitionEvent(type: .enter, slot: e.slot, fix: fix, distanceMeters: e.distanceMeters))
    }
    for e in dwells {
      events.append(
        TransitionEvent(
          type: .dwell, slot: e.slot, fix: fix, distanceMeters: e.distanceMeters,
          dwellSeconds: e.dwellSeconds))
    }
  }

  /// Sorts this fix's exits, enters and dwells by region id. Each list is moved out of `self`
  /// while it is sorted (see `sortByID`), and lists of fewer than two are left alone.
  private mutating func sortEmissions() {
    var list: [Emission] = []
    if exits.count > 1 {
      swap(&list, &exits)
      Self.sortByID(&list, regions)
      swap(&list, &exits)
    }
    if enters.count > 1 {
      swap(&list, &enters)
      Self.sortByID(&list, regions)
      swap(&list, &enters)
    }
    if dwells.count > 1 {
      swap(&list, &dwells)
      Self.sortByID(&list, regions)
      swap(&list, &dwells)
    }
  }

  /// Sorts by region id bytes: insertion sort (no allocation) for the handful of events a fix
  /// usually gives, the standard library's O(n log n) sort beyond 32, where a fix entering
  /// thousands of regions at once (a set of co-located or world-sized geofences) made the
  /// insertion sort quadratic: 40,000 regions took 5.7 s. Ids are unique in a set, so the order
  /// is total. Static, with the set borrowed: a method on `self` would copy the detector to
  /// pass `list` (one of its fields) inout.
  private static func sortByID(_ list: inout [Emission], _ regions: borrowing RegionSet) {
    if list.count < 2 { return }
    if list.count > 32 {
      let set = copy regions
      list.sort { set.precedes($0.slot, $1.slot) }
      return
    }
    for i in 1..<list.count {
      let item = list[i]
      var j = i
      while j > 0 && regions.precedes(item.slot, list[j - 1].slot) {
        list[j] = list[j - 1]
        j -= 1
      }
      list[j] = item
    }
  }
}
