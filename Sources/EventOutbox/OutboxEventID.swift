import JSONText
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
    var builder = Builder()
    for component in components { builder.add(component) }
    return builder.id(prefix: prefix)
  }

  /// ``derive(_:prefix:)`` one component at a time, without an array of strings: the
  /// engine's path, which adds a fix time as its decimal digits without making a `String`.
  /// The same components give the same id by either path.
  public struct Builder: Sendable {
    private var hash = OutboxEventID.offsetBasis

    public init() {}

    @inline(__always) private mutating func mix(_ byte: UInt8) {
      hash ^= UInt128(byte)
      // × prime, with prime = 2^88 + 0x13b: a shift and a multiplication by a small
      // constant (the same product modulo 2^128, in two 64-bit multiplications, not three).
      hash = (hash &<< 88) &+ hash &* 0x13B
    }

    /// `prime`⁷ modulo 2^128: mixing a zero byte only multiplies by the prime, so seven zero
    /// bytes multiply by this (the same hash, one multiplication instead of seven).
    private static let primeToTheSeventh: UInt128 = {
      var p: UInt128 = 1
      for _ in 0..<7 { p = p &* OutboxEventID.prime }
      return p
    }()

    private mutating func mixCount(_ n: Int) {
      var count = UInt64(n)
      // A count below 256 (every component of an event id) is one byte, then seven zeros.
      if count < 256 {
        mix(UInt8(count))
        hash = hash &* Self.primeToTheSeventh
        return
      }
      for _ in 0..<8 {
        mix(UInt8(truncatingIfNeeded: count))
        count >>= 8
      }
    }

    /// Adds one component: its UTF-8 byte count, then its bytes.
    /// - Complexity: O(n) in the component's UTF-8 length; allocates nothing.
    public mutating func add(_ component: String) {
      var component = component
      component.withUTF8 { bytes in
        mixCount(bytes.count)
        for byte in bytes { mix(byte) }
      }
    }

    /// Adds the component `String(n)` (its decimal digits, `-` first when negative) without
    /// making the string.
    /// - Complexity: O(1); allocates nothing.
    public mutating func add(decimal n: Int64) {
      JSONText.withDecimalDigits(n) { digits in
        mixCount(digits.count)
        for byte in digits { mix(byte) }
      }
    }

    /// Calls `body` with the 32 lowercase hex digits of the hash so far.
    private func withHex<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
      // Written directly: the generic `String(_:radix:)` of a UInt128 divides 128-bit numbers
      // digit by digit, and dominated the cost of an event.
      let digits: StaticString = "0123456789abcdef"
      var hex: (UInt128, UInt128) = (0, 0)
      return withUnsafeMutableBytes(of: &hex) { buffer in
        var value = hash
        for i in stride(from: 31, through: 0, by: -1) {
          buffer[i] = digits.utf8Start[Int(value & 0xF)]
          value >>= 4
        }
        return body(UnsafeRawBufferPointer(rebasing: buffer[0..<32]))
      }
    }

    /// Appends the UTF-8 bytes of ``id(prefix:)`` to `out`, without making the string.
    /// - Complexity: O(1); allocates only when `out` grows.
    public func appendID(prefix: StaticString = "ev-", to out: inout [UInt8]) {
      withHex { hex in
        out.append(
          contentsOf: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        out.append(contentsOf: hex)
      }
    }

    /// Appends ``id(prefix:)`` as a JSON string (between quotes: the id needs no escape) in
    /// one copy: `"ev-` and the 32 hex digits, then `"`.
    /// - Complexity: O(1); allocates only when `out` grows.
    public func appendQuotedID(to out: inout [UInt8]) {
      withHex { hex in
        // 1 + 3 + 32 + 1 = 37 bytes, in a 48-byte buffer on the stack.
        var text: (UInt128, UInt128, UInt128) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { t in
          t[0] = UInt8(ascii: "\"")
          t[1] = UInt8(ascii: "e")
          t[2] = UInt8(ascii: "v")
          t[3] = UInt8(ascii: "-")
          for i in 0..<32 { t[4 + i] = hex[i] }
          t[36] = UInt8(ascii: "\"")
          out.append(contentsOf: UnsafeRawBufferPointer(rebasing: t[0..<37]))
        }
      }
    }

    /// Writes ``appendQuotedID(to:)``'s 37 bytes through `w`.
    /// - Complexity: O(1); no allocation.
    public func writeQuotedID(to w: inout JSONText.Writer) {
      withHex { hex in
        w.write("\"ev-")
        w.write(bytes: hex.assumingMemoryBound(to: UInt8.self))
        w.write(byte: UInt8(ascii: "\""))
      }
    }

    /// The id: `prefix` + the 32 hex digits. One allocation (the string).
    public func id(prefix: String = "ev-") -> String {
      withHex { hex in
        var prefix = prefix
        return prefix.withUTF8 { p in
          String(unsafeUninitializedCapacity: p.count + 32) { out in
            for i in 0..<p.count { out[i] = p[i] }
            for i in 0..<32 { out[p.count + i] = hex[i] }
            return p.count + 32
          }
        }
      }
    }
  }
}
