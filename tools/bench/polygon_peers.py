#!/usr/bin/env python3
"""Point-in-polygon peers on the polygon workload files of
`geofence bench --workload polygons --write-workloads DIR`, in one run with ours, and one table
of throughput ratios (ours / peer) with every contender's checksum compared.

Contenders, each answering every fix with the polygons that cover it (the boundary inside):
- ours: `geofence bench --workload polygons` on the same seed (the identical polygons and fixes,
  generated in memory): the planar grid over the polygons' boxes, then our point-in-polygon; and
  the candidates of the grid index on the polygons' bounding caps tested with GEOS prepared covers
  through the Swift GEOS bridge;
- c-geos-prepared (tools/bench/polygon_peers.c): GEOS C API STRtree + GEOSPreparedCovers_r;
- shapely 2: STRtree.query(points, predicate="covered_by") (prepared polygons, vectorised);
- PostGIS: geometry (planar, as GeoJSON edges are) with a GiST index, ST_Covers in a join.

Checksum over the first K fixes: pairs, sum of slots mod 2^64, sum of fix index x slot mod 2^64.
Peers that measure a prefix of the fixes are checked against the C GEOS peer on that prefix,
and the C GEOS peer on all fixes against ours.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import PostGIS, Sum, timed_checksum  # noqa: E402

# Fixes measured per peer (a prefix), to bound their run time on 2 cores.
LIMITS = {"shapely": 200_000, "postgis": 20_000}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def read_polygons(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def read_fixes(path, limit=None):
    data = np.loadtxt(path, delimiter=",", skiprows=1, max_rows=limit, ndmin=2)
    return data[:, 2].copy(), data[:, 3].copy()


def run_c(binary, wkt, fixes_path, limit, repetitions, min_seconds):
    cmd = [binary, wkt, fixes_path, "--repetitions", str(repetitions), "--min-seconds", str(min_seconds)]
    if limit:
        cmd += ["--limit", str(limit)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_shapely(wkts, fixes, repetitions):
    import shapely

    lat, lon = fixes
    t0 = time.perf_counter()
    polygons = shapely.from_wkt(wkts)
    tree = shapely.STRtree(polygons)
    points = shapely.points(lon, lat)
    tree.query(points[:1], predicate="covered_by")  # builds the tree and prepares lazily
    build = time.perf_counter() - t0
    rates, result = [], None
    for _ in range(repetitions):
        s = Sum()
        t0 = time.perf_counter()
        chunk = 20_000
        for start in range(0, len(lat), chunk):
            pi, ti = tree.query(points[start:start + chunk], predicate="covered_by")
            s.add_arrays(pi + start, ti)
        rates.append(len(lat) / (time.perf_counter() - t0))
        result = s
    return build, float(np.median(rates)), result


def run_postgis(pg, wkts, fixes):
    lat, lon = fixes
    ptmp = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    w = csv.writer(ptmp)
    for i, text in enumerate(wkts):
        w.writerow([i, text])
    ptmp.close()
    ftmp = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    for i, (la, lo) in enumerate(zip(lat.tolist(), lon.tolist())):
        ftmp.write(f"{i},{la!r},{lo!r}\n")
    ftmp.close()
    os.chmod(ptmp.name, 0o644)
    os.chmod(ftmp.name, 0o644)
    pg.psql(f"""
CREATE EXTENSION IF NOT EXISTS postgis;
DROP TABLE IF EXISTS pin, fin, polys, fixes;
CREATE UNLOGGED TABLE pin(id int, wkt text);
\\copy pin FROM '{ptmp.name}' CSV
CREATE UNLOGGED TABLE fin(idx bigint, lat float8, lon float8);
\\copy fin FROM '{ftmp.name}' CSV
CREATE UNLOGGED TABLE fixes AS SELECT idx, ST_SetSRID(ST_MakePoint(lon, lat), 4326) AS g FROM fin;
""")
    os.unlink(ptmp.name)
    os.unlink(ftmp.name)
    t0 = time.perf_counter()
    pg.psql("""
CREATE UNLOGGED TABLE polys AS SELECT id, ST_GeomFromText(wkt, 4326) AS g FROM pin;
CREATE INDEX polys_g ON polys USING gist (g);
ANALYZE polys; ANALYZE fixes;
""")
    build = time.perf_counter() - t0
    query = """
