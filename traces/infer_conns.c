/* Schedule inference: who the ranks are, which flows are connections and
 * which messages are ops (include/jctlab/infer.h).
 *
 * Ranks are the addresses of the flows that carry ops, in address order.
 * A connection is such a flow; its channel numbers it among the
 * connections between the same two ranks, in destination QP order; the
 * connections are then numbered by channel, source and destination, as
 * jct_schedule_synth() numbers a generated collective's. Flow control is
 * a small RDMA WRITE without immediate data, or with the verbs transport's
 * clear-to-send immediate (JCT_INFER_CTS_IMM), against a direction that
 * carries other immediate data (NCCL's clear-to-send, jctlab's
 * executor.h); each flow of them belongs to the data connection on the
 * same QP pair (the data flow's ACKs travel on it: the flows are each
 * other's peers, inspect.h).
 */
#include <stdlib.h>
#include <string.h>

#include "infer_int.h"
#include "jctlab/error.h"

static int addr_cmp(const jct_addr_t *a, const jct_addr_t *b) {
  if (a->family != b->family) return a->family < b->family ? -1 : 1;
  return memcmp(a->bytes, b->bytes, sizeof a->bytes);
}
static int addr_qcmp(const void *a, const void *b) {
  return addr_cmp(a, b);
}

uint64_t jct__imsg_bytes(const jct__imsg_t *m) {
  uint64_t b;
  if (m->has_reth && m->kind == JCT_MSG_WRITE)
    b = m->reth_len;
  else
    b = m->done_ns != JCT__NEVER ? m->bytes_done : m->bytes_seen;
  return b ? b : 1;
}

/* Whether m may be a clear-to-send by its own bytes: a WRITE of at most
 * cts_max bytes, without immediate data or with the verbs transport's. */
static bool cts_shaped(const jct__imsg_t *m, uint32_t cts_max) {
  return m->kind == JCT_MSG_WRITE && (!m->has_imm || m->imm == JCT_INFER_CTS_IMM) &&
         jct__imsg_bytes(m) <= cts_max;
}

/* Which messages are ops: flow control is a small WRITE without immediate
 * data (or the verbs CTS's) going against a direction that carries other
 * immediate data. */
int jct__infer_classify(const jct__iscan_t *sc, uint32_t cts_max, uint8_t *cls,
                        jct_infer_report_t *rep) {
  bool *rev_imm = calloc(sc->nflows ? sc->nflows : 1, sizeof *rev_imm);
  if (!rev_imm) return JCT_ENOMEM;
  for (size_t f = 0; f < sc->nflows; f++)
    for (size_t g = 0; g < sc->nflows && !rev_imm[f]; g++)
      rev_imm[f] = sc->flows[g].has_imm_msg &&
                   addr_cmp(&sc->flows[g].key.src, &sc->flows[f].key.dst) == 0 &&
                   addr_cmp(&sc->flows[g].key.dst, &sc->flows[f].key.src) == 0;
  for (size_t i = 0; i < sc->nmsgs; i++) {
    const jct__imsg_t *m = &sc->msgs[i];
    if (m->kind == JCT_MSG_READ_REQ || m->kind == JCT_MSG_ATOMIC) {
      cls[i] = JCT__CLS_NOT_SEND;
      rep->not_sends++;
    } else if (cts_shaped(m, cts_max) && rev_imm[m->flow]) {
      cls[i] = JCT__CLS_CTS;
      rep->flow_control++;
    } else {
      cls[i] = JCT__CLS_OP;
    }
  }
  free(rev_imm);
  return 0;
}

static int conn_by_pair(const void *a, const void *b) {
  const jct__iconn_t *x = a, *y = b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
  return x->qp < y->qp ? -1 : x->qp > y->qp;
}
static int conn_by_channel(const void *a, const void *b) {
  const jct__iconn_t *x = a, *y = b;
  if (x->channel != y->channel) return x->channel < y->channel ? -1 : 1;
  return conn_by_pair(a, b);
}

