/// A closed spherical disc: every point whose great-circle distance from `center` is
/// `<= radiusMeters`.
///
/// - `radiusMeters` is finite and > 0. It may exceed half the Earth's circumference
///   (``EarthModel/halfCircumferenceMeters``, about 20,015 km); such a region covers the whole
///   sphere.
/// - **Boundary**: a point at exactly `radiusMeters` is inside. Containment is computed on
///   unit vectors (squared chord `<= 4 sin²(r / 2R)`), which is mathematically identical to
///   `haversineDistance(center, p) <= radiusMeters`; the two may disagree only within rounding
///   (about 1e-9 m) of the boundary.
/// - Correct across the antimeridian and at the poles: nothing depends on longitude wrapping.
public struct CircularRegion: Hashable, Sendable {
  /// Centre of the disc.
  public let center: Coordinate
  /// Radius in metres, finite and > 0.
  public let radiusMeters: Double
  /// Unit vector of `center` (precomputed).
  public let centerVector: UnitVector
  /// Squared-chord threshold: `4 sin²(min(r/R, π) / 2)`, or +infinity when the disc covers the
  /// whole sphere.
  public let chordSquaredThreshold: Double

  /// Creates a region after validating the radius.
  /// - Throws: `RegionError.invalidRadius` when `radiusMeters` is NaN, infinite, zero or
  ///   negative.
  public init(center: Coordinate, radiusMeters: Double) throws(RegionError) {
    guard radiusMeters.isFinite, radiusMeters > 0 else { throw .invalidRadius(radiusMeters) }
    self.center = center
    self.radiusMeters = radiusMeters
    self.centerVector = UnitVector(center)
    self.chordSquaredThreshold = Self.chordSquaredThreshold(radiusMeters: radiusMeters)
  }

  /// The squared-chord threshold of a disc of `radiusMeters` (finite, > 0):
  /// `4 sin²(r / 2R)`, or +infinity when the disc covers the whole sphere. The one formula
  /// every region and index record uses, so that they hold the same bits. O(1), one sine.
  public static func chordSquaredThreshold(radiusMeters: Double) -> Double {
    let theta = EarthModel.radians(fromMeters: radiusMeters)
    return theta >= Double.pi ? Double.infinity : UnitVector.chordSquared(forAngle: theta)
  }

  /// Angular radius in radians (may exceed π for a region covering the sphere).
  public var angularRadius: Double { EarthModel.radians(fromMeters: radiusMeters) }

  /// True when the disc covers the whole sphere (radius >= π R).
  public var coversSphere: Bool { chordSquaredThreshold == Double.infinity }

  /// The region's bounding box (antimeridian- and pole-aware), see ``BoundingBox/cap(center:angularRadius:)``.
  public var boundingBox: BoundingBox {
    BoundingBox.cap(center: center, angularRadius: angularRadius)
  }

  /// Whether the closed disc contains `point`. O(1), no trigonometry.
  @inlinable
  public func contains(_ point: UnitVector) -> Bool {
    centerVector.chordSquared(to: point) <= chordSquaredThreshold
  }

  /// Whether the closed disc contains `coordinate`. O(1), one paired
  /// ``sineCosine(degrees:)-(SIMD2<Double>)`` (see ``UnitVector/init(_:)``).
  @inlinable
  public func contains(_ coordinate: Coordinate) -> Bool {
    contains(UnitVector(coordinate))
  }

  /// Great-circle distance in metres from the centre to `coordinate`.
  @inlinable
  public func distance(to coordinate: Coordinate) -> Double {
    haversineDistance(center, coordinate)
  }
}

/// Why a region definition was rejected.
public enum RegionError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The radius is NaN, infinite, zero or negative.
  case invalidRadius(Double)

  public var description: String {
    switch self {
    case .invalidRadius(let r): return "radius \(r) m is not a finite value > 0"
    }
  }
}

/// The shape of a geofence. An enum rather than a protocol so the hot path stays value-typed and
/// free of existentials.
public enum RegionShape: Hashable, Sendable {
  /// A closed disc.
  case circle(CircularRegion)
  /// One or more closed polygons (a GeoJSON `Polygon` or `MultiPolygon`).
  case polygon(PolygonRegion)

  /// The circle the spatial index holds: the circle itself, or the polygon's
  /// ``PolygonRegion/boundingCap``.
  public var indexCircle: CircularRegion {
    switch self {
    case .circle(let c): return c
    case .polygon(let p): return p.boundingCap
    }
  }

  /// The polygon, or nil for a circle.
  public var polygon: PolygonRegion? {
    if case .polygon(let p) = self { return p }
    return nil
  }
}

/// A named geofence: a stable id, an optional display name, a shape and optional metadata.
public struct Geofence: Hashable, Sendable {
  /// Non-empty identifier, unique within a set. Events are ordered by its UTF-8 bytes.
  public var id: String
  /// Human-readable name, if any.
  public var name: String?
  /// The circle the spatial index holds: the region itself for a circle, the polygon's
  /// bounding cap for a polygon (``RegionShape/indexCircle``). O(1).
  public var region: CircularRegion { shape.indexCircle }
  /// The region's shape. As wide as a circle plus one byte: a polygon is one reference.
  public private(set) var shape: RegionShape
  /// Metadata as a JSON object text (for example a deep-link URL), kept verbatim.
  public var metadataJSON: String?

  /// A circular geofence.
  public init(id: String, name: String? = nil, region: CircularRegion, metadataJSON: String? = nil)
  {
    self.id = id
    self.name = name
    self.shape = .circle(region)
    self.metadataJSON = metadataJSON
  }

  /// A geofence of any shape.
  public init(id: String, name: String? = nil, shape: RegionShape, metadataJSON: String? = nil) {
    self.id = id
    self.name = name
    self.shape = shape
    self.metadataJSON = metadataJSON
  }

  /// The polygon, or nil for a circle.
  public var polygon: PolygonRegion? { shape.polygon }
}
