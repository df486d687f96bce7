/* Request packets sent again, seen on the wire (resent.h). */
#include <stdbool.h>
#include <string.h>

#include "jctlab/roce.h"
#include "traces/frame.h"
#include "resent.h"

/* Whether opcode carries data of a message (inspect.c's on_data). */
static bool is_data(uint8_t opcode) {
  const struct jct_opcode_info *op = jct_opcode_info(opcode);
  return op && op->kind != JCT_OPK_ACK && op->kind != JCT_OPK_ATOMIC_ACK &&
         op->kind != JCT_OPK_CNP;
}

void jct__resent_frame(jct__resent_t *r, const uint8_t *f, size_t len) {
  size_t l3, udp, udp_len;
  if (!jct__frame_roce_l3(f, len, &l3, &udp, &udp_len)) return;
  const uint8_t *bth = f + udp + 8;
  if (!is_data(bth[0])) return;
  jct__resent_flow_t key = {.qp = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7]};
  uint32_t psn = ((uint32_t)bth[9] << 16 | (uint32_t)bth[10] << 8 | bth[11]) & JCT_PSN_MASK;
  if ((f[l3] >> 4) == 4) {
    memcpy(key.src, f + l3 + 12, 4);
    memcpy(key.dst, f + l3 + 16, 4);
  } else {
    memcpy(key.src, f + l3 + 8, 16);
    memcpy(key.dst, f + l3 + 24, 16);
  }
  for (uint32_t i = 0; i < r->nflows; i++) {
    jct__resent_flow_t *x = &r->flow[i];
    if (x->qp != key.qp || memcmp(x->src, key.src, 16) || memcmp(x->dst, key.dst, 16)) continue;
    if (jct_psn_diff(psn, x->psn_highest) > 0) {
      x->psn_highest = psn;
    } else {
      r->packets++;
      r->bytes += udp_len - 8;
    }
    return;
  }
  if (r->nflows == JCT__RESENT_FLOWS) {
    r->untracked++;
    return;
  }
  key.psn_highest = psn;
  r->flow[r->nflows++] = key;
}
