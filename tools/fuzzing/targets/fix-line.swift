// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import TrackFormats

/// One stream line through `FixLineParser.parse` (the input is the line, without its end).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  if case .success(let s) = FixLineParser.parse(UnsafeBufferPointer(start: bytes, count: count)) {
    FuzzCheck.fixes([s.fix])
  }
  return 0
}
