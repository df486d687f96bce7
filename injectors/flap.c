/* flap: the link goes down and comes back up on a schedule.
 *
 *     flap down=TIME every=TIME
 *
 * Periods of length `every` start at the injector's window (at=, from the
 * start of the run); the link is down for the first `down` of each period
 * and up for the rest: down during [t0 + k*every, t0 + k*every + down) for
 * k = 0, 1, ... with t0 = start + at. Every frame offered while the link is
 * down is dropped (JCT_DROP; the fabric counts these as "link-down"), in
 * both directions when dir= and port= select both. A link that is down
 * carries nothing, so the where= filter is meant to be left out; with one,
 * only the frames it selects are lost.
 *
 * next_deadline_ns reports the next transition (down or up) after the last
 * time the injector saw (in process or tick), so the event loop can log the
 * link's state changes; the drops themselves need no tick. A window end
 * (until=) while the link is down is reported as a transition too.
 *
 * at=host:N: the harness sets rank N's own interface down and up over
 * netlink at those transitions (harness/fabric/chain.c), as a cable pull or
 * a NIC reset does; process() then only says which state is due.
 *
 * down must be shorter than every (down == every would be a link that
 * never comes up: use drop p=1 for that).
 */
#include <stdio.h>

#include "jctlab/error.h"
#include "jctlab/injector.h"

typedef struct {
  uint64_t down_ns, every_ns;
  uint64_t last_ns; /* latest time seen in this run */
  bool seen;        /* any time seen (jct_injector_start clears it) */
} flap_t;

static int flap_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  flap_t *fl = inj->priv;
  uint64_t down = 0, every = 0;
  int rc = jct_spec_time_ns(spec, "down", &down, err, errlen);
  if (!rc) rc = jct_spec_time_ns(spec, "every", &every, err, errlen);
  if (rc) return rc;
  if (down == 0 || every == 0) {
    snprintf(err, errlen, "%s: needs down=TIME and every=TIME, both above 0", spec->text);
    return JCT_EINVAL;
  }
  if (down >= every) {
    snprintf(err, errlen, "%s: down=%s: must be shorter than every=%s", spec->text,
             jct_spec_get(spec, "down"), jct_spec_get(spec, "every"));
    return JCT_EINVAL;
  }
  fl->down_ns = down;
  fl->every_ns = every;
  if (inj->host >= 0) {
    inj->all_ports = false;
    inj->port = (uint32_t)inj->host;
  }
  return 0;
}

/* The first period's start. */
static uint64_t origin_ns(const jct_injector_t *inj) {
  return inj->start_ns + inj->at_ns;
}

static void see(flap_t *fl, uint64_t now_ns) {
  if (!fl->seen || now_ns > fl->last_ns) fl->last_ns = now_ns;
  fl->seen = true;
}

static bool is_down(const flap_t *fl, uint64_t t0, uint64_t now) {
  return now >= t0 && (now - t0) % fl->every_ns < fl->down_ns;
}

static jct_verdict_t flap_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)f;
  flap_t *fl = inj->priv;
  see(fl, now_ns);
  return is_down(fl, origin_ns(inj), now_ns) ? JCT_DROP : JCT_PASS;
}

static uint64_t flap_next_deadline_ns(const jct_injector_t *inj) {
  const flap_t *fl = inj->priv;
  uint64_t t0 = origin_ns(inj);
  bool current = fl->seen;
  uint64_t last = current ? fl->last_ns : 0;
  uint64_t next;
  if (!current || last < t0) {
    next = t0;
  } else {
    uint64_t k = (last - t0) / fl->every_ns, ph = (last - t0) % fl->every_ns;
    uint64_t base = t0 + k * fl->every_ns;
    next = ph < fl->down_ns ? base + fl->down_ns : base + fl->every_ns;
  }
  if (inj->until_ns) {
    uint64_t end = inj->start_ns + inj->until_ns;
    if (next > end) return current && last < end && is_down(fl, t0, last) ? end : UINT64_MAX;
  }
  return next;
}

static void flap_tick(jct_injector_t *inj, uint64_t now_ns, jct_injector_emit_cb emit_cb) {
  (void)emit_cb;
  flap_t *fl = inj->priv;
  see(fl, now_ns);
}

const struct jct_injector_ops jct_flap_ops = {
    .name = "flap",
    .usage = "flap down=TIME every=TIME  (link down for `down` at the start of every period)",
    .priv_size = sizeof(flap_t),
    .init = flap_init,
    .process = flap_process,
    .next_deadline_ns = flap_next_deadline_ns,
    .tick = flap_tick,
    .host_link = true,
};
