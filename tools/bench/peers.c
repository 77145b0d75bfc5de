/*
 * Baseline contenders for the workload files written by `geofence bench --write-workloads`.
 *
 *   peers MODE REGIONS.csv FIXES.csv [--limit N] [--threads T] [--repetitions R]
 *         [--min-seconds S] [--cell-size DEG] [--radius M (read: for rows without one)]
 *
 * MODE:
 *   grid    one-level lat/lon grid (hash of non-empty cells, CSR slot lists), a latitude
 *           pre-check, then the haversine test; one thread
 *   tuned   the tuned three-tier grid below (edge chosen by timing a sample, inline unit
 *           vectors, branch-free squared-chord test); one thread
 *   lookup  the grid's cell lookup only (cell id, hash probe, candidate count): no refine; the
 *           machine's limit for a grid design
 *   geos    GEOS C API STRtree over the regions' bounding boxes (split at the antimeridian),
 *           queried with a point per fix, then the haversine test; one thread
 *   read    the plain C reader of a geofence CSV, JSON list or GeoJSON file (strtod, validated): MB/s and rows/s of
 *           parsing the file held in memory; FIXES.csv is ignored (give -)
 *   brute   every fix against every region with the pre-check and the haversine test; T threads
 *
 * Containment: haversine term hav(p, c) <= sin^2(r / 2R), R = 6,371,008.8 m (IUGG mean radius,
 * as in the Swift engine's EarthModel); the boundary is inside. Regions whose angular radius
 * reaches pi cover the sphere. Output: one JSON object on stdout with the median query
 * throughput over R passes, each replaying the fixes as many whole times (rounds) as it takes
 * to last S seconds (default 0.2, as `geofence bench --min-pass`), and the checksum of the
 * pairs (count, sum of slots mod 2^64, sum of fix index x slot mod 2^64).
 */
#define _GNU_SOURCE
#define GEOS_USE_ONLY_R_API
#include <geos_c.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_io.h"

static double median(double *v, int n);

#define EARTH_RADIUS_M 6371008.8
#define DEG (M_PI / 180.0)

typedef struct {
  uint64_t pairs, slot_sum, weighted_sum;
} checksum_t;

static inline void add_pair(checksum_t *c, uint64_t fix, uint64_t slot) {
  c->pairs += 1;
  c->slot_sum += slot;
  c->weighted_sum += fix * slot;
}


/* Parses rows of `cols` comma-separated numbers after a header line; returns the row count. */
static size_t parse_rows(char *text, int cols, double **out, size_t limit) {
  char *p = strchr(text, '\n');
  if (!p) return 0;
  p++;
  size_t cap = 1 << 16, n = 0;
  double *v = malloc(cap * cols * sizeof(double));
  while (*p && n < limit) {
    while (*p == '\n' || *p == '\r') p++;
    if (!*p) break;
    if (n == cap) { cap *= 2; v = realloc(v, cap * cols * sizeof(double)); }
    for (int c = 0; c < cols; c++) {
      char *end;
      v[n * cols + c] = strtod(p, &end);
      p = end;
      if (*p == ',') p++;
    }
    n++;
  }
  *out = v;
  return n;
}

/* ---- regions ---- */

typedef struct {
  size_t n;
  double *lat, *lon, *radius;  /* degrees, metres */
  double *lat_r, *lon_r, *cos_lat, *angle, *hav_max;
  /* bounding box (degrees); min_lon > max_lon wraps the antimeridian; full_lon covers all */
  double *bmin_lat, *bmax_lat, *bmin_lon, *bmax_lon;
  unsigned char *full_lon;
} regions_t;

static void load_regions(const char *path, regions_t *R) {
  char *text = read_file(path);
  double *v;
  size_t n = parse_rows(text, 4, &v, (size_t)-1);
  free(text);
  R->n = n;
#define ALLOC(x) R->x = malloc(n * sizeof(*R->x))
  ALLOC(lat); ALLOC(lon); ALLOC(radius); ALLOC(lat_r); ALLOC(lon_r); ALLOC(cos_lat);
  ALLOC(angle); ALLOC(hav_max); ALLOC(bmin_lat); ALLOC(bmax_lat); ALLOC(bmin_lon);
  ALLOC(bmax_lon); ALLOC(full_lon);
  for (size_t i = 0; i < n; i++) {
    if (v[i * 4] != (double)i) { fprintf(stderr, "%s: id of row %zu is not its slot\n", path, i); exit(65); }
    double lat = v[i * 4 + 1], lon = v[i * 4 + 2], r = v[i * 4 + 3];
    R->lat[i] = lat; R->lon[i] = lon; R->radius[i] = r;
    R->lat_r[i] = lat * DEG; R->lon_r[i] = lon * DEG; R->cos_lat[i] = cos(lat * DEG);
    double delta = r / EARTH_RADIUS_M;
    R->angle[i] = delta;
    double s = sin(fmin(delta, M_PI) / 2);
    R->hav_max[i] = delta >= M_PI ? 2.0 : s * s;
    /* The cap's bounding box, as BoundingBox.cap in the Swift engine, padded by 1e-9 deg. */
    const double pad = 1e-9;
    double dd = delta / DEG + pad;
    double mn = lat - dd, mx = lat + dd;
    int full = delta >= M_PI;
    if (mx >= 90) { mx = 90; full = 1; }
    if (mn <= -90) { mn = -90; full = 1; }
    double dlon = 0;
    if (!full) {
      double ratio = sin(delta) / cos(lat * DEG);
      if (!(ratio < 1)) full = 1;
      else {
        dlon = asin(ratio) / DEG + pad;
        if (dlon >= 180) full = 1;
      }
    }
    R->bmin_lat[i] = mn; R->bmax_lat[i] = mx; R->full_lon[i] = full;
    if (full) { R->bmin_lon[i] = -180; R->bmax_lon[i] = 180; }
    else {
      double a = lon - dlon, b = lon + dlon;
      if (a < -180) a += 360;
      if (b > 180) b -= 360;
      R->bmin_lon[i] = a; R->bmax_lon[i] = b;
    }
  }
  free(v);
}

/* Fixes as read (degrees): every per-fix conversion happens inside the timed passes. */
typedef struct {
  size_t n;
  double *lat, *lon;
} fixes_t;

static void load_fixes(const char *path, fixes_t *F, size_t limit) {
  char *text = read_file(path);
  double *v;
  size_t n = parse_rows(text, 4, &v, limit);
  free(text);
  F->n = n;
  F->lat = malloc(n * sizeof(double)); F->lon = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) { F->lat[i] = v[i * 4 + 2]; F->lon[i] = v[i * 4 + 3]; }
  free(v);
}

