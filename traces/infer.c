/* Schedule inference (include/jctlab/infer.h): from the messages and losses
 * of a capture (infer_scan.c, infer_loss.c) to ranks and connections
 * (infer_conns.c) and ops, whose deps come from infer_deps.c, and to the
 * report.
 *
 * Ops are numbered so that a schedule made from a capture of a generated
 * collective comes out in the generator's order: by channel, then step (the
 * op's depth in the dep graph, never less than the previous op's on its
 * connection, so each connection's ops stay in PSN order), then sending
 * rank, then connection. Connections are numbered by channel, then source
 * and destination rank.
 *
 * The schedule is allocated the way jct_schedule_free() (schedule/, the
 * library below this one) frees it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "infer_int.h"
#include "jctlab/error.h"
#include "jctlab/trace.h"

typedef struct {
  const jct__iop_t *ops;
  const jct_conn_t *conns;
  const jct__iscan_t *sc;
} order_ctx_t;

static int by_final(const void *a, const void *b, void *arg) {
  const order_ctx_t *c = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  const jct__iop_t *x = &c->ops[i], *y = &c->ops[j];
  const jct_conn_t *cx = &c->conns[x->conn], *cy = &c->conns[y->conn];
  if (cx->channel != cy->channel) return cx->channel < cy->channel ? -1 : 1;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  if (cx->src != cy->src) return cx->src < cy->src ? -1 : 1;
  if (x->conn != y->conn) return x->conn < y->conn ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* The op a message stands for: its own (op_of_msg), or for a
 * clear-to-send the op whose message it announced (cts_op); UINT32_MAX:
 * none (a READ request, a clear-to-send of no connection's). */
static uint32_t op_for(const uint8_t *cls, const uint32_t *op_of_msg, const uint32_t *cts_op,
                       long mi) {
  if (cls[mi] == JCT__CLS_OP) return op_of_msg[mi];
  return cls[mi] == JCT__CLS_CTS ? cts_op[mi] : UINT32_MAX;
}

/* Losses of ops and of their clear-to-sends, by the ops' final ids; those
 * of other left-out messages counted. */
static int faults(const jct__iscan_t *sc, const uint8_t *cls, const uint32_t *op_of_msg,
                  const uint32_t *cts_op, jct_infer_report_t *rep) {
  rep->faults = malloc((sc->nfaults ? sc->nfaults : 1) * sizeof *rep->faults);
  if (!rep->faults) return JCT_ENOMEM;
  for (size_t f = 0; f < sc->nflows; f++) {
    const jct__iflow_t *fl = &sc->flows[f];
    for (size_t k = 0; k < fl->nfaults; k++) {
      const jct__ifault_t *x = &sc->faults[fl->faults[k]];
      long mi = jct__iscan_msg_at(sc, fl, x->u);
      if (mi < 0) continue; /* before the first message seen */
      const jct__imsg_t *m = &sc->msgs[mi];
      uint32_t op = op_for(cls, op_of_msg, cts_op, mi);
      if (op == UINT32_MAX) {
        rep->faults_on_flow_control++;
        continue;
      }
      bool cts = cls[mi] == JCT__CLS_CTS;
      rep->cts_faults += cts;
      uint64_t k_pkt = x->u - m->first_u;
      jct_infer_fault_t *out = &rep->faults[rep->nfaults++];
      *out = (jct_infer_fault_t){.op = op,
                                 .cts = cts,
                                 .psn = jct_psn_add(fl->psn0, (uint32_t)(x->u - JCT__U_BASE)),
                                 .offset_bytes = cts ? 0 : k_pkt * m->first_payload,
                                 .tail = cts || (m->last_seen && x->u == m->last_u),
                                 .timeout = x->timeout,
                                 .before_capture = x->before_capture,
                                 .retransmission = x->retransmission,
                                 .again = x->again,
                                 .behind = x->behind};
      for (uint32_t c = 0; c < x->ncopies && c < JCT_INFER_MAX_COPIES; c++)
        out->copies[c] = x->copy[c];
    }
  }
  return 0;
}

/* Whether a first transmission lost on flow fi lies in [u, u + ahead):
 * what a go-back to u re-sent. */
