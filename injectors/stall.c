/* stall: a sender's host stops sending for a while after a packet, as a
 * host that is not scheduled (a VM its hypervisor does not run).
 *
 *     stall pkt=M:K[,M:K...] for=TIME[,TIME...] [qp=QPN | qp-order=N]
 *           [baseline=yes] [where=...] [port=N]
 *
 * When the first transmission of packet K (from 0) of message M (from 0)
 * of the QP passes the switch's ingress, the frame passes and the injector
 * asks that its sender's host send nothing for TIME from then: the chain
 * hands the request to the host (jct_frame_t.stall_ns; in the lab the VM
 * is stopped and goes on TIME later, harness/fabric/chain.h), so the
 * packets after M:K leave TIME later, with the host's own timers (rxe's
 * retransmit timer) stopped with it. Positions are counted over first
 * transmissions, anew every repetition, as drop's pkt= counts them
 * (position.h): the QP named with qp=, or the first (qp-order=N: the N-th)
 * QP a request packet that passed where= went to, for devices that pick
 * their QP numbers (rxe). Each target acts once a repetition. for= gives
 * one time for every target, or one per target in the same order.
 *
 * The stall is the host's, not the network's: a capture's transmit stalls
 * (include/jctlab/infer.h, the TCG VMs' gaps within a message) become
 * stalls of its replay on the lab's VMs (harness/plan/postmortem.h), with
 * baseline=yes so that the baseline repetitions hold them too, as uroce
 * holds a capture's stalls in every repetition (uroce.h). Without it a
 * stall is a fault like any other (faulted repetitions only).
 *
 * It acts where its sender's frames enter the switch: dir=in (the
 * default here; dir=out is refused), on the sender's port (port=N: rank
 * N's frames only). Only the lab's VMs can be stopped: elsewhere the run
 * refuses it (uroce holds a capture's stalls itself, in its QPs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "position.h"
#include "spec_int.h"

#define STALL_MAX_TARGETS 64

typedef struct {
  uint32_t n;
  uint32_t msg[STALL_MAX_TARGETS], pkt[STALL_MAX_TARGETS];
  uint64_t stall_ns[STALL_MAX_TARGETS];
  bool done[STALL_MAX_TARGETS]; /* acted in this repetition */
  jct__position_t at;
} stall_t;

/* for=TIME[,TIME...]: one for all, or one per target, each TIME as every
 * spec time reads (spec_int.h). */
static int parse_times(stall_t *st, const char *v, const jct_spec_t *spec, char *err,
                       size_t errlen) {
  int word = jct__spec_find(spec, "for");
  uint32_t n = 0;
  for (const char *p = v; *p && n < STALL_MAX_TARGETS;) {
    size_t len = strcspn(p, ",");
    uint64_t t = 0;
    int rc = jct__spec_time_text_ns(p, len, &t);
    if (rc == -2) return jct__spec_word_err(spec, word, err, errlen, "is too long");
    if (rc < 0)
      return jct__spec_word_err(spec, word, err, errlen,
                                "is TIME[,TIME...], each a time (500ns, 10us, 5ms, 1s)");
    if (!t) return jct__spec_word_err(spec, word, err, errlen, "a stall lasts more than 0");
    st->stall_ns[n++] = t;
    p += len + (p[len] == ',');
  }
  if (n == 1)
    for (uint32_t i = 1; i < st->n; i++)
      st->stall_ns[i] = st->stall_ns[0];
  else if (n != st->n)
    return jct__spec_word_err(spec, word, err, errlen,
                              "gives one time, or one per pkt= target in the same order");
  return 0;
}

static int stall_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  stall_t st = {0};
  int rc;
  const char *pkts = jct_spec_get(spec, "pkt"), *times = jct_spec_get(spec, "for");
  if (!pkts || !times)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: stall needs pkt= and for= (%s)", spec->text,
                     jct_stall_ops.usage);
  if ((rc = jct__spec_pkts(spec, "pkt", STALL_MAX_TARGETS, st.msg, st.pkt, &st.n, err, errlen)) < 0)
    return rc;
  if ((rc = parse_times(&st, times, spec, err, errlen)) < 0) return rc;
  if ((rc = jct__position_ingress_init(
           inj, &st.at, spec, "a stall acts where its sender's frames enter the switch (dir=in)",
           err, errlen)) < 0)
    return rc;
  for (uint32_t i = 0; i < st.n; i++)
    if (st.stall_ns[i] > inj->stall_max_ns) inj->stall_max_ns = st.stall_ns[i];
  *(stall_t *)inj->priv = st;
  return 0;
}

static jct_verdict_t stall_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  stall_t *st = inj->priv;
  uint32_t psn;
  if (jct__position_see(&st->at, f, &psn) != JCT__POS_FIRST_TX) return JCT_PASS;
  for (uint32_t i = 0; i < st->n; i++)
    if (!st->done[i] && st->msg[i] == st->at.msg && st->pkt[i] == st->at.pkt) {
      st->done[i] = true;
      f->stall_ns = st->stall_ns[i];
      break;
    }
  return JCT_PASS;
}

const struct jct_injector_ops jct_stall_ops = {
    .name = "stall",
    .usage = "stall pkt=MSG:PKT[,...] for=TIME[,...] [qp=QPN | qp-order=N] [baseline=yes]  "
             "(after that packet its sender's host sends nothing for TIME: the lab's VMs)",
    .priv_size = sizeof(stall_t),
    .init = stall_init,
    .process = stall_process,
    .stalls_host = true,
};
