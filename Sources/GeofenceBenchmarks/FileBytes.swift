#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Why a workload or data file could not be read or written.
public enum WorkloadFileError: Error, Equatable, Sendable, CustomStringConvertible {
  /// An input file could not be opened or read (`errno` text).
  case cannotOpen(path: String, reason: String)
  /// An output file could not be created (`errno` text).
  case cannotCreate(path: String, reason: String)
  /// A write failed (`errno` text).
  case writeFailed(path: String, reason: String)
  /// A line does not have the documented form; `line` is 1-based, 0 for the whole file.
  case malformed(path: String, line: Int, message: String)

  public var description: String {
    switch self {
    case .cannotOpen(let path, let reason): return "\(path): cannot open: \(reason)"
    case .cannotCreate(let path, let reason): return "\(path): cannot create: \(reason)"
    case .writeFailed(let path, let reason): return "\(path): write failed: \(reason)"
    case .malformed(let path, let line, let message):
      // Line 0: a whole-file error, whose reader's message may name the file already.
      if line > 0 { return "\(path):\(line): \(message)" }
      return message.hasPrefix(path) ? message : "\(path): \(message)"
    }
  }
}

func errnoText() -> String { String(cString: strerror(errno)) }

/// The whole file as bytes, followed by one NUL byte (so `strtod` can run to the end).
func readFileBytes(_ path: String) throws(WorkloadFileError) -> [UInt8] {
  guard let file = fopen(path, "rb") else { throw .cannotOpen(path: path, reason: errnoText()) }
  defer { fclose(file) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 1 << 20)
  while true {
    let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
    if n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
    if n < chunk.count { break }
  }
  if ferror(file) != 0 { throw .cannotOpen(path: path, reason: errnoText()) }
  bytes.append(0)
  return bytes
}

/// A buffered writer of UTF-8 text to a file.
struct TextFileWriter {
  let path: String
  private let file: UnsafeMutablePointer<FILE>
  private var buffer: [UInt8] = []

  init(path: String) throws(WorkloadFileError) {
    guard let file = fopen(path, "wb") else {
      throw .cannotCreate(path: path, reason: errnoText())
    }
    self.path = path
    self.file = file
    buffer.reserveCapacity(1 << 20)
  }

  mutating func write(_ text: String) throws(WorkloadFileError) {
    buffer.append(contentsOf: text.utf8)
    if buffer.count >= 1 << 20 { try flush() }
  }

  mutating func flush() throws(WorkloadFileError) {
    let n = buffer.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    if n != buffer.count { throw .writeFailed(path: path, reason: errnoText()) }
    buffer.removeAll(keepingCapacity: true)
  }

  /// Flushes and closes the file.
  mutating func close() throws(WorkloadFileError) {
    try flush()
    if fclose(file) != 0 { throw .writeFailed(path: path, reason: errnoText()) }
  }
}

/// Names of the regular entries of a directory, sorted by their bytes; empty if it cannot be
/// read.
func directoryEntries(_ path: String) -> [String] {
  guard let dir = opendir(path) else { return [] }
  defer { closedir(dir) }
  var names: [String] = []
  while let entry = readdir(dir) {
    let name = withUnsafePointer(to: entry.pointee.d_name) {
      $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
}
