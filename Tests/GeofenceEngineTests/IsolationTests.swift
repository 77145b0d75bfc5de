import Foundation
import EventOutbox
import GeofenceEngine
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import Networking
import Testing
import TrackFormats

// The engine held the two ways apps hold it: stored in an actor, and on the main actor. This
// file compiling under Swift 6's strict concurrency checking is half of the test: the
// engine's async methods run on their caller's actor (`nonisolated(nonsending)`), so
// awaiting them on an engine that an actor owns sends nothing across isolation domains.

/// The sync listing of one geofence, "cafe" (50 m at 0, 0), and a batch API that accepts
/// every event; counts the events posted. One engine's transport.
private final class CafeServer: HTTPTransport, @unchecked Sendable {
  private let lock = NSLock()
  private var posted = 0
  var eventsPosted: Int { lock.withLock { posted } }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let json = ["Content-Type": "application/json"]
    switch request.url.path {
    case "/v1/geofences":
      let body =
        #"{"version":"v1","geofences":[{"id":"cafe","latitude":0,"longitude":0,"radius":50,"#
        + #""updated_at":"2026-11-30T05:00:00.000Z"}],"next_cursor":null}"#
      return HTTPResponse(
        statusCode: 200, headers: json.merging(["ETag": "\"v1\""]) { a, _ in a },
        body: Data(body.utf8))
    case "/v1/events":
      let object = request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) }
      let ids = ((object as? [String: Any])?["events"] as? [[String: Any]] ?? [])
        .map { $0["id"] as? String ?? "" }
      lock.withLock { posted += ids.count }
      let text = try! JSONSerialization.data(
        withJSONObject: ["accepted": ids, "duplicates": [String](), "rejected": [Any]()])
      return HTTPResponse(statusCode: 200, headers: json, body: text)
    default:
      return HTTPResponse(statusCode: 404, headers: json, body: Data("{}".utf8))
    }
  }
}

/// East along the equator from -200 m to +200 m, 10 m and 10 s a step.
private let walk: [LocationFix] = (0...40).map { step in
  LocationFix(
    coordinate: Coordinate(
      uncheckedLatitude: 0, longitude: Double(step * 10 - 200) / 111_195.08),
    time: 1.8e9 + Double(step * 10), horizontalAccuracy: 5)
}

/// An engine syncing from `server`, uploading to it and writing a JSON Lines file.
private func makeEngine(directory: String, server: CafeServer) throws -> GeofenceEngine {
  let base = URL(string: "http://engine.test")!
  return try GeofenceEngine(
    configuration: .init(
      outbox: .init(), upload: .init(server: base, apiKey: "k1"),
      sync: SyncConfiguration(baseURL: base, apiKey: "k1"),
      destinations: [.jsonLinesFile(.init(path: directory + "/events.jsonl"))]),
    storage: .directory(directory), transport: server)
}

/// What one session of an owner saw.
private struct Seen: Sendable {
  var synced = 0
  var events: [String] = []
  var replayed: [String] = []
  var uploaded = 0
}

/// Every async method of the engine, awaited by the engine's owner.
nonisolated(nonsending) private func exercise(_ engine: GeofenceEngine) async throws -> Seen {
  var seen = Seen()
  seen.synced = try await engine.sync().sync.diff.counts.added
  for fix in walk {
    for event in try engine.ingest(fix, device: "phone") { seen.events.append(event.type.rawValue) }
    _ = try await engine.deliverDue()
  }
  seen.uploaded += try await engine.sendDueBatches().accepted
  let track = TrackReadResult(
    fixes: walk.map {
      LocationFix(
        coordinate: $0.coordinate, time: $0.time! + 86_400,
        horizontalAccuracy: 5)
    },
    warnings: [], skippedRows: [], format: .csv)
  let reports = try await engine.replay([ReplayInput(file: "walk.csv", track: track)])
  seen.replayed = reports.flatMap { $0.events }.map { $0.type.rawValue }
  seen.uploaded += try await engine.flush().accepted
  _ = try await engine.deliver()
  return seen
}

/// An app's location service: an actor owning its engine.
private actor LocationService {
  let engine: GeofenceEngine
  init(directory: String, server: CafeServer) throws {
    engine = try makeEngine(directory: directory, server: server)
  }
  func run() async throws -> Seen { try await exercise(engine) }
}

/// A view model on the main actor owning its engine.
@MainActor private final class ViewModel {
  let engine: GeofenceEngine
  init(directory: String, server: CafeServer) throws {
    engine = try makeEngine(directory: directory, server: server)
  }
  func run() async throws -> Seen {
    let seen = try await exercise(engine)
    // And awaited directly from main-actor code.
    #expect(try await engine.deliver().destinations.map(\.name) == ["file"])
    return seen
  }
}

