import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A store on a read-only mount cannot be written: commands say so and exit 74 (EX_IOERR),
/// instead of calling it damaged (65) and sending the user to `repair`, which could not
/// write either.
@Suite(
  .waitsOnChildProcesses,
  .enabled(if: BindMount.isAllowed, "root, with mount(8) allowed to bind-mount"))
struct ReadOnlyStoreTests {
  @Test func aReadOnlyStoreIsAnIOErrorNotDamage() throws {
    let dir = try CLI.scratch("read-only-store")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let track = dir.appendingPathComponent("t.csv")
    try "time,lat,lon\n1764478800,0,0\n".write(to: track, atomically: true, encoding: .utf8)
    let store = dir.appendingPathComponent("store")
    let run = try CLI.run([
      "run", "--store", store.path, "--server", "http://127.0.0.1:9", "--key", "k",
      "--no-upload", "--regions", regions, track.path,
    ])
    #expect(run.status == 0, "\(run.stderr)")
    let mounted = dir.appendingPathComponent("mounted")
    try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
    try #require(BindMount.readOnly(store.path, on: mounted.path))
    defer { BindMount.unmount(mounted.path) }
    for command in [["outbox", "--store", mounted.path], ["repair", "--store", mounted.path]] {
      let r = try CLI.run(command)
      #expect(r.status == 74, "\(command): \(r.stderr)")
      #expect(r.stderr.contains("cannot be written: Read-only file system"), "\(r.stderr)")
      #expect(!r.stderr.contains("damaged"), "\(r.stderr)")
    }
  }
}

/// Read-only bind mounts through mount(8), for the tests of stores that cannot be written.
enum BindMount {
  /// Whether this process can make read-only bind mounts (root in a machine or container that
  /// allows it), probed once on a scratch folder.
  static let isAllowed: Bool = {
    guard getuid() == 0, let dir = try? CLI.scratch("mount-probe") else { return false }
    defer { try? FileManager.default.removeItem(at: dir) }
    let target = dir.appendingPathComponent("target")
    try? FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
    guard readOnly(dir.path, on: target.path) else { return false }
    unmount(target.path)
    return true
  }()

  @discardableResult
  static func shell(_ arguments: [String]) -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = arguments
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return -1 }
    p.waitUntilExit()
    return p.terminationStatus
  }

  static func readOnly(_ source: String, on target: String) -> Bool {
    guard shell(["mount", "--bind", source, target]) == 0 else { return false }
    if shell(["mount", "-o", "remount,ro,bind", target]) != 0 {
      unmount(target)
      return false
    }
    return true
  }

  static func unmount(_ target: String) { shell(["umount", target]) }
}
