import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// SIGTERM and SIGINT stop `stream` as the end of its input does: the fixes read are taken,
/// their events written, the state checkpointed, the summary printed, exit status 0; a
/// restart on the same input skips them as already seen.
@Suite(.waitsOnChildProcesses) struct StreamStopTests {
  @Test(arguments: [SIGTERM, SIGINT])
  func aStopSignalEndsTheStreamAsTheEndOfItsInput(signal stop: Int32) throws {
    let dir = try CLI.scratch("stream-stop")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let state = dir.appendingPathComponent("state").path
    let lines = (0..<30).map { s in
      #"{"device_id":"d1","time":\#(1_796_014_800 + s * 10),"latitude":0,"longitude":\#(CLI.equatorFixEast(s))}"#
    }
    let process = Process()
    process.executableURL = CLI.executable
    process.arguments = ["stream", "--regions", regions, "--state", state]
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    // A line cut short is not taken.
    input.fileHandleForWriting.write(Data(#"{"device_id":"d1","time":1796015"#.utf8))
    Thread.sleep(forTimeInterval: 0.5)
    kill(process.processIdentifier, stop)
    let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    try? input.fileHandleForWriting.close()
    #expect(process.terminationReason == .exit)
    #expect(process.terminationStatus == 0, "\(err)")
    #expect(err.contains("stopped by a signal"), "\(err)")
    #expect(err.contains("stream: 30 lines, 30 fixes"), "\(err)")
    // The same events as the whole input streamed to its end.
    let whole = try CLI.run(
      ["stream", "--regions", regions], input: Data((lines.joined(separator: "\n") + "\n").utf8))
    #expect(CLI.lines(out) == CLI.lines(whole.stdout))
    #expect(!CLI.lines(out).isEmpty)
    let again = try CLI.run(
      ["stream", "--regions", regions, "--state", state],
      input: Data((lines.joined(separator: "\n") + "\n").utf8))
    #expect(again.stdout.isEmpty)
    #expect(again.stderr.contains("30 already seen"), "\(again.stderr)")
  }

  /// Removals come from syncs: --exit-on-removal without --server is a usage error.
  @Test func exitOnRemovalNeedsAServer() throws {
    let dir = try CLI.scratch("exit-on-removal")
    defer { try? FileManager.default.removeItem(at: dir) }
    let r = try CLI.run(
      ["stream", "--regions", try CLI.writeEquatorGeofences(in: dir), "--exit-on-removal"],
      input: Data())
    #expect(r.status == 64, "\(r.stderr)")
  }
}
