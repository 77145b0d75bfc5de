// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation
import GeofenceGeometry
import GeofenceSync

/// Stored polygon BLOBs (`GeofenceStore`'s `geometry` column): `StoredPolygon.decode` must
/// refuse any malformed input without crashing or allocating beyond what its size allows, and
/// what it accepts must encode back to the same bytes and decode to the same region.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  guard case .success(let polygon) = StoredPolygon.decode(data) else { return 0 }
  let again = StoredPolygon.encode(polygon)
  guard case .success(let back) = StoredPolygon.decode(again), back == polygon else {
    fatalError("stored polygon does not round-trip: \(count) bytes")
  }
  // The decoded bytes were a region's own positions only if encoding gives them back.
  if again != data {
    // A region normalises its rings (frame and winding) once; a second pass changes nothing.
    precondition(StoredPolygon.encode(back) == again, "encoding is not stable")
  }
  return 0
}
