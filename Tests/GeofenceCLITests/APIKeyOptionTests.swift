import Foundation
import GeofenceTestSupport
import Testing

/// An API key that cannot travel in `Authorization: Bearer KEY` is a usage error (64) named
/// by where it came from, never quoted; `$GEOFENCE_API_KEY` gives the key without `--key`.
@Suite struct APIKeyOptionTests {
  static let server = "http://127.0.0.1:9"

  struct Case: CustomTestStringConvertible, Sendable {
    var key: String
    var reason: String
    var testDescription: String { reason }
  }

  static let badKeys: [Case] = [
    Case(key: "abc\r\nX-Injected: 1", reason: "the API key holds a line break (CR or LF)"),
    Case(key: "abc\n", reason: "the API key holds a line break (CR or LF)"),
    Case(key: "ab\u{7F}c", reason: "the API key holds a control character"),
    Case(key: "ab\u{1B}c", reason: "the API key holds a control character"),
    Case(key: "   ", reason: "the API key holds only blanks"),
    Case(key: "\t", reason: "the API key holds only blanks"),
    Case(key: "", reason: "the API key is empty"),
    Case(key: " abc", reason: "the API key starts or ends with a blank"),
  ]

  static func commands(_ store: String, key: [String]) -> [(String, [String])] {
    [
      ("sync", ["sync", "--server", server, "--store", store] + key),
      ("run", ["run", "--server", server, "--store", store] + key + ["--regions", "r", "t"]),
      ("upload", ["upload", "--server", server, "--store", store] + key),
      ("stream", ["stream", "--server", server, "--store", store] + key),
    ]
  }

  @Test(arguments: badKeys)
  func aKeyThatCannotBeSentIsRefused(_ bad: Case) throws {
    let store = try CLI.scratch("bad-key")
    defer { try? FileManager.default.removeItem(at: store) }
    for (name, arguments) in Self.commands(store.path, key: ["--key", bad.key]) {
      let r = try CLI.run(arguments)
      #expect(r.status == 64, "\(name): \(r.stderr)")
      #expect(
        r.stderr.hasPrefix(
          "geofence \(name): --key: \(bad.reason); give the key as the server issued it\n"),
        "\(name): \(r.stderr)")
      #expect(bad.key.count < 3 || !r.stderr.contains("abc"), "\(name) quotes the key")
    }
    // Nothing was made: the command stopped before the store.
    #expect(try FileManager.default.contentsOfDirectory(atPath: store.path) == [])
    for (name, arguments) in Self.commands(store.path, key: []) where !bad.key.isEmpty {
      let r = try CLI.run(arguments, environment: ["GEOFENCE_API_KEY": bad.key])
      #expect(r.status == 64, "\(name): \(r.stderr)")
      #expect(
        r.stderr.hasPrefix("geofence \(name): $GEOFENCE_API_KEY: \(bad.reason);"),
        "\(name): \(r.stderr)")
    }
  }

  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func theEnvironmentGivesTheKeyAndKeyOverridesIt() async throws {
    let server = try await ReferenceServer.start(keys: ["env-key"])
    defer { server.stop() }
    try await server.replaceGeofences(
      key: "env-key",
      [ReferenceServer.geofence("g1", latitude: 10, longitude: 20, radius: 100)])
    let store = try CLI.scratch("env-key")
    defer { try? FileManager.default.removeItem(at: store) }
    let sync = ["sync", "--server", server.baseURL.absoluteString, "--store", store.path]
    let fromEnvironment = try CLI.run(sync, environment: ["GEOFENCE_API_KEY": "env-key"])
    #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
    #expect(fromEnvironment.stdout.contains("geofences: 1\n"), "\(fromEnvironment.stdout)")
    // --key wins over the environment: the server refuses the other key.
    let overridden = try CLI.run(
      sync + ["--key", "other-key"], environment: ["GEOFENCE_API_KEY": "env-key"])
    #expect(overridden.status == 69, "\(overridden.stderr)")
    #expect(overridden.stderr.contains("unauthorized (401)"), "\(overridden.stderr)")
    let neither = try CLI.run(sync, environment: ["GEOFENCE_API_KEY": ""])
    #expect(neither.status == 64)
    #expect(neither.stderr.hasPrefix("geofence sync: --key is required (or $GEOFENCE_API_KEY)"))
  }
}
