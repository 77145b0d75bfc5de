/// An operation of the GEOS C library failed.
///
/// GEOS reports failures in two parts: the C function's return value (`NULL`, or the
/// exception code 2 for predicates, 0 for measures) and one or more messages sent to the
/// context's error handler (`GEOSContext_setErrorMessageHandler_r`). This error carries both:
/// which operation failed and every message GEOS reported during it, in order, for example
/// `"ParseException: Expected word but encountered end of stream"`.
public struct GEOSError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What failed.
  public enum Code: Hashable, Sendable {
    /// `GEOS_init_r` returned `NULL` (out of memory).
    case contextUnavailable
    /// The WKT text could not be parsed (`GEOSWKTReader_read_r` returned `NULL`).
    case invalidWKT
    /// The geometry parsed but is not of the kind required; the kind found (`GEOSGeomType_r`,
    /// for example `"Point"`).
    case unexpectedGeometryType(String)
    /// A GEOS function signalled an exception; the C function's name, for example
    /// `"GEOSContains_r"`.
    case operationFailed(String)
    /// The operation ran past its time budget (seconds) and was interrupted.
    case timeBudgetExceeded(Double)
  }

  public var code: Code
  /// Messages GEOS sent to the error handler during the failing call, oldest first; may be empty.
  public var messages: [String]

  public init(code: Code, messages: [String] = []) {
    self.code = code
    self.messages = messages
  }

  public var description: String {
    let what: String
    switch code {
    case .contextUnavailable: what = "GEOS context could not be created"
    case .invalidWKT: what = "invalid WKT"
    case .unexpectedGeometryType(let type): what = "unexpected geometry type \(type)"
    case .operationFailed(let function): what = "\(function) failed"
    case .timeBudgetExceeded(let seconds):
      return "GEOS gave up after \(seconds) s: the geometry is too complex to check in time"
    }
    return messages.isEmpty ? what : "\(what): \(messages.joined(separator: "; "))"
  }
}
