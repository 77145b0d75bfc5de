import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import SQLiteStore

/// What the store knows about its set besides the geofences.
public struct StoredSyncState: Hashable, Sendable {
  /// Fingerprint of the API key the set was listed with (``Networking/KeyFingerprint``:
  /// `pbkdf2-sha256:` and 16 bytes of PBKDF2-HMAC-SHA256 in hex; a store written by an earlier
  /// version may hold its FNV-1a 64 form until the same key syncs again). `nil` before the
  /// first sync.
  public var accountFingerprint: String?
  /// The area the set was listed for (`near` and `radius_m`), or `nil` for the whole account.
  public var area: SyncArea?
  /// The set's version, `nil` before the first successful sync.
  public var version: String?
  /// The `ETag` of the listing that produced the set.
  public var etag: String?
  /// Number of geofences stored.
  public var geofenceCount: Int
  /// When the set last changed or was confirmed current (seconds since 1970).
  public var syncedAt: Double?
  /// When the last sync was attempted, successful or not.
  public var attemptedAt: Double?
  /// Why the last sync failed; `nil` after a successful one. A set with a stale reason is still
  /// the last good set.
  public var staleReason: String?

  /// Whether the last sync attempt failed.
  public var isStale: Bool { staleReason != nil }
}

/// A device's area for a filtered listing: geofences whose disc touches the disc of
/// `radiusMeters` around `center` (see `docs/sync-protocol.md`).
public struct SyncArea: Hashable, Sendable, CustomStringConvertible {
  public var center: Coordinate
  /// Reach around `center` in metres, in [0, 20 037 509].
  public var radiusMeters: Double

  public init(center: Coordinate, radiusMeters: Double) {
    self.center = center
    self.radiusMeters = radiusMeters
  }

  /// `LAT,LON` as sent in `near`.
  public var nearParameter: String { "\(center.latitude),\(center.longitude)" }
  /// As sent in `radius_m`.
  public var radiusParameter: String { "\(radiusMeters)" }

  /// `LAT,LON/R`, as stored.
  public var description: String { "\(nearParameter)/\(radiusParameter)" }

  init?(stored text: String) {
    let parts = text.split(separator: "/")
    guard parts.count == 2, let r = Double(parts[1]) else { return nil }
    let ll = parts[0].split(separator: ",")
    guard ll.count == 2, let lat = Double(ll[0]), let lon = Double(ll[1]),
      let c = try? Coordinate(latitude: lat, longitude: lon)
    else { return nil }
    self.init(center: c, radiusMeters: r)
  }
}

/// The persisted geofence set of one device, with its version, ETag and sync times, in one
/// SQLite file.
///
/// **Atomicity.** The set, its version and its ETag change together in one transaction:
/// ``commitListing(version:etag:account:area:at:heldBack:details:)`` and
/// ``applyChanges(version:etag:upserted:deleted:heldBack:at:details:)``. A full listing is first
/// written page by page to a staging table (so memory stays bounded by one page), and the
/// staging table replaces the set only at commit. A crash at any point leaves either the old
/// set or the new one, never a mix.
///
/// **Threads.** Like ``SQLiteStore/Database``: one thread at a time, not `Sendable`.
public final class GeofenceStore {
  /// The connection (for tests and diagnostics).
  public let database: Database

  static let migrations = [
    """
    CREATE TABLE geofence (
      id TEXT PRIMARY KEY NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL,
      radius_m REAL NOT NULL, name TEXT, metadata TEXT) WITHOUT ROWID;
    CREATE TABLE staging (
      id TEXT PRIMARY KEY NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL,
      radius_m REAL NOT NULL, name TEXT, metadata TEXT) WITHOUT ROWID;
    CREATE TABLE staging_held (id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
    CREATE TABLE sync_state (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      account TEXT, area TEXT, version TEXT, etag TEXT,
      geofence_count INTEGER NOT NULL DEFAULT 0,
      synced_at REAL, attempted_at REAL, stale_reason TEXT);
    INSERT INTO sync_state (singleton) VALUES (1);
    """,
    // Polygon geofences: `geometry` is the polygon in ``StoredPolygon``'s layout, NULL for a
    // circle; a polygon's latitude, longitude and radius_m are its bounding cap (the circle
    // the index holds). Staging is empty between listings, so it is made again.
    """
    ALTER TABLE geofence ADD COLUMN geometry BLOB;
    DROP TABLE staging;
    CREATE TABLE staging (
      id TEXT PRIMARY KEY NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL,
      radius_m REAL NOT NULL, name TEXT, metadata TEXT, geometry BLOB) WITHOUT ROWID;
    """,
    // The set's identity for caches built from it (the indexed snapshot): a random id of this
    // store file and a generation that every change of the set increments.
    """
    ALTER TABLE sync_state ADD COLUMN instance TEXT;
    ALTER TABLE sync_state ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
    UPDATE sync_state SET instance = lower(hex(randomblob(16)));
    """,
  ]