/* Haversine containment with a latitude pre-check (|dlat| > angle means outside). */
static inline int contains(const regions_t *R, size_t i, double lat_r, double lon_r, double cos_lat) {
  double dphi = lat_r - R->lat_r[i];
  if (fabs(dphi) > R->angle[i] + 1e-12) return 0;
  double s1 = sin(dphi / 2), s2 = sin((lon_r - R->lon_r[i]) / 2);
  double h = s1 * s1 + cos_lat * R->cos_lat[i] * s2 * s2;
  return h <= R->hav_max[i];
}

/* ---- grid ---- */

typedef struct {
  uint64_t key; uint32_t start, count;
} cell_t;

typedef struct {
  double edge, inv_edge;
  int64_t rows, cols;
  cell_t *table; uint64_t mask;
  uint32_t *entries; size_t entry_count;
  uint32_t *everywhere; size_t everywhere_count;
  size_t cell_count;
} grid_t;

static inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }
static inline uint64_t hash64(uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
  return k;
}

/* Number of cells region i touches at edge e (0 for the everywhere list). */
static size_t cells_of(const regions_t *R, size_t i, double e, int64_t rows, int64_t cols) {
  if (R->full_lon[i]) return 0;
  int64_t r0 = clamp64((int64_t)floor((R->bmin_lat[i] + 90) / e), 0, rows - 1);
  int64_t r1 = clamp64((int64_t)floor((R->bmax_lat[i] + 90) / e), 0, rows - 1);
  int64_t c0 = clamp64((int64_t)floor((R->bmin_lon[i] + 180) / e), 0, cols - 1);
  int64_t c1 = clamp64((int64_t)floor((R->bmax_lon[i] + 180) / e), 0, cols - 1);
  int64_t ncol = c0 <= c1 ? c1 - c0 + 1 : (cols - c0) + c1 + 1;
  return (size_t)((r1 - r0 + 1) * ncol);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct { uint64_t key; uint32_t slot; } pair_t;
static int cmp_pair(const void *a, const void *b) {
  const pair_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Cell edge: twice the median box height, doubled until the regions fill at most 8 N cells. */
__attribute__((noinline)) static void build_grid(const regions_t *R, grid_t *G, double forced_edge) {
  size_t n = R->n;
  double e = forced_edge;
  if (e <= 0) {
    double *h = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) h[i] = R->bmax_lat[i] - R->bmin_lat[i];
    qsort(h, n, sizeof(double), cmp_double);
    e = fmax(2 * h[n / 2], 1e-6);
    free(h);
    for (;;) {
      int64_t rows = (int64_t)ceil(180 / e), cols = (int64_t)ceil(360 / e);
      size_t total = 0;
      for (size_t i = 0; i < n; i++) total += cells_of(R, i, e, rows, cols);
      if (total <= 8 * n || e >= 90) break;
      e *= 2;
    }
  }
  G->edge = e; G->inv_edge = 1 / e;
  G->rows = (int64_t)ceil(180 / e); G->cols = (int64_t)ceil(360 / e);
  size_t total = 0, every = 0;
  for (size_t i = 0; i < n; i++) {
    size_t c = cells_of(R, i, e, G->rows, G->cols);
    total += c;
    if (c == 0) every++;
  }
  pair_t *pairs = malloc((total + 1) * sizeof(pair_t));
  G->everywhere = malloc((every + 1) * sizeof(uint32_t));
  G->everywhere_count = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (R->full_lon[i]) { G->everywhere[G->everywhere_count++] = (uint32_t)i; continue; }
    int64_t r0 = clamp64((int64_t)floor((R->bmin_lat[i] + 90) / e), 0, G->rows - 1);
    int64_t r1 = clamp64((int64_t)floor((R->bmax_lat[i] + 90) / e), 0, G->rows - 1);
    int64_t c0 = clamp64((int64_t)floor((R->bmin_lon[i] + 180) / e), 0, G->cols - 1);
    int64_t c1 = clamp64((int64_t)floor((R->bmax_lon[i] + 180) / e), 0, G->cols - 1);
    for (int64_t r = r0; r <= r1; r++) {
      if (c0 <= c1) {
        for (int64_t c = c0; c <= c1; c++) pairs[k++] = (pair_t){(uint64_t)(r * G->cols + c), (uint32_t)i};
      } else {
        for (int64_t c = c0; c < G->cols; c++) pairs[k++] = (pair_t){(uint64_t)(r * G->cols + c), (uint32_t)i};
        for (int64_t c = 0; c <= c1; c++) pairs[k++] = (pair_t){(uint64_t)(r * G->cols + c), (uint32_t)i};
      }
    }
  }
  qsort(pairs, total, sizeof(pair_t), cmp_pair);
  size_t cells = 0;
  for (size_t j = 0; j < total; j++) if (j == 0 || pairs[j].key != pairs[j - 1].key) cells++;
  uint64_t size = 16;
  while (size < 2 * cells) size *= 2;
  G->table = calloc(size, sizeof(cell_t));
  for (uint64_t j = 0; j < size; j++) G->table[j].key = UINT64_MAX;
  G->mask = size - 1;
  G->entries = malloc((total + 1) * sizeof(uint32_t));
  G->entry_count = total; G->cell_count = cells;
  for (size_t j = 0; j < total;) {
    size_t s = j;
    while (j < total && pairs[j].key == pairs[s].key) { G->entries[j] = pairs[j].slot; j++; }
    uint64_t h = hash64(pairs[s].key) & G->mask;
    while (G->table[h].key != UINT64_MAX) h = (h + 1) & G->mask;
    G->table[h] = (cell_t){pairs[s].key, (uint32_t)s, (uint32_t)(j - s)};
  }
  free(pairs);
}

static inline const cell_t *grid_cell(const grid_t *G, double lat, double lon) {
  int64_t r = clamp64((int64_t)((lat + 90) * G->inv_edge), 0, G->rows - 1);
  int64_t c = lon >= 180 ? 0 : clamp64((int64_t)((lon + 180) * G->inv_edge), 0, G->cols - 1);
  uint64_t key = (uint64_t)(r * G->cols + c);
  uint64_t h = hash64(key) & G->mask;
  for (;;) {
    const cell_t *cell = &G->table[h];
    if (cell->key == key) return cell;
    if (cell->key == UINT64_MAX) return NULL;
    h = (h + 1) & G->mask;
  }
}

__attribute__((noinline)) static checksum_t grid_pass(const regions_t *R, const grid_t *G, const fixes_t *F) {
  checksum_t sum = {0, 0, 0};
  for (size_t f = 0; f < F->n; f++) {
    double la = F->lat[f] * DEG, lo = F->lon[f] * DEG, cl = cos(la);
    for (size_t j = 0; j < G->everywhere_count; j++)
      if (contains(R, G->everywhere[j], la, lo, cl)) add_pair(&sum, f, G->everywhere[j]);
    const cell_t *cell = grid_cell(G, F->lat[f], F->lon[f]);
    if (!cell) continue;
    const uint32_t *s = G->entries + cell->start;
    for (uint32_t j = 0; j < cell->count; j++)
      if (contains(R, s[j], la, lo, cl)) add_pair(&sum, f, s[j]);
  }
  return sum;
}

