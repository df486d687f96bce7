/* The nanosecond event queue on a timerfd (include/jctlab/clock.h).
 *
 * A binary min-heap of timer pointers ordered by (due_ns, seq); each timer
 * knows its slot, so stop and restart are O(log n). The timerfd is re-armed
 * only when the earliest due time changes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "jctlab/clock.h"
#include "jctlab/error.h"

/* Idle-time skipping's virtual offset: one per process, as jct_now_ns()
 * is; only the loop's thread moves it. */
static uint64_t offset_ns;

/* Time dilation (clock.h): since the wall instant epoch_wall the emulated
 * world's time runs tdf times slower; epoch_virt is where it stood then,
 * without the offset. Before any jct_clock_set_tdf() both epochs are 0 and
 * tdf 1: jct_now_ns() is CLOCK_MONOTONIC plus the offset, as it was. */
static double tdf = 1;
static uint64_t epoch_wall, epoch_virt;

uint64_t jct_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t jct_clock_offset_ns(void) {
  return __atomic_load_n(&offset_ns, __ATOMIC_RELAXED);
}

uint64_t jct_clock_virtual_ns(uint64_t wall_ns) {
  uint64_t off = jct_clock_offset_ns();
  if (wall_ns <= epoch_wall)
    return epoch_virt + off - (epoch_wall - wall_ns); /* a stamp from before */
  uint64_t d = wall_ns - epoch_wall;
  /* Rounded down: never ahead of the wall instant's own emulated time. */
  return epoch_virt + (tdf == 1 ? d : (uint64_t)((double)d / tdf)) + off;
}

uint64_t jct_now_ns(void) {
  return jct_clock_virtual_ns(jct_wall_ns());
}

uint64_t jct_clock_wall_at_ns(uint64_t virt_ns) {
  uint64_t off = jct_clock_offset_ns();
  uint64_t v = virt_ns > off ? virt_ns - off : 0;
  if (v <= epoch_virt) return epoch_wall > v ? epoch_wall - (epoch_virt - v) : 1;
  uint64_t d = v - epoch_virt;
  /* Rounded up: a timer armed there finds its due time reached. */
  return epoch_wall + (tdf == 1 ? d : (uint64_t)ceil((double)d * tdf));
}

double jct_clock_tdf(void) {
  return tdf;
}

uint64_t jct_clock_wall_span_ns(uint64_t wall_ns) {
  return tdf == 1 ? wall_ns : (uint64_t)((double)wall_ns / tdf);
}

int jct_clock_set_tdf(double f) {
  if (!(f >= 1 && f <= JCT_CLOCK_MAX_TDF)) return JCT_EINVAL;
  uint64_t w = jct_wall_ns();
  uint64_t v = jct_clock_virtual_ns(w) - jct_clock_offset_ns();
  epoch_wall = w;
  epoch_virt = v;
  tdf = f;
  return 0;
}

/* Log-linear buckets: values below 16 ns get their own bucket; above, 16
 * sub-buckets per power of two. */
static size_t bucket_of(uint64_t v) {
  if (v < 16) return (size_t)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);
  size_t sub = (size_t)(v >> (msb - 4)) & 15u;
  return (size_t)(msb - 3) * 16 + sub;
}

static uint64_t bucket_floor(size_t b) {
  if (b < 16) return b;
  unsigned msb = (unsigned)(b / 16) + 3;
  return (uint64_t)(16 + b % 16) << (msb - 4);
}

void jct_lateness_record(jct_lateness_t *l, uint64_t late_ns) {
  size_t b = bucket_of(late_ns);
  if (b >= JCT_LATENCY_BUCKETS) b = JCT_LATENCY_BUCKETS - 1;
  l->bucket[b]++;
  l->count++;
  if (late_ns > l->max_ns) l->max_ns = late_ns;
}

uint64_t jct_lateness_quantile_ns(const jct_lateness_t *l, double q) {
  if (!l->count) return 0;
  if (q >= 1.0) return l->max_ns;
  uint64_t rank = (uint64_t)(q * (double)(l->count - 1)) + 1, seen = 0;
  for (size_t b = 0; b < JCT_LATENCY_BUCKETS; b++) {
    seen += l->bucket[b];
    if (seen >= rank) {
      uint64_t v = bucket_floor(b);
      return v < l->max_ns ? v : l->max_ns;
    }
  }
  return l->max_ns;
}

