// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation
import GeofenceEngine

/// Authorization timelines (JSON Lines or CSV) through `AuthorizationTimeline.parse`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  _ = try? AuthorizationTimeline.parse(text)
  return 0
}