__attribute__((noinline)) static checksum_t lookup_pass(const grid_t *G, const fixes_t *F) {
  checksum_t sum = {0, 0, 0};
  for (size_t f = 0; f < F->n; f++) {
    const cell_t *cell = grid_cell(G, F->lat[f], F->lon[f]);
    if (cell) { sum.pairs += cell->count; sum.slot_sum += cell->start; }
  }
  return sum;
}

/* ---- tuned grid ----
 *
 * The strongest grid design we know for these workloads, at whatever memory it takes:
 *   - the cell edge is chosen per workload by timing a sample of the fixes (every k-th, at most
 *     20,000) on grids of 0.25, 0.5, 1, 2 and 4 times the median box height;
 *   - three tiers: a fine grid for regions of at most 256 fine cells, a 16 times coarser grid
 *     for the larger ones (at most 4,096 coarse cells), per-row lists (coarse rows) for polar
 *     caps and the rest, and a list of regions that cover the sphere;
 *   - each tier is a flat array of cell offsets over the rectangle of occupied cells, or an
 *     open-addressing hash of the non-empty cells when that rectangle is mostly empty;
 *   - the cell lists hold each region's unit vector and squared-chord threshold inline (32 B an
 *     entry, the slot beside it), so a candidate costs no indirection;
 *   - the test is branch-free: squared chord <= 4 sin^2(theta / 2), the slot stored and the
 *     count advanced by the comparison's result; only inside a relative band of 1e-9 around
 *     the threshold does the exact haversine test (as the c-grid peer) decide;
 *   - the fix's unit vector (libm sincos) is computed only when its cells hold candidates.
 */

typedef struct { double x, y, z, t; } vec_t;

typedef struct {
  double edge, inv_edge;
  int64_t rows, cols;          /* of the whole sphere at this edge */
  int64_t r0, c0, nr, nc;      /* the rectangle of occupied cells (flat layout) */
  int flat;
  uint32_t *offsets;           /* flat: nr * nc + 1 */
  cell_t *table; uint64_t mask; /* hash: key = row * cols + col */
  vec_t *vec; uint32_t *slot; size_t count;
  size_t cell_count;
} tier_t;

typedef struct {
  double edge;
  tier_t fine, coarse, rowlist;  /* rowlist: one column, the coarse rows */
  vec_t *every_vec; uint32_t *every_slot; size_t every_count;
  size_t bytes;
} tuned_t;

static inline vec_t unit_of(double lat_deg, double lon_deg) {
  double sl, cl, so, co;
  sincos(lat_deg * DEG, &sl, &cl);
  sincos(lon_deg * DEG, &so, &co);
  return (vec_t){cl * co, cl * so, sl, 0};
}

/* The cell span of region i's box at edge e: rows r0..r1, columns c0..c1 (c0 > c1 wraps).
   A box that ends at +-180 without wrapping also takes the column across the antimeridian. */
static void span_of(const regions_t *R, size_t i, double e, int64_t rows, int64_t cols,
                    int64_t *r0, int64_t *r1, int64_t *c0, int64_t *c1) {
  *r0 = clamp64((int64_t)floor((R->bmin_lat[i] + 90) / e), 0, rows - 1);
  *r1 = clamp64((int64_t)floor((R->bmax_lat[i] + 90) / e), 0, rows - 1);
  if (R->full_lon[i]) { *c0 = 0; *c1 = cols - 1; return; }
  *c0 = clamp64((int64_t)floor((R->bmin_lon[i] + 180) / e), 0, cols - 1);
  *c1 = clamp64((int64_t)floor((R->bmax_lon[i] + 180) / e), 0, cols - 1);
  if (*c0 <= *c1) {
    if (R->bmax_lon[i] >= 180 && *c0 > 0) *c1 = 0;            /* wraps onto column 0 */
    else if (R->bmin_lon[i] <= -180 && *c1 < cols - 1) *c0 = cols - 1;
  }
}

static inline int64_t span_cols(int64_t c0, int64_t c1, int64_t cols) {
  return c0 <= c1 ? c1 - c0 + 1 : (cols - c0) + c1 + 1;
}

static void tier_init(tier_t *T, double e, int single_column) {
  memset(T, 0, sizeof(*T));
  T->edge = e; T->inv_edge = 1 / e;
  T->rows = (int64_t)ceil(180 / e);
  T->cols = single_column ? 1 : (int64_t)ceil(360 / e);
}

/* The slot of `key` in T's table (it is there). */
static uint64_t tier_find(const tier_t *T, uint64_t key) {
  uint64_t h = hash64(key) & T->mask;
  while (T->table[h].key != key) h = (h + 1) & T->mask;
  return h;
}

/* Doubles T's table, keeping its cells. */
static void tier_grow(tier_t *T) {
  uint64_t size = 2 * (T->mask + 1);
  cell_t *t = malloc(size * sizeof(cell_t));
  for (uint64_t j = 0; j < size; j++) t[j] = (cell_t){UINT64_MAX, 0, 0};
  for (uint64_t j = 0; j <= T->mask; j++) {
    if (T->table[j].key == UINT64_MAX) continue;
    uint64_t h = hash64(T->table[j].key) & (size - 1);
    while (t[h].key != UINT64_MAX) h = (h + 1) & (size - 1);
    t[h] = T->table[j];
  }
  free(T->table);
  T->table = t; T->mask = size - 1;
}

