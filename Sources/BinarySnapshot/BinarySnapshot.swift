#if canImport(Glibc)
  import Glibc
#endif

/// The byte layout of a binary snapshot: values and arrays of plain data written as their
/// in-memory bytes, so that reading one back is a copy, not a parse.
///
/// **Format.** A snapshot is `magic` (8 bytes), the format version (`UInt32`), the payload
/// and a trailing checksum (``checksum(_:)`` of every byte before it, `UInt64`). Every
/// number is little-endian (the byte order of every platform the package builds for). An
/// array is its count (`UInt64`), its element's stride (`UInt32`) and its elements' bytes; a
/// string its UTF-8 byte count (`UInt64`) and bytes; an optional string a count of `UInt64.max`
/// for `nil`. Plain data is a type without references (`_isPOD`); a stride that differs from
/// this build's is ``SnapshotError/layout(_:)``, so that a snapshot written by a build whose
/// types differ is refused, never misread.
///
/// A snapshot is a cache that the package writes and reads itself: its checksum catches a
/// damaged or cut file, and a reader that meets any inconsistency throws and the caller
/// rebuilds from the source. The checksum is not a defence against a file crafted to pass
/// it; keep snapshots where the store's other files are.
public enum BinarySnapshot {
  /// `GFSNAP` then 0x00 0x01.
  public static let magic: [UInt8] = [0x47, 0x46, 0x53, 0x4E, 0x41, 0x50, 0x00, 0x01]

  /// A 64-bit checksum of `bytes`: four lanes of 8-byte words, each multiplied by an odd
  /// constant (the 64-bit golden ratio, 0x9E3779B97F4A7C15) and rotated, then mixed with
  /// MurmurHash3's 64-bit finaliser. Any change of one byte changes the result; not a
  /// cryptographic hash.
  /// - Complexity: O(n); about 8 bytes a cycle.
  public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var state = Checksum()
    state.add(bytes)
    return state.finish()
  }

  /// ``checksum(_:)`` over bytes given in parts: every part but the last must be a multiple of
  /// 32 bytes long.
  public struct Checksum {
    static let k: UInt64 = 0x9E37_79B9_7F4A_7C15
    var a: UInt64 = 0x243F_6A88_85A3_08D3
    var b: UInt64 = 0x1319_8A2E_0370_7344
    var c: UInt64 = 0xA409_3822_299F_31D0
    var d: UInt64 = 0x082E_FA98_EC4E_6C89
    var n = 0
    var tail: [UInt8] = []

    public init() {}

    public mutating func add(_ bytes: UnsafeRawBufferPointer) {
      precondition(tail.isEmpty, "only the last part may be shorter than a multiple of 32")
      let k = Self.k
      var i = 0
      while i + 32 <= bytes.count {
        a = ((a ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* k).rotated(29)
        b = ((b ^ bytes.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)) &* k).rotated(31)
        c = ((c ^ bytes.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)) &* k).rotated(33)
        d = ((d ^ bytes.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)) &* k).rotated(35)
        i += 32
      }
      tail = Array(bytes[i...])
      n += bytes.count
    }

    public func finish() -> UInt64 {
      let k = Self.k
      var h = a ^ b.rotated(17) ^ c.rotated(37) ^ d.rotated(53) ^ UInt64(n)
      for byte in tail { h = ((h ^ UInt64(byte)) &* k).rotated(23) }
      return mix(h)
    }
  }

  /// MurmurHash3's 64-bit finaliser (`fmix64`).
  @inlinable
  public static func mix(_ x: UInt64) -> UInt64 {
    var h = x
    h ^= h >> 33
    h &*= 0xFF51_AFD7_ED55_8CCD
    h ^= h >> 33
    h &*= 0xC4CE_B9FE_1A85_EC53
    h ^= h >> 33
    return h
  }
}

extension UInt64 {
  @inline(__always)
  func rotated(_ r: UInt64) -> UInt64 { (self << r) | (self >> (64 - r)) }
}

/// Why a snapshot could not be read.
public enum SnapshotError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Not a snapshot, or of another format version.
  case notASnapshot
  /// The checksum does not match: the file is damaged or was cut short.
  case damaged
  /// The bytes end inside a value.
  case truncated
  /// A type's stride differs from this build's, or a value is inconsistent.
  case layout(String)
  /// The snapshot was built from another version of its source.
  case stale

  public var description: String {
    switch self {
    case .notASnapshot: return "not a snapshot of this format"
    case .damaged: return "the checksum does not match (damaged or cut short)"
    case .truncated: return "it ends inside a value"
    case .layout(let why): return "its layout differs from this build's: \(why)"
    case .stale: return "it was built from another version of the set"
    }
  }
}

/// Writes a snapshot (see ``BinarySnapshot``): values appended in order, then ``finish()``.
public struct SnapshotWriter {
  public private(set) var bytes: [UInt8]

