/* Samples into figures for the profile (profile_int.h): value histograms,
 * sample arrays and back-to-back rate bins, each summarised as a
 * jct_figure_t with nearest-rank percentiles (profile.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "jctlab/error.h"
#include "profile_int.h"

/* The 0-based rank of the p-th percentile of n > 0 samples (nearest rank). */
static uint64_t rank_of(unsigned p, uint64_t n) {
  uint64_t k = (p * n + 99) / 100;
  return k ? k - 1 : 0;
}

/* ---- value histograms ---- */

static size_t lower_bound(const jct__vhist_t *h, uint64_t v) {
  size_t lo = 0, hi = h->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (h->v[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int jct__vhist_add(jct__vhist_t *h, uint64_t v) {
  size_t i = lower_bound(h, v);
  if (i < h->n && h->v[i] == v) {
    h->c[i]++;
    h->total++;
    return 0;
  }
  if (h->n == JCT__VHIST_MAX) { /* full: count it with its nearest neighbour */
    if (i == h->n || (i > 0 && v - h->v[i - 1] <= h->v[i] - v)) i--;
    h->c[i]++;
    h->total++;
    return 0;
  }
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 16;
    uint64_t *nv = realloc(h->v, cap * sizeof *nv);
    if (!nv) return JCT_ENOMEM;
    h->v = nv;
    uint64_t *nc = realloc(h->c, cap * sizeof *nc);
    if (!nc) return JCT_ENOMEM;
    h->c = nc;
    h->cap = cap;
  }
  memmove(&h->v[i + 1], &h->v[i], (h->n - i) * sizeof *h->v);
  memmove(&h->c[i + 1], &h->c[i], (h->n - i) * sizeof *h->c);
  h->v[i] = v;
  h->c[i] = 1;
  h->n++;
  h->total++;
  return 0;
}

/* The k-th smallest sample (0-based). */
static uint64_t vhist_at(const jct__vhist_t *h, uint64_t k) {
  uint64_t seen = 0;
  for (size_t i = 0; i < h->n; i++) {
    seen += h->c[i];
    if (k < seen) return h->v[i];
  }
  return h->n ? h->v[h->n - 1] : 0;
}

void jct__vhist_figure(const jct__vhist_t *h, jct_figure_t *f) {
  memset(f, 0, sizeof *f);
  if (!h->total) return;
  f->n = h->total;
  f->min = h->v[0];
  f->max = h->v[h->n - 1];
  f->median = vhist_at(h, rank_of(50, f->n));
  f->p10 = vhist_at(h, rank_of(10, f->n));
  f->p90 = vhist_at(h, rank_of(90, f->n));
  f->value = f->median;
  f->set = true;
  long double sum = 0;
  for (size_t i = 0; i < h->n; i++)
    sum += (long double)h->v[i] * h->c[i];
  f->mean = (uint64_t)llroundl(sum / (long double)f->n);
  for (size_t i = 0; i < h->n; i++)
    f->spread[jct_figure_bin(h->v[i])] += h->c[i];
}

void jct__vhist_free(jct__vhist_t *h) {
  free(h->v);
  free(h->c);
  memset(h, 0, sizeof *h);
}

/* ---- sample arrays ---- */

int jct__samples_add(jct__samples_t *s, uint64_t v) {
  if (jct__grow((void **)&s->v, &s->cap, s->n, sizeof *s->v)) return JCT_ENOMEM;
  s->v[s->n++] = v;
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int jct__samples_figure(const jct__samples_t *s, jct_figure_t *f) {
  memset(f, 0, sizeof *f);
  if (!s->n) return 0;
  uint64_t *v = malloc(s->n * sizeof *v);
  if (!v) return JCT_ENOMEM;
  memcpy(v, s->v, s->n * sizeof *v);
  qsort(v, s->n, sizeof *v, cmp_u64);
  f->n = s->n;
  f->min = v[0];
  f->max = v[s->n - 1];
  f->median = v[rank_of(50, s->n)];
  f->p10 = v[rank_of(10, s->n)];
  f->p90 = v[rank_of(90, s->n)];
  f->value = f->median;
  f->set = true;
  long double sum = 0;
  for (size_t i = 0; i < s->n; i++) {
    sum += v[i];
    f->spread[jct_figure_bin(v[i])]++;
  }
  f->mean = (uint64_t)llroundl(sum / s->n);
  free(v);
  return 0;
}

void jct__samples_free(jct__samples_t *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ---- back-to-back rates ---- */

static uint64_t bps(uint64_t bytes, uint64_t ns) {
  return ns ? (uint64_t)llround((double)bytes * 8e9 / (double)ns) : 0;
}

/* Index of the first occupied bin >= bin. */
static size_t rbin_at(const jct__ratehist_t *h, uint32_t bin) {
  size_t lo = 0, hi = h->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (h->b[mid].bin < bin)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* floor(log2(x) * JCT__RATE_BINS_PER_OCTAVE) for x > 0, 0 below 1: the
 * octave from x's exponent, its eighth from the mantissa against the
 * bins' edges 2^(k/8), without a log2 per packet (it was a fifth of
 * inspect's time on a capture of many packets: bench/inspect). */
static uint32_t rate_bin(double x) {
  static const double edge[JCT__RATE_BINS_PER_OCTAVE] = {1.0,
                                                         1.0905077326652577,
                                                         1.189207115002721,
                                                         1.2968395546510096,
                                                         1.4142135623730951,
                                                         1.5422108254079407,
                                                         1.681792830507429,
                                                         1.8340080864093424}; /* 2^(k/8) */
  _Static_assert(JCT__RATE_BINS_PER_OCTAVE == 8, "edge[] holds eighths of an octave");
  if (!(x >= 1)) return 0;
  int e;
  double m = frexp(x, &e) * 2; /* x = m * 2^(e-1), m in [1, 2) */
  uint32_t k = 1;
  while (k < JCT__RATE_BINS_PER_OCTAVE && m >= edge[k])
    k++;
  return (uint32_t)(e - 1) * JCT__RATE_BINS_PER_OCTAVE + (k - 1);
}

int jct__ratehist_add(jct__ratehist_t *h, uint64_t bytes, uint64_t dt_ns) {
  if (!dt_ns || !bytes) return 0;
  uint64_t r = bps(bytes, dt_ns);
  uint32_t bin = rate_bin((double)bytes * 8e9 / (double)dt_ns);
  size_t i = rbin_at(h, bin);
  if (i == h->n || h->b[i].bin != bin) {
    if (jct__grow((void **)&h->b, &h->cap, h->n, sizeof *h->b)) return JCT_ENOMEM;
    memmove(&h->b[i + 1], &h->b[i], (h->n - i) * sizeof *h->b);
    h->b[i] = (jct__rbin_t){.bin = bin};
    h->n++;
  }
  h->b[i].n++;
  h->b[i].bytes += bytes;
  h->b[i].ns += dt_ns;
  if (!h->total || r < h->min_bps) h->min_bps = r;
  if (r > h->max_bps) h->max_bps = r;
  h->total++;
  return 0;
}

/* The rate of the bin holding the k-th slowest sample (0-based). */
static uint64_t ratehist_at(const jct__ratehist_t *h, uint64_t k) {
  uint64_t seen = 0;
  for (size_t i = 0; i < h->n; i++) {
    seen += h->b[i].n;
    if (k < seen) return bps(h->b[i].bytes, h->b[i].ns);
  }
  return h->max_bps;
}

/* The samples, bytes and time in bins c-1 .. c+1. */
static uint64_t window(const jct__ratehist_t *h, uint32_t c, uint64_t *bytes, uint64_t *ns) {
  uint64_t n = 0;
  *bytes = *ns = 0;
  for (size_t i = rbin_at(h, c ? c - 1 : 0); i < h->n && h->b[i].bin <= c + 1; i++) {
    n += h->b[i].n;
    *bytes += h->b[i].bytes;
    *ns += h->b[i].ns;
  }
  return n;
}

void jct__ratehist_figure(const jct__ratehist_t *h, jct_figure_t *f, uint64_t *mode_n) {
  memset(f, 0, sizeof *f);
  *mode_n = 0;
  if (!h || !h->total) return;
  uint64_t best_n = 0, bytes = 0, ns = 0;
  for (size_t i = 0; i < h->n; i++) /* windows around each occupied bin; ties: the faster */
    for (uint32_t d = 0; d < 3; d++) {
      uint32_t c = h->b[i].bin + d;
      if (c == 0) continue;
      uint64_t wb, wn, n = window(h, c - 1, &wb, &wn);
      if (n >= best_n) best_n = n, bytes = wb, ns = wn;
    }
  f->set = true;
  f->value = bps(bytes, ns);
  f->n = h->total;
  f->min = h->min_bps;
  f->max = h->max_bps;
  f->median = ratehist_at(h, rank_of(50, h->total));
  f->p10 = ratehist_at(h, rank_of(10, h->total));
  f->p90 = ratehist_at(h, rank_of(90, h->total));
  *mode_n = best_n;
  f->mean = jct__ratehist_mean_bps(h);
}

void jct__ratehist_sums(const jct__ratehist_t *h, uint64_t *bytes, uint64_t *ns) {
  *bytes = *ns = 0;
  for (size_t i = 0; h && i < h->n; i++) {
    *bytes += h->b[i].bytes;
    *ns += h->b[i].ns;
  }
}

uint64_t jct__ratehist_mean_bps(const jct__ratehist_t *h) {
  uint64_t bytes, ns;
  jct__ratehist_sums(h, &bytes, &ns);
  return bps(bytes, ns);
}

void jct__ratehist_free(jct__ratehist_t *h) {
  free(h->b);
  memset(h, 0, sizeof *h);
}
