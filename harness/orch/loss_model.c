/* The go-back-N loss model (include/jctlab/model.h says what it counts,
 * with its formulas and sources): the per-loss figures in closed form,
 * and their cost to a job as the schedule's longest path over seeded
 * draws of every op's losses. Reads only the options and the schedule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "jctlab/injector.h"
#include "jctlab/model.h"
#include "jctlab/roce.h"
#include "jctlab/uroce.h"

#define ACK_WIRE_BYTES                                                                             \
  (JCT_BTH_BYTES + JCT_AETH_BYTES + JCT_ICRC_BYTES + JCT_UROCE_WIRE_OVERHEAD_BYTES)
/* A clear-to-send: one 64-byte WRITE_ONLY_WITH_IMMEDIATE (BTH, RETH, ImmDt). */
#define CTS_WIRE_BYTES                                                                             \
  (JCT_BTH_BYTES + JCT_RETH_BYTES + JCT_IMMDT_BYTES + JCT_UROCE_CTS_BYTES + JCT_ICRC_BYTES +       \
   JCT_UROCE_WIRE_OVERHEAD_BYTES)

static uint32_t or_default(uint32_t v, uint32_t d) {
  return v ? v : d;
}

void jct_loss_model_params(const jct_loss_model_in_t *in, jct_loss_model_t *m) {
  memset(m, 0, sizeof *m);
  uint32_t pmtu = or_default(in->path_mtu_bytes, 4096);
  uint32_t c = or_default(in->ack_every_pkts, JCT_UROCE_MAX_PKTS_PER_ACK);
  double rate = (double)in->rate_bps;
  m->packet_time_ns = (double)jct_uroce_full_packet_wire_bytes(pmtu) * 8e9 / rate;
  m->ack_time_ns = ACK_WIRE_BYTES * 8e9 / rate;
  m->rtt_ns = 4.0 * (double)in->prop_delay_ns;
  m->bdp_pkts = m->rtt_ns / m->packet_time_ns;
  m->detect_pkts = 3.0 + 2.0 * m->ack_time_ns / m->packet_time_ns;
  m->w_pkts = m->bdp_pkts + m->detect_pkts +
              (double)(in->nak_delay_ns + in->nak_react_ns) / m->packet_time_ns;
  m->timer_ns = in->timeout ? JCT_UROCE_TIMEOUT_UNIT_NS * ldexp(1.0, in->timeout) : INFINITY;
  m->nak_cost_ns = m->w_pkts * m->packet_time_ns;
  double p = in->p, fresh = fmax(0.0, (c + 1) / 2.0 - m->w_pkts);
  m->p_timer = fmin(1.0, 2 * p + p * fresh + p * p * fmin(m->w_pkts, c));
}

/* The schedule's shape, computed once: each op's place on its connection
 * and an order in which deps and connection predecessors come first. */
typedef struct {
  uint32_t *order;    /* nops, topological */
  uint32_t *conn_pos; /* op -> index among its connection's ops */
  uint32_t *conn_off; /* nconns + 1: offsets into conn_ops */
  uint32_t *conn_ops; /* nops: each connection's ops in op order */
} shape_t;

static void shape_free(shape_t *sh) {
  free(sh->order);
  free(sh->conn_pos);
  free(sh->conn_off);
  free(sh->conn_ops);
}

