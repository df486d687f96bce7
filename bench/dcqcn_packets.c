/* bench/dcqcn_packets: uroce's DCQCN state machines (include/jctlab/dcqcn.h,
 * the reaction and notification points uroce's QPs run) in a packet-level
 * N:1 incast with no emulator around them, to tell what in bench/dcqcn-paper's
 * emulated-against-model figures comes from DCQCN itself and what from the
 * loop's delay.
 *
 * N senders, unlimited data, each paced at its Rc (the next frame its wire
 * time at the current Rc after the last: uroce's limiter) and never above
 * C; each frame reaches the switch a propagation delay and its wire time
 * later and joins one FIFO drained at C, marked ECN-CE on enqueue with the
 * RED-like profile (q the bytes queued before it: switch.h). A marked
 * frame reaches the receiver's NP (at most one CNP per flow per 50 us)
 * after its wait in the queue, its wire time and a propagation delay
 * (--mark-delay queue, as jctlab's switch) or as if it had not waited
 * (--mark-delay none: the fluid model's fixed tau_star); the CNP reaches
 * the RP two propagation delays and two CNP wire times later. Marks are
 * seeded draws. Sampled every --series, summarized by dcqcn_fluid.h's
 * jct_fluid_summarize (bench/dcqcn-paper's definitions).
 *
 * Usage: dcqcn_packets [--flows N] [--ecn-thresholds KMIN,KMAX,PMAX]
 *                      [--duration TIME] [--mark-delay queue|none] [--seed S]
 *   defaults: 7 flows, 40 Gbit/s, 4154-byte frames, 1 us links, the paper
 *   profile, 5KB,200KB,0.01, 25 ms, queue, seed 1.
 * Exit: 0, 1 out of memory, 2 bad usage (one line naming the word).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "harness/base/units.h"
#include "jctlab/dcqcn.h"
#include "jctlab/dcqcn_fluid.h"

#define FRAME_BYTES 4154u /* 4096-byte MTU + RoCEv2 headers */
#define CNP_BYTES 74u
#define PROP_NS 1000.0
#define QCAP (1u << 16) /* frames in the FIFO at most (272 MB: never reached) */

typedef struct {
  uint32_t flows;
  uint64_t kmin, kmax, dur_ns, seed;
  double pmax;
  bool queue_delay;
} opts_t;

static int parse(int argc, char **argv, opts_t *o) {
  *o = (opts_t){7, 5000, 200000, 25000000, 1, 0.01, true};
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t x;
    if (!v) {
      fprintf(stderr, "dcqcn_packets: %s: unknown, or needs a value\n", w);
      return 2;
    }
    i++;
    if (!strcmp(w, "--flows") && !jct__parse_count(v, JCT_FLUID_MAX_FLOWS, &x) && x)
      o->flows = (uint32_t)x;
    else if (!strcmp(w, "--ecn-thresholds") &&
             !jct__parse_ecn_thresholds(v, &o->kmin, &o->kmax, &o->pmax))
      ;
    else if (!strcmp(w, "--duration") && !jct__parse_time_ns(v, &x) && x >= 1000000)
      o->dur_ns = x;
    else if (!strcmp(w, "--mark-delay") && (!strcmp(v, "queue") || !strcmp(v, "none")))
      o->queue_delay = !strcmp(v, "queue");
    else if (!strcmp(w, "--seed") && !jct__parse_count(v, UINT64_MAX, &x))
      o->seed = x;
    else {
      fprintf(stderr, "dcqcn_packets: %s '%s': unknown option or bad value\n", w, v);
      return 2;
    }
  }
  return 0;
}

/* CNPs on their way, earliest first (a small sorted array). */
typedef struct {
  double t;
  uint32_t flow;
} cnp_t;

