import Foundation

/// Where tests write their files: one folder of the test process under the system's temporary
/// directory, removed with everything in it when the process exits normally, so that a test
/// run leaves nothing behind (a process that crashes leaves its folder). Tests make their own
/// folders and files inside it, as they would in the temporary directory.
public enum TestScratch {
  /// The process's folder, made on first use: `geofence-tests-<pid>-<UUID>`.
  public static let root: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "geofence-tests-\(getpid())-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(at: TestScratch.root) }
    return url
  }()
}
