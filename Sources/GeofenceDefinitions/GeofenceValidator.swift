import GeofenceGeometry

/// One geofence definition as found in a file or a server response, before validation.
///
/// Each field is `nil` when absent. Values keep their JSON type so that the validator can
/// reject, for example, a radius written as a string. Readers of text formats (CSV) convert a
/// cell that parses as a number to `.number` and keep any other non-empty cell as `.string`.
public struct RawGeofenceDefinition: Hashable, Sendable {
  public var id: JSONValue?
  public var latitude: JSONValue?
  public var longitude: JSONValue?
  /// Radius in metres.
  public var radius: JSONValue?
  public var name: JSONValue?
  /// Must be a JSON object when present.
  public var metadata: JSONValue?
  /// A GeoJSON `Polygon` or `MultiPolygon` geometry object; when present (not `null`) the
  /// geofence is that polygon, and `latitude`, `longitude` and `radius` are not read.
  public var geometry: JSONValue?
  /// True when the definition comes from a text format (CSV): a numeric field holding a string
  /// is then reported as ``DefinitionProblem/notANumber(_:text:)`` with the text as written,
  /// rather than as a JSON type error.
  public var isFromText: Bool
  /// Canonical text of a metadata object, rendered by a reader that builds it directly (the CSV
  /// reader, whose keys are the same on every row). Takes the place of ``metadata``.
  var renderedMetadataJSON: String?

  public init(
    id: JSONValue?, latitude: JSONValue?, longitude: JSONValue?, radius: JSONValue?,
    name: JSONValue? = nil, metadata: JSONValue? = nil, geometry: JSONValue? = nil,
    isFromText: Bool = false
  ) {
    self.geometry = geometry
    self.id = id
    self.latitude = latitude
    self.longitude = longitude
    self.radius = radius
    self.name = name
    self.metadata = metadata
    self.isFromText = isFromText
  }
}

/// A definition that passed ``GeofenceValidator``, in parts: the circle (a polygon's bounding
/// cap) packed, the polygon when it is one.
struct ValidatedDefinition {
  var id: String
  var name: String?
  var circle: PackedCircle
  var polygon: PolygonRegion?
  var metadataJSON: String?
}

/// Validates single geofence definitions. Stateless; the file readers and the sync client share
/// it so that a definition is accepted or rejected for the same reason wherever it comes from.
public enum GeofenceValidator {
  /// Ids no geofence may have, because the engine names a region of its own with them:
  /// `geofence.refresh`, the region budget planner's refresh circle
  /// (`RegionBudgetPlanner.refreshIdentifier` in `GeofenceTransitions`, which this module
  /// does not import; a test keeps the two equal). A geofence with that id would be listed
  /// twice by the planner and taken for the refresh circle by the OS.
  public static let reservedIDs: Set<String> = ["geofence.refresh"]

  /// Longest geofence id, in characters (Unicode scalars): 256, the sync protocol's limit
  /// (`docs/sync-protocol.md`, `maxLength` in `docs/openapi.yaml`), so that a set read from a
  /// file can be served, synced and uploaded as it is. A longer id is
  /// ``DefinitionProblem/idTooLong(_:)``.
  public static let maximumIDLength = 256

  /// Whether the readers' direct paths must leave an id (UTF-8 `bytes`, trimmed) to the
  /// general path: a reserved id, or one that may be too long (more bytes than
  /// ``maximumIDLength``; its characters are counted there).
  public static func needsGeneralCheck(id bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    bytes.count > maximumIDLength || isReserved(utf8: bytes) || bytes.contains(where: isControlByte)
  }

  /// A C0 control character (U+0000–U+001F) or DEL (U+007F) as a UTF-8 byte: a geofence id
  /// holding one is refused, as a device id is (`TrackFormats.DeviceIDText`): an id is a key
  /// of the stores, a field of every event and of CSV output, and a line of standard error,
  /// which a NUL, a line end or a terminal escape would cut, split or take over.
  @inline(__always)
  static func isControlByte(_ b: UInt8) -> Bool { b < 0x20 || b == 0x7F }

  /// Whether `bytes` (UTF-8) spell one of ``reservedIDs``: for a reader that holds an id's
  /// bytes and no `String`. The reserved ids are ASCII, so byte equality is the same as
  /// `String` equality here. O(n) in the id's length; no allocation.
  public static func isReserved(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    reservedIDs.contains { $0.utf8.count == bytes.count && $0.utf8.elementsEqual(bytes) }
  }

  /// The largest radius accepted, in metres: half the great-circle circumference of the
  /// WGS84 equator (π × 6,378,137 m = 20,037,508.34 m), rounded up; the bound the sync
  /// protocol gives (`docs/sync-protocol.md`) and the reference server applies. A disc that
  /// large already covers the whole Earth, so a larger radius can only be a unit mistake.
  public static let maximumRadiusMeters = 20_037_509.0

