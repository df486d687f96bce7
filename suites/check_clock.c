/* The nanosecond event queue: order, stop/restart, lateness statistics. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "suites.h"

typedef struct {
  jct_clock_t clock;
  uint64_t last_due;
  unsigned fired, out_of_order, left;
} run_t;

static void on_fire(jct_timer_t *t, uint64_t now_ns) {
  run_t *r = t->data;
  ck_assert_uint_ge(now_ns, t->due_ns);
  if (t->due_ns < r->last_due) r->out_of_order++;
  r->last_due = t->due_ns;
  r->fired++;
  if (--r->left == 0) uv_stop(r->clock.loop);
}

/* 2,000 timers over 50 ms, a third stopped, a third moved: the rest fire
 * once each, in due order, each no earlier than due. */
START_TEST(order_stop_restart) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  run_t r = {0};
  ck_assert_int_eq(jct_clock_init(&r.clock, &loop), 0);
  enum { N = 2000 };
  jct_timer_t *t = calloc(N, sizeof *t);
  uint64_t t0 = jct_now_ns() + 2000000;
  srand(7);
  for (int i = 0; i < N; i++) {
    t[i].data = &r;
    jct_timer_start(&r.clock, &t[i], t0 + (uint64_t)(rand() % 50000000), on_fire);
  }
  unsigned stopped = 0;
  for (int i = 0; i < N; i += 3) {
    jct_timer_stop(&r.clock, &t[i]);
    ck_assert(!jct_timer_active(&t[i]));
    stopped++;
  }
  for (int i = 1; i < N; i += 3)
    jct_timer_start(&r.clock, &t[i], t0 + (uint64_t)i * 1000, on_fire);
  r.left = N - stopped;
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_uint_eq(r.fired, N - stopped);
  ck_assert_uint_eq(r.out_of_order, 0);
  ck_assert_uint_eq(r.clock.lateness.count, N - stopped);
  for (int i = 0; i < N; i++)
    ck_assert(!jct_timer_active(&t[i]));
  jct_clock_close(&r.clock, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  free(t);
}
END_TEST

/* Timers due together fire in the order they were started, and a timer
 * may restart itself from its callback. */
static unsigned fired_order[8], nfired;
static void record(jct_timer_t *t, uint64_t now_ns) {
  (void)now_ns;
  fired_order[nfired++] = *(unsigned *)t->data;
}

START_TEST(ties_in_start_order) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  jct_clock_t c;
  ck_assert_int_eq(jct_clock_init(&c, &loop), 0);
  jct_timer_t t[5];
  unsigned id[5];
  uint64_t due = jct_now_ns() - 1000; /* already due */
  nfired = 0;
  for (unsigned i = 0; i < 5; i++) {
    id[i] = i;
    t[i].slot = 0;
    t[i].data = &id[i];
  }
  for (unsigned i = 0; i < 5; i++)
    jct_timer_start(&c, &t[(i * 3) % 5], due, record);
  ck_assert_uint_eq(jct_clock_run_due(&c), 5);
  for (unsigned i = 0; i < 5; i++)
    ck_assert_uint_eq(fired_order[i], (i * 3) % 5);
  ck_assert_uint_eq(jct_clock_run_due(&c), 0);
  jct_clock_close(&c, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

START_TEST(lateness_quantiles) {
  jct_lateness_t *l = calloc(1, sizeof *l);
  ck_assert_uint_eq(jct_lateness_quantile_ns(l, 0.5), 0);
  for (uint64_t v = 1; v <= 100000; v++)
    jct_lateness_record(l, v * 10); /* 10 ns .. 1 ms */
  uint64_t p50 = jct_lateness_quantile_ns(l, 0.5), p99 = jct_lateness_quantile_ns(l, 0.99);
  ck_assert_uint_ge(p50, 500000 - 500000 / 16);
  ck_assert_uint_le(p50, 500000);
  ck_assert_uint_ge(p99, 990000 - 990000 / 16);
  ck_assert_uint_le(p99, 990000);
  ck_assert_uint_eq(jct_lateness_quantile_ns(l, 1.0), 1000000);
  ck_assert_uint_eq(l->max_ns, 1000000);
  jct_lateness_record(l, UINT64_MAX); /* the top bucket holds anything */
  ck_assert_uint_eq(l->max_ns, UINT64_MAX);
  free(l);
}
END_TEST

/* Idle-time skipping's arithmetic: a jump only when skipping is on, the
 * world is quiet and the earliest timer is more than the minimum away; then
 * exactly to it. */
START_TEST(idle_jump_arithmetic) {
  const uint64_t now = 5000000000u, min = JCT_CLOCK_SKIP_MIN_NS;
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now + 4295000000u, min, true), 4295000000u);
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now + 4295000000u, min, false), 0); /* busy */
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now + 4295000000u, 0, true), 0);    /* off */
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now + min, min, true), 0); /* not worth it */
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now + min + 1, min, true), min + 1);
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now, min, true), 0);        /* due now */
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, now - 1000, min, true), 0); /* overdue */
  ck_assert_uint_eq(jct_clock_idle_jump_ns(now, UINT64_MAX, min, true), UINT64_MAX - now);
}
END_TEST

