/* The nanosecond event queue: order, stop/restart, lateness statistics. */
#include <stdlib.h>

#include "jctlab/clock.h"
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

Suite *clock_suite(void) {
  Suite *s = suite_create("clock");
  TCase *core = tcase_create("core");
  tcase_add_test(core, order_stop_restart);
  tcase_add_test(core, ties_in_start_order);
  tcase_add_test(core, lateness_quantiles);
  suite_add_tcase(s, core);
  return s;
}
