import Foundation

extension GeofenceEngine {
  /// Creates the store directory `path` and its missing parents (nothing to do when it is a
  /// directory already).
  /// - Throws: ``EngineError/store(_:)`` with the path and the reason in words: the first
  ///   part of the path that exists but is not a directory, or the system's reason (for
  ///   example "Permission denied") for the first directory that cannot be made.
  static func makeStoreDirectory(_ path: String) throws(EngineError) {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
      if isDirectory.boolValue { return }
      throw .store("\(path): exists and is not a directory (the store is a directory)")
    }
    // Make the missing parents from the top, so that the error names the one that failed.
    var missing: [String] = []
    var p = (path as NSString).standardizingPath
    while !p.isEmpty, p != "/",
      !FileManager.default.fileExists(atPath: p, isDirectory: &isDirectory)
    {
      missing.append(p)
      p = (p as NSString).deletingLastPathComponent
    }
    if !p.isEmpty, p != "/", !isDirectory.boolValue {
      throw .store("\(path): \(p) is not a directory")
    }
    for dir in missing.reversed() {
      if mkdir(dir, 0o755) != 0, errno != EEXIST {
        throw .store(
          "cannot create the store directory \(dir): \(String(cString: strerror(errno)))")
      }
    }
  }
}
