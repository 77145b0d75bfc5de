extension GeofenceFileReader {
  /// Reads a JSON array of definition objects. Unknown keys are ignored.
  static func readDefinitionList(
    _ elements: [JSONValue], into accumulator: inout GeofenceLoadAccumulator
  ) {
    accumulator.reserveCapacity(elements.count)
    for (index, element) in elements.enumerated() {
      guard case .object(let members) = element else {
        accumulator.reject(
          at: .index(index), id: nil,
          reason: .malformedRecord("definition must be an object, found \(element.typeName)"))
        continue
      }
      let definition = RawGeofenceDefinition(
        id: members["id"], latitude: members["latitude"], longitude: members["longitude"],
        radius: members["radius"], name: members["name"], metadata: members["metadata"])
      accumulator.add(definition, at: .index(index))
    }
  }

  /// Reads a GeoJSON `FeatureCollection` (or a single `Feature`) of `Point` features.
  ///
  /// - The centre is `geometry.coordinates` = `[longitude, latitude]` (RFC 7946 order); a third
  ///   value (altitude) is ignored.
  /// - `radius` (metres) and `name` come from `properties`; the id from the feature's `id`, or
  ///   `properties.id` when the feature has none.
  /// - Every other property goes into the metadata object.
  /// - A feature whose geometry is not a `Point` is rejected with
  ///   ``DefinitionProblem/unsupportedGeometry(_:)``.
  static func readFeatureCollection(
    _ root: [String: JSONValue], file: String, into accumulator: inout GeofenceLoadAccumulator
  ) throws(GeofenceFileError) {
    let features: [JSONValue]
    switch root["type"] {
    case .string("FeatureCollection")?:
      guard case .array(let list)? = root["features"] else {
        throw GeofenceFileError(
          file: file,
          reason: .unexpectedJSONStructure(
            "GeoJSON FeatureCollection has no \"features\" array"))
      }
      features = list
    case .string("Feature")?:
      features = [.object(root)]
    default:
      throw GeofenceFileError(
        file: file,
        reason: .unexpectedJSONStructure(
          "expected a GeoJSON FeatureCollection (an object with \"type\": \"FeatureCollection\")"
            + " or an array of definitions"))
    }
    accumulator.reserveCapacity(features.count)
    for (index, element) in features.enumerated() {
      switch feature(element) {
      case .success(let definition):
        accumulator.add(definition, at: .index(index))
      case .failure(let rejection):
        accumulator.reject(at: .index(index), id: rejection.id, reason: rejection.problem)
      }
    }
  }

  private struct FeatureProblem: Error {
    var id: String?
    var problem: DefinitionProblem
  }

  private static func feature(_ element: JSONValue) -> Result<
    RawGeofenceDefinition, FeatureProblem
  > {
    guard case .object(let members) = element else {
      return .failure(
        FeatureProblem(
          problem: .malformedRecord("feature must be an object, found \(element.typeName)")))
    }
    guard case .string("Feature")? = members["type"] else {
      return .failure(
        FeatureProblem(problem: .malformedRecord("object is not a GeoJSON Feature")))
    }
    var properties: [String: JSONValue] = [:]
    switch members["properties"] {
    case nil, .null?: break
    case .object(let p)?: properties = p
    case let other?:
      return .failure(
        FeatureProblem(
          problem: .wrongType(.properties, expected: "an object", found: other.typeName)))
    }
    var id = members["id"]
    if id == nil || id == .null { id = properties["id"] }
    var metadata = properties
    for key in ["id", "name", "radius"] { metadata[key] = nil }
    var definition = RawGeofenceDefinition(
      id: id, latitude: nil, longitude: nil, radius: properties["radius"],
      name: properties["name"], metadata: .object(metadata))
    let knownID = GeofenceValidator.identifier(of: definition)
    func fail(_ problem: DefinitionProblem) -> Result<RawGeofenceDefinition, FeatureProblem> {
      .failure(FeatureProblem(id: knownID, problem: problem))
    }
    let geometry: [String: JSONValue]
    switch members["geometry"] {
    case nil, .null?: return fail(.missing(.geometry))
    case .object(let g)?: geometry = g
    case let other?:
      return fail(.wrongType(.geometry, expected: "an object", found: other.typeName))
    }
    switch geometry["type"] {
    case .string("Point")?: break
    case .string(let type)?: return fail(.unsupportedGeometry(type))
    default: return fail(.malformedRecord("geometry has no \"type\""))
    }
    guard case .array(let coordinates)? = geometry["coordinates"], coordinates.count >= 2 else {
      return fail(
        .wrongType(
          .coordinates, expected: "an array [longitude, latitude]",
          found: geometry["coordinates"]?.typeName ?? "nothing"))
    }
    definition.longitude = coordinates[0]
    definition.latitude = coordinates[1]
    return .success(definition)
  }
}
