import Foundation

/// Who events belong to: a user id when someone is signed in, else a persisted anonymous id;
/// plus a device id that never changes.
///
/// Events are tagged when they are **created** (``MonitoringPipeline`` reads ``current``), so
/// changing the user later does not change events already queued. ``reset()`` signs out and
/// starts a new anonymous id.
///
/// Persisted as a small JSON file (`{"device_id", "anonymous_id", "user_id"}`), replaced
/// atomically on every change.
public final class MonitoringIdentity {
  /// The file the identity is kept in.
  public let fileURL: URL
  /// The signed-in user, if any.
  public private(set) var userID: String?
  /// The anonymous id used while nobody is signed in (`anon-` + 32 hex digits).
  public private(set) var anonymousID: String
  /// This installation's device id (`device-` + 32 hex digits); kept by ``reset()``.
  public let deviceID: String
  private var random: AnyRandom

  /// The id to tag a new event with: ``userID`` or else ``anonymousID``.
  public var current: String { userID ?? anonymousID }
  /// Whether ``current`` is anonymous.
  public var isAnonymous: Bool { userID == nil }

  /// Loads the identity from `fileURL`, creating it (new device and anonymous ids) when the
  /// file does not exist.
  /// - Parameters:
  ///   - fileURL: where the identity is kept.
  ///   - random: the source of new ids. Default: the system generator.
  /// - Throws: when the file exists but cannot be read, or the new file cannot be written.
  public init(
    fileURL: URL, random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) throws {
    self.fileURL = fileURL
    var random = AnyRandom(base: random)
    if FileManager.default.fileExists(atPath: fileURL.path) {
      let data = try Data(contentsOf: fileURL)
      guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
        let device = object["device_id"] as? String,
        let anonymous = object["anonymous_id"] as? String
      else {
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: fileURL.path])
      }
      deviceID = device
      anonymousID = anonymous
      userID = object["user_id"] as? String
      self.random = random
    } else {
      deviceID = Self.makeID("device-", &random)
      anonymousID = Self.makeID("anon-", &random)
      userID = nil
      self.random = random
      try save()
    }
  }

  /// Signs `userID` in (or out with `nil`). Events created from now on carry it.
  public func setUser(_ userID: String?) throws {
    self.userID = userID
    try save()
  }

  /// Signs out and starts a new anonymous id.
  public func reset() throws {
    userID = nil
    anonymousID = Self.makeID("anon-", &random)
    try save()
  }

  private func save() throws {
    var object: [String: Any] = ["device_id": deviceID, "anonymous_id": anonymousID]
    if let userID { object["user_id"] = userID }
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    try data.write(to: fileURL, options: .atomic)
  }

  private static func makeID(_ prefix: String, _ random: inout AnyRandom) -> String {
    let hi = String(random.next(), radix: 16)
    let lo = String(random.next(), radix: 16)
    return prefix + String(repeating: "0", count: 16 - hi.count) + hi
      + String(repeating: "0", count: 16 - lo.count) + lo
  }
}

struct AnyRandom: RandomNumberGenerator {
  var base: any RandomNumberGenerator
  mutating func next() -> UInt64 { base.next() }
}
