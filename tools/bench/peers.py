#!/usr/bin/env python3
"""Runs the peer geofence engines on the workload files of `geofence bench --write-workloads`
and prints one table of throughput ratios (ours / peer) with the checksums compared.

Peers: the C baselines of peers.c (grid with haversine refine, the tuned three-tier grid with
inline unit vectors and a branch-free squared-chord test, cell lookup only, GEOS C API
STRtree, brute force), shapely 2 STRtree + haversine, an H3 cell cover in a dictionary +
haversine, and PostGIS ST_DWithin on geography with a GiST index (a throwaway cluster on
127.0.0.1). Containment everywhere: haversine distance <= radius on the sphere of radius
6,371,008.8 m, boundary inside (PostGIS: its own sphere, 6,371,008.771 m).

Checksum of a run over the first K fixes: pairs, sum of region ids mod 2^64, sum of
fix index x region id mod 2^64. A peer that measures only a prefix of the fixes (to bound its
run time) is checked against the C grid on the same prefix, and the C grid on all fixes against
ours.

Wall times on a shared machine also differ from one process to the next (a process tends to
keep one speed for its life) and drift over minutes, so the fast contenders are measured in
several processes and the median taken. With --geofence BINARY (what run-peers uses), ours and
the C grid, lookup and GEOS peers are measured in turn, workload by workload and process by
process (ours, c-grid, c-tuned, c-lookup, c-geos, ours, ...), so that each ratio compares figures taken
within seconds of each other. Without it, ours comes from one `geofence bench --from` JSON per
process (`--ours a.json,b.json`), measured before the peers.
"""
import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

EARTH_RADIUS_M = 6371008.8
MASK64 = (1 << 64) - 1
# The checksum fields every contender reports.
CHECKSUM_KEYS = ("pairs", "slot_sum", "weighted_sum")


def checksum_of(result):
    """The checksum fields of a result (ours or a C peer's JSON) as a dict."""
    return {k: result[k] for k in CHECKSUM_KEYS}

# Fixes each peer measures, by region count (None: all fixes; 0: skipped). Chosen so that
# each run stays within about half a minute on a 2-core machine.
LIMITS = {
    "c-grid": lambda n: None,
    "c-tuned": lambda n: None,
    "c-lookup": lambda n: None,
    "c-geos": lambda n: None if n <= 200_000 else 200_000,
    "c-brute": lambda n: 100_000 if n <= 20_000 else (20_000 if n <= 200_000 else 0),
    "shapely": lambda n: None if n <= 200_000 else 200_000,
    "h3": lambda n: 100_000 if n <= 200_000 else 0,
    "postgis": lambda n: 20_000 if n <= 20_000 else (5_000 if n <= 200_000 else 0),
}


def fixes_measured(peer, n, total):
    """How many of a workload's `total` fixes `peer` measures at N = `n` regions (0: skipped)."""
    limit = LIMITS[peer](n)
    return total if limit is None else min(limit, total)


SKIP_REASON = {
    "c-brute": "O(N) per fix: about 1 fix per ms at 1M regions",
    "h3": "the cover of 1M regions does not fit a Python dictionary in reasonable time and memory",
    "postgis": "about 1k fixes/s or less at 1M regions",
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def read_regions(path):
    a = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if not np.array_equal(a[:, 0], np.arange(len(a))):
        raise SystemExit(f"{path}: ids are not 0, 1, 2, ...")
    return a[:, 1].copy(), a[:, 2].copy(), a[:, 3].copy()


def read_fixes(path, limit):
    a = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2, max_rows=limit)
    return a[:, 2].copy(), a[:, 3].copy()


def cap_boxes(lat, lon, radius):
    """Bounding boxes of the caps, as BoundingBox.cap in the Swift engine (padded 1e-9 deg).
    Returns min/max lat/lon arrays; min_lon > max_lon wraps the antimeridian."""
    pad = 1e-9
    delta = radius / EARTH_RADIUS_M
    dd = np.degrees(delta) + pad
    mn = lat - dd
    mx = lat + dd
    full = (delta >= math.pi) | (mx >= 90) | (mn <= -90)
    mx = np.minimum(mx, 90)
    mn = np.maximum(mn, -90)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.sin(delta) / np.cos(np.radians(lat))
    full |= ~(ratio < 1)
    dlon = np.degrees(np.arcsin(np.where(full, 0, ratio))) + pad
    full |= dlon >= 180
    a = lon - dlon
    b = lon + dlon
    a = np.where(a < -180, a + 360, a)
    b = np.where(b > 180, b - 360, b)
    a = np.where(full, -180.0, a)
    b = np.where(full, 180.0, b)
    return mn, mx, a, b