typedef struct {
  uint64_t due_ns, fired_at_ns;
  unsigned fired;
} far_t;

static void on_far(jct_timer_t *t, uint64_t now_ns) {
  far_t *f = t->data;
  f->fired++;
  f->fired_at_ns = now_ns;
}

static bool busy_flag(void *arg) {
  return *(bool *)arg;
}

/* A clock with a timer 2 s away never jumps while anything says it is busy
 * (a predicate, a frame in flight), nor when skipping is off; once all is
 * quiet it jumps exactly to the timer, fires it, and adds the jump to the
 * offset of jct_now_ns() and to skipped_ns, in no wall time. */
START_TEST(skip_only_when_quiescent) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  jct_clock_t c;
  ck_assert_int_eq(jct_clock_init(&c, &loop), 0);
  bool busy = true;
  ck_assert_int_eq(jct_clock_add_busy(&c, busy_flag, &busy), 0);
  far_t f = {0};
  jct_timer_t t = {.data = &f};
  uint64_t wall0 = jct_wall_ns(), off0 = jct_clock_offset_ns();
  f.due_ns = jct_now_ns() + 2000000000u;
  jct_timer_start(&c, &t, f.due_ns, on_far);

  ck_assert_uint_eq(jct_clock_skip_idle(&c), 0); /* skipping off (the default) */
  busy = false;
  ck_assert_uint_eq(jct_clock_skip_idle(&c), 0); /* quiet, but still off */
  jct_clock_set_skip(&c, JCT_CLOCK_SKIP_MIN_NS);
  busy = true;
  ck_assert_uint_eq(jct_clock_skip_idle(&c), 0); /* a predicate says busy */
  busy = false;
  jct_clock_flight(&c, 3);  /* 3 frames handed to the kernel */
  jct_clock_flight(&c, -2); /* 2 read back: one in flight */
  ck_assert_uint_eq(jct_clock_skip_idle(&c), 0);
  ck_assert_uint_eq(jct_clock_offset_ns(), off0);
  ck_assert_uint_eq(c.skipped_ns, 0);
  ck_assert_uint_eq(f.fired, 0);
  ck_assert(jct_timer_active(&t));

  jct_clock_flight(&c, -1); /* the last one read: quiescent */
  uint64_t before = jct_now_ns();
  uint64_t jump = jct_clock_skip_idle(&c);
  ck_assert_uint_gt(jump, 0);
  ck_assert_uint_le(jump, f.due_ns - before);             /* not past the timer */
  ck_assert_uint_ge(jump, f.due_ns - before - 50000000u); /* to it, within 50 ms */
  ck_assert_uint_eq(jct_clock_offset_ns() - off0, jump);  /* the offset took it all */
  ck_assert_uint_eq(c.skipped_ns, jump);
  ck_assert_uint_eq(c.jumps, 1);
  ck_assert_uint_eq(f.fired, 1); /* and the timer fired */
  ck_assert_uint_ge(f.fired_at_ns, f.due_ns);
  ck_assert_uint_lt(f.fired_at_ns - f.due_ns, 50000000u);
  ck_assert_uint_ge(jct_now_ns(), f.due_ns);
  ck_assert_uint_lt(jct_wall_ns() - wall0, 500000000u); /* 2 s emulated, no wall time */
  uint64_t w = jct_wall_ns(), n = jct_now_ns();         /* now is wall + offset */
  ck_assert_uint_ge(n - w, jct_clock_offset_ns());
  ck_assert_uint_lt(n - w - jct_clock_offset_ns(), 10000000u);

  /* Nothing due: nothing to jump to. A timer closer than the minimum: slept through. */
  ck_assert_uint_eq(jct_clock_skip_idle(&c), 0);
  jct_timer_start(&c, &t, jct_now_ns() + JCT_CLOCK_SKIP_MIN_NS / 2, on_far);
  ck_assert_uint_eq(jct_clock_skip_idle(&c), 0);
  jct_timer_stop(&c, &t);

  /* Removed, a predicate no longer holds skipping back. */
  busy = true;
  jct_clock_remove_busy(&c, busy_flag, &busy);
  jct_timer_start(&c, &t, jct_now_ns() + 1000000000u, on_far);
  ck_assert_uint_gt(jct_clock_skip_idle(&c), 0);
  ck_assert_uint_eq(f.fired, 2);
  jct_clock_close(&c, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

/* One loop, dilated by tdf: a timer quiet_ns of emulated time away fires
 * at once in a quiet world (under 0.5 s of wall time, the jump counted in
 * emulated ns); a busy world's timer busy_ns away waits its tdf x busy_ns
 * of wall time and skips nothing. */
static void skips_quiet_waits_busy(double tdf, uint64_t quiet_ns, uint64_t busy_ns) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  ck_assert_int_eq(jct_clock_set_tdf(tdf), 0);
  jct_clock_t c;
  ck_assert_int_eq(jct_clock_init(&c, &loop), 0);
  jct_clock_set_skip(&c, JCT_CLOCK_SKIP_MIN_NS);
  bool busy = false;
  ck_assert_int_eq(jct_clock_add_busy(&c, busy_flag, &busy), 0);
  far_t f = {0};
  jct_timer_t t = {.data = &f};
  uint64_t w0 = jct_wall_ns(), now0 = jct_now_ns();
  f.due_ns = now0 + quiet_ns;
  jct_timer_start(&c, &t, f.due_ns, on_far);
  while (!f.fired)
    uv_run(&loop, UV_RUN_ONCE);
  ck_assert_uint_lt(jct_wall_ns() - w0, 500000000u);
  ck_assert_uint_ge(jct_now_ns() - now0, quiet_ns);
  ck_assert_uint_ge(c.skipped_ns, quiet_ns - (uint64_t)(500000000.0 / tdf));
  ck_assert_uint_le(c.skipped_ns, quiet_ns);
  busy = true;
  uint64_t skipped = c.skipped_ns;
  w0 = jct_wall_ns();
  jct_timer_start(&c, &t, jct_now_ns() + busy_ns, on_far);
  while (f.fired < 2)
    uv_run(&loop, UV_RUN_ONCE);
  ck_assert_uint_ge(jct_wall_ns() - w0, (uint64_t)(tdf * (double)busy_ns));
  ck_assert_uint_eq(c.skipped_ns, skipped);
  jct_clock_set_skip(&c, 0);
  jct_clock_close(&c, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  ck_assert_int_eq(jct_clock_set_tdf(1), 0);
}

/* The loop skips by itself: one turn of uv_run with a quiet world and a
 * timer 3 s away fires it at once; a busy world sleeps 300 ms until it. */
START_TEST(loop_skips_idle_turns) {
  skips_quiet_waits_busy(1, 3000000000u, 300000000u);
}
END_TEST

/* Time dilation (clock.h): with F set, jct_now_ns() runs at 1/F of wall
 * time, continuously across the change; F below 1, 0, NaN or above the
 * maximum are refused and leave F as it was. */
START_TEST(dilation_now_runs_slow) {
  ck_assert_int_eq(jct_clock_set_tdf(0.5), JCT_EINVAL);
  ck_assert_int_eq(jct_clock_set_tdf(0), JCT_EINVAL);
  ck_assert_int_eq(jct_clock_set_tdf(NAN), JCT_EINVAL);
  ck_assert_int_eq(jct_clock_set_tdf(JCT_CLOCK_MAX_TDF * 2), JCT_EINVAL);
  ck_assert(jct_clock_tdf() == 1);
  uint64_t before = jct_now_ns();
  ck_assert_int_eq(jct_clock_set_tdf(8), 0);
  ck_assert(jct_clock_tdf() == 8);
  uint64_t v0 = jct_now_ns(), w0 = jct_wall_ns();
  ck_assert_uint_ge(v0, before);             /* never back */
  ck_assert_uint_lt(v0 - before, 10000000u); /* nor a jump */
  struct timespec ts = {0, 80000000};        /* 80 ms of wall time */
  nanosleep(&ts, NULL);
  uint64_t v1 = jct_now_ns(), w1 = jct_wall_ns();
  double ratio = (double)(w1 - w0) / (double)(v1 - v0);
  ck_assert_msg(fabs(ratio - 8) < 0.08, "wall / emulated %.4f, not 8", ratio);
  /* Wall and emulated instants map both ways, rounded the safe way. */
  uint64_t w = jct_wall_ns(), v = jct_clock_virtual_ns(w);
  ck_assert_uint_ge(jct_clock_wall_at_ns(v), w - 8);
  ck_assert_uint_le(jct_clock_wall_at_ns(v), w);
  ck_assert_uint_ge(jct_clock_virtual_ns(jct_clock_wall_at_ns(v + 1000)), v + 1000);
  ck_assert_uint_eq(jct_clock_wall_span_ns(8000000), 1000000);
  /* A factor not a power of two is fine; back to 1, continuous again. */
  ck_assert_int_eq(jct_clock_set_tdf(3), 0);
  nanosleep(&ts, NULL);
  uint64_t v2 = jct_now_ns();
  ck_assert_int_eq(jct_clock_set_tdf(1), 0);
  uint64_t v3 = jct_now_ns();
  ck_assert_uint_ge(v3, v2);
  ck_assert_uint_lt(v3 - v2, 10000000u);
  ck_assert_uint_eq(jct_clock_wall_span_ns(8000000), 8000000);
}
END_TEST

/* A timer due d emulated ns away fires F * d later in wall time, and its
 * lateness is recorded in emulated ns (wall lateness / F). */
START_TEST(dilation_timers_fire_f_times_later) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  ck_assert_int_eq(jct_clock_set_tdf(16), 0);
  jct_clock_t c;
  ck_assert_int_eq(jct_clock_init(&c, &loop), 0);
  jct_clock_set_spin_ns(&c, 1000000); /* 1 ms of wall time: 62.5 us emulated */
  far_t f = {0};
  jct_timer_t t = {.data = &f};
  const uint64_t d = 5000000; /* 5 ms emulated: 80 ms of wall time */
  uint64_t w0 = jct_wall_ns();
  f.due_ns = jct_now_ns() + d;
  jct_timer_start(&c, &t, f.due_ns, on_far);
  while (!f.fired)
    uv_run(&loop, UV_RUN_ONCE);
  double wall = (double)(jct_wall_ns() - w0);
  ck_assert_msg(wall >= 16.0 * 5e6 && wall < 16.0 * 5e6 + 30e6, "fired after %.1f ms of wall time",
                wall / 1e6);
  ck_assert_uint_ge(f.fired_at_ns, f.due_ns);
  ck_assert_uint_eq(c.lateness.count, 1);
  ck_assert_uint_lt(c.lateness.max_ns, 30000000u / 16); /* emulated ns */
  jct_clock_close(&c, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  ck_assert_int_eq(jct_clock_set_tdf(1), 0);
}
END_TEST

/* Skipping keeps working under dilation: at F = 1024 a quiet world's
 * timer 2 s of emulated time away (34 min of wall time) fires at once, the
 * skip counted in emulated ns; a busy world's timer 100 us away waits its
 * dilated 102 ms. */
START_TEST(dilation_skips_idle_time) {
  skips_quiet_waits_busy(1024, 2000000000u, 100000u);
}
END_TEST

Suite *clock_suite(void) {
  Suite *s = suite_create("clock");
  TCase *core = tcase_create("core");
  tcase_add_test(core, order_stop_restart);
  tcase_add_test(core, ties_in_start_order);
  tcase_add_test(core, lateness_quantiles);
  suite_add_tcase(s, core);
  TCase *skip = tcase_create("skip");
  tcase_add_test(skip, idle_jump_arithmetic);
  tcase_add_test(skip, skip_only_when_quiescent);
  tcase_add_test(skip, loop_skips_idle_turns);
  suite_add_tcase(s, skip);
  TCase *dil = tcase_create("dilation");
  tcase_add_test(dil, dilation_now_runs_slow);
  tcase_add_test(dil, dilation_timers_fire_f_times_later);
  tcase_add_test(dil, dilation_skips_idle_time);
  suite_add_tcase(s, dil);
  return s;
}
