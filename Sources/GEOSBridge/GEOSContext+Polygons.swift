import CGEOS

extension GEOSContext {
  /// Builds a `Polygon` (one polygon given) or a `MultiPolygon` from rings of (x, y)
  /// positions: for geographic data x is the longitude and y the latitude, in degrees.
  ///
  /// `polygons[p][0]` is polygon p's outer ring and the other rings its holes. Each ring goes
  /// through `GEOSGeom_createLinearRing_r`, which refuses a ring that is not closed or has 1 to
  /// 3 positions; the thrown error names the polygon and ring (0-based) and carries GEOS's
  /// message, for example `"IllegalArgumentException: Points of LinearRing do not form a
  /// closed linestring"`. The result is not checked for validity: see
  /// ``Geometry/validity()``.
  /// - Throws: ``GEOSError`` with ``GEOSError/Code/operationFailed(_:)`` naming the C function
  ///   and the ring.
  /// - Complexity: O(n) for n positions.
  public func polygon(rings polygons: [[[SIMD2<Double>]]]) throws(GEOSError) -> Geometry {
    var built: [OpaquePointer?] = []
    func destroyBuilt() {
      for g in built { if let g { GEOSGeom_destroy_r(handle, g) } }
    }
    for (p, polygon) in polygons.enumerated() {
      var rings: [OpaquePointer?] = []
      for (r, ring) in polygon.enumerated() {
        beginCall()
        let sequence = ring.withUnsafeBufferPointer { buffer in
          buffer.withMemoryRebound(to: Double.self) { doubles in
            GEOSCoordSeq_copyFromBuffer_r(handle, doubles.baseAddress, UInt32(ring.count), 0, 0)
          }
        }
        // The ring takes ownership of the sequence, also when it fails.
        guard let sequence, let linearRing = GEOSGeom_createLinearRing_r(handle, sequence)
        else {
          let error = failure("GEOSGeom_createLinearRing_r (polygon \(p), ring \(r))")
          for g in rings { if let g { GEOSGeom_destroy_r(handle, g) } }
          destroyBuilt()
          throw error
        }
        rings.append(linearRing)
      }
      guard let shell = rings.first ?? nil else {
        destroyBuilt()
        throw GEOSError(code: .operationFailed("GEOSGeom_createPolygon_r (polygon \(p))"))
      }
      beginCall()
      var holes = Array(rings.dropFirst())
      // The polygon takes ownership of its shell and holes.
      let made = holes.withUnsafeMutableBufferPointer { buffer in
        GEOSGeom_createPolygon_r(handle, shell, buffer.baseAddress, UInt32(buffer.count))
      }
      guard let made else {
        let error = failure("GEOSGeom_createPolygon_r (polygon \(p))")
        destroyBuilt()
        throw error
      }
      built.append(made)
    }
    if built.count == 1, let only = built[0] { return Geometry(context: self, pointer: only) }
    beginCall()
    // The collection takes ownership of its members.
    let collection = built.withUnsafeMutableBufferPointer { buffer in
      GEOSGeom_createCollection_r(
        handle, Int32(GEOS_MULTIPOLYGON.rawValue), buffer.baseAddress, UInt32(buffer.count))
    }
    guard let collection else { throw failure("GEOSGeom_createCollection_r") }
    return Geometry(context: self, pointer: collection)
  }
}

extension Geometry {
  /// The geometry's boundary (`GEOSBoundary_r`): a polygon's rings as line strings.
  /// - Throws: ``GEOSError`` when GEOS fails.
  public func boundary() throws(GEOSError) -> Geometry {
    context.beginCall()
    guard let pointer = GEOSBoundary_r(context.handle, pointer) else {
      throw context.failure("GEOSBoundary_r")
    }
    return Geometry(context: context, pointer: pointer)
  }

  /// A prepared form of this geometry (`GEOSPrepare_r`) for repeated predicates.
  /// - Throws: ``GEOSError`` when GEOS fails.
  public func prepared() throws(GEOSError) -> PreparedGeometry {
    context.beginCall()
    guard let prepared = GEOSPrepare_r(context.handle, pointer) else {
      throw context.failure("GEOSPrepare_r")
    }
    return PreparedGeometry(geometry: self, pointer: prepared)
  }
}

/// A prepared geometry (`const GEOSPreparedGeometry *`), destroyed in `deinit`
/// (`GEOSPreparedGeom_destroy_r`). It keeps its source geometry (and so its context) alive
/// and follows the same thread rule: not `Sendable`.
public final class PreparedGeometry {
  /// The geometry it was prepared from.
  public let geometry: Geometry
  let pointer: OpaquePointer

  init(geometry: Geometry, pointer: OpaquePointer) {
    self.geometry = geometry
    self.pointer = pointer
  }

  deinit {
    GEOSPreparedGeom_destroy_r(geometry.context.handle, pointer)
  }

  /// Whether the prepared geometry covers `other` (`GEOSPreparedCovers_r`): no point of
  /// `other` lies outside it. **Boundary**: a point on a polygon's boundary is covered. Planar:
  /// coordinates are taken as they are.
  /// - Precondition: both geometries come from the same context.
  /// - Throws: ``GEOSError`` when GEOS signals an exception.
  public func covers(_ other: Geometry) throws(GEOSError) -> Bool {
    let context = geometry.context
    precondition(other.context === context, "geometries from different GEOS contexts")
    context.beginCall()
    switch GEOSPreparedCovers_r(context.handle, pointer, other.pointer) {
    case 1: return true
    case 0: return false
    default: throw context.failure("GEOSPreparedCovers_r")
    }
  }

  /// Whether the prepared geometry covers the point (`x`, `y`).
  /// - Throws: ``GEOSError`` when GEOS fails.
  public func covers(x: Double, y: Double) throws(GEOSError) -> Bool {
    try covers(try geometry.context.point(x: x, y: y))
  }
}

@available(*, unavailable, message: "a GEOS geometry shares its context's thread rule")
extension PreparedGeometry: Sendable {}
