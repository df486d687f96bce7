/* A worker task of `jctlab rank` (rank_world.h): one rank of the schedule,
 * its QP ends in the namespace rank 0 made for it, driven over MPI.
 *
 * Between repetitions the task sleeps in its event loop, waking every
 * POLL_MS to look for rank 0's next message (MPI's own blocking calls spin,
 * and a spinning task would take the CPU the switch needs); during one it
 * runs its part until done, then reports. */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "rank_world.h"
#include "uroce_opts.h"
#ifdef JCT_HAVE_VERBS
#include "harness/lab/agent_host.h"
#include "harness/transport/rdma_sysfs.h"
#endif

#define POLL_MS 1
/* Spin for timers due this soon (clock.h): less than rank 0's session, as
 * every task of the host shares its CPUs with the switch. */
#define WORKER_SPIN_NS 200000u

typedef struct {
  uint32_t rank, size;
  jct__world_clock_t clock;
  jct__loop_t loop;
  uv_timer_t poll;
  jct_schedule_t *s;
  jct__rank_part_t part;
  jct_dcqcn_params_t dcqcn;
  uint32_t *sq_psn;
  jct__rank_run_t run;
  jct_rdma_opts_t want;   /* verbs: the counters named */
  jct_dev_counters_t dev; /* verbs: its device's counters at the repetition's start */
  uint64_t deadline_ns;
  uint64_t next_alive_ns;
  bool running, quit, broken;
} worker_t;

static void send_or_break(worker_t *w, int tag, const void *buf, size_t len) {
  if (jct__world_send(0, tag, buf, len)) w->broken = w->quit = true;
}

static void down(worker_t *w) {
  if (w->part.exec) jct__rank_part_end(&w->part);
  jct__ranks_free(w->part.ranks);
  w->part.ranks = NULL;
#ifdef JCT_HAVE_VERBS
  jct__agent_host_free(w->part.host); /* its programs off, its link up, its guard gone */
  jct__rank_verbs_free(w->part.verbs);
#endif
  w->part.host = NULL;
  w->part.verbs = NULL;
  jct_schedule_free(w->s);
  w->s = NULL;
  free(w->sq_psn);
  w->sq_psn = NULL;
  w->running = false;
}

/* Enter rank 0's namespace for this rank: /proc/PID/fd/FD. */
static int enter(const jct__rank_up_t *u, uint32_t rank, char *err, size_t errlen) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", u->pid, u->nsfd);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return jct__errf(err, errlen, JCT_EIO, "rank %u: cannot open rank 0's namespace %s: %m", rank,
                     path);
  int rc = setns(fd, CLONE_NEWNET);
  close(fd);
  if (rc)
    return jct__errf(err, errlen, JCT_EIO,
                     "rank %u: cannot enter its namespace (setns: %m): ranks on one host need "
                     "CAP_SYS_ADMIN (root)",
                     rank);
  return 0;
}

/* verbs: the injectors at this rank's host (host, host_len: UP's list)
 * on netdev, before any traffic: a spec this host cannot honour (delay
 * without fq) is the READY's error, JCT_EINVAL. */
static int host_up(worker_t *w, const char *host, size_t host_len, const char *netdev,
                   jct__rank_ready_t *r) {
  if (!host_len) return 0;
  if (!netdev[0])
    return jct__errf(r->why, sizeof r->why, JCT_EINVAL,
                     "rank %u: at=host: its RDMA device's GID names no network device "
                     "(gid_attrs/ndevs) for its injectors to act on",
                     w->rank);
#ifdef JCT_HAVE_VERBS
  json_error_t je;
  json_t *list = json_loadb(host, host_len, 0, &je);
  if (!list)
    return jct__errf(r->why, sizeof r->why, JCT_EIO, "rank %u: its host's injectors: %s", w->rank,
                     je.text);
  char why[sizeof r->why - 16];
  int rc = jct__agent_host_new(&w->part.host, list, netdev, NULL, false, &w->loop.clock, why,
                               sizeof why);
  json_decref(list);
  if (rc) snprintf(r->why, sizeof r->why, "rank %u: %s", w->rank, why);
  return rc;
#else
  (void)w, (void)host, (void)netdev;
  return jct__errf(r->why, sizeof r->why, JCT_EINVAL, "injectors at a host: not in this build");
#endif
}

