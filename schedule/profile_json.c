/* Profiles (include/jctlab/profile.h): freeing, the timeout exponent, the
 * figures' spread bins, and the JSON shape a schedule and `jctlab inspect
 * --json` share.
 *
 * A figure is {"value", "n", "median", "p10", "p90", "min", "max", "mean",
 * "spread"}: value null when not set, the statistics null when there are
 * no samples; spread the bins that hold samples, in order, each {"from",
 * "to" (null for the last bin), "n"} ([] when none). A user edits
 * "value"; a figure read with a value and no samples is one given by hand.
 * Loading checks each value's type and range and names the key at fault.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/profile.h"
#include "profile_json.h"

#define IBA_TIMEOUT_UNIT_NS 4096.0 /* 4.096 µs: IBA 9.7.6.1.3 */
#define EXP_MAX 31                 /* the Local ACK Timeout field has 5 bits */
#define JSON_MAX ((uint64_t)INT64_MAX)
#define MTU_MAX 65535u

int32_t jct_profile_timeout_exp(uint64_t ns) {
  if (!ns) return -1;
  double n = round(log2((double)ns / IBA_TIMEOUT_UNIT_NS));
  if (n < 0) return 0;
  if (n > EXP_MAX) return EXP_MAX;
  return (int32_t)n;
}

uint64_t jct_profile_timeout_ns(int32_t n) {
  return n < 0 || n > EXP_MAX ? 0 : (uint64_t)IBA_TIMEOUT_UNIT_NS << n;
}

uint64_t jct_profile_link_unstalled_bps(const jct_profile_link_t *l) {
  if (!l->stall_ns || !l->sample_bytes || l->stall_ns > l->sample_ns / 4 * 3)
    return l->rate_bps.mean;
  return (uint64_t)((double)l->sample_bytes * 8e9 / (double)(l->sample_ns - l->stall_ns) + 0.5);
}

/* Bin k >= 1 starts at 1, 2 or 5 times 10^((k - 1) / 3). */
static const uint64_t bin_step[3] = {1, 2, 5};

uint64_t jct_figure_bin_lo(unsigned k) {
  if (k >= JCT_FIGURE_BINS) return UINT64_MAX;
  if (k == 0) return 0;
  uint64_t lo = bin_step[(k - 1) % 3];
  for (unsigned d = 0; d < (k - 1) / 3; d++)
    lo *= 10;
  return lo;
}

unsigned jct_figure_bin(uint64_t v) {
  if (v == 0) return 0;
  unsigned k = 1;
  uint64_t decade = 1; /* bin k's power of ten */
  while (k + 1 < JCT_FIGURE_BINS) {
    uint64_t d = k % 3 ? decade : decade * 10; /* bin k + 1's */
    if (d * bin_step[k % 3] > v) break;
    decade = d;
    k++;
  }
  return k;
}

void jct_profile_free(jct_profile_t *p) {
  if (!p) return;
  free(p->links);
  free(p);
}

/* ---- writing ------------------------------------------------------------- */

static json_t *num(bool have, uint64_t v) {
  return have ? json_integer((json_int_t)(v > JSON_MAX ? JSON_MAX : v)) : json_null();
}

/* jansson's setters accept a NULL value and then fail: one check at the end. */
typedef struct {
  int failed;
} wctx_t;

static void put(wctx_t *c, json_t *o, const char *key, json_t *v) {
  if (!o || json_object_set_new(o, key, v) < 0) c->failed = 1;
}

json_t *jct__spread_json(const uint64_t *spread) {
  wctx_t c = {0};
  json_t *bins = json_array();
  for (unsigned k = 0; bins && k < JCT_FIGURE_BINS; k++) {
    if (!spread[k]) continue;
    bool last = k + 1 == JCT_FIGURE_BINS;
    json_t *b = json_object();
    put(&c, b, "from", num(true, jct_figure_bin_lo(k)));
    put(&c, b, "to", num(!last, jct_figure_bin_lo(k + 1)));
    put(&c, b, "n", num(true, spread[k]));
    if (!b || json_array_append_new(bins, b) < 0) c.failed = 1;
  }
  if (c.failed) {
    json_decref(bins);
    return NULL;
  }
  return bins;
}

