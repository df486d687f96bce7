/* `jctlab rank SCENARIO.yaml`: one rank of a scenario's job per MPI task,
 * launched by the cluster's own engine (DESIGN.md decision 10):
 *
 *   mpirun -np N jctlab rank SCENARIO.yaml [run's scenario options]
 *   srun -n N --mpi=pmix jctlab rank SCENARIO.yaml [...]
 *
 * Every task starts MPI, says who it is (pid, host), and has its clock
 * measured against rank 0's (harness/lab/world.h). Rank 0 then does what
 * `jctlab run SCENARIO.yaml` does (cmd_scenario.c: the same cases, report,
 * JSON and JUnit) with its session's ranks backed by the other tasks
 * (harness/orch/rank_world.h); every other task serves it until told to
 * quit. Rank 0 adds "launch" to the result document: the launcher, the
 * tasks, and each one's clock offset and alignment error.
 *
 * Exit status: as `jctlab run SCENARIO.yaml`, on every task (2: bad input,
 * also an MPI world whose size is not the job's ranks, and transport verbs
 * without an RDMA device).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "harness/lab/world.h"
#include "harness/orch/host_faults.h"
#include "harness/orch/rank_world.h"
#include "harness/transport/verbs/verbs.h"

static const char usage_text[] =
    "usage: mpirun -np N jctlab rank SCENARIO.yaml [run's options for a scenario]\n"
    "       srun -n N --mpi=pmix jctlab rank SCENARIO.yaml [...]\n"
    "\n"
    "One rank of the scenario's job per MPI task: N must be the job's ranks. Rank 0\n"
    "builds the emulated switch and the ranks' namespaces, runs every case as `jctlab\n"
    "run SCENARIO.yaml` does, and writes the same table, --json, --junit and --report;\n"
    "the bootstrap (QPNs, PSNs, addresses), each repetition's start (a barrier) and\n"
    "the op timings and counters go over MPI. Clocks are aligned to rank 0's by MPI\n"
    "ping-pong; the result's \"launch\" gives each rank's offset and error bound.\n"
    "uroce: ranks share one host, each in its namespace (root needed). verbs: each\n"
    "task opens its host's RDMA device (scenario keys device, port, gid_index,\n"
    "traffic_class, counters) and connects its QPs by hand from ends exchanged over\n"
    "MPI; no switch: injectors run at the hosts only (at=host:R: task R runs them on\n"
    "its device's netdev, faulted repetitions only; drop, delay (needs fq), pause,\n"
    "flap), their counters and fault log gathered at rank 0; captures are refused.\n"
    "\n"
    "exit status: as jctlab run SCENARIO.yaml (2 also: N is not the job's ranks,\n"
    "transport verbs without an RDMA device or with a setting a host cannot honour).\n";

typedef struct {
  uint32_t rank, size;
  jct__rank_world_t w;
  bool went;  /* the workers were told to serve */
  bool verbs; /* the cases run on verbs */
} rank_cmd_t;

/* The first RDMA device of /sys/class/infiniband; false when none. */
static bool have_rdma_device(void) {
  DIR *d = opendir("/sys/class/infiniband");
  if (!d) return false;
  bool found = false;
  for (struct dirent *e; !found && (e = readdir(d));)
    found = e->d_name[0] != '.';
  closedir(d);
  return found;
}

/* What a case on verbs asks that the launcher cannot do there: one line,
 * 2; -1 when nothing. The ranks' traffic crosses the hosts' own fabric,
 * where jctlab has no switch: its injectors (at=switch), captures and
 * fabric have nowhere to act. Injectors from the hosts (at=host:R) run in
 * task R, on its RDMA device's netdev (host_faults.h), their lines in the
 * fault log. Checked before the device is: the spec is the user's either way. */
static int refuse_on_verbs(const char *path, const jct_run_opts_t *o) {
  if (o->transport != JCT_TRANSPORT_VERBS) return -1;
  char err[400];
  if (jct__host_faults_check(o->inject, o->ninject, o->seed, o->schedule->nranks, err,
                             sizeof err)) {
    fprintf(stderr, "jctlab rank: %s: inject %s%s\n", path, err,
            strstr(err, "no switch") ? ": under the launcher on verbs the ranks' traffic crosses "
                                       "your fabric; use at=host:RANK, jctlab wire, or the lab"
                                     : "");
    return 2;
  }
  const char *what = o->pcap_out ? "pcap_out" : o->pcap_in ? "pcap_in" : o->clos ? "fabric" : NULL;
  if (what) {
    fprintf(stderr, "jctlab rank: %s: %s: on verbs under the launcher there is no jctlab switch "
                    "(the ranks' traffic crosses your fabric)\n", path, what);
    return 2;
  }
  return -1;
}

