import Foundation
import GeofenceGeometry

/// The stored form of a polygon geofence's geometry: a BLOB of little-endian integers and
/// IEEE 754 doubles, which gives back exactly the ``GeofenceGeometry/PolygonRegion`` it was
/// made from (every coordinate bit for bit; no decimal text in between).
///
/// Layout (all little-endian):
/// 1. `UInt32` format, 1;
/// 2. `UInt32` P, the number of polygons (≥ 1);
/// 3. P × `UInt32`: the number of rings of each polygon (≥ 1; the first is the outer ring);
/// 4. R × `UInt32` (R the sum of the above): the number of positions of each ring (≥ 4, the
///    closing repeat of the first included);
/// 5. V × (`Float64` longitude, `Float64` latitude), degrees, ring after ring.
///
/// The positions are the region's own (``GeofenceGeometry/PolygonRegion/polygons``): already
/// moved into one longitude frame and wound counter-clockwise (holes clockwise), so building
/// the region again changes nothing. 16 bytes a position plus 4 a ring and a polygon. Two
/// equal regions have equal bytes, so SQLite's comparison of the BLOBs is the geometry's.
public enum StoredPolygon {
  /// The format number written first.
  static let format: UInt32 = 1

  /// The bytes of `polygon`.
  /// - Complexity: O(n) for n positions.
  public static func encode(_ polygon: PolygonRegion) -> Data {
    var bytes = Data()
    bytes.reserveCapacity(
      8 + 4 * (polygon.polygonCount + polygon.ringCount) + 16 * polygon.vertexCount)
    func append(_ value: UInt32) {
      withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    func append(_ value: Double) {
      withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }
    append(format)
    append(UInt32(polygon.polygonCount))
    let polygonStarts = polygon.polygonStarts
    for p in 0..<polygon.polygonCount {
      append(UInt32(polygonStarts[p + 1] - polygonStarts[p]))
    }
    let ringStarts = polygon.ringStarts
    for r in 0..<polygon.ringCount { append(UInt32(ringStarts[r + 1] - ringStarts[r])) }
    let longitudes = polygon.longitudes
    let latitudes = polygon.latitudes
    for i in longitudes.indices {
      append(longitudes[i])
      append(latitudes[i])
    }
    return bytes
  }

  /// The region stored in `bytes`, or the reason it cannot be read: a short or long BLOB,
  /// another format, a zero count, or positions that ``GeofenceGeometry/PolygonRegion``
  /// refuses (open ring, fewer than 4 positions, a coordinate out of range). GEOS is not run
  /// again: the store holds only geometries validated when they were synced.
  /// - Complexity: O(n log n) for n positions (building the region's edge index).
  public static func decode(_ bytes: Data) -> Result<PolygonRegion, StoredPolygonError> {
    var offset = bytes.startIndex
    func uint32() -> UInt32? {
      guard bytes.endIndex - offset >= 4 else { return nil }
      var value: UInt32 = 0
      for k in 0..<4 { value |= UInt32(bytes[offset + k]) << (8 * UInt32(k)) }
      offset += 4
      return value
    }
    func double() -> Double? {
      guard bytes.endIndex - offset >= 8 else { return nil }
      var bits: UInt64 = 0
      for k in 0..<8 { bits |= UInt64(bytes[offset + k]) << (8 * UInt64(k)) }
      offset += 8
      return Double(bitPattern: bits)
    }
    guard let format = uint32(), let polygonCount = uint32() else { return .failure(.truncated) }
    guard format == Self.format else { return .failure(.unknownFormat(format)) }
    guard polygonCount > 0 else { return .failure(.emptyCount) }
    // Every count needs at least 4 bytes behind it: a bound before any allocation.
    guard Int(polygonCount) <= (bytes.endIndex - offset) / 4 else { return .failure(.truncated) }
    // `n` counts, each > 0, and their sum; or the failure when one is missing or 0.
    func counts(_ n: Int) -> (counts: [Int], total: Int, failure: StoredPolygonError?) {
      var out: [Int] = []
      out.reserveCapacity(n)
      var total = 0
      for _ in 0..<n {
        guard let c = uint32() else { return ([], 0, .truncated) }
        guard c > 0 else { return ([], 0, .emptyCount) }
        out.append(Int(c))
        total += Int(c)
      }
      return (out, total, nil)
    }
    let (ringCounts, totalRings, ringFailure) = counts(Int(polygonCount))
    if let ringFailure { return .failure(ringFailure) }
    guard totalRings <= (bytes.endIndex - offset) / 4 else { return .failure(.truncated) }
    let (positionCounts, totalPositions, positionFailure) = counts(totalRings)
    if let positionFailure { return .failure(positionFailure) }
    let remaining = bytes.endIndex - offset
    guard totalPositions <= remaining / 16 else { return .failure(.truncated) }
    guard remaining == 16 * totalPositions else { return .failure(.trailingBytes) }
    var polygons: [[[SIMD2<Double>]]] = []
    polygons.reserveCapacity(ringCounts.count)
    var ring = 0
    for rings in ringCounts {
      var polygon: [[SIMD2<Double>]] = []
      polygon.reserveCapacity(rings)
      for _ in 0..<rings {
        var positions: [SIMD2<Double>] = []
        positions.reserveCapacity(positionCounts[ring])
        for _ in 0..<positionCounts[ring] {
          guard let x = double(), let y = double() else { return .failure(.truncated) }
          positions.append(SIMD2(x, y))
        }
        polygon.append(positions)
        ring += 1
      }
      polygons.append(polygon)
    }
    do {
      return .success(try PolygonRegion(polygons: polygons))
    } catch {
      return .failure(.invalid(error))
    }
  }

  /// FNV-1a 64 of the stored bytes, 16 hex digits: names one geometry in a geofence's
  /// lifetime (a changed polygon starts a new life even when its bounding box stays).
  /// - Complexity: O(n) for n positions.
  public static func fingerprint(_ polygon: PolygonRegion) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in encode(polygon) {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }
}

/// Why a stored polygon BLOB could not be read back (see ``StoredPolygon``).
public enum StoredPolygonError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The BLOB ends before its counts or positions do.
  case truncated
  /// Bytes follow the last position.
  case trailingBytes
  /// A format number other than 1.
  case unknownFormat(UInt32)
  /// A polygon count, ring count or position count of zero.
  case emptyCount
  /// The positions do not form a region.
  case invalid(PolygonError)

  public var description: String {
    switch self {
    case .truncated: return "the stored geometry is truncated"
    case .trailingBytes: return "the stored geometry has bytes after its last position"
    case .unknownFormat(let f): return "the stored geometry has unknown format \(f)"
    case .emptyCount: return "the stored geometry has a count of zero"
    case .invalid(let error): return "the stored geometry is not a polygon: \(error)"
    }
  }
}
