import Foundation
import GeofenceTestSupport
import Testing

/// `geofence upload --destination ...` delivers what a run left queued for a webhook or a
/// file, without another run; without `--destination` it is the server alone, as for `run`.
@Suite(.waitsOnChildProcesses) struct UploadDestinationsTests {
  /// A run whose webhook refuses every post (a wrong secret: 401) leaves its 8 events queued
  /// (exit 75); `upload --destination webhook=URL` with the right secret delivers them, each
  /// once, and leaves no server cursor; `upload` of a webhook needs no --server or --key.
  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func uploadDeliversTheEventsARunLeftForAWebhook() async throws {
    let secret = "upload-hook-secret"
    let server = try await ReferenceServer.start(arguments: ["--webhook-secret", secret])
    defer { server.stop() }
    let dir = try CLI.scratch("upload-webhook")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let hook = "webhook=\(server.baseURL.absoluteString)/v1/webhook"
    let run = try CLI.run([
      "run", "--store", store, "--destination", hook, "--webhook-secret", "wrong",
      "--max-attempts", "1", "--timeout", "5", "--regions",
      try CLI.writeEquatorGeofences(in: dir), try CLI.writeEquatorTrack(in: dir),
    ])
    #expect(run.status == 75, "\(run.stderr)")
    #expect(run.stderr.contains("pending 8"), "\(run.stderr)")

    let upload = try CLI.run([
      "upload", "--store", store, "--destination", hook, "--webhook-secret", secret,
      "--timeout", "5",
    ])
    #expect(upload.status == 0, "\(upload.stderr)")
    let (status, body) = try await server.request("GET", "/admin/webhook")
    #expect(status == 200)
    let report = try JSONSerialization.jsonObject(with: body) as? [String: Any] ?? [:]
    // Each of the 8 events once; the run's posts were refused (401), not stored.
    #expect(report["event_count"] as? Int == 8, "\(report)")
    #expect(report["delivery_count"] as? Int == 8, "\(report)")
    #expect((report["refused_count"] as? Int ?? 0) >= 1, "\(report)")
    let outbox = try CLI.run(["outbox", "--store", store, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(outbox.stdout.utf8)) as? [String: Any]
    let destinations = object?["destinations"] as? [String: Any] ?? [:]
    #expect(destinations.keys.sorted() == ["webhook:\(server.baseURL.absoluteString)/v1/webhook"])
  }
}