/* Fills tier T with the regions listed in `members` (count m). */
static void tier_build(tier_t *T, const regions_t *R, const vec_t *V, const uint32_t *members, size_t m) {
  int64_t rmin = INT64_MAX, rmax = -1, cmin = INT64_MAX, cmax = -1;
  size_t total = 0;
  for (size_t k = 0; k < m; k++) {
    int64_t r0, r1, c0, c1;
    span_of(R, members[k], T->edge, T->rows, T->cols, &r0, &r1, &c0, &c1);
    if (T->cols == 1) { c0 = c1 = 0; }
    if (r0 < rmin) rmin = r0;
    if (r1 > rmax) rmax = r1;
    if (c0 <= c1) { if (c0 < cmin) cmin = c0; if (c1 > cmax) cmax = c1; }
    else { cmin = 0; cmax = T->cols - 1; }
    total += (size_t)((r1 - r0 + 1) * span_cols(c0, c1, T->cols));
  }
  T->count = total;
  T->vec = malloc((total + 1) * sizeof(vec_t));
  T->slot = malloc((total + 1) * sizeof(uint32_t));
  if (m == 0) { T->flat = 1; T->nr = T->nc = 0; T->offsets = calloc(1, sizeof(uint32_t)); return; }
  T->r0 = rmin; T->c0 = cmin; T->nr = rmax - rmin + 1; T->nc = cmax - cmin + 1;
  uint64_t rect = (uint64_t)T->nr * (uint64_t)T->nc;
  /* Flat when the rectangle's offsets take no more than the entries themselves do. */
  T->flat = rect <= 8 * (uint64_t)total + 4096;
  uint32_t *cursor;
  if (T->flat) {
    T->offsets = calloc(rect + 1, sizeof(uint32_t));
    cursor = T->offsets;
  } else {
    /* The table of non-empty cells grows as pass 1 finds them (load at most 1/2). */
    T->table = malloc(16 * sizeof(cell_t));
    for (uint64_t j = 0; j < 16; j++) T->table[j] = (cell_t){UINT64_MAX, 0, 0};
    T->mask = 15;
    cursor = NULL;
  }
  /* Pass 1: counts; pass 2: fill. */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t k = 0; k < m; k++) {
      uint32_t i = members[k];
      int64_t r0, r1, c0, c1;
      span_of(R, i, T->edge, T->rows, T->cols, &r0, &r1, &c0, &c1);
      if (T->cols == 1) { c0 = c1 = 0; }
      int64_t n = span_cols(c0, c1, T->cols);
      for (int64_t r = r0; r <= r1; r++) {
        for (int64_t j = 0, c = c0; j < n; j++, c = c + 1 == T->cols ? 0 : c + 1) {
          uint32_t *at;
          if (T->flat) at = &cursor[(r - T->r0) * T->nc + (c - T->c0)];
          else {
            uint64_t key = (uint64_t)(r * T->cols + c), h = hash64(key) & T->mask;
            while (T->table[h].key != key && T->table[h].key != UINT64_MAX) h = (h + 1) & T->mask;
            if (T->table[h].key == UINT64_MAX) {
              T->table[h].key = key;
              if (2 * ++T->cell_count > T->mask + 1) { tier_grow(T); h = tier_find(T, key); }
            }
            at = pass == 0 ? &T->table[h].count : &T->table[h].start;
          }
          if (pass == 0) (*at)++;
          else { T->vec[*at] = V[i]; T->slot[*at] = i; (*at)++; }
        }
      }
    }
    if (pass == 0) {
      /* Counts to starts. */
      uint32_t run = 0;
      if (T->flat) {
        for (uint64_t j = 0; j <= rect; j++) { uint32_t c = cursor[j]; cursor[j] = run; run += c; }
        for (uint64_t j = 0; j < rect; j++) if (cursor[j + 1] > cursor[j]) T->cell_count++;
      } else {
        for (uint64_t j = 0; j <= T->mask; j++)
          if (T->table[j].key != UINT64_MAX) { T->table[j].start = run; run += T->table[j].count; }
      }
    }
  }
  /* Pass 2 advanced each start to its end: step back. */
  if (T->flat) {
    for (uint64_t j = rect; j > 0; j--) cursor[j] = cursor[j - 1];
    cursor[0] = 0;
  } else {
    for (uint64_t j = 0; j <= T->mask; j++)
      if (T->table[j].key != UINT64_MAX) T->table[j].start -= T->table[j].count;
  }
}

static size_t tier_bytes(const tier_t *T) {
  size_t b = T->count * (sizeof(vec_t) + sizeof(uint32_t));
  if (T->flat) b += ((size_t)(T->nr * T->nc) + 1) * sizeof(uint32_t);
  else b += (T->mask + 1) * sizeof(cell_t);
  return b;
}

static void tier_free(tier_t *T) {
  free(T->offsets); free(T->table); free(T->vec); free(T->slot);
}

/* The entries of the cell holding (lat, lon) in tier T: [*from, *to). */
static inline void tier_cell(const tier_t *T, double lat, double lon, uint32_t *from, uint32_t *to) {
  int64_t r = (int64_t)((lat + 90) * T->inv_edge);
  int64_t c = T->cols == 1 ? 0 : (int64_t)((lon + 180) * T->inv_edge);
  r = r >= T->rows ? T->rows - 1 : r;
  c = c >= T->cols ? T->cols - 1 : c;
  if (T->flat) {
    uint64_t rr = (uint64_t)(r - T->r0), cc = (uint64_t)(c - T->c0);
    if (rr >= (uint64_t)T->nr || cc >= (uint64_t)T->nc) { *from = *to = 0; return; }
    const uint32_t *o = T->offsets + rr * (uint64_t)T->nc + cc;
    *from = o[0]; *to = o[1];
    return;
  }
  uint64_t key = (uint64_t)(r * T->cols + c), h = hash64(key) & T->mask;
  for (;;) {
    const cell_t *cell = &T->table[h];
    if (cell->key == key) { *from = cell->start; *to = cell->start + cell->count; return; }
    if (cell->key == UINT64_MAX) { *from = *to = 0; return; }
    h = (h + 1) & T->mask;
  }
}

static void tuned_free(tuned_t *G) {
  tier_free(&G->fine); tier_free(&G->coarse); tier_free(&G->rowlist);
  free(G->every_vec); free(G->every_slot);
}

