import CGEOS

/// One GEOS context (`GEOSContextHandle_t`), its message handlers and its WKT reader.
///
/// GEOS is used only through its re-entrant `_r` API. The context is created once, in `init`,
/// and freed (`GEOS_finish_r`) in `deinit`, after every ``Geometry`` made with it (each keeps a
/// strong reference to its context).
///
/// **Threads.** A GEOS context must not be used by two threads at the same time, and the
/// geometries it made share it. `GEOSContext` and ``Geometry`` are therefore not `Sendable`:
/// keep a context and its geometries within one isolation domain (one actor or one task),
/// and create one context per domain that needs GEOS. Creating a context is cheap but not free;
/// never create one per call.
///
/// **Messages.** GEOS reports errors and notices through callbacks. The context collects them
/// during each call; errors end up in the thrown ``GEOSError``, and notices of the last call are
/// in ``lastNotices``.
public final class GEOSContext {
  let handle: GEOSContextHandle_t
  private let reader: OpaquePointer
  private let log: MessageLog

  /// Creates a context and installs its message handlers.
  /// - Throws: ``GEOSError/Code/contextUnavailable`` when GEOS cannot allocate a context.
  public init() throws(GEOSError) {
    guard let handle = GEOS_init_r() else { throw GEOSError(code: .contextUnavailable) }
    let log = MessageLog()
    let userData = Unmanaged.passUnretained(log).toOpaque()
    GEOSContext_setErrorMessageHandler_r(handle, geosErrorHandler, userData)
    GEOSContext_setNoticeMessageHandler_r(handle, geosNoticeHandler, userData)
    guard let reader = GEOSWKTReader_create_r(handle) else {
      let messages = log.errors
      GEOS_finish_r(handle)
      throw GEOSError(code: .contextUnavailable, messages: messages)
    }
    self.handle = handle
    self.reader = reader
    self.log = log
  }

  deinit {
    GEOSWKTReader_destroy_r(handle, reader)
    GEOS_finish_r(handle)
  }

  /// The GEOS library version (`GEOSversion`), for example `"3.11.1-CAPI-1.17.1"`.
  public static var libraryVersion: String { String(cString: GEOSversion()) }

  /// Notices GEOS reported during the last call made through this context, oldest first.
  public var lastNotices: [String] { log.notices }

  /// Parses Well-Known Text into a geometry of any kind.
  /// - Parameter wkt: WKT such as `POLYGON ((0 0, 1 0, 1 1, 0 0))`. For geographic data, x is
  ///   the longitude and y the latitude, in degrees.
  /// - Throws: ``GEOSError`` with ``GEOSError/Code/invalidWKT`` and GEOS's parser message.
  /// - Complexity: O(n) in the text's length.
  public func geometry(fromWKT wkt: String) throws(GEOSError) -> Geometry {
    log.clear()
    let pointer = wkt.withCString { GEOSWKTReader_read_r(handle, reader, $0) }
    guard let pointer else { throw GEOSError(code: .invalidWKT, messages: log.errors) }
    return Geometry(context: self, pointer: pointer)
  }

  /// Parses Well-Known Text that must hold a `POLYGON` or a `MULTIPOLYGON`.
  ///
  /// The polygon is not checked for validity here: see ``Geometry/validity()``.
  /// - Throws: ``GEOSError`` with ``GEOSError/Code/invalidWKT``, or
  ///   ``GEOSError/Code/unexpectedGeometryType(_:)`` naming the type found.
  public func polygon(fromWKT wkt: String) throws(GEOSError) -> Geometry {
    let geometry = try geometry(fromWKT: wkt)
    let typeID = GEOSGeomTypeId_r(handle, geometry.pointer)
    guard typeID == Int32(GEOS_POLYGON.rawValue) || typeID == Int32(GEOS_MULTIPOLYGON.rawValue)
    else {
      throw GEOSError(code: .unexpectedGeometryType(try geometry.typeName()))
    }
    return geometry
  }

  /// A point at (`x`, `y`): for geographic data x is the longitude and y the latitude.
  /// - Throws: ``GEOSError`` when GEOS cannot create it.
  public func point(x: Double, y: Double) throws(GEOSError) -> Geometry {
    log.clear()
    guard let pointer = GEOSGeom_createPointFromXY_r(handle, x, y) else {
      throw GEOSError(
        code: .operationFailed("GEOSGeom_createPointFromXY_r"), messages: log.errors)
    }
    return Geometry(context: self, pointer: pointer)
  }

  /// Starts a call: forgets the messages of the previous one.
  func beginCall() { log.clear() }

  /// The error for a failed call to `function`, with the messages collected since
  /// ``beginCall()``.
  func failure(_ function: String) -> GEOSError {
    GEOSError(code: .operationFailed(function), messages: log.errors)
  }
}

@available(*, unavailable, message: "a GEOS context must not be shared between threads")
extension GEOSContext: Sendable {}

/// Messages received from GEOS's handlers. Owned by its context; the handlers get it as an
/// unretained `userdata` pointer, valid until `GEOS_finish_r`.
final class MessageLog {
  var errors: [String] = []
  var notices: [String] = []

  func clear() {
    if !errors.isEmpty { errors.removeAll() }
    if !notices.isEmpty { notices.removeAll() }
  }
}

private func geosErrorHandler(
  _ message: UnsafePointer<CChar>?, _ userData: UnsafeMutableRawPointer?
) {
  guard let message, let userData else { return }
  Unmanaged<MessageLog>.fromOpaque(userData).takeUnretainedValue().errors.append(
    String(cString: message))
}

private func geosNoticeHandler(
  _ message: UnsafePointer<CChar>?, _ userData: UnsafeMutableRawPointer?
) {
  guard let message, let userData else { return }
  Unmanaged<MessageLog>.fromOpaque(userData).takeUnretainedValue().notices.append(
    String(cString: message))
}
