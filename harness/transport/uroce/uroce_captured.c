/* uroce's captured go-backs and transmit stalls: a postmortem's capture of
 * rxe, replayed (cfg.go_backs and cfg.stalls, include/jctlab/uroce.h
 * jct_uroce_go_back_t and jct_uroce_stall_t).
 *
 * The record (uroce_loc.h, struct jct__uroce_captured) holds the capture's
 * go-backs and stalls, which of them this repetition used, and what the
 * ones under way hold back: a NAK's go-back at the capture's depth and its
 * hold, the floor an ignored NAK sets under the retransmit timer, a
 * captured timer go-back, a transmit stall. This file makes it, frees it,
 * starts each repetition afresh and finds the stall that holds the
 * requester; the roles keep the rules and say why (the responder's late
 * NAK in uroce_resp.c, the depth, hold, floor and timer go-back in
 * uroce_comp.c, arming the timer go-back and what a stall does to the
 * QP's own timer in uroce_req.c, the QP's timer and deadline in
 * uroce_qp.c).
 */
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "uroce_loc.h"

int jct__uroce_captured_init(struct jct__uroce_captured *c, const jct_uroce_go_back_t *g,
                             uint32_t n, const jct_uroce_stall_t *st, uint32_t nstalls) {
  if (n) {
    c->go_backs = malloc(n * sizeof *c->go_backs);
    c->used = calloc(n, sizeof *c->used);
    if (!c->go_backs || !c->used) return JCT_ENOMEM; /* jct__uroce_captured_free frees */
    memcpy(c->go_backs, g, n * sizeof *c->go_backs);
    c->n = n;
  }
  if (nstalls) {
    c->stalls = malloc(nstalls * sizeof *c->stalls);
    c->stall_used = calloc(nstalls, sizeof *c->stall_used);
    if (!c->stalls || !c->stall_used) return JCT_ENOMEM;
    memcpy(c->stalls, st, nstalls * sizeof *c->stalls);
    c->nstalls = nstalls;
  }
  return 0;
}

void jct__uroce_captured_free(struct jct__uroce_captured *c) {
  free(c->go_backs);
  free(c->used);
  free(c->stalls);
  free(c->stall_used);
  c->go_backs = NULL;
  c->used = NULL;
  c->stalls = NULL;
  c->stall_used = NULL;
  c->n = c->nstalls = 0;
}

void jct__uroce_captured_rep_start(struct jct__uroce_captured *c) {
  c->timer_due_ns = UINT64_MAX;
  c->timer_hold = false;
  c->hole_ahead = 0;
  if (c->n) memset(c->used, 0, c->n * sizeof *c->used);
  if (c->nstalls) memset(c->stall_used, 0, c->nstalls * sizeof *c->stall_used);
  c->stall_until_ns = 0;
}

bool jct__uroce_captured_stalled(struct jct__uroce_captured *c, uint32_t msg, uint32_t pkt,
                                 bool fresh, uint64_t now_ns, uint64_t *began_ns) {
  *began_ns = 0;
  if (now_ns < c->stall_until_ns) return true;
  if (!fresh) return false; /* a retransmission: the capture's stall held a first one */
  for (uint32_t i = 0; i < c->nstalls; i++) {
    const jct_uroce_stall_t *x = &c->stalls[i];
    if (c->stall_used[i] || x->msg != msg || x->pkt != pkt || !x->stall_ns) continue;
    c->stall_used[i] = true;
    c->stall_until_ns = now_ns + x->stall_ns;
    *began_ns = x->stall_ns;
    return true;
  }
  return false;
}

uint64_t jct__uroce_captured_stall_end_ns(const struct jct__uroce_captured *c, uint64_t now_ns) {
  return now_ns < c->stall_until_ns ? c->stall_until_ns : UINT64_MAX;
}
