import BinarySnapshot
import Foundation
import GeofenceSync

/// Where an engine's live set came from when it was created.
public enum GeofenceSetSource: Hashable, Sendable {
  /// The geofences given to ``GeofenceEngine/init(configuration:storage:geofences:transport:clock:)``.
  case given
  /// The store's indexed snapshot, opened in `seconds`.
  case snapshot(seconds: Double)
  /// The store's rows, loaded and indexed because no usable snapshot was there (`reason`
  /// says why: none yet, stale, damaged, another build's layout); a new snapshot was then
  /// written when `wroteSnapshot`.
  case store(reason: String, wroteSnapshot: Bool)
}

extension GeofenceEngine {
  /// The snapshot's file in a store directory.
  public static let snapshotFileName = "geofences.snapshot"
  /// Format version of the snapshot's payload; raised whenever a type written as bytes
  /// (the index's tables, the set's records) changes its layout or the arithmetic that makes
  /// its values (4: unit vectors from `UnitVector.quarterDegreeTable`).
  static let snapshotFormatVersion: UInt32 = 4

  /// Writes the indexed snapshot of the stored set to the store directory: the set as a
  /// fresh engine would build it from the store, with the store's identity
  /// (``GeofenceSync/GeofenceStore/setIdentity()``). `sync` and `geofence snapshot` call it;
  /// an engine created on the directory writes it when it had to build the set.
  ///
  /// Written to a temporary file, flushed, then renamed over the old one: a reader sees the
  /// old snapshot or the new one, never a part.
  /// - Returns: the snapshot's path and size in bytes.
  /// - Throws: ``EngineError/invalidConfiguration(_:)`` in memory or with a fixed set;
  ///   ``EngineError/store(_:)`` when the store cannot be read or the file written.
  /// - Complexity: loading and indexing the stored set, O(n), then writing its bytes.
  @discardableResult
  public func writeSnapshot() throws(EngineError) -> (path: String, bytes: Int) {
    guard case .directory(let directory) = storage, !hasFixedSet else {
      throw .invalidConfiguration("a snapshot is written for a synced set in a directory store")
    }
    do {
      let identity = try geofenceStore.setIdentity()
      let set = LiveGeofenceSet(geofences: try geofenceStore.geofences())
      return try Self.writeSnapshot(of: set, identity: identity, directory: directory)
    } catch let error as EngineError {
      throw error
    } catch {
      throw .store("\(error)")
    }
  }

  /// Whether the directory's snapshot was built from the stored set as it is now (its header
  /// names the store's current identity; its checksum is checked only when it is opened).
  /// False in memory and for a fixed set.
  public func snapshotIsCurrent() -> Bool {
    guard case .directory(let directory) = storage, !hasFixedSet else { return false }
    return Self.snapshotIsCurrent(directory: directory, store: geofenceStore)
  }

  /// ``snapshotIsCurrent()`` for the store directory `directory` whose synced set `store` is,
  /// without creating an engine (which would rebuild a stale snapshot).
  public static func snapshotIsCurrent(directory: String, store: GeofenceStore) -> Bool {
    guard let identity = try? store.setIdentity(),
      let handle = FileHandle(forReadingAtPath: snapshotPath(directory))
    else { return false }
    defer { try? handle.close() }
    // The header alone: magic, format version, identity (the checksum is not read).
    let head = (try? handle.read(upToCount: 256)) ?? Data()
    return head.withUnsafeBytes { raw -> Bool in
      guard var reader = try? SnapshotReader(unverified: raw, formatVersion: snapshotFormatVersion),
        let written = try? readIdentity(&reader)
      else { return false }
      return written.instance == identity.instance && written.generation == identity.generation
    }
  }

  /// What ``snapshotStatus(directory:store:)`` found.
  public enum SnapshotStatus: Hashable, Sendable {
    /// The snapshot opens as an engine would open it: built from the stored set as it is
    /// now, its checksum and layout intact.
    case current
    /// No snapshot file.
    case missing
    /// An intact snapshot of another version of the set.
    case stale
    /// The file cannot be used (`reason`: a checksum that does not match, a file cut short,
    /// another format or layout, or a file that cannot be read); the next engine rebuilds it.
    case unusable(reason: String)
  }

