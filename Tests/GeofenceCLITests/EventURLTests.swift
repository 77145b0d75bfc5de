import Foundation
import GeofenceTestSupport
import Testing

/// A geofence's `metadata.url` becomes the event's `url` when it is an absolute URL (any
/// scheme); the metadata object reaches every output unchanged.
@Suite(.waitsOnChildProcesses) struct EventURLTests {
  /// The `url` each geofence's events must carry.
  static let expectedURL: [String: String?] = [
    "offer-1": "https://example.com/offer/1", "bad-url": nil, "app-link": "myapp://x",
    "plain": nil,
  ]

  /// Checks the url and metadata of each event against the definitions.
  static func check(_ events: [[String: Any]], _ label: String) {
    let definitions = Dictionary(
      uniqueKeysWithValues: CLI.equatorGeofences.map { ($0["id"] as? String ?? "", $0) })
    #expect(events.count == 8, "\(label): \(events.count) events")
    #expect(Set(events.compactMap { $0["geofence_id"] as? String }) == Set(expectedURL.keys))
    for e in events {
      let id = e["geofence_id"] as? String ?? ""
      guard let url = expectedURL[id], let definition = definitions[id] else {
        Issue.record("\(label): unexpected geofence \(id)")
        continue
      }
      #expect(
        CLI.same(e["url"], url.map { $0 as Any } ?? NSNull()), "\(label) \(id): \(e["url"] ?? "")")
      #expect(CLI.same(e["metadata"], definition["metadata"] ?? NSNull()), "\(label) \(id)")
    }
  }

  @Test func replayAndStreamCarryURLAndMetadata() throws {
    let dir = try CLI.scratch("event-url")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let replay = try CLI.run(["replay", "--quiet", "--regions", regions, track])
    #expect(replay.status == 0, "\(replay.stderr)")
    Self.check(CLI.objects(replay.stdout), "replay")
    var input = ""
    for s in 0..<100 {
      input +=
        "{\"device_id\":\"d\",\"time\":\(1_796_014_800 + 10 * s),\"latitude\":0,"
        + "\"longitude\":\(CLI.equatorFixEast(s))}\n"
    }
    let stream = try CLI.run(["stream", "--quiet", "--regions", regions], input: Data(input.utf8))
    #expect(stream.status == 0, "\(stream.stderr)")
    Self.check(CLI.objects(stream.stdout), "stream")
  }

  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func runDeliversURLAndMetadataToTheServer() async throws {
    let server = try await ReferenceServer.start(keys: ["url-key"])
    defer { server.stop() }
    let dir = try CLI.scratch("event-url-run")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let run = try CLI.run([
      "run", "--server", server.baseURL.absoluteString, "--key", "url-key", "--store",
      dir.appendingPathComponent("store").path, "--regions", regions, track,
    ])
    #expect(run.status == 0, "\(run.stderr)")
    let report = try await server.events(key: "url-key")
    let stored = (report["events"] as? [[String: Any]] ?? []).compactMap {
      $0["event"] as? [String: Any]
    }
    Self.check(stored, "server")
  }
}