/* Builds the three tiers at fine edge e. */
static void tuned_build_at(const regions_t *R, const vec_t *V, double e, tuned_t *G) {
  size_t n = R->n;
  memset(G, 0, sizeof(*G));
  G->edge = e;
  tier_init(&G->fine, e, 0);
  tier_init(&G->coarse, 16 * e, 0);
  tier_init(&G->rowlist, 16 * e, 1);
  uint32_t *fine = malloc((n + 1) * 4), *coarse = malloc((n + 1) * 4), *rows = malloc((n + 1) * 4);
  size_t nf = 0, nc = 0, nr = 0;
  G->every_vec = malloc((n + 1) * sizeof(vec_t));
  G->every_slot = malloc((n + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < n; i++) {
    if (R->angle[i] >= M_PI) { G->every_vec[G->every_count] = V[i]; G->every_slot[G->every_count++] = (uint32_t)i; continue; }
    if (R->full_lon[i]) { rows[nr++] = (uint32_t)i; continue; }
    int64_t r0, r1, c0, c1;
    span_of(R, i, e, G->fine.rows, G->fine.cols, &r0, &r1, &c0, &c1);
    if ((r1 - r0 + 1) * span_cols(c0, c1, G->fine.cols) <= 256) { fine[nf++] = (uint32_t)i; continue; }
    span_of(R, i, 16 * e, G->coarse.rows, G->coarse.cols, &r0, &r1, &c0, &c1);
    if ((r1 - r0 + 1) * span_cols(c0, c1, G->coarse.cols) <= 4096) coarse[nc++] = (uint32_t)i;
    else rows[nr++] = (uint32_t)i;
  }
  tier_build(&G->fine, R, V, fine, nf);
  tier_build(&G->coarse, R, V, coarse, nc);
  tier_build(&G->rowlist, R, V, rows, nr);
  free(fine); free(coarse); free(rows);
  /* The tiers, the sphere list, and the fallback's per-region data (lat, lon, cos lat, hav). */
  G->bytes = tier_bytes(&G->fine) + tier_bytes(&G->coarse) + tier_bytes(&G->rowlist) +
             G->every_count * (sizeof(vec_t) + 4) + n * 4 * sizeof(double);
}

/* One list of candidates: branch-free squared-chord test, haversine inside the 1e-9 band. */
static inline void tuned_scan(const regions_t *R, const vec_t *vec, const uint32_t *slot, uint32_t from,
                              uint32_t to, vec_t p, double la, double lo, double cl, uint64_t f,
                              checksum_t *sum) {
  for (uint32_t j = from; j < to; j++) {
    const vec_t *v = &vec[j];
    double dx = v->x - p.x, dy = v->y - p.y, dz = v->z - p.z;
    double d2 = dx * dx + dy * dy + dz * dz;
    uint64_t in = d2 <= v->t;
    if (__builtin_expect(fabs(d2 - v->t) <= 1e-9 * v->t, 0)) in = (uint64_t)contains(R, slot[j], la, lo, cl);
    uint64_t s = slot[j];
    sum->pairs += in;
    sum->slot_sum += in * s;
    sum->weighted_sum += in * f * s;
  }
}

__attribute__((noinline)) static checksum_t tuned_pass(const regions_t *R, const tuned_t *G, const fixes_t *F,
                                                       size_t stride) {
  checksum_t sum = {0, 0, 0};
  for (size_t f = 0; f < F->n; f += stride) {
    double lat = F->lat[f], lon = F->lon[f];
    uint32_t a0, a1, b0 = 0, b1 = 0, c0 = 0, c1 = 0;
    tier_cell(&G->fine, lat, lon, &a0, &a1);
    if (G->coarse.count) tier_cell(&G->coarse, lat, lon, &b0, &b1);
    if (G->rowlist.count) tier_cell(&G->rowlist, lat, lon, &c0, &c1);
    if (a0 == a1 && b0 == b1 && c0 == c1 && G->every_count == 0) continue;
    vec_t p = unit_of(lat, lon);
    double la = lat * DEG, lo = lon * DEG, cl = cos(la);
    tuned_scan(R, G->fine.vec, G->fine.slot, a0, a1, p, la, lo, cl, f, &sum);
    tuned_scan(R, G->coarse.vec, G->coarse.slot, b0, b1, p, la, lo, cl, f, &sum);
    tuned_scan(R, G->rowlist.vec, G->rowlist.slot, c0, c1, p, la, lo, cl, f, &sum);
    tuned_scan(R, G->every_vec, G->every_slot, 0, (uint32_t)G->every_count, p, la, lo, cl, f, &sum);
  }
  return sum;
}

/* Chooses the edge by timing every 10th fix (at most 20,000) on each candidate grid. */
__attribute__((noinline)) static void build_tuned(const regions_t *R, const fixes_t *F, tuned_t *G, double forced_edge) {
  size_t n = R->n;
  vec_t *V = malloc((n + 1) * sizeof(vec_t));
  for (size_t i = 0; i < n; i++) {
    V[i] = unit_of(R->lat[i], R->lon[i]);
    double s = sin(fmin(R->angle[i], M_PI) / 2);
    V[i].t = R->angle[i] >= M_PI ? INFINITY : 4 * s * s;
  }
  if (forced_edge > 0) { tuned_build_at(R, V, forced_edge, G); free(V); return; }
  double *h = malloc((n + 1) * sizeof(double));
  for (size_t i = 0; i < n; i++) h[i] = R->bmax_lat[i] - R->bmin_lat[i];
  qsort(h, n, sizeof(double), cmp_double);
  double med = fmax(h[n / 2], 1e-6);
  free(h);
  size_t stride = F->n / 20000 > 10 ? F->n / 20000 : 10;
  const double factors[] = {0.25, 0.5, 1, 2, 4};
  double best = INFINITY;
  for (int k = 0; k < 5; k++) {
    tuned_t T;
    tuned_build_at(R, V, factors[k] * med, &T);
    double t = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
      double t0 = now_seconds();
      checksum_t s = tuned_pass(R, &T, F, stride);
      double dt = now_seconds() - t0;
      if (s.pairs == UINT64_MAX) dt = INFINITY; /* keeps the pass */
      if (dt < t) t = dt;
    }
    if (t < best) {
      if (best < INFINITY) tuned_free(G);
      best = t; *G = T;
    } else tuned_free(&T);
  }
  free(V);
}

/* ---- plain C reader of a geofence CSV ----
 *
 * The baseline for loading: the file in memory; the header names the columns (id; latitude or
 * lat; longitude, lon, lng or long; radius or radius_m, optional); fields are split on commas
 * with RFC 4180 quotes. Per row the id is copied into one arena (its offset kept), latitude,
 * longitude and radius are read by strtod and validated as the engine's loader does (finite,
 * latitude in [-90, 90], longitude in [-180, 180], radius > 0, no trailing characters), a bad
 * row counted and skipped. Other columns are scanned and dropped.
 */
typedef struct {
  size_t rows, rejected, arena_used;
  double *lat, *lon, *radius;
  uint32_t *id_offset;
  char *arena;
} loaded_t;

/* One row read: validated as the engine's loader does (`ok`: every number parsed; a non-empty
   id; finite latitude in [-90, 90], longitude in [-180, 180]; radius > 0 and finite), then its
   id copied into the arena and its numbers appended, the columns doubled when full (*cap);
   otherwise counted as rejected. */
static void load_row(loaded_t *L, size_t *cap, int ok, const char *id0, const char *id1,
                     double lat, double lon, double r) {
  if (!ok || !id0 || id1 <= id0 || !(lat >= -90 && lat <= 90) || !(lon >= -180 && lon <= 180) ||
      !(r > 0 && isfinite(r))) {
    L->rejected++;
    return;
  }
  if (L->rows == *cap) {
    *cap *= 2;
    L->lat = realloc(L->lat, *cap * 8); L->lon = realloc(L->lon, *cap * 8);
    L->radius = realloc(L->radius, *cap * 8);
    L->id_offset = realloc(L->id_offset, (*cap + 1) * 4);
  }
  memcpy(L->arena + L->arena_used, id0, (size_t)(id1 - id0));
  L->id_offset[L->rows] = (uint32_t)L->arena_used;
  L->arena_used += (size_t)(id1 - id0);
  L->lat[L->rows] = lat; L->lon[L->rows] = lon; L->radius[L->rows] = r;
  L->rows++;
}

/* The field at p (quoted or not): its text [*from, *to) and where the next one starts (past
   the comma), or the end of the line. */
static const char *next_field(const char *p, const char *nl, const char **from, const char **to) {
  if (p < nl && *p == '"') {
    p++;
    *from = p;
    while (p < nl && !(*p == '"' && (p + 1 >= nl || p[1] != '"'))) p += *p == '"' ? 2 : 1;
    *to = p;
    if (p < nl) p++;
    while (p < nl && *p != ',') p++;
  } else {
    *from = p;
    while (p < nl && *p != ',') p++;
    *to = p;
  }
  return p < nl ? p + 1 : nl;
}

