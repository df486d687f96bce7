/* A session's event loop and its one way of waiting (loop.h). */
#include "common/errf.h"
#include "harness/base/interrupt.h"
#include "loop.h"

static void on_interrupt(uv_poll_t *p, int status, int events) {
  (void)p, (void)status, (void)events; /* woke the loop; the flag says the rest */
  jct__interrupt_drain();
}

int jct__loop_open(jct__loop_t *l, uint64_t spin_ns, char *err, size_t errlen) {
  uv_loop_init(&l->uv);
  l->uv_open = true;
  int rc = jct_clock_init(&l->clock, &l->uv);
  if (rc) return jct__errf(err, errlen, rc, "cannot create the event loop's timer");
  l->clock_open = true;
  jct_clock_set_spin_ns(&l->clock, spin_ns);
  l->wall_open = uv_timer_init(&l->uv, &l->wall) == 0;
  int fd = jct__interrupt_fd();
  if (fd >= 0 && uv_poll_init(&l->uv, &l->intr, fd) == 0) {
    l->intr_open = true;
    uv_poll_start(&l->intr, UV_READABLE, on_interrupt);
  }
  return 0;
}

static void on_wake(jct_timer_t *t, uint64_t now_ns) {
  (void)t, (void)now_ns; /* only wakes the loop */
}

static void on_wall(uv_timer_t *t) {
  (void)t; /* only wakes the loop */
}

/* libuv's timers count milliseconds from the loop's cached time, which
 * may be behind, so the timer can fire early: it is armed again whenever
 * it is found idle before the deadline. A millisecond late is nothing
 * against a wall budget. */
static void arm_wall(jct__loop_t *l) {
  if (!l->wall_open || !l->wall_deadline_ns || uv_is_active((uv_handle_t *)&l->wall)) return;
  uv_update_time(&l->uv);
  uint64_t now = jct_wall_ns();
  uint64_t ms = l->wall_deadline_ns > now ? (l->wall_deadline_ns - now) / 1000000 + 1 : 0;
  uv_timer_start(&l->wall, on_wall, ms, 0);
}

bool jct__loop_run_until(jct__loop_t *l, jct__loop_done_cb done, jct__loop_turn_cb turn, void *arg,
                         uint64_t deadline_ns) {
  jct_timer_start(&l->clock, &l->wake, deadline_ns, on_wake);
  while (!done(arg) && jct_now_ns() < deadline_ns && !jct__interrupt_signal()) {
    /* A loop that waits idle skips ahead to an emulated deadline or wakes
     * on the wall timer; one that stays busy turns: checking the wall
     * each turn covers both. */
    if (l->wall_deadline_ns && jct_wall_ns() >= l->wall_deadline_ns) {
      l->wall_passed = true;
      break;
    }
    arm_wall(l);
    uv_run(&l->uv, UV_RUN_ONCE);
    if (turn) turn(arg);
  }
  jct_timer_stop(&l->clock, &l->wake);
  if (l->wall_open) uv_timer_stop(&l->wall);
  return done(arg);
}

void jct__loop_close(jct__loop_t *l) {
  if (l->intr_open) uv_close((uv_handle_t *)&l->intr, NULL);
  l->intr_open = false;
  if (l->wall_open) uv_close((uv_handle_t *)&l->wall, NULL);
  l->wall_open = false;
  if (l->clock_open) jct_clock_close(&l->clock, NULL);
  l->clock_open = false;
  if (l->uv_open) {
    uv_run(&l->uv, UV_RUN_NOWAIT);
    uv_loop_close(&l->uv);
  }
  l->uv_open = false;
}
