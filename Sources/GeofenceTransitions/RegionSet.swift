import BinarySnapshot
import GeofenceGeometry
import GeofenceIndex

/// The monitored regions: their spatial index, their ids, and the order in which events that
/// happen at the same fix are reported.
///
/// Regions are addressed by **slot**, their position in the array given to `init` (as in
/// ``GridIndex``); ``append(id:region:)`` adds slots at the end and ``remove(_:)`` retires a
/// slot for good, so slots are stable across incremental changes. Events of one type at one
/// fix are ordered by the UTF-8 bytes of the region id (lexicographically, shorter prefix
/// first), see ``precedes(_:_:)``; equal ids (which a valid set does not have) by slot.
///
/// A value type whose arrays are shared between copies: giving the same set to many
/// detectors does not copy it (a later change to one copy copies its arrays once).
public struct RegionSet: Sendable {
  /// The spatial index over the regions.
  public private(set) var index: GridIndex
  /// Region id per slot (removed slots keep their last id).
  public private(set) var ids: [String]
  /// Centre and radius per slot (the same regions as in ``index``, which holds their unit
  /// vectors and thresholds): the circle, or a polygon's bounding cap. 24 bytes a slot, where a
  /// ``CircularRegion`` takes 56; ``region(at:)`` rebuilds the region from them.
  @usableFromInline private(set) var circles: [PackedCircle]
  /// Polygons, by ``polygonOfSlot``. A side table, so that a set of circles pays nothing for
  /// polygons: no wider records, no existentials.
  public private(set) var polygons: [PolygonRegion] = []
  /// Per slot, the index into ``polygons``, or −1 for a circle; empty while the set holds no
  /// polygon.
  public private(set) var polygonOfSlot: [Int32] = []
  /// Per polygon (as ``polygons``), its slot.
  @usableFromInline private(set) var slotOfPolygon: [Int32] = []
  /// The polygons' longitude/latitude boxes, payload the polygon's index in ``polygons``: the
  /// first filter of ``forEachPolygon(containing:_:)``. Removed polygons are taken out.
  public private(set) var polygonIndex = BoxGridIndex()
  /// Number of slots not removed.
  public private(set) var liveCount: Int

  /// Builds the set from geofences; slot `i` is `geofences[i]`.
  /// - Parameters:
  ///   - geofences: the regions, at most `Int32.max` of them.
  ///   - cellSizeDegrees: passed to ``GridIndex/init(regions:cellSizeDegrees:)``.
  /// - Complexity: the index build, O(n) for n geofences.
  public init(geofences: [Geofence], cellSizeDegrees: Double? = nil) {
    var polygonSlots: [Int32] = []
    var polygons: [PolygonRegion] = []
    for (slot, g) in geofences.enumerated() {
      if let polygon = g.polygon {
        polygonSlots.append(Int32(slot))
        polygons.append(polygon)
      }
    }
    self.init(
      ids: geofences.map(\.id), circles: geofences.map { PackedCircle($0.region) },
      polygons: polygons, polygonSlots: polygonSlots, cellSizeDegrees: cellSizeDegrees)
  }

  /// Builds the set from parallel arrays; slot `i` is `(ids[i], regions[i])`.
  /// - Precondition: `ids.count == regions.count <= Int32.max`.
  /// - Complexity: the index build, O(n) for n regions.
  public init(ids: [String], regions: [CircularRegion], cellSizeDegrees: Double? = nil) {
    self.init(
      ids: ids, circles: regions.map(PackedCircle.init), polygons: [], polygonSlots: [],
      cellSizeDegrees: cellSizeDegrees)
  }

