/* ecn: mark Congestion Experienced on ECN-capable packets, as a congested
 * switch queue would, so that receivers answer with CNPs when a
 * congestion-control model is on.
 *
 *     ecn p=P
 *
 * Each selected IPv4 or IPv6 packet whose ECN field is ECT(0) or ECT(1)
 * (RFC 3168, section 5) is marked CE (both bits set) with probability P,
 * one Bernoulli draw per ECT packet. Not-ECT packets are never marked (a
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

#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "wire.h"

typedef struct {
  double p;
} ecn_t;

/* RFC 1624 eqn. 3: the checksum after a 16-bit word changes from m to m1. */
static uint16_t csum_update(uint16_t hc, uint16_t m, uint16_t m1) {
  uint32_t sum = (uint32_t)(uint16_t)~hc + (uint16_t)~m + m1;
  sum = (sum & 0xffffu) + (sum >> 16);
  sum = (sum & 0xffffu) + (sum >> 16);
  return (uint16_t)~sum;
}

/* Offset of the IP header and its ethertype; false when there is none. */
static bool find_ip(const uint8_t *d, size_t len, size_t *off, uint16_t *type) {
  size_t o = 12;
  if (len < o + 2) return false;
  uint16_t t = jct__be16(d + o);
  while ((t == 0x8100 || t == 0x88a8) && len >= o + 6) {
    o += 4;
    t = jct__be16(d + o);
  }
  *off = o + 2;
  *type = t;
  return t == 0x0800 || t == 0x86dd;
}

static int ecn_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  ecn_t *e = inj->priv;
  double p = -1;
  int rc = jct_spec_prob(spec, "p", &p, err, errlen);
  if (rc) return rc;
  if (p < 0) {
    snprintf(err, errlen, "%s: needs p=P, the marking probability", spec->text);
    return JCT_EINVAL;
  }
  e->p = p;
  return 0;
}

/* Mark CE in the IPv4 header at ip, keeping its checksum right. */
static void mark_v4(uint8_t *ip) {
  uint16_t m = jct__be16(ip);
  ip[1] |= 3u;
  jct__put16(ip + 10, csum_update(jct__be16(ip + 10), m, jct__be16(ip)));
}

static jct_verdict_t ecn_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  ecn_t *e = inj->priv;
  size_t off;
  uint16_t type;
  if (!find_ip(f->data, f->len, &off, &type)) return JCT_PASS;
  uint8_t *ip = f->data + off;
  if (type == 0x0800) {
    if (f->len < off + 20 || ip[0] >> 4 != 4 || (ip[0] & 15u) < 5) return JCT_PASS;
    uint8_t ecn = ip[1] & 3u;
    if (ecn != 1 && ecn != 2) return JCT_PASS;
    if (!(jct_injector_uniform(inj) < e->p)) return JCT_PASS;
    mark_v4(ip);
    return JCT_MODIFIED;
  }
  if (f->len < off + 40 || ip[0] >> 4 != 6) return JCT_PASS;
  uint8_t ecn = (ip[1] >> 4) & 3u;
  if (ecn != 1 && ecn != 2) return JCT_PASS;
  if (!(jct_injector_uniform(inj) < e->p)) return JCT_PASS;
  ip[1] |= 0x30u;
  return JCT_MODIFIED;
}

const struct jct_injector_ops jct_ecn_ops = {
    .name = "ecn",
    .usage = "ecn p=P  (mark CE on ECT IPv4/IPv6 packets with probability P)",
    .priv_size = sizeof(ecn_t),
    .init = ecn_init,
    .process = ecn_process,
};