int main(int argc, char **argv) {
  opts_t o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  const double C = 40e9, ser = FRAME_BYTES * 8e9 / C, cser = CNP_BYTES * 8e9 / C;
  jct_dcqcn_params_t pp;
  jct_dcqcn_params(&pp, JCT_DCQCN_PAPER);
  uint32_t n = o.flows;
  jct_dcqcn_rp_t rp[JCT_FLUID_MAX_FLOWS];
  jct_dcqcn_np_t np[JCT_FLUID_MAX_FLOWS];
  double last_tx[JCT_FLUID_MAX_FLOWS], next[JCT_FLUID_MAX_FLOWS];
  for (uint32_t i = 0; i < n; i++) {
    jct_dcqcn_rp_init(&rp[i], &pp, (uint64_t)C);
    jct_dcqcn_np_init(&np[i], &pp);
    last_tx[i] = -1;
    next[i] = i; /* 1 ns apart: a fixed order at the start */
  }
  uint64_t rng[4];
  jct__rng_seed(rng, o.seed);
  size_t samples = (size_t)(o.dur_ns / 50000) + 1, s = 0;
  jct_fluid_trace_t tr = {.flows = n};
  tr.t_ns = malloc(samples * sizeof *tr.t_ns);
  tr.queue_bytes = malloc(samples * sizeof *tr.queue_bytes);
  tr.rc_bps = malloc(samples * n * sizeof *tr.rc_bps);
  double *qend = malloc(QCAP * sizeof *qend); /* each queued frame's departure */
  cnp_t *cnp = malloc(4096 * sizeof *cnp);
  if (!tr.t_ns || !tr.queue_bytes || !tr.rc_bps || !qend || !cnp) {
    fprintf(stderr, "dcqcn_packets: out of memory\n");
    return 1;
  }
  size_t qh = 0, qt = 0, ncnp = 0;
  double busy_until = 0;
  uint64_t marks = 0, cnps = 0;
  for (;;) {
    uint32_t who = 0;
    for (uint32_t i = 1; i < n; i++)
      if (next[i] < next[who]) who = i;
    double t = next[who];
    if (ncnp && cnp[0].t <= t) { /* a CNP first */
      jct_dcqcn_rp_on_cnp(&rp[cnp[0].flow], (uint64_t)cnp[0].t);
      memmove(cnp, cnp + 1, --ncnp * sizeof *cnp);
      continue;
    }
    if (t > (double)o.dur_ns) break;
    while (s < samples && (double)s * 50000 <= t) { /* samples due before t */
      double at = (double)s * 50000;
      size_t k = qh;
      while (k < qt && qend[k % QCAP] <= at)
        k++;
      tr.t_ns[s] = (uint64_t)at;
      tr.queue_bytes[s] = (double)(qt - k) * FRAME_BYTES;
      for (uint32_t i = 0; i < n; i++) {
        jct_dcqcn_rp_advance(&rp[i], (uint64_t)at);
        tr.rc_bps[s * n + i] = (double)rp[i].rc_bps;
      }
      s++;
    }
    /* The limiter: the slot at the current Rc (it may have risen). */
    jct_dcqcn_rp_advance(&rp[who], (uint64_t)t);
    double gap = FRAME_BYTES * 8e9 / (double)rp[who].rc_bps;
    if (gap < ser) gap = ser;
    if (last_tx[who] >= 0 && last_tx[who] + gap > t + 0.5) {
      next[who] = last_tx[who] + gap;
      if (rp[who].active && (double)rp[who].inc_next_ns < next[who])
        next[who] = (double)rp[who].inc_next_ns;
      if (next[who] <= t) next[who] = t + 1;
      continue;
    }
    /* Send: to the switch, into the FIFO, marked on enqueue. */
    double arr = t + ser + PROP_NS;
    while (qh < qt && qend[qh % QCAP] <= arr)
      qh++;
    double q = (double)(qt - qh) * FRAME_BYTES;
    double p = q <= (double)o.kmin   ? 0
               : q >= (double)o.kmax ? 1
                                     : o.pmax * (q - (double)o.kmin) / (double)(o.kmax - o.kmin);
    double start = arr > busy_until ? arr : busy_until;
    busy_until = start + ser;
    if (qt - qh < QCAP) qend[qt++ % QCAP] = busy_until;
    if (jct__rng_unit(rng) < p) {
      marks++;
      double at_np = (o.queue_delay ? busy_until : arr + ser) + PROP_NS;
      if (jct_dcqcn_np_on_ce(&np[who], (uint64_t)at_np) && ncnp < 4096) {
        double at_rp = at_np + 2 * (PROP_NS + cser);
        size_t k = ncnp++;
        while (k > 0 && cnp[k - 1].t > at_rp) {
          cnp[k] = cnp[k - 1];
          k--;
        }
        cnp[k] = (cnp_t){at_rp, who};
        cnps++;
      }
    }
    jct_dcqcn_rp_on_sent(&rp[who], FRAME_BYTES, (uint64_t)t);
    last_tx[who] = t;
    gap = rp[who].active ? FRAME_BYTES * 8e9 / (double)rp[who].rc_bps : ser;
    next[who] = t + (gap < ser ? ser : gap);
    if (rp[who].active && (double)rp[who].inc_next_ns < next[who])
      next[who] = (double)rp[who].inc_next_ns > t ? (double)rp[who].inc_next_ns : t + 1;
  }
  tr.samples = s;
  jct_fluid_summary_t sum;
  jct_fluid_summarize(&tr, (uint64_t)C, &sum);
  printf("dcqcn_packets: %u:1 incast, 40 Gbit/s, marking %llu/%llu bytes, pmax %g, the marked "
         "frame's wait in the queue %s the feedback; %llu marks, %llu CNPs\n",
         n, (unsigned long long)o.kmin, (unsigned long long)o.kmax, o.pmax,
         o.queue_delay ? "in" : "not in", (unsigned long long)marks, (unsigned long long)cnps);
  if (sum.converged)
    printf("time to converge: %.3f ms\n", (double)sum.converge_ns / 1e6);
  else
    printf("time to converge: never (window: the second half)\n");
  printf("queue (bytes) in the window: median %.0f, p10-p90 %.0f-%.0f, min-max %.0f-%.0f\n",
         sum.queue_median_bytes, sum.queue_p10_bytes, sum.queue_p90_bytes, sum.queue_min_bytes,
         sum.queue_max_bytes);
  printf("sum of mean rates: %.3f of C; Jain's index: %.4f\n", sum.rate_sum_bps / C, sum.jain);
  jct_fluid_trace_free(&tr);
  free(qend);
  free(cnp);
  return 0;
}
