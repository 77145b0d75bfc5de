#!/usr/bin/env python3
"""Derives data/polygons/swiss_route_polygons.geojson from the Swiss Federal Statistical
Office's generalised boundaries 2018 (ggg_2018, as GeoJSON in LV95 / EPSG:2056, from the
repository idris-maps/swiss-geodata-2018).

Keeps: the cantons of Neuchatel and Vaud, Lac de Neuchatel and Lac Leman, and every commune
that a fix of data/tracks/csv/posmo_trajectory.csv lies in. Coordinates are converted from
LV95 to WGS84 with swisstopo's approximate formulas ("Approximate formulas for the
transformation between Swiss projection coordinates and WGS84", accuracy about 1 m) and
rounded to 6 decimals (about 0.1 m). Nothing else is changed.

Usage: swiss_polygons.py DIR_WITH_cantons.json_communes.json_lakes.json TRACK OUT
"""
import csv
import json
import sys


def to_wgs84(e, n):
    y = (e - 2_600_000) / 1e6
    x = (n - 1_200_000) / 1e6
    lam = 2.6779094 + 4.728982 * y + 0.791484 * y * x + 0.1306 * y * x * x - 0.0436 * y**3
    phi = (16.9023892 + 3.238272 * x - 0.270978 * y * y - 0.002528 * x * x
           - 0.0447 * y * y * x - 0.0140 * x**3)
    return [round(lam * 100 / 36, 6), round(phi * 100 / 36, 6)]


def convert(geometry):
    def ring(r):
        return [to_wgs84(e, n) for e, n in r]
    if geometry["type"] == "Polygon":
        return {"type": "Polygon", "coordinates": [ring(r) for r in geometry["coordinates"]]}
    return {"type": "MultiPolygon",
            "coordinates": [[ring(r) for r in p] for p in geometry["coordinates"]]}


def inside_ring(x, y, ring):
    c = False
    for (x1, y1), (x2, y2) in zip(ring, ring[1:]):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            c = not c
    return c


def inside(x, y, geometry):
    polys = [geometry["coordinates"]] if geometry["type"] == "Polygon" else geometry["coordinates"]
    for p in polys:
        if inside_ring(x, y, p[0]) and not any(inside_ring(x, y, h) for h in p[1:]):
            return True
    return False


def main():
    src, track, out = sys.argv[1:4]
    load = lambda name: json.load(open(f"{src}/{name}.json"))
    fixes = []
    with open(track) as f:
        for row in csv.DictReader(f, delimiter=";"):
            fixes.append((float(row["longitude"]), float(row["latitude"])))
    features = []
    source = "BFS/OFS generalised boundaries 2018 (ggg_2018)"
    for f in load("cantons")["features"]:
        if f["properties"]["KTNAME"] in ("Neuchâtel", "Vaud"):
            features.append(("canton-%d" % f["properties"]["KTNR"], f["properties"]["KTNAME"],
                             "canton", convert(f["geometry"])))
    for f in load("lakes")["features"]:
        if f["properties"]["SEENAME"] in ("Lac de Neuchâtel", "Lac Léman"):
            features.append(("lake-%d" % f["properties"]["SEENR"], f["properties"]["SEENAME"],
                             "lake", convert(f["geometry"])))
    for f in load("communes")["features"]:
        g = convert(f["geometry"])
        xs = [p[0] for r in ([g["coordinates"]] if g["type"] == "Polygon" else g["coordinates"])
              for ring in r for p in ring]
        ys = [p[1] for r in ([g["coordinates"]] if g["type"] == "Polygon" else g["coordinates"])
              for ring in r for p in ring]
        near = [p for p in fixes if min(xs) <= p[0] <= max(xs) and min(ys) <= p[1] <= max(ys)]
        if any(inside(x, y, g) for x, y in near):
            features.append(("commune-%d" % f["properties"]["GMDNR"], f["properties"]["GMDNAME"],
                             "commune", g))
    collection = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": fid,
         "properties": {"name": name, "kind": kind, "source": source},
         "geometry": geometry}
        for fid, name, kind, geometry in features]}
    with open(out, "w") as f:
        json.dump(collection, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{out}: {len(features)} features", file=sys.stderr)


if __name__ == "__main__":
    main()
