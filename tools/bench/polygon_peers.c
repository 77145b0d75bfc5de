/*
 * GEOS baseline for the polygon workload files written by
 * `geofence bench --workload polygons --write-workloads DIR`.
 *
 *   polygon_peers POLYGONS.wkt FIXES.csv [--limit N] [--repetitions R] [--min-seconds S]
 *
 * POLYGONS.wkt holds one WKT polygon a line (line k, 0-based, is slot k); FIXES.csv is
 * track,t,latitude,longitude after a header line. The contender is what a C caller of GEOS
 * writes: a GEOS STRtree (node capacity 10) over the polygons' envelopes, queried with a point
 * per fix, and GEOS prepared geometry covers (GEOSPreparedCovers_r, the closed test, the same
 * predicate as the engine's) on each polygon the tree returns. One thread.
 *
 * Output: one JSON object on stdout with the median throughput over R passes, each replaying
 * the fixes as many whole times as it takes to last S seconds (default 0.2, as
 * `geofence bench --min-pass`), the candidates per fix and the checksum of the pairs (count,
 * sum of slots mod 2^64, sum of fix index x slot mod 2^64), as tools/bench/peers.c.
 * Exit status: 64 usage, 65 a polygon GEOS cannot read, 66 a missing file.
 */
#define _GNU_SOURCE
#define GEOS_USE_ONLY_R_API
#include <geos_c.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_io.h"

typedef struct {
  uint64_t pairs, slot_sum, weighted_sum, candidates;
} checksum_t;


static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void geos_notice(const char *fmt, ...) { (void)fmt; }

typedef struct {
  GEOSContextHandle_t ctx;
  const GEOSPreparedGeometry **prepared;
  const GEOSGeometry *point;
  uint64_t fix;
  checksum_t *sum;
} query_t;

static void hit(void *item, void *userdata) {
  query_t *q = userdata;
  uint64_t slot = (uint64_t)(uintptr_t)item - 1;
  q->sum->candidates += 1;
  if (GEOSPreparedCovers_r(q->ctx, q->prepared[slot], q->point) == 1) {
    q->sum->pairs += 1;
    q->sum->slot_sum += slot;
    q->sum->weighted_sum += q->fix * slot;
  }
}

__attribute__((noinline)) static checksum_t pass(GEOSContextHandle_t ctx, GEOSSTRtree *tree,
                                                 const GEOSPreparedGeometry **prepared,
                                                 const double *lat, const double *lon, size_t n) {
  checksum_t sum = {0, 0, 0, 0};
  for (size_t f = 0; f < n; f++) {
    GEOSGeometry *p = GEOSGeom_createPointFromXY_r(ctx, lon[f], lat[f]);
    query_t q = {ctx, prepared, p, f, &sum};
    GEOSSTRtree_query_r(ctx, tree, p, hit, &q);
    GEOSGeom_destroy_r(ctx, p);
  }
  return sum;
}


