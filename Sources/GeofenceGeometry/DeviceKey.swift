/// A device id as a key: equal and hashed by its UTF-8 bytes.
///
/// Device ids are opaque. `String` compares by canonical equivalence, so "café" written with
/// U+00E9 and written `e` + U+0301 would be one device in a dictionary, while the state store
/// (SQLite compares bytes), the event id hash and the events' `device_id` keep them apart: a
/// restart would split one device in two, and one device's EXIT could carry another spelling's
/// id. Every place that groups or looks up devices keys them with this type instead.
public struct DeviceKey: Hashable, Sendable {
  /// The id, as given.
  public let id: String

  public init(_ id: String) { self.id = id }

  /// Whether the two ids have the same UTF-8 bytes. O(n).
  @inlinable
  public static func == (a: DeviceKey, b: DeviceKey) -> Bool {
    var x = a.id
    var y = b.id
    return x.withUTF8 { p in y.withUTF8 { q in p.count == q.count && p.elementsEqual(q) } }
  }

  /// Hashes the UTF-8 bytes. O(n).
  @inlinable
  public func hash(into hasher: inout Hasher) {
    var id = self.id
    id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
  }
}
