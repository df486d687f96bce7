/* uroce's captured go-backs: a postmortem's capture of rxe, replayed
 * (cfg.go_backs, include/jctlab/uroce.h jct_uroce_go_back_t).
 *
 * The record (uroce_loc.h, struct jct__uroce_captured) holds the capture's
 * go-backs, which of them this repetition used, and what the one under way
 * holds back: a NAK's go-back at the capture's depth and its hold, the
 * floor an ignored NAK sets under the retransmit timer, a captured timer
 * go-back. This file makes it, frees it and starts each repetition afresh;
 * the roles keep the rules and say why (the responder's late NAK in
 * uroce_resp.c, the depth, hold, floor and timer go-back in uroce_comp.c,
 * arming the timer go-back in uroce_req.c, the QP's timer and deadline in
 * uroce_qp.c).
 */
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "uroce_loc.h"

int jct__uroce_captured_init(struct jct__uroce_captured *c, const jct_uroce_go_back_t *g,
                             uint32_t n) {
  if (!n) return 0;
  c->go_backs = malloc(n * sizeof *c->go_backs);
  c->used = calloc(n, sizeof *c->used);
  if (!c->go_backs || !c->used) return JCT_ENOMEM; /* jct__uroce_captured_free frees */
  memcpy(c->go_backs, g, n * sizeof *c->go_backs);
  c->n = n;
  return 0;
}

void jct__uroce_captured_free(struct jct__uroce_captured *c) {
  free(c->go_backs);
  free(c->used);
  c->go_backs = NULL;
  c->used = NULL;
  c->n = 0;
}

void jct__uroce_captured_rep_start(struct jct__uroce_captured *c) {
  c->timer_due_ns = UINT64_MAX;
  c->timer_hold = false;
  if (c->n) memset(c->used, 0, c->n * sizeof *c->used);
}
