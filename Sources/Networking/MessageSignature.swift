import CCrypto

/// HMAC-SHA256 (RFC 2104 over FIPS 180-4 SHA-256), computed by OpenSSL's libcrypto (`HMAC`
/// with `EVP_sha256`): the signature a webhook request carries.
public enum MessageSignature {
  /// The 32-byte HMAC-SHA256 of `message` under `key`, as 64 lowercase hex digits.
  /// - Parameters:
  ///   - key: the shared secret's bytes (any length; HMAC hashes a key longer than 64 bytes).
  ///   - message: the bytes to sign.
  /// - Complexity: O(n) in `key.count + message.count`.
  public static func hmacSHA256Hex(key: [UInt8], message: [UInt8]) -> String {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    key.withUnsafeBufferPointer { k in
      message.withUnsafeBufferPointer { m in
        digest.withUnsafeMutableBufferPointer { d in
          // HMAC returns NULL only for an unavailable digest; EVP_sha256 always is.
          _ = HMAC(
            EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, d.baseAddress,
            &length)
        }
      }
    }
    let hex: [UInt8] = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(64)
    for byte in digest.prefix(Int(length)) {
      out.append(hex[Int(byte >> 4)])
      out.append(hex[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
  }
}