  /// A writer holding the magic and `formatVersion`.
  public init(formatVersion: UInt32) {
    bytes = BinarySnapshot.magic
    bytes.reserveCapacity(1 << 16)
    write(formatVersion)
  }

  /// Appends the bytes of a plain-data value.
  /// - Precondition: `T` holds no references.
  public mutating func write<T>(_ value: T) {
    precondition(_isPOD(T.self), "only plain data is written as bytes")
    withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
  }

  /// Appends an array of plain data: count, stride, elements.
  public mutating func write<T>(array: [T]) {
    precondition(_isPOD(T.self), "only plain data is written as bytes")
    write(UInt64(array.count))
    write(UInt32(MemoryLayout<T>.stride))
    array.withUnsafeBytes { bytes.append(contentsOf: $0) }
  }

  /// Appends a string: its UTF-8 byte count and bytes.
  public mutating func write(string: String) {
    var s = string
    s.withUTF8 { utf8 in
      write(UInt64(utf8.count))
      bytes.append(contentsOf: utf8)
    }
  }

  /// Appends an optional string (`nil` as the count `UInt64.max`).
  public mutating func write(optionalString: String?) {
    if let s = optionalString { write(string: s) } else { write(UInt64.max) }
  }

  /// Appends strings as one arena: the count, the end offset of each (`[UInt64]`), then all
  /// their UTF-8 bytes.
  public mutating func write(strings: [String]) {
    var ends: [UInt64] = []
    ends.reserveCapacity(strings.count)
    var arena: [UInt8] = []
    for var s in strings {
      s.withUTF8 { arena.append(contentsOf: $0) }
      ends.append(UInt64(arena.count))
    }
    write(array: ends)
    write(array: arena)
  }

  /// The finished snapshot: the bytes with their checksum appended.
  public mutating func finish() -> [UInt8] {
    let sum = bytes.withUnsafeBytes { BinarySnapshot.checksum($0) }
    write(sum)
    return bytes
  }
}

/// Reads a snapshot written by ``SnapshotWriter``, in the order it was written.
public struct SnapshotReader {
  let bytes: UnsafeRawBufferPointer
  /// The end of the payload (the checksum follows it).
  let end: Int
  var offset: Int

  /// Checks the magic, `formatVersion` and the checksum of `bytes`, which must stay valid
  /// while the reader is used.
  /// - Throws: ``SnapshotError/notASnapshot`` or ``SnapshotError/damaged``.
  /// - Complexity: O(n) for the checksum.
  public init(_ bytes: UnsafeRawBufferPointer, formatVersion: UInt32) throws(SnapshotError) {
    try self.init(unverified: bytes, formatVersion: formatVersion)
    guard Self.checksumMatches(bytes) else { throw .damaged }
  }

  /// A reader that checks the magic and `formatVersion` but not the checksum, for a caller
  /// that runs ``checksumMatches(_:)`` at the same time on another thread and discards what it
  /// read when that fails.
  /// - Throws: ``SnapshotError/notASnapshot``.
  public init(unverified bytes: UnsafeRawBufferPointer, formatVersion: UInt32)
    throws(SnapshotError)
  {
    let head = BinarySnapshot.magic.count + 4
    guard bytes.count >= head + 8,
      bytes.prefix(BinarySnapshot.magic.count).elementsEqual(BinarySnapshot.magic),
      bytes.loadUnaligned(fromByteOffset: BinarySnapshot.magic.count, as: UInt32.self)
        == formatVersion
    else { throw .notASnapshot }
    end = bytes.count - 8
    self.bytes = bytes
    offset = head
  }

