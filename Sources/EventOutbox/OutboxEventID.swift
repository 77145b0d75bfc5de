/// Deterministic event ids: the same components always give the same id, on every platform and
/// in every run, so an event created again from the same input (after a crash, say) has the id
/// of the first one and the server stores it once.
///
/// ## Algorithm
/// 128-bit FNV-1a (Fowler, Noll, Vo; offset basis `0x6c62272e07bb014262b821756295c58d`, prime
/// `2^88 + 2^8 + 0x3b`, as published at <http://www.isthe.com/chongo/tech/comp/fnv/>) over the
/// components, each written as its UTF-8 byte count (8 bytes, little-endian) followed by its
/// bytes, so that `["ab", "c"]` and `["a", "bc"]` differ. The id is `prefix` followed by the
/// 32 lowercase hex digits of the hash.
///
/// FNV is not a cryptographic hash: ids are unique for honest inputs (a collision among
/// 10^12 events has a probability near 10^-15), not against an adversary choosing inputs.
public enum OutboxEventID {
  static let offsetBasis: UInt128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d
  static let prime: UInt128 = 0x0000_0000_0100_0000_0000_0000_0000_013b

  /// The id of the event described by `components`.
  /// - Parameters:
  ///   - components: what identifies the event, in a fixed order (for a geofence transition:
  ///     region id, region lifetime, type, fix time, device).
  ///   - prefix: written before the hex digits. Default `"ev-"`.
  /// - Returns: `prefix` + 32 hex digits.
  /// - Complexity: O(total bytes of the components).
  public static func derive(_ components: [String], prefix: String = "ev-") -> String {
    var hash = offsetBasis
    @inline(__always) func mix(_ byte: UInt8) {
      hash ^= UInt128(byte)
      hash = hash &* prime
    }
    for component in components {
      var count = UInt64(component.utf8.count)
      for _ in 0..<8 {
        mix(UInt8(truncatingIfNeeded: count))
        count >>= 8
      }
      for byte in component.utf8 { mix(byte) }
    }
    // 32 hex digits, written directly: the generic `String(_:radix:)` of a UInt128 divides
    // 128-bit numbers digit by digit, and dominated the cost of an event.
    let digits: StaticString = "0123456789abcdef"
    let hex = String(unsafeUninitializedCapacity: 32) { buffer in
      var value = hash
      for i in stride(from: 31, through: 0, by: -1) {
        buffer[i] = digits.utf8Start[Int(value & 0xF)]
        value >>= 4
      }
      return 32
    }
    return prefix + hex
  }
}