/// ENTER at 50 m west (step 15); EXIT once past 50 + 5 + 20 m east (step 28, 80 m): the walk
/// and then its replay a day later, each uploaded and written to the file once.
private func check(_ seen: Seen, server: CafeServer, directory: String) throws {
  #expect(seen.synced == 1)
  #expect(seen.events == ["enter", "exit"])
  #expect(seen.replayed == ["enter", "exit"])
  #expect(seen.uploaded == 4)
  #expect(server.eventsPosted == 4)
  let lines = try String(contentsOfFile: directory + "/events.jsonl", encoding: .utf8)
    .split(separator: "\n")
  #expect(lines.count == 4)
}

@Test func anEngineStoredInAnActorSyncsIngestsReplaysAndDelivers() async throws {
  let directory = TestScratch.root.appendingPathComponent("actor-\(UUID().uuidString)").path
  let server = CafeServer()
  let seen = try await LocationService(directory: directory, server: server).run()
  try check(seen, server: server, directory: directory)
}

@Test @MainActor func anEngineOnTheMainActorSyncsIngestsReplaysAndDelivers() async throws {
  let directory = TestScratch.root.appendingPathComponent("main-\(UUID().uuidString)").path
  let server = CafeServer()
  let seen = try await ViewModel(directory: directory, server: server).run()
  try check(seen, server: server, directory: directory)
}

/// A ``CafeServer`` whose batch API holds each request until ``release()``.
private final class HeldServer: HTTPTransport, @unchecked Sendable {
  let inner = CafeServer()
  private let lock = NSLock()
  private var held = true
  private var waiting = 0
  var requestsWaiting: Int { lock.withLock { waiting } }
  func release() { lock.withLock { held = false } }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    if request.url.path == "/v1/events" {
      lock.withLock { waiting += 1 }
      while lock.withLock({ held }) { try? await Task.sleep(nanoseconds: 5_000_000) }
      lock.withLock { waiting -= 1 }
    }
    return try await inner.send(request)
  }
}

/// An actor whose engine is in the middle of a flush while other calls reach it.
private actor Reentrant {
  let engine: GeofenceEngine
  init(directory: String, server: HeldServer) throws {
    let base = URL(string: "http://engine.test")!
    engine = try GeofenceEngine(
      configuration: .init(
        outbox: .init(), upload: .init(server: base, apiKey: "k1"),
        destinations: [.jsonLinesFile(.init(path: directory + "/events.jsonl"))]),
      storage: .directory(directory),
      geofences: [
        Geofence(
          id: "cafe", name: nil,
          region: try CircularRegion(
            center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 50))
      ], transport: server,
      // Time stands still: however long a loaded machine keeps the flush waiting, its
      // deadline (300 s on the engine's clock) never passes.
      clock: TestClock(1.8e9))
  }
  func ingest(_ fixes: ArraySlice<LocationFix>) throws -> [String] {
    try fixes.flatMap { try engine.ingest($0, device: "phone") }.map(\.type.rawValue)
  }
  func flush() async throws -> Int { try await engine.flush().accepted }
  /// What each delivery call does while the flush awaits.
  func meanwhile() async -> [String] {
    var outcomes: [String] = []
    do {
      _ = try await engine.deliver()
      outcomes.append("deliver ran")
    } catch {
      outcomes.append(
        error.description.contains("already in progress") ? "deliver refused" : "\(error)")
    }
    do {
      _ = try await engine.flush()
      outcomes.append("flush ran")
    } catch {
      outcomes.append(
        error.description.contains("already in progress") ? "flush refused" : "\(error)")
    }
    let due = try? await engine.deliverDue()
    outcomes.append(
      due == DeliveryReport() ? "deliverDue empty" : "deliverDue \(String(describing: due))")
    let batches = try? await engine.sendDueBatches()
    outcomes.append(batches == UploadReport() ? "sendDueBatches empty" : "sendDueBatches ran")
    return outcomes
  }
  func pending() throws -> Int { try engine.outbox?.counts(destination: "file").pending ?? -1 }
}

@Test func callsThatReachTheEngineWhileItsFlushAwaitsAreRefusedOrTakenAsDocumented()
  async throws
{
  let directory = TestScratch.root.appendingPathComponent("held-\(UUID().uuidString)").path
  let server = HeldServer()
  let owner = try Reentrant(directory: directory, server: server)
  #expect(try await owner.ingest(walk[0..<20]) == ["enter"])
  let flushing = Task { try await owner.flush() }
  while server.requestsWaiting == 0 { try await Task.sleep(nanoseconds: 5_000_000) }
  // The flush awaits its request: the actor takes other calls.
  #expect(
    await owner.meanwhile() == [
      "deliver refused", "flush refused", "deliverDue empty", "sendDueBatches empty",
    ])
  #expect(try await owner.ingest(walk[20...]) == ["exit"])
  server.release()
  // The flush went on to the EXIT queued while it awaited (its next batch), then wrote both
  // to the file: each event sent and written once.
  #expect(try await flushing.value == 2)
  #expect(try await owner.flush() == 0)
  #expect(server.inner.eventsPosted == 2)
  #expect(try await owner.pending() == 0)
  let lines = try String(contentsOfFile: directory + "/events.jsonl", encoding: .utf8)
    .split(separator: "\n")
  #expect(lines.count == 2)
}