def haversine_inside(flat, flon, rlat, rlon, radius):
    """Vectorised: hav(fix, centre) <= sin^2(r / 2R) (whole sphere when r / R >= pi)."""
    p1 = np.radians(flat)
    p2 = np.radians(rlat)
    s1 = np.sin((p2 - p1) / 2)
    s2 = np.sin(np.radians(rlon - flon) / 2)
    h = s1 * s1 + np.cos(p1) * np.cos(p2) * s2 * s2
    delta = np.minimum(radius / EARTH_RADIUS_M, math.pi)
    t = np.sin(delta / 2) ** 2
    return (h <= t) | (radius / EARTH_RADIUS_M >= math.pi)


class Sum:
    def __init__(self):
        self.pairs = 0
        self.slots = 0
        self.weighted = 0

    def add_arrays(self, fix_idx, slots):
        f = fix_idx.astype(np.uint64)
        s = slots.astype(np.uint64)
        self.pairs += len(s)
        with np.errstate(over="ignore"):
            self.slots = (self.slots + int(s.sum(dtype=np.uint64))) & MASK64
            self.weighted = (self.weighted + int((f * s).sum(dtype=np.uint64))) & MASK64

    def as_dict(self):
        return {"pairs": self.pairs, "slot_sum": self.slots, "weighted_sum": self.weighted}


# ---- shapely 2 STRtree ----

def run_shapely(regions, fixes, repetitions):
    import shapely

    rlat, rlon, rr = regions
    flat, flon = fixes
    mn, mx, a, b = cap_boxes(rlat, rlon, rr)
    wrap = a > b
    t0 = time.perf_counter()
    owner = np.concatenate([np.arange(len(rlat)), np.nonzero(wrap)[0]])
    x0 = np.concatenate([np.where(wrap, a, a), np.full(wrap.sum(), -180.0)])
    x1 = np.concatenate([np.where(wrap, 180.0, b), b[wrap]])
    y0 = np.concatenate([mn, mn[wrap]])
    y1 = np.concatenate([mx, mx[wrap]])
    tree = shapely.STRtree(shapely.box(x0, y0, x1, y1))
    points = shapely.points(flon, flat)
    tree.query(points[:1])  # the tree is built lazily
    build = time.perf_counter() - t0
    rates = []
    result = None
    for _ in range(repetitions):
        s = Sum()
        t0 = time.perf_counter()
        chunk = 20_000
        for start in range(0, len(flat), chunk):
            pi, ti = tree.query(points[start:start + chunk])
            slots = owner[ti]
            fi = pi + start
            keep = haversine_inside(flat[fi], flon[fi], rlat[slots], rlon[slots], rr[slots])
            s.add_arrays(fi[keep], slots[keep])
        rates.append(len(flat) / (time.perf_counter() - t0))
        result = s
    return build, float(np.median(rates)), result


# ---- H3 cover ----