  /// The columns of a geofence row, in the order ``geofence(from:)`` reads them.
  static let columns = "id, latitude, longitude, radius_m, name, metadata, geometry"

  /// Opens (creating when missing) the store at `path` with write-ahead logging and
  /// `synchronous = FULL`, and brings its schema up to date.
  /// - Parameter path: a file path, or `:memory:`.
  /// - Throws: ``SQLiteStore/SQLiteError``.
  public init(path: String) throws(SQLiteError) {
    database = try Database(
      path: path, options: Database.Options(writeAheadLogging: true, refusesEmptyFile: true))
    try database.migrate(Self.migrations)
  }

  /// A private in-memory store.
  public static func inMemory() throws(SQLiteError) -> GeofenceStore {
    try GeofenceStore(path: ":memory:")
  }

  // MARK: Reading

  /// The sync state.
  public func state() throws(SQLiteError) -> StoredSyncState {
    let s = try database.prepare(
      "SELECT account, area, version, etag, geofence_count, synced_at, attempted_at, stale_reason "
        + "FROM sync_state WHERE singleton = 1")
    guard try s.step() else {
      return StoredSyncState(geofenceCount: 0)
    }
    return StoredSyncState(
      accountFingerprint: s.string(at: 0), area: s.string(at: 1).flatMap(SyncArea.init(stored:)),
      version: s.string(at: 2), etag: s.string(at: 3), geofenceCount: Int(s.int64(at: 4)),
      syncedAt: s.isNull(at: 5) ? nil : s.double(at: 5),
      attemptedAt: s.isNull(at: 6) ? nil : s.double(at: 6), staleReason: s.string(at: 7))
  }

  /// The stored set's identity: this store file's random id and the set's generation, which
  /// every ``commitListing(version:etag:account:area:at:heldBack:details:)`` and every
  /// ``applyChanges(version:etag:upserted:deleted:heldBack:at:details:)`` that changes a
  /// geofence increments, in the transaction that changes the set. Two reads give the same identity exactly when the set
  /// between them is the same (a cache built from the set is current while it holds).
  /// - Throws: ``SQLiteStore/SQLiteError``.
  public func setIdentity() throws(SQLiteError) -> (instance: String, generation: Int64) {
    let s = try database.prepare(
      "SELECT instance, generation FROM sync_state WHERE singleton = 1")
    guard try s.step() else { return ("", 0) }
    return (s.string(at: 0) ?? "", s.int64(at: 1))
  }

  /// Whether the stored set can be trusted as the version it claims: a version is stored and
  /// the number of rows equals the count recorded with it. Only then may a sync send
  /// `If-None-Match` or ask for changes since that version.
  /// - Complexity: O(n) (counts the rows).
  public func isSetReadable() -> Bool {
    guard let state = try? state(), state.version != nil,
      let s = try? database.prepare("SELECT count(*) FROM geofence"), (try? s.step()) == true
    else { return false }
    return Int(s.int64(at: 0)) == state.geofenceCount
  }

  /// Every stored geofence, in ascending UTF-8 id order.
  /// - Throws: ``SQLiteStore/SQLiteError``; a row that no longer forms a valid geofence is
  ///   reported as ``SQLiteStore/SQLiteError/Code/corrupt``.
  public func geofences() throws(SQLiteError) -> [Geofence] {
    var result: [Geofence] = []
    try forEachGeofence { result.append($0) }
    return result
  }

