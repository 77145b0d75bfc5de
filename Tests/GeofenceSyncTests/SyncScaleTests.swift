import Foundation
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import Networking
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Serves a listing of `count` synthetic geofences page by page, generating each page from its
/// offset, so that the fake holds nothing per geofence.
final class GeneratedListingTransport: HTTPTransport, @unchecked Sendable {
  let count: Int

  init(count: Int) { self.count = count }

  static func geofenceJSON(_ i: Int) -> String {
    let lat = -60 + Double((i &* 7919) % 130_000) / 1000
    let lon = -180 + Double((i &* 104_729) % 360_000) / 1000
    return "{\"id\":\"g\(String(format: "%07d", i))\",\"latitude\":\(lat),\"longitude\":\(lon),"
      + "\"radius\":\(100 + (i % 5) * 100),\"name\":\"place \(i)\","
      + "\"updated_at\":\"2026-11-30T05:00:00.000Z\"}"
  }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
    let limit = Int(items.first { $0.name == "limit" }?.value ?? "1000") ?? 1000
    let offset = Int(items.first { $0.name == "cursor" }?.value ?? "0") ?? 0
    let end = min(count, offset + limit)
    var body = "{\"version\":\"v1\",\"geofences\":["
    for i in offset..<end {
      if i > offset { body += "," }
      body += Self.geofenceJSON(i)
    }
    body += "],\"next_cursor\":" + (end < count ? "\"\(end)\"" : "null") + "}"
    return HTTPResponse(statusCode: 200, headers: ["ETag": "\"v1\""], body: Data(body.utf8))
  }
}

/// Peak resident set size of this process in kB (`VmHWM`), after resetting it when `reset`.
func peakResidentKilobytes(reset: Bool = false) -> Int {
  if reset, let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
    handle.write(Data("5".utf8))
    try? handle.close()
  }
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
  else { return -1 }
  return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// Scale figures, off by default: `GEOFENCE_SYNC_SCALE=1000000 swift test -c release --filter
/// SyncScaleTests`. Prints the time and peak memory of a paged full sync of N geofences into a
/// file store.
@Suite(
  "Sync at scale",
  .enabled(if: ProcessInfo.processInfo.environment["GEOFENCE_SYNC_SCALE"] != nil))
struct SyncScaleTests {
  static let count = Int(ProcessInfo.processInfo.environment["GEOFENCE_SYNC_SCALE"] ?? "") ?? 0

  func seconds(_ a: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - a.uptimeNanoseconds) / 1e9
  }

  @Test func fullSync() async throws {
    let n = Self.count
    let dir = TestScratch.root.appendingPathComponent("sync-scale-\(UUID())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = try GeofenceStore(path: dir.appendingPathComponent("geofences.sqlite").path)
    var configuration = SyncConfiguration(baseURL: URL(fileURLWithPath: "/"), apiKey: "k")
    configuration.pageSize = 10_000
    configuration.reportsChangedGeofences = false
    let client = GeofenceSyncClient(
      configuration: configuration, store: store,
      transport: GeneratedListingTransport(count: n), clock: ManualClock(now: syncTestStart))
    let baseline = peakResidentKilobytes(reset: true)
    let start = DispatchTime.now()
    let report = try await client.sync()
    let syncSeconds = seconds(start)
    let peak = peakResidentKilobytes()
    #expect(report.geofenceCount == n)
    #expect(report.diff.counts.added == n)
    print(
      "SCALE full sync of \(n): \(String(format: "%.2f", syncSeconds)) s, \(report.pageCount) "
        + "pages, peak RSS \(peak / 1024) MB (\((peak - baseline) / 1024) MB above the start)")
  }
}