def run_h3(regions, fixes, repetitions):
    import h3.api.basic_int as h3

    rlat, rlon, rr = regions
    flat, flon = fixes
    edges = [h3.average_hexagon_edge_length(res, unit="m") for res in range(16)]
    t0 = time.perf_counter()
    cover = {}
    everywhere = []
    used = set()
    for i in range(len(rlat)):
        r = rr[i]
        # Finest resolution whose average edge is at least the radius; a 2-ring disk then
        # reaches at least 4.3 edges from the centre's cell centre, over twice r + one edge.
        res = max([k for k in range(16) if edges[k] >= r], default=-1)
        if res < 0 or abs(rlat[i]) + math.degrees(r / EARTH_RADIUS_M) * 3 > 89.9:
            everywhere.append(i)
            continue
        used.add(res)
        for c in h3.grid_disk(h3.latlng_to_cell(rlat[i], rlon[i], res), 2):
            cover.setdefault(c, []).append(i)
    levels = sorted(used, reverse=True)
    build = time.perf_counter() - t0
    finest = levels[0] if levels else 0
    coarser = levels[1:]
    rl = np.radians(rlat).tolist()
    rlo = np.radians(rlon).tolist()
    rc = np.cos(np.radians(rlat)).tolist()
    th = [math.sin(min(r / EARTH_RADIUS_M, math.pi) / 2) ** 2 if r / EARTH_RADIUS_M < math.pi else 2.0 for r in rr]
    latl = flat.tolist()
    lonl = flon.tolist()
    rates = []
    result = None
    sin = math.sin
    cos = math.cos
    for _ in range(repetitions):
        pairs = 0
        ssum = 0
        wsum = 0
        t0 = time.perf_counter()
        for f in range(len(latl)):
            la = latl[f]
            lo = lonl[f]
            p1 = math.radians(la)
            l1 = math.radians(lo)
            c1 = cos(p1)
            cell = h3.latlng_to_cell(la, lo, finest)
            cand = list(everywhere)
            got = cover.get(cell)
            if got:
                cand += got
            for res in coarser:
                got = cover.get(h3.cell_to_parent(cell, res))
                if got:
                    cand += got
            seen = set()
            for i in cand:
                if i in seen:
                    continue
                seen.add(i)
                s1 = sin((rl[i] - p1) / 2)
                s2 = sin((rlo[i] - l1) / 2)
                if s1 * s1 + c1 * rc[i] * s2 * s2 <= th[i]:
                    pairs += 1
                    ssum += i
                    wsum += f * i
        rates.append(len(latl) / (time.perf_counter() - t0))
        s = Sum()
        s.pairs, s.slots, s.weighted = pairs, ssum & MASK64, wsum & MASK64
        result = s
    return build, float(np.median(rates)), result


# ---- PostGIS ----

