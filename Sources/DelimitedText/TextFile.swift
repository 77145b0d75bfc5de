import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Reads an input file (geofence definitions, a track, a list of ids) whole, with bounds, so
/// that a device or a pipe that never ends (`/dev/zero`, `yes | ...`) is refused with a
/// message instead of filling memory.
public enum TextFile {
  /// Why ``read(atPath:maximumStreamBytes:)`` failed, in words (an `errno` text or a bound).
  public struct ReadFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String
    /// Whether the content is at fault (binary data, past the bound), not the access to it
    /// (an `errno` of `open` or `read`): a caller's "bad data" rather than "cannot read".
    public let isContent: Bool
    public init(reason: String, isContent: Bool = false) {
      self.reason = reason
      self.isContent = isContent
    }
    public var description: String { reason }
  }

  /// The most bytes read from an input that is not a regular file (a pipe, a device): 2 GiB,
  /// well above the largest definition file the engine is meant for (10 million geofences
  /// are about 800 MB of CSV). A regular file is read whole, whatever its size.
  public static let maximumStreamBytes = 1 << 31

  /// Bytes of the first read from a pipe or device that are checked for NUL: 64 KiB. Text
  /// (CSV, JSON, GPX in UTF-8 or Latin-1) holds none; `/dev/zero` and `/dev/urandom` do.
  static let sniffBytes = 1 << 16

  /// The whole content of the file at `path`.
  ///
  /// A regular file is read at the size it has when opened (one that grows meanwhile is read
  /// as it was; one that reports a size of 0, as `/proc` does, to its end within
  /// `maximumStreamBytes`). Anything else (a pipe, a FIFO, a character device such as
  /// `/dev/stdin` or `/dev/null`) is read to its end, in chunks, and refused when it passes
  /// `maximumStreamBytes` or when its first 64 KiB hold a NUL byte (binary data, not text).
  /// - Throws: ``ReadFailure`` naming the cause: the `errno` text of `open` or `read`, "is a
  ///   directory", a bound passed, or binary data.
  /// - Complexity: O(n) in the bytes read; memory O(n).
  public static func read(atPath path: String, maximumStreamBytes: Int = maximumStreamBytes)
    throws(ReadFailure) -> Data
  {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ReadFailure(reason: errnoText()) }
    defer { close(fd) }
    var status = stat()
    guard fstat(fd, &status) == 0 else { throw ReadFailure(reason: errnoText()) }
    let kind = status.st_mode & S_IFMT
    if kind == S_IFDIR { throw ReadFailure(reason: "is a directory, not a file") }
    if kind == S_IFREG {
      // At most the size it had when opened: a file that grows while it is read (a log being
      // appended to) is read as it was, not followed without end.
      let size = Int(status.st_size)
      // A size of 0 may be a file whose size the system does not know (`/proc`): read it as
      // a pipe, to its end within the bound.
      if size == 0 {
        return try readAll(fd, expected: 0, limit: maximumStreamBytes, sniff: false)
      }
      return try readAll(fd, expected: size, limit: size, sniff: false, stopAtLimit: true)
    }
    return try readAll(fd, expected: 0, limit: maximumStreamBytes, sniff: true)
  }

  private static func readAll(
    _ fd: Int32, expected: Int, limit: Int, sniff: Bool, stopAtLimit: Bool = false
  ) throws(ReadFailure) -> Data {
    // Read straight into the result, sized for a regular file whole (and one byte more: a
    // read without a bound finds the end with no growth).
    var data = Data(count: max(expected + 1, 1 << 16))
    var count = 0
    while true {
      if stopAtLimit && count >= limit { break }
      // Grown to at most one byte past the limit: the byte that shows it was passed.
      if count == data.count { data.count = Swift.min(count * 2, limit + 1) }
      let room = stopAtLimit ? Swift.min(data.count, limit) : data.count
      let n = data.withUnsafeMutableBytes { buffer -> Int in
        guard let base = buffer.baseAddress else { return 0 }
        return systemRead(fd, base + count, room - count)
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw ReadFailure(reason: errnoText())
      }
      if n == 0 { break }
      if sniff && count < sniffBytes
        && data[count..<(count + n)].contains(0)
      {
        throw ReadFailure(
          reason: "holds NUL bytes: binary data, not a text file", isContent: true)
      }
      count += n
      if count > limit {
        throw ReadFailure(
          reason: "longer than \(limit) bytes, the most read from a pipe or device",
          isContent: true)
      }
    }
    data.count = count
    return data
  }

  private static func errnoText() -> String { String(cString: strerror(errno)) }

  private static func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int)
    -> Int
  {
    #if canImport(Glibc)
      Glibc.read(fd, buffer, count)
    #else
      Darwin.read(fd, buffer, count)
    #endif
  }
}