  /// Validates one definition and builds its geofence.
  ///
  /// Rules, checked in this order (the first failure is returned):
  /// - **id**: a string, or an integral JSON number (written in decimal, `42`). Surrounding
  ///   whitespace is removed; an empty result is ``DefinitionProblem/emptyID``, one of
  ///   ``reservedIDs`` is ``DefinitionProblem/reservedID(_:)``, one of more than
  ///   ``maximumIDLength`` characters ``DefinitionProblem/idTooLong(_:)``, one holding a control
  ///   character ``DefinitionProblem/controlCharacterInID``. Absent or `null` is
  ///   `.missing(.id)`.
  /// - **latitude**, **longitude**: numbers in degrees; finite, latitude in [-90, 90],
  ///   longitude in [-180, 180] (both -180 and 180 accepted). Absent or `null` is `.missing`.
  /// - **radius**: a number in metres, finite, > 0 and at most ``maximumRadiusMeters``. When
  ///   absent or `null`, `defaultRadiusMeters` is used if given (and validated the same way),
  ///   else `.missing`.
  /// - **name**: a string or absent/`null`. An empty or whitespace-only name becomes `nil`.
  /// - **metadata**: a JSON object or absent/`null`; stored as ``JSONValue/canonicalText``. An
  ///   empty object is stored as `nil`.
  ///
  /// - **geometry** (instead of latitude, longitude and radius): a GeoJSON `Polygon` or
  ///   `MultiPolygon` object, validated by ``PolygonValidator`` (GEOS);
  ///   ``DefinitionProblem/invalidPolygon(_:)`` with the reason otherwise. A definition that
  ///   gives a geometry and also a latitude, longitude or radius (not `null`) is
  ///   ``DefinitionProblem/circleBesideGeometry(_:)``: which shape is meant cannot be told.
  ///
  /// Uniqueness of ids is not checked here: it depends on the set the definition belongs to.
  /// - Parameters:
  ///   - definition: the raw definition.
  ///   - defaultRadiusMeters: radius in metres for definitions without one; `nil` for none.
  ///   - polygons: the validator for polygon geometries (one per load or sync: it owns a GEOS
  ///     context); `nil` makes one for this call.
  /// - Returns: the geofence, or the first problem found.
  /// - Complexity: O(1) plus the size of the metadata; O(n log n) for a polygon of n
  ///   positions.
  public static func validate(
    _ definition: RawGeofenceDefinition, defaultRadiusMeters: Double? = nil,
    polygons: PolygonValidator? = nil
  ) -> Result<Geofence, DefinitionProblem> {
    Result { () throws(DefinitionProblem) -> Geofence in
      try validated(definition, defaultRadiusMeters: defaultRadiusMeters, polygons: polygons)
    }
  }

  /// ``validate(_:defaultRadiusMeters:polygons:)`` as a throwing call, for the readers: the
  /// geofence is returned, not copied out of a `Result`.
  /// - Throws: the first ``DefinitionProblem`` found.
  static func validated(
    _ definition: RawGeofenceDefinition, defaultRadiusMeters: Double?,
    polygons: PolygonValidator?
  ) throws(DefinitionProblem) -> Geofence {
    let valid = try validatedParts(
      definition, defaultRadiusMeters: defaultRadiusMeters, polygons: polygons)
    let shape: RegionShape = valid.polygon.map { .polygon($0) } ?? .circle(valid.circle.region)
    return Geofence(
      id: valid.id, name: valid.name, shape: shape, metadataJSON: valid.metadataJSON)
  }

  /// The checks of ``validate(_:defaultRadiusMeters:polygons:)``, giving the parts of the
  /// geofence in the load result's compact form: a circle's centre and radius are checked but
  /// no region is built (no trigonometry).
  /// - Throws: the first ``DefinitionProblem`` found.
  static func validatedParts(
    _ definition: RawGeofenceDefinition, defaultRadiusMeters: Double?,
    polygons: PolygonValidator?
  ) throws(DefinitionProblem) -> ValidatedDefinition {
    let id = try identifier(definition.id).get()
    switch definition.geometry {
    case nil, .null?: break
    case .object(let members)?:
      let circleFields = [
        (DefinitionField.latitude, definition.latitude),
        (.longitude, definition.longitude), (.radius, definition.radius),
      ].filter { !isAbsent($0.1) }.map(\.0)
      if !circleFields.isEmpty { throw .circleBesideGeometry(circleFields) }
      let polygon: PolygonRegion
      switch (polygons ?? PolygonValidator()).validate(members) {
      case .success(let p): polygon = p
      case .failure(let problem): throw .invalidPolygon(problem)
      }
      return try finish(
        definition, id: id, circle: PackedCircle(polygon.boundingCap), polygon: polygon)
    case let other?:
      throw .wrongType(.geometry, expected: "an object", found: other.typeName)
    }
    let latitude = try number(
      definition.latitude, field: .latitude, fromText: definition.isFromText
    ).get()
    let longitude = try number(
      definition.longitude, field: .longitude, fromText: definition.isFromText
    ).get()
    let radius: Double
    if isAbsent(definition.radius), let defaultRadiusMeters {
      radius = defaultRadiusMeters
    } else {
      radius = try number(definition.radius, field: .radius, fromText: definition.isFromText)
        .get()
    }
    guard radius <= maximumRadiusMeters else { throw .invalidRadius(radius) }
    let center: Coordinate
    do {
      center = try Coordinate(latitude: latitude, longitude: longitude)
    } catch {
      switch error {
      case .invalidLatitude(let v): throw .latitudeOutOfRange(v)
      case .invalidLongitude(let v): throw .longitudeOutOfRange(v)
      }
    }
    let circle: PackedCircle
    do {
      circle = try PackedCircle(center: center, radiusMeters: radius)
    } catch {
      switch error {
      case .invalidRadius(let r): throw .invalidRadius(r)
      }
    }
    return try finish(definition, id: id, circle: circle, polygon: nil)
  }

