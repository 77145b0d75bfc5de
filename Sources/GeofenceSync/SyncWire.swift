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

  /// One page of `GET /v1/geofences`.
  struct Page {
    var version: String
    var definitions: [RawGeofenceDefinition?]
    var nextCursor: String?
  }

  /// `GET /v1/geofences/changes`.
  struct Changes {
    var version: String
    var upserted: [RawGeofenceDefinition?]
    var deleted: [String]
  }

  /// `{"error": {"code", "message"}}`, when the body has that shape.
  static func errorBody(_ data: Data) -> (code: String?, message: String?) {
    guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
      let error = object["error"] as? [String: Any]
    else { return (nil, nil) }
    return (error["code"] as? String, error["message"] as? String)
  }

  static func page(_ data: Data) -> Result<Page, SyncError> {
    let object: [String: Any]
    switch topLevel(data) {
    case .success(let o): object = o
    case .failure(let e): return .failure(e)
    }
    guard let version = object["version"] as? String, !version.isEmpty else {
      return .failure(.invalidBody("listing has no \"version\" string"))
    }
    if let problem = lengthProblem(version, "version", maximumVersionLength) {
      return .failure(problem)
    }
    guard let list = object["geofences"] as? [Any] else {
      return .failure(.invalidBody("listing has no \"geofences\" array"))
    }
    let cursor: String?
    switch object["next_cursor"] {
    case nil: return .failure(.invalidBody("listing has no \"next_cursor\""))
    case is NSNull: cursor = nil
    case let s as String where !s.isEmpty:
      if let problem = lengthProblem(s, "next_cursor", maximumCursorLength) {
        return .failure(problem)
      }
      cursor = s
    default: return .failure(.invalidBody("\"next_cursor\" is neither a string nor null"))
    }
    return .success(Page(version: version, definitions: list.map(definition), nextCursor: cursor))
  }

  static func changes(_ data: Data) -> Result<Changes, SyncError> {
    let object: [String: Any]
    switch topLevel(data) {
    case .success(let o): object = o
    case .failure(let e): return .failure(e)
    }
    guard let version = object["version"] as? String, !version.isEmpty else {
      return .failure(.invalidBody("changes have no \"version\" string"))
    }
    if let problem = lengthProblem(version, "version", maximumVersionLength) {
      return .failure(problem)
    }
    guard let upserted = object["upserted"] as? [Any] else {
      return .failure(.invalidBody("changes have no \"upserted\" array"))
    }
    guard let deletedList = object["deleted"] as? [Any] else {
      return .failure(.invalidBody("changes have no \"deleted\" array"))
    }
    var deleted: [String] = []
    deleted.reserveCapacity(deletedList.count)
    for item in deletedList {
      guard let id = item as? String else {
        return .failure(.invalidBody("\"deleted\" holds a value that is not a string"))
      }
      deleted.append(id)
    }
    return .success(
      Changes(version: version, upserted: upserted.map(definition), deleted: deleted))
  }

  private static func topLevel(_ data: Data) -> Result<[String: Any], SyncError> {
    guard !data.isEmpty else { return .failure(.invalidBody("empty body")) }
    let parsed: Any
    do {
      parsed = try JSONSerialization.jsonObject(with: data)
    } catch {
      return .failure(.invalidBody("body is not valid JSON (\(data.count) bytes)"))
    }
    guard let object = parsed as? [String: Any] else {
      return .failure(.invalidBody("body is not a JSON object"))
    }
    if let repeated = firstRepeatedKey(in: data) {
      return .failure(
        .invalidBody(
          "key \(shown(repeated.key)) appears twice in one object (byte \(repeated.offset))"))
    }
    return .success(object)
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
    throw .invalidBody("\(what) has ETag \(shown(etag)) but version \(shown(version))")
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

  /// The raw definition of one list element, or nil when the element is not an object.
  private static func definition(_ element: Any) -> RawGeofenceDefinition? {
    guard let o = element as? [String: Any] else { return nil }
    func value(_ key: String) -> JSONValue? {
      guard let v = o[key] else { return nil }
      return JSONValue(foundationObject: v)
    }
    return RawGeofenceDefinition(
      id: value("id"), latitude: value("latitude"), longitude: value("longitude"),
      radius: value("radius"), name: value("name"), metadata: value("metadata"))
  }

  /// Validates the definitions of one answer.
  ///
  /// - Returns: the valid geofences, each id once (identical copies count once); the ids to
  ///   hold back (a definition that failed validation but has a readable id, or copies of one
  ///   id that differ), which are removed from `geofences`; rejections with reasons; and the
  ///   conflicting duplicate ids.
  static func validate(_ definitions: [RawGeofenceDefinition?], source: String) -> Validated {
    var result = Validated()
    var index: [String: Int] = [:]
    index.reserveCapacity(definitions.count)
    var held = Set<String>()
    for (i, raw) in definitions.enumerated() {
      let location = DefinitionLocation(file: source, position: .index(i))
      guard let raw else {
        result.rejections.append(
          GeofenceRejection(
            location: location, id: nil, reason: .malformedRecord("element is not an object")))
        continue
      }
      if let problem = protocolProblem(raw) {
        let id: String? = problem.isLengthProblem ? nil : GeofenceValidator.identifier(of: raw)
        result.rejections.append(GeofenceRejection(location: location, id: id, reason: problem))
        if let id { held.insert(id) }
        continue
      }
      switch GeofenceValidator.validate(raw) {
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
