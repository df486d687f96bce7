/* The nanosecond clock and event queue that drive the fabric (DESIGN.md,
 * decision 1).
 *
 * libuv's timers tick in milliseconds; serialization of a 1500-byte frame
 * at 100 Gbit/s takes 120 ns. So all pacing, holds and timeouts go through
 * one min-heap of timers on CLOCK_MONOTONIC, which arms one timerfd
 * (TFD_TIMER_ABSTIME) watched by uv_poll in the caller's libuv loop. The
 * thread's timer slack is set to 1 ns (prctl PR_SET_TIMERSLACK) so the
 * kernel does not coalesce wake-ups by its default 50 µs.
 *
 * Every firing records its lateness (firing time minus due time) in a
 * log-linear histogram (1/16 relative precision) so that runs can report
 * p50/p99/max and be declared invalid when the loop, not the emulated link,
 * sets the pace.
 *
 * Spinning: programming a timerfd costs a system call and, in a virtual
 * machine, an exit to the hypervisor (20 us here), and sleeping until it
 * fires costs a context switch. With spin_ns set, when the earliest timer
 * is due within spin_ns the loop does not sleep at all: a uv_idle handle
 * keeps it polling (epoll with a zero timeout) and firing timers as they
 * come due. The process then looks busy all the time: judge the loop by
 * its lateness, not its CPU time.
 *
 * Timers are handles the caller embeds and owns, as uv_timer_t: start,
 * stop and restart them freely; the clock never allocates per timer.
 */
#ifndef JCTLAB_CLOCK_H
#define JCTLAB_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct jct_timer jct_timer_t;
typedef struct jct_clock jct_clock_t;

/* Called with the timer (already stopped: it may restart itself) and the
 * time at which it fired. */
typedef void (*jct_timer_cb)(jct_timer_t *t, uint64_t now_ns);

struct jct_timer {
  uint64_t due_ns;
  jct_timer_cb cb;
  void *data;   /* the caller's */
  size_t slot;  /* heap position + 1; 0 when not started */
  uint64_t seq; /* start order, so timers due together fire first-started first */
};

#define JCT_LATENCY_BUCKETS (64 * 16)

typedef struct {
  uint64_t count;
  uint64_t max_ns;
  uint32_t bucket[JCT_LATENCY_BUCKETS];
} jct_lateness_t;

struct jct_clock {
  uv_loop_t *loop;
  uv_poll_t poll;
  uv_idle_t idle;
  uint64_t spin_ns; /* 0: never spin */
  bool spinning;
  int tfd;
  jct_timer_t **heap;
  size_t n, cap;
  uint64_t seq;
  uint64_t armed_ns; /* what the timerfd is set to, 0 when disarmed */
  jct_lateness_t lateness;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t jct_now_ns(void);

/* Set up the clock on loop. Errors: JCT_EIO (timerfd or uv_poll failed),
 * JCT_ENOMEM. */
int jct_clock_init(jct_clock_t *c, uv_loop_t *loop);

/* Start (or restart) t to fire at due_ns (absolute, jct_now_ns() scale);
 * a due time in the past fires on the next loop iteration. */
void jct_timer_start(jct_clock_t *c, jct_timer_t *t, uint64_t due_ns, jct_timer_cb cb);
void jct_timer_stop(jct_clock_t *c, jct_timer_t *t);
static inline bool jct_timer_active(const jct_timer_t *t) {
  return t->slot != 0;
}

/* Spin instead of sleeping when the next timer is due within spin_ns
 * (0 turns spinning off). */
void jct_clock_set_spin_ns(jct_clock_t *c, uint64_t spin_ns);

/* Fire every timer due by now. The poll callback does this; I/O handlers
 * that may have let time pass can call it too. Returns the number fired. */
size_t jct_clock_run_due(jct_clock_t *c);

/* Lateness percentiles (q in [0,1]) from the histogram, in ns; 0 when empty. */
uint64_t jct_lateness_quantile_ns(const jct_lateness_t *l, double q);
void jct_lateness_record(jct_lateness_t *l, uint64_t late_ns);

/* Stop everything and close the clock's two handles (libuv calls close_cb
 * once for each; the clock's memory may be released only after both). */
void jct_clock_close(jct_clock_t *c, uv_close_cb close_cb);

#endif
