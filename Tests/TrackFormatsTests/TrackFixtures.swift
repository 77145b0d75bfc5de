import Foundation
import GeofenceTestSupport
import Testing

@testable import TrackFormats

/// Paths and helpers shared by the track reader tests.
enum TrackFixtures {
  /// `data/tracks` in the repository.
  static var repoTracks: URL { TestPaths.data.appendingPathComponent("tracks") }

  /// `shared/data/tracks` from `TestPaths.sharedData`, or from the nearest ancestor of the
  /// package root that holds `shared/data` (a worktree sits one level deeper than the main
  /// checkout); `nil` when absent.
  static var sharedTracks: URL? {
    if let shared = TestPaths.sharedData { return shared.appendingPathComponent("tracks") }
    var dir = TestPaths.packageRoot
    for _ in 0..<3 {
      dir.deleteLastPathComponent()
      let candidate = dir.appendingPathComponent("shared/data/tracks")
      if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
    }
    return nil
  }

  static func files(in dir: URL) -> [URL] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
    return names.sorted().map { dir.appendingPathComponent($0) }
  }

  /// A fresh temporary directory for hand-made files.
  static func tempDir() throws -> URL {
    let dir = TestScratch.root.appendingPathComponent(
      "TrackFormatsTests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
  }

  /// Writes `bytes` to a temporary file called `name` and reads it with `TrackReader`.
  static func read(_ name: String, bytes: [UInt8]) throws -> TrackReadResult {
    let dir = try tempDir()
    defer { try? FileManager.default.removeItem(at: dir) }
    let url = dir.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    return try TrackReader.read(contentsOf: url)
  }

  static func read(_ name: String, _ text: String) throws -> TrackReadResult {
    try read(name, bytes: Array(text.utf8))
  }

  /// The error `TrackReader` throws for `text` written to a file called `name`, or `nil`.
  static func error(_ name: String, _ text: String) -> TrackReadError? {
    error(name, bytes: Array(text.utf8))
  }

  static func error(_ name: String, bytes: [UInt8]) -> TrackReadError? {
    do {
      _ = try read(name, bytes: bytes)
      return nil
    } catch let e as TrackReadError {
      return e
    } catch {
      Issue.record("unexpected error type: \(error)")
      return nil
    }
  }

  /// Seconds since the epoch from an RFC 3339 literal, for expectations.
  static func t(_ text: String) -> Double {
    guard let r = RFC3339.parse(text) else {
      Issue.record("bad test literal \(text)")
      return .nan
    }
    return r.seconds
  }
}