static json_t *figure(wctx_t *c, const jct_figure_t *f) {
  json_t *o = json_object();
  bool s = f->n > 0;
  put(c, o, "value", num(f->set, f->value));
  put(c, o, "n", num(true, f->n));
  put(c, o, "median", num(s, f->median));
  put(c, o, "p10", num(s, f->p10));
  put(c, o, "p90", num(s, f->p90));
  put(c, o, "min", num(s, f->min));
  put(c, o, "max", num(s, f->max));
  put(c, o, "mean", num(s, f->mean));
  put(c, o, "spread", jct__spread_json(f->spread));
  return o;
}

static json_t *link_json(wctx_t *c, const jct_profile_link_t *l) {
  json_t *o = json_object();
  put(c, o, "src", json_string(l->src));
  put(c, o, "dst", json_string(l->dst));
  put(c, o, "src_rank", l->src_rank >= 0 ? json_integer(l->src_rank) : json_null());
  put(c, o, "dst_rank", l->dst_rank >= 0 ? json_integer(l->dst_rank) : json_null());
  json_t *r = figure(c, &l->rate_bps);
  put(c, r, "mode_n", num(true, l->rate_mode_n));
  put(c, o, "rate_bps", r);
  return o;
}

json_t *jct__profile_json(const jct_profile_t *p) {
  wctx_t c = {0};
  json_t *o = json_object();
  put(&c, o, "mtu_bytes", figure(&c, &p->mtu_bytes));
  json_t *links = json_array();
  for (uint32_t i = 0; i < p->nlinks; i++)
    if (!links || json_array_append_new(links, link_json(&c, &p->links[i])) < 0) c.failed = 1;
  put(&c, o, "links", links);
  put(&c, o, "hole_to_nak_ns", figure(&c, &p->hole_to_nak_ns));
  put(&c, o, "nak_to_resend_ns", figure(&c, &p->nak_to_resend_ns));
  put(&c, o, "loss_recovery_ns", figure(&c, &p->loss_recovery_ns));
  put(&c, o, "go_back_psns", figure(&c, &p->go_back_psns));
  put(&c, o, "go_back_after_nak_psns", figure(&c, &p->go_back_after_nak_psns));
  put(&c, o, "timeout_ns", figure(&c, &p->timeout_ns));
  put(&c, o, "timeout_exp", p->timeout_exp >= 0 ? json_integer(p->timeout_exp) : json_null());
  put(&c, o, "timeout_timer_go_backs", json_integer(p->timeout_timer_go_backs));
  put(&c, o, "packets_per_ack", figure(&c, &p->packets_per_ack));
  if (c.failed) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* ---- reading ------------------------------------------------------------- */

/* An optional integer in [lo, hi] at key of obj: *have false when missing
 * or null. */
static int get_num(json_t *obj, const char *key, uint64_t lo, uint64_t hi, bool *have,
                   uint64_t *out, const char *what, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  *have = false;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < lo ||
      (uint64_t)json_integer_value(v) > hi)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "profile: %s\"%s\" must be an integer in [%llu, %llu]", what, key,
                     (unsigned long long)lo, (unsigned long long)hi);
  *have = true;
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

/* A figure's spread (absent, null or []: none): each element's "from"
 * names its bin (the bin's lowest value), "n" its samples; "to" is the
 * next bin's "from", taken as written. */
static int get_spread(json_t *a, jct_figure_t *f, const char *what, char *err, size_t errlen) {
  if (!a || json_is_null(a)) return 0;
  if (!json_is_array(a))
    return jct__errf(err, errlen, JCT_EINVAL, "profile: %s\"spread\" must be an array or null",
                     what);
  size_t i;
  json_t *b;
  json_array_foreach(a, i, b) {
    char at[128];
    snprintf(at, sizeof at, "%s\"spread\"[%zu]: ", what, i);
    bool have_from, have_n;
    uint64_t from = 0, n = 0;
    int rc;
    if (!json_is_object(b))
      return jct__errf(err, errlen, JCT_EINVAL, "profile: %smust be an object", at);
    if ((rc = get_num(b, "from", 0, JSON_MAX, &have_from, &from, at, err, errlen)) ||
        (rc = get_num(b, "n", 0, JSON_MAX, &have_n, &n, at, err, errlen)))
      return rc;
    unsigned k = jct_figure_bin(from);
    if (!have_from || !have_n || jct_figure_bin_lo(k) != from)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "profile: %sneeds \"from\", a bin's lowest value (0, 1, 2, 5, 10, 20, "
                       "...), and \"n\"",
                       at);
    f->spread[k] += n;
  }
  return 0;
}

