/* `jctlab inspect`'s profile of the captured system (include/jctlab/profile.h):
 * the "Profile" section of the terminal summary and the "profile" object
 * of the JSON document (the shape a schedule's "profile" has too,
 * schedule/profile_json.c). Each figure with its p10 and p90, how many
 * samples it came from and, when they fall in two bins or more, the bins;
 * "-" when it has none.
 */
#include <stdbool.h>
#include <stdio.h>

#include "harness/base/units.h"
#include "inspect_out.h"
#include "jctlab/error.h"
#include "jctlab/inspect.h"
#include "jctlab/profile.h"
#include "schedule/profile_json.h"
#include "spread_text.h"

typedef char *(*fmt_fn)(uint64_t v, char *buf, size_t len);

static char *fmt_count(uint64_t v, char *buf, size_t len) {
  snprintf(buf, len, "%llu", (unsigned long long)v);
  return buf;
}

static char *fmt_b(uint64_t v, char *buf, size_t len) {
  snprintf(buf, len, "%llu B", (unsigned long long)v);
  return buf;
}

/* what, left-aligned in WIDTH terminal columns (µ and → are one each). */
#define WIDTH 23
static void label(FILE *o, const char *what) {
  int cols = 0;
  for (const char *p = what; *p; p++)
    cols += ((unsigned char)*p & 0xc0) != 0x80;
  fprintf(o, "  %s%*s", what, cols < WIDTH ? WIDTH - cols : 1, "");
}

/* Under a figure whose samples fall in two bins or more, where they fall
 * (spread_text.h). */
static void spread(FILE *o, const jct_figure_t *f, bool time) {
  char buf[1024];
  unsigned bins;
  jct__fmt_spread(f->spread, time, buf, sizeof buf, &bins);
  if (bins < 2) return;
  label(o, "");
  fprintf(o, "spread: %s\n", buf);
}

/* "1.130 ms (p10 718 µs, p90 15.9 ms; n 19)" or "- (no sample)", and its
 * spread below. */
static void line(FILE *o, const char *what, const jct_figure_t *f, fmt_fn fmt, const char *unit) {
  char v[32], a[32], b[32];
  label(o, what);
  if (!f->set) {
    fprintf(o, "-  (no sample)\n");
    return;
  }
  fprintf(o, "%s%s (p10 %s, p90 %s; n %llu)\n", fmt(f->value, v, sizeof v), unit,
          fmt(f->p10, a, sizeof a), fmt(f->p90, b, sizeof b), (unsigned long long)f->n);
  spread(o, f, fmt == jct__fmt_ns);
}

/* One line per link with back-to-back packets. */
static void links(FILE *o, const jct_profile_t *p) {
  if (!p->nlinks) {
    label(o, "link rate");
    fprintf(o, "-  (no back-to-back packets)\n");
  }
  for (uint32_t i = 0; i < p->nlinks; i++) {
    const jct_profile_link_t *l = &p->links[i];
    const jct_figure_t *r = &l->rate_bps;
    char v[32], a[32], b[32];
    fprintf(o,
            "  rate %s > %s: %s, the mode of %llu back-to-back spacings (%llu in it; p10 %s, "
            "p90 %s)\n",
            l->src, l->dst, jct__fmt_rate(r->value, v, sizeof v), (unsigned long long)r->n,
            (unsigned long long)l->rate_mode_n, jct__fmt_rate(r->p10, a, sizeof a),
            jct__fmt_rate(r->p90, b, sizeof b));
    fprintf(o, "  sustained %s > %s: %s, the mean: all their bytes over all their time\n",
            l->src, l->dst, jct__fmt_rate(r->mean, v, sizeof v));
  }
}

static void timeout(FILE *o, const jct_figure_t *f, int32_t exp) {
  char v[32], a[32], b[32];
  label(o, "retransmit timeout");
  if (!f->set) {
    fprintf(o, "-  (no timeout episode)\n");
    return;
  }
  fprintf(o, "%s = 4.096 µs × 2^%d (idle before it: median %s, max %s; n %llu)\n",
          jct__fmt_ns(f->value, v, sizeof v), exp, jct__fmt_ns(f->median, a, sizeof a),
          jct__fmt_ns(f->max, b, sizeof b), (unsigned long long)f->n);
}

void jct__inspect_profile_text(FILE *o, const jct_profile_t *p) {
  fprintf(o, "\nProfile of the captured system (figure, p10 and p90, n samples)\n");
  line(o, "path MTU", &p->mtu_bytes, fmt_b, "");
  links(o, p);
  line(o, "hole → NAK", &p->hole_to_nak_ns, jct__fmt_ns, "");
  line(o, "NAK → retransmission", &p->nak_to_resend_ns, jct__fmt_ns, "");
  line(o, "hole → retransmission", &p->loss_recovery_ns, jct__fmt_ns, " per loss");
  line(o, "go-back depth", &p->go_back_psns, fmt_count, " PSNs past the NAKed one");
  line(o, "  sent after the NAK", &p->go_back_after_nak_psns, fmt_count, " PSNs");
  timeout(o, &p->timeout_ns, p->timeout_exp);
  line(o, "ACK coalescing", &p->packets_per_ack, fmt_count, " packets per ACK");
  label(o, "compute gaps");
  fprintf(o, "each op's gap_ns in `jctlab schedule`\n");
}

json_t *jct__inspect_profile_json(const jct_inspect_t *ins) {
  jct_profile_t *p;
  if (jct_inspect_profile(ins, &p)) return NULL;
  json_t *v = jct__profile_json(p);
  jct_profile_free(p);
  return v;
}