static int tell_workers(rank_cmd_t *c, int32_t status) {
  c->went = true;
  return jct__world_bcast(&status, sizeof status) ? 1 : -1;
}

static int ready(void *ctx, const char *path, uint32_t lab, const jct_run_opts_t *cases,
                 uint32_t ncases) {
  rank_cmd_t *c = ctx;
  const jct_schedule_t *s = cases[0].schedule;
  int st = -1;
  c->verbs = cases[0].transport == JCT_TRANSPORT_VERBS;
  if (c->size != s->nranks) {
    fprintf(stderr,
            "jctlab rank: %s: the MPI world has %u tasks but the job has %u ranks: launch it "
            "with -n %u\n",
            path, c->size, s->nranks, s->nranks);
    st = 2;
  } else if (cases[0].transport != JCT_TRANSPORT_VERBS && geteuid() != 0) {
    /* The tasks enter rank 0's namespaces, and rank 0 cannot make a user
     * namespace once MPI has started its threads (unshare(2)). */
    fprintf(stderr, "jctlab rank: ranks on one host need root: each task enters the network "
                    "namespace rank 0 makes for it (CAP_SYS_ADMIN)\n");
    st = 1;
  } else if (lab) {
    fprintf(stderr, "jctlab rank: %s: 'lab: %u' boots soft-RoCE VMs: that is `jctlab run`'s, "
                    "not the launcher's\n", path, lab);
    st = 2;
  }
  for (uint32_t i = 0; st < 0 && i < ncases; i++)
    st = refuse_on_verbs(path, &cases[i]);
  if (st < 0 && cases[0].transport == JCT_TRANSPORT_VERBS) {
#ifdef JCT_HAVE_VERBS
    char err[512];
    if (jct__verbs_load(err, sizeof err)) {
      fprintf(stderr, "jctlab rank: %s: transport verbs: %s\n", path, err);
      st = 2;
    } else if (!have_rdma_device()) {
      fprintf(stderr, "jctlab rank: %s: transport verbs, but rank 0 has no RDMA device "
                      "(/sys/class/infiniband is empty)\n", path);
      st = 2;
    }
#else
    fprintf(stderr, "jctlab rank: %s: transport verbs: not supported in this build: it needs "
                    "rdma-core (CMake option JCT_VERBS)\n", path);
    st = 2;
#endif
  }
  for (uint32_t i = 0; st < 0 && i < ncases; i++) {
    jct_run_dilation_t d;
    jct_run_dilation(&cases[i], &d);
    if (d.tdf != 1) {
      fprintf(stderr, "jctlab rank: %s: rate %.0f Mbit/s needs time dilation (F = %g), which "
                      "the launcher does not do: rate at most %.0f Mbit/s\n",
              path, (double)cases[i].rate_bps / 1e6, d.tdf, (double)d.ceiling_bps / 1e6);
      st = 2;
    }
  }
  if (st >= 0) return st; /* cmd_rank tells the workers */
  return tell_workers(c, 0);
}