static bool recovers_loss(const jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t ahead) {
  const jct__iflow_t *f = &sc->flows[fi];
  for (size_t k = 0; k < f->nfaults; k++) {
    uint64_t v = sc->faults[f->faults[k]].u;
    if (v >= u && v < u + (ahead ? ahead : 1)) return true;
  }
  return false;
}

/* Go-backs in ops' messages and their clear-to-sends, by the ops' final
 * ids; a timer go-back's time
 * from rxe's reference (infer_timer.c), and how long before its message's
 * start that reference was. A timer go-back with no time from it is left
 * out: nothing to replay it by. */
static int go_backs(const jct__iscan_t *sc, const uint8_t *cls, const uint32_t *op_of_msg,
                    const uint32_t *cts_op, jct_infer_report_t *rep) {
  rep->go_backs = malloc((sc->ngobacks ? sc->ngobacks : 1) * sizeof *rep->go_backs);
  if (!rep->go_backs) return JCT_ENOMEM;
  for (size_t i = 0; i < sc->ngobacks; i++) {
    const jct__igoback_t *g = &sc->gobacks[i];
    long mi = jct__iscan_msg_at(sc, &sc->flows[g->flow], g->u);
    uint32_t op = mi < 0 ? UINT32_MAX : op_for(cls, op_of_msg, cts_op, mi);
    if (op == UINT32_MAX) continue;
    const jct__imsg_t *m = &sc->msgs[mi];
    if (g->timer && !g->timer_ns) continue;
    bool cts = cls[mi] == JCT__CLS_CTS;
    rep->go_backs[rep->ngo_backs++] = (jct_infer_go_back_t){
        .op = op,
        .cts = cts,
        .offset_bytes = cts ? 0 : (g->u - m->first_u) * m->first_payload,
        .ahead_psns = g->ahead > UINT32_MAX ? UINT32_MAX : (uint32_t)g->ahead,
        .hole_to_nak_ns = g->hole_to_nak_ns,
        .nak_ahead_psns = g->nak_ahead,
        .nak_to_resend_ns = g->nak_to_resend_ns,
        .timer = g->timer,
        .timer_ns = g->timer ? g->timer_ns : 0,
        .timer_lead_ns = g->timer && m->start_ns > g->ref_ns ? m->start_ns - g->ref_ns : 0,
        .idle_ns = g->timer ? g->idle_ns : 0,
        .recovers_loss = recovers_loss(sc, g->flow, g->u, g->span)};
    if (g->timer) rep->timer_go_backs++;
  }
  return 0;
}

