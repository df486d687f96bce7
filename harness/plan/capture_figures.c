/* What a capture showed (capture_figures.h). */
#include <stdlib.h>
#include <string.h>

#include "capture_figures.h"
#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/infer.h"
#include "jctlab/inspect.h"

/* A flow that carries the job's messages: not only clear-to-send ones,
 * and not connection management (MADs to QP 1, the GSI, as inference). */
static bool carries_job(const jct_flow_t *f) {
  const jct_flow_stats_t *st = &f->st;
  if (f->key.dest_qp <= 1) return false;
  uint64_t msgs = 0;
  for (int k = 0; k < JCT_MSG__COUNT; k++)
    msgs += st->messages[k];
  if (!msgs) return false;
  return st->messages_completed == 0 ||
         st->message_bytes > (uint64_t)JCT_INFER_CTS_MAX_BYTES * st->messages_completed;
}

/* Where a flow's part of the job ends: its last message's completion at the
 * capture point, as a JCT ends with the last receive; re-sent copies of
 * what was received already (a go-back past the last completion, as rxe's
 * timer gives when an ACK came late) lengthen nothing. Its last data packet
 * when no message completed. */
static uint64_t flow_end(const jct_flow_t *f) {
  return f->st.messages_completed ? f->st.last_done_ns : f->st.last_ns;
}

/* The flow from a to b to QP qp; NULL: none. */
static const jct_flow_t *conn_flow(const jct_inspect_t *ins, const jct_addr_t *a,
                                   const jct_addr_t *b, uint32_t qp) {
  for (size_t i = 0; i < jct_inspect_nflows(ins); i++) {
    const jct_flow_t *f = jct_inspect_flow(ins, i);
    if (jct_addr_eq(&f->key.src, a) && jct_addr_eq(&f->key.dst, b) && f->key.dest_qp == qp) return f;
  }
  return NULL;
}

int jct__capture_figures_measure(const char *path, const jct_schedule_t *s,
                                 const jct_infer_report_t *rep, jct__capture_figures_t *out,
                                 char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  jct_inspect_t *ins = NULL;
  int rc = jct_inspect_path(path, NULL, &ins, err, errlen);
  if (rc && !ins) return rc;
  const jct_totals_t *t = jct_inspect_totals(ins);
  out->retx_packets = t->retransmitted_packets;
  out->naks = t->nak_seq_err;
  out->timeouts = t->timeouts;
  if (s->profile && s->profile->loss_recovery_ns.set) {
    out->loss_recovery_ns = s->profile->loss_recovery_ns.value;
    memcpy(out->loss_recovery_spread, s->profile->loss_recovery_ns.spread,
           sizeof out->loss_recovery_spread);
  }
  if (s->profile && s->profile->nak_to_resend_ns.set && s->profile->go_back_psns.set) {
    out->nak_to_resend_ns = s->profile->nak_to_resend_ns.value;
    out->nak_go_back_psns = (uint32_t)s->profile->go_back_psns.value;
    memcpy(out->go_back_spread, s->profile->go_back_psns.spread, sizeof out->go_back_spread);
  }
  for (uint32_t i = 0; i < rep->ngo_backs; i++) {
    const jct_infer_go_back_t *g = &rep->go_backs[i];
    if (!g->timer || g->recovers_loss) continue;
    out->host_timer_go_backs++;
    out->host_timer_resent_psns += g->ahead_psns;
  }
  out->stalls = rep->nstalls;
  for (uint32_t i = 0; i < rep->nstalls; i++)
    out->stall_ns += rep->stalls[i].stall_ns;
  uint64_t first = UINT64_MAX, last = 0;
  for (size_t i = 0; i < jct_inspect_nflows(ins); i++) {
    const jct_flow_t *f = jct_inspect_flow(ins, i);
    if (!carries_job(f)) continue;
    if (f->st.first_ns < first) first = f->st.first_ns;
    if (flow_end(f) > last) last = flow_end(f);
  }
  out->job_ns = last > first ? last - first : 0;
  out->conn_ns = calloc(s->nconns ? s->nconns : 1, sizeof *out->conn_ns);
  if (!out->conn_ns) {
    jct_inspect_free(ins);
    return jct__errf(err, errlen, JCT_ENOMEM, "%s: out of memory", path);
  }
  out->nconns = s->nconns;
  for (uint32_t c = 0; c < s->nconns; c++) {
    const jct_conn_t *k = &s->conns[c];
    const jct_flow_t *f =
        conn_flow(ins, &rep->rank_addr[k->src], &rep->rank_addr[k->dst], rep->conn_dest_qp[c]);
    if (f && flow_end(f) > f->st.first_ns) out->conn_ns[c] = flow_end(f) - f->st.first_ns;
  }
  jct_inspect_free(ins);
  return 0;
}
