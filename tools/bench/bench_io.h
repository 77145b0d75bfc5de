/* Shared by the C peers of tools/bench (peers.c, polygon_peers.c): a monotonic clock and
 * reading a whole workload file, a number from the command line. Exit 66 when the file cannot be read. */
#ifndef BENCH_IO_H
#define BENCH_IO_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(66); }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(n + 1);
  if (fread(buf, 1, n, f) != (size_t)n) { perror(path); exit(66); }
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* A whole decimal number (no trailing characters, finite) in *out; 0 when there is none. */
static int parse_number(const char *text, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

#endif
