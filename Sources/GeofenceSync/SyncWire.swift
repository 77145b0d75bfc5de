import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Networking

/// The JSON bodies of the sync protocol (`docs/openapi.yaml`), decoded and validated.
enum SyncWire {
  /// Longest `version` accepted, characters (Unicode scalars): 256, the protocol's limit on
  /// ids (`docs/sync-protocol.md`), which a version needs no more than.
  static let maximumVersionLength = 256
  /// Longest `next_cursor` accepted, characters: 4096. The reference server's cursor holds a
  /// version, an id of up to 256 characters and an area, about 500 characters in base64.
  static let maximumCursorLength = 4096
  /// Longest geofence `id`, characters (Unicode scalars): 256 (`docs/sync-protocol.md`).
  static let maximumIDLength = 256

  /// One definition of an answer, decoded on its own, and the line where it starts (`nil`
  /// when the whole body is one line, as servers usually write it: the index says it all).
  struct Element {
    var definition: Result<RawGeofenceDefinition, DefinitionFailure>
    var line: Int?
  }

  /// One page of `GET /v1/geofences`.
  struct Page {
    var version: String
    var definitions: [Element]
    var nextCursor: String?
  }

  /// `GET /v1/geofences/changes`.
  struct Changes {
    var version: String
    var upserted: [Element]
    var deleted: [String]
  }

  /// `{"error": {"code", "message"}}`, when the body has that shape.
  static func errorBody(_ data: Data) -> (code: String?, message: String?) {
    guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
      let error = object["error"] as? [String: Any]
    else { return (nil, nil) }
    return (error["code"] as? String, error["message"] as? String)
  }

  /// The body's top-level object, its members unread, each key once.
  ///
  /// The members are read one by one (``GeofenceDefinitions/JSONDocument``): a bad value in
  /// one definition of the list (`1e400`, `NaN`, nesting deeper than 512, a duplicate key)
  /// rejects that definition only; the page's own members must be valid.
  private struct Body {
    let document: JSONDocument
    let members: [String: JSONSpan]

    init(_ data: Data) throws(SyncError) {
      guard !data.isEmpty else { throw .invalidBody("empty body") }
      do {
        document = try JSONDocument(bytes: data)
      } catch {
        throw .invalidBody("body is not valid JSON (\(data.count) bytes): \(error)")
      }
      guard document.kind(of: document.root) == .object,
        let list = try? document.members(of: document.root)
      else { throw .invalidBody("body is not a JSON object") }
      var members: [String: JSONSpan] = [:]
      for (key, value) in list {
        guard members.updateValue(value, forKey: key) == nil else {
          throw .invalidBody("the body has the key \"\(key)\" twice")
        }
      }
      self.members = members
    }

    func value(_ key: String) throws(SyncError) -> JSONValue? {
      guard let span = members[key] else { return nil }
      do { return try document.value(of: span) } catch {
        throw .invalidBody("\"\(key)\": \(error)")
      }
    }

    /// The elements of an array member, each decoded as a definition on its own.
    func definitions(_ key: String) -> [Element]? {
      guard let span = members[key], document.kind(of: span) == .array,
        let elements = try? document.elements(of: span)
      else { return nil }
      let multiline = document.bytes.contains { $0 == 0x0A || $0 == 0x0D }
      return elements.map {
        Element(
          definition: RawGeofenceDefinition.decode($0, in: document),
          line: multiline ? $0.line : nil)
      }
    }
  }

  static func page(_ data: Data) -> Result<Page, SyncError> {
    do {
      let body = try Body(data)
      guard case .string(let version)? = try body.value("version") else {
        return .failure(.invalidBody("listing has no \"version\" string"))
      }
      if version.isEmpty { return .failure(.invalidBody("listing's \"version\" is empty")) }
      if let problem = lengthProblem(version, "version", maximumVersionLength) {
        return .failure(problem)
      }
      guard let list = body.definitions("geofences") else {
        return .failure(.invalidBody("listing has no \"geofences\" array"))
      }
      let cursor: String?
      switch try body.value("next_cursor") {
      case nil: return .failure(.invalidBody("listing has no \"next_cursor\""))
      case .null?: cursor = nil
      case .string(let s)? where !s.isEmpty:
        if let problem = lengthProblem(s, "next_cursor", maximumCursorLength) {
          return .failure(problem)
        }
        cursor = s
      case .string?: return .failure(.invalidBody("\"next_cursor\" is empty (null ends a listing)"))
      default: return .failure(.invalidBody("\"next_cursor\" is neither a string nor null"))
      }
      return .success(Page(version: version, definitions: list, nextCursor: cursor))
    } catch {
      return .failure(error)
    }
  }

  static func changes(_ data: Data) -> Result<Changes, SyncError> {
    do {
      let body = try Body(data)
      guard case .string(let version)? = try body.value("version") else {
        return .failure(.invalidBody("changes have no \"version\" string"))
      }
      if version.isEmpty { return .failure(.invalidBody("the changes' \"version\" is empty")) }
      if let problem = lengthProblem(version, "version", maximumVersionLength) {
        return .failure(problem)
      }
      guard let upserted = body.definitions("upserted") else {
        return .failure(.invalidBody("changes have no \"upserted\" array"))
      }
      guard case .array(let deletedList)? = try body.value("deleted") else {
        return .failure(.invalidBody("changes have no \"deleted\" array"))
      }
      var deleted: [String] = []
      deleted.reserveCapacity(deletedList.count)
      for item in deletedList {
        guard case .string(let id) = item else {
          return .failure(.invalidBody("\"deleted\" holds a value that is not a string"))
        }
        deleted.append(id)
      }
      return .success(Changes(version: version, upserted: upserted, deleted: deleted))
    } catch {
      return .failure(error)
    }
  }

