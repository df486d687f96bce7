/* A session's event loop (internal to orch/): one libuv loop and the
 * nanosecond clock on it (include/jctlab/clock.h, DESIGN.md decision 1),
 * and the one way every part of a session waits: turn the loop until what
 * it awaits has happened or a deadline passed.
 *
 * The session and its backends (backend.h) both wait through it; it calls
 * neither back except through the predicates handed to it, so it sits
 * below both of them.
 */
#ifndef JCT_ORCH_LOOP_H
#define JCT_ORCH_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "jctlab/clock.h"

typedef struct {
  uv_loop_t uv;
  jct_clock_t clock;
  jct_timer_t wake; /* the deadline of jct__loop_run_until() */
  uv_poll_t intr;   /* base/interrupt.h's pipe: a signal wakes the loop */
  /* A wall-time bound on every wait (jct_wall_ns() scale; 0: none), and
   * whether a wait ended on it. Under time dilation an emulated deadline
   * costs F times its length in wall time; this caps what a hung
   * repetition can cost. */
  uint64_t wall_deadline_ns;
  bool wall_passed;
  uv_timer_t wall; /* wakes an idle wait at wall_deadline_ns */
  bool uv_open, clock_open, intr_open, wall_open;
} jct__loop_t;

/* Open the loop and its clock, spinning rather than sleeping for timers due
 * within spin_ns (clock.h). Errors: JCT_EIO (err says so); close it
 * anyway. */
int jct__loop_open(jct__loop_t *l, uint64_t spin_ns, char *err, size_t errlen);

/* What jct__loop_run_until asks after each turn, and does (as uv_thread_cb:
 * the caller's arg alone). */
typedef bool (*jct__loop_done_cb)(void *arg);
typedef void (*jct__loop_turn_cb)(void *arg);

/* Turn the loop (UV_RUN_ONCE) until done(arg), deadline_ns
 * (jct_now_ns() scale), l->wall_deadline_ns (then l->wall_passed is set)
 * or an interrupt (base/interrupt.h), calling turn(arg) after each turn when turn is not
 * NULL. done says when to stop: what was awaited happened, or something
 * failed (the caller tells which afterwards). Returns done(arg). */
bool jct__loop_run_until(jct__loop_t *l, jct__loop_done_cb done, jct__loop_turn_cb turn, void *arg,
                         uint64_t deadline_ns);

/* Close the clock, let the loop close what was closed through it, close
 * the loop. Everything on it must be closed first; a loop never opened, or
 * half opened, is fine. */
void jct__loop_close(jct__loop_t *l);

#endif
