// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation
import TrackFormats

/// GPX bytes through `GPXReader.read`: any input ends in fixes or a `TrackReadError`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  if let r = try? GPXReader.read(data: data, fileName: "fuzz.gpx") {
    FuzzCheck.fixes(r.fixes)
  }
  return 0
}