  /// Whether the snapshot of the store directory `directory`, whose synced set `store` is,
  /// is the one an engine would open, checked as the engine checks it (identity, checksum,
  /// layout), without creating an engine (which would rebuild it).
  /// - Complexity: one open of the snapshot: it is mapped, hashed and decoded, O(n) in its
  ///   size.
  public static func snapshotStatus(directory: String, store: GeofenceStore) -> SnapshotStatus {
    let path = snapshotPath(directory)
    guard FileManager.default.fileExists(atPath: path) else { return .missing }
    do {
      let identity = try store.setIdentity()
      _ = try openSnapshotFile(path, identity: identity)
      return .current
    } catch SnapshotError.stale {
      return .stale
    } catch let error as SnapshotError {
      return .unusable(reason: error.description)
    } catch {
      return .unusable(reason: "\(error)")
    }
  }

  /// The store identity a snapshot was built from, its first values after the format version.
  private static func readIdentity(_ reader: inout SnapshotReader) throws(SnapshotError) -> (
    instance: String, generation: Int64
  ) {
    let instance = try reader.readString()
    let generation: Int64 = try reader.read()
    return (instance, generation)
  }

  static func snapshotPath(_ directory: String) -> String {
    URL(fileURLWithPath: directory).appendingPathComponent(snapshotFileName).path
  }

  /// The snapshot's bytes for `set` built from the store set `identity`.
  static func snapshotBytes(
    of set: LiveGeofenceSet, identity: (instance: String, generation: Int64)
  ) -> [UInt8] {
    var writer = SnapshotWriter(formatVersion: snapshotFormatVersion)
    writer.write(string: identity.instance)
    writer.write(identity.generation)
    set.write(to: &writer)
    return writer.finish()
  }

  static func writeSnapshot(
    of set: LiveGeofenceSet, identity: (instance: String, generation: Int64), directory: String
  ) throws(EngineError) -> (path: String, bytes: Int) {
    let bytes = snapshotBytes(of: set, identity: identity)
    let path = snapshotPath(directory)
    let temporary = path + ".tmp.\(getpid())"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else {
      throw .store("\(temporary): cannot be written: \(String(cString: strerror(errno)))")
    }
    var written = 0
    let failure: String? = bytes.withUnsafeBytes { raw in
      while written < raw.count {
        let n = Foundation.write(fd, raw.baseAddress.map { $0 + written }, raw.count - written)
        if n < 0 {
          if errno == EINTR { continue }
          return String(cString: strerror(errno))
        }
        written += n
      }
      return fsync(fd) == 0 ? nil : String(cString: strerror(errno))
    }
    close(fd)
    if let failure {
      unlink(temporary)
      throw .store("\(temporary): cannot be written: \(failure)")
    }
    guard rename(temporary, path) == 0 else {
      let reason = String(cString: strerror(errno))
      unlink(temporary)
      throw .store("\(path): cannot be replaced: \(reason)")
    }
    return (path, bytes.count)
  }

  /// The set in the snapshot bytes, when they were built from the store set `identity`.
  /// - Throws: ``BinarySnapshot/SnapshotError``: ``BinarySnapshot/SnapshotError/stale`` for
  ///   another identity, the others for damage or another build's layout.
  ///
  /// The checksum runs on a second thread while the set is decoded (the two take about the
  /// same time); the decoded set is returned only when it matches. A decode that meets an
  /// inconsistency first waits for the checksum, so that damage is reported as such.
  ///
  /// With `fileMapping` (the bytes are a read-only mapping of the file), the pages are given
  /// back as they are hashed and copied, so that the open does not hold the file and the set
  /// at once.
  static func openSnapshot(
    _ bytes: UnsafeRawBufferPointer, identity: (instance: String, generation: Int64),
    fileMapping: Bool = false
  ) throws(SnapshotError) -> LiveGeofenceSet {
    var reader = try SnapshotReader(unverified: bytes, formatVersion: snapshotFormatVersion)
    reader.releasesReadPages = fileMapping
    let check = ChecksumThread(bytes, releasingPages: fileMapping)
    let set: LiveGeofenceSet
    do {
      set = try decodeSnapshot(&reader, identity: identity)
    } catch {
      guard check.matches() else { throw .damaged }
      throw error
    }
    guard check.matches() else { throw .damaged }
    return set
  }

  private static func decodeSnapshot(
    _ reader: inout SnapshotReader, identity: (instance: String, generation: Int64)
  ) throws(SnapshotError) -> LiveGeofenceSet {
    let written = try readIdentity(&reader)
    guard written.instance == identity.instance, written.generation == identity.generation else {
      throw .stale
    }
    let set = try LiveGeofenceSet(snapshot: &reader)
    guard reader.isAtEnd else { throw .layout("bytes after the set") }
    return set
  }

