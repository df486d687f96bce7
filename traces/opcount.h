/* Packets per BTH opcode on one flow, kept sparse: a flow carries a handful
 * of the 256 opcodes (an ACK flow one, a WRITE flow FIRST, MIDDLE, LAST and
 * ONLY), so a full table of 256 counters (2 KiB) per flow was most of
 * jct_inspect's memory. Four counters live in the flow itself; a flow that
 * carries more opcodes gets a small array on the heap, doubled as needed.
 * Internal to traces/.
 */
#ifndef JCT_OPCOUNT_H
#define JCT_OPCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "jctlab/inspect.h"

#define JCT__OPCOUNT_INLINE 4

typedef struct {
  /* opcode << 56 | packets; 0: unused (a used counter is at least 1).
   * Used slots come first. */
  uint64_t in[JCT__OPCOUNT_INLINE];
  /* NULL, or more[0] = used | capacity << 32 (in uint64_t, more[0]
   * included) and the counters after it. */
  uint64_t *more;
} jct__opcount_t;

/* Count one packet of opcode. Errors: JCT_ENOMEM (the counter of a new
 * opcode could not be stored; nothing changes). */
int jct__opcount_add(jct__opcount_t *c, uint8_t opcode);

/* The opcodes counted, ascending, into out; returns how many. */
size_t jct__opcount_get(const jct__opcount_t *c, jct_opcode_count_t out[256]);

void jct__opcount_free(jct__opcount_t *c);

#endif