/* Transmit stalls in ops' messages (not in clear-to-sends: flow control). */
static int stalls(const jct__iscan_t *sc, const uint8_t *cls, const uint32_t *op_of_msg,
                  const uint32_t *cts_op, jct_infer_report_t *rep) {
  rep->stalls = malloc((sc->nstalls ? sc->nstalls : 1) * sizeof *rep->stalls);
  if (!rep->stalls) return JCT_ENOMEM;
  for (size_t i = 0; i < sc->nstalls; i++) {
    const jct__istall_t *x = &sc->stalls[i];
    if (cls[x->msg] != JCT__CLS_OP) continue;
    uint32_t op = op_for(cls, op_of_msg, cts_op, x->msg);
    if (op == UINT32_MAX) continue;
    const jct__imsg_t *m = &sc->msgs[x->msg];
    const jct__iflow_t *f = &sc->flows[x->flow];
    rep->stalls[rep->nstalls++] =
        (jct_infer_stall_t){.op = op,
                            .psn = jct_psn_add(f->psn0, (uint32_t)(x->u - JCT__U_BASE)),
                            .offset_bytes = (x->u - m->first_u) * m->first_payload,
                            .stall_ns = x->stall_ns,
                            .gap_ns = x->gap_ns,
                            .spacing_ns = x->spacing_ns,
                            .unacked_psns = x->unacked};
  }
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int fault_cmp(const void *a, const void *b) {
  const jct_infer_fault_t *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  if (x->cts != y->cts) return x->cts ? -1 : 1; /* the clear-to-send went first */
  return x->offset_bytes < y->offset_bytes ? -1 : x->offset_bytes > y->offset_bytes;
}

/* Make the ops (per connection, PSN order), find deps, number them. */
static int plan(const jct__iscan_t *sc, const uint8_t *cls, const jct__iconn_t *ic, uint32_t nc,
                const jct_infer_opts_t *o, jct_schedule_t *s, jct_infer_report_t *rep) {
  int rc = JCT_ENOMEM;
  uint32_t nops = 0;
  for (size_t i = 0; i < sc->nmsgs; i++)
    nops += cls[i] == JCT__CLS_OP;
  jct__iop_t *ops = calloc(nops ? nops : 1, sizeof *ops);
  uint32_t *first = calloc(nc ? nc : 1, sizeof *first), *cnt = calloc(nc ? nc : 1, sizeof *cnt);
  uint32_t *order = malloc((nops ? nops : 1) * sizeof *order);
  uint32_t *final = malloc((nops ? nops : 1) * sizeof *final);
  uint32_t *op_of_msg = malloc((sc->nmsgs ? sc->nmsgs : 1) * sizeof *op_of_msg);
  uint32_t *cts_op = malloc((sc->nmsgs ? sc->nmsgs : 1) * sizeof *cts_op);
  uint32_t *conn_of_flow = malloc((sc->nflows ? sc->nflows : 1) * sizeof *conn_of_flow);
  if (!ops || !first || !cnt || !order || !final || !op_of_msg || !cts_op || !conn_of_flow)
    goto out;
  uint32_t n = 0;
  for (uint32_t c = 0; c < nc; c++) {
    const jct__iflow_t *f = &sc->flows[ic[c].flow];
    first[c] = n;
    for (size_t k = 0; k < f->nmsgs; k++) {
      uint32_t mi = f->msgs[k];
      if (cls[mi] != JCT__CLS_OP) continue;
      const jct__imsg_t *m = &sc->msgs[mi];
      jct__iop_t *op = &ops[n];
      op->msg = mi, op->conn = c, op->src = ic[c].src;
      op->start_ns = m->start_ns;
      op->done_ns = m->done_ns;
      if (op->done_ns != JCT__NEVER && op->done_ns < op->start_ns) {
        rep->skewed_messages++; /* "received" before it was sent: clocks disagree */
        op->done_ns = op->start_ns;
      }
      op->bytes = jct__imsg_bytes(m);
      rep->total_bytes += op->bytes;
      n++;
    }
    cnt[c] = n - first[c];
  }
  for (uint32_t c = 0; c < nc; c++)
    s->conns[c] = (jct_conn_t){ic[c].src, ic[c].dst, ic[c].channel};
  jct__iplan_t p = {.ops = ops,
                    .nops = nops,
                    .nranks = rep->ranks,
                    .nconns = nc,
                    .conns = s->conns,
                    .conn_first = first,
                    .conn_nops = cnt};
  if ((rc = jct__infer_deps(&p, o->keep_turnaround, rep))) goto out;
  rc = JCT_ENOMEM;
  for (uint32_t i = 0; i < nops; i++)
    order[i] = i;
  order_ctx_t oc = {ops, s->conns, sc};
  qsort_r(order, nops, sizeof *order, by_final, &oc);
  for (uint32_t i = 0; i < nops; i++)
    final[order[i]] = i;
  s->ops = calloc(nops ? nops : 1, sizeof *s->ops);
  if (!s->ops) goto out;
  s->nops = nops;
  for (uint32_t i = 0; i < nops; i++) {
    jct__iop_t *src = &ops[order[i]];
    jct_op_t *d = &s->ops[i];
    d->conn = src->conn, d->bytes = src->bytes, d->gap_ns = src->gap_ns;
    d->step = (int32_t)src->step;
    d->deps = src->deps, d->ndeps = src->ndeps;
    src->deps = NULL;
    for (uint32_t k = 0; k < d->ndeps; k++)
      d->deps[k] = final[d->deps[k]];
    qsort(d->deps, d->ndeps, sizeof *d->deps, cmp_u32);
    op_of_msg[src->msg] = i;
  }
  /* The K-th clear-to-send of a connection's flow announced its K-th op. */
  jct__infer_cts_conns(sc, cls, ic, nc, rep, conn_of_flow);
  for (size_t i = 0; i < sc->nmsgs; i++)
    cts_op[i] = UINT32_MAX;
  for (size_t f = 0; f < sc->nflows; f++) {
    uint32_t c = conn_of_flow[f], k = 0;
    if (c == UINT32_MAX) continue;
    for (size_t j = 0; j < sc->flows[f].nmsgs && k < cnt[c]; j++) {
      uint32_t mi = sc->flows[f].msgs[j];
      if (cls[mi] == JCT__CLS_CTS) cts_op[mi] = op_of_msg[ops[first[c] + k++].msg];
    }
  }
  if ((rc = faults(sc, cls, op_of_msg, cts_op, rep)) ||
      (rc = go_backs(sc, cls, op_of_msg, cts_op, rep)) ||
      (rc = stalls(sc, cls, op_of_msg, cts_op, rep)))
    goto out;
  qsort(rep->faults, rep->nfaults, sizeof *rep->faults, fault_cmp);
  rep->ops = nops;
out:
  for (uint32_t i = 0; ops && i < nops; i++)
    free(ops[i].deps);
  free(ops);
  free(first);
  free(cnt);
  free(order);
  free(final);
  free(op_of_msg);
  free(cts_op);
  free(conn_of_flow);
  return rc;
}

static int build(const jct__iscan_t *sc, const jct_infer_opts_t *o, jct_schedule_t **out,
                 jct_infer_report_t *rep) {
  uint8_t *cls = malloc(sc->nmsgs ? sc->nmsgs : 1);
  jct__iconn_t *ic = NULL;
  uint32_t nc = 0;
  jct_schedule_t *s = calloc(1, sizeof *s);
  int rc = JCT_ENOMEM;
  if (!cls || !s) goto out;
  uint32_t cts_max = o->cts_max_bytes ? o->cts_max_bytes : JCT_INFER_CTS_MAX_BYTES;
  if ((rc = jct__infer_classify(sc, cts_max, cls, rep)) ||
      (rc = jct__infer_ranks_conns(sc, cls, rep, &ic, &nc)))
    goto out;
  rc = JCT_ENOMEM;
  if (!(s->conns = calloc(nc ? nc : 1, sizeof *s->conns))) goto out;
  s->nconns = nc;
  s->nranks = rep->ranks;
  rep->connections = nc;
  if ((rc = plan(sc, cls, ic, nc, o, s, rep))) goto out;
  const char *pat = jct_infer_pattern(s, rep->evidence, sizeof rep->evidence, &rep->bytes_estimate,
                                      &rep->repetitions);
  snprintf(rep->pattern, sizeof rep->pattern, "%s", pat);
  snprintf(s->algorithm, sizeof s->algorithm, "%s", strcmp(pat, "unknown") ? pat : "inferred");
  s->bytes = rep->bytes_estimate ? rep->bytes_estimate : rep->total_bytes; /* run needs one */
  *out = s;
  s = NULL;
out:
  jct_schedule_free(s);
  free(cls);
  free(ic);
  return rc;
}

/* The capture's profile goes with the schedule, its links named by rank
 * too. */
static void attach_profile(jct__iscan_t *sc, jct_schedule_t *s, const jct_infer_report_t *rep) {
  jct_profile_t *p = sc->profile;
  sc->profile = NULL;
  for (uint32_t i = 0; p && i < p->nlinks; i++) {
    jct_profile_link_t *l = &p->links[i];
    for (uint32_t r = 0; r < rep->ranks; r++) {
      char a[48];
      jct_addr_str(&rep->rank_addr[r], a, sizeof a);
      if (strcmp(a, l->src) == 0) l->src_rank = (int32_t)r;
      if (strcmp(a, l->dst) == 0) l->dst_rank = (int32_t)r;
    }
  }
  /* Each sender's stalls, on its link (profile.h stall_ns). */
  for (size_t i = 0; p && i < sc->nstalls; i++) {
    const jct_flow_key_t *k = &sc->flows[sc->stalls[i].flow].key;
    char a[48], b[48];
    jct_addr_str(&k->src, a, sizeof a);
    jct_addr_str(&k->dst, b, sizeof b);
    for (uint32_t j = 0; j < p->nlinks; j++)
      if (!strcmp(a, p->links[j].src) && !strcmp(b, p->links[j].dst))
        p->links[j].stall_ns += sc->stalls[i].stall_ns;
  }
  /* The timer go-backs' timer, where there are any (profile.h). */
  if (p && rep->timer_est_ns && rep->timer_go_backs) {
    p->timeout_exp = jct_profile_timeout_exp(rep->timer_est_ns);
    p->timeout_ns.set = p->timeout_exp >= 0;
    p->timeout_ns.value = jct_profile_timeout_ns(p->timeout_exp);
    p->timeout_timer_go_backs = rep->timer_go_backs;
  }
  s->profile = p;
}

static void fill_counts(const jct__iscan_t *sc, jct_infer_report_t *rep) {
  rep->frames = sc->frames;
  rep->roce_packets = sc->roce_packets + sc->control_cm;
  rep->pfc_frames = sc->pfc_frames;
  rep->malformed_frames = sc->malformed_frames;
  rep->control_tcp = sc->control_tcp;
  rep->control_cm = sc->control_cm;
  rep->control_other = sc->control_other;
  rep->control_frames = sc->control_tcp + sc->control_cm + sc->control_other;
  rep->messages = sc->messages;
  rep->messages_completed = sc->messages_completed;
  rep->retransmitted_packets = sc->retransmitted_packets;
  rep->timer_est_ns = sc->timer_est_ns;
  rep->stall_min_ns = sc->stall_min_ns;
  rep->frames_backwards = sc->frames_backwards;
}

static int infer(jct_trace_t *t, const char *trace_path, const jct_infer_opts_t *opts,
                 jct_schedule_t **out, jct_infer_report_t *rep, char *err, size_t errlen) {
  static const jct_infer_opts_t defaults = {0};
  jct_infer_report_t local;
  if (!rep) rep = &local;
  memset(rep, 0, sizeof *rep);
  if (!opts) opts = &defaults;
  jct__iscan_t sc;
  memset(&sc, 0, sizeof sc);
  int rc = jct__infer_scan(t, trace_path, &sc, err, errlen);
  if (!rc && (rc = jct__istall_find(&sc)) < 0)
    jct__errf(err, errlen, rc, "%s: out of memory", trace_path);
  if (!rc) {
    fill_counts(&sc, rep);
    rc = build(&sc, opts, out, rep);
    if (rc == JCT_ENOMEM) jct__errf(err, errlen, rc, "%s: out of memory", trace_path);
    if (!rc) attach_profile(&sc, *out, rep);
  }
  if (!rc && rep->ops == 0) {
    rc = jct__errf(err, errlen, JCT_EINVAL,
                   "%s: no RoCE message to make a schedule of (%llu frames: %llu RoCE packets, "
                   "%llu control, %llu flow control)",
                   trace_path, (unsigned long long)rep->frames,
                   (unsigned long long)rep->roce_packets, (unsigned long long)rep->control_frames,
                   (unsigned long long)rep->flow_control);
    jct_schedule_free(*out);
    *out = NULL;
  }
  jct__iscan_free(&sc);
  if (rc || rep == &local) jct_infer_report_free(rep);
  return rc;
}

int jct_infer_file(FILE *fp, const char *name, const jct_infer_opts_t *opts, jct_schedule_t **out,
                   jct_infer_report_t *rep, char *err, size_t errlen) {
  jct_trace_t *t;
  *out = NULL;
  if (rep) memset(rep, 0, sizeof *rep);
  int rc = jct_trace_open_file(&t, fp, name, err, errlen);
  if (rc < 0) return rc;
  rc = infer(t, name, opts, out, rep, err, errlen);
  jct_trace_close(t);
  return rc;
}

int jct_infer(const char *trace_path, const jct_infer_opts_t *opts, jct_schedule_t **out,
              jct_infer_report_t *rep, char *err, size_t errlen) {
  if (strcmp(trace_path, "-") == 0)
    return jct_infer_file(stdin, "(standard input)", opts, out, rep, err, errlen);
  jct_trace_t *t;
  *out = NULL;
  if (rep) memset(rep, 0, sizeof *rep);
  int rc = jct_trace_open(&t, trace_path, err, errlen);
  if (rc < 0) return rc;
  rc = infer(t, trace_path, opts, out, rep, err, errlen);
  jct_trace_close(t);
  return rc;
}

void jct_infer_report_free(jct_infer_report_t *rep) {
  if (!rep) return;
  free(rep->rank_addr);
  free(rep->conn_dest_qp);
  free(rep->faults);
  free(rep->go_backs);
  free(rep->stalls);
  rep->rank_addr = NULL;
  rep->conn_dest_qp = NULL;
  rep->faults = NULL;
  rep->nfaults = 0;
  rep->go_backs = NULL;
  rep->stalls = NULL;
  rep->nstalls = 0;
  rep->ngo_backs = 0;
}
