import CGEOS

/// The result of validating a geometry with GEOS (OGC Simple Features validity).
public enum GeometryValidity: Hashable, Sendable {
  case valid
  /// Invalid, with GEOS's reason (`GEOSisValidReason_r`), for example
  /// `"Self-intersection[5 5]"`.
  case invalid(reason: String)

  public var isValid: Bool { self == .valid }
}

/// A GEOS geometry (`GEOSGeometry *`), owned by this object and destroyed in `deinit`
/// (`GEOSGeom_destroy_r`).
///
/// Geometry in GEOS is planar: coordinates are Cartesian x and y, and distances are in the
/// same units as the coordinates (degrees for longitude/latitude data, not metres). A geometry
/// keeps its ``GEOSContext`` alive and follows the same thread rule: not `Sendable`.
public final class Geometry {
  /// The context that made the geometry; every call on it goes through this context.
  public let context: GEOSContext
  let pointer: OpaquePointer

  init(context: GEOSContext, pointer: OpaquePointer) {
    self.context = context
    self.pointer = pointer
  }

  deinit {
    GEOSGeom_destroy_r(context.handle, pointer)
  }

  /// The geometry's type name (`GEOSGeomType_r`), for example `"Polygon"`.
  /// - Throws: ``GEOSError`` when GEOS fails.
  public func typeName() throws(GEOSError) -> String {
    context.beginCall()
    guard let name = GEOSGeomType_r(context.handle, pointer) else {
      throw context.failure("GEOSGeomType_r")
    }
    defer { GEOSFree_r(context.handle, name) }
    return String(cString: name)
  }

  /// Checks OGC validity (`GEOSisValid_r`) and, when invalid, asks GEOS why
  /// (`GEOSisValidReason_r`): self-intersections, rings not closed, holes outside the shell,
  /// too few points.
  /// - Returns: ``GeometryValidity/valid`` or ``GeometryValidity/invalid(reason:)``.
  /// - Throws: ``GEOSError`` when GEOS signals an exception.
  /// - Complexity: O(n log n) in the number of vertices.
  public func validity() throws(GEOSError) -> GeometryValidity {
    context.beginCall()
    switch GEOSisValid_r(context.handle, pointer) {
    case 1:
      return .valid
    case 0:
      guard let reason = GEOSisValidReason_r(context.handle, pointer) else {
        throw context.failure("GEOSisValidReason_r")
      }
      defer { GEOSFree_r(context.handle, reason) }
      return .invalid(reason: String(cString: reason))
    default:
      throw context.failure("GEOSisValid_r")
    }
  }

  /// ``validity()`` within a time budget: GEOS's check is O(n log n) for most shapes but
  /// quadratic for some (a star of many long spikes makes every monotone chain overlap every
  /// other near its centre: 50,000 vertices took 20 s), and a geometry from a file or a server
  /// must not stall a load or a sync.
  /// - Parameter seconds: the budget (> 0), wall-clock seconds on this thread.
  /// - Throws: ``GEOSError/Code/timeBudgetExceeded(_:)`` when the check ran past the budget
  ///   (GEOS was interrupted); ``GEOSError`` when GEOS fails otherwise.
  /// - Complexity: that of ``validity()``, cut off at the budget. Budgeted checks of all
  ///   threads take turns (GEOS 3.11 has one process-wide interruption flag).
  public func validity(timeBudgetSeconds seconds: Double) throws(GEOSError) -> GeometryValidity {
    let (result, interrupted) = ValidationBudget.run(seconds: seconds) {
      () -> Result<GeometryValidity, GEOSError> in
      do throws(GEOSError) { return .success(try validity()) } catch { return .failure(error) }
    }
    if interrupted, case .failure = result {
      throw GEOSError(code: .timeBudgetExceeded(seconds))
    }
    return try result.get()
  }

  /// Whether this geometry contains `other` (`GEOSContains_r`, the DE-9IM *contains*
  /// predicate).
  ///
  /// **Boundary**: a point on the boundary of a polygon is *not* contained (it touches the
  /// boundary but has no point in the interior). The result is planar and takes coordinates as
  /// they are: no antimeridian wrapping.
  /// - Precondition: both geometries come from the same context.
  /// - Throws: ``GEOSError`` when GEOS signals an exception (for example on some invalid
  ///   polygons).
  public func contains(_ other: Geometry) throws(GEOSError) -> Bool {
    precondition(other.context === context, "geometries from different GEOS contexts")
    context.beginCall()
    switch GEOSContains_r(context.handle, pointer, other.pointer) {
    case 1: return true
    case 0: return false
    default: throw context.failure("GEOSContains_r")
    }
  }

  /// Minimum planar (Cartesian) distance to `other` (`GEOSDistance_r`), in coordinate units:
  /// degrees for longitude/latitude data, never metres. 0 when the geometries intersect.
  /// - Precondition: both geometries come from the same context.
  /// - Throws: ``GEOSError`` when GEOS signals an exception.
  public func distance(to other: Geometry) throws(GEOSError) -> Double {
    precondition(other.context === context, "geometries from different GEOS contexts")
    context.beginCall()
    var result = 0.0
    guard GEOSDistance_r(context.handle, pointer, other.pointer, &result) == 1 else {
      throw context.failure("GEOSDistance_r")
    }
    return result
  }
}

@available(*, unavailable, message: "a GEOS geometry shares its context's thread rule")
extension Geometry: Sendable {}