  /// A body field longer than the protocol allows, as an error; nil when it fits.
  private static func lengthProblem(_ value: String, _ field: String, _ limit: Int) -> SyncError? {
    let length = value.unicodeScalars.count
    guard length > limit else { return nil }
    return .invalidBody("\"\(field)\" is \(length) characters long; at most \(limit) are accepted")
  }

  /// Checks that an answer's `ETag`, when it has one, is its `version` in double quotes, as
  /// the protocol defines it.
  /// - Throws: ``SyncError/invalidBody(_:)`` naming both.
  static func checkETag(_ response: HTTPResponse, version: String, what: String)
    throws(SyncError)
  {
    guard let etag = response.header("etag"), etag != "\"\(version)\"" else { return }
    // The ETag is shown as sent (it carries its own quotes), made safe to print.
    throw .invalidBody(
      "\(what) has ETag \(ServerText.displayable(etag, limit: 60)) but version "
        + "\(shown(version)); the ETag must be the version in double quotes")
  }

  /// `text` for a message: quoted, cut to its first 40 characters when longer, with its length.
  static func shown(_ text: String) -> String {
    let count = text.unicodeScalars.count
    guard count > 40 else { return "\"\(text)\"" }
    var head = String.UnicodeScalarView()
    head.append(contentsOf: text.unicodeScalars.prefix(40))
    return "\"\(String(head))...\" (\(count) characters)"
  }

  /// Why the sync protocol refuses a definition before validation, or nil: its `id` must be a
  /// JSON string of at most ``maximumIDLength`` characters (the file readers also take integer
  /// ids; the protocol does not).
  private static func protocolProblem(_ raw: RawGeofenceDefinition) -> DefinitionProblem? {
    switch raw.id {
    case .number?:
      return .wrongType(.id, expected: "a string (sync protocol)", found: "number")
    case .string(let id)? where id.unicodeScalars.count > maximumIDLength:
      return .malformedRecord(
        "id is \(id.unicodeScalars.count) characters long; the protocol allows \(maximumIDLength)")
    default:
      return nil
    }
  }

  /// Validates the definitions of one answer.
  ///
  /// A definition is a circle, or a polygon (a GeoJSON `geometry` member), validated by the
  /// one ``GeofenceDefinitions/GeofenceValidator`` (polygons through GEOS, one context per
  /// answer, as a file load does). A definition that cannot be used, because its JSON is bad
  /// (``Element``) or it fails that validator (for a polygon: GEOS's reason and the place,
  /// `Self-intersection[5 5]`), is rejected on its own; the rest of the answer
  /// is applied. **What a rejected definition does to the stored set:** when its id can be
  /// read, the id is held back: the stored geofence of that id, if any, stays as it was (the
  /// server's new version of it is not taken, and a listing does not delete it); a rejected
  /// definition without a readable id changes nothing.
  ///
  /// - Returns: the valid geofences, each id once (identical copies count once); the ids to
  ///   hold back (a definition that failed validation but has a readable id, or copies of one
  ///   id that differ), which are removed from `geofences`; rejections with reasons (location
  ///   `source[index] (line n)`); and the conflicting duplicate ids.
  static func validate(_ definitions: [Element], source: String) -> Validated {
    var result = Validated()
    var index: [String: Int] = [:]
    index.reserveCapacity(definitions.count)
    var held = Set<String>()
    let polygons = PolygonValidator()
    for (i, element) in definitions.enumerated() {
      let location = DefinitionLocation(file: source, position: .index(i), line: element.line)
      let raw: RawGeofenceDefinition
      switch element.definition {
      case .success(let definition): raw = definition
      case .failure(let failure):
        result.rejections.append(
          GeofenceRejection(location: location, id: failure.id, reason: failure.problem))
        if let id = failure.id { held.insert(id) }
        continue
      }
      if let problem = protocolProblem(raw) {
        let id: String? = problem.isLengthProblem ? nil : GeofenceValidator.identifier(of: raw)
        result.rejections.append(GeofenceRejection(location: location, id: id, reason: problem))
        if let id { held.insert(id) }
        continue
      }
      switch GeofenceValidator.validate(raw, polygons: polygons) {
      case .failure(let problem):
        let id = GeofenceValidator.identifier(of: raw)
        result.rejections.append(GeofenceRejection(location: location, id: id, reason: problem))
        if let id { held.insert(id) }
      case .success(let g):
        if let j = index[g.id] {
          if result.geofences[j] != g, !result.conflicts.contains(g.id) {
            result.conflicts.append(g.id)
            held.insert(g.id)
          }
        } else {
          index[g.id] = result.geofences.count
          result.geofences.append(g)
        }
      }
    }
    if !held.isEmpty { result.geofences.removeAll { held.contains($0.id) } }
    result.heldBack = held
    return result
  }

  struct Validated {
    var geofences: [Geofence] = []
    var heldBack = Set<String>()
    var rejections: [GeofenceRejection] = []
    var conflicts: [String] = []
  }
}

extension DefinitionProblem {
  /// Whether this is the protocol's id-length rejection (whose id is not kept).
  fileprivate var isLengthProblem: Bool {
    if case .malformedRecord = self { return true }
    return false
  }
}
