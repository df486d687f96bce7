/* A leaf-spine fabric's links over repetitions (links.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "links.h"

int jct__linkstats_snap(jct_fabric_t *f, jct_fabric_link_stats_t **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  uint32_t k = f ? jct_fabric_nlinks(f) : 0;
  if (!k) return 0;
  if (!(*out = calloc(k, sizeof **out))) return JCT_ENOMEM;
  uint64_t now = jct_now_ns();
  for (uint32_t i = 0; i < k; i++)
    jct_fabric_link_stats(f, i, now, &(*out)[i]);
  *n = k;
  return 0;
}

static bool same_flow(const jct_fabric_flow_t *a, const jct_fabric_flow_t *b) {
  return a->src_rank == b->src_rank && a->dst_rank == b->dst_rank && a->udp_sport == b->udp_sport;
}

void jct__linkstats_diff(jct_fabric_link_stats_t *after, const jct_fabric_link_stats_t *before,
                         uint32_t n) {
  for (uint32_t k = 0; k < n; k++) {
    jct_fabric_link_stats_t *x = &after[k];
    const jct_fabric_link_stats_t *y = &before[k];
    x->tx_frames -= y->tx_frames, x->tx_bytes -= y->tx_bytes, x->ecn_marked -= y->ecn_marked;
    x->drops -= y->drops, x->paused_ns -= y->paused_ns, x->rx_pfc_xoff -= y->rx_pfc_xoff;
    x->other_flows -= y->other_flows;
    x->down_ns -= y->down_ns, x->reroutes -= y->reroutes, x->restores -= y->restores;
    x->flows_moved -= y->flows_moved;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < x->nflows; i++) {
      jct_fabric_flow_t fl = x->flows[i];
      for (uint32_t j = 0; j < y->nflows; j++)
        if (same_flow(&y->flows[j], &fl))
          fl.frames -= y->flows[j].frames, fl.bytes -= y->flows[j].bytes;
      if (fl.frames) x->flows[keep++] = fl;
    }
    x->nflows = keep;
  }
}

static void add_link(jct_fabric_link_stats_t *s, const jct_fabric_link_stats_t *x) {
  s->tx_frames += x->tx_frames, s->tx_bytes += x->tx_bytes, s->ecn_marked += x->ecn_marked;
  s->drops += x->drops, s->paused_ns += x->paused_ns, s->rx_pfc_xoff += x->rx_pfc_xoff;
  s->other_flows += x->other_flows;
  s->down_ns += x->down_ns, s->reroutes += x->reroutes, s->restores += x->restores;
  s->flows_moved += x->flows_moved;
  if (x->peak_queue_bytes > s->peak_queue_bytes) s->peak_queue_bytes = x->peak_queue_bytes;
  for (uint32_t i = 0; i < x->nflows; i++) {
    const jct_fabric_flow_t *fl = &x->flows[i];
    uint32_t j = 0;
    while (j < s->nflows && !same_flow(&s->flows[j], fl))
      j++;
    if (j < s->nflows) {
      s->flows[j].frames += fl->frames, s->flows[j].bytes += fl->bytes;
    } else if (s->nflows < JCT_FABRIC_LINK_FLOWS) {
      s->flows[s->nflows++] = *fl;
    } else {
      s->other_flows += fl->frames;
    }
  }
}

int jct__linkstats_add(jct_fabric_link_stats_t **sum, uint32_t *nsum,
                       const jct_fabric_link_stats_t *x, uint32_t n) {
  if (!n) return 0;
  if (!*sum) {
    if (!(*sum = malloc(n * sizeof **sum))) return JCT_ENOMEM;
    memcpy(*sum, x, n * sizeof *x);
    *nsum = n;
    return 0;
  }
  for (uint32_t k = 0; k < n && k < *nsum; k++)
    add_link(&(*sum)[k], &x[k]);
  return 0;
}

double jct__linkstats_imbalance(const jct_fabric_link_stats_t *l, uint32_t n) {
  uint64_t max = 0, sum = 0, up = 0;
  for (uint32_t k = 0; k < n; k++)
    if (l[k].uplink) {
      sum += l[k].tx_bytes, up++;
      if (l[k].tx_bytes > max) max = l[k].tx_bytes;
    }
  return sum ? (double)max * (double)up / (double)sum : NAN;
}