/* verbs: this task's device and QPs, connected by hand (rank_verbs.c),
 * and its injectors at its host. */
static void verbs_up(worker_t *w, const jct__rank_up_t *u, const char *host, jct__rank_ready_t *r) {
  w->want = u->rdma;
  char netdev[64] = "";
#ifdef JCT_HAVE_VERBS
  bool mpi_failed = false;
  char why[sizeof r->why];
  int rc = jct__rank_verbs_up(&w->part.verbs, &w->loop.uv, w->s, w->rank, w->size, u,
                              u->psn_seed, r->rc, &mpi_failed, netdev, sizeof netdev, why,
                              sizeof why);
  if (rc && !r->rc) {
    r->rc = rc;
    snprintf(r->why, sizeof r->why, "rank %u: %.200s", w->rank, why);
  }
  if (mpi_failed) {
    w->broken = w->quit = true;
    return;
  }
#else /* unreachable: rank 0 of such a build refuses verbs before UP */
  (void)r, (void)host;
  w->broken = w->quit = true;
  return;
#endif
  w->part = (jct__rank_part_t){
      .loop = &w->loop, .s = w->s, .rank = w->rank, .verbs = w->part.verbs};
  if (!r->rc) r->rc = host_up(w, host, u->host_len, netdev, r);
  send_or_break(w, JCT__TAG_READY, r, sizeof *r);
}

static void on_up(worker_t *w, const char *buf, size_t len) {
  jct__rank_ready_t r = {0};
  jct__rank_up_t u;
  down(w);
  if (len < sizeof u) {
    w->broken = w->quit = true;
    return;
  }
  memcpy(&u, buf, sizeof u);
  if (sizeof u + (size_t)u.sched_len + u.host_len > len) {
    w->broken = w->quit = true;
    return;
  }
  bool verbs = u.transport == JCT_TRANSPORT_VERBS;
  if (!verbs) r.rc = enter(&u, w->rank, r.why, sizeof r.why);
  if (!r.rc)
    r.rc = jct_schedule_loads(&w->s, buf + sizeof u, u.sched_len, r.why, sizeof r.why);
  if (!r.rc && w->s->nconns != u.nconns)
    r.rc = jct__errf(r.why, sizeof r.why, JCT_EINVAL, "rank %u: the schedule has %u connections, not %u",
                     w->rank, w->s->nconns, u.nconns);
  if (verbs) {
    verbs_up(w, &u, buf + sizeof u + u.sched_len, &r);
    return;
  }
  size_t per = 2 * (size_t)u.nconns;
  jct__rank_end_t *mine = calloc(per ? per : 1, sizeof *mine);
  jct__rank_end_t *all = calloc(w->size * (per ? per : 1), sizeof *all);
  w->sq_psn = calloc(per ? per : 1, sizeof *w->sq_psn);
  if (!mine || !all || !w->sq_psn) { /* the others wait in the allgather: end the world */
    fprintf(stderr, "jctlab rank: rank %u: out of memory\n", w->rank);
    jct__world_abort(1);
  }
  if (!r.rc) jct__rank_own_ends(w->s, w->rank, u.psn_seed, mine);
  if (jct__world_allgather(mine, all, per * sizeof *all)) {
    w->broken = w->quit = true;
  } else if (!r.rc && !(r.rc = jct__rank_merge_ends(w->s, all, w->sq_psn, r.why, sizeof r.why))) {
    w->dcqcn = u.dcqcn;
    u.ro.dcqcn = u.has_dcqcn ? &w->dcqcn : NULL;
    u.ro.sq_psn = w->sq_psn;
    u.ro.one_rank = true;
    u.ro.rank = w->rank;
    w->part = (jct__rank_part_t){.loop = &w->loop, .s = w->s, .rank = w->rank};
    r.rc = jct__ranks_new(&w->part.ranks, &w->loop.uv, &w->loop.clock, NULL, w->s, &u.ro, r.why,
                          sizeof r.why);
  }
  free(mine);
  free(all);
  if (!w->broken) send_or_break(w, JCT__TAG_READY, &r, sizeof r);
}