  /// The set in the snapshot file at `path`, mapped into memory (not read), when it was built
  /// from the store set `identity`.
  /// - Throws: ``BinarySnapshot/SnapshotError``, or a `SnapshotFileError` with the system's
  ///   reason when the file cannot be opened or mapped.
  static func openSnapshotFile(_ path: String, identity: (instance: String, generation: Int64))
    throws -> LiveGeofenceSet
  {
    // Mapped here (not through `Data`), so that it is certainly a read-only file mapping
    // whose pages may be given back as they are used.
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw SnapshotFileError(path: path, errno: errno) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw SnapshotFileError(path: path, errno: errno) }
    // A directory opens read-only, and mmap would report "No such device".
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw SnapshotFileError(path: path, errno: info.st_mode & S_IFMT == S_IFDIR ? EISDIR : EINVAL)
    }
    let size = Int(info.st_size)
    guard size > 0 else { throw SnapshotError.notASnapshot }
    guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else {
      throw SnapshotFileError(path: path, errno: errno)
    }
    defer { munmap(base, size) }
    return try openSnapshot(
      UnsafeRawBufferPointer(start: base, count: size), identity: identity, fileMapping: true)
  }

  /// For `geofence bench`: writes this engine's live set as a snapshot file in `directory`
  /// and opens it `repetitions` times as an engine on a store does (map, checksum, decode),
  /// checking that the set read back has every geofence.
  /// - Returns: the file's size in bytes and the seconds of each open.
  /// - Throws: ``EngineError/store(_:)`` when the file cannot be written or read back.
  public func measureSnapshot(in directory: String, repetitions: Int) throws(EngineError) -> (
    bytes: Int, openSeconds: [Double]
  ) {
    let identity = (instance: "bench", generation: Int64(0))
    let written = try Self.writeSnapshot(of: live, identity: identity, directory: directory)
    defer { unlink(written.path) }
    var times: [Double] = []
    for _ in 0..<max(1, repetitions) {
      let start = DispatchTime.now().uptimeNanoseconds
      let set: LiveGeofenceSet
      do { set = try Self.openSnapshotFile(written.path, identity: identity) } catch {
        throw .store("\(written.path): \(error)")
      }
      times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
      guard set.count == live.count else { throw .store("the snapshot lost geofences") }
    }
    return (written.bytes, times)
  }

  /// The stored set for a new engine on `directory`: the snapshot when it is current, else
  /// the store's rows, indexed, and a new snapshot written (best effort: a directory that
  /// cannot take it only costs the next start the same build).
  static func openStoredSet(_ store: GeofenceStore, directory: String) throws -> (
    LiveGeofenceSet, GeofenceSetSource
  ) {
    let identity = try store.setIdentity()
    let path = snapshotPath(directory)
    let reason: String
    let start = DispatchTime.now().uptimeNanoseconds
    if FileManager.default.fileExists(atPath: path) {
      do {
        let set = try openSnapshotFile(path, identity: identity)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return (set, .snapshot(seconds: seconds))
      } catch let error as SnapshotError {
        reason = "the snapshot is unusable (\(error))"
      } catch {
        reason = "the snapshot cannot be read (\(error))"
      }
    } else {
      reason = "no snapshot yet"
    }
    let set = LiveGeofenceSet(geofences: try store.geofences())
    let wrote = (try? writeSnapshot(of: set, identity: identity, directory: directory)) != nil
    return (set, .store(reason: reason, wroteSnapshot: wrote))
  }
}

/// ``BinarySnapshot/SnapshotReader/checksumMatches(_:)`` on a thread of its own; the bytes
/// must stay valid until ``matches()`` returns.
private final class ChecksumThread: @unchecked Sendable {
  private let done = DispatchSemaphore(value: 0)
  // Written by the thread before it signals `done`, read only after waiting on it.
  private var result = false

  init(_ bytes: UnsafeRawBufferPointer, releasingPages: Bool) {
    nonisolated(unsafe) let bytes = bytes
    let thread = Thread { [self] in
      result = SnapshotReader.checksumMatches(bytes, releasingPages: releasingPages)
      done.signal()
    }
    thread.start()
  }

  /// Waits for the checksum; true when it matches.
  func matches() -> Bool {
    done.wait()
    done.signal()
    return result
  }
}

/// A snapshot file that cannot be opened or mapped.
struct SnapshotFileError: Error, CustomStringConvertible {
  var path: String
  var errno: Int32
  var description: String { "\(path): \(String(cString: strerror(errno)))" }
}
