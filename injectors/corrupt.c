/* corrupt: flip one bit of a RoCEv2 packet so that its ICRC fails and the
 * receiver drops it, as Linux rxe does (drivers/infiniband/sw/rxe/rxe_icrc.c,
 * rxe_icrc_check: a mismatch drops the packet before the transport sees it).
 *
 *     corrupt p=P
 *
 * Each selected RoCEv2 packet (UDP destination port 4791, an opcode RoCEv2
 * defines, room for BTH and ICRC) is corrupted with probability P; other
 * frames pass untouched and draw no random number. P is a 32-bit fraction
 * compared with a 32-bit draw, as netem keeps probabilities (common/rng.h).
 * netem's corrupt (sch_netem.c) flips one random bit anywhere in the linear
 * data; that would often break the Ethernet, IP or UDP headers instead, and
 * the frame would be lost before RoCE, not rejected by it.
 *
 * Where the bit flips: uniformly (a second 32-bit draw, scaled) among the
 * bits after the 12-byte BTH up to the end of the ICRC (extension headers,
 * payload, pad and the ICRC itself). The BTH stays intact, so the opcode,
 * the header layout and the pad count are unchanged and the frame still
 * parses as the same RoCE packet; the ICRC covers every one of those bits
 * (Annex A17.3.3), so it no longer matches. The region is never empty: it
 * holds at least the ICRC.
 *
 * A nonzero UDP checksum is updated incrementally (RFC 1624 eqn. 3; 0 is
 * written as 0xffff, RFC 768), so a receiver's UDP layer still accepts the
 * datagram and the drop happens where rxe makes it, at the ICRC check. The
 * ICRC masks the UDP checksum, so this update does not repair the ICRC.
 */
#include <stdio.h>
#include <string.h>

#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/roce.h"
#include "traces/frame.h"
#include "common/wire.h"

typedef struct {
  uint32_t p; /* a 32-bit fraction (common/rng.h) */
} corrupt_t;

static int corrupt_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  corrupt_t *c = inj->priv;
  double p = -1;
  int rc = jct_spec_prob(spec, "p", &p, err, errlen);
  if (rc) return rc;
  if (p < 0) {
    snprintf(err, errlen, "%s: needs p=P, the corruption probability", spec->text);
    return JCT_EINVAL;
  }
  c->p = jct__rng_prob32(p);
  return 0;
}

/* Flip bit `bit` of the region starting at offset `first` of the UDP
 * datagram at u (udp_len bytes), keeping a nonzero UDP checksum right. */
static void flip(uint8_t *u, size_t udp_len, size_t first, uint64_t bit) {
  size_t at = first + (size_t)(bit / 8);
  size_t w = at & ~(size_t)1; /* the 16-bit word of the checksum sum */
  uint16_t m = (uint16_t)(u[w] << 8 | (w + 1 < udp_len ? u[w + 1] : 0));
  u[at] ^= (uint8_t)(1u << (bit % 8));
  uint16_t m1 = (uint16_t)(u[w] << 8 | (w + 1 < udp_len ? u[w + 1] : 0));
  uint16_t ck = jct__be16(u + 6);
  if (ck == 0) return; /* IPv4 without a UDP checksum */
  ck = jct__csum_update(ck, m, m1);
  jct__put16(u + 6, ck ? ck : 0xffff);
}

static jct_verdict_t corrupt_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  corrupt_t *c = inj->priv;
  if (!jct_frame_roce(f)) return JCT_PASS;
  size_t udp = f->udp, udp_len = f->udp_len;
  if (!jct__rng_hit(jct_injector_packet_u32(inj, f, 0), c->p)) return JCT_PASS;
  size_t first = 8 + JCT_BTH_BYTES;
  uint64_t nbits = (uint64_t)(udp_len - first) * 8;
  /* A draw scaled to [0, nbits): (draw * nbits) >> 32 (nbits < 2^19). */
  flip(jct_frame_writable(f) + udp, udp_len, first,
       (uint64_t)jct_injector_packet_u32(inj, f, 1) * nbits >> 32);
  jct_injector_packet_lost(inj, f); /* its next copy draws anew */
  return JCT_MODIFIED;
}

const struct jct_injector_ops jct_corrupt_ops = {
    .name = "corrupt",
    .usage = "corrupt p=P  (flip one bit after the BTH of RoCE packets: the ICRC fails)",
    .priv_size = sizeof(corrupt_t),
    .init = corrupt_init,
    .process = corrupt_process,
};
