import GeofenceDefinitions
import GeofenceGeometry
import JSONText

/// Device checkpoints as self-contained JSON records, for moving device state between engines
/// through a pipe or a table (a batch job that continues yesterday's visits today), where
/// `state.sqlite` cannot follow.
///
/// A record is one JSON object on one line, with sorted members:
///
/// ```json
/// {"checkpoint":{...},"device_id":"phone-1"}
/// ```
///
/// `checkpoint` is exactly the JSON that `state.sqlite` stores for the device (its gate, its
/// detector and the latest fix taken; non-finite times as `"inf"`, `"-inf"`, `"nan"`), so that
/// there is one checkpoint format. Regions are named by id: a record restored against a set
/// that no longer holds a region drops that visit without an event.
extension GeofenceEngine {
  /// The record of `device` as the engine holds it (restored from the store first when it is
  /// not in memory), or nil when the engine has never seen the device.
  /// - Returns: one line of JSON, without a line end.
  /// - Throws: ``EngineError/store(_:)`` when the store cannot be read.
  /// - Complexity: O(m + p) for m visits and p pending enters; allocates.
  public func checkpointRecord(device: String) throws(EngineError) -> String? {
    guard let d = try loadedDevice(device) else { return nil }
    var out: [UInt8] = Array("{\"checkpoint\":".utf8)
    Self.checkpoint(of: d).appendJSON(to: &out)
    JSONText.append(",\"device_id\":", to: &out)
    JSONText.appendQuoted(device, to: &out)
    out.append(UInt8(ascii: "}"))
    return String(decoding: out, as: UTF8.self)
  }

  /// Restores a device from a record of ``checkpointRecord(device:)``, as if this engine had
  /// taken that device's fixes: its later fixes continue its visits (no second ENTER for a
  /// region it is inside, dwell timers keep running), and a fix at or before the record's
  /// latest fix time is dropped as stale.
  ///
  /// Only a device the engine does not hold yet can be restored: its first record comes
  /// before its first fix. The device is marked changed, so that ``checkpoint()`` saves it
  /// in a directory store.
  /// - Parameter record: the record's UTF-8 bytes (one JSON object; surrounding spaces allowed).
  /// - Returns: the restored device's id.
  /// - Throws: ``EngineError/invalidCheckpoint(_:)`` when the bytes are not a record, the
  ///   checkpoint is inconsistent (a coordinate or time out of range, a negative count), or the engine
  ///   already holds the device; ``EngineError/store(_:)`` when the store cannot be read.
  @discardableResult
  public func restoreDevice(fromCheckpointRecord record: some Collection<UInt8>)
    throws(EngineError) -> String
  {
    let decoded: CheckpointRecord
    do {
      guard case .object(let members) = try JSONDocument.parse(record),
        let checkpoint = members["checkpoint"], case .string(let id)? = members["device_id"]
      else { throw CheckpointJSONError(message: "not a record") }
      decoded = CheckpointRecord(
        checkpoint: try DeviceCheckpoint(jsonValue: checkpoint), deviceID: id)
    } catch {
      throw .invalidCheckpoint(
        "not a checkpoint record {\"checkpoint\": {...}, \"device_id\": \"...\"}")
    }
    let id = decoded.deviceID
    guard !id.isEmpty else { throw .invalidCheckpoint("device_id must be a non-empty string") }
    try claimState()
    guard try loadedDevice(id) == nil else {
      throw .invalidCheckpoint(
        "device \"\(id)\" is already known (a record comes before its fixes)")
    }
    guard var device = restoredDevice(from: decoded.checkpoint) else {
      throw .invalidCheckpoint("device \"\(id)\": inconsistent checkpoint")
    }
    device.dirty = true
    devices[DeviceKey(id)] = device
    return id
  }
}

/// One line of ``GeofenceEngine/checkpointRecord(device:)``.
struct CheckpointRecord {
  var checkpoint: DeviceCheckpoint
  var deviceID: String
}
