import SQLiteStore

extension GeofenceStore {
  /// Replaces the stored account fingerprint `old` with `new` (an earlier version's
  /// fingerprint of a key by the current one, ``Networking/KeyFingerprint``); nothing
  /// happens when the stored one is not `old`. The set, its version and sync times are kept.
  /// - Throws: ``SQLiteStore/SQLiteError``.
  public func replaceAccount(_ old: String, with new: String) throws(SQLiteError) {
    try database.execute(
      "UPDATE sync_state SET account = ?2 WHERE singleton = 1 AND account = ?1",
      [.text(old), .text(new)])
  }
}
