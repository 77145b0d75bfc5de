"""Import geofences into an account from JSON, GeoJSON or CSV files.

Usage::

    python -m tools.server.import_geofences --db PATH --key KEY [--radius METRES]
        [--mode replace|merge] FILE...

Formats (chosen by content for ``.json``/``.geojson``, by extension for ``.csv``):

- JSON: ``[{"id", "latitude", "longitude", "radius", "name"?, "metadata"?}, ...]``.
- GeoJSON: a FeatureCollection (or one Feature) of Point, Polygon and MultiPolygon features;
  ``id`` from the feature id or ``properties.id``, ``name`` from properties, ``metadata`` from
  ``properties.metadata`` or else the remaining properties. A Point takes ``radius`` (or
  ``radius_m``) from properties; a Polygon or MultiPolygon is a polygon geofence whose
  ``geometry`` is the feature's (checked as :func:`validation.validate_geometry` says).
- CSV with a header row: ``id,name,latitude,longitude[,radius]`` (the radius also as
  ``radius_m``, ``radius_meters`` or ``radius_metres``, as the engine reads it); other columns go into
  ``metadata`` as strings (empty cells are left out). This reads ``data/places/*.csv`` as-is.

A missing or empty radius takes ``--radius``; without it such rows are rejected. Every rejected
row is reported as ``FILE:LINE: reason`` (``FILE[INDEX]`` for JSON) on standard error and the
rest are imported. A repeated id is rejected; its first occurrence is kept. ``replace`` (the
default) makes the files the account's whole set; ``merge`` only upserts. All files go in as one
version. Exit status: 0 on success, 1 when a file cannot be read, 64 for a usage error.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .store import Store, WriteResult
from .validation import GeofenceDefinition, validate_geofence

EX_USAGE = 64


class ImportFileError(Exception):
    """A file that cannot be read at all (missing, not JSON, no CSV header, unknown layout)."""


@dataclass
class ImportReport:
    """What an import did: how many geofences went in, and each rejected row with its reason."""

    imported: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    result: WriteResult | None = None


@dataclass(frozen=True)
class Rejection:
    """A row a reader could not turn into a geofence record, and why."""

    reason: str


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


RADIUS_COLUMNS = ("radius", "radius_m", "radius_meters", "radius_metres")


def _csv_records(path: Path, default_radius: float | None) -> Iterator[tuple[str, Any]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in ("id", "latitude", "longitude") if c not in header]
        if missing:
            raise ImportFileError(f"{path}: CSV header lacks {', '.join(missing)}")
        # The radius column under any name the engine's CSV reader accepts; the first wins.
        radius_column = next((c for c in header if c in RADIUS_COLUMNS), None)
        extra = [c for c in header
                 if c not in ("id", "name", "latitude", "longitude") and c != radius_column]
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row:
                yield where, Rejection("row has more cells than the header")
                continue
            radius_text = (row.get(radius_column) or "").strip() if radius_column else ""
            record: dict[str, Any] = {
                "id": (row.get("id") or "").strip(),
                "latitude": _number((row.get("latitude") or "").strip()),
                "longitude": _number((row.get("longitude") or "").strip()),
                "radius": _number(radius_text) if radius_text else default_radius,
            }
            if row.get("name"):
                record["name"] = row["name"]
            metadata = {c: row[c] for c in extra if row.get(c)}
            if metadata:
                record["metadata"] = metadata
            yield where, record


def _feature_record(feature: Any, default_radius: float | None) -> dict[str, Any] | Rejection:
    if not isinstance(feature, dict) or feature.get("type") != "Feature":
        return Rejection("not a GeoJSON Feature")
    geometry = feature.get("geometry")
    kind = geometry.get("type") if isinstance(geometry, dict) else None
    if kind not in ("Point", "Polygon", "MultiPolygon"):
        return Rejection("geometry is not a Point, Polygon or MultiPolygon")
    props = feature.get("properties") or {}
    if not isinstance(props, dict):
        return Rejection("properties must be an object")
    gid = feature.get("id", props.get("id"))
    if isinstance(gid, (int, float)) and not isinstance(gid, bool):
        gid = str(gid) if not isinstance(gid, float) or not gid.is_integer() else str(int(gid))
    record: dict[str, Any]
    if kind == "Point":
        coords = geometry.get("coordinates")
        if not isinstance(coords, list) or len(coords) < 2:
            return Rejection("Point coordinates must be [longitude, latitude]")
        radius = props.get("radius", props.get("radius_m"))
        record = {
            "id": gid,
            "latitude": coords[1],
            "longitude": coords[0],
            "radius": default_radius if radius is None else radius,
        }
    else:
        record = {"id": gid, "geometry": geometry}
    if props.get("name") is not None:
        record["name"] = props["name"]
    if isinstance(props.get("metadata"), dict):
        record["metadata"] = props["metadata"]
    else:
        rest = {k: v for k, v in props.items()
                if k not in ("id", "name", "radius", "radius_m", "metadata")}
        if rest:
            record["metadata"] = rest
    return record


def _json_records(path: Path, default_radius: float | None) -> Iterator[tuple[str, Any]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        raise ImportFileError(f"{path}: not JSON ({exc})") from None
    if isinstance(document, dict) and document.get("type") == "FeatureCollection":
        features = document.get("features")
        if not isinstance(features, list):
            raise ImportFileError(f"{path}: FeatureCollection without a features array")
        for index, feature in enumerate(features):
            yield f"{path}[{index}]", _feature_record(feature, default_radius)
    elif isinstance(document, dict) and document.get("type") == "Feature":
        yield f"{path}[0]", _feature_record(document, default_radius)
    elif isinstance(document, list):
        for index, item in enumerate(document):
            if (isinstance(item, dict) and item.get("radius") is None
                    and item.get("geometry") is None and default_radius is not None):
                item = {**item, "radius": default_radius}
            yield f"{path}[{index}]", item
    else:
        raise ImportFileError(
            f"{path}: expected a JSON array of geofences or a GeoJSON FeatureCollection"
        )


def read_records(path: Path, default_radius: float | None) -> Iterator[tuple[str, Any]]:
    """``(location, record or Rejection)`` for every row of one file, in file order."""
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        return _csv_records(path, default_radius)
    return _json_records(path, default_radius)


def definitions_from(
    paths: Iterable[Path], default_radius: float | None, report: ImportReport
) -> Iterator[GeofenceDefinition]:
    """Valid, first-seen definitions from ``paths``; rejections are appended to ``report``."""
    seen: set[str] = set()
    for path in paths:
        for where, record in read_records(path, default_radius):
            if isinstance(record, Rejection):
                report.rejected.append((where, record.reason))
                continue
            if (isinstance(record, dict) and record.get("radius") is None
                    and record.get("geometry") is None):
                report.rejected.append((where, "missing radius (give --radius for a default)"))
                continue
            definition, reason = validate_geofence(record)
            if definition is None:
                report.rejected.append((where, reason or "invalid"))
                continue
            if definition.id in seen:
                report.rejected.append((where, f"duplicate id {definition.id!r}"))
                continue
            seen.add(definition.id)
            report.imported += 1
            yield definition


def import_files(
    store: Store,
    key: str,
    paths: list[Path],
    default_radius: float | None = None,
    mode: str = "replace",
) -> ImportReport:
    """Read ``paths`` and write them to ``key``'s account as one version.

    Raises :class:`ImportFileError` (and writes nothing) when a file cannot be read.
    Memory: the set of ids seen plus SQLite's staging table; rows stream from the files.
    """
    for path in paths:
        if not path.is_file():
            raise ImportFileError(f"{path}: no such file")
    report = ImportReport()
    definitions = definitions_from(paths, default_radius, report)
    if mode == "replace":
        report.result = store.replace_geofences(key, definitions)
    elif mode == "merge":
        report.result = store.patch_geofences(key, definitions, ())
    else:
        raise ValueError(f"unknown mode {mode!r}")
    return report


class UsageExitParser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit with status 64 (EX_USAGE)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EX_USAGE, f"{self.prog}: error: {message}\n")


def positive_metres(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def print_report(report: ImportReport, key: str, stream: Any = sys.stderr) -> None:
    for where, reason in report.rejected:
        print(f"{where}: {reason}", file=stream)
    version = report.result.as_json()["version"] if report.result else "?"
    print(
        f"imported {report.imported} geofences into account {key!r}"
        f" ({len(report.rejected)} rejected); version {version}",
        file=stream,
    )


def main(argv: list[str] | None = None) -> int:
    parser = UsageExitParser(
        prog="python -m tools.server.import_geofences",
        description="Import geofences from JSON, GeoJSON or CSV files into one account.",
    )
    parser.add_argument("--db", required=True, help="SQLite database file (created if missing)")
    parser.add_argument("--key", required=True, help="API key of the account to write")
    parser.add_argument("--radius", type=positive_metres, default=None,
                        help="radius in metres for rows that have none")
    parser.add_argument("--mode", choices=("replace", "merge"), default="replace",
                        help="replace the account's set (default) or upsert into it")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    store = Store(args.db)
    try:
        report = import_files(store, args.key, args.files, args.radius, args.mode)
    except (ImportFileError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_report(report, args.key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
