import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The claim of one process on a `--state DIR`: an exclusive `flock(2)` on `DIR/state.lock`,
/// held until the process ends (the kernel releases it then, after a kill too). Two
/// processes that checkpoint the same devices into one `state.sqlite` would overwrite each
/// other's checkpoints, so the second one to start is refused instead.
///
/// The file is created when missing and never removed (removing it would let a third
/// process lock a new file while the second still holds the old one); it holds nothing.
final class StateDirectoryLock {
  /// The lock file's name inside the directory.
  static let fileName = "state.lock"

  private let descriptor: Int32

  /// Why a directory cannot be claimed.
  enum Failure: Error {
    /// Another process holds the lock.
    case held(path: String)
    /// The lock file cannot be opened or locked (the system's reason).
    case unavailable(path: String, reason: String)
  }

  /// Takes the lock of `directory` without waiting.
  /// - Throws: ``Failure/held(path:)`` when another process holds it,
  ///   ``Failure/unavailable(path:reason:)`` when the file cannot be opened or locked.
  init(directory: String) throws(Failure) {
    let path = URL(fileURLWithPath: directory).appendingPathComponent(Self.fileName).path
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      throw .unavailable(path: path, reason: String(cString: strerror(errno)))
    }
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
      if errno == EINTR { continue }
      let held = errno == EWOULDBLOCK
      let reason = String(cString: strerror(errno))
      close(fd)
      throw held ? .held(path: path) : .unavailable(path: path, reason: reason)
    }
    descriptor = fd
  }

  deinit {
    close(descriptor)
  }
}
