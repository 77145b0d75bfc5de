// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation

@testable import GeofenceSync

/// `GET /v1/geofences` page bodies: decoded by `SyncWire.page`, then validated.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  if case .success(let page) = SyncWire.page(data) {
    _ = SyncWire.validate(page.definitions, source: "page")
  }
  _ = SyncWire.errorBody(data)
  return 0
}