int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: polygon_peers POLYGONS.wkt FIXES.csv [--limit N] [--repetitions R] [--min-seconds S]\n");
    return 64;
  }
  size_t limit = (size_t)-1;
  int reps = 3;
  double min_seconds = 0.2;
  for (int i = 3; i < argc; i += 2) {
    double v;
    if (i + 1 >= argc || !parse_number(argv[i + 1], &v)) {
      fprintf(stderr, "polygon_peers: %s needs a number\n", argv[i]);
      return 64;
    }
    if (!strcmp(argv[i], "--limit") && v >= 1 && v == floor(v)) limit = (size_t)v;
    else if (!strcmp(argv[i], "--repetitions") && v >= 1 && v <= 100 && v == floor(v)) reps = (int)v;
    else if (!strcmp(argv[i], "--min-seconds") && v >= 0 && v <= 600) min_seconds = v;
    else {
      fprintf(stderr, "polygon_peers: unknown option or value out of range: %s %s\n", argv[i], argv[i + 1]);
      return 64;
    }
  }

  GEOSContextHandle_t ctx = GEOS_init_r();
  GEOSContext_setNoticeHandler_r(ctx, geos_notice);
  GEOSWKTReader *reader = GEOSWKTReader_create_r(ctx);

  /* Polygons, one WKT a line. */
  char *text = read_file(argv[1]);
  size_t cap = 1 << 14, count = 0;
  GEOSGeometry **geoms = malloc(cap * sizeof *geoms);
  size_t vertices = 0;
  double t0 = now_seconds();
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (*line) {
      GEOSGeometry *g = GEOSWKTReader_read_r(ctx, reader, line);
      if (!g) { fprintf(stderr, "%s:%zu: GEOS cannot read the polygon\n", argv[1], count + 1); return 65; }
      if (count == cap) { cap *= 2; geoms = realloc(geoms, cap * sizeof *geoms); }
      vertices += (size_t)GEOSGetNumCoordinates_r(ctx, g);
      geoms[count++] = g;
    }
    if (!nl) break;
    line = nl + 1;
  }
  free(text);
  const GEOSPreparedGeometry **prepared = malloc(count * sizeof *prepared);
  GEOSSTRtree *tree = GEOSSTRtree_create_r(ctx, 10);
  for (size_t i = 0; i < count; i++) {
    prepared[i] = GEOSPrepare_r(ctx, geoms[i]);
    GEOSSTRtree_insert_r(ctx, tree, geoms[i], (void *)(uintptr_t)(i + 1));
  }
  double build = now_seconds() - t0;

  /* Fixes: track,t,latitude,longitude after a header line. */
  text = read_file(argv[2]);
  size_t fcap = 1 << 16, n = 0;
  double *lat = malloc(fcap * sizeof *lat), *lon = malloc(fcap * sizeof *lon);
  char *p = strchr(text, '\n');
  p = p ? p + 1 : text + strlen(text);
  while (*p && n < limit) {
    while (*p == '\n' || *p == '\r') p++;
    if (!*p) break;
    if (n == fcap) { fcap *= 2; lat = realloc(lat, fcap * sizeof *lat); lon = realloc(lon, fcap * sizeof *lon); }
    char *end;
    strtod(p, &end); p = end + 1;   /* track */
    strtod(p, &end); p = end + 1;   /* t */
    lat[n] = strtod(p, &end); p = end + 1;
    lon[n] = strtod(p, &end); p = end;
    n++;
  }
  free(text);

  /* The tree is built on the first query: a warm-up pass over a few fixes. */
  pass(ctx, tree, prepared, lat, lon, n < 1000 ? n : 1000);

  double rates[100];
  checksum_t sum = {0, 0, 0, 0};
  int rounds = 1, timed = 0, have = 0;
  for (int r = 0; timed < reps; r++) {
    double s0 = now_seconds();
    for (int k = 0; k < rounds; k++) {
      checksum_t s = pass(ctx, tree, prepared, lat, lon, n);
      if (have && (s.pairs != sum.pairs || s.weighted_sum != sum.weighted_sum)) { fprintf(stderr, "passes disagree\n"); return 70; }
      sum = s;
      have = 1;
    }
    double dt = now_seconds() - s0;
    if (r == 0 && dt < min_seconds) {
      double need = ceil(1.1 * min_seconds / (dt > 1e-6 ? dt : 1e-6));
      rounds = need > 1e6 ? 1000000 : (int)need;
      continue;
    }
    rates[timed++] = (double)n * rounds / dt;
  }
  printf("{\"peer\": \"c-geos-prepared\", \"polygons\": %zu, \"vertices\": %zu, \"fixes\": %zu, "
         "\"build_seconds\": %.6f, \"fixes_per_second\": %.1f, \"candidates_per_fix\": %.3f, "
         "\"pairs\": %llu, \"slot_sum\": %llu, \"weighted_sum\": %llu, \"rounds\": %d}\n",
         count, vertices, n, build, median(rates, reps), n ? (double)sum.candidates / n : 0.0,
         (unsigned long long)sum.pairs, (unsigned long long)sum.slot_sum,
         (unsigned long long)sum.weighted_sum, rounds);
  return 0;
}