static int shape_build(const jct_schedule_t *s, shape_t *sh) {
  memset(sh, 0, sizeof *sh);
  uint32_t n = s->nops;
  uint32_t *indeg = calloc(n, sizeof *indeg), *fill = calloc(s->nconns + 1, sizeof *fill);
  uint32_t *succ_off = calloc(n + 1, sizeof *succ_off), *succ = NULL;
  sh->order = malloc(n * sizeof *sh->order);
  sh->conn_pos = malloc(n * sizeof *sh->conn_pos);
  sh->conn_off = calloc(s->nconns + 1, sizeof *sh->conn_off);
  sh->conn_ops = malloc(n * sizeof *sh->conn_ops);
  int rc = JCT_ENOMEM;
  if (!indeg || !fill || !succ_off || !sh->order || !sh->conn_pos || !sh->conn_off ||
      !sh->conn_ops)
    goto out;
  for (uint32_t i = 0; i < n; i++)
    sh->conn_off[s->ops[i].conn + 1]++;
  for (uint32_t c = 0; c < s->nconns; c++)
    sh->conn_off[c + 1] += sh->conn_off[c];
  for (uint32_t i = 0; i < n; i++) {
    uint32_t c = s->ops[i].conn;
    sh->conn_pos[i] = fill[c]++;
    sh->conn_ops[sh->conn_off[c] + sh->conn_pos[i]] = i;
  }
  /* edges: each dep -> op, and a connection's previous op -> op */
  size_t nedges = 0;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++)
      succ_off[s->ops[i].deps[d] + 1]++;
    if (sh->conn_pos[i]) succ_off[sh->conn_ops[sh->conn_off[s->ops[i].conn] + sh->conn_pos[i] - 1] + 1]++;
  }
  for (uint32_t i = 0; i < n; i++)
    succ_off[i + 1] += succ_off[i];
  nedges = succ_off[n];
  succ = malloc((nedges ? nedges : 1) * sizeof *succ);
  if (!succ) goto out;
  memset(fill, 0, (s->nconns + 1) * sizeof *fill);
  uint32_t *pos = calloc(n, sizeof *pos);
  if (!pos) goto out;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++) {
      uint32_t from = s->ops[i].deps[d];
      succ[succ_off[from] + pos[from]++] = i;
      indeg[i]++;
    }
    if (sh->conn_pos[i]) {
      uint32_t from = sh->conn_ops[sh->conn_off[s->ops[i].conn] + sh->conn_pos[i] - 1];
      succ[succ_off[from] + pos[from]++] = i;
      indeg[i]++;
    }
  }
  free(pos);
  uint32_t head = 0, tail = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!indeg[i]) sh->order[tail++] = i;
  while (head < tail) {
    uint32_t v = sh->order[head++];
    for (uint32_t e = succ_off[v]; e < succ_off[v + 1]; e++)
      if (--indeg[succ[e]] == 0) sh->order[tail++] = succ[e];
  }
  rc = tail == n ? 0 : JCT_EINVAL; /* a valid schedule has no cycle */
out:
  free(indeg);
  free(fill);
  free(succ_off);
  free(succ);
  if (rc) shape_free(sh);
  return rc;
}

/* One trial's draws and the figures every op uses. */
typedef struct {
  uint64_t rng[4];
  double p, log1mp;
  double t_ns, w_pkts, bdp_pkts, timer_ns, ack_stall_ns;
  uint32_t c;
  double timeouts;
} draw_t;

static bool hit(draw_t *d) {
  return d->p > 0 && jct__rng_unit(d->rng) < d->p;
}

/* The next lost position after x (geometric gaps), or past any end. */
static double next_loss(draw_t *d, double x) {
  if (!(d->p > 0)) return INFINITY;
  double u = 1.0 - jct__rng_unit(d->rng); /* (0, 1] */
  return x + 1 + floor(log(u) / d->log1mp);
}

/* Uniform whole number in [lo, hi]. */
static double uniform(draw_t *d, double lo, double hi) {
  return lo + floor(jct__rng_unit(d->rng) * (hi - lo + 1));
}

/* A timer that runs from the last ACK that made progress: g packets of
 * the stream had gone since its AckReq, BDP of them before it returned. */
static double timer_from_progress(draw_t *d, double x) {
  double u = uniform(d, 0, fmin(d->c - 1, x));
  return fmax(0.0, d->timer_ns - (u - d->bdp_pkts) * d->t_ns);
}

