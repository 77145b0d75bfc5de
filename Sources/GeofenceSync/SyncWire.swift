import Foundation
import GeofenceDefinitions
import GeofenceGeometry

/// The JSON bodies of the sync protocol (`docs/openapi.yaml`), decoded and validated.
enum SyncWire {
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
    guard let list = object["geofences"] as? [Any] else {
      return .failure(.invalidBody("listing has no \"geofences\" array"))
    }
    let cursor: String?
    switch object["next_cursor"] {
    case nil: return .failure(.invalidBody("listing has no \"next_cursor\""))
    case is NSNull: cursor = nil
    case let s as String where !s.isEmpty: cursor = s
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
    return .success(object)
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
