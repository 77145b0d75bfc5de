import Foundation

extension GeofenceEngine {
  /// Creates the directory `path` and its missing parents (nothing to do when it is a
  /// directory already), for a caller that names the directory in its own words (a command
  /// line option, for example) before it opens an engine on it.
  /// - Returns: `nil` when `path` is a directory now; otherwise why not, as
  ///   "`path`: reason": "exists and is not a directory", "`p` is not a directory" for the
  ///   first part of the path that exists but is not a directory, or "cannot be created" /
  ///   "cannot create `dir`" with the system's reason (for example "Permission denied") for
  ///   the first directory that cannot be made. The text does not say what the directory is
  ///   for.
  /// - Complexity: one `stat` per path component, one `mkdir` per missing one.
  public static func makeDirectory(_ path: String) -> String? {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
      return isDirectory.boolValue ? nil : "\(path): exists and is not a directory"
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
      return "\(path): \(p) is not a directory"
    }
    let target = (path as NSString).standardizingPath
    for dir in missing.reversed() where mkdir(dir, 0o755) != 0 && errno != EEXIST {
      let reason = String(cString: strerror(errno))
      return dir == target
        ? "\(path): cannot be created: \(reason)" : "\(path): cannot create \(dir): \(reason)"
    }
    return nil
  }

  /// Creates the store directory `path` and its missing parents, as ``makeDirectory(_:)``.
  /// - Throws: ``EngineError/store(_:)`` with ``makeDirectory(_:)``'s reason.
  static func makeStoreDirectory(_ path: String) throws(EngineError) {
    if let reason = makeDirectory(path) { throw .store(reason) }
  }
}
