"""SQLite store: accounts, versioned geofence snapshots, change history and uploaded events.

Versioning model
----------------
Each account has an integer ``version`` that grows by one for every write that changes its
geofence set. A geofence row is valid for the half-open version range
``[valid_from, valid_to)`` (``valid_to`` NULL means "still current"), so the set as it was at any
kept version ``V`` is ``valid_from <= V AND (valid_to IS NULL OR valid_to > V)``. A listing cursor
pins ``V``; keyset pagination on ``id`` inside that snapshot keeps every page of one listing
consistent while writes continue.

The ``changes`` table records, per version, the ids upserted or deleted at that version.
``history_floor`` is the oldest version from which both a snapshot listing and
``changes?since=`` can still be answered; after every write it moves to
``version - history_depth`` (never backwards) and older rows are deleted.

API keys
--------
No table holds a key. An account is named by the keyed hash of its key,
``HMAC-SHA256(secret, key)`` in hex (:meth:`Store.account_id`), in ``accounts.key`` and in
every ``account`` column. The 32-byte secret lives outside the database, in
``<db>.secret`` (mode 0600, created at first start), so a copy of the database alone does not
let anyone test guessed keys. Authentication looks the account up by that hash and confirms it
with :func:`hmac.compare_digest`; a database written before keyed hashes is converted in place
when it is opened (``server_meta.account_ids``).

Threading: one SQLite connection per thread (WAL mode, so readers never block the writer);
writes are serialised by a process-wide lock and run in ``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .geo import METRES_PER_DEGREE_OF_ARC_M, within_reach
from .validation import GeofenceDefinition, format_rfc3339, validate_event

SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (
    key TEXT PRIMARY KEY,
    version INTEGER NOT NULL DEFAULT 0,
    history_floor INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS geofence_rows (
    account TEXT NOT NULL,
    id TEXT NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    latitude REAL NOT NULL,
    longitude REAL NOT NULL,
    radius REAL NOT NULL,
    name TEXT,
    metadata TEXT,
    updated_at TEXT NOT NULL,
    geometry TEXT,
    PRIMARY KEY (account, id, valid_from)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS geofence_rows_by_valid_to ON geofence_rows (account, valid_to, id);
CREATE TABLE IF NOT EXISTS versions (
    account TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    upserted INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    PRIMARY KEY (account, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    account TEXT NOT NULL,
    version INTEGER NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (account, version, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batches (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account TEXT NOT NULL,
    received_at TEXT NOT NULL,
    attempt TEXT,
    idempotency_key TEXT,
    fault TEXT,
    accepted TEXT NOT NULL DEFAULT '[]',
    duplicates TEXT NOT NULL DEFAULT '[]',
    rejected TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    received_at TEXT NOT NULL,
    batch_seq INTEGER NOT NULL,
    UNIQUE (account, id)
);
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account TEXT NOT NULL,
    event_id TEXT NOT NULL,
    batch_seq INTEGER NOT NULL,
    outcome TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_by_event ON deliveries (account, event_id);
CREATE TABLE IF NOT EXISTS server_meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

ACCOUNT_ID_SCHEME = "hmac-sha256"
"""How account names derive from keys (``server_meta.account_ids``)."""

SECRET_BYTES = 32
"""Length of the HMAC secret, bytes (the SHA-256 block is 64; RFC 2104 asks for >= 32)."""

_ACCOUNT_COLUMNS = (("accounts", "key"), ("geofence_rows", "account"), ("versions", "account"),
                    ("changes", "account"), ("batches", "account"), ("events", "account"),
                    ("deliveries", "account"))

_TEMP_SCHEMA = """
CREATE TEMP TABLE IF NOT EXISTS incoming (
    id TEXT PRIMARY KEY, latitude REAL, longitude REAL, radius REAL, name TEXT, metadata TEXT,
    geometry TEXT
);
CREATE TEMP TABLE IF NOT EXISTS doomed (id TEXT PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS changed (id TEXT PRIMARY KEY);
"""

_GEOFENCE_COLUMNS = "id, latitude, longitude, radius, name, metadata, updated_at, geometry"

# Slack added to the latitude prefilter of near= queries so that rounding in the prefilter can
# never drop a geofence that the exact haversine test would keep.
_PREFILTER_SLACK_M = 1.0

DEFAULT_HISTORY_DEPTH = 100
"""Versions of history kept per account by default (``--history-depth``)."""

DEFAULT_MAX_CHANGES = 10_000
"""Largest change set answered by ``changes?since=`` by default (``--max-changes``)."""


class Gone(Exception):
    """The requested version is no longer (or was never) answerable; the client must re-list.

    ``code`` is the protocol error code: ``cursor_expired``, ``history_pruned``,
    ``unknown_version`` or ``changes_too_large``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Near:
    """A ``near=LAT,LON&radius_m=R`` filter: the device position in degrees and its reach in metres."""

    latitude: float
    longitude: float
    reach_m: float


@dataclass(frozen=True)
class WriteResult:
    """Outcome of a write: the account's version afterwards and what changed at it."""

    version: int
    changed: bool
    upserted: int
    deleted: int

    def as_json(self) -> dict[str, Any]:
        return {
            "version": version_token(self.version),
            "changed": self.changed,
            "upserted": self.upserted,
            "deleted": self.deleted,
        }


def version_token(version: int) -> str:
    """The protocol's opaque version string for an integer version: ``v<N>``."""
    return f"v{version}"


def parse_version_token(token: str) -> int | None:
    """Integer version from ``v<N>`` (or a bare ``N``), or ``None`` when malformed."""
    text = token[1:] if token[:1] in ("v", "V") else token
    if not text.isdigit() or len(text) > 18:
        return None
    return int(text)


def geofence_json(row: sqlite3.Row | tuple) -> dict[str, Any]:
    """Wire form of one stored geofence row (columns in ``_GEOFENCE_COLUMNS`` order)."""
    gid, lat, lon, radius, name, metadata, updated_at, geometry = row
    # A polygon is its geometry alone: the circle columns hold its bounding cap, which only
    # the near= filter reads, and are not sent (a client would take them for a circle).
    out: dict[str, Any] = (
        {"id": gid, "geometry": json.loads(geometry)} if geometry is not None
        else {"id": gid, "latitude": lat, "longitude": lon, "radius": radius})
    if name is not None:
        out["name"] = name
    if metadata is not None:
        out["metadata"] = json.loads(metadata)
    out["updated_at"] = updated_at
    return out


def _load_secret(path: str) -> bytes:
    """The secret kept in ``<path>.secret``; created (0600) with random bytes when missing."""
    if path == ":memory:":
        return secrets.token_bytes(SECRET_BYTES)
    secret_path = path + ".secret"
    try:
        fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(secret_path, "rb") as f:
            secret = f.read()
        if len(secret) < SECRET_BYTES:
            raise ValueError(f"{secret_path}: a secret needs at least {SECRET_BYTES} bytes")
        return secret
    secret = secrets.token_bytes(SECRET_BYTES)
    with os.fdopen(fd, "wb") as f:
        f.write(secret)
    return secret


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class Store:
    """All persistent state of the server, in one SQLite file.

    - Parameter path: the database file; created with its schema when missing.
    - Parameter history_depth: versions of history kept per account, >= 0
      (default ``DEFAULT_HISTORY_DEPTH``).
    - Parameter max_changes: the most ids one ``changes`` answer may carry before the client is
      told to re-list instead, >= 1 (default ``DEFAULT_MAX_CHANGES``).
    - Parameter clock: returns the current time; stamps ``updated_at`` and receipts.
    - Parameter secret: the HMAC secret that names accounts (see the module's *API keys*);
      default read from ``<path>.secret``, created there with :data:`SECRET_BYTES` random bytes
      when missing (a fresh random secret for ``:memory:``).
    """

    def __init__(
        self,
        path: str,
        history_depth: int = DEFAULT_HISTORY_DEPTH,
        max_changes: int = DEFAULT_MAX_CHANGES,
        clock: Callable[[], _dt.datetime] = _utc_now,
        secret: bytes | None = None,
    ) -> None:
        if history_depth < 0:
            raise ValueError("history_depth must be >= 0")
        if max_changes < 1:
            raise ValueError("max_changes must be >= 1")
        self.path = path
        self.history_depth = history_depth
        self.max_changes = max_changes
        self.clock = clock
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._secret = secret if secret is not None else _load_secret(path)
        conn = self._conn()
        conn.executescript(SCHEMA)
        self._add_geometry_column(conn)
        self._convert_plain_keys(conn)

    # -- account names ----------------------------------------------------------------------

    def account_id(self, key: str) -> str:
        """The stored name of ``key``'s account: ``HMAC-SHA256(secret, UTF-8 key)``, 64 hex digits."""
        return hmac.new(self._secret, key.encode("utf-8", "surrogatepass"),
                        hashlib.sha256).hexdigest()

    def _add_geometry_column(self, conn: sqlite3.Connection) -> None:
        """Adds ``geofence_rows.geometry`` (polygon geofences) to a database that predates it;
        its existing rows are circles, NULL there."""
        columns = {row[1] for row in conn.execute("PRAGMA table_info(geofence_rows)")}
        if "geometry" not in columns:
            with self._write_lock:
                conn.execute("ALTER TABLE geofence_rows ADD COLUMN geometry TEXT")

    def _convert_plain_keys(self, conn: sqlite3.Connection) -> None:
        """Replaces plain keys by their keyed hash in a database that predates keyed hashes."""
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT value FROM server_meta WHERE name = 'account_ids'").fetchone()
                if row is None:
                    conn.create_function("account_id", 1, self.account_id, deterministic=True)
                    for table, column in _ACCOUNT_COLUMNS:
                        conn.execute(f"UPDATE {table} SET {column} = account_id({column})")
                    conn.execute("INSERT INTO server_meta VALUES ('account_ids', ?)",
                                 (ACCOUNT_ID_SCHEME,))
                elif row[0] != ACCOUNT_ID_SCHEME:
                    raise ValueError(f"unknown account id scheme {row[0]!r} in {self.path}")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- connections and transactions -------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA temp_store=FILE")
            conn.create_function("within_reach", 6, within_reach, deterministic=True)
            conn.executescript(_TEMP_SCHEMA)
            self._local.conn = conn
        return conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent database snapshot."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    # -- accounts ---------------------------------------------------------------------------

    def ensure_account(self, key: str) -> None:
        """Create the account for ``key`` (empty, version 0) when it does not exist yet."""
        key = self.account_id(key)
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO accounts (key) VALUES (?)", (key,))

    def account_exists(self, key: str) -> bool:
        """Whether ``key`` names an account: found by its keyed hash, confirmed in constant time."""
        digest = self.account_id(key)
        row = self._conn().execute(
            "SELECT key FROM accounts WHERE key = ?", (digest,)).fetchone()
        return row is not None and hmac.compare_digest(row[0], digest)

    def current_version(self, key: str) -> int | None:
        key = self.account_id(key)
        row = self._conn().execute("SELECT version FROM accounts WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def reset(self) -> None:
        """Delete every account, geofence, change and event."""
        with self._write() as conn:
            for table in ("accounts", "geofence_rows", "versions", "changes", "batches", "events",
                          "deliveries"):
                conn.execute(f"DELETE FROM {table}")

    # -- geofence writes --------------------------------------------------------------------

    def replace_geofences(self, key: str, definitions: Iterable[GeofenceDefinition]) -> WriteResult:
        """Make ``definitions`` the account's whole set (creating the account if needed).

        Ids missing from ``definitions`` are deleted, new or different ones upserted, identical
        ones left alone. When nothing differs the version does not move. Within
        ``definitions`` a later duplicate id replaces an earlier one.
        Complexity: O((n + m) log m) for n incoming and m current geofences; memory is bounded
        (staging happens in a temporary table).
        """
        return self._apply(key, definitions, (), replace=True)

    def patch_geofences(
        self, key: str, upserts: Iterable[GeofenceDefinition], deletes: Iterable[str]
    ) -> WriteResult:
        """Upsert ``upserts`` and delete ``deletes`` (unknown ids are ignored) in one version."""
        return self._apply(key, upserts, deletes, replace=False)

    def _apply(
        self,
        key: str,
        incoming: Iterable[GeofenceDefinition],
        deletes: Iterable[str],
        replace: bool,
    ) -> WriteResult:
        key = self.account_id(key)
        now = format_rfc3339(self.clock())
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO accounts (key) VALUES (?)", (key,))
            (old_version,) = conn.execute(
                "SELECT version FROM accounts WHERE key = ?", (key,)
            ).fetchone()
            version = old_version + 1
            for table in ("incoming", "doomed", "changed"):
                conn.execute(f"DELETE FROM temp.{table}")
            conn.executemany(
                "INSERT OR REPLACE INTO temp.incoming VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    (d.id, d.latitude, d.longitude, d.radius_m, d.name, d.metadata_json,
                     d.geometry_json)
                    for d in incoming
                ),
            )
            if replace:
                conn.execute(
                    "INSERT INTO temp.doomed SELECT id FROM geofence_rows"
                    " WHERE account = ? AND valid_to IS NULL"
                    " AND id NOT IN (SELECT id FROM temp.incoming)",
                    (key,),
                )
            else:
                conn.executemany(
                    "INSERT OR IGNORE INTO temp.doomed SELECT ? WHERE ? NOT IN"
                    " (SELECT id FROM temp.incoming) AND EXISTS (SELECT 1 FROM geofence_rows"
                    " WHERE account = ? AND id = ? AND valid_to IS NULL)",
                    ((gid, gid, key, gid) for gid in deletes),
                )
            conn.execute(
                "INSERT INTO temp.changed SELECT i.id FROM temp.incoming i JOIN geofence_rows g"
                " ON g.account = ? AND g.id = i.id AND g.valid_to IS NULL"
                " WHERE g.latitude IS NOT i.latitude OR g.longitude IS NOT i.longitude"
                " OR g.radius IS NOT i.radius OR g.name IS NOT i.name"
                " OR g.metadata IS NOT i.metadata OR g.geometry IS NOT i.geometry",
                (key,),
            )
            deleted = conn.execute(
                "UPDATE geofence_rows SET valid_to = ? WHERE account = ? AND valid_to IS NULL"
                " AND id IN (SELECT id FROM temp.doomed UNION ALL SELECT id FROM temp.changed)",
                (version, key),
            ).rowcount
            deleted -= conn.execute("SELECT COUNT(*) FROM temp.changed").fetchone()[0]
            conn.execute(
                "INSERT INTO changes SELECT ?, ?, id FROM temp.doomed", (key, version)
            )
            new_rows = (
                " FROM temp.incoming i WHERE NOT EXISTS (SELECT 1 FROM geofence_rows g"
                " WHERE g.account = ? AND g.id = i.id AND g.valid_to IS NULL)"
            )
            conn.execute(
                "INSERT INTO changes SELECT ?, ?, i.id" + new_rows, (key, version, key)
            )
            upserted = conn.execute(
                "INSERT INTO geofence_rows (account, id, valid_from, valid_to, latitude,"
                " longitude, radius, name, metadata, updated_at, geometry)"
                " SELECT ?, i.id, ?, NULL, i.latitude, i.longitude,"
                " i.radius, i.name, i.metadata, ?, i.geometry" + new_rows,
                (key, version, now, key),
            ).rowcount
            for table in ("incoming", "doomed", "changed"):
                conn.execute(f"DELETE FROM temp.{table}")
            if upserted == 0 and deleted == 0:
                # Nothing differs: leave the version where it is (the account row may be new).
                conn.execute("DELETE FROM changes WHERE account = ? AND version = ?",
                             (key, version))
                return WriteResult(old_version, False, 0, 0)
            conn.execute("UPDATE accounts SET version = ? WHERE key = ?", (version, key))
            conn.execute(
                "INSERT INTO versions VALUES (?, ?, ?, ?, ?)",
                (key, version, now, upserted, deleted),
            )
            self._prune(conn, key, version)
            return WriteResult(version, True, upserted, deleted)

    def _prune(self, conn: sqlite3.Connection, key: str, version: int) -> None:
        floor = version - self.history_depth
        (old_floor,) = conn.execute(
            "SELECT history_floor FROM accounts WHERE key = ?", (key,)
        ).fetchone()
        if floor <= old_floor:
            return
        conn.execute("DELETE FROM changes WHERE account = ? AND version <= ?", (key, floor))
        conn.execute("DELETE FROM versions WHERE account = ? AND version < ?", (key, floor))
        conn.execute(
            "DELETE FROM geofence_rows WHERE account = ? AND valid_to IS NOT NULL"
            " AND valid_to <= ?",
            (key, floor),
        )
        conn.execute("UPDATE accounts SET history_floor = ? WHERE key = ?", (floor, key))

    # -- geofence reads ---------------------------------------------------------------------

    @staticmethod
    def _near_clause(near: Near | None, alias: str = "") -> tuple[str, tuple]:
        if near is None:
            return "", ()
        p = alias
        # Necessary condition first (the great-circle distance is at least the latitude
        # difference along a meridian), so the haversine runs only on a band of rows.
        clause = (
            f" AND ABS({p}latitude - ?) * ? <= ? + {p}radius + ?"
            f" AND within_reach(?, ?, ?, {p}latitude, {p}longitude, {p}radius)"
        )
        args = (
            near.latitude, METRES_PER_DEGREE_OF_ARC_M, near.reach_m, _PREFILTER_SLACK_M,
            near.latitude, near.longitude, near.reach_m,
        )
        return clause, args

    def list_page(
        self,
        key: str,
        pinned_version: int | None,
        after_id: str | None,
        limit: int,
        near: Near | None,
    ) -> tuple[int, list[dict[str, Any]], bool]:
        """One page of the account's set at one version, in ascending ``id`` order.

        ``pinned_version`` None lists the current version. Returns ``(version, geofences,
        has_more)``. Raises :class:`Gone` (``cursor_expired``) when the pinned version is older
        than the history floor or newer than the account.
        Complexity: O(log n + limit) row visits without ``near``; with ``near`` the scan also
        visits the rows it filters out (a latitude band prefilter keeps that cheap).
        Memory: O(limit).
        """
        key = self.account_id(key)
        near_sql, near_args = self._near_clause(near)
        with self._read() as conn:
            row = conn.execute(
                "SELECT version, history_floor FROM accounts WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return 0, [], False
            current, floor = row
            version = current if pinned_version is None else pinned_version
            if version < floor or version > current:
                raise Gone(
                    "cursor_expired",
                    f"the listing's snapshot {version_token(version)} is no longer kept;"
                    " restart the listing without a cursor",
                )
            rows = conn.execute(
                f"SELECT {_GEOFENCE_COLUMNS} FROM geofence_rows"
                " WHERE account = ? AND id > ? AND valid_from <= ?"
                " AND (valid_to IS NULL OR valid_to > ?)" + near_sql + " ORDER BY id LIMIT ?",
                (key, after_id or "", version, version, *near_args, limit + 1),
            ).fetchall()
        has_more = len(rows) > limit
        return version, [geofence_json(r) for r in rows[:limit]], has_more

    def changes_since(
        self, key: str, since: int, near: Near | None
    ) -> tuple[int, list[dict[str, Any]], list[str]]:
        """What changed in the account after version ``since``: ``(version, upserted, deleted)``.

        ``upserted`` holds the current form of every id written after ``since`` that still
        exists; ``deleted`` every id removed after ``since`` (it may name ids the client never
        had). With ``near``, upserted geofences now outside the area move to ``deleted``.
        Raises :class:`Gone` when ``since`` is below the history floor (``history_pruned``),
        above the current version (``unknown_version``), or the answer would hold more than
        ``max_changes`` ids (``changes_too_large``).
        """
        key = self.account_id(key)
        with self._read() as conn:
            row = conn.execute(
                "SELECT version, history_floor FROM accounts WHERE key = ?", (key,)
            ).fetchone()
            current, floor = row if row is not None else (0, 0)
            if since > current:
                raise Gone(
                    "unknown_version",
                    f"version {version_token(since)} is newer than the server's"
                    f" {version_token(current)}; do a full listing",
                )
            if since < floor:
                raise Gone(
                    "history_pruned",
                    f"history before {version_token(floor)} is no longer kept; do a full listing",
                )
            (count,) = conn.execute(
                "SELECT COUNT(DISTINCT id) FROM changes WHERE account = ? AND version > ?",
                (key, since),
            ).fetchone()
            if count > self.max_changes:
                raise Gone(
                    "changes_too_large",
                    f"{count} geofences changed since {version_token(since)}; do a full listing",
                )
            rows = conn.execute(
                "SELECT c.id, g.latitude, g.longitude, g.radius, g.name, g.metadata, g.updated_at,"
                " g.geometry"
                " FROM (SELECT DISTINCT id FROM changes WHERE account = ? AND version > ?) c"
                " LEFT JOIN geofence_rows g"
                " ON g.account = ? AND g.id = c.id AND g.valid_to IS NULL ORDER BY c.id",
                (key, since, key),
            ).fetchall()
        upserted: list[dict[str, Any]] = []
        deleted: list[str] = []
        for r in rows:
            if r[1] is None:
                deleted.append(r[0])
            elif near is not None and not within_reach(
                near.latitude, near.longitude, near.reach_m, r[1], r[2], r[3]
            ):
                deleted.append(r[0])
            else:
                upserted.append(geofence_json(r))
        return current, upserted, deleted

    def count_current(self, key: str) -> int:
        key = self.account_id(key)
        (n,) = self._conn().execute(
            "SELECT COUNT(*) FROM geofence_rows WHERE account = ? AND valid_to IS NULL", (key,)
        ).fetchone()
        return n

    # -- events -----------------------------------------------------------------------------

    def record_batch(
        self,
        key: str,
        events: list[Any],
        attempt: str | None,
        idempotency_key: str | None,
        fault: str | None,
    ) -> dict[str, list]:
        """Validate and store one uploaded batch; returns ``accepted``, ``duplicates``, ``rejected``.

        An event id already stored for this account (by an earlier batch or earlier in this
        one) is a duplicate and is not stored again. Every receipt of a valid event is logged
        with the batch's ``X-Attempt`` and ``Idempotency-Key`` for :meth:`events_report`.
        """
        key = self.account_id(key)
        now = format_rfc3339(self.clock())
        accepted: list[str] = []
        duplicates: list[str] = []
        rejected: list[dict[str, Any]] = []
        with self._write() as conn:
            batch_seq = conn.execute(
                "INSERT INTO batches (account, received_at, attempt, idempotency_key, fault)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, now, attempt, idempotency_key, fault),
            ).lastrowid
            for raw in events:
                reason = validate_event(raw)
                if reason is not None:
                    eid = raw.get("id") if isinstance(raw, dict) else None
                    rejected.append({"id": eid if isinstance(eid, str) else None,
                                     "reason": reason})
                    continue
                inserted = conn.execute(
                    "INSERT INTO events (account, id, body, received_at, batch_seq)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (account, id) DO NOTHING",
                    (key, raw["id"], json.dumps(raw, ensure_ascii=False), now, batch_seq),
                ).rowcount
                outcome = "accepted" if inserted == 1 else "duplicate"
                (accepted if inserted == 1 else duplicates).append(raw["id"])
                conn.execute(
                    "INSERT INTO deliveries (account, event_id, batch_seq, outcome)"
                    " VALUES (?, ?, ?, ?)",
                    (key, raw["id"], batch_seq, outcome),
                )
            conn.execute(
                "UPDATE batches SET accepted = ?, duplicates = ?, rejected = ? WHERE seq = ?",
                (json.dumps(accepted), json.dumps(duplicates), json.dumps(rejected), batch_seq),
            )
        return {"accepted": accepted, "duplicates": duplicates, "rejected": rejected}

    def events_report(self, key: str) -> dict[str, Any]:
        """Everything stored for ``key``'s uploads, for tests that assert exactly-once delivery."""
        given_key, key = key, self.account_id(key)
        with self._read() as conn:
            batches = conn.execute(
                "SELECT seq, received_at, attempt, idempotency_key, fault, accepted, duplicates,"
                " rejected FROM batches WHERE account = ? ORDER BY seq",
                (key,),
            ).fetchall()
            events = conn.execute(
                "SELECT id, body, received_at, batch_seq FROM events WHERE account = ?"
                " ORDER BY seq",
                (key,),
            ).fetchall()
            deliveries = conn.execute(
                "SELECT d.event_id, d.outcome, b.attempt, b.idempotency_key, b.seq"
                " FROM deliveries d JOIN batches b ON b.seq = d.batch_seq"
                " WHERE d.account = ? ORDER BY d.seq",
                (key,),
            ).fetchall()
        seen: dict[str, dict[str, Any]] = {}
        for event_id, _outcome, attempt, idem, batch_seq in deliveries:
            entry = seen.setdefault(
                event_id, {"count": 0, "attempts": [], "idempotency_keys": [], "batches": []}
            )
            entry["count"] += 1
            entry["attempts"].append(_attempt_value(attempt))
            entry["idempotency_keys"].append(idem)
            entry["batches"].append(batch_seq)
        return {
            "key": given_key,
            "event_count": len(events),
            "delivery_count": len(deliveries),
            "events": [
                {
                    "id": eid,
                    "received_at": received_at,
                    "batch": batch_seq,
                    **seen.get(eid, {"count": 0, "attempts": [], "idempotency_keys": [],
                                     "batches": []}),
                    "event": json.loads(body),
                }
                for eid, body, received_at, batch_seq in events
            ],
            "batches": [
                {
                    "seq": seq,
                    "received_at": received_at,
                    "attempt": _attempt_value(attempt),
                    "idempotency_key": idem,
                    "fault": fault,
                    "accepted": json.loads(acc),
                    "duplicates": json.loads(dup),
                    "rejected": json.loads(rej),
                }
                for seq, received_at, attempt, idem, fault, acc, dup, rej in batches
            ],
        }


def _attempt_value(raw: str | None) -> int | str | None:
    """``X-Attempt`` as an integer when it is one, else the header text as sent."""
    if raw is not None and raw.strip().isdigit():
        return int(raw.strip())
    return raw
