import Foundation

/// Locations of the repository's `data/` folder and the built products, for tests.
public enum TestPaths {
  /// The package root (found from this source file's path).
  public static let packageRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url
  }()

  /// `data/` in the package root.
  public static var data: URL { packageRoot.appendingPathComponent("data") }

  /// `../shared/data` beside the package root, if present (optional, for checks on files that
  /// may not be redistributed).
  public static var sharedData: URL? {
    let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/data")
    return FileManager.default.fileExists(atPath: url.path) ? url : nil
  }
}