  /// Builds the set from columns, keeping the arrays given (no copy when the caller holds no
  /// other reference): slot `i` is `ids[i]` with the circle `circles[i]` (for a polygon, its
  /// ``PolygonRegion/boundingCap``), and `polygons[k]` is the polygon of slot
  /// `polygonSlots[k]`.
  /// - Precondition: `ids.count == circles.count <= Int32.max`; `polygons.count ==
  ///   polygonSlots.count`; polygon slots are distinct and below `ids.count`.
  /// - Complexity: the index build (``GridIndex/init(circles:cellSizeDegrees:)``), O(n) for n
  ///   slots, plus O(p log p) for p polygons.
  public init(
    ids: [String], circles: [PackedCircle], polygons: [PolygonRegion],
    polygonSlots: [Int32], cellSizeDegrees: Double? = nil
  ) {
    precondition(ids.count == circles.count, "one id per circle")
    precondition(ids.count <= Int(Int32.max), "at most Int32.max regions")
    precondition(polygons.count == polygonSlots.count, "one slot per polygon")
    self.index = GridIndex(circles: circles, cellSizeDegrees: cellSizeDegrees)
    self.ids = ids
    self.circles = circles
    self.liveCount = ids.count
    for (polygon, slot) in zip(polygons, polygonSlots) { setPolygon(polygon, at: Int(slot)) }
    if !polygons.isEmpty { rebuildPolygonIndex() }
  }

  /// Number of slots, removed ones included (slots are `0 ..< count`).
  public var count: Int { ids.count }

  /// The id of the region in `slot`.
  public func id(at slot: Int32) -> String { ids[Int(slot)] }

  /// The region in `slot`: the circle, or a polygon's bounding cap, equal to the one given
  /// (its unit vector and threshold are computed again from the same centre and radius, so
  /// they are the same bits). O(1), one paired sine and cosine and one sine.
  public func region(at slot: Int32) -> CircularRegion { circles[Int(slot)].region }

  /// The centre and radius of the region in `slot` (a polygon's bounding cap's). O(1).
  public func packedCircle(at slot: Int32) -> PackedCircle { circles[Int(slot)] }

  /// The centre of the region in `slot` (a polygon's bounding cap's). O(1), no trigonometry.
  @inlinable
  public func center(at slot: Int32) -> Coordinate { circles[Int(slot)].center }

  /// The radius in metres of the region in `slot` (a polygon's bounding cap's). O(1).
  @inlinable
  public func radiusMeters(at slot: Int32) -> Double { circles[Int(slot)].radiusMeters }

  /// Heap bytes of the centres and radii (24 a slot), by capacity.
  public var circleFootprintBytes: Int { circles.capacity * MemoryLayout<PackedCircle>.stride }

  /// Heap bytes of the polygons, their slot tables and their box index, by capacity.
  public var polygonFootprintBytes: Int {
    (polygonOfSlot.capacity + slotOfPolygon.capacity) * MemoryLayout<Int32>.stride
      + polygonIndex.memoryFootprintBytes
      + polygons.capacity * MemoryLayout<PolygonRegion>.stride
      + polygons.reduce(0) { $0 + $1.memoryBytes }
  }

  /// True when at least one slot holds a polygon.
  @inlinable public var hasPolygons: Bool { !polygonOfSlot.isEmpty }

  /// True when at least one slot holds a circle (a removed one included). O(1).
  @inlinable public var hasCircles: Bool { polygons.count < ids.count }

  /// The polygon in `slot`, or nil for a circle. O(1).
  @inlinable
  public func polygon(at slot: Int32) -> PolygonRegion? {
    polygonIndex(at: slot).map { polygons[$0] }
  }

  /// The index in ``polygons`` of the polygon in `slot`, or nil for a circle. O(1).
  @inlinable
  public func polygonIndex(at slot: Int32) -> Int? {
    if polygonOfSlot.isEmpty { return nil }
    let k = polygonOfSlot[Int(slot)]
    return k < 0 ? nil : Int(k)
  }

  /// The slot of each polygon in ``polygons``, in the same order.
  public var polygonSlots: [Int32] { slotOfPolygon }

  /// The shape in `slot`.
  public func shape(at slot: Int32) -> RegionShape {
    if let polygon = polygon(at: slot) { return .polygon(polygon) }
    return .circle(region(at: slot))
  }

  /// The size that plays the part of a circle's radius in the accuracy gate and the
  /// hysteresis: the radius, or a polygon's ``PolygonRegion/equivalentRadiusMeters``.
  @inlinable
  public func sizeMeters(at slot: Int32) -> Double {
    if let polygon = polygon(at: slot) { return polygon.equivalentRadiusMeters }
    return circles[Int(slot)].radiusMeters
  }

