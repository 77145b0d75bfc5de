// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation

@testable import EventOutbox

/// Answers to an event upload: the success body (`OutboxUploader.parseAnswer`) and the error
/// body (`OutboxUploader.errorMessage`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  _ = OutboxUploader.parseAnswer(data)
  _ = OutboxUploader.errorMessage(data)
  return 0
}
