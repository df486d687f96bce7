/* pause: a PFC pause storm, as a NIC stuck sending pause frames makes one.
 *
 *     pause prio=P [quanta=Q] rate=R/s [for=TIME] port=N [src=MAC]
 *     pause prio=P [quanta=Q] link=RATE [for=TIME] at=host:N [src=MAC]
 *
 * From the window's start (at=) the injector sends IEEE 802.1Qbb PFC frames
 * for priority P with pause time Q (units of 512 bit times at the link's
 * rate, 1..65535, default 65535) at R frames per second for TIME (default:
 * until the window ends, or forever). They arrive at the switch on port N
 * as if the rank on that link had sent them, so the switch stops that
 * egress queue toward the rank; its buffer fills, and with PFC on the
 * switch pauses the senders upstream: the storm spreads as on a real
 * lossless fabric, until the PFC watchdog (if on) declares a storm.
 *
 * Frame k of the storm is due at t0 + floor(k * 1e9 / R) ns, t0 = start +
 * at, for every k with k * 1e9 / R < TIME: R * TIME frames in all (200 for
 * rate=1000/s for=200ms). tick() emits every frame due, each stamped with
 * its own due time; a storm ending does not send XON (the pause simply
 * expires, as when a stuck NIC is reset). process() passes every frame.
 *
 * link=RATE (the link's speed, as --rate reads it) instead of rate= sends
 * two frames per pause time, so each refreshes the pause before it
 * expires: Q * 512 bit times at RATE (65535 quanta last 839 us at
 * 40 Gbit/s, so 2384 frames a second; 84 us at 400 Gbit/s).
 *
 * at=host:N instead of port=N: the frames leave from rank N's own
 * interface (harness/fabric/chain.c sends them on an AF_PACKET socket), as
 * a host's NIC or a SONiC fanout host sends a storm, and reach the switch
 * on that link like any frame.
 *
 * The frame (IEEE 802.1Qbb clause 36; 802.3 Annex 31D): destination
 * 01:80:c2:00:00:01, source src= (default 02:6a:63:74:00:N+1, locally
 * administered), ethertype 0x8808 (MAC control), opcode 0x0101,
 * class-enable vector with bit P set, eight 16-bit quanta (only P's
 * nonzero), zero padding to the 60-byte minimum frame (without FCS).
 */
#include <stdio.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "common/wire.h"

#define PFC_FRAME_BYTES 60

typedef struct {
  uint8_t frame[PFC_FRAME_BYTES];
  double rate_per_s;
  uint64_t for_ns; /* UINT64_MAX: no end of its own */
  uint64_t sent;   /* frames of this run emitted (jct_injector_start: 0) */
} pause_t;

static int parse_mac(const char *s, uint8_t mac[6]) {
  unsigned v[6];
  char tail;
  if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    return JCT_EINVAL;
  for (int i = 0; i < 6; i++)
    mac[i] = (uint8_t)v[i];
  return 0;
}

static void build_frame(uint8_t *fr, const uint8_t src[6], unsigned prio, uint16_t quanta) {
  static const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
  memset(fr, 0, PFC_FRAME_BYTES);
  memcpy(fr, dst, 6);
  memcpy(fr + 6, src, 6);
  jct__put16(fr + 12, 0x8808);
  jct__put16(fr + 14, 0x0101);
  jct__put16(fr + 16, (uint16_t)(1u << prio));
  jct__put16(fr + 18 + 2 * prio, quanta);
}

static int bad(const jct_spec_t *spec, char *err, size_t errlen, const char *word,
               const char *why) {
  snprintf(err, errlen, "%s: %s: %s", spec->text, word, why);
  return JCT_EINVAL;
}