  /// Distance in metres that events report for `slot` at `point`: to the centre of a circle,
  /// to the nearest edge of a polygon (inside or outside, see
  /// ``PolygonRegion/boundaryDistance(to:notBeyond:)``).
  public func eventDistance(at slot: Int32, to point: Coordinate) -> Double {
    if let polygon = polygon(at: slot) {
      return polygon.boundaryDistance(to: point, notBeyond: .infinity)
    }
    return haversineDistance(circles[Int(slot)].center, point)
  }

  private mutating func setPolygon(_ polygon: PolygonRegion, at slot: Int) {
    if polygonOfSlot.isEmpty { polygonOfSlot = [Int32](repeating: -1, count: ids.count) }
    polygonOfSlot[slot] = Int32(polygons.count)
    polygons.append(polygon)
    slotOfPolygon.append(Int32(slot))
  }

  /// The box of `polygon` for ``polygonIndex``, with its ``PolygonRegion/innerBox`` when
  /// `inner` is true and that box lies within longitudes [−180, 180].
  private static func box(of polygon: PolygonRegion, inner: Bool = true) -> BoxGridIndex.Box {
    var box = BoxGridIndex.Box(
      minLongitude: polygon.minLongitude, maxLongitude: polygon.maxLongitude,
      minLatitude: polygon.minLatitude, maxLatitude: polygon.maxLatitude)
    if inner, let i = polygon.innerBox, i.minLongitude >= -180, i.maxLongitude <= 180 {
      box.inner = SIMD4(i.minLongitude, i.minLatitude, i.maxLongitude, i.maxLatitude)
    }
    return box
  }

  /// Builds ``polygonIndex`` again from the polygons not removed. O(p log p) for p polygons.
  private mutating func rebuildPolygonIndex() {
    var boxes: [BoxGridIndex.Box] = []
    var payloads: [Int32] = []
    boxes.reserveCapacity(polygons.count)
    payloads.reserveCapacity(polygons.count)
    for (k, polygon) in polygons.enumerated() where !index.isRemoved(slotOfPolygon[k]) {
      boxes.append(Self.box(of: polygon))
      payloads.append(Int32(k))
    }
    let regions = polygons
    let owners = payloads
    polygonIndex = BoxGridIndex(boxes: boxes, payloads: payloads) { b, corner, subcell in
      regions[Int(owners[b])].coverage(
        minLongitude: corner.x, minLatitude: corner.y, cellWidth: subcell.x,
        cellHeight: subcell.y)
    }
  }

  /// Calls `body` with the slot of every polygon that contains `point` (closed: a point on an
  /// edge or a vertex is inside, see ``PolygonRegion/contains(_:)``), each once, in no
  /// particular order; circles are not visited. Removed slots never appear. Does not allocate.
  ///
  /// The first filter is planar (``polygonIndex``, keyed by the point's degrees: no unit
  /// vector, no trigonometry); a point in a candidate's inner box (``PolygonRegion/innerBox``)
  /// or in a part of the index's cell that the polygon wholly covers
  /// (``PolygonRegion/coverage(minLongitude:minLatitude:cellWidth:cellHeight:)``) is inside at
  /// once, a point in a part it wholly misses is not a candidate, and each other candidate is
  /// tested with ``PolygonRegion/contains(_:)``.
  /// A point outside latitude [−90, 90] or longitude [−180, 180] (possible with
  /// `Coordinate(uncheckedLatitude:longitude:)`), or at a pole, is tested against every
  /// polygon; NaN finds nothing.
  /// - Complexity: O(c + w) box comparisons for the c entries of the point's grid cell and the
  ///   w of the wide list, plus one polygon test a candidate (see ``PolygonRegion/contains(_:)``).
  @inlinable
  public func forEachPolygon(containing point: Coordinate, _ body: (Int32) -> Void) {
    let x = point.longitude
    let y = point.latitude
    // A pole (one point at every longitude) is answered by every polygon, as a point out of
    // range is: the box grid files it by its longitude.
    guard abs(y) < 90, abs(x) <= 180 else {
      if x.isNaN || y.isNaN { return }
      for (k, polygon) in polygons.enumerated()
      where !index.isRemoved(slotOfPolygon[k]) && polygon.contains(point) {
        body(slotOfPolygon[k])
      }
      return
    }
    polygons.withUnsafeBufferPointer { polygons in
      slotOfPolygon.withUnsafeBufferPointer { slots in
        polygonIndex.forEachCandidate(longitude: x, latitude: y) { k, certain in
          if certain || polygons[Int(k)].contains(point) { body(slots[Int(k)]) }
        }
      }
    }
  }

