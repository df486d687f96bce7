/* The two-QP fixture behind fuzz_uroce.c, shared with the seed generator
 * (uroce_seeds.c), and the input format they agree on.
 *
 * Input: one configuration byte, then records of
 *   ctl (1 byte), length (2 bytes, big-endian), that many bytes (fewer when
 *   the input ends first).
 * A record runs in this order: the clock (ctl bits 6-7), both QPs' timers,
 * the real traffic between the QPs (bits 3-5), then the record's bytes as a
 * received UDP payload (bit 0 picks the QP; bits 1-2 make it near-valid).
 */
#ifndef JCT_FUZZ_UROCE_H
#define JCT_FUZZ_UROCE_H

#include <stddef.h>
#include <stdint.h>

#include "jctlab/uroce.h"

/* Configuration byte. */
#define UPAIR_CFG_MTU(k) ((k)&7)      /* path MTU 256 << (k % 5) */
#define UPAIR_CFG_WRAP 0x08           /* start PSNs just below 2^24 */
#define UPAIR_CFG_RETRY(i) ((i) << 4) /* retry_cnt 0, 1, 3, 7 for i = 0..3 */
#define UPAIR_CFG_NO_TIMER 0x40       /* timeout 0: no retransmit timer */
#define UPAIR_CFG_SQ2 0x80            /* send queue depth 2: A's third post fails */

/* Record control byte. */
#define UPAIR_TO_A 0x01     /* deliver the bytes to A (else to B) */
#define UPAIR_FIX_ICRC 0x02 /* overwrite the last 4 bytes with the ICRC the peer would send */
#define UPAIR_FIX_QPN 0x04  /* overwrite the BTH destination QP with the target's */
#define UPAIR_X(m) ((m) << 3)
enum {
  UPAIR_X_NONE,       /* no real traffic */
  UPAIR_X_ALL,        /* pull every packet both QPs have and deliver it to the other */
  UPAIR_X_DROP_FIRST, /* ... losing the first */
  UPAIR_X_DUP,        /* ... delivering each twice */
  UPAIR_X_REORDER,    /* ... delivering the first one last */
  UPAIR_X_DROP_A,     /* ... losing everything A sends */
  UPAIR_X_DROP_B,     /* ... losing everything B sends */
  UPAIR_X_PAUSE,      /* pause both ranks (PFC) for 2 ms from now, then UPAIR_X_ALL */
};
#define UPAIR_CLOCK(m) ((m) << 6)
enum {
  UPAIR_CLOCK_STAY,     /* the clock does not move */
  UPAIR_CLOCK_100US,    /* +100 us */
  UPAIR_CLOCK_5MS,      /* +5 ms, beyond the 1.05 ms retransmit timeout */
  UPAIR_CLOCK_DEADLINE, /* to the earlier of the two QPs' deadlines */
};

#define UPAIR_A 0
#define UPAIR_B 1

typedef struct jct__upair jct__upair_t;

/* Called with every packet a QP produces, before it is delivered (or not). */
typedef void (*jct__upair_tap_fn)(void *arg, int from, const uint8_t *pkt, size_t len);

/* Create the pair for a configuration byte and post the plan: A posts
 * 2*MTU+100 bytes with immediate, a CTS, and 0 bytes with immediate; B posts
 * MTU bytes. NULL when out of memory. */
jct__upair_t *jct__upair_new(uint8_t config, jct__upair_tap_fn tap, void *arg);
/* Run one record. */
void jct__upair_step(jct__upair_t *p, uint8_t ctl, const uint8_t *bytes, size_t len);
/* After the last record: exchange without loss, firing timers, until every
 * posted message has completed, and check that it did. */
void jct__upair_finish(jct__upair_t *p);
void jct__upair_free(jct__upair_t *p);
const jct_uroce_qp_t *jct__upair_qp(const jct__upair_t *p, int side);

#endif