static void on_run(worker_t *w, const char *buf, size_t len) {
  if (len < sizeof w->run || (!w->part.ranks && !w->part.verbs)) {
    w->broken = w->quit = true;
    return;
  }
  memcpy(&w->run, buf, sizeof w->run);
  /* Every task at the barrier, then rank 0's start time, on its clock. */
  uint64_t t0 = 0;
  if (jct__world_barrier() || jct__world_bcast(&t0, sizeof t0)) {
    w->broken = w->quit = true;
    return;
  }
  uint64_t local = (uint64_t)((int64_t)t0 + w->clock.offset_ns);
  w->deadline_ns = local + w->run.limit_ns;
  memset(&w->loop.clock.lateness, 0, sizeof w->loop.clock.lateness); /* the repetition's */
#ifdef JCT_HAVE_VERBS
  char dev[64];
  uint32_t port;
  if (w->part.verbs) jct__rank_verbs_counters(w->part.verbs, &w->want, false, &w->dev, dev, &port);
#endif
  int rc = jct__rank_part_begin(&w->part, local, w->run.faulted != 0);
  if (rc) {
    jct__rank_done_t d = {.index = w->run.index, .ok = 0};
    snprintf(d.why, sizeof d.why, "rank %u: %s", w->rank,
             rc == JCT_EIO ? "its host's kernel would not restart its injectors' programs"
                           : "out of memory");
    send_or_break(w, JCT__TAG_DONE, &d, sizeof d);
    return;
  }
  w->running = true;
}

/* For suite rank: JCT_RANK_TEST_BAD_REPORT=R makes rank R's first report
 * a malformed one (7 bytes), as a worker of another build or a corrupted
 * message would send; rank 0 must fail the repetition at once, naming R.
 * Returns whether it sent that instead of the report. */
static bool bad_report_for_test(worker_t *w) {
  static bool sent;
  const char *r = getenv("JCT_RANK_TEST_BAD_REPORT");
  if (sent || !r || strtoul(r, NULL, 10) != w->rank) return false;
  sent = true;
  send_or_break(w, JCT__TAG_DONE, "garbage", 7);
  return true;
}

/* This rank's report of the repetition: its counters so far and its ops'
 * timings on rank 0's clock. */
static void finish(worker_t *w, const char *why) {
  const jct_schedule_t *s = w->s;
  /* What its host's injectors did (a storm stops here). */
  json_t *hj = jct__rank_part_host_done(&w->part);
  char *host = hj ? json_dumps(hj, JSON_COMPACT) : NULL;
  json_decref(hj);
  size_t host_len = host ? strlen(host) : 0;
  size_t len = sizeof(jct__rank_done_t) + s->nops * sizeof(jct_op_timing_t) +
               s->nconns * sizeof(jct_conn_counts_t) + host_len;
  char *buf = calloc(1, len);
  if (!buf || (hj && !host)) {
    fprintf(stderr, "jctlab rank: rank %u: out of memory\n", w->rank);
    jct__world_abort(1);
    return;
  }
  jct__rank_done_t *d = (jct__rank_done_t *)buf;
  jct_op_timing_t *t = (jct_op_timing_t *)(d + 1);
  jct_conn_counts_t *cc = (jct_conn_counts_t *)(t + s->nops);
  d->index = w->run.index;
  d->nops = s->nops;
  d->nconns = s->nconns;
  d->ok = !why;
  if (why) snprintf(d->why, sizeof d->why, "%s", why);
  d->lateness = w->loop.clock.lateness;
  d->host_len = (uint32_t)host_len;
  if (host_len) memcpy((char *)(cc + s->nconns), host, host_len);
  free(host);
  jct__rank_part_timing(&w->part, w->clock.offset_ns, t);
  if (w->part.ranks) {
    jct__ranks_stats(w->part.ranks, &d->stats);
    d->nic_paused_ns = jct__ranks_nic_paused_ns(w->part.ranks);
    d->harness_losses = jct__ranks_harness_losses(w->part.ranks);
    jct__uroce_conn_counts(w->part.ranks, s->nconns, cc);
  }
#ifdef JCT_HAVE_VERBS
  if (w->part.verbs) {
    jct_dev_counters_t after;
    jct__rank_verbs_counters(w->part.verbs, &w->want, true, &after, d->device, &d->port);
    jct__rdma_counters_delta(&w->dev, &after, &d->dev);
  }
#endif
  jct__rank_part_end(&w->part);
  w->running = false;
  if (!bad_report_for_test(w)) send_or_break(w, JCT__TAG_DONE, buf, len);
  free(buf);
}