static bool before(const jct_timer_t *a, const jct_timer_t *b) {
  return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void place(jct_clock_t *c, size_t i, jct_timer_t *t) {
  c->heap[i] = t;
  t->slot = i + 1;
}

static void sift_up(jct_clock_t *c, size_t i) {
  jct_timer_t *t = c->heap[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!before(t, c->heap[p])) break;
    place(c, i, c->heap[p]);
    i = p;
  }
  place(c, i, t);
}

static void sift_down(jct_clock_t *c, size_t i) {
  jct_timer_t *t = c->heap[i];
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    const jct_timer_t *best = t;
    if (l < c->n && before(c->heap[l], best)) m = l, best = c->heap[l];
    if (l + 1 < c->n && before(c->heap[l + 1], best)) m = l + 1;
    if (m == i) break;
    place(c, i, c->heap[m]);
    i = m;
  }
  place(c, i, t);
}

/* Reprogramming a timerfd costs a system call and, in a VM, an exit to
 * the hypervisor (about 20 us measured here): far more than a spurious
 * wake-up. So the timerfd is moved only to an earlier time; when the
 * earliest timer is stopped or fires, the old setting is left to expire and
 * the wake-up re-arms for what is due then. */
static void on_idle(uv_idle_t *h);

/* Spin (keep the loop polling) while the earliest timer is close. */
static bool spin(jct_clock_t *c, uint64_t due) {
  /* spin_ns is wall time: the emulated time it covers is spin_ns / F. */
  bool close_by = due && c->spin_ns && due <= jct_now_ns() + jct_clock_wall_span_ns(c->spin_ns);
  if (close_by && !c->spinning) uv_idle_start(&c->idle, on_idle);
  if (!close_by && c->spinning) uv_idle_stop(&c->idle);
  c->spinning = close_by;
  return close_by;
}

static void arm(jct_clock_t *c) {
  uint64_t due = c->n ? c->heap[0]->due_ns : 0;
  if (spin(c, due)) return;
  if (!due || (c->armed_ns && c->armed_ns <= due)) return;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  /* The timerfd keeps real time: the wall instant at which the emulated
   * world reaches the due time (less the offset, times F since the
   * epoch; due 0 would disarm: a timer due before it all fires at 1 ns). */
  uint64_t real = jct_clock_wall_at_ns(due);
  if (!real) real = 1;
  its.it_value.tv_sec = (time_t)(real / 1000000000u);
  its.it_value.tv_nsec = (long)(real % 1000000000u);
  timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL);
  c->armed_ns = due;
}

void jct_timer_stop(jct_clock_t *c, jct_timer_t *t) {
  if (!t->slot) return;
  size_t i = t->slot - 1;
  t->slot = 0;
  c->n--;
  if (i != c->n) {
    place(c, i, c->heap[c->n]);
    if (i > 0 && before(c->heap[i], c->heap[(i - 1) / 2]))
      sift_up(c, i);
    else
      sift_down(c, i);
  }
}

void jct_timer_start(jct_clock_t *c, jct_timer_t *t, uint64_t due_ns, jct_timer_cb cb) {
  jct_timer_stop(c, t);
  if (c->n == c->cap) {
    size_t ncap = c->cap ? c->cap * 2 : 256;
    jct_timer_t **h = realloc(c->heap, ncap * sizeof *h);
    if (!h) abort(); /* a timer that cannot be queued would hang the run */
    c->heap = h, c->cap = ncap;
  }
  t->due_ns = due_ns ? due_ns : 1;
  t->cb = cb;
  t->seq = c->seq++;
  place(c, c->n++, t);
  sift_up(c, c->n - 1);
  if (c->heap[0] == t) arm(c);
}

size_t jct_clock_run_due(jct_clock_t *c) {
  size_t fired = 0;
  uint64_t now = jct_now_ns();
  while (c->n && c->heap[0]->due_ns <= now) {
    jct_timer_t *t = c->heap[0];
    jct_lateness_record(&c->lateness, now - t->due_ns);
    jct_timer_stop(c, t);
    t->cb(t, now);
    fired++;
    if ((fired & 63) == 0) now = jct_now_ns();
  }
  arm(c);
  return fired;
}

static void on_idle(uv_idle_t *h) {
  jct_clock_run_due(h->data);
}

uint64_t jct_clock_idle_jump_ns(uint64_t now_ns, uint64_t next_due_ns, uint64_t min_jump_ns,
                                bool quiet) {
  if (!min_jump_ns || !quiet || next_due_ns <= now_ns) return 0;
  return next_due_ns - now_ns > min_jump_ns ? next_due_ns - now_ns : 0;
}

