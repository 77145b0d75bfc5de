import Foundation
import GeofenceTestSupport
import Testing

/// `run` and `upload` with a small `--file-max-bytes`: a run flushes many times
/// (`--flush-count 1`: after every event), and no flush of it rotates away a file an earlier
/// one wrote. It stops with 75, the rest queued; a reader that takes the files between
/// `upload`s gets every event of an uncapped run exactly once.
@Suite(.waitsOnChildProcesses) struct FileRotationRunTests {
  @Test func aRunNeverRotatesAwayAFileItWrote() throws {
    let dir = try CLI.scratch("file-rotation-run")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = "data/places/rg_cities1000_geofences.csv"
    let track = "data/tracks/csv/posmo_trajectory.csv"
    func ids(_ paths: [String], cap: Int = .max) throws -> [String] {
      var out: [String] = []
      for path in paths where FileManager.default.fileExists(atPath: path) {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(text.utf8.count <= cap || lines.count == 1, "\(path): \(text.utf8.count) bytes")
        for line in lines {
          let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
          out.append(object?["id"] as? String ?? "?")
        }
      }
      return out
    }
    // The oracle: the same run without a cap, into one file.
    let whole = dir.appendingPathComponent("whole.jsonl").path
    let reference = try CLI.run([
      "run", "--quiet", "--store", dir.appendingPathComponent("whole").path, "--destination",
      "file=\(whole)", "--radius", "1500", "--regions", regions, track,
    ])
    #expect(reference.status == 0, "\(reference.stderr)")
    let expected = try ids([whole])
    #expect(expected.count > 30 && Set(expected).count == expected.count)

    let store = dir.appendingPathComponent("store").path
    let file = dir.appendingPathComponent("out.jsonl").path
    let files = (1...5).reversed().map { "\(file).\($0)" } + [file]
    let capped = try CLI.run([
      "run", "--quiet", "--store", store, "--destination", "file=\(file)", "--file-max-bytes",
      "600", "--flush-count", "1", "--radius", "1500", "--regions", regions, track,
    ])
    #expect(capped.status == 75, "\(capped.stderr)")
    #expect(capped.stderr.contains("written by this delivery"), "\(capped.stderr)")
    var read = try ids(files, cap: 600)
    #expect(read == Array(expected.prefix(read.count)))
    // A reader takes the files; each upload writes the next ones.
    var uploads = 0
    while uploads < 20 {
      for path in files { try? FileManager.default.removeItem(atPath: path) }
      let upload = try CLI.run([
        "upload", "--store", store, "--destination", "file=\(file)", "--file-max-bytes", "600",
      ])
      uploads += 1
      read += try ids(files, cap: 600)
      if upload.status == 0 { break }
      #expect(upload.status == 75, "\(upload.stderr)")
    }
    #expect(read == expected)
  }
}