  /// The name and metadata checks, and the parts.
  private static func finish(
    _ definition: RawGeofenceDefinition, id: String, circle: PackedCircle,
    polygon: PolygonRegion?
  ) throws(DefinitionProblem) -> ValidatedDefinition {
    var name: String?
    switch definition.name {
    case nil, .null?: name = nil
    case .string(let s)?:
      name = s.isBlankText ? nil : s
    case let other?:
      throw .wrongType(.name, expected: "a string", found: other.typeName)
    }
    let metadataJSON: String?
    if let rendered = definition.renderedMetadataJSON {
      metadataJSON = rendered
    } else {
      switch definition.metadata {
      case nil, .null?: metadataJSON = nil
      case .object(let members)?:
        metadataJSON = members.isEmpty ? nil : JSONValue.object(members).canonicalText
      case let other?:
        throw .wrongType(.metadata, expected: "an object", found: other.typeName)
      }
    }
    return ValidatedDefinition(
      id: id, name: name, circle: circle, polygon: polygon, metadataJSON: metadataJSON)
  }

  /// The id of a definition as ``validate(_:defaultRadiusMeters:)`` would read it, or `nil`
  /// when it is absent, empty or of the wrong type. Used to name the id in rejections.
  public static func identifier(of definition: RawGeofenceDefinition) -> String? {
    try? identifier(definition.id).get()
  }

  private static func isAbsent(_ value: JSONValue?) -> Bool {
    switch value {
    case nil, .null?: return true
    default: return false
    }
  }

  private static func identifier(_ value: JSONValue?) -> Result<String, DefinitionProblem> {
    switch value {
    case nil, .null?:
      return .failure(.missing(.id))
    case .string(let s)?:
      let trimmed = s.trimmingWhitespace()
      if trimmed.isEmpty { return .failure(.emptyID) }
      if reservedIDs.contains(trimmed) { return .failure(.reservedID(trimmed)) }
      let length = trimmed.unicodeScalars.count
      if length > maximumIDLength { return .failure(.idTooLong(length)) }
      if trimmed.utf8.contains(where: isControlByte) { return .failure(.controlCharacterInID) }
      return .success(trimmed)
    case .number(let x)?:
      guard x.isFinite, x == x.rounded(), abs(x) < 9_007_199_254_740_992 else {
        return .failure(.wrongType(.id, expected: "a string or an integer", found: "number"))
      }
      return .success(String(Int64(x)))
    case let other?:
      return .failure(
        .wrongType(.id, expected: "a string or an integer", found: other.typeName))
    }
  }

  private static func number(_ value: JSONValue?, field: DefinitionField, fromText: Bool)
    -> Result<Double, DefinitionProblem>
  {
    switch value {
    case nil, .null?: return .failure(.missing(field))
    case .number(let x)?: return .success(x)
    case .string(let text)? where fromText: return .failure(.notANumber(field, text: text))
    case let other?:
      return .failure(.wrongType(field, expected: "a number", found: other.typeName))
    }
  }
}

/// True for a printable ASCII byte other than space (0x21 ... 0x7E): a text that starts (or
/// ends) with one has no whitespace to trim there, and no `Character` needs to be formed.
@inline(__always)
func isPrintableASCII(_ byte: UInt8) -> Bool { byte &- 0x21 < 0x5E }

extension String {
  /// True when every character is whitespace (Unicode `isWhitespace`), the empty string
  /// included; a string that starts with a printable ASCII character is answered at once.
  var isBlankText: Bool {
    if let f = utf8.first, isPrintableASCII(f) { return false }
    return allSatisfy(\.isWhitespace)
  }

  /// The string without leading and trailing whitespace (Unicode `isWhitespace`, which
  /// includes line breaks).
  func trimmingWhitespace() -> String {
    // Fast path: text that starts and ends with a printable ASCII character has nothing to
    // trim (no Character is formed).
    if let f = utf8.first, let l = utf8.last, isPrintableASCII(f), isPrintableASCII(l) {
      return self
    }
    guard let first = firstIndex(where: { !$0.isWhitespace }),
      let last = lastIndex(where: { !$0.isWhitespace })
    else { return "" }
    return String(self[first...last])
  }
}