  /// True when `slot` was removed: queries never return it again.
  public func isRemoved(_ slot: Int32) -> Bool { index.isRemoved(slot) }

  /// Whether events of `a` are reported before events of `b` at one fix: UTF-8 byte order of
  /// the ids, then slot order.
  /// - Complexity: O(L) for ids of length L; no allocation.
  @inlinable
  public func precedes(_ a: Int32, _ b: Int32) -> Bool {
    let order = Self.compareUTF8(ids[Int(a)], ids[Int(b)])
    return order != 0 ? order < 0 : a < b
  }

  /// −1, 0 or 1 as `x` sorts before, with or after `y` in UTF-8 byte order (a proper prefix
  /// first): one pass over the contiguous bytes of both, where `lexicographicallyPrecedes`
  /// both ways would take two generic passes.
  @usableFromInline
  static func compareUTF8(_ x: String, _ y: String) -> Int {
    let fast = x.utf8.withContiguousStorageIfAvailable { xs in
      y.utf8.withContiguousStorageIfAvailable { ys -> Int in
        let n = Swift.min(xs.count, ys.count)
        var i = 0
        while i < n {
          if xs[i] != ys[i] { return xs[i] < ys[i] ? -1 : 1 }
          i += 1
        }
        return xs.count == ys.count ? 0 : (xs.count < ys.count ? -1 : 1)
      }
    }
    if let order = fast ?? nil { return order }
    if x.utf8.lexicographicallyPrecedes(y.utf8) { return -1 }
    return y.utf8.lexicographicallyPrecedes(x.utf8) ? 1 : 0
  }

  /// Adds a region in a new slot (`count` before the call) and returns the slot.
  /// - Complexity: amortised O(√n), see ``GridIndex/insert(_:)``.
  @discardableResult
  public mutating func append(id: String, region: CircularRegion) -> Int32 {
    append(id: id, shape: .circle(region))
  }

  /// Adds a region of any shape in a new slot and returns the slot; the index holds its
  /// ``RegionShape/indexCircle``.
  /// - Complexity: amortised O(√n), see ``GridIndex/insert(_:)``.
  @discardableResult
  public mutating func append(id: String, shape: RegionShape) -> Int32 {
    let region = shape.indexCircle
    let slot = index.insert(region)
    ids.append(id)
    circles.append(PackedCircle(region))
    liveCount += 1
    if !polygonOfSlot.isEmpty { polygonOfSlot.append(-1) }
    if let polygon = shape.polygon {
      setPolygon(polygon, at: Int(slot))
      // Added to the wide list, tested on every query, until there are enough of them to
      // rebuild: at most 64 + p/16 for p polygons, so a rebuild costs O(log p) amortised a
      // polygon and a query at most that many more box comparisons.
      if polygonIndex.insertedCount >= 64 + polygons.count / 16 {
        rebuildPolygonIndex()
      } else {
        polygonIndex.insert(Self.box(of: polygon), payload: Int32(polygons.count - 1))
      }
    }
    return slot
  }

  /// Retires `slot`: no query returns it again; the slot number is never reused. Removing a
  /// removed slot does nothing.
  /// - Precondition: `0 <= slot < count`.
  /// - Complexity: O(1), see ``GridIndex/remove(at:)``.
  public mutating func remove(_ slot: Int32) {
    if index.isRemoved(slot) { return }
    index.remove(at: slot)
    liveCount -= 1
    if !polygonOfSlot.isEmpty, polygonOfSlot[Int(slot)] >= 0 {
      let k = polygonOfSlot[Int(slot)]
      polygonIndex.remove(Self.box(of: polygons[Int(k)], inner: false), payload: k)
    }
  }
}