  /// Calls `body` with every stored geofence in ascending UTF-8 id order, one row at a time.
  public func forEachGeofence(_ body: (Geofence) throws(SQLiteError) -> Void) throws(SQLiteError) {
    let s = try database.prepare(
      "SELECT \(Self.columns) FROM geofence ORDER BY id")
    while try s.step() { try body(try Self.geofence(from: s)) }
  }

  /// The stored geofence with `id`, if any.
  public func geofence(id: String) throws(SQLiteError) -> Geofence? {
    try lookup(table: "geofence", id: id)
  }

  // MARK: Writing

  /// Records a failed sync: the set stays as it is; the state gets `reason` and the attempt
  /// time.
  public func markStale(reason: String, at time: Double) throws(SQLiteError) {
    try database.execute(
      "UPDATE sync_state SET stale_reason = ?, attempted_at = ? WHERE singleton = 1",
      [.text(reason), .real(time)])
  }

  /// Records that the server confirmed the stored version (a `304`, or changes with nothing
  /// changed and the same version): clears the stale reason and freshens the sync time.
  public func markCurrent(at time: Double) throws(SQLiteError) {
    try database.execute(
      "UPDATE sync_state SET stale_reason = NULL, synced_at = ?, attempted_at = ? "
        + "WHERE singleton = 1", [.real(time), .real(time)])
  }

  /// Empties the staging area before a listing.
  public func beginListing() throws(SQLiteError) {
    try database.execute("DELETE FROM staging; DELETE FROM staging_held")
  }

  /// Adds one page of a listing to the staging area (one transaction).
  ///
  /// A geofence whose id is already staged is compared with the staged copy: an identical copy
  /// counts once; a different one marks the id as held back (see ``commitListing``).
  /// - Parameters:
  ///   - geofences: valid geofences of the page.
  ///   - heldBack: ids of the page to hold back (definitions that failed validation).
  /// - Returns: the ids that became conflicting duplicates on this page.
  @discardableResult
  public func stage(_ geofences: [Geofence], heldBack: [String] = []) throws -> [String] {
    try database.transaction {
      let insert = try database.prepare(
        "INSERT INTO staging (\(Self.columns)) "
          + "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING")
      let hold = try database.prepare("INSERT OR IGNORE INTO staging_held (id) VALUES (?)")
      var conflicts: [String] = []
      for g in geofences {
        try Self.bind(g, to: insert)
        try insert.step()
        insert.reset()
        if database.changes == 0 {
          let staged = try lookup(table: "staging", id: g.id)
          if staged != g {
            try hold.bind(g.id, at: 1)
            try hold.step()
            hold.reset()
            if database.changes > 0 { conflicts.append(g.id) }
          }
        }
      }
      for id in heldBack {
        try hold.bind(id, at: 1)
        try hold.step()
        hold.reset()
      }
      return conflicts
    }
  }

