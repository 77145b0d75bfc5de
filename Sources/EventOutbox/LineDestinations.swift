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
  /// Which files a rotation may never delete: false (the default), those written by the
  /// same ``DestinationDelivery/flush()`` (a long-lived engine's files rotate away in later
  /// flushes, as logs do); true, every file this destination wrote since it was made (for
  /// a command that runs once, such as `geofence run`, whose many flushes together must not
  /// delete what it wrote).
  public var keepsEveryFileItWrote: Bool = false

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
/// **Size.** Before an event would take the file past
/// ``JSONLinesFileConfiguration/maximumFileBytes``, the file is renamed `PATH.1` (older ones
/// move up to `PATH.N`, the oldest beyond `keptFiles` deleted) and a new file starts: a batch
/// is split between files, so no file exceeds the cap but one holding a single event larger
/// than the cap on its own.
///
/// **Nothing is rotated away unread by the delivery that wrote it.** Within one
/// ``DestinationDelivery/flush()`` (``flushBegins()``), or over the destination's life with
/// ``JSONLinesFileConfiguration/keepsEveryFileItWrote``, a rotation that would delete a file
/// written by it (`PATH.N`, or `PATH` itself with `keptFiles` 0) is not made: the call stops
/// there with a failure naming the file, the events written so far delivered and the rest
/// pending for the next flush (without `keepsEveryFileItWrote`, the next flush may rotate
/// the earlier flush's files away, as log rotation does).
///
/// `PATH` must be a regular file (or missing): a FIFO, device or socket is refused at each
/// delivery (opened without waiting, so a FIFO without a reader never blocks it).
///
/// **Durability.** The lines for a file are written with one `write` and flushed to disk
/// (`fsync`) before the outbox moves the cursor, so a crash between the two writes them again
/// on restart (at least once: readers deduplicate by `id`). A write that fails stops the call
/// with the error; the events not written stay pending.
public final class JSONLinesFileDestination: EventDestination {
  public let configuration: JSONLinesFileConfiguration
  public var name: String { configuration.name }
  public var maxBatchEvents: Int { configuration.maxBatchEvents }
  /// For `PATH` (index 0) and `PATH.1` ... `PATH.N`: whether the current flush wrote it.
  private var writtenThisFlush: [Bool]

  public init(configuration: JSONLinesFileConfiguration) {
    self.configuration = configuration
    writtenThisFlush = Array(repeating: false, count: configuration.keptFiles + 1)
  }

  public func flushBegins() {
    guard !configuration.keepsEveryFileItWrote else { return }
    for k in writtenThisFlush.indices { writtenThisFlush[k] = false }
  }

  public func deliver(_ events: [OutboxEvent], attempt: Int) async -> DestinationAnswer {
    var delivered: [String] = []
    var lines: [UInt8] = []
    var ids: [String] = []
    // The file's size with `lines` appended.
    var size = currentSize()
    for e in events {
      let line = Array((e.jsonObject + "\n").utf8)
      if size > 0, size + line.count > configuration.maximumFileBytes {
        if let failure = append(&lines) {
          return DestinationAnswer(delivered: delivered, failure: failure)
        }
        delivered += ids
        ids.removeAll()
        if let failure = rotate() {
          return DestinationAnswer(delivered: delivered, failure: failure)
        }
        size = 0
      }
      lines += line
      ids.append(e.id)
      size += line.count
    }
    if let failure = append(&lines) {
      return DestinationAnswer(delivered: delivered, failure: failure)
    }
    return DestinationAnswer(delivered: delivered + ids)
  }

  /// Appends `lines` to the file and syncs it (open(2), write(2), fsync(2)), then empties
  /// `lines`; the failure with the system's reason, or nil.
  private func append(_ lines: inout [UInt8]) -> String? {
    guard !lines.isEmpty else { return nil }
    func failure(_ what: String) -> String {
      "\(configuration.path): cannot \(what): \(String(cString: strerror(errno)))"
    }
    // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of blocking; it has
    // no effect on a regular file.
    let fd = open(
      configuration.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0o644)
    guard fd >= 0 else { return failure("open the file") }
    defer { close(fd) }
    var status = stat()
    guard fstat(fd, &status) == 0 else { return failure("inspect the file") }
    guard status.st_mode & S_IFMT == S_IFREG else {
      return "\(configuration.path): not a regular file (a FIFO, device or socket): the file "
        + "destination appends to a file and rotates it"
    }
    var offset = 0
    while offset < lines.count {
      let written = lines.withUnsafeBytes { b -> Int in
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
    writtenThisFlush[0] = true
    lines.removeAll(keepingCapacity: true)
    return nil
  }

  /// The size of the current file, 0 when it does not exist.
  private func currentSize() -> Int {
    let attributes = try? FileManager.default.attributesOfItem(atPath: configuration.path)
    return (attributes?[.size] as? NSNumber)?.intValue ?? 0
  }

  /// Moves the files up one place (see the type's discussion); the failure, or nil.
  private func rotate() -> String? {
    let path = configuration.path
    let kept = configuration.keptFiles
    if writtenThisFlush[kept] {
      let doomed = kept == 0 ? path : "\(path).\(kept)"
      return "\(path): rotating again would delete \(doomed), written by this delivery, "
        + "before it is read; the rest stay queued for the next delivery (a larger maximum "
        + "file size or more kept files hold more at once)"
    }
    let fm = FileManager.default
    do {
      if kept == 0 {
        try fm.removeItem(atPath: path)
      } else {
        let oldest = "\(path).\(kept)"
        if fm.fileExists(atPath: oldest) { try fm.removeItem(atPath: oldest) }
        if kept > 1 {
          for k in stride(from: kept - 1, through: 1, by: -1) {
            let from = "\(path).\(k)"
            if fm.fileExists(atPath: from) {
              try fm.moveItem(atPath: from, toPath: "\(path).\(k + 1)")
            }
          }
        }
        try fm.moveItem(atPath: path, toPath: "\(path).1")
      }
    } catch {
      return "\(path): cannot rotate: \((error as NSError).localizedDescription)"
    }
    writtenThisFlush.removeLast()
    writtenThisFlush.insert(false, at: 0)
    return nil
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
