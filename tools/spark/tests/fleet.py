"""A fleet of devices made from the real tracks in data/tracks, interleaved in time.

Every timed track becomes several devices: device k replays track k % T with its times moved
so that the fleet starts together (device k begins k * 37 s after the first), so that the
devices' fixes interleave. Coordinates and accuracies keep their text from the files. Half
the devices give RFC 3339 times, the other half epoch seconds (both forms `geofence stream`
reads). Read here with the standard library only, independently of the engine's readers.
"""

import csv
import datetime as dt
import decimal
import json
import os
import re
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DATA = os.path.join(ROOT, "data")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
BASE = decimal.Decimal(1_767_225_600)  # 2026-01-01T00:00:00Z

# Tracks whose points have no time, or times outside 1980-2100 (Mojstrovka.gpx: 1901).
UNTIMED = {"Mojstrovka.gpx", "ExampleTrack_NoTime.gpx", "ecology-trail-and-lovers-lane-loop.gpx",
           "route.gpx", "cerknicko-without-times.gpx"}


def instant(text):
    """Seconds since the epoch of an RFC 3339 time (a missing zone is UTC), as a Decimal."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?",
                     text.strip())
    if not m:
        return None
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    zone = m.group(8) or "Z"
    offset = 0
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    whole = (dt.datetime(y, mo, d, h, mi, s, tzinfo=dt.timezone.utc) - EPOCH).total_seconds()
    return decimal.Decimal(int(whole) - offset) + decimal.Decimal(m.group(7) or "0")


def read_gpx(path):
    root = ET.parse(path).getroot()
    local = lambda tag: tag.rsplit("}", 1)[-1]
    points = [e for e in root.iter() if local(e.tag) in ("trkpt", "rtept")]
    if not points:
        points = [e for e in root.iter() if local(e.tag) == "wpt"]
    out = []
    for p in points:
        time = next((c.text for c in p if local(c.tag) == "time" and c.text), None)
        t = instant(time) if time else None
        if t is not None:
            out.append((t, p.get("lat").strip(), p.get("lon").strip(), None))
    return out


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter=";"))
    out = []
    for r in rows:
        t = instant(r["tracked_at"])
        if t is not None:
            out.append((t, r["latitude"].strip(), r["longitude"].strip(),
                        (r.get("accuracy") or "").strip() or None))
    return out


def tracks():
    """(name, fixes) of every timed track, fixes sorted by (time, latitude, longitude)."""
    found = []
    for name in sorted(os.listdir(os.path.join(DATA, "tracks", "csv"))):
        found.append((name, read_csv(os.path.join(DATA, "tracks", "csv", name))))
    for name in sorted(os.listdir(os.path.join(DATA, "tracks", "gpx"))):
        if name.endswith(".gpx") and name not in UNTIMED:
            found.append((name, read_gpx(os.path.join(DATA, "tracks", "gpx", name))))
    kept = []
    for name, fixes in found:
        # In 1980..2100, the range the engine accepts.
        fixes = [f for f in fixes if 315_964_800 <= f[0] < 4_102_444_800]
        # One fix per (time, position): the order of exact duplicates is not defined.
        unique = sorted(set(fixes), key=lambda f: (f[0], float(f[1]), float(f[2]), f[3] or ""))
        if len(unique) >= 2:
            kept.append((name, unique))
    return kept


def rfc3339(seconds):
    whole = int(seconds // 1)
    micros = int((seconds - whole) * 1_000_000)
    return (EPOCH + dt.timedelta(seconds=whole, microseconds=micros)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def fleet(copies):
    """Rows (time Decimal, device, time JSON value text, lat, lon, accuracy) of the fleet,
    in time order (ties by device, then position)."""
    rows = []
    k = 0
    for copy in range(copies):
        for name, fixes in tracks():
            device = f"{os.path.splitext(name)[0]}-{copy:03d}"
            shift = BASE + 37 * k - fixes[0][0]
            for t0, lat, lon, acc in fixes:
                t = t0 + shift
                value = json.dumps(rfc3339(t)) if k % 2 == 0 else str(t)
                rows.append((t, device, value, lat, lon, acc))
            k += 1
    rows.sort(key=lambda r: (r[0], r[1], float(r[3]), float(r[4])))
    return rows


def line(row):
    _, device, value, lat, lon, acc = row
    s = f'{{"device_id":{json.dumps(device)},"time":{value},"latitude":{lat},"longitude":{lon}'
    return s + (f',"accuracy":{acc}}}' if acc is not None else "}")


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(line(r) + "\n")
    return path
