import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP listener on 127.0.0.1 with a kernel-chosen port, for transport tests.
///
/// With `answer == nil` it never accepts: connections complete in the backlog and no byte is
/// ever answered (a server that hangs). Otherwise it accepts connections one by one on a
/// thread, reads each request's head and writes `answer` verbatim, then closes.
final class LoopbackListener: @unchecked Sendable {
  let port: UInt16
  private let socketFD: Int32

  init(answer: Data?) throws {
    (socketFD, port) = try listeningLoopbackSocket()
    let fd = socketFD
    if let answer {
      let thread = Thread { Self.serve(fd, answer) }
      thread.start()
    }
  }

  var url: URL { URL(string: "http://127.0.0.1:\(port)/v1/thing")! }

  /// Stops listening; an accepting thread ends at its next `accept`.
  func stop() { shutdown(socketFD, Int32(SHUT_RDWR)); close(socketFD) }

  private static func serve(_ fd: Int32, _ answer: Data) {
    while true {
      let client = accept(fd, nil, nil)
      guard client >= 0 else { return }
      _ = readRequestHead(client)
      answerAndClose(client, answer)
    }
  }
}

/// A TCP socket listening on 127.0.0.1 at a port the system chose: the descriptor and the port.
func listeningLoopbackSocket() throws -> (Int32, UInt16) {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { throw POSIXError(.EIO) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = 0
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  }
  guard bound == 0, listen(fd, 16) == 0 else {
    close(fd)
    throw POSIXError(.EADDRINUSE)
  }
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
  }
  return (fd, UInt16(bigEndian: address.sin_port))
}

/// Writes all of `data` to the connection `client` (stopping if the peer goes away), then
/// shuts it down and closes it.
func answerAndClose(_ client: Int32, _ data: Data) {
  data.withUnsafeBytes { raw in
    var offset = 0
    while offset < raw.count {
      let n = send(client, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
      if n <= 0 { break }
      offset += n
    }
  }
  shutdown(client, Int32(SHUT_RDWR))
  close(client)
}

/// Reads from the connection `client` up to the end of a request head (the blank line), or
/// until the peer stops sending.
func readRequestHead(_ client: Int32) -> Data {
  var head = Data()
  var buffer = [UInt8](repeating: 0, count: 4096)
  while !head.contains(Data("\r\n\r\n".utf8)) {
    let n = recv(client, &buffer, buffer.count, 0)
    if n <= 0 { break }
    head.append(contentsOf: buffer[0..<n])
  }
  return head
}
