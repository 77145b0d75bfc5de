#!/usr/bin/env python3
"""Independent re-computation of `geofence replay` for checking golden files.

It re-implements the transition rules documented on the Swift `TransitionDetector`,
`TransitionConfiguration` and `OutlierFilter` (default settings) from their documentation,
with distances from GeographicLib's geodesic inverse on a sphere of the IUGG mean radius
(Karney, "Algorithms for geodesics", J. Geodesy 87, 2013), not from the engine's haversine
code. It reads the simple track CSV layout of the bundled phone tracks (header with
latitude/longitude/accuracy/time aliases, `;` or `,`) and geofence CSVs
(`id,name,latitude,longitude[,radius]`).

Usage:
  replay_oracle.py --radius 1500 --regions towns.csv --radius 3000 --regions airports.csv \
      track.csv > events.jsonl
  replay_oracle.py ... track.csv --check data/expected/events.jsonl
Exit status: 0 when the check passes (or no check), 1 on a mismatch, 64 on usage errors.
"""
import argparse
import csv
import datetime as dt
import json
import math
import sys

from geographiclib.geodesic import Geodesic

R = 6371008.8  # IUGG mean Earth radius, metres
SPHERE = Geodesic(R, 0.0)

# Defaults of TransitionConfiguration / OutlierFilter.
MAX_ACCURACY = 200.0
HYST_MIN = 20.0
HYST_FRACTION = 0.1
LOITERING = 300.0
MAX_SPEED = 70.0
RECOVERY_COUNT = 3
RESET_GAP = 300.0


def dist(lat1, lon1, lat2, lon2):
    return SPHERE.Inverse(lat1, lon1, lat2, lon2, Geodesic.DISTANCE)["s12"]


