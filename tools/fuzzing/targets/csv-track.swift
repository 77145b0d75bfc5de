// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Foundation
import TrackFormats

/// CSV, TSV and PLT tracks through `CSVTrackReader.read` (the layout is chosen by content:
/// the delimiter from the header, PLT from its first line); then the same bytes line by line
/// through `CSVLineReader`, as `geofence stream` reads CSV: the first line the header, every
/// other line one record. A fix it takes keeps the stream's rules: a device id, when the
/// header names a device column, that is non-empty and free of control characters, and an
/// accuracy that is a number.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let data = Data(bytes: bytes, count: count)
  if let r = try? CSVTrackReader.read(data: data, fileName: "fuzz.csv") {
    FuzzCheck.fixes(r.fixes)
  }
  let lines = String(decoding: data, as: UTF8.self).split(
    separator: "\n", omittingEmptySubsequences: false)
  guard let header = lines.first,
    var reader = try? CSVLineReader(header: String(header), fileName: "fuzz.csv", line: 1)
  else { return 0 }
  for (k, line) in lines.dropFirst().enumerated() {
    guard case .success(let fix)? = reader.read(String(line), line: k + 2) else { continue }
    FuzzCheck.fixes([fix])
    if let device = fix.deviceID {
      precondition(!device.isEmpty && !DeviceIDText.hasControlCharacter(device.utf8))
    }
    if let accuracy = fix.horizontalAccuracy { precondition(!accuracy.isNaN) }
  }
  return 0
}
