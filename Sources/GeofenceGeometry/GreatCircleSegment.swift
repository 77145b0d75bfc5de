#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The shorter great-circle arc between two points of the unit sphere, for the questions a
/// path between two fixes asks: how near does it pass a point, and where does it enter and
/// leave a disc.
///
/// Everything is computed on unit vectors (``UnitVector``), so the antimeridian and the poles
/// need no special case: a segment from 179.9° E to 179.9° W is the 0.2° arc across the
/// antimeridian, not the long way round. Angles are radians on the unit sphere; multiply by
/// ``EarthModel/meanRadiusMeters`` (``EarthModel/meters(fromRadians:)``) for metres.
///
/// Points along the arc are given by their angle from ``start`` in `[0, angle]`, which is
/// proportional to the distance travelled along it.
public struct GreatCircleSegment: Hashable, Sendable {
  /// The first end.
  public let start: UnitVector
  /// The second end.
  public let end: UnitVector
  /// The unit normal `start × end / |start × end|` of the arc's plane.
  public let normal: UnitVector
  /// The unit tangent at ``start`` pointing toward ``end`` (`normal × start`).
  public let tangent: UnitVector
  /// Central angle from ``start`` to ``end`` in radians, in `(0, π)`.
  public let angle: Double

  /// The smallest `|start × end|` (the sine of the central angle) for which the arc's plane
  /// is taken as known: 1e-15, about 6 nm on the Earth, some ten times the rounding of the
  /// cross product of two unit vectors. Closer (or nearly antipodal) ends have no usable
  /// great circle.
  public static let minimumSine = 1e-15

  /// The arc from `start` to `end`, or `nil` when the two are the same point or antipodal
  /// (`|start × end| < ``minimumSine```): no single great circle joins them.
  /// - Complexity: O(1), one square root and one `atan2`.
  public init?(from start: UnitVector, to end: UnitVector) {
    let cross = start.cross(end)
    let sine = cross.length
    guard sine >= Self.minimumSine else { return nil }
    self.start = start
    self.end = end
    self.normal = cross.scaled(by: 1 / sine)
    self.tangent = normal.cross(start)
    self.angle = atan2(sine, start.dot(end))
  }

  /// The point at `angle` radians from ``start`` along the great circle (`0` gives
  /// ``start``, ``angle`` gives ``end`` up to rounding; values outside `[0, angle]` continue
  /// along the same great circle).
  /// - Complexity: O(1), one sine and one cosine.
  public func point(atAngle theta: Double) -> UnitVector {
    let c = cos(theta)
    let s = sin(theta)
    return UnitVector(
      x: start.x * c + tangent.x * s, y: start.y * c + tangent.y * s,
      z: start.z * c + tangent.z * s)
  }

  /// Where the arc comes closest to `point`: the angle along the arc (in `[0, angle]`) and
  /// the angular distance to `point` (radians, in `[0, π]`).
  ///
  /// The nearest point of the whole great circle to `point` is the normalised projection of
  /// `point` on the arc's plane, at angular distance `atan2(|point · normal|, |projection|)`.
  /// When it lies on the arc it is the answer; otherwise the distance grows monotonically
  /// away from it along the circle, and the nearer end is. A `point` on the arc's pole (all
  /// of the great circle at π/2) gives ``start``.
  /// - Complexity: O(1), a few `atan2`.
  public func closestApproach(to point: UnitVector) -> (angle: Double, distance: Double) {
    if let foot = perpendicularFoot(of: point) { return foot }
    let toStart = Self.angleBetween(point, start)
    let toEnd = Self.angleBetween(point, end)
    return toEnd < toStart ? (angle, toEnd) : (0, toStart)
  }

