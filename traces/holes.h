/* The lost PSNs of one flow still waiting for their retransmission (internal
 * to traces/): what inspect.c needs to time each loss from its hole to the
 * retransmission that fills it (inspect.h, "hole_resent").
 *
 * A hole is one PSN. It is opened when the capture point shows it missing
 * (a PSN gap, or a re-sent PSN skipped in a go-back), or by the NAK naming
 * it when it was lost after the capture point; a NAK naming an open hole is
 * noted on it; the first retransmission of its PSN takes it. Opening a PSN
 * already open keeps the older hole (the loss is timed from when it first
 * showed). At most JCT__HOLES_MAX are kept per flow, the oldest dropped.
 * A flow holds a pointer, NULL until its first hole: most flows never lose
 * a packet.
 */
#ifndef JCT_HOLES_H
#define JCT_HOLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JCT__HOLES_MAX 4096

typedef struct {
  uint32_t psn;
  bool has_nak;       /* a NAK (PSN sequence error) named it */
  bool from_nak;      /* first known from that NAK: lost after the capture point */
  uint32_t hi_at_nak; /* where the requester was when the NAK was seen: the flow's highest PSN,
                         or, during a go-back, the last PSN it had re-sent */
  uint64_t seen_ns, nak_ns;
} jct__hole_t;

typedef struct {
  jct__hole_t *h; /* in the order they were opened */
  size_t n, cap;
  uint64_t recovered, recovery_ns; /* holes taken, and their hole -> retransmission times */
} jct__holes_t;

/* Open a hole at psn seen at ts_ns (*hs made when NULL). Errors:
 * JCT_ENOMEM (nothing opened). */
int jct__holes_open(jct__holes_t **hs, uint32_t psn, uint64_t ts_ns);

/* A NAK naming psn, seen at ts_ns when the requester was at hi (hi_at_nak): noted
 * on the open hole at psn, or a hole opened for it. Errors: JCT_ENOMEM. */
int jct__holes_nak(jct__holes_t **hs, uint32_t psn, uint64_t ts_ns, uint32_t hi);

/* Take the hole at psn into *out; false when none is open (hs may be NULL).
 * The caller counts it in recovered and recovery_ns. */
bool jct__holes_take(jct__holes_t *hs, uint32_t psn, jct__hole_t *out);

/* Free hs (NULL: nothing). */
void jct__holes_free(jct__holes_t *hs);

#endif
