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
 *
 * Idle-time skipping (DESIGN.md decision 8): jct_now_ns() is
 * CLOCK_MONOTONIC plus one process-wide virtual offset, and the timerfd is
 * armed at (due - offset) in real time. With skipping on
 * (jct_clock_set_skip), just before the loop would sleep the clock asks
 * whether the emulated world is quiescent: no frame in flight between the
 * fabric and the ranks (jct_clock_flight: each sender adds what it handed
 * to the kernel, each receiver takes away what it read, so 0 is exact),
 * and every registered busy predicate false (the switch's queues and
 * wires empty, no injector holding a frame, no rank with something to
 * send). Then everything left is a timer (a retransmit timeout, a
 * schedule's gap) and nothing can happen before the earliest one: when it
 * is more than min_jump_ns away the clock jumps to it, adding the jump to
 * the offset and to skipped_ns, and fires it. Nothing emulated can tell:
 * the time between is time in which nothing happened. Only a world the
 * process emulates whole may skip (uroce); real kernels and VMs (verbs,
 * the lab, agents) keep real time and never turn it on.
 *
 * Time dilation (DESIGN.md decision 8; Gupta et al., "To Infinity and
 * Beyond: Time-Warped Network Emulation", NSDI 2006): with a factor F set
 * (jct_clock_set_tdf) at wall instant e, the emulated world's time runs F
 * times slower than wall time: jct_now_ns() = v_e + (mono - e) / F +
 * offset, and a timer due at emulated time d is armed at the wall instant
 * e + (d - offset - v_e) * F (jct_clock_wall_at_ns). Everything that keeps
 * time by jct_now_ns() and jct_timer (the switch's serialization and
 * propagation, uroce's retransmit and DCQCN timers, the executor's gaps,
 * the injectors, the PFC watchdog, a repetition's limit) is thereby
 * dilated in one place: a link of rate R runs at R / F in wall time, and
 * every time it reports is emulated time, so / F. Sizes are untouched.
 * Lateness is recorded in emulated ns (wall lateness / F), so the
 * loop-bound threshold, one packet's time, scales by F by itself. The spin
 * window and the skipping minimum are wall-time notions: the clock divides
 * them by F. jct_wall_ns() stays wall time. F is per process, as the
 * offset; setting it keeps jct_now_ns() continuous.
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

/* True while what it watches may still make something happen that no
 * timer stands for (idle-time skipping). */
typedef bool (*jct_clock_busy_cb)(void *arg);

#define JCT_CLOCK_MAX_BUSY 8
/* The shortest jump worth making (idle-time skipping): a shorter idle time
 * is slept through, as it was. */
#define JCT_CLOCK_SKIP_MIN_NS 200000u

struct jct_clock {
  uv_loop_t *loop;
  uv_poll_t poll;
  uv_idle_t idle;
  uv_prepare_t prepare; /* idle-time skipping, before the loop sleeps */
  uint64_t spin_ns; /* 0: never spin */
  bool spinning;
  int tfd;
  jct_timer_t **heap;
  size_t n, cap;
  uint64_t seq;
  uint64_t armed_ns; /* what the timerfd is set to, 0 when disarmed */
  jct_lateness_t lateness;
  /* Idle-time skipping. */
  uint64_t skip_min_ns; /* 0: off */
  uint64_t skipped_ns;  /* jumped by this clock, in all */
  uint64_t jumps;
  int64_t in_flight; /* frames handed to the kernel and not yet read back */
  size_t nbusy;
  struct {
    jct_clock_busy_cb cb;
    void *arg;
  } busy[JCT_CLOCK_MAX_BUSY];
};

/* The emulated world's time: CLOCK_MONOTONIC in nanoseconds plus the
 * virtual offset idle-time skipping has added (0 in a process that never
 * skipped). Never goes back. */
uint64_t jct_now_ns(void);

/* CLOCK_MONOTONIC in nanoseconds, without the offset: for wall time
 * (how long a run took here) and for times compared with other processes'. */
uint64_t jct_wall_ns(void);

/* The process-wide virtual offset, in ns (what jct_now_ns() adds). */
uint64_t jct_clock_offset_ns(void);

/* The largest time-dilation factor: a 1 Tbit/s link dilated to 1 Mbit/s. */
#define JCT_CLOCK_MAX_TDF 1048576.0

/* Set the process's time-dilation factor F (1: none, as it starts), from
 * now on; jct_now_ns() stays continuous. Call it from the loop's thread
 * with no timer of any clock started (timers keep their emulated due
 * times, and an armed timerfd its wall time). Errors: JCT_EINVAL (F below
 * 1, above JCT_CLOCK_MAX_TDF, or not a number). */
int jct_clock_set_tdf(double f);

/* The process's time-dilation factor (1: none). */
double jct_clock_tdf(void);

/* The emulated time of a CLOCK_MONOTONIC instant wall_ns (a kernel's
 * timestamp brought to the monotonic clock), rounded down: jct_now_ns()
 * is jct_clock_virtual_ns(jct_wall_ns()). */
uint64_t jct_clock_virtual_ns(uint64_t wall_ns);

/* The CLOCK_MONOTONIC instant at which jct_now_ns() reaches virt_ns
 * (rounded up), as long as no jump intervenes. */
uint64_t jct_clock_wall_at_ns(uint64_t virt_ns);

/* A span of wall time in emulated ns: wall_ns / F (a wall-time notion --
 * links coming up, the spin window -- used against jct_now_ns()). */
uint64_t jct_clock_wall_span_ns(uint64_t wall_ns);

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

/* Idle-time skipping: jump over idle times longer than min_jump_ns
 * (JCT_CLOCK_SKIP_MIN_NS is the default; 0 turns skipping off, as it
 * starts). */
void jct_clock_set_skip(jct_clock_t *c, uint64_t min_jump_ns);

/* Register busy(arg) (skipping waits while any is true) or remove it.
 * Errors: JCT_ENOMEM (JCT_CLOCK_MAX_BUSY registered already). */
int jct_clock_add_busy(jct_clock_t *c, jct_clock_busy_cb busy, void *arg);
void jct_clock_remove_busy(jct_clock_t *c, jct_clock_busy_cb busy, void *arg);

/* Frames handed to the kernel (n > 0, by their sender) or read from it
 * (n < 0, by their receiver) between the fabric and the ranks: skipping
 * waits until the sum is 0. Count only frames the other side counts too. */
static inline void jct_clock_flight(jct_clock_t *c, int64_t n) {
  c->in_flight += n;
}

/* How far the clock would jump now: the time to the earliest timer when
 * skipping is on, the world is quiescent (quiet: nothing in flight and no
 * busy predicate true) and that time exceeds the minimum; else 0. */
uint64_t jct_clock_idle_jump_ns(uint64_t now_ns, uint64_t next_due_ns, uint64_t min_jump_ns,
                                bool quiet);

/* Skip idle time now if there is any to skip (the loop does this itself
 * before it sleeps): advance the offset to the earliest timer's due time
 * and fire what is due. Returns the jump in ns (0: none). */
uint64_t jct_clock_skip_idle(jct_clock_t *c);

/* Lateness percentiles (q in [0,1]) from the histogram, in ns; 0 when empty. */
uint64_t jct_lateness_quantile_ns(const jct_lateness_t *l, double q);
void jct_lateness_record(jct_lateness_t *l, uint64_t late_ns);

/* Stop everything and close the clock's three handles (libuv calls
 * close_cb once for each; the clock's memory may be released only after
 * all three). */
void jct_clock_close(jct_clock_t *c, uv_close_cb close_cb);

#endif
