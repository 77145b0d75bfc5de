// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import DelimitedText
import Foundation

@testable import TrackFormats

/// 70mai dash-cam logs through the reader `CSVTrackReader` hands a `$V0…` file to, called
/// directly so that a mutated marker line does not divert the input to the CSV reader.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let (text, _) = DelimitedText.decode(Data(bytes: bytes, count: count))
  let lines = LineScanner(text: text)
  let first = lines.firstContentLine()?.line ?? 1
  let r = DashCamLogReader.read(lines: lines, firstLine: first, fileName: "fuzz.txt", warnings: [])
  FuzzCheck.fixes(r.fixes)
  return 0
}
