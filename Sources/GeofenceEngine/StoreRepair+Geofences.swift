import GeofenceSync
import SQLiteStore

/// Rows of `geofences.sqlite` that SQLite reads but that do not form a valid geofence: opening
/// the synced set fails on them, so ``StoreRepair`` names them and moves the file aside
/// without them.
extension StoreRepair {
  /// The invalid geofence rows of the `geofences.sqlite` at `path`
  /// (``GeofenceSync/GeofenceStore/invalidRows(in:)``); none when the file cannot be read.
  static func invalidGeofences(_ path: String) -> [(key: SQLiteValue, reason: String)] {
    guard let database = try? Database(path: path, options: .init(readOnly: true)) else {
      return []
    }
    return GeofenceStore.invalidRows(in: database)
  }

  /// The problem text of invalid geofence rows: their count and the first three reasons.
  static func geofenceProblem(_ rows: [(key: SQLiteValue, reason: String)]) -> String {
    "\(rows.count) stored geofence(s) cannot be read: "
      + rows.prefix(3).map(\.reason).joined(separator: "; ") + (rows.count > 3 ? "; ..." : "")
  }
}
