/* Where a RoCE packet is in its QP's send stream (internal to injectors/):
 * the tracker that drop.c's pkt=/qp-order=, stall.c and timeout.c share.
 *
 * It follows one QP's request packets through an injector's site: the QP
 * named (qp=), or the first one a request packet went to, or with
 * qp_order N the N-th (from 0) in the order of each QP's first packet, for
 * transports whose QP numbers the device picks (Linux rxe). A packet is a
 * retransmission when its PSN is not after the highest the QP sent (24-bit
 * serial arithmetic, as rxe compares PSNs); first transmissions are
 * counted by position: message M (from 0, a message starting at a FIRST
 * or ONLY opcode: IBA vol. 1, 9.2 BTH, 9.8.3 opcode sequence) and packet K
 * in it (from 0). ACKs, atomic ACKs and CNPs count in the other
 * direction's numbering and are not request packets. The state is plain
 * data: a kind keeps it in its priv, which jct_injector_start restores, so
 * positions count anew every repetition. */
#ifndef JCT_INJ_POSITION_H
#define JCT_INJ_POSITION_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/injector.h"

#define JCT__POSITION_MAX_QP_ORDER 16

typedef struct {
  bool any_qp;      /* no qp=: the first QP seen, or the qp_order-th */
  uint32_t qp;      /* the QP followed (once seen, with any_qp) */
  uint32_t qp_order;
  uint32_t nseen_qps;
  uint32_t seen_qps[JCT__POSITION_MAX_QP_ORDER]; /* before the qp_order-th: the QPs seen */
  bool seen_qp;         /* a packet of the QP passed */
  uint32_t highest_psn; /* of its packets so far */
  int64_t msg;          /* the message of the last first transmission, -1 before any */
  uint32_t pkt;         /* ... and its packet in it */
} jct__position_t;

/* Follow QP qp, or (any_qp) the qp_order-th QP seen (below
 * JCT__POSITION_MAX_QP_ORDER). */
void jct__position_init(jct__position_t *p, bool any_qp, uint32_t qp, uint32_t qp_order);

typedef enum {
  JCT__POS_OTHER = 0, /* not a request packet of the QP followed */
  JCT__POS_FIRST_TX,  /* its first transmission: p->msg and p->pkt say where it is */
  JCT__POS_RESENT     /* a re-sent copy (PSN not after the highest sent) */
} jct__position_kind_t;

/* Follow what spec names: qp=QPN, or qp-order=N (below
 * JCT__POSITION_MAX_QP_ORDER; never with qp=), or else the first QP seen.
 * 0, or JCT_EINVAL naming the word. */
int jct__position_from_spec(jct__position_t *p, jct_spec_t *spec, char *err, size_t errlen);

/* The common words of a kind that acts on its QP's packets where they
 * enter the switch (stall, timeout): dir= (out is refused, with why),
 * qp=/qp-order= into *p (jct__position_from_spec), baseline=yes|no; sets
 * inj->out false, inj->baseline, and inj->targeted (acting on nothing
 * makes the run invalid). 0, or JCT_EINVAL naming the word. */
int jct__position_ingress_init(jct_injector_t *inj, jct__position_t *p, jct_spec_t *spec,
                               const char *why_in, char *err, size_t errlen);

/* Offer the frame; *psn is its PSN (for FIRST_TX and RESENT). */
jct__position_kind_t jct__position_see(jct__position_t *p, jct_frame_t *f, uint32_t *psn);

#endif
