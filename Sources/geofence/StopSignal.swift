#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// SIGTERM and SIGINT as a request to stop at the next batch boundary, for a command that
/// runs as a service (`stream`): the handler writes one byte to a pipe (the self-pipe trick:
/// `write(2)` is async-signal-safe), and the command polls that pipe beside its input, so a
/// stop wakes it even while it waits for input. The command then takes the fixes it has read,
/// writes their events, checkpoints and ends with its summary, as at the end of its input.
enum StopSignal {
  /// The pipe's read and write ends, -1 before ``install()``.
  nonisolated(unsafe) private(set) static var readEnd: Int32 = -1
  nonisolated(unsafe) private static var writeEnd: Int32 = -1

  /// Installs the handlers of SIGTERM and SIGINT (once; later calls do nothing).
  static func install() {
    guard readEnd < 0 else { return }
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { return }
    for fd in ends {
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    readEnd = ends[0]
    writeEnd = ends[1]
    for signalNumber in [SIGTERM, SIGINT] {
      signal(signalNumber) { _ in
        var byte: UInt8 = 1
        _ = write(StopSignal.writeEnd, &byte, 1)
      }
    }
  }

  /// Whether a stop was asked for (the pipe holds a byte; it is left there, so every later
  /// check says so too).
  static var requested: Bool {
    guard readEnd >= 0 else { return false }
    var p = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
    return poll(&p, 1, 0) > 0
  }
}