/* a's rank, UINT32_MAX when a is none's. */
static uint32_t rank_of(const jct_infer_report_t *rep, const jct_addr_t *a) {
  const jct_addr_t *p = bsearch(a, rep->rank_addr, rep->ranks, sizeof *a, addr_qcmp);
  return p ? (uint32_t)(p - rep->rank_addr) : UINT32_MAX;
}

/* Ranks (sorted addresses) and connections (flows with ops). */
int jct__infer_ranks_conns(const jct__iscan_t *sc, const uint8_t *cls, jct_infer_report_t *rep,
                           jct__iconn_t **conns_out, uint32_t *nconns_out) {
  bool *used = calloc(sc->nflows ? sc->nflows : 1, sizeof *used);
  rep->rank_addr = malloc((2 * sc->nflows + 1) * sizeof *rep->rank_addr);
  jct__iconn_t *cs = malloc((sc->nflows + 1) * sizeof *cs);
  if (!used || !rep->rank_addr || !cs) {
    free(used);
    free(cs);
    return JCT_ENOMEM;
  }
  for (size_t i = 0; i < sc->nmsgs; i++)
    if (cls[i] == JCT__CLS_OP) used[sc->msgs[i].flow] = true;
  uint32_t na = 0, nc = 0;
  for (size_t f = 0; f < sc->nflows; f++)
    if (used[f]) {
      rep->rank_addr[na++] = sc->flows[f].key.src;
      rep->rank_addr[na++] = sc->flows[f].key.dst;
    }
  qsort(rep->rank_addr, na, sizeof *rep->rank_addr, addr_qcmp);
  uint32_t nr = 0;
  for (uint32_t i = 0; i < na; i++)
    if (!nr || addr_cmp(&rep->rank_addr[nr - 1], &rep->rank_addr[i]))
      rep->rank_addr[nr++] = rep->rank_addr[i];
  rep->ranks = nr;
  for (size_t f = 0; f < sc->nflows; f++)
    if (used[f])
      cs[nc++] = (jct__iconn_t){.flow = (uint32_t)f,
                                .src = rank_of(rep, &sc->flows[f].key.src),
                                .dst = rank_of(rep, &sc->flows[f].key.dst),
                                .qp = sc->flows[f].key.dest_qp};
  qsort(cs, nc, sizeof *cs, conn_by_pair);
  for (uint32_t i = 0; i < nc; i++)
    cs[i].channel =
        i && cs[i - 1].src == cs[i].src && cs[i - 1].dst == cs[i].dst ? cs[i - 1].channel + 1 : 0;
  qsort(cs, nc, sizeof *cs, conn_by_channel);
  rep->conn_dest_qp = malloc((nc ? nc : 1) * sizeof *rep->conn_dest_qp);
  if (!rep->conn_dest_qp) {
    free(used);
    free(cs);
    return JCT_ENOMEM;
  }
  for (uint32_t i = 0; i < nc; i++) {
    cs[i].id = i;
    rep->conn_dest_qp[i] = cs[i].qp;
  }
  free(used);
  *conns_out = cs;
  *nconns_out = nc;
  return 0;
}

void jct__infer_cts_conns(const jct__iscan_t *sc, const uint8_t *cls, const jct__iconn_t *ic,
                          uint32_t nc, const jct_infer_report_t *rep, uint32_t *conn_of_flow) {
  for (size_t f = 0; f < sc->nflows; f++)
    conn_of_flow[f] = UINT32_MAX;
  for (size_t i = 0; i < sc->nmsgs; i++) {
    uint32_t f = sc->msgs[i].flow;
    if (cls[i] != JCT__CLS_CTS || conn_of_flow[f] != UINT32_MAX) continue;
    const jct__iflow_t *fl = &sc->flows[f];
    uint32_t src = rank_of(rep, &fl->key.dst), dst = rank_of(rep, &fl->key.src);
    uint32_t pair = UINT32_MAX, only = UINT32_MAX, between = 0;
    for (uint32_t c = 0; c < nc; c++) {
      if (ic[c].src != src || ic[c].dst != dst) continue;
      between++;
      only = c;
      if (fl->peer >= 0 && (size_t)fl->peer == ic[c].flow) pair = c;
    }
    conn_of_flow[f] = pair != UINT32_MAX ? pair : between == 1 ? only : UINT32_MAX;
  }
}