static int pause_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  pause_t *ps = inj->priv;
  uint64_t prio = UINT64_MAX, quanta = 0xffff, for_ns = UINT64_MAX;
  double rate = 0;
  int rc = jct_spec_u64(spec, "prio", 7, &prio, err, errlen);
  if (!rc) rc = jct_spec_u64(spec, "quanta", 0xffff, &quanta, err, errlen);
  uint64_t link_bps = 0;
  if (!rc) rc = jct_spec_rate_per_s(spec, "rate", &rate, err, errlen);
  if (!rc) rc = jct_spec_rate_bps(spec, "link", &link_bps, err, errlen);
  if (!rc) rc = jct_spec_time_ns(spec, "for", &for_ns, err, errlen);
  if (rc) return rc;
  if (prio == UINT64_MAX) return bad(spec, err, errlen, "prio", "needs prio=0..7");
  if (quanta == 0)
    return bad(spec, err, errlen, "quanta=0", "a storm needs quanta above 0 (0 is XON)");
  if (link_bps && rate > 0)
    return bad(spec, err, errlen, "link", "goes without rate= (it sets the rate)");
  if (link_bps) /* two frames per pause time: each refreshes the pause before it expires */
    rate = 2.0 * (double)link_bps / ((double)quanta * 512.0);
  if (!(rate > 0) || rate > 1e9)
    return bad(spec, err, errlen, "rate",
               "needs rate=R/s with R in (0, 1e9], or link=RATE (two frames per pause time)");
  if (inj->host >= 0) { /* the host's own link */
    inj->all_ports = false;
    inj->port = (uint32_t)inj->host;
  }
  if (for_ns == 0) return bad(spec, err, errlen, "for=0", "the storm must last above 0");
  if (inj->all_ports)
    return bad(spec, err, errlen, "port",
               "needs port=N (or at=host:N), the link whose rank sends the pauses");
  uint8_t src[6] = {0x02, 0x6a, 0x63, 0x74, 0x00, (uint8_t)(inj->port + 1)};
  const char *s = jct_spec_get(spec, "src");
  if (s && parse_mac(s, src))
    return bad(spec, err, errlen, "src", "not a MAC address (02:00:00:00:00:01)");
  build_frame(ps->frame, src, (unsigned)prio, (uint16_t)quanta);
  ps->rate_per_s = rate;
  ps->for_ns = for_ns;
  return 0;
}

/* Frame k's offset from the storm's start; UINT64_MAX past its end. */
static uint64_t offset_ns(const jct_injector_t *inj, const pause_t *ps, uint64_t k) {
  double off = (double)k * 1e9 / ps->rate_per_s;
  if (off >= (double)ps->for_ns || off >= 1.8e19) return UINT64_MAX;
  uint64_t o = (uint64_t)off;
  if (inj->until_ns && inj->at_ns + o >= inj->until_ns) return UINT64_MAX;
  return o;
}

static uint64_t pause_next_deadline_ns(const jct_injector_t *inj) {
  const pause_t *ps = inj->priv;
  uint64_t o = offset_ns(inj, ps, ps->sent);
  return o == UINT64_MAX ? UINT64_MAX : inj->start_ns + inj->at_ns + o;
}

static void pause_tick(jct_injector_t *inj, uint64_t now_ns, jct_injector_emit_cb emit_cb) {
  pause_t *ps = inj->priv;
  for (;;) {
    uint64_t o = offset_ns(inj, ps, ps->sent);
    if (o == UINT64_MAX) break;
    uint64_t due = inj->start_ns + inj->at_ns + o;
    if (due > now_ns) break;
    emit_cb(inj, inj->port, ps->frame, PFC_FRAME_BYTES, due);
    ps->sent++;
  }
}

static jct_verdict_t pause_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)inj;
  (void)f;
  (void)now_ns;
  return JCT_PASS;
}

const struct jct_injector_ops jct_pause_ops = {
    .name = "pause",
    .usage = "pause prio=P [quanta=Q] rate=R/s | link=RATE [for=TIME] port=N | at=host:N "
             "[src=MAC]  (PFC pause storm)",
    .priv_size = sizeof(pause_t),
    .init = pause_init,
    .process = pause_process,
    .next_deadline_ns = pause_next_deadline_ns,
    .tick = pause_tick,
    .host_frames = true,
};
