/* A figure's spread in words (spread_text.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jctlab/profile.h"
#include "spread_text.h"

/* A bin's edge v (1, 2 or 5 times a power of ten) as a whole number of
 * its unit: ns, µs, ms or s for a time, none for a count. */
static const char *edge(uint64_t v, bool time, unsigned long long *num) {
  static const struct {
    uint64_t div;
    const char *unit;
  } u[] = {{1000000000, "s"}, {1000000, "ms"}, {1000, "µs"}, {1, "ns"}};
  *num = v;
  if (!time) return "";
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
    if (v >= u[i].div || u[i].div == 1) {
      *num = v / u[i].div;
      return u[i].unit;
    }
  return "";
}

/* Append to buf at *at, never past len: cut short when full, before a
 * character that would not fit whole (UTF-8: "µs"). */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t len, size_t *at,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *at, len - *at, fmt, ap);
  va_end(ap);
  if (w >= 0 && (size_t)w < len - *at) {
    *at += (size_t)w;
    return;
  }
  /* Full: the last character written, whole or dropped. */
  size_t last = len - 2, start = last;
  while (start > *at && ((unsigned char)buf[start] & 0xc0) == 0x80)
    start--;
  unsigned char lead = (unsigned char)buf[start];
  size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (last - start + 1 < need) buf[start] = '\0';
  *at = len - 1;
}

char *jct__fmt_spread(const uint64_t *spread, bool time, char *buf, size_t len, unsigned *bins) {
  size_t at = 0;
  unsigned n = 0;
  if (!len) return buf;
  buf[0] = '\0';
  for (unsigned k = 0; k < JCT_FIGURE_BINS; k++) {
    if (!spread[k]) continue;
    put(buf, len, &at, "%s%llu ", n++ ? ", " : "", (unsigned long long)spread[k]);
    if (k == 0) { /* the samples of 0 */
      put(buf, len, &at, "at 0");
      continue;
    }
    unsigned long long lo, hi;
    const char *lu = edge(jct_figure_bin_lo(k), time, &lo), *sp = *lu ? " " : "";
    if (k + 1 == JCT_FIGURE_BINS) {
      put(buf, len, &at, "in %llu%s%s and above", lo, sp, lu);
      continue;
    }
    const char *hu = edge(jct_figure_bin_lo(k + 1), time, &hi), *hs = *hu ? " " : "";
    if (strcmp(lu, hu))
      put(buf, len, &at, "in %llu%s%s-%llu%s%s", lo, sp, lu, hi, hs, hu);
    else /* one unit for both: "1-2 ms" */
      put(buf, len, &at, "in %llu-%llu%s%s", lo, hi, hs, hu);
  }
  if (bins) *bins = n;
  return buf;
}