static void on_doc(void *ctx, json_t *doc) {
  rank_cmd_t *c = ctx;
  json_t *ranks = json_array();
  uint64_t max_err = 0;
  uint32_t worst = 0;
  for (uint32_t i = 0; i < c->size; i++) {
    const jct__world_clock_t *k = &c->w.clock[i];
    if (k->error_ns > max_err) max_err = k->error_ns, worst = i;
    json_array_append_new(ranks, json_pack("{s:I,s:I,s:s,s:I,s:I,s:I}", "rank", (json_int_t)i,
                                           "pid", (json_int_t)c->w.pid[i], "host", c->w.host[i],
                                           "clock_offset_ns", (json_int_t)k->offset_ns,
                                           "clock_error_ns", (json_int_t)k->error_ns, "rtt_ns",
                                           (json_int_t)k->rtt_ns));
  }
  json_object_set_new(
      doc, "launch",
      json_pack("{s:s,s:I,s:s,s:s,s:I,s:o}", "launcher", jct__world_launcher(), "tasks",
                (json_int_t)c->size, "placement",
                c->verbs ? "each task its host's RDMA device, QPs connected by hand over MPI"
                         : "one host, one network namespace per rank",
                "clock_alignment",
                "MPI ping-pong against rank 0, the smallest of 32 round trips; error <= RTT/2",
                "clock_error_max_ns", (json_int_t)max_err, "ranks", ranks));
  fprintf(stderr,
          "jctlab rank: %u ranks launched by %s %s; clocks aligned to rank 0 by MPI "
          "ping-pong within %.1f us (worst: rank %u)\n",
          c->size, jct__world_launcher(), c->verbs ? "on verbs" : "on one host",
          (double)max_err / 1e3, worst);
}

/* Who every task is, and its clock against rank 0's. */
static int introduce(rank_cmd_t *c) {
  typedef struct {
    int32_t pid;
    char host[64];
  } who_t;
  who_t me = {.pid = (int32_t)getpid()}, *all = calloc(c->size, sizeof *all);
  gethostname(me.host, sizeof me.host - 1);
  c->w.size = c->size;
  c->w.pid = calloc(c->size, sizeof *c->w.pid);
  c->w.host = calloc(c->size, sizeof *c->w.host);
  c->w.clock = calloc(c->size, sizeof *c->w.clock);
  if (!all || !c->w.pid || !c->w.host || !c->w.clock) {
    free(all);
    return 1;
  }
  int rc = jct__world_allgather(&me, all, sizeof me);
  for (uint32_t i = 0; !rc && i < c->size; i++) {
    c->w.pid[i] = all[i].pid;
    memcpy(c->w.host[i], all[i].host, sizeof c->w.host[i]);
  }
  free(all);
  const char(*host)[64] = (const char(*)[64])c->w.host;
  return rc || jct__world_align(c->rank, c->size, host, c->w.clock) ? 1 : 0;
}

int jct__cmd_rank(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage_text, stdout);
      return 0;
    }
  rank_cmd_t c = {0};
  char err[512];
  if (jct__world_load(err, sizeof err)) { /* before MPI starts: no task is waiting */
    fprintf(stderr, "jctlab rank: %s\n", err);
    return 2;
  }
  if (jct__world_init(&argc, &argv, &c.rank, &c.size, err, sizeof err)) {
    fprintf(stderr, "jctlab rank: %s\n", err);
    return 1;
  }
  int status = 1;
  if (introduce(&c)) {
    fprintf(stderr, "jctlab rank: rank %u: MPI: cannot reach the other tasks\n", c.rank);
    jct__world_abort(1);
  }
  if (c.rank != 0) {
    int32_t go = 1;
    if (jct__world_bcast(&go, sizeof go)) jct__world_abort(1);
    status = go ? go : jct__rank_worker(c.rank, c.size, &c.w.clock[0]);
    /* A worker that broke (its loop would not open, MPI failed, a message
     * it could not read) may leave rank 0 in a collective it will never
     * join; MPI_Finalize would wait for rank 0 there too (Open MPI fences
     * every task), and the job would hang: end it instead. */
    if (!go && status) {
      fprintf(stderr, "jctlab rank: rank %u: cannot serve rank 0: ending every task\n", c.rank);
      jct__world_abort(status);
    }
  } else {
    const jct__scenario_hooks_t h = {
        .prog = "rank", .world = &c.w, .ctx = &c, .ready = ready, .on_doc = on_doc};
    status = jct__scenario_cmd(argc, argv, &h);
    if (!c.went) { /* stopped before the workers served: they exit with it */
      int32_t st = status ? status : 1;
      if (jct__world_bcast(&st, sizeof st)) jct__world_abort(status);
    } else if (c.w.lost) {
      fprintf(stderr, "jctlab rank: %s: ending every task\n", c.w.lost_why);
      jct__world_abort(status ? status : 3);
    } else {
      for (uint32_t i = 1; i < c.size; i++)
        jct__world_send(i, JCT__TAG_QUIT, NULL, 0);
    }
  }
  free(c.w.pid);
  free(c.w.host);
  free(c.w.clock);
  jct__world_finalize();
  return status;
}