/* The figure at key of obj; value within [lo, hi]. */
static int get_figure(json_t *obj, const char *key, uint64_t lo, uint64_t hi, jct_figure_t *f,
                      const char *where, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) return 0;
  char what[96];
  snprintf(what, sizeof what, "%s\"%s\": ", where, key);
  if (!json_is_object(v))
    return jct__errf(err, errlen, JCT_EINVAL, "profile: %s\"%s\" must be an object or null", where,
                     key);
  bool have;
  int rc;
  if ((rc = get_num(v, "value", lo, hi, &f->set, &f->value, what, err, errlen)) ||
      (rc = get_num(v, "n", 0, JSON_MAX, &have, &f->n, what, err, errlen)))
    return rc;
  static const struct {
    const char *key;
    size_t off;
  } stats[] = {{"median", offsetof(jct_figure_t, median)},
               {"p10", offsetof(jct_figure_t, p10)},
               {"p90", offsetof(jct_figure_t, p90)},
               {"min", offsetof(jct_figure_t, min)},
               {"max", offsetof(jct_figure_t, max)},
               {"mean", offsetof(jct_figure_t, mean)}};
  for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
    uint64_t *dst = (uint64_t *)(void *)((char *)f + stats[i].off);
    if ((rc = get_num(v, stats[i].key, 0, JSON_MAX, &have, dst, what, err, errlen))) return rc;
  }
  return get_spread(json_object_get(v, "spread"), f, what, err, errlen);
}

static int get_text(json_t *obj, const char *key, char *buf, size_t len, const char *where,
                    char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  buf[0] = '\0';
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v) || json_string_length(v) >= len)
    return jct__errf(err, errlen, JCT_EINVAL, "profile: %s\"%s\" must be an address (text)", where,
                     key);
  snprintf(buf, len, "%s", json_string_value(v));
  return 0;
}

static int get_rank(json_t *obj, const char *key, uint32_t nranks, int32_t *out, const char *where,
                    char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  *out = -1;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) >= nranks)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "profile: %s\"%s\" must be one of the schedule's ranks, 0 to %u", where, key,
                     nranks - 1);
  *out = (int32_t)json_integer_value(v);
  return 0;
}

static int load_link(json_t *v, uint32_t i, uint32_t nranks, jct_profile_link_t *l, char *err,
                     size_t errlen) {
  char where[40];
  snprintf(where, sizeof where, "\"links\"[%u]: ", i);
  if (!json_is_object(v))
    return jct__errf(err, errlen, JCT_EINVAL, "profile: %snot an object", where);
  bool have;
  int rc;
  if ((rc = get_text(v, "src", l->src, sizeof l->src, where, err, errlen)) ||
      (rc = get_text(v, "dst", l->dst, sizeof l->dst, where, err, errlen)) ||
      (rc = get_rank(v, "src_rank", nranks, &l->src_rank, where, err, errlen)) ||
      (rc = get_rank(v, "dst_rank", nranks, &l->dst_rank, where, err, errlen)) ||
      (rc = get_figure(v, "rate_bps", 1, JSON_MAX, &l->rate_bps, where, err, errlen)))
    return rc;
  json_t *r = json_object_get(v, "rate_bps");
  char what[64];
  snprintf(what, sizeof what, "%s\"rate_bps\": ", where);
  if (json_is_object(r) &&
      (rc = get_num(r, "mode_n", 0, JSON_MAX, &have, &l->rate_mode_n, what, err, errlen)))
    return rc;
  return 0;
}

