/// A field of a geofence definition.
public enum DefinitionField: String, Hashable, Sendable, CustomStringConvertible {
  case id, name, latitude, longitude, radius, metadata, geometry, coordinates, properties

  public var description: String { rawValue }
}

/// Why one geofence definition was rejected. The first problem found is reported, checking in
/// the order: record shape, id, latitude, longitude, radius, name, metadata.
public enum DefinitionProblem: Error, Hashable, Sendable, CustomStringConvertible {
  /// A required field is absent (a missing key, a JSON `null`, or an empty CSV cell).
  case missing(DefinitionField)
  /// The id is empty or only whitespace.
  case emptyID
  /// The id is one the engine gives a region of its own (``GeofenceValidator/reservedIDs``).
  case reservedID(String)
  /// The id is longer than ``GeofenceValidator/maximumIDLength`` characters; its length.
  case idTooLong(Int)
  /// The id holds a control character (U+0000–U+001F or U+007F).
  case controlCharacterInID
  /// A field holds a value of the wrong JSON type, for example a radius given as a string.
  /// `found` is the JSON type name (see ``JSONValue/typeName``).
  case wrongType(DefinitionField, expected: String, found: String)
  /// A CSV cell that must be a number is not one; `text` is the cell as written.
  case notANumber(DefinitionField, text: String)
  /// Latitude not finite or outside [-90, 90] degrees.
  case latitudeOutOfRange(Double)
  /// Longitude not finite or outside [-180, 180] degrees.
  case longitudeOutOfRange(Double)
  /// Radius NaN, infinite, zero, negative or above ``GeofenceValidator/maximumRadiusMeters``
  /// (metres).
  case invalidRadius(Double)
  /// The id was already defined at `firstDefinedAt`; the first definition wins.
  case duplicateID(firstDefinedAt: DefinitionLocation)
  /// A GeoJSON feature whose geometry is not a `Point` (its `type` is given).
  case unsupportedGeometry(String)
  /// A record that cannot hold a definition: a JSON array element that is not an object, a
  /// CSV row with more fields than the header, or an unterminated quoted CSV field.
  case malformedRecord(String)
  /// The definition's JSON text cannot be read (a number beyond ±1.8e308 such as `1e400`,
  /// `NaN`, a duplicate key, nesting deeper than ``JSONDocument/maximumDepth``, a broken
  /// string, ...). `field` is the definition field that holds the bad value, when it is one
  /// (`nil` for a member the reader does not use, or the record itself); the error gives the
  /// path, line and column.
  case invalidJSON(DefinitionField?, JSONReadError)
  /// A polygon geometry was rejected: a structure, range, antimeridian or pole problem, or
  /// GEOS's validity reason with the place of the fault.
  case invalidPolygon(PolygonProblem)
  /// A definition with a `geometry` that also gives these circle fields.
  case circleBesideGeometry([DefinitionField])

  public var description: String {
    switch self {
    case .missing(let field): return "\(field) is missing"
    case .emptyID: return "id is empty"
    case .controlCharacterInID:
      return "id holds a control character (U+0000-U+001F or U+007F)"
    case .idTooLong(let length):
      return
        "id is \(length) characters long; at most \(GeofenceValidator.maximumIDLength) are "
        + "allowed"
    case .reservedID(let id):
      return "id \"\(id)\" is reserved (the region budget planner's refresh circle)"
    case .wrongType(let field, let expected, let found):
      return "\(field) must be \(expected), found \(found)"
    case .notANumber(let field, let text): return "\(field) \"\(text)\" is not a number"
    case .latitudeOutOfRange(let v): return "latitude \(v) is not a finite value in [-90, 90]"
    case .longitudeOutOfRange(let v):
      return "longitude \(v) is not a finite value in [-180, 180]"
    case .invalidRadius(let r):
      return "radius \(r) m is not a finite value in (0, 20037509] (half the WGS84 equator)"
    case .duplicateID(let first): return "duplicate id, first defined at \(first)"
    case .unsupportedGeometry(let type):
      return "geometry type \(type) is not supported (only Point, Polygon and MultiPolygon)"
    case .malformedRecord(let why): return why
    case .invalidPolygon(let problem): return "invalid polygon: \(problem)"
    case .circleBesideGeometry(let fields):
      let names = fields.map { "\($0)" }.joined(separator: ", ")
      return
        "a geofence with a geometry must not also give \(names); which shape is meant cannot "
        + "be told"
    case .invalidJSON(let field, let error):
      let place = "line \(error.line), column \(error.column)"
      guard let field else {
        return error.path.isEmpty
          ? "invalid JSON: \(error.message) (\(place))"
          : "invalid JSON at \(error.pathText): \(error.message) (\(place))"
      }
      let path = error.pathText
      // An empty path: the field's own text was read as JSON (a CSV cell), so the place is
      // in that text.
      if path.isEmpty { return "\(field): \(error.message) (\(place) of its JSON text)" }
      return path == field.rawValue
        ? "\(field): \(error.message) (\(place))"
        : "\(field): \(error.message) (at \(path), \(place))"
    }
  }
}

/// Where a definition sits in its file: a 1-based CSV line or a 0-based JSON array index.
public struct DefinitionLocation: Hashable, Sendable, CustomStringConvertible {
  /// Position inside the file.
  public enum Position: Hashable, Sendable {
    /// 1-based line where the CSV record starts.
    case line(Int)
    /// 0-based index in the JSON array (or the GeoJSON `features` array).
    case index(Int)
  }

  /// The file's path as it was given to the reader (or a caller-chosen name for in-memory data).
  public var file: String
  public var position: Position
  /// For a JSON element, the 1-based line where it starts, when known. Derived from the file
  /// and the position, so it takes no part in equality or hashing.
  public var line: Int?

  public init(file: String, position: Position, line: Int? = nil) {
    self.file = file
    self.position = position
    self.line = line
  }

  /// `path:line` for CSV, `path[index]` for JSON (`path[index] (line n)` when the line is
  /// known).
  public var description: String {
    switch position {
    case .line(let line): return "\(file):\(line)"
    case .index(let index):
      if let line { return "\(file)[\(index)] (line \(line))" }
      return "\(file)[\(index)]"
    }
  }

  public static func == (a: DefinitionLocation, b: DefinitionLocation) -> Bool {
    a.file == b.file && a.position == b.position
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(file)
    hasher.combine(position)
  }
}

/// One definition that was not loaded, with where it is, its id when known, and why.
public struct GeofenceRejection: Hashable, Sendable, CustomStringConvertible {
  public var location: DefinitionLocation
  /// The definition's id when it could be read (a non-empty string or an integral number).
  public var id: String?
  public var reason: DefinitionProblem

  public init(location: DefinitionLocation, id: String?, reason: DefinitionProblem) {
    self.location = location
    self.id = id
    self.reason = reason
  }

  /// For example `places.csv:12 (id "rg000011"): radius -5.0 m is not a finite value in (0, 20037509] (half the WGS84 equator)`.
  public var description: String {
    if let id {
      return "\(location) (id \"\(id)\"): \(reason)"
    }
    return "\(location): \(reason)"
  }
}
