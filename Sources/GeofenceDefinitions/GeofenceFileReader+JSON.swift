import GeofenceGeometry

/// A definition that could not be decoded from JSON: its id when it could still be read, and
/// why.
public struct DefinitionFailure: Error, Hashable, Sendable {
  public var id: String?
  public var problem: DefinitionProblem

  public init(id: String?, problem: DefinitionProblem) {
    self.id = id
    self.problem = problem
  }
}

extension RawGeofenceDefinition {
  /// Decodes one definition object `{"id", "latitude", "longitude", "radius", "name"?,
  /// "metadata"?}` (unknown keys ignored) from its span in a document, on its own: a bad value
  /// in it (see ``JSONDocument/value(of:)``) rejects this definition only, as
  /// ``DefinitionProblem/invalidJSON(_:_:)`` naming the field that holds it. The id is then
  /// still read from the object's `id` member when that member is readable, so that the
  /// caller can name it (and a sync can keep the stored geofence of that id).
  /// - Complexity: O(n) in the element's size.
  public static func decode(_ span: JSONSpan, in document: JSONDocument) -> Result<
    RawGeofenceDefinition, DefinitionFailure
  > {
    let value: JSONValue
    do {
      value = try document.value(of: span)
    } catch {
      return .failure(
        DefinitionFailure(
          id: salvagedID(span, in: document, from: []),
          problem: .invalidJSON(definitionField(error.path), error)))
    }
    guard case .object(let members) = value else {
      return .failure(
        DefinitionFailure(
          id: nil,
          problem: .malformedRecord("definition must be an object, found \(value.typeName)")))
    }
    return .success(
      RawGeofenceDefinition(
        id: members["id"], latitude: members["latitude"], longitude: members["longitude"],
        radius: members["radius"], name: members["name"], metadata: members["metadata"],
        geometry: members["geometry"]))
  }

  /// The field of a definition object that a path into it starts with.
  static func definitionField(_ path: [JSONPathComponent]) -> DefinitionField? {
    guard case .key(let key)? = path.first, let field = DefinitionField(rawValue: key) else {
      return nil
    }
    switch field {
    case .id, .latitude, .longitude, .radius, .name, .metadata, .geometry: return field
    default: return nil
    }
  }

  /// The id of an object whose full text is unreadable, from its readable `id` member (or,
  /// with `from` = `["properties"]`, from that member's `id`).
  static func salvagedID(_ span: JSONSpan, in document: JSONDocument, from keys: [String])
    -> String?
  {
    guard document.kind(of: span) == .object else { return nil }
    let members = document.readableMembers(of: span)
    let ids = members.filter { $0.key == "id" }
    if ids.count == 1, let id = try? document.value(of: ids[0].value) {
      let definition = RawGeofenceDefinition(
        id: id, latitude: nil, longitude: nil, radius: nil)
      if let text = GeofenceValidator.identifier(of: definition) { return text }
    }
    guard let first = keys.first else { return nil }
    let nested = members.filter { $0.key == first }
    guard nested.count == 1 else { return nil }
    return salvagedID(nested[0].value, in: document, from: Array(keys.dropFirst()))
  }
}

extension GeofenceFileReader {
  /// Reads the elements of a definition list or feature collection, each on its own: a
  /// definition object as ``RawGeofenceDefinition/decode(_:in:)`` reads it, a feature as
  /// ``readFeatureCollection(_:in:file:into:direct:)`` describes; the common shapes directly
  /// (a plain circle without a `String` or ``JSONValue`` per member, see
  /// ``JSONDocument/plainReading(_:of:in:)``; the others of ``JSONDocument/directDefinition(_:)``
  /// and ``JSONDocument/directFeature(_:)`` without a dictionary).
  /// `direct` false reads every element the general way (tests compare the two).
  static func readElements(
    _ elements: [JSONSpan], of list: JSONDocument.ElementList, in document: JSONDocument,
    into accumulator: inout GeofenceLoadAccumulator, direct: Bool = true
  ) {
    accumulator.reserveCapacity(elements.count)
    document.bytes.withUnsafeBufferPointer { bytes in
      for (index, element) in elements.enumerated() {
        readElement(
          element, of: list, index: index, in: document, bytes: bytes, into: &accumulator,
          direct: direct)
      }
    }
  }