  /// Replaces the set with the staged listing, in one transaction, and returns the diff.
  ///
  /// Held-back ids (conflicting duplicates and definitions that failed validation) keep the
  /// stored definition when there is one, and are left out otherwise.
  /// - Parameters:
  ///   - version: the listing's version; `etag` its ETag.
  ///   - account: the account fingerprint; `area` the listing's area.
  ///   - time: the sync time.
  ///   - details: whether the diff lists geofences (else counts only).
  /// - Complexity: O(n log n) for n geofences, in SQLite; memory O(changes) with details,
  ///   O(1) without.
  public func commitListing(
    version: String, etag: String?, account: String?, area: SyncArea?, at time: Double,
    details: Bool
  ) throws -> GeofenceDiff {
    try database.transaction {
      try database.execute(
        """
        DELETE FROM staging WHERE id IN (SELECT id FROM staging_held);
        INSERT INTO staging SELECT g.* FROM geofence g JOIN staging_held h ON h.id = g.id;
        """)
      var diff = GeofenceDiff(includesDetails: details)
      let changed = try database.prepare(
        """
        SELECT s.id, s.latitude, s.longitude, s.radius_m, s.name, s.metadata, s.geometry,
               g.id IS NULL,
               g.id IS NOT NULL AND (g.latitude != s.latitude OR g.longitude != s.longitude
                 OR g.radius_m != s.radius_m OR g.geometry IS NOT s.geometry)
        FROM staging s LEFT JOIN geofence g ON g.id = s.id
        WHERE g.id IS NULL OR g.latitude != s.latitude OR g.longitude != s.longitude
          OR g.radius_m != s.radius_m OR g.geometry IS NOT s.geometry
          OR g.name IS NOT s.name OR g.metadata IS NOT s.metadata
        ORDER BY s.id
        """)
      while try changed.step() {
        let category: GeofenceDiff.Category =
          changed.int64(at: 7) != 0
          ? .added : (changed.int64(at: 8) != 0 ? .geometryChanged : .metadataChanged)
        diff.record(category, details ? try Self.geofence(from: changed) : nil)
      }
      let removed = try database.prepare(
        "SELECT g.id FROM geofence g WHERE NOT EXISTS (SELECT 1 FROM staging s WHERE s.id = g.id) "
          + "ORDER BY g.id")
      while try removed.step() { diff.recordRemoval(removed.string(at: 0) ?? "") }
      let count = try database.prepare("SELECT count(*) FROM staging")
      _ = try count.step()
      let total = count.int64(at: 0)
      // Statements reading the tables must be reset before the tables are swapped.
      changed.reset()
      removed.reset()
      count.reset()
      try database.execute(
        """
        DROP TABLE geofence;
        ALTER TABLE staging RENAME TO geofence;
        CREATE TABLE staging (
          id TEXT PRIMARY KEY NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL,
          radius_m REAL NOT NULL, name TEXT, metadata TEXT, geometry BLOB) WITHOUT ROWID;
        DELETE FROM staging_held;
        """)
      try database.execute(
        "UPDATE sync_state SET account = ?, area = ?, version = ?, etag = ?, geofence_count = ?, "
          + "synced_at = ?, attempted_at = ?, stale_reason = NULL, generation = generation + 1 "
          + "WHERE singleton = 1",
        [
          account.map { .text($0) } ?? .null, area.map { .text($0.description) } ?? .null,
          .text(version), etag.map { .text($0) } ?? .null, .integer(total), .real(time),
          .real(time),
        ])
      return diff
    }
  }

  /// Applies an incremental answer to the set, in one transaction, and returns the diff.
  ///
  /// Upserts insert or replace by id; deletions remove by id (unknown ids are a no-op).
  /// Held-back ids are left as stored.
  /// - Complexity: O(k log n) for k changes and n stored geofences.
  public func applyChanges(
    version: String, etag: String?, upserted: [Geofence], deleted: [String],
    heldBack: Set<String> = [], at time: Double, details: Bool = true
  ) throws -> GeofenceDiff {
    try database.transaction {
      var diff = GeofenceDiff(includesDetails: details)
      let upsert = try database.prepare(
        "INSERT OR REPLACE INTO geofence (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?)")
      let delete = try database.prepare("DELETE FROM geofence WHERE id = ?")
      for g in upserted where !heldBack.contains(g.id) {
        let old = try lookup(table: "geofence", id: g.id)
        guard let category = GeofenceDiff.category(old: old, new: g) else { continue }
        try Self.bind(g, to: upsert)
        try upsert.step()
        upsert.reset()
        diff.record(category, g)
      }
      for id in deleted where !heldBack.contains(id) {
        try delete.bind(id, at: 1)
        try delete.step()
        delete.reset()
        if database.changes > 0 { diff.recordRemoval(id) }
      }
      diff.sortLists()
      let count = try database.prepare("SELECT count(*) FROM geofence")
      _ = try count.step()
      // The generation names the set (``setIdentity()``): answers that change nothing keep
      // it, so that the indexed snapshot and the engines that hold the set stay current.
      try database.execute(
        "UPDATE sync_state SET version = ?, etag = ?, geofence_count = ?, synced_at = ?, "
          + "attempted_at = ?, stale_reason = NULL, generation = generation + ? "
          + "WHERE singleton = 1",
        [
          .text(version), etag.map { .text($0) } ?? .null, .integer(count.int64(at: 0)),
          .real(time), .real(time), .integer(diff.isEmpty ? 0 : 1),
        ])
      return diff
    }
  }

  // MARK: Rows

