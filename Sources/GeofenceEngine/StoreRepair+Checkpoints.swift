import Foundation
import GeofenceTransitions
import JSONText
import SQLiteStore

/// Device rows of `state.sqlite` that SQLite reads but the engine cannot restore (the row's
/// JSON damaged, or a checkpoint that fails the detector's consistency checks): the engine
/// refuses to start such a device afresh (``EngineError/damagedCheckpoint(device:reason:)``),
/// so ``StoreRepair`` names them and moves the file aside without them.
extension StoreRepair {
  /// One damaged device row.
  struct DamagedCheckpoint: Hashable {
    var device: String
    var reason: String
  }

  /// The damaged device rows of the `state.sqlite` at `path`, by device id; none when the
  /// file or its table cannot be read (``sqliteProblem(_:)`` reports that).
  /// - Complexity: O(n) for n rows: each checkpoint is decoded and restored against an empty
  ///   set.
  static func damagedCheckpoints(_ path: String) -> [DamagedCheckpoint] {
    guard let database = try? Database(path: path, options: .init(readOnly: true)),
      let statement = try? database.prepare(
        "SELECT device_id, checkpoint FROM device_state ORDER BY device_id")
    else { return [] }
    let empty = LiveGeofenceSet(geofences: [])
    var damaged: [DamagedCheckpoint] = []
    while (try? statement.step()) == true {
      guard let device = statement.string(at: 0) else { continue }
      guard let text = statement.string(at: 1) else {
        damaged.append(.init(device: device, reason: "the checkpoint is not text"))
        continue
      }
      do {
        let saved = try DeviceCheckpoint(json: Array(text.utf8))
        if TransitionDetector(
          regions: empty.regions, configuration: TransitionConfiguration(),
          checkpoint: saved.detector, slotOfID: { _ in nil }) == nil
        {
          damaged.append(
            .init(
              device: device,
              reason:
                "inconsistent checkpoint (a coordinate or time out of range, a negative count)"))
        }
      } catch {
        damaged.append(.init(device: device, reason: error.description))
      }
    }
    return damaged
  }

  /// The problem text of damaged rows: their count and the first three, each with its reason.
  static func checkpointProblem(_ damaged: [DamagedCheckpoint]) -> String {
    let named = damaged.prefix(3).map { "device \(JSONText.quoted($0.device)): \($0.reason)" }
    return "\(damaged.count) device checkpoint(s) cannot be restored: "
      + named.joined(separator: "; ") + (damaged.count > 3 ? "; ..." : "")
  }
}