def parse_time(text):
    text = text.strip()
    if not text:
        return None
    t = text.replace("T", " ").rstrip("Zz")
    date, _, clock = t.partition(" ")
    frac = 0.0
    if "." in clock:
        clock, f = clock.split(".", 1)
        frac = float("0." + f)
    base = dt.datetime.strptime(date + " " + clock, "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=dt.timezone.utc)
    return base.timestamp() + frac


def read_track(path):
    with open(path, newline="", encoding="utf-8") as fh:
        head = fh.readline()
        delim = ";" if head.count(";") > head.count(",") else ","
        fh.seek(0)
        rows = list(csv.reader(fh, delimiter=delim))
    cols = [c.strip().lower() for c in rows[0]]

    def col(*names):
        for n in names:
            if n in cols:
                return cols.index(n)
        return None

    ilat, ilon = col("latitude", "lat"), col("longitude", "lon", "lng")
    itime, iacc = col("tracked_at", "time", "timestamp"), col("accuracy", "hacc")
    idev = col("user_id", "device_id", "device")
    fixes = []
    for index, row in enumerate(rows[1:]):
        fixes.append({
            "index": index,
            "lat": float(row[ilat]), "lon": float(row[ilon]),
            "time": parse_time(row[itime]) if itime is not None else None,
            "acc": float(row[iacc]) if iacc is not None and row[iacc].strip() else None,
            "device": row[idev] if idev is not None else None,
        })
    return fixes


def read_regions(path, radius, bbox):
    lat0, lat1, lon0, lon1 = bbox
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            lat, lon = float(row["latitude"]), float(row["longitude"])
            r = float(row["radius"]) if row.get("radius") else radius
            # Only geofences near the track can produce events (radius <= 50 km here).
            if lat0 - 0.5 <= lat <= lat1 + 0.5 and lon0 - 0.7 <= lon <= lon1 + 0.7:
                out.append({"id": row["id"], "name": row["name"] or None,
                            "lat": lat, "lon": lon, "r": r})
    return out


def prepare(fixes):
    """Replay preparation: invalid accuracy, missing time, stable sort, duplicates."""
    drops = {}
    kept = []
    for f in fixes:
        if f["acc"] is not None and not f["acc"] >= 0:
            drops["invalidAccuracy"] = drops.get("invalidAccuracy", 0) + 1
        elif f["time"] is None:
            drops["missingTime"] = drops.get("missingTime", 0) + 1
        else:
            kept.append(f)
    kept.sort(key=lambda f: f["time"])  # Python's sort is stable
    out = []
    for f in kept:
        if out and out[-1]["time"] == f["time"]:
            same = (out[-1]["lat"], out[-1]["lon"]) == (f["lat"], f["lon"])
            key = "duplicateFix" if same else "conflictingTimestamp"
            drops[key] = drops.get(key, 0) + 1
            continue
        out.append(f)
    return out, drops


def plausible(a, b, a_time=None):
    """Speed test from fix a (at reference time a_time, default a's own time) to fix b."""
    d = dist(a["lat"], a["lon"], b["lat"], b["lon"])
    excess = d - (a["acc"] or 0) - (b["acc"] or 0)
    t0 = a["time"] if a_time is None else a_time
    return excess <= 0 or excess <= MAX_SPEED * (b["time"] - t0)


def replay(fixes, regions):
    fixes, drops = prepare(fixes)
    events = []
    inside = {}  # region id -> [enter time, dwell emitted]
    last = None
    last_ref_time = None  # an exact re-report of the last accepted position keeps its time
    last_filtered = -math.inf
    cand, cand_count = None, 0
    for f in fixes:
        if f["acc"] is not None and f["acc"] > MAX_ACCURACY:
            drops["inaccurate"] = drops.get("inaccurate", 0) + 1
            continue
        gap = f["time"] - last_filtered
        last_filtered = f["time"]
        if last is not None and gap < RESET_GAP and not plausible(last, f, last_ref_time):
            if cand is not None and f["time"] > cand["time"] and plausible(cand, f):
                if (f["lat"], f["lon"]) != (cand["lat"], cand["lon"]):
                    cand_count += 1
            else:
                cand_count = 1
            cand = f
            if cand_count < RECOVERY_COUNT:
                drops["outlier"] = drops.get("outlier", 0) + 1
                continue
        cand, cand_count = None, 0
        if last is None or (last["lat"], last["lon"]) != (f["lat"], f["lon"]):
            last_ref_time = f["time"]
        last = f
        acc = f["acc"] or 0.0
        exits, enters, dwells = [], [], []
        for reg in regions:
            d = dist(reg["lat"], reg["lon"], f["lat"], f["lon"])
            r = reg["r"]
            h = max(HYST_MIN, HYST_FRACTION * r)
            if reg["id"] in inside:
                if d - acc > r + h:
                    exits.append((reg, d, f["time"] - inside[reg["id"]][0]))
                    del inside[reg["id"]]
            elif d <= r and (f["acc"] is None or f["acc"] <= r):
                enters.append((reg, d, None))
                inside[reg["id"]] = [f["time"], False]
        for reg in regions:
            state = inside.get(reg["id"])
            if state and not state[1] and f["time"] - state[0] >= LOITERING:
                state[1] = True
                d = dist(reg["lat"], reg["lon"], f["lat"], f["lon"])
                dwells.append((reg, d, f["time"] - state[0]))
        for kind, group in (("exit", exits), ("enter", enters), ("dwell", dwells)):
            for reg, d, seconds in sorted(group, key=lambda g: g[0]["id"].encode()):
                events.append({"type": kind, "geofence_id": reg["id"],
                               "geofence_name": reg["name"], "device_id": f["device"],
                               "time": f["time"], "fix_index": f["index"], "distance_m": d,
                               "dwell_s": seconds if kind == "dwell" else None,
                               "visit_s": seconds if kind == "exit" else None})
    return events, drops


def compare(ours, golden_path):
    golden = [json.loads(line) for line in open(golden_path, encoding="utf-8") if line.strip()]
    problems = []
    if len(golden) != len(ours):
        problems.append(f"event count: golden {len(golden)}, oracle {len(ours)}")
    for i, (g, o) in enumerate(zip(golden, ours)):
        gt = dt.datetime.fromisoformat(g["time"].replace("Z", "+00:00")).timestamp()
        same = (g["type"] == o["type"] and g["geofence_id"] == o["geofence_id"]
                and g["fix_index"] == o["fix_index"] and abs(gt - o["time"]) < 0.0015
                and abs(g["distance_m"] - o["distance_m"]) < 0.002
                and (o["dwell_s"] is None) == (g.get("dwell_s") is None)
                and (o["dwell_s"] is None or abs(g["dwell_s"] - o["dwell_s"]) < 0.0015)
                and (o["visit_s"] is None) == (g.get("visit_s") is None)
                and (o["visit_s"] is None or abs(g["visit_s"] - o["visit_s"]) < 0.0015))
        if not same:
            problems.append(f"event {i}: golden {g} oracle {o}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", action="append", default=[], help="geofence CSV (repeatable)")
    ap.add_argument("--radius", action="append", type=float, default=[],
                    help="default radius in metres for the --regions file after it")
    ap.add_argument("--check", help="golden JSON Lines file to compare with")
    ap.add_argument("track")
    # Pair each --regions with the --radius given before it, in command-line order.
    order, radius, pairs = sys.argv[1:], None, []
    for i, arg in enumerate(order):
        if arg == "--radius":
            radius = float(order[i + 1])
        elif arg == "--regions":
            pairs.append((order[i + 1], radius))
    args = ap.parse_args()
    fixes = read_track(args.track)
    lats = [f["lat"] for f in fixes]
    lons = [f["lon"] for f in fixes]
    bbox = (min(lats), max(lats), min(lons), max(lons))
    regions = []
    for path, r in pairs:
        if r is None:
            sys.exit(f"replay_oracle: --radius must come before --regions {path}")
        regions += read_regions(path, r, bbox)
    events, drops = replay(fixes, regions)
    if args.check:
        problems = compare(events, args.check)
        for p in problems:
            print(p, file=sys.stderr)
        print(f"oracle: {len(events)} events, drops {drops}; "
              f"{'MISMATCH' if problems else 'golden file agrees'}", file=sys.stderr)
        return 1 if problems else 0
    for e in events:
        print(json.dumps(e))
    print(f"oracle: {len(events)} events, drops {drops}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
