// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation
import TrackFormats

/// CSV, TSV and PLT tracks through `CSVTrackReader.read` (the layout is chosen by content:
/// the delimiter from the header, PLT from its first line).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  if let r = try? CSVTrackReader.read(data: data, fileName: "fuzz.csv") {
    FuzzCheck.fixes(r.fixes)
  }
  return 0
}
