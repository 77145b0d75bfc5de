import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The built `geofence` binary (beside the test bundle, else in `.build/debug`).
private let geofenceBinary: URL = {
  let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("geofence")
  if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
  return TestPaths.packageRoot.appendingPathComponent(".build/debug/geofence")
}()

/// Runs the binary to completion: exit status, standard output, standard error.
@discardableResult
private func geofence(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
  let p = Process()
  p.executableURL = geofenceBinary
  p.arguments = arguments
  let out = Pipe()
  let err = Pipe()
  p.standardOutput = out
  p.standardError = err
  try p.run()
  let outData = out.fileHandleForReading.readDataToEndOfFile()
  let errData = err.fileHandleForReading.readDataToEndOfFile()
  p.waitUntilExit()
  return (
    p.terminationStatus, String(decoding: outData, as: UTF8.self),
    String(decoding: errData, as: UTF8.self)
  )
}

private func temporaryDirectory() -> URL {
  let url = TestScratch.root.appendingPathComponent(
    "crash-tests-\(UUID().uuidString)")
  try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

/// Regions of radius 100 m every 1,000 m along the equator, and tracks walking east through
/// them, one fix every 100 m and 10 s: one ENTER and one EXIT per region. Track `k` covers
/// regions `k·perTrack ..< (k+1)·perTrack`.
private func writeFixture(in directory: URL, regions count: Int, tracks: Int = 1) throws -> (
  regions: String, tracks: [String]
) {
  let metersPerDegree = Double.pi / 180 * 6_371_008.8
  var regions: [String] = []
  for i in 0..<count {
    let lon = Double(i) * 1_000 / metersPerDegree
    regions.append(#"{"id":"r\#(i)","latitude":0,"longitude":\#(lon),"radius":100}"#)
  }
  let r = directory.appendingPathComponent("regions.json")
  try ("[" + regions.joined(separator: ",\n") + "]").write(to: r, atomically: true, encoding: .utf8)
  let perTrack = count / tracks
  var paths: [String] = []
  for k in 0..<tracks {
    var track = "time,latitude,longitude\n"
    for s in (k * perTrack * 10)..<((k + 1) * perTrack * 10 + (k == tracks - 1 ? 5 : 0)) {
      let meters = Double(s) * 100 - 300
      track += "\(1_796_014_800 + s * 10),0,\(meters / metersPerDegree)\n"
    }
    let t = directory.appendingPathComponent("track\(k).csv")
    try track.write(to: t, atomically: true, encoding: .utf8)
    paths.append(t.path)
  }
  return (r.path, paths)
}

@Suite(.waitsOnChildProcesses) struct OutboxCommandTests {
  @Test(arguments: [
    ["run"], ["run", "--store", "/tmp/x", "--key", "k", "--regions", "r.json", "t.csv"],
    ["run", "--server", "ftp://x", "--key", "k", "--store", "/tmp/x", "--regions", "r", "t"],
    ["run", "--key", "k", "--store", "/tmp/x", "t.csv"],
    [
      "run", "--server", "http://127.0.0.1:1", "--key", "k", "--store", "/tmp/x", "--regions", "r",
      "--batch-size", "501", "t",
    ],
    ["run", "--store", "/tmp/x", "--destination", "webhook=http://h/x", "--regions", "r", "t"],
    [
      "run", "--store", "/tmp/x", "--destination", "webhook=ftp://h/x", "--webhook-secret", "s",
      "--regions", "r", "t",
    ],
    ["run", "--store", "/tmp/x", "--destination", "kafka", "--regions", "r", "t"],
    ["run", "--store", "/tmp/x", "--destination", "file=", "--regions", "r", "t"],
    [
      "run", "--store", "/tmp/x", "--destination", "stdout", "--flush-count", "0", "--regions",
      "r", "t",
    ],
    [
      "run", "--store", "/tmp/x", "--destination", "stdout", "--destination", "stdout", "--regions",
      "r", "t",
    ],
    [
      "run", "--store", "/tmp/x", "--destination", "file=/tmp/a.jsonl", "--destination",
      "file=/tmp/../tmp/a.jsonl", "--regions", "r", "t",
    ],
    [
      "run", "--store", "/tmp/x", "--destination", "webhook=http://h/x", "--destination",
      "webhook=http://h/x", "--webhook-secret", "s", "--regions", "r", "t",
    ],
    [
      "run", "--store", "/tmp/x", "--destination", "webhook=http://127.0.0.1:99999/x",
      "--webhook-secret", "s", "--regions", "r", "t",
    ],
    ["run", "--store", "/tmp/x", "--destination", "file=/tmp", "--regions", "r", "t"],
    [
      "run", "--store", "/tmp/x", "--destination", "stdout", "--webhook-secret", "s", "--regions",
      "r", "t",
    ],
    [
      "run", "--store", "/tmp/x", "--destination", "stdout", "--file-max-bytes", "9", "--regions",
      "r", "t",
    ],
    ["run", "--store", "/tmp/x", "--destination", "stdout", "--user", "  ", "--regions", "r", "t"],
    [
      "run", "--store", "/tmp/x", "--destination", "stdout", "--user", "a\tb", "--regions", "r",
      "t",
    ],
    [
      "run", "--store", "/tmp/x", "--destination", "stdout", "--user",
      String(repeating: "u", count: 129), "--regions", "r", "t",
    ],
    ["outbox"], ["outbox", "--store", "/tmp/x", "extra"], ["outbox", "--bogus"],
    ["upload", "--store", "/tmp/x"], ["upload", "--server", "http://h", "--store", "/tmp/x"],
    ["upload", "--server", "http://h", "--key", "k", "--store", "/tmp/x", "--timeout", "0"],
  ])
  func usageErrorsExit64(arguments: [String]) throws {
    let r = try geofence(arguments)
    #expect(r.status == 64, "\(arguments): \(r.err)")
    #expect(r.err.contains("--help"))
  }

  @Test(arguments: ["run", "outbox", "upload"])
  func helpExits0(command: String) throws {
    let r = try geofence([command, "--help"])
    #expect(r.status == 0 && r.out.hasPrefix("usage: geofence \(command)"))
  }

  @Test func unreachableServerKeepsEventsQueuedAndExits75() throws {
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 3)
    let store = dir.appendingPathComponent("store").path
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    let r = try geofence([
      "run", "--server", "http://127.0.0.1:9", "--key", "k", "--store", store, "--no-dwell",
      "--max-attempts", "1", "--timeout", "2", "--regions", regions, tracks[0],
    ])
    #expect(r.status == 75, "\(r.err)")
    let counts = try geofence(["outbox", "--store", store])
    #expect(counts.out.contains("pending       6"), "\(counts.out)")
  }

  /// The file and standard-output destinations, without a server: both get the same 6
  /// events (3 regions, ENTER and EXIT each) in the same order, once; a second run of the
  /// same track adds nothing to either (the ids are known).
  @Test func fileAndStdoutDestinationsGetEveryEventOnce() throws {
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 3)
    let store = dir.appendingPathComponent("store").path
    let file = dir.appendingPathComponent("events.jsonl").path
    let arguments = [
      "run", "--store", store, "--destination", "file=\(file)", "--destination", "stdout",
      "--sessions", "--no-dwell", "--regions", regions, tracks[0],
    ]
    let r = try geofence(arguments)
    #expect(r.status == 0, "\(r.err)")
    let stdoutLines = r.out.split(separator: "\n").map(String.init)
    let fileLines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
      .map(String.init)
    #expect(stdoutLines.count == 6 && stdoutLines == fileLines)
    let objects = try stdoutLines.map {
      try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
    }
    #expect(
      objects.map { $0["type"] as? String } == ["enter", "exit", "enter", "exit", "enter", "exit"])
    #expect(objects.map { $0["geofence_id"] as? String } == ["r0", "r0", "r1", "r1", "r2", "r2"])
    // One session (the run lasts seconds), events 1...6.
    #expect(objects.map { $0["event_index"] as? Int } == [1, 2, 3, 4, 5, 6])
    #expect(Set(objects.map { $0["session_index"] as? Int }) == [1])
    #expect(r.err.contains("delivery file:\(file): 1 batches; delivered 6"), "\(r.err)")
    #expect(r.err.contains("delivery stdout: 1 batches; delivered 6"), "\(r.err)")
    let again = try geofence(arguments)
    #expect(again.status == 0 && again.out.isEmpty, "\(again.err)")
    #expect(try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").count == 6)
  }

  /// Cursors are named by what they deliver to: a later run with the destinations in another
  /// order continues each from its own place; a destination left out keeps its events, with
  /// a warning, until it is given again or forgotten.
  @Test func cursorsFollowTheirDestinationNotTheirPlaceOnTheCommandLine() throws {
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 6, tracks: 2)
    let store = dir.appendingPathComponent("store").path
    let a = dir.appendingPathComponent("a.jsonl").path
    let b = dir.appendingPathComponent("b.jsonl").path
    let common = ["--no-dwell", "--regions", regions]
    let first = try geofence(
      ["run", "--store", store, "--destination", "file=\(a)"] + common + [tracks[0]])
    #expect(first.status == 0, "\(first.err)")
    // The second track through a, b and a webhook nobody answers (port 9, one attempt).
    let hook = "http://127.0.0.1:9/hook"
    let second = try geofence(
      [
        "run", "--store", store, "--destination", "webhook=\(hook)", "--webhook-secret", "s",
        "--max-attempts", "1", "--timeout", "2", "--destination", "file=\(b)", "--destination",
        "file=\(a)",
      ] + common + [tracks[1]])
    #expect(second.status == 75, "\(second.err)")
    let lines = { (path: String) in
      (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").count ?? -1
    }
    // a: 6 events of each track, b: the 6 of the second (it started then), each once.
    #expect(lines(a) == 12)
    #expect(lines(b) == 6)
    let json = try geofence(["outbox", "--store", store, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
    let destinations = object?["destinations"] as? [String: [String: Int]]
    #expect(Set(destinations?.keys ?? [:].keys) == ["file:\(a)", "file:\(b)", "webhook:\(hook)"])
    #expect(destinations?["webhook:\(hook)"]?["pending"] == 6)
    #expect(destinations?["file:\(a)"]?["delivered"] == 12)
    // Left out: a warning, the events kept.
    let third = try geofence(
      ["run", "--store", store, "--destination", "file=\(b)", "--destination", "file=\(a)"]
        + common + [tracks[0]])
    #expect(third.status == 0, "\(third.err)")
    #expect(
      third.err.contains(
        "warning: destination webhook:\(hook) is not given in this run and holds 6 events"),
      "\(third.err)")
    #expect(lines(a) == 12 && lines(b) == 6)
    let unknown = try geofence(["outbox", "--store", store, "--forget-destination", "nope"])
    #expect(unknown.status == 64, "\(unknown.err)")
    let forgot = try geofence(
      ["outbox", "--store", store, "--forget-destination", "webhook:\(hook)", "--json"])
    #expect(forgot.status == 0, "\(forgot.err)")
    #expect(forgot.err.contains("forgot destination webhook:\(hook) (6 events"), "\(forgot.err)")
    let after = try JSONSerialization.jsonObject(with: Data(forgot.out.utf8)) as? [String: Any]
    #expect(after?["pending"] as? Int == 0)
    #expect(
      (after?["destinations"] as? [String: Any])?.keys.sorted() == ["file:\(a)", "file:\(b)"])
  }

  /// Standard output that cannot be written (a full disk) stops that destination with the
  /// system's reason; the events stay queued (exit 75), and nothing crashes.
  @Test func aFailingStandardOutputKeepsTheEventsQueued() throws {
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 3)
    let store = dir.appendingPathComponent("store").path
    let (status, err) = try CLI.runWithFullStandardOutput([
      "run", "--store", store, "--destination", "stdout", "--no-dwell", "--regions", regions,
      tracks[0],
    ])
    #expect(status == 75, "\(err)")
    #expect(err.contains("cannot write to standard output: No space left on device"), "\(err)")
    let counts = try geofence(["outbox", "--store", store])
    #expect(counts.out.contains("destination stdout: pending 6"), "\(counts.out)")
  }

  @Test func anUnusableStoreIsNamedAndExits73() throws {
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 3)
    let file = dir.appendingPathComponent("plain-file").path
    try "x".write(toFile: file, atomically: true, encoding: .utf8)
    for (store, message) in [
      (file, "geofence run: --store \(file): exists and is not a directory"),
      (file + "/store", "geofence run: --store \(file + "/store"): \(file) is not a directory"),
    ] {
      let r = try geofence([
        "run", "--store", store, "--destination", "stdout", "--regions", regions, tracks[0],
      ])
      #expect(r.status == 73, "\(r.err)")
      #expect(r.err.hasPrefix(message), "\(r.err)")
      #expect(r.out.isEmpty)
    }
  }

  @Test func outboxOfAMissingStoreExits66() throws {
    let r = try geofence([
      "outbox", "--store", temporaryDirectory().appendingPathComponent("no").path,
    ])
    #expect(r.status == 66)
  }

  @Test func runWithoutUploadFillsTheOutboxAndAuthTimelineGates() throws {
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 6)
    let track = tracks[0]
    // Fix s is at 100·s − 300 m east, time 10·s. Monitoring is off from 200 s (fix 20, 1,700 m)
    // until 325 s: fixes 20-32 are dropped, so r2 (inside at fixes 22-24) is never entered,
    // and r3's ENTER comes at fix 33 (3,000 m), flagged after the gap.
    let auth = dir.appendingPathComponent("auth.csv")
    try """
    time,status,accuracy,app_state,consent,registered
    2026-11-30T05:03:20Z,denied,full,background,true,true
    2026-11-30T05:05:25Z,authorizedAlways,full,background,true,true
    """.write(to: auth, atomically: true, encoding: .utf8)
    let store = dir.appendingPathComponent("store").path
    let r = try geofence([
      "run", "--no-upload", "--store", store, "--auth", auth.path, "--no-dwell", "--regions",
      regions, track,
    ])
    #expect(r.status == 0, "\(r.err)")
    #expect(r.err.contains("notAuthorized 13 (authorizationDenied 13)"), "\(r.err)")
    #expect(r.err.contains("after a gap 1 (gaps 1)"), "\(r.err)")
    let counts = try geofence(["outbox", "--store", store, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(counts.out.utf8)) as? [String: Any]
    // 6 regions, r2 skipped: 5 ENTER + 5 EXIT.
    #expect(
      object?["pending"] as? Int == 10 && object?["in_flight"] as? Int == 0,
      "\(counts.out) \(r.err)")
  }
}

