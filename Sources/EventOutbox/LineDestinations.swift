import Foundation

/// Settings of a ``JSONLinesFileDestination``.
public struct JSONLinesFileConfiguration: Hashable, Sendable {
  /// The file events are appended to (created when missing).
  public var path: String
  /// Rotate before a write would take the file past this many bytes (>= 1). Default
  /// 10,485,760 (10 MiB, the default `max-size` granularity of log shippers such as Docker's
  /// `json-file` driver is of this order; any cap works).
  public var maximumFileBytes: Int
  /// Rotated files kept beside it, `PATH.1` (the newest) to `PATH.N` (>= 0; 0 keeps none).
  /// Default 5 (logrotate's `rotate 5` habit).
  public var keptFiles: Int
  /// Events per write (and `fsync`), 1...10,000. Default 100.
  public var maxBatchEvents: Int
  /// The cursor's name. Default `"file"`.
  public var name: String

  public init(
    path: String, maximumFileBytes: Int = 10_485_760, keptFiles: Int = 5,
    maxBatchEvents: Int = 100, name: String = "file"
  ) {
    precondition(maximumFileBytes >= 1 && keptFiles >= 0 && (1...10_000).contains(maxBatchEvents))
    self.path = path
    self.maximumFileBytes = maximumFileBytes
    self.keptFiles = keptFiles
    self.maxBatchEvents = maxBatchEvents
    self.name = name
  }
}

/// Appends events as JSON Lines (``OutboxEvent/jsonObject`` and `\n`) to a file that rotates
/// by size (an ``EventDestination``).
///
/// A batch is written with one `write` and flushed to disk (`fsync`) before the outbox moves
/// the cursor, so a crash between the two writes the batch again on restart (at least once:
/// readers deduplicate by `id`). When the next batch would take the file past
/// ``JSONLinesFileConfiguration/maximumFileBytes``, it is renamed `PATH.1` (older ones move
/// up to `PATH.N`, the oldest beyond `keptFiles` deleted) and a new file starts; a batch
/// larger than the cap on its own is written to a fresh file whole. A write that fails stops
/// the call with the error; the events stay pending.
public final class JSONLinesFileDestination: EventDestination {
  public let configuration: JSONLinesFileConfiguration
  public var name: String { configuration.name }
  public var maxBatchEvents: Int { configuration.maxBatchEvents }

  public init(configuration: JSONLinesFileConfiguration) {
    self.configuration = configuration
  }

  public func deliver(_ events: [OutboxEvent], attempt: Int) async -> DestinationAnswer {
    var text = ""
    for e in events { text += e.jsonObject + "\n" }
    let bytes = Array(text.utf8)
    do {
      try rotateIfNeeded(adding: bytes.count)
    } catch {
      return DestinationAnswer(
        failure: "\(configuration.path): cannot rotate: \((error as NSError).localizedDescription)")
    }
    // open(2), write(2) and fsync(2): the system's reason reaches the message.
    func failure(_ what: String) -> DestinationAnswer {
      DestinationAnswer(
        failure: "\(configuration.path): cannot \(what): \(String(cString: strerror(errno)))")
    }
    let fd = open(configuration.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return failure("open the file") }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { b -> Int in
        guard let base = b.baseAddress else { return 0 }
        return write(fd, base + offset, b.count - offset)
      }
      if written < 0 {
        if errno == EINTR { continue }
        return failure("write")
      }
      offset += written
    }
    guard fsync(fd) == 0 else { return failure("sync the file") }
    return DestinationAnswer(delivered: events.map(\.id))
  }

  /// The size of the current file, 0 when it does not exist.
  private func currentSize() -> Int {
    let attributes = try? FileManager.default.attributesOfItem(atPath: configuration.path)
    return (attributes?[.size] as? NSNumber)?.intValue ?? 0
  }

  private func rotateIfNeeded(adding count: Int) throws {
    let size = currentSize()
    guard size > 0, size + count > configuration.maximumFileBytes else { return }
    let fm = FileManager.default
    let path = configuration.path
    guard configuration.keptFiles > 0 else {
      try fm.removeItem(atPath: path)
      return
    }
    let oldest = "\(path).\(configuration.keptFiles)"
    if fm.fileExists(atPath: oldest) { try fm.removeItem(atPath: oldest) }
    if configuration.keptFiles > 1 {
      for k in stride(from: configuration.keptFiles - 1, through: 1, by: -1) {
        let from = "\(path).\(k)"
        if fm.fileExists(atPath: from) { try fm.moveItem(atPath: from, toPath: "\(path).\(k + 1)") }
      }
    }
    try fm.moveItem(atPath: path, toPath: "\(path).1")
  }
}

/// Writes events as JSON Lines to standard output (an ``EventDestination``), a batch per
/// write: for piping into another tool. A write that fails (a closed pipe, a full disk) leaves
/// the batch pending, with the system's reason as the failure: the events are delivered again
/// by a later run (receivers deduplicate by id).
public final class StandardOutputDestination: EventDestination {
  public let name: String
  public let maxBatchEvents: Int

  /// - Parameters:
  ///   - name: the cursor's name. Default `"stdout"`.
  ///   - maxBatchEvents: events per write. Default 100.
  public init(name: String = "stdout", maxBatchEvents: Int = 100) {
    self.name = name
    self.maxBatchEvents = maxBatchEvents
  }

  public func deliver(_ events: [OutboxEvent], attempt: Int) async -> DestinationAnswer {
    var text = ""
    for e in events { text += e.jsonObject + "\n" }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { b -> Int in
        guard let base = b.baseAddress else { return 0 }
        return write(1, base + offset, b.count - offset)
      }
      if written < 0 {
        if errno == EINTR { continue }
        return DestinationAnswer(
          failure: "cannot write to standard output: \(String(cString: strerror(errno)))")
      }
      offset += written
    }
    return DestinationAnswer(delivered: events.map(\.id))
  }
}
