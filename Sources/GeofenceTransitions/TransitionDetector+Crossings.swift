import GeofenceGeometry
import GeofenceIndex

extension TransitionDetector {
  /// One inferred event of the current segment, before it becomes a ``TransitionEvent``.
  struct InferredEmission: Sendable {
    var slot: Int32
    var type: TransitionType
    /// Angle along the segment from its start, radians.
    var angle: Double
    /// Interpolated time, seconds.
    var time: Double
    /// The time of the pair's ENTER (for the EXIT's visit length).
    var enterTime: Double
  }

  /// Moves ``stayStart`` to `fix` when it is farther than
  /// ``CrossingInference/samePlaceMeters`` from it (or there is none). Called at every
  /// accepted fix of a timed detector with crossing inference, after ``inferCrossings``.
  mutating func updateStay(_ fix: LocationFix, time: Double, rules: CrossingInference) {
    if let stay = stayStart,
      haversineDistance(stay.coordinate, fix.coordinate) <= rules.samePlaceMeters
    {
      return
    }
    stayStart = Anchor(coordinate: fix.coordinate, time: time, accuracy: 0)
  }

  /// Appends the inferred ENTER/EXIT pairs of the regions the segment from `previous` to `fix`
  /// passes through (see ``CrossingInference`` for the rules, the segment's start time and the
  /// guards). Changes no region state. Called before `fix` updates any state, with `time`
  /// its time.
  mutating func inferCrossings(
    from previous: Anchor, to fix: LocationFix, time: Double, rules: CrossingInference,
    into events: inout [TransitionEvent]
  ) {
    let accuracy = fix.horizontalAccuracy ?? 0
    let worstAccuracy = max(previous.accuracy, accuracy)
    guard worstAccuracy <= rules.maxAccuracyMeters, time - previous.time <= rules.maxGapSeconds
    else { return }
    let from = UnitVector(previous.coordinate)
    let to = UnitVector(fix.coordinate)
    guard let segment = GreatCircleSegment(from: from, to: to) else { return }
    let lengthMeters = EarthModel.meters(fromRadians: segment.angle)
    guard lengthMeters <= rules.maxGapMeters else { return }
    // The start time: the latest time at which the device can have left `previous` and still
    // reach `fix` within the filter's speed (accuracies subtracted), no later than `previous`
    // itself, and no earlier than the first report of that place.
    var startTime = previous.time
    if let filter = configuration.outlierFilter {
      let travel =
        max(0, lengthMeters - previous.accuracy - accuracy) / filter.maxSpeedMetersPerSecond
      startTime = min(previous.time, time - travel)
      let earliest = min(previous.time, stayStart?.time ?? previous.time)
      guard startTime >= earliest, time - startTime <= rules.maxGapSeconds else { return }
    }

    // Every point of the segment is within half its length of the midpoint; 1 m covers the
    // rounding of the midpoint and of the length.
    let midpoint = segment.point(atAngle: segment.angle / 2).coordinate
    var found: [InferredEmission] = []
    swap(&found, &inferredScratch)
    defer { swap(&found, &inferredScratch) }
    found.removeAll(keepingCapacity: true)
    let inside = insideSet
    let span = time - startTime
    let hysteresis = configuration.hysteresisMeters(forRadius:)
    regions.index.forEachCandidate(near: midpoint, withinMeters: lengthMeters / 2 + 1) { slot in
      if inside.contains(slot) { return }
      // Crossings are inferred for circles only: a polygon's bounding cap is not its shape.
      if regions.hasPolygons && regions.polygon(at: slot) != nil { return }
      if worstAccuracy > regions.radiusMeters(at: slot) { return }
      let region = regions.region(at: slot)
      if region.contains(from) || region.contains(to) { return }
      guard
        let c = segment.crossing(ofDiscAt: region.centerVector, radius: region.angularRadius),
        region.radiusMeters - EarthModel.meters(fromRadians: c.distance)
          > max(1e-6, hysteresis(region.radiusMeters))
      else { return }
      // The index may give a slot twice; the few crossings found so far are searched.
      if found.contains(where: { $0.slot == slot }) { return }
      let enterTime = startTime + span * (c.entry / segment.angle)
      let exitTime = startTime + span * (c.exit / segment.angle)
      found.append(
        InferredEmission(
          slot: slot, type: .enter, angle: c.entry, time: enterTime, enterTime: enterTime))
      found.append(
        InferredEmission(
          slot: slot, type: .exit, angle: c.exit, time: exitTime, enterTime: enterTime))
    }
    if found.isEmpty { return }
    Self.sortInferred(&found, regions)
    let fixAccuracy: Double? =
      fix.horizontalAccuracy == nil && previous.accuracy == 0 ? nil : worstAccuracy
    for e in found {
      let point = segment.point(atAngle: e.angle).coordinate
      events.append(
        TransitionEvent(
          type: e.type, slot: e.slot,
          fix: LocationFix(
            coordinate: point, time: e.time, horizontalAccuracy: fixAccuracy,
            deviceID: fix.deviceID, sourceIndex: fix.sourceIndex),
          distanceMeters: haversineDistance(regions.center(at: e.slot), point),
          visitSeconds: e.type == .exit ? e.time - e.enterTime : nil, inferred: true))
    }
  }

  /// Insertion sort by time, then region id, then ENTER before EXIT: a segment crosses a
  /// handful of regions, and it allocates nothing.
  private static func sortInferred(
    _ list: inout [InferredEmission], _ regions: borrowing RegionSet
  ) {
    if list.count < 2 { return }
    func before(_ a: InferredEmission, _ b: InferredEmission) -> Bool {
      if a.time != b.time { return a.time < b.time }
      if a.slot != b.slot { return regions.precedes(a.slot, b.slot) }
      return a.type == .enter && b.type == .exit
    }
    for i in 1..<list.count {
      let item = list[i]
      var j = i
      while j > 0 && before(item, list[j - 1]) {
        list[j] = list[j - 1]
        j -= 1
      }
      list[j] = item
    }
  }
}
