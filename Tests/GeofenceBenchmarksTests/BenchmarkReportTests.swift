import Foundation
import Testing

@testable import GeofenceBenchmarks

@Suite struct BenchmarkReportTests {
  static func report() -> BenchmarkReport {
    var o = BenchmarkOptions()
    o.threads = 2
    o.repetitions = 1
    o.minimumPassSeconds = 0
    var results: [BenchmarkResult] = []
    for n in [100, 1_000] {
      let w = WorkloadGenerator.make(kind: .metro, regionCount: n, fixCount: 1_000, seed: 1)
      results.append(BenchmarkRunner.run(w, options: o))
    }
    return BenchmarkReport(
      settings: .init(seed: 1, fixCount: 1_000, threads: 2, repetitions: 1, cellSizeDegrees: nil),
      results: results)
  }

  @Test func jsonIsValidAndCarriesTheChecksums() throws {
    let report = Self.report()
    let object = try JSONSerialization.jsonObject(with: Data(report.json().utf8))
    let root = try #require(object as? [String: Any])
    let results = try #require(root["results"] as? [[String: Any]])
    #expect(results.count == 2)
    #expect(results[1]["regions"] as? Int == 1_000)
    #expect((results[1]["pairs"] as? NSNumber)?.uint64Value == report.results[1].checksum.pairs)
    #expect(results[0]["workload"] as? String == "metro")
  }

  @Test func tableAndChart() {
    let report = Self.report()
    let table = report.table()
    #expect(table.contains("metro"))
    #expect(table.contains("1,000"))
    let svg = report.svg()
    #expect(svg.hasPrefix("<svg"))
    #expect(svg.contains("<polyline"))
    #expect(svg.hasSuffix("</svg>\n"))
  }

  /// A result with no regions has no place on a log scale: the chart leaves it out (it used
  /// to draw axis ticks from log10(0) = −∞ without end: the time limit turns that into a
  /// failure).
  @Test(.timeLimit(.minutes(1))) func chartLeavesOutAnEmptySet() {
    var report = Self.report()
    let before = report.svg()
    var empty = report.results[0]
    empty.regionCount = 0
    report.results.append(empty)
    let svg = report.svg()
    #expect(!svg.contains("nan") && !svg.contains("inf"))
    #expect(svg == before)
  }

  @Test func numberFormatting() {
    #expect(grouped(1_234_567) == "1,234,567")
    #expect(grouped(999) == "999")
    #expect(rate(2_310_000) == "2.31 M")
    #expect(rate(459_700) == "459.7 k")
    #expect(fixed(1.25, 1) == "1.2" || fixed(1.25, 1) == "1.3")
    #expect(shortCount(1e6) == "1M")
  }
}
