import Foundation
import GeofenceTestSupport
import Testing

/// Two `--destination file=` paths that reach one file (a symbolic link to it, or to its
/// directory, or a dangling link to where it will be) are one destination: a usage error
/// (64) before any fix is read, instead of every event written twice.
@Suite struct FileDestinationIdentityTests {
  @Test func twoPathsToOneFileAreRefused() throws {
    let dir = try CLI.scratch("file-identity")
    defer { try? FileManager.default.removeItem(at: dir) }
    let manager = FileManager.default
    let real = dir.appendingPathComponent("real")
    try manager.createDirectory(at: real, withIntermediateDirectories: true)
    let a = real.appendingPathComponent("a.jsonl").path
    let resolved = URL(fileURLWithPath: a).resolvingSymlinksInPath().path
    // A dangling link first: a.jsonl does not exist yet.
    let dangling = dir.appendingPathComponent("dangling.jsonl").path
    try manager.createSymbolicLink(atPath: dangling, withDestinationPath: "real/a.jsonl")
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    func run(_ first: String, _ second: String) throws -> CLI.Output {
      try CLI.run([
        "run", "--store", dir.appendingPathComponent("store").path, "--destination",
        "file=\(first)", "--destination", "file=\(second)", "--regions", regions, track,
      ])
    }
    let before = try run(a, dangling)
    #expect(before.status == 64, "\(before.stderr)")
    #expect(
      before.stderr.hasPrefix(
        "geofence run: --destination file=\(dangling) is the same file as --destination "
          + "file=\(a) (\(resolved)): every event would be written twice\n"), "\(before.stderr)")
    #expect(!manager.fileExists(atPath: a))

    try Data().write(to: URL(fileURLWithPath: a))
    let link = dir.appendingPathComponent("link.jsonl").path
    try manager.createSymbolicLink(atPath: link, withDestinationPath: a)
    let linkedDirectory = dir.appendingPathComponent("linked")
    try manager.createSymbolicLink(at: linkedDirectory, withDestinationURL: real)
    let throughDirectory = linkedDirectory.appendingPathComponent("a.jsonl").path
    for (first, second) in [(a, link), (link, throughDirectory), (throughDirectory, dangling)] {
      let r = try run(first, second)
      #expect(r.status == 64, "\(first) \(second): \(r.stderr)")
      #expect(r.stderr.contains("is the same file as --destination file=\(first)"), "\(r.stderr)")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: a)).isEmpty)

    // Two different files are two destinations, each written once.
    let b = real.appendingPathComponent("b.jsonl").path
    let both = try run(link, b)
    #expect(both.status == 0, "\(both.stderr)")
    let lines = { (path: String) in
      CLI.lines((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").count
    }
    #expect(lines(a) == 8 && lines(b) == 8)
  }
}