static int number_in(const char *from, const char *to, double *out) {
  char buf[64];
  size_t n = (size_t)(to - from);
  if (n == 0 || n >= sizeof buf) return 0;
  const char *s = from;
  char *end;
  if (*to != ',' && *to != '\n' && *to != '\r' && *to != '"') { memcpy(buf, from, n); buf[n] = 0; s = buf; }
  double v = strtod(s, &end);
  if (end != s + n || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

static int column_is(const char *from, const char *to, const char *names) {
  size_t n = (size_t)(to - from);
  for (const char *p = names; *p; p += strlen(p) + 1)
    if (strlen(p) == n && !strncasecmp(p, from, n)) return 1;
  return 0;
}

__attribute__((noinline)) static void read_geofences(const char *text, size_t size, double default_radius,
                                                     loaded_t *L) {
  size_t cap = size / 16 + 16;
  L->rows = L->rejected = L->arena_used = 0;
  const char *end = text + size;
  const char *nl = memchr(text, '\n', size);
  if (!nl) return;
  int id_col = -1, lat_col = -1, lon_col = -1, r_col = -1, cols = 0;
  for (const char *p = text, *hend = nl > text && nl[-1] == '\r' ? nl - 1 : nl; p < hend || cols == 0; cols++) {
    const char *a, *b;
    p = next_field(p, hend, &a, &b);
    if (column_is(a, b, "id\0")) id_col = cols;
    else if (column_is(a, b, "latitude\0lat\0")) lat_col = cols;
    else if (column_is(a, b, "longitude\0lon\0lng\0long\0")) lon_col = cols;
    else if (column_is(a, b, "radius\0radius_m\0radius_meters\0radius_metres\0")) r_col = cols;
    if (p == hend) { cols++; break; }
  }
  if (id_col < 0 || lat_col < 0 || lon_col < 0) return;
  const char *p = nl + 1;
  while (p < end) {
    const char *line = p;
    nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) nl = end;
    p = nl + 1;
    const char *le = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
    if (le == line) continue;
    const char *id0 = NULL, *id1 = NULL;
    double lat = NAN, lon = NAN, r = default_radius;
    int ok = 1, k = 0;
    for (const char *q = line; ; k++) {
      const char *a, *b;
      q = next_field(q, le, &a, &b);
      if (k == id_col) { id0 = a; id1 = b; }
      else if (k == lat_col) ok &= number_in(a, b, &lat);
      else if (k == lon_col) ok &= number_in(a, b, &lon);
      else if (k == r_col && b > a) ok &= number_in(a, b, &r);
      if (q == le) break;
    }
    load_row(L, &cap, ok && k < cols, id0, id1, lat, lon, r);
  }
  L->id_offset[L->rows] = (uint32_t)L->arena_used;
}

/* ---- plain C reader of a geofence JSON or GeoJSON file ----
 *
 * The same baseline for the JSON forms: a definition list ([{"id", "latitude", "longitude",
 * "radius"?, ...}]) or a GeoJSON FeatureCollection of Point features (the feature's id, or
 * properties.id; geometry.coordinates [longitude, latitude]; properties.radius). A scanner
 * walks each element's members, skipping strings and the nested values it does not need
 * (brackets matched, strings skipped whole); numbers are read by strtod and the row validated
 * as the CSV reader's. An id is copied into the arena as written (escapes not decoded).
 */
static const char *json_space(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static const char *json_string_end(const char *p, const char *e) { /* p at the opening quote */
  for (p++; p < e && *p != '"'; p += *p == '\\' ? 2 : 1) {}
  return p < e ? p + 1 : e;
}

static const char *json_skip(const char *p, const char *e) {
  p = json_space(p, e);
  if (p >= e) return e;
  if (*p == '"') return json_string_end(p, e);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (p < e) {
      char c = *p;
      if (c == '"') { p = json_string_end(p, e); continue; }
      if (c == '{' || c == '[') depth++;
      else if ((c == '}' || c == ']') && --depth == 0) return p + 1;
      p++;
    }
    return e;
  }
  while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') p++;
  return p;
}

typedef struct {
  const char *id0, *id1;
  double lat, lon, r;
  int ok;
} json_row_t;

static const char *json_number(const char *p, const char *e, double *out, int *ok) {
  p = json_space(p, e);
  char *end;
  double v = strtod(p, &end);
  if (end == p || !isfinite(v)) *ok = 0;
  *out = v;
  return end;
}

static int key_is(const char *k0, const char *k1, const char *name) {
  size_t n = strlen(name);
  return (size_t)(k1 - k0) == n && !memcmp(k0, name, n);
}

/* The members of the object at p (at '{'), into row; part 0 the element, 1 its geometry, 2 its
   properties. Returns the end of the object. */
static const char *json_object(const char *p, const char *e, json_row_t *row, int part) {
  p = json_space(p, e);
  if (p >= e || *p != '{') { row->ok = 0; return json_skip(p, e); }
  p = json_space(p + 1, e);
  while (p < e && *p != '}') {
    if (*p != '"') { row->ok = 0; return json_skip(p, e); }
    const char *k0 = p + 1, *k1 = json_string_end(p, e) - 1;
    p = json_space(k1 + 1, e);
    if (p < e && *p == ':') p++;
    p = json_space(p, e);
    if (part == 0 && key_is(k0, k1, "id")) {
      const char *v = p;
      p = json_skip(p, e);
      if (*v == '"') { row->id0 = v + 1; row->id1 = p - 1; } else { row->id0 = v; row->id1 = p; }
    } else if (part == 2 && key_is(k0, k1, "id") && !row->id0) {
      const char *v = p;
      p = json_skip(p, e);
      if (*v == '"') { row->id0 = v + 1; row->id1 = p - 1; } else { row->id0 = v; row->id1 = p; }
    } else if (part == 0 && key_is(k0, k1, "latitude")) p = json_number(p, e, &row->lat, &row->ok);
    else if (part == 0 && key_is(k0, k1, "longitude")) p = json_number(p, e, &row->lon, &row->ok);
    else if ((part == 0 || part == 2) && key_is(k0, k1, "radius")) p = json_number(p, e, &row->r, &row->ok);
    else if (part == 0 && key_is(k0, k1, "geometry")) p = json_object(p, e, row, 1);
    else if (part == 0 && key_is(k0, k1, "properties") && *p == '{') p = json_object(p, e, row, 2);
    else if (part == 1 && key_is(k0, k1, "coordinates")) {
      if (*p != '[') { row->ok = 0; p = json_skip(p, e); }
      else {
        p = json_number(p + 1, e, &row->lon, &row->ok);
        p = json_space(p, e);
        if (p < e && *p == ',') p = json_number(p + 1, e, &row->lat, &row->ok); else row->ok = 0;
        p = json_space(p, e);
        while (p < e && *p != ']') p = json_skip(p + (*p == ','), e), p = json_space(p, e);
        p++;
      }
    } else p = json_skip(p, e);
    p = json_space(p, e);
    if (p < e && *p == ',') p = json_space(p + 1, e);
  }
  return p < e ? p + 1 : e;
}

__attribute__((noinline)) static void read_geofences_json(const char *text, size_t size, double default_radius,
                                                          loaded_t *L) {
  size_t cap = size / 16 + 16;
  L->rows = L->rejected = L->arena_used = 0;
  const char *e = text + size, *p = json_space(text, e);
  if (p < e && *p == '{') {
    /* A FeatureCollection: its "features" array. */
    p = json_space(p + 1, e);
    while (p < e && *p == '"') {
      const char *k0 = p + 1, *k1 = json_string_end(p, e) - 1;
      p = json_space(k1 + 1, e) + 1;
      p = json_space(p, e);
      if (key_is(k0, k1, "features")) break;
      p = json_space(json_skip(p, e), e);
      if (p < e && *p == ',') p = json_space(p + 1, e);
    }
  }
  if (p >= e || *p != '[') return;
  p = json_space(p + 1, e);
  while (p < e && *p != ']') {
    json_row_t row = {NULL, NULL, NAN, NAN, default_radius, 1};
    p = json_space(json_object(p, e, &row, 0), e);
    if (p < e && *p == ',') p = json_space(p + 1, e);
    load_row(L, &cap, row.ok, row.id0, row.id1, row.lat, row.lon, row.r);
  }
  L->id_offset[L->rows] = (uint32_t)L->arena_used;
}

static int run_reader(const char *path, int reps, double min_seconds, double radius) {
  char *text = read_file(path);
  size_t size = strlen(text);
  loaded_t L = {0};
  size_t cap = size / 16 + 16;
  L.lat = malloc(cap * 8); L.lon = malloc(cap * 8); L.radius = malloc(cap * 8);
  L.id_offset = malloc((cap + 1) * 4); L.arena = malloc(size + 1);
  /* JSON (a definition list or a GeoJSON object) by its first byte, else CSV. */
  const char *first = text;
  while (*first == ' ' || *first == '\t' || *first == '\n' || *first == '\r') first++;
  int json = *first == '[' || *first == '{';
  double rates[100];
  int rounds = 1, timed = 0;
  for (int r = 0; timed < reps; r++) {
    double t0 = now_seconds();
    for (int k = 0; k < rounds; k++) {
      if (json) read_geofences_json(text, size, radius, &L);
      else read_geofences(text, size, radius, &L);
    }
    double dt = now_seconds() - t0;
    if (r == 0 && dt < min_seconds) {
      double need = ceil(1.1 * min_seconds / (dt > 1e-6 ? dt : 1e-6));
      rounds = need > 1e6 ? 1000000 : (int)need;
      continue;
    }
    rates[timed++] = (double)size * rounds / dt;
  }
  double mbps = median(rates, reps) / 1e6;
  printf("{\"peer\": \"c-read\", \"file\": \"%s\", \"bytes\": %zu, \"rows\": %zu, \"rejected\": %zu, "
         "\"megabytes_per_second\": %.2f, \"rows_per_second\": %.1f, \"rounds\": %d}\n",
         path, size, L.rows, L.rejected, mbps, mbps * 1e6 / size * L.rows, rounds);
  return 0;
}

/* ---- brute force ---- */

typedef struct {
  const regions_t *R; const fixes_t *F; size_t from, to; checksum_t sum;
} brute_job_t;

static void *brute_worker(void *arg) {
  brute_job_t *job = arg;
  checksum_t sum = {0, 0, 0};
  const regions_t *R = job->R;
  for (size_t f = job->from; f < job->to; f++) {
    double la = job->F->lat[f] * DEG, lo = job->F->lon[f] * DEG, cl = cos(la);
    for (size_t i = 0; i < R->n; i++) if (contains(R, i, la, lo, cl)) add_pair(&sum, f, i);
  }
  job->sum = sum;
  return NULL;
}

static checksum_t brute_pass(const regions_t *R, const fixes_t *F, int threads) {
  pthread_t tid[256];
  brute_job_t jobs[256];
  for (int t = 0; t < threads; t++) {
    jobs[t] = (brute_job_t){R, F, F->n * t / threads, F->n * (t + 1) / threads, {0, 0, 0}};
    pthread_create(&tid[t], NULL, brute_worker, &jobs[t]);
  }
  checksum_t sum = {0, 0, 0};
  for (int t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    sum.pairs += jobs[t].sum.pairs; sum.slot_sum += jobs[t].sum.slot_sum;
    sum.weighted_sum += jobs[t].sum.weighted_sum;
  }
  return sum;
}

/* ---- GEOS STRtree ---- */

typedef struct {
  const regions_t *R; size_t fix; double lat_r, lon_r, cos_lat; checksum_t *sum;
} geos_query_t;

static void geos_hit(void *item, void *userdata) {
  geos_query_t *q = userdata;
  size_t slot = (size_t)(uintptr_t)item - 1;
  if (contains(q->R, slot, q->lat_r, q->lon_r, q->cos_lat)) add_pair(q->sum, q->fix, slot);
}

static void geos_notice(const char *fmt, ...) { (void)fmt; }

typedef struct {
  GEOSContextHandle_t ctx; GEOSSTRtree *tree; GEOSGeometry **boxes; size_t box_count;
} geos_index_t;

static void geos_build(const regions_t *R, geos_index_t *X) {
  X->ctx = GEOS_init_r();
  GEOSContext_setNoticeHandler_r(X->ctx, geos_notice);
  X->tree = GEOSSTRtree_create_r(X->ctx, 10);
  X->boxes = malloc(2 * R->n * sizeof(GEOSGeometry *));
  X->box_count = 0;
  for (size_t i = 0; i < R->n; i++) {
    void *item = (void *)(uintptr_t)(i + 1);
    if (R->bmin_lon[i] <= R->bmax_lon[i]) {
      GEOSGeometry *g = GEOSGeom_createRectangle_r(X->ctx, R->bmin_lon[i], R->bmin_lat[i], R->bmax_lon[i], R->bmax_lat[i]);
      X->boxes[X->box_count++] = g;
      GEOSSTRtree_insert_r(X->ctx, X->tree, g, item);
    } else {
      GEOSGeometry *a = GEOSGeom_createRectangle_r(X->ctx, R->bmin_lon[i], R->bmin_lat[i], 180, R->bmax_lat[i]);
      GEOSGeometry *b = GEOSGeom_createRectangle_r(X->ctx, -180, R->bmin_lat[i], R->bmax_lon[i], R->bmax_lat[i]);
      X->boxes[X->box_count++] = a; X->boxes[X->box_count++] = b;
      GEOSSTRtree_insert_r(X->ctx, X->tree, a, item);
      GEOSSTRtree_insert_r(X->ctx, X->tree, b, item);
    }
  }
  /* The tree is built on the first query. */
  GEOSGeometry *p = GEOSGeom_createPointFromXY_r(X->ctx, 0, 0);
  checksum_t dummy = {0, 0, 0};
  geos_query_t q = {R, 0, 0, 0, 1, &dummy};
  GEOSSTRtree_query_r(X->ctx, X->tree, p, geos_hit, &q);
  GEOSGeom_destroy_r(X->ctx, p);
}

__attribute__((noinline)) static checksum_t geos_pass(const regions_t *R, geos_index_t *X, const fixes_t *F) {
  checksum_t sum = {0, 0, 0};
  for (size_t f = 0; f < F->n; f++) {
    double la = F->lat[f] * DEG;
    geos_query_t q = {R, f, la, F->lon[f] * DEG, cos(la), &sum};
    GEOSGeometry *p = GEOSGeom_createPointFromXY_r(X->ctx, F->lon[f], F->lat[f]);
    GEOSSTRtree_query_r(X->ctx, X->tree, p, geos_hit, &q);
    GEOSGeom_destroy_r(X->ctx, p);
  }
  return sum;
}

/* ---- main ---- */

static double median(double *v, int n) {
  qsort(v, n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}


int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: peers grid|tuned|lookup|geos|brute REGIONS.csv FIXES.csv | peers read GEOFENCES.csv - [--limit N] [--threads T] [--repetitions R] [--min-seconds S] [--cell-size DEG] [--radius M]\n");
    return 64;
  }
  const char *mode = argv[1];
  size_t limit = (size_t)-1;
  int threads = 2, reps = 3;
  double cell = 0, min_seconds = 0.2, default_radius = NAN;
  for (int i = 4; i < argc; i += 2) {
    const char *opt = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "peers: %s needs a value\n", opt); return 64; }
    double v;
    if (!parse_number(argv[i + 1], &v)) { fprintf(stderr, "peers: %s needs a number, got '%s'\n", opt, argv[i + 1]); return 64; }
    if (!strcmp(opt, "--limit") && v >= 1 && v <= 1e12 && v == floor(v)) limit = (size_t)v;
    else if (!strcmp(opt, "--threads") && v >= 1 && v <= 256 && v == floor(v)) threads = (int)v;
    else if (!strcmp(opt, "--repetitions") && v >= 1 && v <= 100 && v == floor(v)) reps = (int)v;
    else if (!strcmp(opt, "--cell-size") && v >= 0 && v <= 180) cell = v;
    else if (!strcmp(opt, "--min-seconds") && v >= 0 && v <= 600) min_seconds = v;
    else if (!strcmp(opt, "--radius") && v > 0 && v <= 1e8) default_radius = v;
    else if (strcmp(opt, "--limit") && strcmp(opt, "--threads") && strcmp(opt, "--repetitions") &&
             strcmp(opt, "--cell-size") && strcmp(opt, "--min-seconds") && strcmp(opt, "--radius")) {
      fprintf(stderr, "peers: unknown option %s\n", opt);
      return 64;
    } else {
      fprintf(stderr, "peers: %s %s is out of range (--limit >= 1, --threads 1-256, --repetitions 1-100, "
                      "--cell-size 0-180, --min-seconds 0-600, --radius 0-1e8 m)\n", opt, argv[i + 1]);
      return 64;
    }
  }
  if (!strcmp(mode, "read")) return run_reader(argv[2], reps, min_seconds, default_radius);
  regions_t R; fixes_t F;
  load_regions(argv[2], &R);
  load_fixes(argv[3], &F, limit);

  double build = 0, rates[100];
  checksum_t sum = {0, 0, 0};
  double bytes_per_region = 0;
  grid_t G = {0}; geos_index_t X = {0}; tuned_t T = {0};
  int is_grid = !strcmp(mode, "grid") || !strcmp(mode, "lookup");
  int is_tuned = !strcmp(mode, "tuned");
  if (is_tuned) {
    double t0 = now_seconds();
    build_tuned(&R, &F, &T, cell);
    build = now_seconds() - t0;
    bytes_per_region = (double)T.bytes / R.n;
  } else if (is_grid) {
    double t0 = now_seconds();
    build_grid(&R, &G, cell);
    build = now_seconds() - t0;
    /* grid arrays + the per-region refine data this design reads (lat_r, lon_r, cos, angle, hav) */
    bytes_per_region = (double)(G.entry_count * 4 + (G.mask + 1) * sizeof(cell_t) + G.everywhere_count * 4) / R.n + 5 * 8;
  } else if (!strcmp(mode, "geos")) {
    double t0 = now_seconds();
    geos_build(&R, &X);
    build = now_seconds() - t0;
  } else if (strcmp(mode, "brute")) {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 64;
  }
  /* Each timed pass replays the fixes `rounds` whole times so that it lasts about
     min_seconds (a millisecond pass is decided by timer and scheduler noise). The first pass
     sets `rounds` (min_seconds plus a tenth, as `geofence bench`); it counts as a timed pass
     only when it already lasts long enough. */
  int rounds = 1, timed = 0, have_sum = 0;
  for (int r = 0; timed < reps; r++) {
    double t0 = now_seconds();
    for (int k = 0; k < rounds; k++) {
      checksum_t s;
      if (!strcmp(mode, "grid")) s = grid_pass(&R, &G, &F);
      else if (!strcmp(mode, "lookup")) s = lookup_pass(&G, &F);
      else if (is_tuned) s = tuned_pass(&R, &T, &F, 1);
      else if (!strcmp(mode, "geos")) s = geos_pass(&R, &X, &F);
      else s = brute_pass(&R, &F, threads);
      if (have_sum && (s.pairs != sum.pairs || s.weighted_sum != sum.weighted_sum)) { fprintf(stderr, "passes disagree\n"); return 70; }
      sum = s;
      have_sum = 1;
    }
    double dt = now_seconds() - t0;
    if (r == 0 && dt < min_seconds) {
      double need = ceil(1.1 * min_seconds / (dt > 1e-6 ? dt : 1e-6)); /* a tenth more, as the engine */
      rounds = need > 1e6 ? 1000000 : (int)need;
      continue;
    }
    rates[timed++] = (double)F.n * rounds / dt;
  }
  printf("{\"peer\": \"c-%s\", \"regions\": %zu, \"fixes\": %zu, \"build_seconds\": %.6f, "
         "\"fixes_per_second\": %.1f, \"threads\": %d, \"pairs\": %llu, \"slot_sum\": %llu, "
         "\"weighted_sum\": %llu, \"cell_size_degrees\": %.9g, \"bytes_per_region\": %.1f, \"rounds\": %d}\n",
         mode, R.n, F.n, build, median(rates, reps), !strcmp(mode, "brute") ? threads : 1,
         (unsigned long long)sum.pairs, (unsigned long long)sum.slot_sum,
         (unsigned long long)sum.weighted_sum, is_grid ? G.edge : is_tuned ? T.edge : 0.0, bytes_per_region, rounds);
  return 0;
}
