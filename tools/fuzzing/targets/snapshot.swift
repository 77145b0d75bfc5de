// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import BinarySnapshot
import Foundation
import GeofenceGeometry

@testable import GeofenceEngine

/// The indexed snapshot reader (`GeofenceEngine.openSnapshot`), in two ways:
/// - the input as a whole file: anything that is not a snapshot with a matching checksum is
///   refused without crashing;
/// - the input as edits of a real snapshot of a small set (3-byte records: a 16-bit offset
///   into the payload and a byte to XOR there), with the checksum then made valid again, so
///   that the decoder itself meets inconsistent counts, strides, offsets, strings and rings:
///   it must throw, or return a set of the same number of slots, never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let input = UnsafeBufferPointer(start: bytes, count: count)
  let identity = (instance: "fuzz", generation: Int64(1))
  _ = try? GeofenceEngine.openSnapshot(UnsafeRawBufferPointer(input), identity: identity)

  var edited = SnapshotSeed.bytes
  let payload = (BinarySnapshot.magic.count + 4)..<(edited.count - 8)
  var i = 0
  while i + 3 <= count {
    let offset = Int(input[i]) | Int(input[i + 1]) << 8
    edited[payload.lowerBound + offset % payload.count] ^= input[i + 2]
    i += 3
  }
  edited.removeLast(8)
  let sum = edited.withUnsafeBytes { BinarySnapshot.checksum($0) }
  withUnsafeBytes(of: sum) { edited.append(contentsOf: $0) }
  if let set = try? edited.withUnsafeBytes({
    try GeofenceEngine.openSnapshot($0, identity: identity)
  }) {
    // Every slot can be read back as a geofence with its event id hash, and every id found.
    for slot in 0..<set.slotCount {
      let g = set.geofence(at: slot)
      _ = set.slot(of: g.id)
      _ = set.eventIDStart(at: slot)
    }
  }
  return 0
}

/// A snapshot of 30 geofences: circles with and without names and metadata, ids inline and
/// heap-held, and two polygons.
enum SnapshotSeed {
  static let bytes: [UInt8] = {
    var geofences: [Geofence] = []
    for k in 0..<30 {
      let lat = 46.0 + Double(k) * 0.001
      let lon = 7.0 + Double(k % 7) * 0.002
      let id = String(repeating: "g", count: k % 20) + "\(k)"
      if k % 15 == 0, let polygon = try? PolygonRegion(polygons: [[[
        SIMD2(lon, lat), SIMD2(lon + 0.01, lat), SIMD2(lon + 0.005, lat + 0.004),
        SIMD2(lon + 0.01, lat + 0.01), SIMD2(lon, lat + 0.01), SIMD2(lon, lat),
      ]]]) {
        geofences.append(Geofence(id: id, name: "P\(k)", shape: .polygon(polygon)))
      } else if let center = try? Coordinate(latitude: lat, longitude: lon),
        let region = try? CircularRegion(center: center, radiusMeters: 50 + Double(k) * 10)
      {
        geofences.append(
          Geofence(
            id: id, name: k % 3 == 0 ? "N\(k)" : nil, region: region,
            metadataJSON: k % 4 == 0 ? #"{"url":"https://example.com/\#(k)"}"# : nil))
      }
    }
    return GeofenceEngine.snapshotBytes(
      of: LiveGeofenceSet(geofences: geofences), identity: (instance: "fuzz", generation: 1))
  }()
}
