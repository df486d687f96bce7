/* What inspect.c shares with the rest of traces/, and with the replay's
 * watch on its switch's wire (harness/orch/loss_watch.c), which counts
 * re-sent packets by it (internal to jctlab). */
#ifndef JCT_INSPECT_INT_H
#define JCT_INSPECT_INT_H

#include "jctlab/inspect.h"

/* The options an analysis was made with. */
const jct_inspect_opts_t *jct__inspect_opts(const jct_inspect_t *ins);

/* The flow of the last RoCE packet added, or -1. */
long jct__inspect_last_flow(const jct_inspect_t *ins);

/* The go-backs after NAKs so far, each one's depth: per hole its NAK's
 * go-back re-sent, the PSNs past it the flow had sent by then (profile.h,
 * go_back_psns); *n of them. */
const uint64_t *jct__inspect_go_backs(const jct_inspect_t *ins, size_t *n);

/* The message kind (JCT_MSG_*) of an opcode kind (struct jct_opcode_info's
 * kind), or -1 for those that carry no message: ACK, atomic ACK, CNP. */
int jct__msg_kind(uint8_t op_kind);

#endif