  /// The part of the arc inside the open disc of angular radius `radius` around `center`,
  /// for an arc whose two ends are outside the disc.
  ///
  /// With both ends outside, the arc passes through the disc exactly when its nearest point
  /// to `center` lies strictly between the ends (the perpendicular foot) at an angular
  /// distance `δ < radius`. The arc then runs inside for `h` on either side of the foot, by the
  /// right spherical triangle `cos radius = cos δ · cos h`, computed as
  /// `sin²(h/2) = (sin²(radius/2) − sin²(δ/2)) / cos δ` (no cancellation for small discs).
  ///
  /// - Parameters:
  ///   - center: the disc's centre.
  ///   - radius: the disc's angular radius in radians, in `(0, π)`.
  /// - Returns: the angles along the arc (radians from ``start``, clamped to `[0, angle]`)
  ///   where it enters and leaves the disc, the angle of its nearest point and its angular
  ///   distance `δ` from `center`; `nil` when the arc does not pass through the disc (a
  ///   tangent arc, `δ == radius`, does not). Meaningless when an end is inside the disc.
  /// - Complexity: O(1).
  public func crossing(ofDiscAt center: UnitVector, radius: Double)
    -> (entry: Double, exit: Double, closest: Double, distance: Double)?
  {
    guard let foot = perpendicularFoot(of: center), foot.distance < radius else { return nil }
    let sr = sin(radius / 2)
    let sd = sin(foot.distance / 2)
    let s2 = min(1, max(0, (sr * sr - sd * sd) / cos(foot.distance)))
    let half = 2 * asin(s2.squareRoot())
    return (max(0, foot.angle - half), min(angle, foot.angle + half), foot.angle, foot.distance)
  }

  /// The nearest point of the great circle to `point` when it lies on the arc (angle along the
  /// arc, angular distance), else `nil`.
  private func perpendicularFoot(of point: UnitVector) -> (angle: Double, distance: Double)? {
    let off = point.dot(normal)
    let projection = UnitVector(
      x: point.x - off * normal.x, y: point.y - off * normal.y, z: point.z - off * normal.z)
    let length = projection.length
    guard length > 0 else { return nil }
    // The projection's angle from `start` in its plane: atan2 of its components along the
    // tangent and along `start` (the projection need not be normalised for atan2).
    let theta = atan2(projection.dot(tangent), projection.dot(start))
    guard theta >= 0, theta <= angle else { return nil }
    return (theta, atan2(abs(off), length))
  }

  /// The angle between two unit vectors in radians, `atan2(|a × b|, a · b)`, accurate at
  /// every angle.
  public static func angleBetween(_ a: UnitVector, _ b: UnitVector) -> Double {
    atan2(a.cross(b).length, a.dot(b))
  }
}

extension UnitVector {
  /// The dot product.
  @inlinable
  public func dot(_ o: UnitVector) -> Double { x * o.x + y * o.y + z * o.z }

  /// The cross product `self × o` (not of unit length in general).
  @inlinable
  public func cross(_ o: UnitVector) -> UnitVector {
    UnitVector(x: y * o.z - z * o.y, y: z * o.x - x * o.z, z: x * o.y - y * o.x)
  }

  /// The Euclidean length.
  @inlinable
  public var length: Double { (x * x + y * y + z * z).squareRoot() }

  /// Each component times `factor`.
  @inlinable
  public func scaled(by factor: Double) -> UnitVector {
    UnitVector(x: x * factor, y: y * factor, z: z * factor)
  }

  /// The coordinate of this direction (any length > 0): latitude `atan2(z, √(x² + y²))`,
  /// longitude `atan2(y, x)`, in degrees (longitude in [−180, 180]; 0 at the poles).
  /// - Complexity: O(1), two `atan2`.
  public var coordinate: Coordinate {
    let latitude = degrees(fromRadians: atan2(z, (x * x + y * y).squareRoot()))
    let longitude = degrees(fromRadians: atan2(y, x))
    return Coordinate(
      uncheckedLatitude: min(90, max(-90, latitude)),
      longitude: min(180, max(-180, longitude)))
  }
}