static void check_run(worker_t *w) {
  if (!w->running) return;
  jct__rank_part_turn(&w->part);
  char why[300];
  if (jct__rank_part_failed(&w->part, why, sizeof why) || w->part.rc) {
    if (w->part.rc) snprintf(why, sizeof why, "its first sends failed");
    char full[320];
    snprintf(full, sizeof full, "rank %u: %s", w->rank, why);
    finish(w, full);
  } else if (jct__rank_part_done(&w->part)) {
    finish(w, NULL);
  } else if (jct_now_ns() > w->deadline_ns) {
    char full[200];
    snprintf(full, sizeof full, "rank %u: its part of repetition %u did not finish in %.1f s",
             w->rank, w->run.index + 1, (double)w->run.limit_ns / 1e9);
    finish(w, full);
  }
}

static void on_message(worker_t *w, int tag, const char *buf, size_t len) {
  switch (tag) {
  case JCT__TAG_UP:
    on_up(w, buf, len);
    break;
  case JCT__TAG_RUN:
    on_run(w, buf, len);
    break;
  case JCT__TAG_DOWN:
    down(w);
    send_or_break(w, JCT__TAG_GONE, NULL, 0);
    break;
  case JCT__TAG_QUIT:
    down(w);
    w->quit = true;
    break;
  default:
    fprintf(stderr, "jctlab rank: rank %u: unexpected message (tag %d) from rank 0\n", w->rank,
            tag);
    w->broken = w->quit = true;
  }
}

/* During a repetition: ALIVE to rank 0 every JCT__RANK_ALIVE_NS (rank_world.h). */
static void heartbeat(worker_t *w) {
  uint64_t now = jct_now_ns();
  if (!w->running || now < w->next_alive_ns) return;
  w->next_alive_ns = now + JCT__RANK_ALIVE_NS;
  send_or_break(w, JCT__TAG_ALIVE, NULL, 0);
}

static void on_poll(uv_timer_t *t) {
  worker_t *w = t->data;
  heartbeat(w);
  if (w->running) return; /* during a repetition rank 0 sends nothing */
  void *buf = NULL;
  size_t len = 0;
  int tag = 0;
  int rc = jct__world_poll(0, -1, &buf, &len, NULL, &tag);
  if (rc < 0) {
    w->broken = w->quit = true;
  } else if (rc == 1) {
    on_message(w, tag, buf, len);
    free(buf);
  }
}

int jct__rank_worker(uint32_t rank, uint32_t size, const jct__world_clock_t *clock) {
  worker_t *w = calloc(1, sizeof *w);
  if (!w) return 1;
  w->rank = rank;
  w->size = size;
  w->clock = *clock;
  char err[256];
  if (jct__loop_open(&w->loop, WORKER_SPIN_NS, err, sizeof err)) {
    fprintf(stderr, "jctlab rank: rank %u: %s\n", rank, err);
    jct__loop_close(&w->loop);
    free(w);
    return 1;
  }
  uv_timer_init(&w->loop.uv, &w->poll);
  w->poll.data = w;
  uv_timer_start(&w->poll, on_poll, POLL_MS, POLL_MS);
  while (!w->quit) {
    uv_run(&w->loop.uv, UV_RUN_ONCE);
    check_run(w);
  }
  down(w);
  uv_close((uv_handle_t *)&w->poll, NULL);
  jct__loop_close(&w->loop);
  int status = w->broken ? 1 : 0;
  free(w);
  return status;
}
