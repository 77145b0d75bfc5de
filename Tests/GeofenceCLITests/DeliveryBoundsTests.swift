import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Delivery's bounds: `upload --deadline` holds for a webhook as for the server, one process
/// at a time delivers from a store, and a run's events never go out under another account's
/// key, whichever destinations it names.
@Suite(.waitsOnChildProcesses) struct DeliveryBoundsTests {
  /// A TCP listener that accepts connections and never answers (a hung webhook), on a port
  /// of its own; stopped by `stop()`.
  final class SilentListener {
    let process = Process()
    let port: Int

    init() throws {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = [
        "python3", "-c",
        "import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen(64)\n"
          + "print(s.getsockname()[1], flush=True)\nkept = []\n"
          + "while True:\n    c, _ = s.accept()\n    kept.append(c)\n",
      ]
      let out = Pipe()
      process.standardOutput = out
      try process.run()
      var line = Data()
      while !line.contains(10) {
        let chunk = out.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
      }
      port =
        Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        ?? 0
    }

    /// SIGKILL: a test's children may inherit a blocked SIGTERM.
    func stop() {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  /// A store whose 8 equator events are queued for a webhook at `url` (the run gives up at
  /// once: one attempt of 1 s).
  func storeWithEventsFor(_ url: String, in dir: URL) throws -> String {
    let store = dir.appendingPathComponent("store").path
    let run = try CLI.run([
      "run", "--store", store, "--destination", "webhook=" + url, "--webhook-secret", "s",
      "--max-attempts", "1", "--timeout", "1", "--deadline", "1", "--regions",
      try CLI.writeEquatorGeofences(in: dir), try CLI.writeEquatorTrack(in: dir),
    ])
    #expect(run.status == 75, "\(run.stderr)")
    return store
  }

  @Test(.enabled(if: CLI.hasPython, "python3"))
  func uploadToAHungWebhookEndsWithinItsDeadline() throws {
    let listener = try SilentListener()
    defer { listener.stop() }
    #expect(listener.port > 0)
    let dir = try CLI.scratch("upload-deadline")
    defer { try? FileManager.default.removeItem(at: dir) }
    let url = "http://127.0.0.1:\(listener.port)/hook"
    let store = try storeWithEventsFor(url, in: dir)
    // Each request may take 30 s and is tried 8 times; the whole command, 2 s.
    let start = Date()
    let upload = try CLI.run([
      "upload", "--store", store, "--destination", "webhook=" + url, "--webhook-secret", "s",
      "--timeout", "30", "--max-attempts", "8", "--deadline", "2",
    ])
    let elapsed = Date().timeIntervalSince(start)
    #expect(upload.status == 75, "\(upload.stderr)")
    #expect(elapsed < 10, "upload took \(elapsed) s with --deadline 2")
  }

  @Test(.enabled(if: CLI.hasPython, "python3"))
  func oneProcessAtATimeDeliversFromAStore() throws {
    let listener = try SilentListener()
    defer { listener.stop() }
    let dir = try CLI.scratch("upload-lock")
    defer { try? FileManager.default.removeItem(at: dir) }
    let url = "http://127.0.0.1:\(listener.port)/hook"
    let store = try storeWithEventsFor(url, in: dir)
    // The first upload hangs on the silent webhook for up to 5 s.
    let first = Process()
    first.executableURL = CLI.executable
    first.arguments = [
      "upload", "--store", store, "--destination", "webhook=" + url, "--webhook-secret", "s",
      "--timeout", "5", "--max-attempts", "1", "--deadline", "5",
    ]
    first.standardError = FileHandle.nullDevice
    try first.run()
    defer {
      kill(first.processIdentifier, SIGKILL)
      first.waitUntilExit()
    }
    Thread.sleep(forTimeInterval: 1)
    let second = try CLI.run([
      "upload", "--store", store, "--destination", "webhook=" + url, "--webhook-secret", "s",
      "--timeout", "1", "--max-attempts", "1",
    ])
    #expect(second.status == 75, "\(second.stderr)")
    #expect(second.stderr.contains("another process delivers from"), "\(second.stderr)")
  }

  /// Events queued for the server under key A are refused to a run with key B even when the
  /// run names other destinations: its own events would join the server's queue, and go out
  /// under key A at the next upload.
  @Test func aRunWithAnotherKeyIsRefusedWhateverItsDestinations() throws {
    let dir = try CLI.scratch("run-key")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let first = try CLI.run([
      "run", "--store", store, "--server", "http://127.0.0.1:9", "--key", "key-a",
      "--no-upload", "--regions", regions, track,
    ])
    #expect(first.status == 0, "\(first.stderr)")
    let other = try CLI.run([
      "run", "--store", store, "--server", "http://127.0.0.1:9", "--key", "key-b",
      "--destination", "stdout", "--regions", regions, track,
    ])
    #expect(other.status == 77, "\(other.stderr)")
    #expect(other.stdout.isEmpty)
    #expect(other.stderr.contains("the outbox holds events of another account"), "\(other.stderr)")
    // The refused run changed nothing: no cursor of its destination.
    let outbox = try CLI.run(["outbox", "--store", store])
    #expect(!outbox.stdout.contains("stdout") && !outbox.stderr.contains("stdout"), "\(outbox)")
  }
}

extension DeliveryBoundsTests {
  /// `outbox --forget-destination` takes a webhook as --destination gave it (the URL with
  /// its password and query token), not only as the listing shows it.
  @Test func aWebhookIsForgottenByTheURLItWasGivenWith() throws {
    let dir = try CLI.scratch("forget-raw")
    defer { try? FileManager.default.removeItem(at: dir) }
    let url = "http://user:pw@127.0.0.1:9/h?token=TOKSECRET&a=b"
    let store = try storeWithEventsFor(url, in: dir)
    let forgot = try CLI.run(["outbox", "--store", store, "--forget-destination", "webhook=" + url])
    #expect(forgot.status == 0, "\(forgot.stderr)")
    #expect(forgot.stderr.contains("forgot destination webhook:"), "\(forgot.stderr)")
    #expect(!forgot.stderr.contains("TOKSECRET") && !forgot.stderr.contains("pw@"))
    let listed = try CLI.run(["outbox", "--store", store])
    #expect(!listed.stdout.contains("webhook:"), "\(listed.stdout)")
  }
}

extension DeliveryBoundsTests {
  /// Events evicted to keep the outbox within --capacity are never delivered: the run says how
  /// many, even with --quiet.
  @Test func eventsEvictedOverTheCapacityAreNamed() throws {
    let dir = try CLI.scratch("evicted")
    defer { try? FileManager.default.removeItem(at: dir) }
    let run = try CLI.run([
      "run", "--store", dir.appendingPathComponent("store").path, "--destination", "stdout",
      "--capacity", "3", "--quiet", "--regions", try CLI.writeEquatorGeofences(in: dir),
      try CLI.writeEquatorTrack(in: dir),
    ])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(CLI.lines(run.stdout).count == 3)
    #expect(
      run.stderr.contains("warning: 5 events were evicted from the outbox"), "\(run.stderr)")
  }
}
