import Foundation
import GeofenceSync
import GeofenceTestSupport
import Testing

/// Runs the built `geofence` binary (from `swift build`) and returns its exit status, standard
/// output and standard error.
func runGeofence(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
  let binary = TestPaths.packageRoot.appendingPathComponent(".build/debug/geofence")
  let process = Process()
  process.executableURL = binary
  process.arguments = arguments
  let out = Pipe()
  let err = Pipe()
  process.standardOutput = out
  process.standardError = err
  try process.run()
  let outData = out.fileHandleForReading.readDataToEndOfFile()
  let errData = err.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return (
    process.terminationStatus, String(decoding: outData, as: UTF8.self),
    String(decoding: errData, as: UTF8.self)
  )
}

let geofenceBinaryExists = FileManager.default.isExecutableFile(
  atPath: TestPaths.packageRoot.appendingPathComponent(".build/debug/geofence").path)

@Suite(
  "geofence sync (the built binary)", .waitsOnChildProcesses, .serialized,
  .enabled(if: geofenceBinaryExists, "run 'swift build' first"))
struct SyncCommandTests {
  @Test func helpAndUsageErrors() throws {
    let help = try runGeofence(["sync", "--help"])
    #expect(help.status == 0)
    #expect(help.out.contains("usage: geofence sync --server URL --key KEY --store DIR"))
    for arguments in [
      ["sync", "--key", "k", "--store", "/tmp/x"],
      ["sync", "--server", "ftp://x", "--key", "k", "--store", "/tmp/x"],
      [
        "sync", "--server", "http://127.0.0.1:1", "--key", "k", "--store", "/tmp/x", "--near",
        "1,2",
      ],
      [
        "sync", "--server", "http://127.0.0.1:1", "--key", "k", "--store", "/tmp/x", "--near",
        "91,0", "--radius-m", "5",
      ],
      ["sync", "--server", "http://127.0.0.1:1", "--key", "k", "--store", "/tmp/x", "--bogus"],
    ] {
      #expect(try runGeofence(arguments).status == 64, "\(arguments)")
    }
  }

  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with the server's packages is needed"))
  func syncsKeepsTheStoreOnFailureAndExitsPerFailure() async throws {
    let server = try await ReferenceServer.start(keys: ["cli"])
    defer { server.stop() }
    try await server.replaceGeofences(
      key: "cli",
      (0..<12).map {
        ReferenceServer.geofence(
          "c\($0)", latitude: 21, longitude: -157 + Double($0) * 0.01, radius: 300)
      })
    let dir = TestScratch.root.appendingPathComponent(
      "sync-cli-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: dir) }
    let base = [
      "sync", "--server", server.baseURL.absoluteString, "--key", "cli", "--store", dir.path,
      "--attempts", "2",
    ]
    let first = try runGeofence(base + ["--page-size", "5"])
    #expect(first.status == 0, "\(first.err)")
    #expect(first.out.contains("added: 12  removed: 0  geometry changed: 0  metadata changed: 0"))
    #expect(first.out.contains("full listing (no stored version), 3 page(s)"))

    try await server.armFault(["path": "/v1/geofences/changes", "kind": "500", "count": 5])
    let failed = try runGeofence(base)
    #expect(failed.status == 69)
    #expect(failed.out.contains("stale: HTTP 500 internal_error"))
    #expect(failed.err.contains("kept 12 geofence(s)"))
    try await server.clearFaults()

    try await server.armFault([
      "path": "/v1/geofences/changes", "kind": "truncate", "mode": "cut_json", "count": 5,
    ])
    #expect(try runGeofence(base).status == 65)
    try await server.clearFaults()

    #expect(try runGeofence(base.map { $0 == "cli" ? "wrong" : $0 }).status == 69)

    try await server.patchGeofences(key: "cli", delete: ["c3"])
    let again = try runGeofence(base)
    #expect(again.status == 0)
    #expect(again.out.contains("added: 0  removed: 1"))
    #expect(again.out.contains("stale: no"))
    let store = try GeofenceStore(path: dir.appendingPathComponent("geofences.sqlite").path)
    #expect(try store.geofences().count == 11)
  }
}
