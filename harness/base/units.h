/* Numbers with units, for the command line, the scenario files and the
 * reports (internal to jctlab's harness): parsing link rates, sizes, times,
 * counts and plain numbers (one parser each, so that a value reads the same
 * in `--delay 2ms` and in `delay: 2ms`), printing byte counts and durations
 * the way iperf3 and tcpreplay print them. */
#ifndef JCT_UNITS_H
#define JCT_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "common/rate.h"

/* jct__parse_rate_bps(): common/rate.h, the one reader of link rates (the
 * rate injector reads its RATE with it too). */

/* Parse a size: a whole number and an optional unit, case-insensitive:
 * K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024 (as nccl-tests' -b
 * and -e read "8M"); KB, MB, GB are powers of 1000; B or none, bytes.
 * Returns 0, or JCT_EINVAL when the text is not a size or overflows. */
int jct__parse_size_bytes(const char *s, uint64_t *out_bytes);

/* Parse a non-negative decimal count. Returns 0 or JCT_EINVAL. */
int jct__parse_count(const char *s, uint64_t max, uint64_t *out);

/* Parse a RoCE path MTU in bytes: 256, 512, 1024, 2048 or 4096, the
 * InfiniBand MTUs RoCE inherits. Returns 0 or JCT_EINVAL. */
int jct__parse_path_mtu(const char *s, uint32_t *out_bytes);

/* Parse a time: a whole number and an optional unit, ns (or none), us, ms
 * or s, lower case ("1us", "500ns", "2ms", "1s", "1000"); in nanoseconds.
 * Returns 0, or JCT_EINVAL when the text is not a time or overflows. */
int jct__parse_time_ns(const char *s, uint64_t *out_ns);

/* Parse a finite decimal number (strtod(3)'s syntax: "1.15", "1e-4"), the
 * whole text. Returns 0, or JCT_EINVAL for anything else, an empty text,
 * an overflow, "inf" or "nan" included. */
int jct__parse_number(const char *s, double *out);

/* Parse ECN's marking thresholds "KMIN,KMAX,PMAX" (--ecn-thresholds,
 * ecn_thresholds:): two sizes as jct__parse_size_bytes, 0 < KMIN <= KMAX,
 * and a probability 0 < PMAX <= 1 ("5KB,200KB,0.01"). Returns 0 or
 * JCT_EINVAL (nothing written). */
int jct__parse_ecn_thresholds(const char *s, uint64_t *kmin_bytes, uint64_t *kmax_bytes,
                              double *pmax);

/* "512 B", "3.21 KiB", "1.50 MiB", "2.00 GiB". Returns buf. */
char *jct__fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* "850 ns", "12.3 µs", "4.56 ms", "1.234 s". Returns buf. */
char *jct__fmt_ns(uint64_t ns, char *buf, size_t len);

/* "100 Gbit/s", "25 Gbit/s", "10 Mbit/s", "1.5 Gbit/s". Returns buf. */
char *jct__fmt_rate(uint64_t bps, char *buf, size_t len);

#endif