/* The loss cost of one message of m packets (model.h's cases). */
static double message_cost(draw_t *d, double m, bool last_on_conn) {
  double cost = 0, hole_end = -1, vuln_end = -1;
  for (double x = next_loss(d, -1); x < m; x = next_loss(d, x)) {
    bool timer = false;
    if (x < hole_end) {     /* resent with the go-back: its copy draws again */
      if (!hit(d)) continue;
      timer = x < vuln_end; /* else a new NAK, below */
    } else if (x < vuln_end) {
      timer = true; /* its NAK comes while the go-back is under way: ignored */
    }
    if (timer) {
      cost += d->timer_ns;
      d->timeouts++;
    } else if (x >= m - 1 && last_on_conn) { /* tail loss: nothing after it to reveal it */
      cost += timer_from_progress(d, x);
      d->timeouts++;
    } else if (hit(d)) { /* the NAK lost */
      cost += timer_from_progress(d, x);
      d->timeouts++;
    } else {
      cost += d->w_pkts * d->t_ns;
      if (hit(d)) { /* the resent hole lost again */
        cost += d->timer_ns;
        d->timeouts++;
      }
    }
    hole_end = x + d->w_pkts;
    vuln_end = x + uniform(d, 1, fmax(1, fmin(d->c, m - x)));
  }
  /* ACKs: every c packets and the message's last */
  double nacks = ceil(m / d->c);
  for (double a = next_loss(d, -1); a < nacks; a = next_loss(d, a)) {
    if (a >= nacks - 1 && last_on_conn)
      d->timeouts++; /* the receiver has it all: the sender's timer, the job waits not */
    else
      cost += d->ack_stall_ns;
  }
  return cost;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One pass over the schedule; losses drawn when d->p > 0. Returns the JCT. */
static double trial(const jct_schedule_t *s, const shape_t *sh, const jct_loss_model_in_t *in,
                    const jct_loss_model_t *m, draw_t *d, double *done, double *link_free) {
  uint32_t pmtu = or_default(in->path_mtu_bytes, 4096);
  uint32_t slots = or_default(in->cts_slots, JCT_EXEC_DEFAULT_SLOTS);
  double over = (double)(jct_uroce_full_packet_wire_bytes(pmtu) - pmtu);
  double alpha = 2.0 * (double)in->prop_delay_ns + m->packet_time_ns;
  double cts_lat = 2.0 * (double)in->prop_delay_ns + 2.0 * CTS_WIRE_BYTES * 8e9 / (double)in->rate_bps;
  double jct = 0;
  for (uint32_t c = 0; c < s->nconns; c++)
    link_free[c] = 0;
  for (uint32_t i = 0; i < s->nops; i++) {
    uint32_t op = sh->order[i];
    const jct_op_t *o = &s->ops[op];
    uint32_t c = o->conn, k = sh->conn_pos[op];
    uint32_t nk = sh->conn_off[c + 1] - sh->conn_off[c];
    const uint32_t *cops = &sh->conn_ops[sh->conn_off[c]];
    bool last = k + 1 == nk;
    double ready = 0;
    for (uint32_t j = 0; j < o->ndeps; j++)
      ready = fmax(ready, done[o->deps[j]]);
    ready += (double)o->gap_ns;
    /* its CTS: posted at the start, or when the message slots before it arrived */
    double cts = (k < slots ? 0 : done[cops[k - slots]]) + cts_lat;
    if (hit(d)) {
      if (last) { /* the connection's last CTS: the timer from its own sending */
        cts += m->timer_ns;
        d->timeouts++;
      } else { /* the next CTS reveals it: a NAK, and it comes again */
        double next = k + 1 < slots ? 0 : done[cops[k + 1 - slots]];
        cts = fmax(cts, next + cts_lat + m->nak_cost_ns);
      }
    }
    if (last && hit(d)) d->timeouts++; /* the last CTS's ACK lost: a harmless expiry */
    double start = fmax(fmax(ready, cts), link_free[c]);
    double pkts = o->bytes ? ceil((double)o->bytes / pmtu) : 1;
    double wire_ns = ((double)o->bytes + pkts * over) * 8e9 / (double)in->rate_bps;
    double cost = d->p > 0 ? message_cost(d, pkts, last) : 0;
    done[op] = start + alpha + wire_ns + cost;
    link_free[c] = done[op] - alpha;
    jct = fmax(jct, done[op]);
  }
  return jct;
}

int jct_loss_model(const jct_schedule_t *s, const jct_run_opts_t *o, const jct_loss_model_in_t *in,
                   jct_loss_model_t *out, char *err, size_t errlen) {
  if (!in->rate_bps) return jct__errf(err, errlen, JCT_EINVAL, "loss model: rate 0");
  if (!(in->p >= 0 && in->p < 1))
    return jct__errf(err, errlen, JCT_EINVAL, "loss model: p=%g is outside [0, 1)", in->p);
  jct_loss_model_params(in, out);
  shape_t sh;
  int rc = shape_build(s, &sh);
  if (rc) return jct__errf(err, errlen, rc, "loss model: %s", jct_strerror(rc));
  uint32_t trials = or_default(in->trials, JCT_MODEL_DEFAULT_TRIALS);
  double *done = malloc(s->nops * sizeof *done), *link_free = malloc(s->nconns * sizeof *link_free);
  double *jct = malloc(trials * sizeof *jct);
  if (!done || !link_free || !jct) {
    rc = jct__errf(err, errlen, JCT_ENOMEM, "loss model: out of memory");
    goto out;
  }
  uint32_t c = or_default(in->ack_every_pkts, JCT_UROCE_MAX_PKTS_PER_ACK);
  uint32_t w = or_default(in->window_pkts, JCT_UROCE_MAX_UNACKED_PSNS);
  draw_t d = {.p = 0,
              .t_ns = out->packet_time_ns,
              .w_pkts = out->w_pkts,
              .bdp_pkts = out->bdp_pkts,
              .timer_ns = out->timer_ns,
              .c = c};
  double b = out->bdp_pkts;
  d.ack_stall_ns = (fmax(0.0, 2.0 * c + b - w) - fmax(0.0, c + b - w)) * out->packet_time_ns;
  double lossless = trial(s, &sh, in, out, &d, done, link_free);
  d.p = in->p;
  d.log1mp = log1p(-in->p);
  jct__rng_seed(d.rng, in->seed);
  double sum = 0;
  for (uint32_t i = 0; i < trials; i++) {
    jct[i] = trial(s, &sh, in, out, &d, done, link_free);
    sum += jct[i];
  }
  qsort(jct, trials, sizeof *jct, cmp_double);
  double median = trials % 2 ? jct[trials / 2] : (jct[trials / 2 - 1] + jct[trials / 2]) / 2;
  out->trials = trials;
  out->timeouts = d.timeouts / trials;
  for (uint32_t i = 0; i < s->nops; i++) {
    double pkts = s->ops[i].bytes ? ceil((double)s->ops[i].bytes / or_default(in->path_mtu_bytes, 4096)) : 1;
    out->data_pkts += pkts + 1;                  /* the message and its CTS */
    out->losses += in->p * (pkts + 1 + ceil(pkts / c) + 1); /* and their ACKs */
  }
  out->excess_ns = median - lossless;
  out->mean_excess_ns = sum / trials - lossless;
  if (o) {
    jct_run_result_t ab;
    memset(&ab, 0, sizeof ab);
    jct_run_model(o, &ab);
    out->base_ns = fmax(ab.model_ns, lossless); /* the path counts compute gaps, α-β sharing */
  } else {
    out->base_ns = lossless;
  }
  out->jct_ns = out->base_ns + out->excess_ns;
  out->degradation = out->jct_ns / out->base_ns;
out:
  free(done);
  free(link_free);
  free(jct);
  shape_free(&sh);
  return rc;
}

bool jct_loss_model_covers(const jct_run_opts_t *o, jct_loss_model_in_t *in) {
  if (o->transport != JCT_TRANSPORT_UROCE || o->nic_queue_pkts || jct_run_cc(o) != JCT_CC_NONE ||
      o->ninject != 1 || !o->rate_bps)
    return false;
  jct_spec_t spec;
  char err[200];
  if (jct_spec_parse(o->inject[0], &spec, err, sizeof err) || strcmp(spec.kind, "drop") != 0)
    return false;
  double p = -1;
  if (jct_spec_prob(&spec, "p", &p, err, sizeof err) || !(p >= 0 && p < 1)) return false;
  const char *dir = jct_spec_get(&spec, "dir");
  if (dir && strcmp(dir, "out") != 0) return false;
  jct_spec_get(&spec, "seed");
  for (uint32_t i = 0; i < spec.nargs; i++)
    if (!spec.arg[i].used) return false; /* where=, port=, burst=, model=, ... */
  memset(in, 0, sizeof *in);
  in->rate_bps = o->rate_bps;
  in->prop_delay_ns = o->prop_delay_ns;
  in->path_mtu_bytes = o->path_mtu_bytes;
  in->timeout = o->timeout;
  in->nak_delay_ns = o->nak_delay_ns;
  in->nak_react_ns = o->nak_react_ns;
  in->p = p;
  in->seed = o->seed;
  return true;
}
