// A libFuzzer target; built and run by tools/fuzz (see tools/fuzzing/README.md).
import Glibc
import NumberText

/// One text through `NumberText.parse`; an accepted number must have the bits of glibc's
/// `strtod` of the same text (its correctly rounded conversion: the differential oracle of
/// the Eisel–Lemire path). Out of range must be where `strtod` gives infinity.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
  let text = UnsafeBufferPointer(start: bytes, count: count)
  let parsed = NumberText.parse(text)
  guard parsed != .failure(.notANumber) else { return 0 }
  var copy = [CChar](repeating: 0, count: count + 1)
  for k in 0..<count { copy[k] = CChar(bitPattern: bytes[k]) }
  let oracle = strtod(copy, nil)
  switch parsed {
  case .success(let v):
    if v.bitPattern != oracle.bitPattern {
      fatalError("NumberText \(v) != strtod \(oracle) for '\(String(decoding: text, as: UTF8.self))'")
    }
  case .failure(.outOfRange):
    if oracle.isFinite {
      fatalError("out of range, but strtod gives \(oracle)")
    }
  case .failure(.notANumber):
    break
  }
  return 0
}