static bool quiescent(const jct_clock_t *c) {
  if (c->in_flight != 0) return false;
  for (size_t i = 0; i < c->nbusy; i++)
    if (c->busy[i].cb(c->busy[i].arg)) return false;
  return true;
}

uint64_t jct_clock_skip_idle(jct_clock_t *c) {
  if (!c->skip_min_ns || !c->n) return 0;
  uint64_t now = jct_now_ns(), due = c->heap[0]->due_ns;
  /* skip_min_ns is wall time (an idle time worth sleeping through): in
   * emulated time it is skip_min_ns / F. */
  uint64_t min = jct_clock_wall_span_ns(c->skip_min_ns);
  if (!min) min = 1;
  /* Cheap test first: most turns have a timer close by. */
  if (!jct_clock_idle_jump_ns(now, due, min, true)) return 0;
  uint64_t jump = jct_clock_idle_jump_ns(now, due, min, quiescent(c));
  if (!jump) return 0;
  __atomic_store_n(&offset_ns, offset_ns + jump, __ATOMIC_RELAXED);
  c->skipped_ns += jump;
  c->jumps++;
  c->armed_ns = 0; /* its real time moved: set it again */
  jct_clock_run_due(c);
  /* The loop was about to sleep (this runs before it polls): keep it
   * polling for one more turn, so that whoever waits on it sees what the
   * timers just did instead of sleeping until the next event. */
  if (!c->spinning) uv_idle_start(&c->idle, on_idle);
  c->spinning = true;
  return jump;
}

static void on_prepare(uv_prepare_t *h) {
  jct_clock_skip_idle(h->data);
}

void jct_clock_set_skip(jct_clock_t *c, uint64_t min_jump_ns) {
  c->skip_min_ns = min_jump_ns;
  if (min_jump_ns)
    uv_prepare_start(&c->prepare, on_prepare);
  else
    uv_prepare_stop(&c->prepare);
}

int jct_clock_add_busy(jct_clock_t *c, jct_clock_busy_cb busy, void *arg) {
  if (c->nbusy == JCT_CLOCK_MAX_BUSY) return JCT_ENOMEM;
  c->busy[c->nbusy].cb = busy;
  c->busy[c->nbusy].arg = arg;
  c->nbusy++;
  return 0;
}

void jct_clock_remove_busy(jct_clock_t *c, jct_clock_busy_cb busy, void *arg) {
  for (size_t i = 0; i < c->nbusy; i++)
    if (c->busy[i].cb == busy && c->busy[i].arg == arg) {
      c->busy[i] = c->busy[--c->nbusy];
      return;
    }
}

void jct_clock_set_spin_ns(jct_clock_t *c, uint64_t spin_ns) {
  c->spin_ns = spin_ns;
  arm(c);
}

static void on_timerfd(uv_poll_t *h, int status, int events) {
  (void)events;
  jct_clock_t *c = h->data;
  if (status < 0) return;
  uint64_t expirations;
  ssize_t r = read(c->tfd, &expirations, sizeof expirations);
  (void)r; /* EAGAIN when a restart already consumed the expiry */
  c->armed_ns = 0;
  jct_clock_run_due(c);
}

int jct_clock_init(jct_clock_t *c, uv_loop_t *loop) {
  memset(c, 0, sizeof *c);
  c->loop = loop;
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (c->tfd < 0) return JCT_EIO;
  if (uv_poll_init(loop, &c->poll, c->tfd) || uv_poll_start(&c->poll, UV_READABLE, on_timerfd)) {
    close(c->tfd);
    return JCT_EIO;
  }
  c->poll.data = c;
  uv_idle_init(loop, &c->idle);
  c->idle.data = c;
  uv_prepare_init(loop, &c->prepare);
  c->prepare.data = c;
  return 0;
}

void jct_clock_close(jct_clock_t *c, uv_close_cb close_cb) {
  while (c->n)
    jct_timer_stop(c, c->heap[0]);
  free(c->heap);
  c->heap = NULL;
  c->cap = 0;
  uv_poll_stop(&c->poll);
  uv_close((uv_handle_t *)&c->poll, close_cb);
  uv_close((uv_handle_t *)&c->idle, close_cb);
  uv_close((uv_handle_t *)&c->prepare, close_cb);
  close(c->tfd);
  c->tfd = -1;
}