static int load_timeout(json_t *v, jct_profile_t *p, char *err, size_t errlen) {
  bool have;
  uint64_t e = 0;
  int rc;
  if ((rc = get_figure(v, "timeout_ns", 1, JSON_MAX, &p->timeout_ns, "", err, errlen)) ||
      (rc = get_num(v, "timeout_exp", 0, EXP_MAX, &have, &e, "", err, errlen)))
    return rc;
  p->timeout_exp = have ? (int32_t)e : -1;
  bool have_tg;
  uint64_t tg;
  if ((rc = get_num(v, "timeout_timer_go_backs", 0, UINT32_MAX, &have_tg, &tg, "", err, errlen)))
    return rc;
  p->timeout_timer_go_backs = have_tg ? (uint32_t)tg : 0;
  uint64_t from_exp = have ? jct_profile_timeout_ns((int32_t)e) : 0;
  if (have && !p->timeout_ns.set) {
    p->timeout_ns.set = true;
    p->timeout_ns.value = from_exp;
  } else if (!have && p->timeout_ns.set) {
    /* A QP's timeout can only be 4.096 us x 2^n (IBA 9.7.6.1.3). */
    int32_t n = jct_profile_timeout_exp(p->timeout_ns.value);
    if (jct_profile_timeout_ns(n) != p->timeout_ns.value)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "profile: \"timeout_ns\" %llu is not 4.096 us x 2^n, the only timeouts a "
                       "QP has; give \"timeout_exp\" (the nearest is %d)",
                       (unsigned long long)p->timeout_ns.value, (int)n);
    p->timeout_exp = n;
  } else if (have && p->timeout_ns.value != from_exp) {
    return jct__errf(
        err, errlen, JCT_EINVAL,
        "profile: \"timeout_ns\" %llu is not 4.096 us x 2^%u (\"timeout_exp\") = %llu; "
        "edit one and remove the other",
        (unsigned long long)p->timeout_ns.value, (unsigned)e, (unsigned long long)from_exp);
  }
  return 0;
}

static int load(json_t *v, uint32_t nranks, jct_profile_t *p, char *err, size_t errlen) {
  if (!json_is_object(v))
    return jct__errf(err, errlen, JCT_EINVAL, "\"profile\" must be an object or null");
  int rc;
  if ((rc = get_figure(v, "mtu_bytes", 1, MTU_MAX, &p->mtu_bytes, "", err, errlen)) ||
      (rc = get_figure(v, "hole_to_nak_ns", 0, JSON_MAX, &p->hole_to_nak_ns, "", err, errlen)) ||
      (rc =
           get_figure(v, "nak_to_resend_ns", 0, JSON_MAX, &p->nak_to_resend_ns, "", err, errlen)) ||
      (rc =
           get_figure(v, "loss_recovery_ns", 0, JSON_MAX, &p->loss_recovery_ns, "", err, errlen)) ||
      (rc = get_figure(v, "go_back_psns", 0, JSON_MAX, &p->go_back_psns, "", err, errlen)) ||
      (rc = get_figure(v, "go_back_after_nak_psns", 0, JSON_MAX, &p->go_back_after_nak_psns, "",
                       err, errlen)) ||
      (rc = get_figure(v, "packets_per_ack", 1, JSON_MAX, &p->packets_per_ack, "", err, errlen)) ||
      (rc = load_timeout(v, p, err, errlen)))
    return rc;
  json_t *links = json_object_get(v, "links");
  if (!links || json_is_null(links)) return 0;
  if (!json_is_array(links) || json_array_size(links) > UINT32_MAX / 2)
    return jct__errf(err, errlen, JCT_EINVAL, "profile: \"links\" must be an array");
  size_t n = json_array_size(links);
  p->links = calloc(n ? n : 1, sizeof *p->links);
  if (!p->links) return JCT_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    p->nlinks = (uint32_t)i + 1;
    if ((rc = load_link(json_array_get(links, i), (uint32_t)i, nranks, &p->links[i], err, errlen)))
      return rc;
  }
  return 0;
}

int jct__profile_from_json(json_t *v, uint32_t nranks, jct_profile_t **out, char *err,
                           size_t errlen) {
  *out = NULL;
  jct_profile_t *p = calloc(1, sizeof *p);
  if (!p) return JCT_ENOMEM;
  p->timeout_exp = -1;
  int rc = load(v, nranks, p, err, errlen);
  if (rc) {
    jct_profile_free(p);
    return rc;
  }
  *out = p;
  return 0;
}
