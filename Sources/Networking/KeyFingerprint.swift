import CCrypto
import Foundation

/// The fingerprint of an API key: what a store keeps to recognise the key's account, and what
/// a message shows to tell two accounts apart, without keeping or showing the key.
///
/// `pbkdf2-sha256:` and 32 lowercase hex digits: the first 16 bytes of PBKDF2-HMAC-SHA256
/// (RFC 8018 §5.2, OpenSSL's `PKCS5_PBKDF2_HMAC` with `EVP_sha256`) of the key's UTF-8 bytes,
/// with the salt ``salt`` and ``iterations`` iterations. The salt separates this use from any
/// other hash of the same key; the iterations make each guess of a weak key cost as much as
/// 100,000 HMACs (OWASP's 2023 floor for PBKDF2-HMAC-SHA256 is 600,000 for passwords, which
/// people choose; an API key is usually random, and this fingerprint is computed on every
/// command, so a sixth of it). A store keeps no salt of its own, so one key has one
/// fingerprint everywhere and a message can be compared with another machine's.
///
/// Earlier versions stored ``legacy(_:)``, an FNV-1a 64 of the key: 16 hex digits that a
/// guess of a weak key can be checked against at billions per second. A store that holds one
/// recognises it (``matches(_:key:)``) and replaces it with the new fingerprint.
public enum KeyFingerprint {
  /// The prefix of a fingerprint of this scheme.
  public static let scheme = "pbkdf2-sha256:"
  /// PBKDF2 iterations: 100,000.
  public static let iterations: Int32 = 100_000
  /// The domain-separation salt.
  public static let salt = "geofence/api-key-fingerprint/v1"

  private static let lock = NSLock()
  nonisolated(unsafe) private static var computed: [String: String] = [:]

  /// The fingerprint of `key` (see the type's discussion). Computed once per key per
  /// process (about 50 ms), then remembered.
  /// - Complexity: ``iterations`` HMAC-SHA256 computations the first time.
  public static func of(_ key: String) -> String {
    if let known = lock.withLock({ computed[key] }) { return known }
    var out = [UInt8](repeating: 0, count: 16)
    let password = Array(key.utf8)
    let saltBytes = Array(salt.utf8)
    let ok = password.withUnsafeBufferPointer { p in
      saltBytes.withUnsafeBufferPointer { s in
        out.withUnsafeMutableBufferPointer { o in
          p.withMemoryRebound(to: CChar.self) { chars in
            PKCS5_PBKDF2_HMAC(
              chars.baseAddress, Int32(chars.count), s.baseAddress, Int32(s.count), iterations,
              EVP_sha256(), Int32(o.count), o.baseAddress)
          }
        }
      }
    }
    // PKCS5_PBKDF2_HMAC fails only for an unavailable digest or no memory.
    precondition(ok == 1, "PKCS5_PBKDF2_HMAC failed")
    let hex = Array("0123456789abcdef".utf8)
    var text = Array(scheme.utf8)
    for byte in out {
      text.append(hex[Int(byte >> 4)])
      text.append(hex[Int(byte & 0x0f)])
    }
    let fingerprint = String(decoding: text, as: UTF8.self)
    lock.withLock { computed[key] = fingerprint }
    return fingerprint
  }

  /// The fingerprint earlier versions stored: FNV-1a 64 of the key's UTF-8 bytes, 16 hex
  /// digits. Only to recognise a stored one; never stored or shown again.
  /// - Complexity: O(n) in the key's length.
  public static func legacy(_ key: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  /// Whether `stored` is a fingerprint of `key`: ``of(_:)``, or ``legacy(_:)`` from an
  /// earlier version (which the caller then replaces with ``of(_:)``).
  public static func matches(_ stored: String, key: String) -> Bool {
    stored == of(key) || stored == legacy(key)
  }

  /// Whether `stored` is of this scheme (else an earlier version's, not to be shown).
  public static func isCurrent(_ stored: String) -> Bool { stored.hasPrefix(scheme) }
}
