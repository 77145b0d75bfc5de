// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation
import GeofenceDefinitions

/// Geofence definition files (csv) through `GeofenceFileReader.read(data:format:...)`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  _ = try? GeofenceFileReader.read(
    data: data, format: .csv, fileName: "fuzz.csv", defaultRadiusMeters: 100)
  return 0
}