/// SIGKILLs `geofence run` and `geofence upload` at seeded random moments while they upload,
/// restarts, and checks that the server ends with every event exactly once and the outbox
/// empty.
@Suite(
  .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
struct CrashRecoveryTests {
  @Test func everyEventReachesTheServerExactlyOnceDespiteKills() async throws {
    let seed: UInt64 = 20_261_130
    var random = SeededGenerator(seed: seed)
    let server = try await ReferenceServer.start(keys: ["crash", "reference"])
    defer { server.stop() }
    let dir = temporaryDirectory()
    let (regions, tracks) = try writeFixture(in: dir, regions: 120, tracks: 6)
    func runArguments(store: String, key: String, tracks: [String]) -> [String] {
      [
        "run", "--server", server.baseURL.absoluteString, "--key", key, "--store", store,
        "--batch-size", "2", "--no-dwell", "--quiet", "--regions", regions,
      ] + tracks
    }
    let store = dir.appendingPathComponent("crash").path
    let uploadArguments = [
      "upload", "--server", server.baseURL.absoluteString, "--key", "crash", "--store", store,
      "--batch-size", "2", "--quiet",
    ]

    // Every upload is committed, then answered 40 ms late: a run spends most of its time
    // between a commit and the answer to it, the moment a kill is most likely to break
    // exactly-once delivery, and a track's run lasts long enough to be killed reliably.
    try await server.armFault([
      "path": "/v1/events", "kind": "timeout", "delay_s": 0.04, "count": 1_000_000,
    ])

    // The reference: a clean run of each track, timed.
    var durations: [Double] = []
    for track in tracks {
      let started = Date()
      let clean = try geofence(
        runArguments(
          store: dir.appendingPathComponent("ref").path, key: "reference", tracks: [track]))
      durations.append(Date().timeIntervalSince(started))
      #expect(clean.status == 0, "\(clean.err)")
    }
    let expected = try await eventKeys(server, key: "reference")
    #expect(expected.count == 240)
    let cleanSeconds = durations.reduce(0, +)
    // The shortest clean run: with 20 answers 40 ms late it lasts at least 0.8 s, so the
    // load of the rest of the test run changes it little.
    let perTrackSeconds = durations.min() ?? 1

    // Track by track: `run` (or, after a kill, sometimes `upload` first) killed at a random
    // moment until one completes; then the next track. Once every track is done, runs of
    // random tracks again (the same fixes make the same ids) until 12 kills have landed.
    // Bounded by rounds, not wall time: between rounds the test waits on the reference
    // server, which on a loaded test run can take seconds.
    var kills = 0
    var killedDuringUpload = 0
    var next = 0
    var rounds = 0
    while (next < tracks.count || kills < 12) && rounds < 400 {
      rounds += 1
      let p = Process()
      p.executableURL = geofenceBinary
      let uploadOnly = kills > 0 && Bool.random(using: &random)
      let track = next < tracks.count ? next : Int.random(in: 0..<tracks.count, using: &random)
      p.arguments =
        uploadOnly
        ? uploadArguments : runArguments(store: store, key: "crash", tracks: [tracks[track]])
      p.standardOutput = FileHandle.nullDevice
      p.standardError = FileHandle.nullDevice
      let receipts = try await server.events(key: "crash")["delivery_count"] as? Int ?? 0
      // A random moment within a clean run's time: until 25 kills most rounds are killed,
      // then most complete; a round that finishes first completes its track. The wait
      // blocks this thread on purpose: an async sleep can wake late when the test run's
      // threads are all busy.
      let delay = Double.random(
        in: 0.005...((kills < 25 ? 0.5 : 3) * perTrackSeconds), using: &random)
      let started = Date()
      try p.run()
      let until = started.addingTimeInterval(delay)
      while p.isRunning && Date() < until { usleep(2_000) }
      if p.isRunning {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        kills += 1
        let after = try await server.events(key: "crash")["delivery_count"] as? Int ?? 0
        if after > receipts { killedDuringUpload += 1 }
      } else {
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "seed \(seed)")
        if !uploadOnly && track == next { next += 1 }
      }
    }
    #expect(next == tracks.count, "seed \(seed): \(rounds) rounds completed \(next) tracks")
    #expect(kills >= 12, "seed \(seed): only \(kills) kills landed in \(rounds) rounds")

    // Restart: every track once more (the same fixes make the same ids) and an upload.
    let restart = Date()
    let final = try geofence(runArguments(store: store, key: "crash", tracks: tracks))
    let restartSeconds = Date().timeIntervalSince(restart)
    #expect(final.status == 0, "seed \(seed): \(final.err)")
    #expect(try geofence(uploadArguments).status == 0)

    let report = try await server.events(key: "crash")
    let stored = try await eventKeys(server, key: "crash")
    #expect(stored.sorted() == expected.sorted(), "seed \(seed)")
    #expect(report["event_count"] as? Int == expected.count, "seed \(seed)")
    let counts = try geofence(["outbox", "--store", store, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(counts.out.utf8)) as? [String: Any]
    #expect(
      object?["pending"] as? Int == 0 && object?["in_flight"] as? Int == 0
        && object?["dead_letters"] as? Int == 0, "\(counts.out)")
    print(
      "crash test (seed \(seed)): \(rounds) rounds, \(kills) kills (\(killedDuringUpload) "
        + "mid-upload), \(report["event_count"] ?? 0) events stored once, "
        + "\(report["delivery_count"] ?? 0) receipts (clean run: 240); clean runs "
        + String(format: "%.2f s (shortest %.2f s per track)", cleanSeconds, perTrackSeconds)
        + ", final pass over every track "
        + String(format: "%.2f s", restartSeconds))
  }

  /// `run` delivering to the server's batch API and to a webhook at once, SIGKILLed at seeded
  /// random moments, then run again to the end: each destination ends with every event
  /// exactly once by id (the receivers deduplicate by id, so a resend after a kill is a
  /// duplicate receipt, never a second event), and both cursors have passed every event.
  @Test func twoDestinationsEachGetEveryEventOnceDespiteKills() async throws {
    let seed: UInt64 = 20_261_202
    var random = SeededGenerator(seed: seed)
    let secret = "kill-test-secret"
    let server = try await ReferenceServer.start(
      keys: ["two"], arguments: ["--webhook-secret", secret])
    defer { server.stop() }
    let dir = temporaryDirectory()
    // 60 regions over 3 tracks: 20 regions per track, one ENTER and one EXIT each.
    let (regions, tracks) = try writeFixture(in: dir, regions: 60, tracks: 3)
    let store = dir.appendingPathComponent("store").path
    func runArguments(_ tracks: [String]) -> [String] {
      [
        "run", "--server", server.baseURL.absoluteString, "--key", "two", "--store", store,
        "--destination", "server", "--destination",
        "webhook=\(server.baseURL.absoluteString)/v1/webhook", "--webhook-secret", secret,
        "--batch-size", "2", "--no-dwell", "--quiet", "--regions", regions,
      ] + tracks
    }
    // Both receivers commit, then answer 40 ms late: most of a run is spent between a
    // receiver's commit and its answer, where a kill makes a resend.
    for path in ["/v1/events", "/v1/webhook"] {
      try await server.armFault([
        "path": path, "kind": "timeout", "delay_s": 0.04, "count": 1_000_000,
      ])
    }
    func webhookReport() async throws -> [String: Any] {
      let (status, body) = try await server.request("GET", "/admin/webhook")
      #expect(status == 200)
      return try JSONSerialization.jsonObject(with: body) as? [String: Any] ?? [:]
    }
    // Bounded by rounds, not wall time: a loaded machine only makes rounds slower.
    var kills = 0
    var next = 0
    var rounds = 0
    while (next < tracks.count || kills < 6) && rounds < 200 {
      rounds += 1
      let track = next < tracks.count ? next : Int.random(in: 0..<tracks.count, using: &random)
      let p = Process()
      p.executableURL = geofenceBinary
      p.arguments = runArguments([tracks[track]])
      p.standardOutput = FileHandle.nullDevice
      p.standardError = FileHandle.nullDevice
      // 40 events of a track: 20 batches and 40 webhook posts, each answered 40 ms late, so
      // a clean run lasts at least 2.4 s; most kills land while both are delivering.
      let delay = Double.random(in: 0.3...(kills < 10 ? 2.5 : 8), using: &random)
      let until = Date().addingTimeInterval(delay)
      try p.run()
      while p.isRunning && Date() < until { usleep(2_000) }
      if p.isRunning {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        kills += 1
      } else {
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "seed \(seed)")
        if track == next { next += 1 }
      }
    }
    #expect(next == tracks.count, "seed \(seed): \(rounds) rounds completed \(next) tracks")
    #expect(kills >= 6, "seed \(seed): only \(kills) kills landed in \(rounds) rounds")
    let final = try geofence(runArguments(tracks))
    #expect(final.status == 0, "seed \(seed): \(final.err)")

    let uploaded = try await server.events(key: "two")
    let hooked = try await webhookReport()
    let serverIDs = (uploaded["events"] as? [[String: Any]] ?? []).compactMap {
      $0["id"] as? String
    }
    let webhookIDs = (hooked["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    // 60 regions, one ENTER and one EXIT each: 120 events, each stored once by each receiver.
    #expect(serverIDs.count == 120 && Set(serverIDs).count == 120, "seed \(seed)")
    #expect(webhookIDs.count == 120 && Set(webhookIDs) == Set(serverIDs), "seed \(seed)")
    #expect(hooked["refused_count"] as? Int == 0, "every signature verified")
    let counts = try geofence(["outbox", "--store", store, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(counts.out.utf8)) as? [String: Any]
    #expect(
      object?["pending"] as? Int == 0 && object?["in_flight"] as? Int == 0
        && object?["dead_letters"] as? Int == 0, "\(counts.out)")
    print(
      "two-destination crash test (seed \(seed)): \(rounds) rounds, \(kills) kills; server "
        + "\(uploaded["event_count"] ?? 0) events from \(uploaded["delivery_count"] ?? 0) receipts, "
        + "webhook \(hooked["event_count"] ?? 0) events from \(hooked["delivery_count"] ?? 0) receipts"
    )
  }

  /// (type, geofence, time) of each stored event; ids differ between stores (device ids).
  private func eventKeys(_ server: ReferenceServer, key: String) async throws -> [String] {
    let events = try await server.events(key: key)["events"] as? [[String: Any]] ?? []
    return events.map { e in
      let event = e["event"] as? [String: Any] ?? [:]
      return "\(event["type"] ?? "") \(event["geofence_id"] ?? "") \(event["time"] ?? "")"
    }
  }
}
