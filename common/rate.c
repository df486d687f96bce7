/* Link rates as text (rate.h). */
#include "rate.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "jctlab/error.h"

int jct__parse_rate_bps(const char *s, uint64_t *out_bps) {
  if (!s || !isdigit((unsigned char)*s)) return JCT_EINVAL;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || !(v > 0)) return JCT_EINVAL;
  /* clang-format off */
  static const struct {
    const char *unit;
    double mult;
  } units[] = {
      {"", 1},         {"bit", 1},       {"bps", 1},       {"bit/s", 1},
      {"k", 1e3},      {"kbit", 1e3},    {"kbps", 1e3},    {"kbit/s", 1e3},
      {"m", 1e6},      {"mbit", 1e6},    {"mbps", 1e6},    {"mbit/s", 1e6},
      {"g", 1e9},      {"gbit", 1e9},    {"gbps", 1e9},    {"gbit/s", 1e9},
      {"t", 1e12},     {"tbit", 1e12},   {"tbps", 1e12},   {"tbit/s", 1e12},
  };
  /* clang-format on */
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].unit) == 0) {
      double bps = v * units[i].mult;
      if (bps < 1 || bps > 1e18) return JCT_EINVAL;
      *out_bps = (uint64_t)(bps + 0.5);
      return 0;
    }
  }
  return JCT_EINVAL;
}
