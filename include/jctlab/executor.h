/* The schedule executor: runs a schedule (schedule.h) over any transport,
 * deciding when each send may start and recording when it completed.
 *
 * Flow control is NCCL's (transport/net_ib.cc): a receiver announces each
 * buffer it has ready with a 64-byte clear-to-send (CTS) RDMA WRITE to the
 * sender, up to `slots` buffers ahead per connection (NCCL_STEPS, 8); the
 * sender posts a message only once it holds a CTS for it. A send may start
 * once (1) every op it depends on has completed: received by its rank, or,
 * for a dep on one of its rank's own earlier sends (program order,
 * schedule.h), acknowledged (the sender's work completion), (2) gap_ns
 * has passed since the last of them completed, and (3) its CTS has
 * arrived. Messages on one connection are in op order, and each carries its
 * op id as immediate data so the receiver knows which one completed.
 *
 * The executor does no I/O and reads no clock: the transport calls in with
 * events and `now_ns`, and the executor calls out through its hooks. Units:
 * ns (CLOCK_MONOTONIC), bytes.
 */
#ifndef JCTLAB_EXECUTOR_H
#define JCTLAB_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/schedule.h"

#define JCT_EXEC_DEFAULT_SLOTS 8 /* NCCL_STEPS */
/* slots for a job without flow control (perftest: every message posted
 * as soon as it may start, rxe's send queue holding them): no CTS is sent,
 * every send is announced from the start. */
#define JCT_EXEC_NO_CTS UINT32_MAX

typedef struct jct_exec jct_exec_t;

/* The transport's side, called by the executor with itself first (as
 * libuv's callbacks); the transport's own state is hooks.data, read back
 * with jct_exec_data(). A non-zero return stops the executor's call and is
 * returned to its caller. */
/* Receiver side of conn: send one CTS to the connection's sender. */
typedef int (*jct_exec_cts_cb)(jct_exec_t *e, uint32_t conn);
/* Sender side of conn: send op's message (bytes, imm = op id). */
typedef int (*jct_exec_send_cb)(jct_exec_t *e, uint32_t conn, uint32_t op, uint64_t bytes);

typedef struct {
  jct_exec_cts_cb post_cts;
  jct_exec_send_cb post_send;
  void *data;
} jct_exec_hooks_t;

typedef struct {
  uint64_t ready_ns; /* deps received (or start) */
  uint64_t start_ns; /* posted to the transport */
  uint64_t done_ns;  /* received whole by the destination rank */
} jct_op_timing_t;

/* A new execution of s (which must stay alive and valid). slots: buffers
 * announced ahead per connection, 0 for the default, JCT_EXEC_NO_CTS for
 * none (post_cts is never called). Errors: JCT_ENOMEM. */
int jct_exec_new(jct_exec_t **out, const jct_schedule_t *s, uint32_t slots,
                 const jct_exec_hooks_t *hooks);

/* Start at now_ns: every receiver announces its first buffers, and ops
 * without deps become ready. Returns 0 or the first hook error. */
int jct_exec_start(jct_exec_t *e, uint64_t now_ns);

/* The transport saw a CTS arrive at conn's sender. */
int jct_exec_on_cts(jct_exec_t *e, uint32_t conn, uint64_t now_ns);

/* The transport delivered a whole message on conn carrying op id imm.
 * Errors: JCT_EINVAL when imm is not the next op expected on conn (the
 * transport broke ordering; the run is invalid). */
int jct_exec_on_recv(jct_exec_t *e, uint32_t conn, uint32_t imm, uint64_t now_ns);

/* The transport completed the send of op on conn at its sender: the
 * receiver acknowledged all of it (a verbs send work completion; uroce's
 * SEND_DONE). Ops with a program-order dep on it may go. Errors: JCT_EINVAL
 * when op is not the next op on conn whose send was posted and not yet
 * completed (sends complete in order on a connection). */
int jct_exec_on_sent(jct_exec_t *e, uint32_t conn, uint32_t op, uint64_t now_ns);

/* Start the ops whose gap has elapsed by now_ns; call when
 * jct_exec_next_deadline_ns() is due. */
int jct_exec_on_timer(jct_exec_t *e, uint64_t now_ns);
uint64_t jct_exec_next_deadline_ns(const jct_exec_t *e); /* UINT64_MAX: none */

bool jct_exec_done(const jct_exec_t *e);
/* JCT (DESIGN.md decision 5): first send start to last receive, in ns;
 * 0 until done. */
uint64_t jct_exec_jct_ns(const jct_exec_t *e);
const jct_op_timing_t *jct_exec_timing(const jct_exec_t *e, uint32_t op);
uint32_t jct_exec_ops_done(const jct_exec_t *e);

/* The hooks' data given to jct_exec_new. */
void *jct_exec_data(const jct_exec_t *e);

void jct_exec_free(jct_exec_t *e);

#endif