  /// Whether the trailing checksum of `bytes` (at least 8 bytes) matches the bytes before it.
  /// With `releasingPages` (a read-only file mapping only, as ``releasesReadPages``), each
  /// 4 MiB hashed is given back at once.
  public static func checksumMatches(_ bytes: UnsafeRawBufferPointer, releasingPages: Bool = false)
    -> Bool
  {
    guard bytes.count >= 8 else { return false }
    let end = bytes.count - 8
    let stored = bytes.loadUnaligned(fromByteOffset: end, as: UInt64.self)
    guard releasingPages, let base = bytes.baseAddress else {
      return BinarySnapshot.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<end])) == stored
    }
    var state = BinarySnapshot.Checksum()
    let chunk = 4 << 20
    var i = 0
    while i < end {
      let n = min(chunk, end - i)
      state.add(UnsafeRawBufferPointer(start: base + i, count: n))
      releasePages(base + i, byteCount: n)
      i += n
    }
    return state.finish() == stored
  }

  /// Whether every payload byte has been read.
  public var isAtEnd: Bool { offset == end }

  /// Reads a plain-data value.
  public mutating func read<T>(_: T.Type = T.self) throws(SnapshotError) -> T {
    precondition(_isPOD(T.self), "only plain data is read as bytes")
    let size = MemoryLayout<T>.size
    guard end - offset >= size else { throw .truncated }
    let value = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
    offset += size
    return value
  }

  /// A count that fits in the bytes left at `bytesEach` a unit.
  mutating func count(bytesEach: Int) throws(SnapshotError) -> Int {
    let n: UInt64 = try read()
    guard n <= UInt64(end - offset) / UInt64(max(1, bytesEach)) else { throw .truncated }
    return Int(n)
  }

  /// Reads an array of plain data.
  /// - Throws: ``SnapshotError/layout(_:)`` when the stride differs from this build's.
  public mutating func readArray<T>(_: T.Type = T.self) throws(SnapshotError) -> [T] {
    precondition(_isPOD(T.self), "only plain data is read as bytes")
    let n: UInt64 = try read()
    let stride: UInt32 = try read()
    guard stride == MemoryLayout<T>.stride else {
      throw .layout("\(T.self) has a stride of \(stride) bytes, not \(MemoryLayout<T>.stride)")
    }
    let bytesEach = MemoryLayout<T>.stride
    guard n <= UInt64(end - offset) / UInt64(max(1, bytesEach)) else { throw .truncated }
    let count = Int(n)
    let source = bytes.baseAddress.map { $0 + offset }
    offset += count * bytesEach
    return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
      if count > 0, let source, let destination = buffer.baseAddress {
        let byteCount = count * bytesEach
        Self.preferHugePages(UnsafeMutableRawPointer(destination), byteCount: byteCount)
        UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: byteCount)
        if releasesReadPages { Self.releasePages(UnsafeRawPointer(source), byteCount: byteCount) }
      }
      initialized = count
    }
  }

  /// When true, the pages of each large array's bytes are given back once copied
  /// (`madvise(MADV_DONTNEED)`), so that the process does not hold the file's pages and the
  /// arrays at once. Set it only when the bytes are a read-only mapping of a file: the pages
  /// are then read from the file again if touched later; anonymous memory would read back as
  /// zeros.
  public var releasesReadPages = false

  /// Gives back the whole pages inside `start ..< start + byteCount` of a file mapping
  /// (Linux; nothing elsewhere).
  public static func releasePages(_ start: UnsafeRawPointer, byteCount: Int) {
    #if os(Linux)
      let page = 4096
      guard byteCount >= 16 * page else { return }
      let first = (Int(bitPattern: start) + page - 1) & ~(page - 1)
      let last = (Int(bitPattern: start) + byteCount) & ~(page - 1)
      guard last > first, let p = UnsafeMutableRawPointer(bitPattern: first) else { return }
      _ = madvise(p, last - first, 4)  // MADV_DONTNEED (linux/mman.h)
    #endif
  }

  /// Asks the kernel to back the 2 MiB-aligned interior of a large fresh buffer with huge pages
  /// before it is written (`madvise(MADV_HUGEPAGE)`, Linux; where transparent huge pages are
  /// enabled for `madvise`): one page fault per 2 MiB instead of one per 4 KiB, most of the
  /// cost of copying a large snapshot into new arrays, and one TLB entry per 2 MiB for a
  /// table read at random. No effect elsewhere or when refused.
  public static func preferHugePages(_ start: UnsafeMutableRawPointer, byteCount: Int) {
    #if os(Linux)
      let huge = 2 << 20
      guard byteCount >= 2 * huge else { return }
      let first = (Int(bitPattern: start) + huge - 1) & ~(huge - 1)
      let last = (Int(bitPattern: start) + byteCount) & ~(huge - 1)
      guard last > first, let p = UnsafeMutableRawPointer(bitPattern: first) else { return }
      _ = madvise(p, last - first, 14)  // MADV_HUGEPAGE (linux/mman.h)
    #endif
  }

  /// Reads a string.
  public mutating func readString() throws(SnapshotError) -> String {
    let n = try count(bytesEach: 1)
    let s = String(
      decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]), as: UTF8.self)
    offset += n
    return s
  }

  /// Reads an optional string.
  public mutating func readOptionalString() throws(SnapshotError) -> String? {
    guard end - offset >= 8 else { throw .truncated }
    if bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == UInt64.max {
      offset += 8
      return nil
    }
    return try readString()
  }

  /// Reads strings written by ``SnapshotWriter/write(strings:)``.
  public mutating func readStrings() throws(SnapshotError) -> [String] {
    let ends: [UInt64] = try readArray()
    let arenaCount: UInt64 = try read()
    let stride: UInt32 = try read()
    guard stride == 1, arenaCount <= UInt64(end - offset) else { throw .truncated }
    let arena = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(arenaCount))])
    offset += Int(arenaCount)
    var strings: [String] = []
    strings.reserveCapacity(ends.count)
    var start = 0
    for e in ends {
      guard e >= UInt64(start), e <= arenaCount else { throw .layout("string offsets") }
      strings.append(
        String(decoding: UnsafeRawBufferPointer(rebasing: arena[start..<Int(e)]), as: UTF8.self))
      start = Int(e)
    }
    return strings
  }
}
