import Foundation
import GeofenceGeometry
@testable import GeofenceIndex
import Testing

@Test func zzStatsProbe() throws {
  for name in ["metro-10000", "metro-100000", "mixed-10000", "real-towns-144563", "real-airports-28298", "transitions-10000"] {
    func rows(_ p: String) -> [[Double]] {
      let t = try! String(contentsOfFile: "/tmp/wb/\(name)-\(p).csv", encoding: .utf8)
      return t.split(separator: "\n").dropFirst().map { $0.split(separator: ",").map { Double($0)! } }
    }
    let regions = rows("regions").map { try! CircularRegion(center: Coordinate(latitude: $0[1], longitude: $0[2]), radiusMeters: $0[3]) }
    let fixes = rows("fixes").prefix(50000).map { Coordinate(uncheckedLatitude: $0[2], longitude: $0[3]) }
    let index = GridIndex(regions: regions)
    var scanned = 0, refined = 0, pairs = 0, withRefine = 0, withPair = 0
    var buf: [Int32] = []
    for f in fixes {
      let c = index._candidateCount(at: f), r = index._refineCount(at: f)
      index.query(f, into: &buf)
      scanned += c; refined += r; pairs += buf.count
      if r > 0 { withRefine += 1 }
      if !buf.isEmpty { withPair += 1 }
    }
    let n = Double(fixes.count)
    print("STATS \(name): scanned \(Double(scanned)/n) refined \(Double(refined)/n) pairs \(Double(pairs)/n) fixesWithRefine \(Double(withRefine)/n) fixesWithPair \(Double(withPair)/n)")
  }
}
