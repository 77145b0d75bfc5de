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
  /// Searched in each parent folder of the package root in turn, so it is found from a clone in
  /// any folder beside `shared/`.
  public static var sharedData: URL? {
    var dir = packageRoot
    while dir.pathComponents.count > 1 {
      dir.deleteLastPathComponent()
      let url = dir.appendingPathComponent("shared/data")
      if FileManager.default.fileExists(atPath: url.path) { return url }
    }
    return nil
  }
}
