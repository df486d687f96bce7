/* rate: frames leave no faster than a rate, as netem's rate.
 *
 *     rate RATE [overhead=BYTES] [cellsize=BYTES [celloverhead=BYTES]]
 *
 * netem (net/sched/sch_netem.c, netem_enqueue() and packet_time_ns();
 * tc-netem(8), "rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]")
 * gives each packet a time to send: from the time to send of the last
 * packet it holds (or now when it holds none; or now + its delay when that
 * is later), plus the packet's time on the emulated link,
 *     bytes = len + overhead                 (cellsize=0)
 *     bytes = ceil((len + overhead) / cellsize) * (cellsize + celloverhead)
 *     t     = floor(bytes * 8 * 1e9 / RATE) ns
 * so back-to-back packets are spaced by their own t. len is the frame as
 * the switch holds it, Ethernet header included and FCS not, which is what
 * qdisc_pkt_len() is for a netem on an Ethernet device. overhead and
 * celloverhead may be negative, as netem's (signed 32-bit there; here
 * within +-65535); bytes never count below 0. RATE reads as --rate does
 * (common/rate.h): bits per second in powers of 1000, where tc's "bps" would
 * be bytes; netem keeps bytes per second and divides by them, so the
 * figures agree when RATE is a multiple of 8 bit/s.
 *
 * jctlab holds each frame (JCT_HOLD) until
 *     send = max(ready, last[port]) + t,   last[port] = send,
 * ready = max(now, the hold the injectors before it in the chain gave the
 * frame): `delay D` then `rate R` in a chain is netem's `delay D rate R`
 * (netem takes the later of now + delay and the last time to send, then
 * adds t). last is kept per switch port, each port being a link of its
 * own, as each device has its own netem: one rate injector on every port
 * limits each link to RATE. Holds grow in arrival order on a port and the
 * switch keeps each queue's order, so no flow is reordered. With where=
 * only the frames it selects count and are held; the others are not
 * paced, though in a queue they still wait behind a held frame.
 *
 * Differences from netem: the switch still serializes each frame at its
 * link's rate once its hold is over (RATE above the link rate changes
 * little); the link time is reserved when the injector sees the frame, so
 * a frame dropped after it (by a later injector, or by a full buffer)
 * still used its slot, where netem's loss comes before its rate; netem's
 * queue limit (1000 packets by default) is the switch's buffer here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/injector.h"

#define RATE_PORTS 64                 /* the switch's ports (JCT_SWITCH_MAX_PORTS) */
#define MAX_RATE_BPS 1000000000000ull /* 1 Tbit/s, the switch's limit too */
#define MAX_BYTES 65535

typedef struct {
  uint64_t rate_bps;
  int32_t overhead, cell_overhead;
  uint32_t cell_size;        /* 0: no cells */
  uint64_t last[RATE_PORTS]; /* per port: the last frame's send time */
} rate_t;

static int bad(const jct_spec_t *spec, char *err, size_t errlen, const char *word,
               const char *why) {
  snprintf(err, errlen, "%s: %s: %s", spec->text, word, why);
  return JCT_EINVAL;
}

/* A whole number of bytes in [lo, MAX_BYTES] (lo 0 or -MAX_BYTES), sign
 * allowed when lo is negative; absent leaves *out. */
static int take_bytes(jct_spec_t *spec, const char *key, long lo, int64_t *out, char *err,
                      size_t errlen) {
  const char *v = jct_spec_get(spec, key);
  if (!v) return 0;
  char word[300];
  snprintf(word, sizeof word, "%s=%s", key, v);
  const char *digits = v[0] == '-' && lo < 0 ? v + 1 : v;
  char *end;
  errno = 0;
  long x = digits[0] >= '0' && digits[0] <= '9' ? strtol(v, &end, 10) : 0;
  if (digits[0] < '0' || digits[0] > '9' || *end || errno)
    return bad(spec, err, errlen, word,
               lo < 0 ? "is not a whole number of bytes (20, -4)"
                      : "is not a whole number of bytes");
  if (x < lo || x > MAX_BYTES) {
    char why[80];
    snprintf(why, sizeof why, "is outside [%ld, %d] bytes", lo, MAX_BYTES);
    return bad(spec, err, errlen, word, why);
  }
  *out = x;
  return 0;
}

static int rate_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  rate_t *r = inj->priv;
  uint64_t bps = 0;
  int64_t overhead = 0, cell = 0, cell_overhead = 0;
  int rc = jct_spec_rate_bps(spec, "", &bps, err, errlen); /* the bare RATE */
  if (!rc) rc = take_bytes(spec, "overhead", -MAX_BYTES, &overhead, err, errlen);
  if (!rc) rc = take_bytes(spec, "cellsize", 0, &cell, err, errlen);
  if (!rc) rc = take_bytes(spec, "celloverhead", -MAX_BYTES, &cell_overhead, err, errlen);
  if (rc) return rc;
  if (bps == 0) return bad(spec, err, errlen, "RATE", "is missing (rate 10mbit)");
  if (bps > MAX_RATE_BPS) {
    uint32_t i = 0; /* the bare word jct_spec_rate_bps took */
    while (spec->arg[i].key[0] || !spec->arg[i].used)
      i++;
    return bad(spec, err, errlen, spec->arg[i].value, "is above 1 Tbit/s");
  }
  bool has_co = false;
  for (uint32_t i = 0; i < spec->nargs; i++)
    has_co |= strcmp(spec->arg[i].key, "celloverhead") == 0;
  if (has_co && cell == 0)
    return bad(spec, err, errlen, "celloverhead", "needs cellsize=BYTES above 0");
  r->rate_bps = bps;
  r->overhead = (int32_t)overhead;
  r->cell_size = (uint32_t)cell;
  r->cell_overhead = (int32_t)cell_overhead;
  return 0;
}

/* The frame's time on the emulated link, ns (netem's packet_time_ns). */
static uint64_t packet_time_ns(const rate_t *r, size_t len) {
  int64_t bytes = (int64_t)len + r->overhead;
  if (bytes < 0) bytes = 0;
  if (r->cell_size) {
    int64_t cells = (bytes + r->cell_size - 1) / r->cell_size;
    bytes = cells * ((int64_t)r->cell_size + r->cell_overhead);
    if (bytes < 0) bytes = 0;
  }
  return (uint64_t)((unsigned __int128)bytes * 8000000000u / r->rate_bps);
}

static jct_verdict_t rate_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  rate_t *r = inj->priv;
  uint64_t *last = &r->last[f->port < RATE_PORTS ? f->port : RATE_PORTS - 1];
  uint64_t ready = f->hold_until_ns > now_ns ? f->hold_until_ns : now_ns;
  if (*last > ready) ready = *last;
  *last = ready + packet_time_ns(r, f->len);
  f->hold_until_ns = *last;
  return JCT_HOLD;
}

const struct jct_injector_ops jct_rate_ops = {
    .name = "rate",
    .usage = "rate RATE [overhead=BYTES] [cellsize=BYTES [celloverhead=BYTES]]  (netem's rate: "
             "10mbit, 1gbit)",
    .priv_size = sizeof(rate_t),
    .init = rate_init,
    .process = rate_process,
};