SET max_parallel_workers_per_gather = 0;
SELECT count(*), coalesce(sum(p.id::numeric), 0), coalesce(sum(f.idx::numeric * p.id), 0)
FROM fixes f JOIN polys p ON ST_Covers(p.g, f.g);
"""
    elapsed, s = timed_checksum(pg, query)
    return build, len(lat) / elapsed, s


def checksum(d):
    return (d["pairs"], d["slot_sum"], d["weighted_sum"])


def fmt(v):
    return f"{v / 1e6:.3f} M" if v >= 1e5 else f"{v / 1e3:.1f} k"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="the folder of polygons-<N>-regions.wkt and polygons-<N>-fixes.csv")
    ap.add_argument("--geofence", required=True, help="the release geofence binary")
    ap.add_argument("--peers-binary", required=True, help="tools/bench/polygon_peers.c, built")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--fixes", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=0.2)
    ap.add_argument("--peers", default="c-geos-prepared,shapely,postgis")
    ap.add_argument("--json", help="write every row as JSON here")
    args = ap.parse_args()
    peers = args.peers.split(",")
    rows = []
    pg = PostGIS() if "postgis" in peers else None
    try:
        for n in [int(x) for x in args.sizes.split(",")]:
            wkt = os.path.join(args.dir, f"polygons-{n}-regions.wkt")
            fixes_path = os.path.join(args.dir, f"polygons-{n}-fixes.csv")
            log(f"N={n}: ours")
            with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
                subprocess.run(
                    [args.geofence, "bench", "--workload", "polygons", "--sizes", str(n), "--fixes", str(args.fixes),
                     "--seed", str(args.seed), "--repetitions", str(args.repetitions),
                     "--min-pass", str(args.min_seconds), "--quiet", "--json", tmp.name],
                    check=True, stdout=sys.stderr)
                ours = json.load(open(tmp.name))[0]
            row = {"polygons": n, "vertices": ours["vertices"], "ours": ours, "peers": {}}
            rows.append(row)
            wkts = None
            ref = {}
            if "c-geos-prepared" in peers:
                log(f"N={n}: GEOS from C, every fix")
                c = run_c(args.peers_binary, wkt, fixes_path, None, args.repetitions, args.min_seconds)
                c["agrees"] = checksum(c) == checksum(ours)
                row["peers"]["c-geos-prepared"] = c
            for peer in ("shapely", "postgis"):
                if peer not in peers:
                    continue
                k = min(LIMITS[peer], args.fixes)
                if k not in ref:
                    ref[k] = run_c(args.peers_binary, wkt, fixes_path, k, 1, 0)
                wkts = wkts or read_polygons(wkt)
                fixes = read_fixes(fixes_path, k)
                log(f"N={n}: {peer}, {k} fixes")
                if peer == "shapely":
                    build, rate, s = run_shapely(wkts, fixes, args.repetitions)
                else:
                    build, rate, s = run_postgis(pg, wkts, fixes)
                d = s.as_dict()
                row["peers"][peer] = dict(d, fixes=k, fixes_per_second=rate, build_seconds=build,
                                          agrees=checksum(d) == checksum(ref[k]))
    finally:
        if pg:
            pg.stop()

    print("point-in-polygon, 1 thread, fixes/s (ratio = ours / contender); checksums: ours against C GEOS on"
          " every fix, shapely and PostGIS against C GEOS on their prefix")
    for row in rows:
        o = row["ours"]
        ours = o["fixes_per_second"]
        print(f"\nN={row['polygons']} polygons, {row['vertices']} vertices, {o['fixes']} fixes;"
              f" {o['bytes_per_vertex']:.1f} B a vertex ({o['index_bytes_per_vertex']:.1f} edge indexes"
              + (f", box grid {o['box_grid_bytes_per_vertex']:.1f} more" if "box_grid_bytes_per_vertex" in o else "")
              + ");"
              f" {o['candidates_per_fix']:.2f} candidates a fix"
              + (f" ({o['decided_per_fix']:.2f} decided by the index)" if "decided_per_fix" in o else ""))
        print(f"  {'contender':<34}{'fixes':>10}{'fixes/s':>12}{'ratio':>9}  checksum")
        print(f"  {'index only (box grid)':<34}{o['fixes']:>10}{fmt(o['index_fixes_per_second']):>12}"
              f"{'':>9}")
        print(f"  {'ours':<34}{o['fixes']:>10}{fmt(ours):>12}{'1.0x':>9}  pairs={o['pairs']}")
        g = o["geos_bridge_fixes_per_second"]
        print(f"  {'GEOS prepared, Swift bridge':<34}{o['geos_bridge_fixes']:>10}{fmt(g):>12}"
              f"{ours / g:>8.1f}x  {'same pairs' if o['agrees_with_geos'] else 'DIFFERENT'}")
        names = {"c-geos-prepared": "GEOS prepared covers, C STRtree", "shapely": "shapely 2 STRtree covered_by",
                 "postgis": "PostGIS ST_Covers, GiST"}
        for peer, p in row["peers"].items():
            print(f"  {names[peer]:<34}{p['fixes']:>10}{fmt(p['fixes_per_second']):>12}"
                  f"{ours / p['fixes_per_second']:>8.1f}x  {'same pairs' if p['agrees'] else 'DIFFERENT'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(p["agrees"] for r in rows for p in r["peers"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
