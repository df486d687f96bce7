/* Medians over runs and --sizes lists for the benchmarks (runs.h). */
#include <stdlib.h>
#include <string.h>

#include "runs.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(const double *v, size_t n, double *spread) {
  double s[BENCH_MAX_RUNS];
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  *spread = m > 0 ? (s[n - 1] - s[0]) / m : 0;
  return m;
}

int bench_parse_sizes(const char *arg, size_t sizes[BENCH_MAX_SIZES], size_t *nsizes) {
  *nsizes = 0;
  const char *p = arg;
  while (*p) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || v < 18 || v > 8972 || *nsizes == BENCH_MAX_SIZES) return -1;
    sizes[(*nsizes)++] = v;
    if (*end && *end != ',') return -1;
    p = *end == ',' ? end + 1 : end;
  }
  return *nsizes ? 0 : -1;
}
