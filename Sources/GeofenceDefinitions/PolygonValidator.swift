import GEOSBridge
import GeofenceGeometry

/// Validates GeoJSON `Polygon` and `MultiPolygon` geometries and builds their
/// ``PolygonRegion``, at load and sync time (never per fix).
///
/// Checks, in this order (the first failure rejects that geometry only):
/// 1. **Shape of the JSON**: `type` is `"Polygon"` (`coordinates` an array of rings) or
///    `"MultiPolygon"` (an array of polygons); a ring is an array of positions, a position an
///    array of at least two numbers `[longitude, latitude]` (a third, the altitude, is
///    ignored).
/// 2. **Ranges, antimeridian and poles**, ``PolygonRegion/normalizedPolygons(_:)``: finite
///    coordinates, latitude in [−90, 90], longitude in [−540, 540]; a ring around a pole is
///    rejected; the region is moved into one longitude frame (a polygon cut at ±180 and one
///    written with longitudes past 180 are both accepted).
/// 3. **GEOS** (`GEOSGeom_createLinearRing_r`, then `GEOSisValidReason_r` on the moved
///    coordinates, within ``validationBudgetSeconds``): rings closed, at least 4 positions, no self-intersection, no two rings
///    crossing or touching along a line, holes inside their shell and not nested, polygons
///    of a MultiPolygon not overlapping. The rejection carries GEOS's reason text, which names
///    the place of the fault, for example `Self-intersection[5 5]`.
/// 4. **Winding**: a clockwise outer ring or a counter-clockwise hole is reversed, not
///    rejected (RFC 7946 §3.1.6 asks for counter-clockwise outer rings); ``windingFixes``
///    counts them.
///
/// Owns one GEOS context, created at the first polygon; not `Sendable` (the context's thread
/// rule): use one validator per load or sync.
public final class PolygonValidator {
  /// Wall-clock seconds GEOS may spend checking one geometry: 5. A 100,000-vertex outline of
  /// ordinary shape takes well under a second; a pathological one (many long spikes, where
  /// GEOS's check is quadratic) is rejected with ``PolygonProblem/geos(_:)`` instead of
  /// stalling a load or a sync for minutes.
  public static let validationBudgetSeconds = 5.0

  private var context: GEOSContext?
  /// Rings whose winding order was reversed so far.
  public private(set) var windingFixes = 0

  public init() {}

  /// Validates one GeoJSON geometry object.
  /// - Parameter geometry: the members of the geometry object.
  /// - Returns: the region, or the reason it was rejected.
  /// - Complexity: O(n log n) for n positions (GEOS's validity check).
  public func validate(_ geometry: [String: JSONValue]) -> Result<PolygonRegion, PolygonProblem> {
    let polygons: [[[SIMD2<Double>]]]
    switch Self.positions(geometry) {
    case .success(let value): polygons = value
    case .failure(let problem): return .failure(problem)
    }
    return validate(polygons: polygons)
  }

  /// Validates polygons given as positions (`SIMD2(longitude, latitude)`, degrees): steps 2–4
  /// of the type's checks.
  public func validate(polygons: [[[SIMD2<Double>]]]) -> Result<PolygonRegion, PolygonProblem> {
    let normalized: [[[SIMD2<Double>]]]
    do {
      normalized = try PolygonRegion.normalizedPolygons(polygons)
    } catch {
      return .failure(.coordinates(error))
    }
    do {
      let context: GEOSContext
      if let existing = self.context {
        context = existing
      } else {
        context = try GEOSContext()
        self.context = context
      }
      let geometry = try context.polygon(rings: normalized)
      if case .invalid(let reason) = try geometry.validity(
        timeBudgetSeconds: Self.validationBudgetSeconds)
      {
        return .failure(.geos(reason))
      }
    } catch {
      return .failure(.geos(error.description))
    }
    for polygon in normalized {
      for (r, ring) in polygon.enumerated() {
        let area = PolygonRegion.signedArea(ring)
        if r == 0 ? area < 0 : area > 0 { windingFixes += 1 }
      }
    }
    do {
      return .success(try PolygonRegion(polygons: normalized))
    } catch {
      return .failure(.coordinates(error))
    }
  }

  /// The positions of a GeoJSON `Polygon` or `MultiPolygon` geometry object.
  static func positions(_ geometry: [String: JSONValue]) -> Result<
    [[[SIMD2<Double>]]], PolygonProblem
  > {
    func ring(_ value: JSONValue, _ where_: String) -> Result<[SIMD2<Double>], PolygonProblem> {
      guard case .array(let list) = value else {
        return .failure(.structure("\(where_) must be an array of positions"))
      }
      var out: [SIMD2<Double>] = []
      out.reserveCapacity(list.count)
      for (i, position) in list.enumerated() {
        guard case .array(let xy) = position, xy.count >= 2, case .number(let x) = xy[0],
          case .number(let y) = xy[1]
        else {
          return .failure(
            .structure("\(where_), position \(i) must be an array [longitude, latitude]"))
        }
        out.append(SIMD2(x, y))
      }
      return .success(out)
    }
    func polygon(_ value: JSONValue, _ p: Int) -> Result<[[SIMD2<Double>]], PolygonProblem> {
      guard case .array(let list) = value else {
        return .failure(.structure("polygon \(p) must be an array of rings"))
      }
      var rings: [[SIMD2<Double>]] = []
      for (r, element) in list.enumerated() {
        switch ring(element, "polygon \(p), ring \(r)") {
        case .success(let positions): rings.append(positions)
        case .failure(let problem): return .failure(problem)
        }
      }
      return .success(rings)
    }
    guard let coordinates = geometry["coordinates"] else {
      return .failure(.structure("geometry has no \"coordinates\""))
    }
    switch geometry["type"] {
    case .string("Polygon")?:
      return polygon(coordinates, 0).map { [$0] }
    case .string("MultiPolygon")?:
      guard case .array(let list) = coordinates else {
        return .failure(.structure("MultiPolygon coordinates must be an array of polygons"))
      }
      var polygons: [[[SIMD2<Double>]]] = []
      for (p, element) in list.enumerated() {
        switch polygon(element, p) {
        case .success(let rings): polygons.append(rings)
        case .failure(let problem): return .failure(problem)
        }
      }
      return .success(polygons)
    case .string(let other)?:
      return .failure(.structure("geometry type \(other) is not a Polygon or MultiPolygon"))
    default:
      return .failure(.structure("geometry has no \"type\""))
    }
  }
}

@available(*, unavailable, message: "owns a GEOS context, which must not be shared")
extension PolygonValidator: Sendable {}

/// Why a polygon geometry was rejected.
public enum PolygonProblem: Error, Hashable, Sendable, CustomStringConvertible {
  /// The GeoJSON structure is wrong (where, and what was expected).
  case structure(String)
  /// A range, antimeridian or pole problem found before GEOS (see ``PolygonError``).
  case coordinates(PolygonError)
  /// GEOS's reason text, for example `Self-intersection[5 5]` or
  /// `IllegalArgumentException: Points of LinearRing do not form a closed linestring`.
  case geos(String)

  public var description: String {
    switch self {
    case .structure(let why): return why
    case .coordinates(let error): return error.description
    case .geos(let reason): return reason
    }
  }
}