  private func lookup(table: String, id: String) throws(SQLiteError) -> Geofence? {
    let s = try database.prepare(
      "SELECT \(Self.columns) FROM \(table) WHERE id = ?")
    try s.bind(id, at: 1)
    guard try s.step() else { return nil }
    return try Self.geofence(from: s)
  }

  static func bind(_ g: Geofence, to s: Statement) throws(SQLiteError) {
    try s.bind([
      .text(g.id), .real(g.region.center.latitude), .real(g.region.center.longitude),
      .real(g.region.radiusMeters), g.name.map { .text($0) } ?? .null,
      g.metadataJSON.map { .text($0) } ?? .null,
      g.polygon.map { .blob(StoredPolygon.encode($0)) } ?? .null,
    ])
  }

  /// Reads columns 0-6 (``columns``: id, latitude, longitude, radius_m, name, metadata,
  /// geometry). A row with a geometry is a polygon (its circle columns, the bounding cap, are
  /// not read); one without is a circle.
  ///
  /// Every value is checked as a definition is before it was stored: the id non-empty UTF-8
  /// text; a circle's latitude, longitude and radius numbers (SQLite would read text as 0) in
  /// range; the name NULL or UTF-8 text; the metadata NULL or the text of a JSON object (it is
  /// copied into every event as it is, so other text would corrupt the output).
  /// - Throws: ``SQLiteStore/SQLiteError/Code/corrupt`` naming the row and the value.
  static func geofence(from s: Statement) throws(SQLiteError) -> Geofence {
    func damaged(_ what: String) -> SQLiteError {
      let shown = s.validText(at: 0).map { "stored geofence \($0)" } ?? "a stored geofence row"
      return SQLiteError(
        extendedCode: SQLiteError.Code.corrupt.rawValue, message: "\(shown): \(what)")
    }
    guard let id = s.validText(at: 0), !id.isEmpty else {
      throw damaged("its id is not non-empty UTF-8 text")
    }
    if !s.isNull(at: 4), s.validText(at: 4) == nil { throw damaged("its name is not UTF-8 text") }
    let metadata = s.isNull(at: 5) ? nil : s.validText(at: 5)
    if !s.isNull(at: 5) {
      guard let metadata, case .object? = try? JSONDocument.parse(Array(metadata.utf8)) else {
        throw damaged("its metadata is not the text of a JSON object")
      }
    }
    if !s.isNull(at: 6) {
      switch StoredPolygon.decode(s.data(at: 6) ?? Data()) {
      case .success(let polygon):
        return Geofence(
          id: id, name: s.string(at: 4), shape: .polygon(polygon), metadataJSON: metadata)
      case .failure(let problem):
        throw damaged("\(problem)")
      }
    }
    guard s.isNumber(at: 1), s.isNumber(at: 2), s.isNumber(at: 3) else {
      throw damaged("its latitude, longitude or radius is not a number")
    }
    guard let center = try? Coordinate(latitude: s.double(at: 1), longitude: s.double(at: 2)),
      let region = try? CircularRegion(center: center, radiusMeters: s.double(at: 3))
    else {
      throw damaged("not a valid region")
    }
    return Geofence(id: id, name: s.string(at: 4), region: region, metadataJSON: metadata)
  }
}

extension GeofenceStore {
  /// The rows of the `geofence` table of `database` that SQLite reads but that do not form a
  /// valid geofence (a coordinate out of range, a negative or non-finite radius, a geometry
  /// blob that does not decode), as `(key, reason)` in id order, `key` the id column's value
  /// as stored (text, or whatever else a damaged row holds). Opening the
  /// set fails on such a row (``geofences()`` throws ``SQLiteStore/SQLiteError/Code/corrupt``),
  /// so `geofence repair` finds them here and copies every other row.
  /// - Returns: none when the table cannot be read (the file's own check reports that).
  /// - Complexity: O(n) for n rows; memory O(1) besides the result.
  public static func invalidRows(in database: Database) -> [(key: SQLiteValue, reason: String)] {
    guard let s = try? database.prepare("SELECT \(columns) FROM geofence ORDER BY id") else {
      return []
    }
    var result: [(key: SQLiteValue, reason: String)] = []
    while (try? s.step()) == true {
      do {
        _ = try geofence(from: s)
      } catch {
        result.append((s.value(at: 0), error.message))
      }
    }
    return result
  }
}