  /// Reads element `index` of `list`, at `element`, as ``readElements(_:of:in:into:direct:)``
  /// reads each. `bytes` are the document's.
  private static func readElement(
    _ element: JSONSpan, of list: JSONDocument.ElementList, index: Int,
    in document: JSONDocument, bytes: UnsafeBufferPointer<UInt8>,
    into accumulator: inout GeofenceLoadAccumulator, direct: Bool = true
  ) {
    if direct {
      if let plain = document.plainReading(element, of: list, in: bytes),
        addPlain(plain, bytes: bytes, index: index, line: element.line, into: &accumulator)
      {
        return
      }
      let definition =
        list == .features
        ? document.directFeature(element) : document.directDefinition(element)
      if let definition {
        accumulator.add(definition, at: .index(index), line: element.line)
        return
      }
    }
    switch list {
    case .definitions:
      readGeneralDefinition(element, index: index, in: document, into: &accumulator)
    case .features:
      readGeneralFeature(element, index: index, in: document, into: &accumulator)
    }
  }

  /// Records a circle read by ``JSONDocument/plainReading(_:of:in:)`` when it passes
  /// ``GeofenceValidator``'s checks (an id that is not reserved, coordinates in range, a
  /// radius given or defaulted and in range):
  /// the same row, or the same duplicate-id rejection, as the general reading records, the
  /// name written straight into the columns' arena.
  /// - Returns: false, having recorded nothing, when a check fails (the other readings then
  ///   take the element and word its rejection).
  /// - Complexity: O(n) in the id's and name's bytes; allocates only an id beyond 15 bytes.
  static func addPlain(
    _ plain: PlainCircleReading, bytes: UnsafeBufferPointer<UInt8>, index: Int, line: Int,
    into accumulator: inout GeofenceLoadAccumulator
  ) -> Bool {
    let id = UnsafeBufferPointer(rebasing: bytes[plain.id])
    // The id's bucket is read first, so that its likely cache miss overlaps the checks and
    // the circle's trigonometry.
    let probe = accumulator.idProbe(utf8: id)
    guard !GeofenceValidator.needsGeneralCheck(id: id),
      let radius = plain.radius ?? accumulator.defaultRadiusMeters,
      radius <= GeofenceValidator.maximumRadiusMeters,
      let center = try? Coordinate(latitude: plain.latitude, longitude: plain.longitude),
      let circle = try? PackedCircle(center: center, radiusMeters: radius)
    else { return false }
    let details = accumulator.writeDetails { text in
      guard let name = plain.name else { return (-1, 0) }
      text.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[name]))
      return (name.count, 0)
    }
    accumulator.add(
      id: String(decoding: id, as: UTF8.self), probe: probe, circle: circle,
      writtenDetails: details, at: .index(index), line: line)
    return true
  }

  /// Reads one definition element the general way (``RawGeofenceDefinition/decode(_:in:)``).
  private static func readGeneralDefinition(
    _ element: JSONSpan, index: Int, in document: JSONDocument,
    into accumulator: inout GeofenceLoadAccumulator
  ) {
    switch RawGeofenceDefinition.decode(element, in: document) {
    case .success(let definition):
      accumulator.add(definition, at: .index(index), line: element.line)
    case .failure(let failure):
      accumulator.reject(
        at: .index(index), line: element.line, id: failure.id, reason: failure.problem)
    }
  }

  /// Reads a GeoJSON `FeatureCollection` (or a single `Feature`) of `Point`, `Polygon` and
  /// `MultiPolygon` features (a polygon is validated by ``PolygonValidator``).
  ///
  /// - The centre is `geometry.coordinates` = `[longitude, latitude]` (RFC 7946 order); a third
  ///   value (altitude) is ignored.
  /// - `radius` (metres) and `name` come from `properties`; the id from the feature's `id`, or
  ///   `properties.id` when the feature has none. A polygon has no radius: its `radius`
  ///   property, if any, is an ordinary property and stays in the metadata.
  /// - Every other property goes into the metadata object; but a `metadata` property holding
  ///   a JSON object is the metadata object itself, the other properties left out (as the
  ///   reference server reads it, and as `geofence regions --format geojson` writes it).
  /// - A feature whose geometry is of another type is rejected with
  ///   ``DefinitionProblem/unsupportedGeometry(_:)``.
  /// - Each feature is read on its own: a bad value in one (`1e400`, `NaN`, nesting deeper
  ///   than ``JSONDocument/maximumDepth``) rejects that feature only, as
  ///   ``DefinitionProblem/invalidJSON(_:_:)`` naming the field. The collection's own members
  ///   other than `type` and `features` are not read.
  static func readFeatureCollection(
    _ root: JSONSpan, in document: JSONDocument, file: String,
    into accumulator: inout GeofenceLoadAccumulator, direct: Bool = true
  ) throws(GeofenceFileError) {
    func structure(_ why: String) -> GeofenceFileError {
      GeofenceFileError(file: file, reason: .unexpectedJSONStructure(why))
    }
    let members: [(key: String, value: JSONSpan)]
    do { members = try document.members(of: root) } catch {
      throw GeofenceFileError(file: file, reason: .malformedJSON(error.description))
    }
    func single(_ key: String) throws(GeofenceFileError) -> JSONSpan? {
      let found = members.filter { $0.key == key }
      if found.count > 1 {
        throw structure("the GeoJSON object has \(found.count) \"\(key)\" members")
      }
      return found.first?.value
    }
    var type: JSONValue?
    if let span = try single("type") { type = try? document.value(of: span) }
    let features: [JSONSpan]
    switch type {
    case .string("FeatureCollection")?:
      guard let list = try single("features"), document.kind(of: list) == .array else {
        throw structure("GeoJSON FeatureCollection has no \"features\" array")
      }
      do { features = try document.elements(of: list) } catch {
        throw GeofenceFileError(file: file, reason: .malformedJSON(error.description))
      }
    case .string("Feature")?:
      features = [root]
    default:
      throw structure(
        "expected a GeoJSON FeatureCollection (an object with \"type\": \"FeatureCollection\")"
          + " or an array of definitions")
    }
    readElements(features, of: .features, in: document, into: &accumulator, direct: direct)
  }

  /// Whether ``GeofenceFileReader/read(data:format:fileName:defaultRadiusMeters:)`` reads a
  /// JSON definition list or GeoJSON `FeatureCollection` in one pass
  /// (``readInOnePass(_:file:defaultRadiusMeters:)``); tests compare it with the two passes.
  @TaskLocal static var readsJSONInOnePass = true

  /// A JSON definition list or GeoJSON `FeatureCollection` read in one pass over its bytes
  /// (``JSONDocument/readElementsInOnePass(_:list:plain:other:)``): a plain element
  /// (``JSONDocument/plainDefinition(at:in:)``, ``JSONDocument/plainFeature(at:in:)``) read
  /// where the pass meets it, any other as ``readElements(_:of:in:into:direct:)`` reads it,
  /// so that the rows, rejections and lines are theirs. Nil when the text is not of that
  /// shape or not well formed: the caller then
  /// reads it the usual way, which words what is wrong with it.
  /// - Complexity: O(n) in the bytes. The columns are reserved after 64, 512, 4096, ...
  ///   elements, for as many rows as the rest of the text holds at the bytes a row so far, but
  ///   never for more than 8 times the rows so far.
  static func readInOnePass(_ bytes: [UInt8], file: String, defaultRadiusMeters: Double?)
    -> GeofenceLoadAccumulator?
  {
    var first = 0
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { first = 3 }
    while first < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[first]) { first += 1 }
    guard first < bytes.count else { return nil }
    let list: JSONDocument.ElementList
    switch bytes[first] {
    case UInt8(ascii: "["): list = .definitions
    case UInt8(ascii: "{"): list = .features
    default: return nil
    }
    var accumulator = GeofenceLoadAccumulator(file: file, defaultRadiusMeters: defaultRadiusMeters)
    // Reads the spans the pass hands out: only those (see `init(unchecked:root:)`).
    let document = JSONDocument(
      unchecked: bytes,
      root: JSONSpan(start: first, end: bytes.count, line: 1, lineStart: 0, depth: 0))
    let read = bytes.withUnsafeBufferPointer { b in
      // At 64, 512, 4096, ... elements: room for the rows the rest of the text holds at the
      // bytes a row so far, 5 % more, but for at most 8 times the rows so far, so that short
      // first elements (a file of 64 `0,` and one long name) cannot have it reserve for
      // millions.
      func reserve(index: Int, at offset: Int) {
        guard index >= 64, index.nonzeroBitCount == 1, index.trailingZeroBitCount % 3 == 0,
          offset > first
        else { return }
        let rows = Double(index) * Double(b.count - first) / Double(offset - first)
        accumulator.reserveCapacity(Int(Swift.min(rows * 1.05 + 1, Double(8 * index))))
      }
      return JSONDocument.readElementsInOnePass(
        b, list: list,
        plain: { index, position in
          reserve(index: index, at: position.i)
          var end = position
          guard let reading = JSONDocument.plainReading(at: &end, of: list, in: b),
            addPlain(reading, bytes: b, index: index, line: position.line, into: &accumulator)
          else { return false }
          position = end
          return true
        },
        other: { index, span in
          reserve(index: index, at: span.start)
          readElement(
            span, of: list, index: index, in: document, bytes: b, into: &accumulator)
        })
    }
    return read ? accumulator : nil
  }

  /// Reads one feature the general way (its ``JSONValue``, then ``feature(_:)``).
  private static func readGeneralFeature(
    _ element: JSONSpan, index: Int, in document: JSONDocument,
    into accumulator: inout GeofenceLoadAccumulator
  ) {
    let decoded: Result<RawGeofenceDefinition, DefinitionFailure>
    do {
      decoded = feature(try document.value(of: element))
    } catch {
      decoded = .failure(
        DefinitionFailure(
          id: RawGeofenceDefinition.salvagedID(element, in: document, from: ["properties"]),
          problem: .invalidJSON(featureField(error.path), error)))
    }
    switch decoded {
    case .success(let definition):
      accumulator.add(definition, at: .index(index), line: element.line)
    case .failure(let rejection):
      accumulator.reject(
        at: .index(index), line: element.line, id: rejection.id, reason: rejection.problem)
    }
  }

  /// The definition field a path into a GeoJSON feature points at: `id`; `properties.radius`,
  /// `.name` and `.id`; any other property is metadata; `geometry.coordinates[0]` is the
  /// longitude and `[1]` the latitude.
  static func featureField(_ path: [JSONPathComponent]) -> DefinitionField? {
    guard case .key(let first)? = path.first else { return nil }
    switch first {
    case "id": return .id
    case "properties":
      guard path.count > 1, case .key(let key) = path[1] else { return .properties }
      switch key {
      case "id": return .id
      case "name": return .name
      case "radius": return .radius
      default: return .metadata
      }
    case "geometry":
      guard path.count > 1, case .key("coordinates") = path[1] else { return .geometry }
      // A Point's axis is `coordinates[i]`; a Polygon's `coordinates[ring][position][i]`,
      // a MultiPolygon's one level deeper: the axis is the last index, at depth 3 or 5 and on.
      guard path.count == 3 || path.count >= 5, case .index(let i) = path.last else {
        return .coordinates
      }
      return i == 0 ? .longitude : i == 1 ? .latitude : .coordinates
    default: return nil
    }
  }

  private static func feature(_ element: JSONValue) -> Result<
    RawGeofenceDefinition, DefinitionFailure
  > {
    guard case .object(let members) = element else {
      return .failure(
        DefinitionFailure(
          id: nil,
          problem: .malformedRecord("feature must be an object, found \(element.typeName)")))
    }
    guard case .string("Feature")? = members["type"] else {
      return .failure(
        DefinitionFailure(id: nil, problem: .malformedRecord("object is not a GeoJSON Feature")))
    }
    var properties: [String: JSONValue] = [:]
    switch members["properties"] {
    case nil, .null?: break
    case .object(let p)?: properties = p
    case let other?:
      return .failure(
        DefinitionFailure(
          id: nil,
          problem: .wrongType(.properties, expected: "an object", found: other.typeName)))
    }
    var id = members["id"]
    if id == nil || id == .null { id = properties["id"] }
    var metadata = properties
    for key in ["id", "name", "radius"] { metadata[key] = nil }
    // A `metadata` property holding an object is the metadata, as the reference server reads
    // it and as `geofence regions --format geojson` writes it.
    let explicitMetadata: Bool
    if case .object(let given)? = properties["metadata"] {
      metadata = given
      explicitMetadata = true
    } else {
      explicitMetadata = false
    }
    var definition = RawGeofenceDefinition(
      id: id, latitude: nil, longitude: nil, radius: properties["radius"],
      name: properties["name"], metadata: .object(metadata))
    let knownID = GeofenceValidator.identifier(of: definition)
    func fail(_ problem: DefinitionProblem) -> Result<RawGeofenceDefinition, DefinitionFailure> {
      .failure(DefinitionFailure(id: knownID, problem: problem))
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
    case .string("Polygon")?, .string("MultiPolygon")?:
      definition.geometry = .object(geometry)
      if let radius = definition.radius, !explicitMetadata {
        metadata["radius"] = radius
        definition.metadata = .object(metadata)
        definition.radius = nil
      }
      return .success(definition)
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
