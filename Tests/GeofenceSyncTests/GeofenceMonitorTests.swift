import Foundation
import GeofenceGeometry
import GeofenceSync
import GeofenceTransitions
import Testing

@Suite("Live apply of a synced change")
struct GeofenceMonitorTests {
  static let here = (lat: 21.30, lon: -157.85)

  func fix(_ t: Double, device: String = "dev1") throws -> LocationFix {
    LocationFix(
      coordinate: try Coordinate(latitude: Self.here.lat, longitude: Self.here.lon), time: t,
      horizontalAccuracy: 5, deviceID: device)
  }

  /// A, B, C contain the device's position; D is 10 km away.
  func initialServer() -> FakeSyncServer {
    let server = FakeSyncServer()
    server.publish([
      "A": FakeSyncServer.json("A", Self.here.lat, Self.here.lon, radius: 200, name: "Alpha"),
      "B": FakeSyncServer.json("B", Self.here.lat + 0.0005, Self.here.lon, radius: 200),
      "C": FakeSyncServer.json("C", Self.here.lat, Self.here.lon + 0.0005, radius: 200),
      "D": FakeSyncServer.json("D", Self.here.lat + 0.1, Self.here.lon, radius: 200),
    ])
    return server
  }

  /// A renamed, B removed, C moved 10 km away, D moved onto the device.
  func change(_ server: FakeSyncServer) {
    server.update(
      upsert: [
        "A": FakeSyncServer.json("A", Self.here.lat, Self.here.lon, radius: 200, name: "Alpha 2"),
        "C": FakeSyncServer.json("C", Self.here.lat - 0.1, Self.here.lon, radius: 200),
        "D": FakeSyncServer.json("D", Self.here.lat, Self.here.lon - 0.0005, radius: 200),
      ], delete: ["B"])
  }

  func summary(_ events: [MonitorEvent]) -> [String] {
    events.map { "\($0.type.rawValue) \($0.geofenceID)\($0.isRemoval ? " (removed)" : "")" }
  }

  @Test(arguments: [false, true])
  func syncedChangeKeepsInsideStateAndDwellTimers(removalExit: Bool) async throws {
    let server = initialServer()
    let client = try makeClient(server)
    let first = try await client.sync()
    #expect(first.diff.counts.added == 4)
    var configuration = TransitionConfiguration()
    configuration.loiteringDelaySeconds = 300
    let monitor = GeofenceMonitor(
      geofences: try client.store.geofences(), configuration: configuration)
    #expect(summary(monitor.process(try fix(0))) == ["enter A", "enter B", "enter C"])
    #expect(summary(monitor.process(try fix(100))) == [])

    change(server)
    let report = try await client.sync()
    #expect(report.kind == .incremental)
    #expect(report.diff.counts == .init(removed: 1, geometryChanged: 2, metadataChanged: 1))
    let applied = monitor.apply(
      report.diff, at: 150, options: MonitorApplyOptions(emitsExitForRemovedGeofences: removalExit))
    #expect(!applied.rebuiltIndex)
    #expect(applied.droppedVisits == 1)
    #expect(applied.carriedVisits == 2)
    if removalExit {
      #expect(summary(applied.events) == ["exit B (removed)"])
      #expect(applied.events.first?.time == 150)
      #expect(applied.events.first?.deviceID == "dev1")
    } else {
      #expect(applied.events.isEmpty)
    }
    #expect(monitor.geofence(id: "A")?.name == "Alpha 2")
    #expect(monitor.insideIDs(device: "dev1") == ["A", "C"])

    // Next fix: C (moved away) is re-evaluated and exits; D (moved onto the device) enters;
    // A neither enters again nor exits.
    #expect(summary(monitor.process(try fix(200))) == ["exit C", "enter D"])
    #expect(monitor.insideIDs(device: "dev1") == ["A", "D"])
    // A dwells on the timer of its original ENTER (t = 0), not of the sync.
    let dwell = monitor.process(try fix(300))
    #expect(summary(dwell) == ["dwell A"])
    #expect(dwell.first?.dwellSeconds == 300)
    #expect(summary(monitor.process(try fix(500))) == ["dwell D"])
  }

  @Test func nameOnlyChangeDoesNotRebuildTheIndex() throws {
    let a = try geofence("A", Self.here.lat, Self.here.lon, radius: 200, name: "x")
    let monitor = GeofenceMonitor(geofences: [a, try geofence("Z", 0, 0)])
    _ = monitor.process(try fix(0))
    let renamed = try geofence("A", Self.here.lat, Self.here.lon, radius: 200, name: "y")
    let report = monitor.replace(with: [renamed, try geofence("Z", 0, 0)], at: 10)
    #expect(!report.rebuiltIndex)
    #expect(monitor.geofence(id: "A")?.name == "y")
    #expect(monitor.insideIDs(device: "dev1") == ["A"])
    #expect(monitor.process(try fix(20)).isEmpty)
  }

  @Test func devicesKeepSeparateStatesAcrossAnApply() throws {
    let a = try geofence("A", Self.here.lat, Self.here.lon, radius: 200)
    let far = try geofence("F", 10, 10, radius: 200)
    let monitor = GeofenceMonitor(geofences: [a, far])
    _ = monitor.process(try fix(0, device: "in"))
    _ = monitor.process(
      LocationFix(coordinate: try Coordinate(latitude: 0, longitude: 0), time: 0, deviceID: "out"))
    let added = try geofence("N", 0, 0, radius: 100)
    _ = monitor.replace(with: [a, far, added], at: 5)
    #expect(monitor.insideIDs(device: "in") == ["A"])
    #expect(monitor.insideIDs(device: "out") == [])
    #expect(
      summary(
        monitor.process(
          LocationFix(
            coordinate: try Coordinate(latitude: 0, longitude: 0), time: 10, deviceID: "out"))) == [
          "enter N"
        ])
    #expect(monitor.process(try fix(10, device: "in")).isEmpty)
  }
}
