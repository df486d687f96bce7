/* Numbers with units (units.h): sizes in powers of 1024 bytes (KiB, MiB) as
 * the reports print them, durations from ns to s, plain numbers with
 * strtod(3). Link rates, in powers of 1000 bits as tc(8) and iperf3 write
 * them, are read by common/rate.c, shared with the rate injector. */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jctlab/error.h"

int jct__parse_count(const char *s, uint64_t max, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return JCT_EINVAL;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > max) return JCT_EINVAL;
  *out = v;
  return 0;
}

int jct__parse_path_mtu(const char *s, uint32_t *out_bytes) {
  uint64_t m;
  if (jct__parse_count(s, 4096, &m) || m < 256 || (m & (m - 1))) return JCT_EINVAL;
  *out_bytes = (uint32_t)m;
  return 0;
}

int jct__parse_time_ns(const char *s, uint64_t *out_ns) {
  static const struct {
    const char *u;
    uint64_t mult;
  } units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000},
                 {"min", 60000000000ull}, {"h", 3600000000000ull}};
  char *end;
  if (!s || !isdigit((unsigned char)*s)) return JCT_EINVAL;
  unsigned long long v = strtoull(s, &end, 10);
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcmp(end, units[i].u) == 0) {
      if (v > UINT64_MAX / units[i].mult) return JCT_EINVAL;
      *out_ns = v * units[i].mult;
      return 0;
    }
  return JCT_EINVAL;
}

int jct__parse_number(const char *s, double *out) {
  if (!s) return JCT_EINVAL;
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(d)) return JCT_EINVAL;
  *out = d;
  return 0;
}

int jct__parse_size_bytes(const char *s, uint64_t *out_bytes) {
  static const struct {
    const char *suffix;
    uint64_t mult;
  } units[] = {{"", 1},
               {"b", 1},
               {"k", 1u << 10},
               {"kib", 1u << 10},
               {"m", 1u << 20},
               {"mib", 1u << 20},
               {"g", 1u << 30},
               {"gib", 1u << 30},
               {"kb", 1000},
               {"mb", 1000000},
               {"gb", 1000000000},
               {"t", 1ull << 40},
               {"tib", 1ull << 40}};
  if (!s || !isdigit((unsigned char)*s)) return JCT_EINVAL;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return JCT_EINVAL;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcasecmp(end, units[i].suffix) == 0) {
      if (v > UINT64_MAX / units[i].mult) return JCT_EINVAL;
      *out_bytes = v * units[i].mult;
      return 0;
    }
  return JCT_EINVAL;
}

char *jct__fmt_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const u[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    return buf;
  }
  double v = (double)bytes / 1024;
  size_t i = 0;
  while (v >= 1024 && i + 1 < sizeof u / sizeof u[0]) {
    v /= 1024;
    i++;
  }
  snprintf(buf, len, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, u[i]);
  return buf;
}

char *jct__fmt_ns(uint64_t ns, char *buf, size_t len) {
  double v = (double)ns;
  if (ns < 1000)
    snprintf(buf, len, "%llu ns", (unsigned long long)ns);
  else if (ns < 1000000)
    snprintf(buf, len, "%.*f µs", v < 1e4 ? 2 : v < 1e5 ? 1 : 0, v / 1e3);
  else if (ns < 1000000000)
    snprintf(buf, len, "%.*f ms", v < 1e7 ? 2 : v < 1e8 ? 1 : 0, v / 1e6);
  else
    snprintf(buf, len, "%.3f s", v / 1e9);
  return buf;
}

char *jct__fmt_rate(uint64_t bps, char *buf, size_t len) {
  static const struct {
    double div;
    const char *unit;
  } u[] = {{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}, {1, "bit/s"}};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
    if ((double)bps >= u[i].div || i + 1 == sizeof u / sizeof u[0]) {
      snprintf(buf, len, "%.4g %s", (double)bps / u[i].div, u[i].unit);
      break;
    }
  }
  return buf;
}

int jct__parse_ecn_thresholds(const char *s, uint64_t *kmin_bytes, uint64_t *kmax_bytes,
                              double *pmax) {
  char buf[96], *save = NULL;
  if (!s || strlen(s) >= sizeof buf) return JCT_EINVAL;
  snprintf(buf, sizeof buf, "%s", s);
  const char *w[3];
  char *t = strtok_r(buf, ",", &save);
  for (int i = 0; i < 3; i++, t = strtok_r(NULL, ",", &save)) {
    if (!t) return JCT_EINVAL;
    w[i] = t;
  }
  uint64_t lo, hi;
  double p;
  if (t || jct__parse_size_bytes(w[0], &lo) || jct__parse_size_bytes(w[1], &hi) ||
      jct__parse_number(w[2], &p) || !lo || lo > hi || !(p > 0 && p <= 1))
    return JCT_EINVAL;
  *kmin_bytes = lo, *kmax_bytes = hi, *pmax = p;
  return 0;
}