// MARK: - Snapshot

extension RegionSet {
  /// Appends the set to a snapshot: the index's tables, ids, centres and radii as bytes, and
  /// each polygon's rings (its edge indexes are rebuilt on reading).
  /// - Complexity: O(n) in the set's bytes.
  public func write(to writer: inout SnapshotWriter) {
    index.write(to: &writer)
    writer.write(strings: ids)
    writer.write(array: circles)
    writer.write(array: polygonOfSlot)
    writer.write(liveCount)
    writer.write(UInt64(polygons.count))
    for polygon in polygons {
      writer.write(array: polygon.ringStarts.map { UInt64($0) })
      writer.write(array: polygon.polygonStarts.map { UInt64($0) })
      writer.write(array: zip(polygon.longitudes, polygon.latitudes).map { SIMD2($0, $1) })
    }
  }

  /// The set ``write(to:)`` wrote.
  /// - Throws: ``BinarySnapshot/SnapshotError`` when the bytes end early, a layout differs or
  ///   the parts disagree (counts, polygon references, rings).
  /// - Complexity: O(n) copies, plus O(v log v) for each polygon of v vertices.
  public init(snapshot reader: inout SnapshotReader) throws(SnapshotError) {
    index = try GridIndex(snapshot: &reader)
    ids = try reader.readStrings()
    circles = try reader.readArray()
    polygonOfSlot = try reader.readArray()
    liveCount = try reader.read()
    let polygonCount: UInt64 = try reader.read()
    guard ids.count == index.count, circles.count == ids.count,
      polygonOfSlot.isEmpty || polygonOfSlot.count == ids.count, liveCount >= 0,
      liveCount <= ids.count,
      polygonCount <= UInt64(ids.count)
    else { throw .layout("region set counts") }
    polygons = []
    for _ in 0..<Int(polygonCount) {
      let ringStarts: [UInt64] = try reader.readArray()
      let polygonStarts: [UInt64] = try reader.readArray()
      let points: [SIMD2<Double>] = try reader.readArray()
      guard !ringStarts.isEmpty else { throw .layout("polygon rings") }
      var nested: [[[SIMD2<Double>]]] = []
      for p in 0..<max(0, polygonStarts.count - 1) {
        var rings: [[SIMD2<Double>]] = []
        let first = Int(min(polygonStarts[p], UInt64(ringStarts.count)))
        let last = Int(min(polygonStarts[p + 1], UInt64(ringStarts.count - 1)))
        for r in first..<max(first, last) {
          let a = Int(min(ringStarts[r], UInt64(points.count)))
          let b = Int(min(ringStarts[r + 1], UInt64(points.count)))
          rings.append(Array(points[a..<max(a, b)]))
        }
        nested.append(rings)
      }
      do {
        polygons.append(try PolygonRegion(polygons: nested))
      } catch {
        throw .layout("polygon: \(error)")
      }
    }
    guard polygonOfSlot.allSatisfy({ $0 < Int32(polygons.count) }) else {
      throw .layout("polygon references")
    }
    // Each polygon in exactly one slot.
    slotOfPolygon = [Int32](repeating: -1, count: polygons.count)
    for (slot, k) in polygonOfSlot.enumerated() where k >= 0 {
      guard slotOfPolygon[Int(k)] < 0 else { throw .layout("polygon references") }
      slotOfPolygon[Int(k)] = Int32(slot)
    }
    guard slotOfPolygon.allSatisfy({ $0 >= 0 }) else { throw .layout("polygon references") }
    rebuildPolygonIndex()
    // Every circle as `CircularRegion` accepts it, so that `region(at:)` can rebuild it.
    guard
      circles.allSatisfy({
        $0.radiusMeters.isFinite && $0.radiusMeters > 0 && abs($0.center.latitude) <= 90
          && abs($0.center.longitude) <= 180
      })
    else { throw .layout("a circle out of range") }
  }
}
