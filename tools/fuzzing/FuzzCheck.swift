// Linked into every libFuzzer target by tools/fuzz.
import GeofenceGeometry

/// Checks that hold for every fix a reader returns, whatever its input; a violation aborts, so
/// libFuzzer records the input as a crash.
enum FuzzCheck {
  static func fixes(_ fixes: [LocationFix]) {
    for f in fixes {
      let c = f.coordinate
      precondition((-90.0...90.0).contains(c.latitude), "latitude \(c.latitude)")
      precondition((-180.0...180.0).contains(c.longitude), "longitude \(c.longitude)")
      if let t = f.time { precondition(t.isFinite, "time \(t)") }
    }
  }
}