class PostGIS:
    """A throwaway cluster in a temporary directory, on 127.0.0.1 and a free port, run as an
    unprivileged user when started as root."""

    def __init__(self):
        self.bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
        if not os.path.exists(os.path.join(self.bindir, "initdb")):
            self.bindir = sorted(
                os.path.join("/usr/lib/postgresql", v, "bin") for v in os.listdir("/usr/lib/postgresql"))[-1]
        self.dir = tempfile.mkdtemp(prefix="geofence-pg-")
        os.chmod(self.dir, 0o777)
        self.user = None
        if os.geteuid() == 0:
            self.user = "geofencebench"
            if subprocess.run(["id", self.user], capture_output=True).returncode != 0:
                subprocess.run(["useradd", "--system", "--no-create-home", self.user], check=True)
            shutil.chown(self.dir, self.user)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.data = os.path.join(self.dir, "data")
        self._run([os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", "bench", "-A", "trust"])
        self._run([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-w", "-l", os.path.join(self.dir, "log"),
                   "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c shared_buffers=256MB "
                         f"-c work_mem=64MB -c fsync=off -c synchronous_commit=off -c jit=off", "start"])

    def _run(self, cmd, **kw):
        if self.user:
            cmd = ["runuser", "-u", self.user, "--"] + cmd
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)

    def psql(self, sql):
        out = subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "bench", "-d", "postgres",
             "-v", "ON_ERROR_STOP=1", "-q", "-At", "-F", ",", "-c", "SET client_min_messages = warning", "-f", "-"],
            input=sql, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "psql failed")
        return out.stdout

    def stop(self):
        try:
            self._run([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_postgis(pg, regions_path, fixes, max_radius):
    flat, flon = fixes
    tmp = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    for i, (la, lo) in enumerate(zip(flat.tolist(), flon.tolist())):
        tmp.write(f"{i},{la!r},{lo!r}\n")
    tmp.close()
    pg.psql(f"""
CREATE EXTENSION IF NOT EXISTS postgis;
DROP TABLE IF EXISTS rin, fin, regions, fixes;
CREATE UNLOGGED TABLE rin(id int, lat float8, lon float8, radius float8);
\\copy rin FROM '{regions_path}' CSV HEADER
CREATE UNLOGGED TABLE fin(idx bigint, lat float8, lon float8);
\\copy fin FROM '{tmp.name}' CSV
CREATE UNLOGGED TABLE fixes AS SELECT idx, ST_SetSRID(ST_MakePoint(lon, lat), 4326)::geography AS g FROM fin;
""")
    os.unlink(tmp.name)
    t0 = time.perf_counter()
    pg.psql("""
CREATE UNLOGGED TABLE regions AS
  SELECT id, radius, ST_SetSRID(ST_MakePoint(lon, lat), 4326)::geography AS g FROM rin;
CREATE INDEX regions_g ON regions USING gist (g);
ANALYZE regions; ANALYZE fixes;
""")
    build = time.perf_counter() - t0
    # A per-row radius cannot drive the index, so the index condition uses the largest radius
    # and the exact test the region's own.
    query = f"""
SET max_parallel_workers_per_gather = 0;
SELECT count(*), coalesce(sum(r.id::numeric), 0), coalesce(sum(f.idx::numeric * r.id), 0)
FROM fixes f JOIN regions r
  ON ST_DWithin(r.g, f.g, {max_radius!r}, false) AND ST_DWithin(r.g, f.g, r.radius, false);
"""
    elapsed, s = timed_checksum(pg, query)
    return build, len(flat) / elapsed, s


def timed_checksum(pg, query):
    """Runs a query giving `count, sum of slots, sum of fix index x slot` in one row: its
    wall time in seconds and the checksum (sums mod 2^64, as peers.c)."""
    t0 = time.perf_counter()
    out = pg.psql(query).strip().splitlines()[-1]
    elapsed = time.perf_counter() - t0
    n, ssum, wsum = out.split(",")
    s = Sum()
    s.pairs, s.slots, s.weighted = int(n), int(ssum) & MASK64, int(wsum) & MASK64
    return elapsed, s


# ---- driver ----

class ChecksumMismatch(Exception):
    """Two measurements of one contender gave different answers."""


def run_c_once(binary, mode, regions_path, fixes_path, limit, repetitions, threads, min_seconds=0.0):
    """One process of peers.c: its JSON result."""
    cmd = [binary, mode, regions_path, fixes_path, "--repetitions", str(repetitions), "--threads", str(threads),
           "--min-seconds", str(min_seconds)]
    if limit:
        cmd += ["--limit", str(limit)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"peers {mode} exited with status {done.returncode}: "
                           f"{done.stderr.strip() or 'no message'}")
    return json.loads(done.stdout)


def combine_c(mode, runs):
    """Several processes' results of one C peer: the first one's figures with the median
    throughput of all; every process must give the same checksum."""
    first = dict(runs[0])
    for r in runs[1:]:
        if checksum_of(r) != checksum_of(first):
            raise ChecksumMismatch(f"c-{mode}: processes disagree on the checksum "
                                   f"({checksum_of(first)} against {checksum_of(r)})")
    first["fixes_per_second"] = float(np.median([r["fixes_per_second"] for r in runs]))
    first["processes"] = len(runs)
    return first


def run_c(binary, mode, regions_path, fixes_path, limit, repetitions, threads, min_seconds=0.0,
          processes=1):
    """peers.c in `processes` separate processes, one after the other (see ``combine_c``)."""
    return combine_c(mode, [run_c_once(binary, mode, regions_path, fixes_path, limit, repetitions,
                                       threads, min_seconds) for _ in range(max(1, processes))])


# Workload kinds in the order `geofence bench` lists them.
KIND_ORDER = ("metro", "global", "mixed", "transitions", "real")


def kind_of(name):
    """The `geofence bench --workload` kind of a workload name (real-towns: real)."""
    return "real" if name.startswith("real") else name


def workload_path(directory, name, n, part):
    """The path of NAME-N-PART.csv in `directory` (part: regions or fixes)."""
    return os.path.join(directory, f"{name}-{n}-{part}.csv")


def workload_files(directory):
    """The (name, N) pairs of the workload files in `directory` (NAME-N-regions.csv with its
    NAME-N-fixes.csv), in `geofence bench` order: by kind, then name, then N."""
    found = []
    for file in os.listdir(directory):
        if not file.endswith("-regions.csv"):
            continue
        stem = file[:-len("-regions.csv")]
        name, _, n = stem.rpartition("-")
        kind = kind_of(name)
        if not n.isdigit() or n != str(int(n)) or kind not in KIND_ORDER:
            continue
        if os.path.exists(os.path.join(directory, f"{stem}-fixes.csv")):
            found.append((KIND_ORDER.index(kind), name, int(n)))
    return [(name, n) for _, name, n in sorted(found)]


def run_ours_once(binary, directory, name, n, repetitions, min_seconds, threads):
    """One `geofence bench --from` process over the single workload NAME-N of `directory`
    (its two files linked into a scratch directory): its JSON result."""
    with tempfile.TemporaryDirectory(prefix="geofence-one-") as scratch:
        for part in ("regions", "fixes"):
            os.symlink(os.path.abspath(workload_path(directory, name, n, part)),
                       workload_path(scratch, name, n, part))
        out = os.path.join(scratch, "ours.json")
        try:
            done = subprocess.run([binary, "bench", "--from", scratch, "--workload", kind_of(name),
                                   "--repetitions", str(repetitions), "--min-pass", str(min_seconds),
                                   "--threads", str(threads), "--json", out, "--quiet"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            raise SystemExit(f"peers.py: cannot run the geofence binary {binary}: {e}")
        if done.returncode != 0:
            raise SystemExit(f"peers.py: geofence bench on {name} N={n} exited with status"
                             f" {done.returncode}: {done.stderr.strip() or 'no message'}")
        try:
            with open(out) as f:
                results = json.load(f)["results"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"peers.py: geofence bench on {name} N={n} wrote no readable results: {e}")
    if not isinstance(results, list) or len(results) != 1:
        raise SystemExit(f"peers.py: geofence bench on {name} N={n} gave"
                         f" {len(results) if isinstance(results, list) else 'no list of'} results")
    if results[0].get("regions") != n:
        raise SystemExit(f"peers.py: {name}-{n}-regions.csv holds {results[0].get('regions')} regions,"
                         f" not the {n} its name says")
    return results[0]


# The peers whose bytes per region the table shows.
SIZED = ("c-grid", "c-tuned")

# The peers measured in turn with ours under --geofence.
INTERLEAVED = ("c-grid", "c-tuned", "c-lookup", "c-geos")


def measure_interleaved(args, peers, ours_paths):
    """Ours and the INTERLEAVED peers, workload by workload and process by process in turn.
    Writes ours' results of process K to ours_paths[K] (the form of `geofence bench --json`)
    and returns {(name, N, peer): [run, ...] or the exception that stopped that peer}."""
    fast = [p for p in peers if p in INTERLEAVED]
    ours_runs = [[] for _ in ours_paths]
    c_runs = {}
    for name, n in workload_files(args.dir):
        rpath = workload_path(args.dir, name, n, "regions")
        fpath = workload_path(args.dir, name, n, "fixes")
        for k in range(len(ours_paths)):
            log(f"{name} N={n}: ours, then {', '.join(fast) or 'no C peer'} (process {k + 1} of"
                f" {len(ours_paths)})")
            ours_runs[k].append(run_ours_once(args.geofence, args.dir, name, n, args.repetitions,
                                              args.min_seconds, args.threads))
            total = ours_runs[k][-1]["fixes"]
            for p in fast:
                key = (name, n, p)
                if isinstance(c_runs.get(key), Exception):
                    continue
                m = fixes_measured(p, n, total)
                if m == 0:
                    continue
                try:
                    c_runs.setdefault(key, []).append(
                        run_c_once(args.peers_binary, p[2:], rpath, fpath, None if m == total else m,
                                   args.repetitions, args.threads, args.min_seconds))
                except Exception as e:  # reported with the peer's row
                    c_runs[key] = e
    for path, results in zip(ours_paths, ours_runs):
        with open(path, "w") as f:
            json.dump({"tool": "geofence bench (one workload per process, in turn with the C peers)",
                       "results": results}, f, indent=1)
    return c_runs


# Fields of a `geofence bench` result that are medians over processes when several are given.
OURS_RATES = ("build_seconds", "fixes_per_second_1_thread", "fixes_per_second_all_threads",
              "detector_fixes_per_second_1_thread", "detector_fixes_per_second_all_threads")


def merge_ours(paths):
    """Results of several `geofence bench --from DIR --json` runs (one per process): the first
    run's results with each rate (and the build time) replaced by the median over the runs;
    the other fields (latency percentiles, rounds, resident bytes) are the first run's.
    The runs must list the same workloads and sizes, with the same fixes measured, checksums
    and detector counts; anything else stops the program with the file and the field."""
    if not paths:
        raise SystemExit("peers.py: --ours names no file")
    seen = set()
    for path in paths:
        if os.path.abspath(path) in seen:
            raise SystemExit(f"peers.py: --ours names {path} twice; each file is one process's run,"
                             " and a median over copies of one run would read as several")
        seen.add(os.path.abspath(path))
    runs = []
    for path in paths:
        try:
            with open(path) as f:
                results = json.load(f)["results"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"peers.py: cannot read the results of ours in {path}: {e}")
        runs.append({(r["workload"], r["regions"]): r for r in results})
    keys = list(runs[0])
    if not keys:
        raise SystemExit(f"peers.py: {paths[0]} holds no results")
    for path, run in zip(paths[1:], runs[1:]):
        if set(run) != set(keys):
            raise SystemExit(f"peers.py: {path} measures other workloads than {paths[0]}: "
                             f"{sorted(set(run) ^ set(keys))}")
    same_fields = ("fixes", "fixes_measured") + CHECKSUM_KEYS + (
        "detector_enters", "detector_exits", "detector_dwells", "detector_dropped_fixes")
    merged = []
    for key in keys:
        o = runs[0][key]
        for path, run in zip(paths[1:], runs[1:]):
            for k in same_fields:
                if run[key].get(k) != o.get(k):
                    raise SystemExit(f"peers.py: {key[0]} N={key[1]}: {k} is {run[key].get(k)} in {path}"
                                     f" but {o.get(k)} in {paths[0]}")
        m = dict(o)
        for k in OURS_RATES:
            if o.get(k) is not None:
                m[k] = float(np.median([run[key][k] for run in runs]))
        m["processes"] = len(runs)
        merged.append(m)
    return merged


def fmt_rate(v):
    if v is None:
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f}"


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"needs a positive integer, got {text!r}")
    return v


def seconds_0_to_600(text):
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 <= v <= 600:
        raise argparse.ArgumentTypeError(f"needs a number of seconds from 0 to 600, got {text!r}")
    return v


def check_writable(option, path):
    """Stops with a message unless `path` can be created: its directory exists."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise SystemExit(f"peers.py: {option} {path}: directory {parent} does not exist")


class ListPeers(argparse.Action):
    """--list-peers: prints the known peer names, comma-separated, and exits."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(",".join(LIMITS))
        parser.exit()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list-peers", nargs=0, action=ListPeers,
                    help="print the known peer names, comma-separated, and exit")
    ap.add_argument("--dir", required=True, help="workload files directory")
    ap.add_argument("--ours",
                    help="JSON written by geofence bench --from DIR --json; several, comma-separated,"
                         " for one per process (medians are taken). With --geofence: the files to"
                         " write, one per process")
    ap.add_argument("--geofence",
                    help="the geofence binary: measure ours in turn with the C grid, lookup and GEOS"
                         " peers, workload by workload, in --processes processes each")
    ap.add_argument("--processes", type=positive_int, default=1,
                    help="processes per measurement of the C grid, lookup and GEOS peers (median)")
    ap.add_argument("--write-ours", help="write the merged results of ours (medians) as JSON")
    ap.add_argument("--peers-binary", required=True, help="the compiled peers.c")
    ap.add_argument("--peers", default="c-grid,c-tuned,c-lookup,c-geos,shapely,h3,postgis,c-brute")
    ap.add_argument("--repetitions", type=positive_int, default=3)
    ap.add_argument("--min-seconds", type=seconds_0_to_600, default=0.2,
                    help="target length of a timed pass of the C peers: the fixes are replayed whole as"
                         " often as the first pass says it takes, plus a tenth (as geofence bench"
                         " --min-pass)")
    ap.add_argument("--threads", type=positive_int, default=os.cpu_count() or 1)
    ap.add_argument("--json", help="write every measurement as JSON")
    args = ap.parse_args()

    ours_paths = [p for p in (args.ours or "").split(",") if p]
    peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in peers if p not in LIMITS]
    if unknown:
        raise SystemExit(f"peers.py: unknown peer {', '.join(unknown)} in --peers"
                         f" (known: {', '.join(LIMITS)})")
    if not os.path.isdir(args.dir):
        raise SystemExit(f"peers.py: --dir {args.dir} is not a directory")
    for option, path in [("--write-ours", args.write_ours), ("--json", args.json)] + (
            [("--ours", p) for p in ours_paths] if args.geofence else []):
        if path:
            check_writable(option, path)
    interleaved = {}
    scratch = None
    if args.geofence:
        if not ours_paths:
            scratch = tempfile.TemporaryDirectory(prefix="geofence-ours-")
            ours_paths = [os.path.join(scratch.name, f"ours-{k + 1}.json") for k in range(args.processes)]
        if len(ours_paths) != args.processes or len(set(map(os.path.abspath, ours_paths))) != len(ours_paths):
            raise SystemExit(f"peers.py: with --geofence, --ours must name {args.processes} distinct file(s) to"
                             f" write, one per process (--processes {args.processes}); got {len(ours_paths)}:"
                             f" {','.join(ours_paths)}")
        if not workload_files(args.dir):
            raise SystemExit(f"peers.py: --dir {args.dir} holds no workload files (NAME-N-regions.csv"
                             " with NAME-N-fixes.csv, as geofence bench --write-workloads writes)")
        interleaved = measure_interleaved(args, peers, ours_paths)
    ours = merge_ours(ours_paths)
    if scratch:
        scratch.cleanup()
    if args.write_ours:
        with open(args.write_ours, "w") as f:
            json.dump({"tool": "geofence bench (median over processes)", "results": ours}, f, indent=1)
    rows = []
    notes = []
    pg = None
    try:
        for o in ours:
            name, n = o["workload"], o["regions"]
            rpath = workload_path(args.dir, name, n, "regions")
            fpath = workload_path(args.dir, name, n, "fixes")
            total = o["fixes"]
            ref_full = checksum_of(o)
            references = {}
            regions = None
            row = {"workload": name, "regions": n, "ours": o, "peers": {}}
            for p in peers:
                k = fixes_measured(p, n, total)
                if k == 0:
                    row["peers"][p] = {"skipped": SKIP_REASON.get(p, "skipped")}
                    continue
                if (name, n, p) not in interleaved:
                    log(f"{name} N={n}: {p} on {k} fixes")
                try:
                    if p.startswith("c-"):
                        runs = interleaved.get((name, n, p))
                        if isinstance(runs, Exception):
                            raise runs
                        if runs:
                            r = combine_c(p[2:], runs)
                        else:
                            r = run_c(args.peers_binary, p[2:], rpath, fpath, None if k == total else k,
                                      args.repetitions, args.threads, args.min_seconds,
                                      1 if p == "c-brute" else args.processes)
                        res = {"build_seconds": r["build_seconds"], "fixes_per_second": r["fixes_per_second"],
                               "fixes": r["fixes"], "threads": r["threads"],
                               "checksum": checksum_of(r)}
                        res["rounds"] = r.get("rounds")
                        res["processes"] = r.get("processes")
                        if p in ("c-grid", "c-tuned"):
                            res["bytes_per_region"] = r["bytes_per_region"]
                            res["cell_size_degrees"] = r["cell_size_degrees"]
                    else:
                        if regions is None:
                            regions = read_regions(rpath)
                        fixes = read_fixes(fpath, k)
                        if p == "shapely":
                            b, rate, s = run_shapely(regions, fixes, args.repetitions)
                        elif p == "h3":
                            b, rate, s = run_h3(regions, fixes, 1)
                        else:
                            if pg is None:
                                pg = PostGIS()
                            b, rate, s = run_postgis(pg, os.path.abspath(rpath), fixes, float(regions[2].max()))
                        res = {"build_seconds": b, "fixes_per_second": rate, "fixes": k, "threads": 1,
                               "checksum": s.as_dict()}
                except ChecksumMismatch as e:
                    row["peers"][p] = {"failed": str(e), "agrees": False}
                    notes.append(f"{name} N={n}: {e}")
                    continue
                except Exception as e:  # a peer failing must not hide the others; reported below
                    row["peers"][p] = {"failed": " ".join(str(e).split())[:400]}
                    continue
                # The reference checksum for this prefix.
                if res["fixes"] == total:
                    ref = ref_full
                else:
                    if res["fixes"] not in references:
                        g = run_c(args.peers_binary, "grid", rpath, fpath, res["fixes"], 1, 1)
                        references[res["fixes"]] = checksum_of(g)
                    ref = references[res["fixes"]]
                res["agrees"] = p == "c-lookup" or res["checksum"] == ref
                if not res["agrees"]:
                    notes.append(f"{name} N={n}: {p} checksum {res['checksum']} differs from {ref}")
                row["peers"][p] = res
            rows.append(row)
    finally:
        if pg:
            pg.stop()

    # Table: ours (1 thread, all threads), then per peer fixes/s and ratio ours(1T)/peer.
    threads = ours[0]["threads"] if ours else 1
    head = ["workload", "N", "ours 1T", f"ours {threads}T", "build s", "B/region"]
    for p in peers:
        head += [p, "ratio"] + (["B/region"] if p in SIZED else [])
    table = [head]
    for row in rows:
        o = row["ours"]
        line = [row["workload"], f"{row['regions']:,}", fmt_rate(o["fixes_per_second_1_thread"]),
                fmt_rate(o["fixes_per_second_all_threads"]), f"{o['build_seconds']:.3f}",
                f"{o['bytes_per_region']:.1f}"]
        for p in peers:
            r = row["peers"].get(p, {})
            if "skipped" in r:
                line += ["skip", "-"] + (["-"] if p in SIZED else [])
                continue
            if "failed" in r:
                line += ["FAILED", "-"] + (["-"] if p in SIZED else [])
                continue
            mark = "" if r.get("agrees") else " !"
            part = "" if r["fixes"] == o["fixes"] else "*"
            line += [fmt_rate(r["fixes_per_second"]) + part + mark,
                     f"{o['fixes_per_second_1_thread'] / r['fixes_per_second']:.2f}"]
            if p in SIZED:
                line.append(f"{r['bytes_per_region']:.1f}")
        table.append(line)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for j, r in enumerate(table):
        print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if j == 0:
            print("  ".join("-" * w for w in widths))
    print()
    print("ratio = ours (1 thread) / peer; * = peer measured on a prefix of the fixes (see LIMITS in"
          " peers.py), checked against the C grid on the same prefix; ! = checksum differs.")
    print(f"c-brute uses {args.threads} threads; every other peer one thread. c-lookup does no refine"
          " (cell lookup only: the limit of a grid design).")
    ran = [p for p in INTERLEAVED if any(p in row["peers"] and "fixes_per_second" in row["peers"][p]
                                         for row in rows)]
    if args.processes > 1 or ours and ours[0].get("processes", 1) > 1:
        line = f"ours: median over {ours[0].get('processes', 1) if ours else 1} processes"
        if ran:
            line += f"; {', '.join(ran)}: median over {args.processes} processes"
        print(line + f"; each figure a median of {args.repetitions} passes.")
    if args.geofence:
        print(f"ours{''.join(', ' + p for p in ran)} measured in turn, workload by workload and process"
              " by process" + (", so that each of their ratios compares figures taken within seconds."
                               if ran else "."))
    skipped = sorted({(p, r["skipped"]) for row in rows for p, r in row["peers"].items() if "skipped" in r})
    for p, why in skipped:
        print(f"skipped {p}: {why}")
    failed = [(row["workload"], row["regions"], p, r["failed"]) for row in rows
              for p, r in row["peers"].items() if "failed" in r]
    for name, n, p, why in failed:
        print(f"failed {p} on {name} N={n}: {why}")
    agree = not notes and all(r.get("agrees", True) for row in rows for r in row["peers"].values())
    if not agree:
        print("checksums: DISAGREEMENTS")
    else:
        print("checksums: all contenders agree" if not failed else
              "checksums: every contender that ran agrees; some FAILED (above)")
    for n in notes:
        print("  " + n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if agree and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
