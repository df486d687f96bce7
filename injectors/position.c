/* Where a RoCE packet is in its QP's send stream (position.h). */
#include "position.h"

#include <string.h>

#include "common/wire.h"
#include "jctlab/roce.h"
#include "spec_int.h"

void jct__position_init(jct__position_t *p, bool any_qp, uint32_t qp, uint32_t qp_order) {
  *p = (jct__position_t){.any_qp = any_qp, .qp = qp, .qp_order = qp_order, .msg = -1};
}

int jct__position_from_spec(jct__position_t *p, jct_spec_t *spec, char *err, size_t errlen) {
  bool any_qp = jct__spec_find(spec, "qp") < 0;
  uint64_t qp = 0, order = 0;
  int rc;
  if ((rc = jct_spec_u64(spec, "qp", 0xffffff, &qp, err, errlen)) < 0) return rc;
  if (jct__spec_find(spec, "qp-order") >= 0 && !any_qp)
    return jct__spec_word_err(spec, jct__spec_find(spec, "qp-order"), err, errlen,
                              "goes without qp=");
  if ((rc = jct_spec_u64(spec, "qp-order", JCT__POSITION_MAX_QP_ORDER - 1, &order, err, errlen)) <
      0)
    return rc;
  jct__position_init(p, any_qp, (uint32_t)qp, (uint32_t)order);
  return 0;
}

int jct__position_ingress_init(jct_injector_t *inj, jct__position_t *p, jct_spec_t *spec,
                               const char *why_in, char *err, size_t errlen) {
  int dir = jct__spec_find(spec, "dir"), rc;
  if (dir >= 0 && strcmp(spec->arg[dir].value, "out") == 0)
    return jct__spec_word_err(spec, dir, err, errlen, why_in);
  bool baseline;
  if ((rc = jct__position_from_spec(p, spec, err, errlen)) < 0 ||
      (rc = jct__spec_yes_no(spec, "baseline", &baseline, err, errlen)) < 0)
    return rc;
  inj->out = false;
  inj->baseline = baseline;
  inj->targeted = true;
  return 0;
}

/* BTH destination QP, PSN and opcode position of a RoCEv2 request packet
 * (not an ACK, atomic ACK or CNP); false for anything else. */
static bool request_bth(jct_frame_t *f, uint32_t *qp, uint32_t *psn, uint8_t *pos) {
  if (!jct_frame_roce(f)) return false;
  const uint8_t *bth = f->data + f->udp + 8;
  const struct jct_opcode_info *op = jct_opcode_info(bth[0]);
  if (op->kind == JCT_OPK_ACK || op->kind == JCT_OPK_ATOMIC_ACK || op->kind == JCT_OPK_CNP)
    return false;
  *qp = jct__be24(bth + 5);
  *psn = jct__be24(bth + 9);
  *pos = op->pos;
  return true;
}

/* Before the QP is known (any_qp): whether qp is the qp_order-th QP seen;
 * it becomes p->qp then. */
static bool nth_qp(jct__position_t *p, uint32_t qp) {
  for (uint32_t i = 0; i < p->nseen_qps; i++)
    if (p->seen_qps[i] == qp) return false; /* an earlier QP */
  if (p->nseen_qps < p->qp_order) {
    p->seen_qps[p->nseen_qps++] = qp;
    return false;
  }
  p->qp = qp;
  return true;
}

jct__position_kind_t jct__position_see(jct__position_t *p, jct_frame_t *f, uint32_t *psn) {
  uint32_t qp;
  uint8_t pos;
  if (!request_bth(f, &qp, psn, &pos)) return JCT__POS_OTHER;
  if (p->any_qp && !p->seen_qp && !nth_qp(p, qp)) return JCT__POS_OTHER;
  if (qp != p->qp) return JCT__POS_OTHER;
  bool after = jct_psn_diff(*psn, p->highest_psn) > 0;
  if (p->seen_qp && !after) return JCT__POS_RESENT;
  p->highest_psn = *psn;
  p->seen_qp = true;
  if (pos & JCT_POS_FIRST)
    p->msg++, p->pkt = 0;
  else
    p->pkt++;
  return JCT__POS_FIRST_TX;
}
