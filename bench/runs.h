/* What the forwarding benchmarks share besides their peer (bridge.h):
 * medians over runs, and the datagram-size list of --sizes. */
#ifndef JCT_BENCH_RUNS_H
#define JCT_BENCH_RUNS_H

#include <stddef.h>

#define BENCH_MAX_RUNS 99
#define BENCH_MAX_SIZES 8

/* Median of n values (1 to BENCH_MAX_RUNS; the mean of the middle two when
 * n is even); *spread = (max - min) / median, 0 when the median is 0. */
double bench_median(const double *v, size_t n, double *spread);

/* "64,1400,4096": at most BENCH_MAX_SIZES UDP payload sizes of 18 to 8972
 * bytes (a 9000-byte MTU), into sizes[]. 0, or -1 when arg is not that. */
int bench_parse_sizes(const char *arg, size_t sizes[BENCH_MAX_SIZES], size_t *nsizes);

#endif
