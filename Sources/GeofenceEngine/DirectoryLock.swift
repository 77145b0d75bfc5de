import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A `flock(2)` on a lock file inside a store directory, held until released or until the
/// process ends (the kernel drops it then, after a kill too). Shared holders coexist; an
/// exclusive holder excludes every other holder, in this process (another open of the file)
/// or another.
///
/// Four locks are used:
/// - `delivery.lock`: an engine that delivers (an outbox with the server or destinations)
///   holds it exclusive, so that two processes never send the same queued events.
/// - `store.lock`: every ``GeofenceEngine`` on a directory store holds it shared while it
///   lives, and ``StoreRepair/repair(directory:at:)`` takes it exclusive, so that repair never
///   moves a file aside under a process that would go on writing into the moved file.
/// - `state.lock`: an engine that fills a store (takes fixes into its outbox or checkpoints)
///   holds it exclusive from its first device on (``GeofenceEngine/claimState()``), so that
///   two engines never keep two states of the same devices.
/// - `sync.lock`: ``GeofenceEngine/sync(full:)`` holds it exclusive for a whole sync, so that
///   two processes never stage their listings into each other's.
///
/// The file is created when missing and never removed (removing it would let a third process
/// lock a new file while a second still holds the old one); it holds nothing.
public final class DirectoryLock: @unchecked Sendable {
  /// The engines' lock file (see the type's discussion).
  public static let storeFileName = "store.lock"
  /// The lock file of the one engine (in any process) that delivers from a store's outbox.
  public static let deliveryFileName = "delivery.lock"
  /// The lock file of a sync in progress on a store (in any process).
  public static let syncFileName = "sync.lock"
  /// The lock file of the one engine (in any process) that fills a store.
  public static let stateFileName = "state.lock"

  /// The lock file's path.
  public let path: String
  private let descriptor: Int32

  /// Why a lock cannot be taken.
  public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Another holder's lock excludes this one.
    case held(path: String)
    /// The lock file cannot be opened or locked (the system's reason).
    case unavailable(path: String, reason: String)

    public var description: String {
      switch self {
      case .held(let path): return "\(path) is held by another process"
      case .unavailable(let path, let reason): return "\(path): cannot lock: \(reason)"
      }
    }
  }

  /// Takes the lock `fileName` of `directory` (which must exist) without waiting.
  /// - Parameter exclusive: true for an exclusive lock, false for a shared one.
  /// - Throws: ``Failure/held(path:)`` when a holder's lock excludes this one,
  ///   ``Failure/unavailable(path:reason:)`` when the file cannot be opened or locked.
  public init(directory: String, fileName: String, exclusive: Bool) throws(Failure) {
    let path = URL(fileURLWithPath: directory).appendingPathComponent(fileName).path
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      throw .unavailable(path: path, reason: String(cString: strerror(errno)))
    }
    while flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
      if errno == EINTR { continue }
      let held = errno == EWOULDBLOCK
      let reason = String(cString: strerror(errno))
      close(fd)
      throw held ? .held(path: path) : .unavailable(path: path, reason: reason)
    }
    self.path = path
    descriptor = fd
  }

  deinit {
    close(descriptor)
  }
}
