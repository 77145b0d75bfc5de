import Foundation
import Testing

@testable import TrackFormats

/// Every file under the shared data folder (which may hold files that cannot be
/// redistributed) either reads or throws a `TrackReadError`.
@Suite struct SharedTrackSurveyTests {
  @Test(.enabled(if: TrackFixtures.sharedTracks != nil))
  func everySharedTrackReadsOrThrowsTrackReadError() throws {
    guard let root = TrackFixtures.sharedTracks else { return }
    var lines: [String] = []
    for sub in ["gpx", "csv"] {
      for url in TrackFixtures.files(in: root.appendingPathComponent(sub)) {
        do {
          let r = try TrackReader.read(contentsOf: url)
          let timed = r.fixes.filter { $0.time != nil }.count
          let first = r.fixes.first.map { "\($0.coordinate) \($0.time.map(RFC3339.format) ?? "-")" }
          let last = r.fixes.last.map { "\($0.coordinate) \($0.time.map(RFC3339.format) ?? "-")" }
          lines.append(
            "OK \(sub)/\(url.lastPathComponent) \(r.format) fixes=\(r.fixes.count) timed=\(timed) warnings=\(r.warnings.count) skipped=\(r.skippedRows.count) first=\(first ?? "-") last=\(last ?? "-")"
          )
          for w in r.warnings.prefix(3) { lines.append("   W \(w)") }
          for s in r.skippedRows.prefix(3) { lines.append("   S \(s)") }
        } catch {
          lines.append("ERR \(sub)/\(url.lastPathComponent): \(error)")
        }
      }
    }
    if ProcessInfo.processInfo.environment["TRACK_SURVEY"] != nil {
      print(lines.joined(separator: "\n"))
    }
  }
}
