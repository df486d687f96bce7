/* ecn: mark Congestion Experienced on ECN-capable packets, as a congested
 * switch queue would, so that receivers answer with CNPs when a
 * congestion-control model is on.
 *
 *     ecn p=P
 *
 * Each selected IPv4 or IPv6 packet whose ECN field is ECT(0) or ECT(1)
 * (RFC 3168, section 5) is marked CE (both bits set) with probability P,
 * one Bernoulli draw per ECT packet (P a 32-bit fraction against a 32-bit
 * draw, as netem keeps probabilities: common/rng.h). Not-ECT packets are never marked (a
 * router must drop rather than mark them) and CE packets stay as they are;
 * neither consumes a random number, so the marking rate is P among ECT
 * packets whatever else the filter lets through.
 *
 * The ECN field is the low two bits of the IPv4 TOS byte, and of the IPv6
 * traffic class (bits 4-5 of the header's second byte). Changing the IPv4
 * TOS changes the header checksum: it is updated incrementally, RFC 1624
 * equation 3, HC' = ~(~HC + ~m + m'), over the 16-bit word holding the TOS.
 * The RoCEv2 ICRC (InfiniBand Annex A17.3.3) masks the TOS / traffic class,
 * so a marked RoCE packet keeps a valid ICRC, as on a real switch.
 *
 * Ethernet frames only, with any number of 802.1Q / 802.1ad tags.
 */
#include <stdio.h>
#include <string.h>

#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "traces/frame.h"

typedef struct {
  uint32_t p; /* a 32-bit fraction (common/rng.h) */
} ecn_t;

static int ecn_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  ecn_t *e = inj->priv;
  double p = -1;
  int rc = jct_spec_prob(spec, "p", &p, err, errlen);
  if (rc) return rc;
  if (p < 0) {
    snprintf(err, errlen, "%s: needs p=P, the marking probability", spec->text);
    return JCT_EINVAL;
  }
  e->p = jct__rng_prob32(p);
  return 0;
}

static jct_verdict_t ecn_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  ecn_t *e = inj->priv;
  size_t off;
  uint16_t type;
  int pcp;
  if (jct_frame_roce(f)) { /* parsed once for the chain: IPv4 or IPv6 */
    off = f->l3;
    type = f->data[off] >> 4 == 4 ? 0x0800 : 0x86dd;
  } else if (!jct__frame_l3(f->data, f->len, &off, &type, &pcp)) {
    return JCT_PASS;
  }
  uint8_t *ip = f->data + off, ecn;
  if (type == 0x0800 && f->len >= off + 20 && ip[0] >> 4 == 4 && (ip[0] & 15u) >= 5)
    ecn = ip[1] & 3u;
  else if (type == 0x86dd && f->len >= off + 40 && ip[0] >> 4 == 6)
    ecn = (ip[1] >> 4) & 3u;
  else
    return JCT_PASS;
  if (ecn != 1 && ecn != 2) return JCT_PASS; /* not ECT, or already CE */
  if (!jct__rng_hit(jct_injector_packet_u32(inj, f, 0), e->p)) return JCT_PASS;
  jct__ip_set_ce(jct_frame_writable(f) + off);
  return JCT_MODIFIED;
}

const struct jct_injector_ops jct_ecn_ops = {
    .name = "ecn",
    .usage = "ecn p=P  (mark CE on ECT IPv4/IPv6 packets with probability P)",
    .priv_size = sizeof(ecn_t),
    .init = ecn_init,
    .process = ecn_process,
};
