import Foundation

extension SyncWire {
  /// The first object key that appears twice in one object of `data`, with the byte offset of
  /// its second occurrence; nil when every object's keys are distinct.
  ///
  /// `JSONSerialization` keeps the last of repeated keys without a word, so a body such as
  /// `{"version": "v2", ..., "version": "v9"}` would be read as v9 while its `ETag` says v2.
  /// RFC 8259 §4 leaves such objects' meaning open; the sync protocol refuses them. Keys are
  /// compared by their code points after unescaping (`"a"` and `"\u0061"` are the same key),
  /// not by Unicode canonical equivalence, as RFC 8259 §8.3 compares strings.
  ///
  /// - Precondition: `data` is valid JSON (it is called after `JSONSerialization` accepted it);
  ///   on other input the answer is unspecified but the scan still ends.
  /// - Complexity: O(n) time in the body's bytes; memory for the keys of the objects open at
  ///   one time.
  static func firstRepeatedKey(in data: Data) -> (key: String, offset: Int)? {
    data.withUnsafeBytes { raw -> (key: String, offset: Int)? in
      let bytes = raw.bindMemory(to: UInt8.self)
      // One entry per open container: the keys seen, or nil for an array.
      var open: [Set<[UInt8]>?] = []
      var expectingKey = false
      var i = 0
      while i < bytes.count {
        switch bytes[i] {
        case UInt8(ascii: "\""):
          let start = i
          var escaped = false
          i += 1
          while i < bytes.count && bytes[i] != UInt8(ascii: "\"") {
            if bytes[i] == UInt8(ascii: "\\") {
              escaped = true
              i += 1
            }
            i += 1
          }
          if expectingKey, let last = open.indices.last, open[last] != nil {
            let end = min(i + 1, bytes.count)
            let key = keyBytes(UnsafeBufferPointer(rebasing: bytes[start..<end]), escaped)
            if open[last]?.insert(key).inserted == false {
              return (String(decoding: key, as: UTF8.self), start)
            }
            expectingKey = false
          }
        case UInt8(ascii: "{"):
          open.append([])
          expectingKey = true
        case UInt8(ascii: "["):
          open.append(nil)
          expectingKey = false
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          _ = open.popLast()
          expectingKey = false
        case UInt8(ascii: ","):
          expectingKey = open.last.map { $0 != nil } ?? false
        default:
          break
        }
        i += 1
      }
      return nil
    }
  }

  /// The UTF-8 bytes of a quoted JSON string (quotes included in `quoted`), unescaped.
  private static func keyBytes(_ quoted: UnsafeBufferPointer<UInt8>, _ escaped: Bool) -> [UInt8] {
    guard escaped else { return Array(quoted.dropFirst().dropLast()) }
    let decoded =
      try? JSONSerialization.jsonObject(with: Data(quoted), options: .fragmentsAllowed) as? String
    return Array((decoded ?? String(decoding: quoted, as: UTF8.self)).utf8)
  }
}
