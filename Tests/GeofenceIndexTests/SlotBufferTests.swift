import GeofenceGeometry
import GeofenceTestSupport
import Testing

@testable import GeofenceIndex

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

struct SlotBufferTests {
  /// Regions centred within about 30 m of (47.37, 8.54), radii log-spaced from 40 m to 50 km,
  /// so that they are filed at many levels and a point near the centre lies in all of them.
  static func nestedRegions(count: Int) throws -> [CircularRegion] {
    var rng = SeededGenerator(seed: 91)
    return try (0..<count).map { k in
      let radius = 40 * pow(50_000 / 40, Double(k) / Double(count - 1))
      let center = Coordinate(
        uncheckedLatitude: 47.37 + Double.random(in: -2e-4...2e-4, using: &rng),
        longitude: 8.54 + Double.random(in: -2e-4...2e-4, using: &rng))
      return try CircularRegion(center: center, radiusMeters: radius)
    }
  }

  /// `SlotBuffer()` allocates at the first query that meets a candidate, whether or not the
  /// answer is empty, and never for a query that meets none.
  @Test func emptyBufferAllocatesAtItsFirstCandidate() throws {
    let regions = try Self.nestedRegions(count: 50)
    let index = GridIndex(regions: regions)
    var slots = SlotBuffer()
    #expect(slots.storage == nil && slots.capacity == 0)
    // A point far from every region: no candidate, so no storage.
    let far = Coordinate(uncheckedLatitude: -40, longitude: 120)
    #expect(index._refineCount(at: far) == 0)
    index.query(far, into: &slots)
    #expect(slots.isEmpty && slots.storage == nil)
    // A point in the box of the largest region but outside its disc (a corner of the box):
    // a candidate is refined, the answer is empty, and storage comes.
    let corner = Coordinate(uncheckedLatitude: 47.37 + 0.43, longitude: 8.54 + 0.63)
    #expect(index._refineCount(at: corner) > 0 && bruteForce(regions, corner).isEmpty)
    index.query(corner, into: &slots)
    #expect(slots.isEmpty && slots.storage != nil && slots.capacity >= 16)
    let center = Coordinate(uncheckedLatitude: 47.37, longitude: 8.54)
    index.query(center, into: &slots)
    #expect(slots.count == 50)
    #expect(slots.sorted() == bruteForce(regions, center))
    #expect(slots.capacity >= 50)
    // Then an empty answer keeps the storage and reports no slots.
    let storage = slots.storage
    index.query(far, into: &slots)
    #expect(slots.isEmpty && slots.storage === storage)
    #expect(SlotBuffer(capacity: 1).capacity == 16 && SlotBuffer(capacity: 100).capacity == 100)
  }

  /// A buffer of capacity 1 must grow in the middle of an answer, after the slots of earlier
  /// cell runs (one run per level) are written, and keep them.
  @Test func growsInTheMiddleOfAnAnswerKeepingEarlierSlots() throws {
    let regions = try Self.nestedRegions(count: 400)
    var rng = SeededGenerator(seed: 92)
    for cellSize in [nil, 0.001, 0.1] as [Double?] {
      let index = GridIndex(regions: regions, cellSizeDegrees: cellSize)
      #expect(index.nonEmptyLevelList.count > 1, "the set spans several levels")
      for _ in 0..<200 {
        // Points from the centre out to about 60 km: answers of 0 to 400 slots.
        let p = Coordinate(
          uncheckedLatitude: 47.37 + Double.random(in: -0.55...0.55, using: &rng),
          longitude: 8.54 + Double.random(in: -0.8...0.8, using: &rng))
        var slots = SlotBuffer(capacity: 1)
        index.query(p, into: &slots)
        let expected = bruteForce(regions, p)
        #expect(slots.sorted() == expected, "cell \(String(describing: cellSize)) at \(p)")
        #expect(slots.capacity >= slots.count)
      }
    }
    // The centre lies in every region.
    var slots = SlotBuffer(capacity: 1)
    GridIndex(regions: regions).query(
      Coordinate(uncheckedLatitude: 47.37, longitude: 8.54), into: &slots)
    #expect(slots.count == 400)
    #expect(slots.sorted() == (0..<400).map { Int32($0) })
  }

  /// A copy keeps the answer it had; the next query into either copy gives that copy storage
  /// of its own first.
  @Test func copiesKeepTheirAnswers() throws {
    let regions = try Self.nestedRegions(count: 120)
    let index = GridIndex(regions: regions)
    let near = Coordinate(uncheckedLatitude: 47.37, longitude: 8.54)
    let farther = Coordinate(uncheckedLatitude: 47.50, longitude: 8.54)
    let farthest = Coordinate(uncheckedLatitude: 47.70, longitude: 8.54)
    let expectedNear = bruteForce(regions, near)
    let expectedFarther = bruteForce(regions, farther)
    let expectedFarthest = bruteForce(regions, farthest)
    #expect(expectedNear.count == 120)
    #expect(expectedFarther.count > 0 && expectedFarther.count < 120)
    #expect(expectedFarthest.count > 0 && expectedFarthest.count < expectedFarther.count)

    var a = SlotBuffer()
    index.query(near, into: &a)
    let b = a
    #expect(a.storage === b.storage)
    index.query(farther, into: &a)
    #expect(a.storage !== b.storage)
    #expect(b.sorted() == expectedNear)
    #expect(a.sorted() == expectedFarther)

    var c = a
    index.query(farthest, into: &c)
    #expect(c.sorted() == expectedFarthest)
    #expect(a.sorted() == expectedFarther)
    #expect(b.sorted() == expectedNear)
  }

  @Test func elementsSubscriptsAndRemoveAll() throws {
    let regions = try Self.nestedRegions(count: 30)
    let index = GridIndex(regions: regions)
    var slots = SlotBuffer(capacity: 8)
    let p = Coordinate(uncheckedLatitude: 47.37, longitude: 8.54)
    index.query(p, into: &slots)
    let elements = Array(slots)
    #expect(elements.sorted() == bruteForce(regions, p))
    #expect((0..<slots.count).map { slots[$0] } == elements)
    #expect(slots.withUnsafeBufferPointer { Array($0) } == elements)
    let capacity = slots.capacity
    slots.removeAll()
    #expect(slots.isEmpty && slots.capacity == capacity)
    #expect(slots.withUnsafeBufferPointer { $0.count } == 0)
    #expect(SlotBuffer().withUnsafeBufferPointer { $0.count } == 0)
  }
}
