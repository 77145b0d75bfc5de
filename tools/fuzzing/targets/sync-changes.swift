// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation

@testable import GeofenceSync

/// `GET /v1/geofences/changes` bodies: decoded by `SyncWire.changes`, then validated.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  if case .success(let changes) = SyncWire.changes(data) {
    _ = SyncWire.validate(changes.upserted, source: "changes")
  }
  return 0
}
