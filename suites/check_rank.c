/* `jctlab rank` (issue 14): one rank per MPI task, launched by mpirun and
 * by srun under a real Slurm, on one host (ranks in jctlab's namespaces).
 *   ends:    the bootstrap's merge takes each QP end's PSN from the rank
 *            that owns it and refuses an end announced with another QPN;
 *   mpirun:  `mpirun -np 4 jctlab rank X.yaml` gives the same document as
 *            `jctlab run X.yaml` (every key and type, plus "launch"), its
 *            baseline JCT within 20% of the single process's, and clocks
 *            whose measured offsets lie within their error bounds (one host:
 *            one clock, so the true offset is 0);
 *   srun:    the same under slurmctld + slurmd started for the test
 *            (scripts/slurm-local, PMIx), torn down after;
 *   hosts:   the injectors at the hosts on verbs (host_faults.h): each rank
 *            gets its own (index, spec, run seed, the seed a host draws
 *            again), one at the switch, at a rank the job lacks or of a kind
 *            no host runs is refused naming the spec, and a host's report
 *            becomes its injector's counters and fault-log lines, from that
 *            rank only;
 *   bad:     a world of 3 tasks for 4 ranks, transport verbs without an
 *            RDMA device, and on verbs a drop at the switch (refused before
 *            the device is looked for): one line, exit 2;
 *   dead:    rank 2 killed mid-run: the document says the run is invalid
 *            and names rank 2.
 * Launching needs mpirun (and srun, slurmctld, slurmd) from setup-deps and
 * root (the ranks enter rank 0's namespaces): a test without them says so
 * and passes without running. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "harness/orch/host_faults.h"
#include "harness/orch/rank_world.h"
#include "jctlab/injector.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"
#include "suites.h"
#include "testkit.h"

#ifdef JCT_HAVE_MPI
#define LIMIT_S 60
/* A 4-rank ring small and slow enough for a loaded 2-core machine: four
 * processes share the cores with the switch (a 6.7 ms packet at 5 Mbit/s). */
static const char ring4[] = "name: rank-ring4\n"
                            "synth: {algorithm: ring, ranks: 4, bytes: 128KiB}\n"
                            "rate: 5mbit\n"
                            "pfc: false\n"
                            "reps: %u\n"
                            "transport: %s\n"
                            "seed: 7\n"
                            "cases:\n"
                            "  - name: loss\n"
                            "    inject:\n"
                            "      - %s\n";

/* tdf: 0, or the reference's time dilation (below); inject: the case's
 * one injector. */
static void scenario_inject(char *path, size_t len, unsigned reps, const char *transport,
                            unsigned tdf, const char *inject) {
  craft_tmpname(path, len, ".yaml");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, ring4, reps, transport, inject);
  if (tdf) fprintf(f, "tdf: %u\n", tdf);
  fclose(f);
}

static void scenario_tdf(char *path, size_t len, unsigned reps, const char *transport,
                         unsigned tdf) {
  scenario_inject(path, len, reps, transport, tdf, "drop p=1e-3");
}

static void scenario(char *path, size_t len, unsigned reps, const char *transport) {
  scenario_tdf(path, len, reps, transport, 0);
}

static bool on_path(const char *prog) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
  return system(cmd) == 0;
}

static bool can_launch(const char *test) {
  if (!on_path("mpirun") || geteuid() != 0) {
    printf("rank: %s skipped: needs mpirun (scripts/setup-deps --with-test-tools) and root\n",
           test);
    return false;
  }
  return true;
}

/* pre... (the launcher's words) jctlab rank SCENARIO --json FILE, run again
 * (3 times in all) while it was invalid because a loop fell behind. */
static json_t *launch(const char *const pre[], const char *scen, int *status, char **err) {
  json_t *doc = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    char js[256];
    craft_tmpname(js, sizeof js, ".json");
    char *argv[32];
    size_t n = 0;
    for (size_t i = 0; pre[i]; i++)
      argv[n++] = (char *)pre[i];
    argv[n++] = JCT_BINARY;
    argv[n++] = "rank";
    argv[n++] = (char *)scen;
    argv[n++] = "--json";
    argv[n++] = js;
    argv[n] = NULL;
    if (doc) json_decref(doc);
    if (attempt) free(*err);
    result_t r = run_cmd(argv, NULL, LIMIT_S);
    *status = r.status;
    *err = strdup(r.err ? r.err : "");
    json_error_t je;
    doc = access(js, F_OK) == 0 ? json_load_file(js, 0, &je) : NULL;
    unlink(js);
    result_free(&r);
    if (*status != 3 || !strstr(*err, "lateness")) break;
  }
  return doc;
}

/* Same keys and types, recursively (null matches anything: a figure one
 * run has and the other not, as an interval); arrays by their first
 * elements. The top level's "launch" is the launcher's addition. */
static void same_shape(json_t *a, json_t *b, const char *path, bool top) {
  if (json_is_null(a) || json_is_null(b)) return;
  bool na = json_is_number(a), nb = json_is_number(b);
  bool ba = json_is_boolean(a), bb = json_is_boolean(b);
  ck_assert_msg(na == nb && ba == bb && (na || ba || json_typeof(a) == json_typeof(b)),
                "%s: a %d in jctlab rank's document, a %d in jctlab run's", path, json_typeof(a),
                json_typeof(b));
  char sub[512];
  if (json_is_object(a)) {
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
      if (top && !strcmp(k, "launch")) continue;
      snprintf(sub, sizeof sub, "%s.%s", path, k);
      json_t *w = json_object_get(b, k);
      ck_assert_msg(w != NULL, "%s: in jctlab rank's document only", sub);
      same_shape(v, w, sub, false);
    }
    json_object_foreach(b, k, v) {
      snprintf(sub, sizeof sub, "%s.%s", path, k);
      ck_assert_msg(json_object_get(a, k) != NULL, "%s: in jctlab run's document only", sub);
    }
  } else if (json_is_array(a) && json_array_size(a) && json_array_size(b)) {
    snprintf(sub, sizeof sub, "%s[0]", path);
    same_shape(json_array_get(a, 0), json_array_get(b, 0), sub, false);
  }
}

/* The single process's document for the launchers' job: `jctlab run` of
 * the same scenario, 4x slowed down (decision 8: no emulated figure
 * changes): one loop emulating four ranks and the switch was loop-bound
 * here three times running on a loaded machine, where the launched ranks,
 * a loop each, were not. mpirun's and srun's cases compare with the same
 * job, so the first to need it keeps it in the runner's temporary folder
 * (removed after the suites) and the other reads it there: one run of it
 * per suite, not one per launcher. */
static json_t *reference_run(void) {
  char kept[512];
  snprintf(kept, sizeof kept, "%s/rank-reference-run.json", getenv("TMPDIR"));
  json_error_t je;
  json_t *ref = access(kept, F_OK) == 0 ? json_load_file(kept, 0, &je) : NULL;
  int st = 0;
  char *err = NULL;
  if (!ref) {
    char scen[256];
    scenario_tdf(scen, sizeof scen, 3, "uroce", 4);
    const char *args[] = {"run", scen, NULL};
    ref = jctlab_json_retry(args, &st, &err);
    unlink(scen);
    if (ref && st == 0) ck_assert_int_eq(json_dump_file(ref, kept, JSON_COMPACT), 0);
  }
  ck_assert_msg(ref && st == 0, "jctlab run: exit %d: %s", st, err);
  free(err);
  return ref;
}

/* What every launcher's document must show against the single process's. */
static void check_against_run(json_t *doc, const char *launcher) {
  json_t *ref = reference_run();
  same_shape(doc, ref, "$", true);
  ck_assert_str_eq(json_string_value(jget(doc, "command")), "rank");
  ck_assert_str_eq(json_string_value(jget(doc, "launch.launcher")), launcher);
  ck_assert_int_eq(jint(doc, "launch.tasks"), 4);
  double mine = jnum(doc, "cases.0.baseline.median_jct_ns"),
         theirs = jnum(ref, "cases.0.baseline.median_jct_ns"),
         model = jnum(doc, "cases.0.model.base_ns");
  printf("rank: %s: baseline JCT %.1f ms, jctlab run %.1f ms, model %.1f ms; clocks within %lld "
         "ns\n",
         launcher, mine / 1e6, theirs / 1e6, model / 1e6,
         (long long)jint(doc, "launch.clock_error_max_ns"));
  /* 20%: the launched ranks came out 2 to 11% slower here, under load
   * averages of 6 to 8: each task's pacing timers fire late in its own
   * process, and nothing is skipped (the reference skips idle time). */
  ck_assert_msg(fabs(mine / theirs - 1) < 0.20, "%s: JCT %.0f ns against jctlab run's %.0f ns",
                launcher, mine, theirs);
  /* The workers' counters came back over MPI: the connections'
   * retransmissions add up to the transport's (every rank's QP ends). */
  json_t *qps = jget(doc, "cases.0.qps");
  json_int_t retx = 0;
  for (size_t i = 0; i < json_array_size(qps); i++)
    retx += json_integer_value(
        json_object_get(json_object_get(json_array_get(qps, i), "faulted"), "retransmitted_packets"));
  ck_assert_uint_eq(json_array_size(qps), 4);
  ck_assert_int_eq(retx, jint(doc, "cases.0.transport.retransmitted_packets"));
  /* ... and every rank's sends are counted: at least each connection's
   * bytes in 4096-byte packets, every faulted repetition. */
  json_int_t least = 0;
  for (size_t i = 0; i < json_array_size(qps); i++)
    least += json_integer_value(json_object_get(json_array_get(qps, i), "bytes")) / 4096;
  ck_assert_int_ge(jint(doc, "cases.0.transport.data_packets"), least * jint(doc, "reps"));
  /* One host, one clock: each measured offset within its own error bound,
   * and the bound small against a packet's 6.7 ms. */
  json_t *ranks = jget(doc, "launch.ranks");
  ck_assert_uint_eq(json_array_size(ranks), 4);
  for (size_t i = 1; i < 4; i++) {
    json_t *r = json_array_get(ranks, i);
    json_int_t off = json_integer_value(json_object_get(r, "clock_offset_ns")),
               e = json_integer_value(json_object_get(r, "clock_error_ns"));
    ck_assert_msg(llabs((long long)off) <= e, "rank %zu: offset %lld ns beyond its bound %lld", i,
                  (long long)off, (long long)e);
    ck_assert_int_lt(e, 1000000);
    ck_assert_int_ne(json_integer_value(json_object_get(r, "pid")),
                     json_integer_value(json_object_get(json_array_get(ranks, 0), "pid")));
  }
  json_decref(ref);
}

START_TEST(ends_merge) {
  jct_schedule_t *s = NULL;
  char err[256] = "";
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 4, 65536, 1, err, sizeof err), 0);
  size_t per = 2 * (size_t)s->nconns;
  jct__rank_end_t *all = calloc(4 * per, sizeof *all);
  uint32_t *psn = calloc(per, sizeof *psn);
  for (uint32_t r = 0; r < 4; r++)
    jct__rank_own_ends(s, r, 42, all + r * per);
  ck_assert_int_eq(jct__rank_merge_ends(s, all, psn, err, sizeof err), 0);
  /* Each end's PSN is its owner's draw; two ends rarely draw alike. */
  uint32_t distinct = 0;
  for (uint32_t c = 0; c < s->nconns; c++) {
    uint32_t src = s->conns[c].src, dst = s->conns[c].dst;
    ck_assert_uint_eq(psn[2 * c], all[src * per + 2 * c].psn);
    ck_assert_uint_eq(psn[2 * c + 1], all[dst * per + 2 * c + 1].psn);
    ck_assert_uint_le(psn[2 * c], 0xffffff);
    distinct += psn[2 * c] != psn[2 * c + 1];
  }
  ck_assert_uint_eq(distinct, s->nconns);
  /* A rank that does not announce its end (another schedule) is refused. */
  uint32_t owner = s->conns[1].dst;
  all[owner * per + 3].qpn = 0x999;
  ck_assert_int_eq(jct__rank_merge_ends(s, all, psn, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "connection 1"));
  /* A rank whose setup failed (it could not enter its namespace) announces
   * nothing: named as such, not as a mismatch, so that rank 0 gives the
   * worker's own reason (backend_ranks.c's bootstrap). */
  for (uint32_t r = 0; r < 4; r++)
    jct__rank_own_ends(s, r, 42, all + r * per);
  memset(all + 2 * per, 0, per * sizeof *all);
  ck_assert_int_eq(jct__rank_merge_ends(s, all, psn, err, sizeof err), JCT_EIO);
  ck_assert_msg(strstr(err, "rank 2 announced no QP ends: its setup failed"), "%s", err);
  free(all);
  free(psn);
  jct_schedule_free(s);
}
END_TEST

/* Every kind a host runs, at ranks 0 and 1 of a 2-rank job. */
static const char *const host_specs[] = {
    "drop psn=5 qp=0x103 at=host:1", "delay 5ms at=host:0",
    "pause prio=3 quanta=1000 link=5mbit for=300ms at=host:1",
    "flap down=100ms every=10s at=host:0", "drop p=1% at=host:1"};

START_TEST(host_faults_split) {
  char err[400] = "";
  ck_assert_msg(jct__host_faults_check(host_specs, 5, 7, 2, err, sizeof err) == 0, "%s", err);
  jct__chain_t *c = NULL;
  ck_assert_int_eq(jct__chain_new(&c, host_specs, 5, 7, err, sizeof err), 0);
  static const size_t want1[] = {0, 2, 4}, want0[] = {1, 3};
  for (uint32_t rank = 0; rank < 3; rank++) {
    json_t *l = jct__host_faults_of(c, rank, 7);
    const size_t *want = rank == 0 ? want0 : want1;
    size_t n = rank == 0 ? 2 : rank == 1 ? 3 : 0;
    ck_assert_uint_eq(json_array_size(l), n);
    for (size_t k = 0; k < n; k++) {
      json_t *e = json_array_get(l, k);
      size_t i = (size_t)json_integer_value(json_object_get(e, "index"));
      ck_assert_uint_eq(i, want[k]);
      ck_assert_str_eq(json_string_value(json_object_get(e, "spec")), host_specs[i]);
      ck_assert_int_eq(json_integer_value(json_object_get(e, "run_seed")), 7);
      /* The seed the host draws again from spec, run seed and index
       * (agent_host.h checks it) is the orchestrator's. */
      jct_injector_t *inj = NULL;
      ck_assert_int_eq(jct_injector_new(&inj, host_specs[i], 7, (uint32_t)i, err, sizeof err), 0);
      ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(e, "seed")), inj->seed);
      ck_assert_uint_eq(inj->seed, jct__chain_get(c, i)->seed);
      jct_injector_free(inj);
    }
    json_decref(l);
  }
  jct__chain_free(c);
  /* Refused, one line naming the spec. */
  static const struct {
    const char *spec, *word;
  } bad[] = {{"drop p=0.01", "not at a host"},
             {"drop p=0.01 at=host:2", "drop p=0.01 at=host:2"},
             {"ecn p=0.05 at=host:1", "ecn p=0.05 at=host:1"},
             {"corrupt p=0.0001 at=host:0", "corrupt p=0.0001 at=host:0"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *two[] = {host_specs[0], bad[i].spec};
    err[0] = 0;
    ck_assert_int_eq(jct__host_faults_check(two, 2, 7, 2, err, sizeof err), JCT_EINVAL);
    ck_assert_msg(strstr(err, bad[i].spec) && strstr(err, bad[i].word), "%s: %s", bad[i].spec,
                  err);
    ck_assert_ptr_null(strchr(err, '\n'));
  }
}
END_TEST

/* A host's report of a repetition becomes its injector's counters and
 * fault-log lines; the same report from another rank is not its. */
START_TEST(host_faults_results) {
  char err[400] = "";
  jct__chain_t *c = NULL;
  ck_assert_int_eq(jct__chain_new(&c, host_specs, 5, 7, err, sizeof err), 0);
  FILE *log = tmpfile();
  ck_assert_ptr_nonnull(log);
  ck_assert_msg(jct__chain_attach_remote(c, 2, log, err, sizeof err) == 0, "%s", err);
  jct__chain_set_rep(c, 3);
  jct__chain_start(c, 1000);
  json_t *done = json_loads(
      "[{\"index\":0,\"attach\":\"tcx\",\"seen\":40,\"dropped\":1,\"held\":0,"
      "\"events_lost\":0,\"drops\":[[2500,259,5,10,false,4,\"198.18.0.2\",\"198.18.0.1\"]]},"
      "{\"index\":2,\"generated\":2,\"dropped\":0,\"seen\":0,\"drops\":[],"
      "\"frames\":[[100,64,true],[200,64,true]],\"frames_lost\":0}]",
      0, NULL);
  ck_assert_ptr_nonnull(done);
  jct__host_faults_results(c, 0, done); /* rank 0 runs neither */
  ck_assert_uint_eq(jct__chain_get(c, 0)->stats.dropped, 0);
  ck_assert_uint_eq(jct__chain_get(c, 2)->stats.generated, 0);
  jct__host_faults_results(c, 1, done);
  ck_assert_uint_eq(jct__chain_get(c, 0)->stats.dropped, 1);
  ck_assert_uint_eq(jct__chain_get(c, 0)->stats.seen, 40);
  ck_assert_uint_eq(jct__chain_get(c, 2)->stats.generated, 2);
  fflush(log);
  rewind(log);
  char line[512];
  unsigned drops = 0, frames = 0;
  while (fgets(line, sizeof line, log)) {
    json_t *j = json_loads(line, 0, NULL);
    ck_assert_msg(j, "not JSON: %s", line);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "rep")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(j, "at")), "host:1");
    const char *action = json_string_value(json_object_get(j, "action"));
    if (!strcmp(action, "drop")) {
      drops++;
      ck_assert_int_eq(json_integer_value(json_object_get(j, "psn")), 5);
      ck_assert_int_eq(json_integer_value(json_object_get(j, "qp")), 259);
      ck_assert_int_eq(json_integer_value(json_object_get(j, "t_ns")), 2500);
    } else {
      ck_assert_str_eq(action, "generate");
      frames++;
    }
    json_decref(j);
  }
  ck_assert_uint_eq(drops, 1);
  ck_assert_uint_eq(frames, 2);
  json_decref(done);
  jct__chain_free(c);
  fclose(log);
}
END_TEST

START_TEST(mpirun_matches_run) {
  if (!can_launch("mpirun_matches_run")) return;
  char scen[256];
  scenario(scen, sizeof scen, 3, "uroce");
  const char *pre[] = {"mpirun", "-q", "--allow-run-as-root", "--oversubscribe", "-np", "4", NULL};
  int st = 0;
  char *err = NULL;
  json_t *doc = launch(pre, scen, &st, &err);
  ck_assert_msg(doc && st == 0, "mpirun: exit %d: %s", st, err);
  ck_assert_ptr_nonnull(strstr(err, "clocks aligned to rank 0"));
  check_against_run(doc, "mpirun");
  free(err);
  json_decref(doc);
  unlink(scen);
}
END_TEST

START_TEST(srun_matches_run) {
  if (!can_launch("srun_matches_run")) return;
  if (!on_path("srun") || !on_path("slurmctld") || !on_path("slurmd")) {
    printf("rank: srun_matches_run skipped: needs slurm-wlm (scripts/setup-deps "
           "--with-test-tools)\n");
    return;
  }
  char dir[256], cmd[700], conf[300];
  craft_tmpname(dir, sizeof dir, ".slurm");
  unlink(dir); /* a name for slurm-local's folder */
  snprintf(cmd, sizeof cmd, "%s/scripts/slurm-local up %s 4 >/dev/null", JCT_SOURCE_DIR, dir);
  ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
  snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
  setenv("SLURM_CONF", conf, 1);
  char scen[256];
  scenario(scen, sizeof scen, 3, "uroce");
  const char *pre[] = {"srun", "-n", "4", "--mpi=pmix", NULL};
  int st = 0;
  char *err = NULL;
  json_t *doc = launch(pre, scen, &st, &err);
  snprintf(cmd, sizeof cmd, "%s/scripts/slurm-local down %s", JCT_SOURCE_DIR, dir);
  int down = system(cmd);
  unsetenv("SLURM_CONF");
  ck_assert_int_eq(down, 0);
  ck_assert_msg(access(dir, F_OK) != 0, "%s left behind", dir);
  ck_assert_msg(doc && st == 0, "srun: exit %d: %s", st, err);
  check_against_run(doc, "srun");
  free(err);
  json_decref(doc);
  unlink(scen);
}
END_TEST

/* A launch that must be refused: mpirun -np np of a 1-repetition ring on
 * transport with one injector, started; refusal_check() waits for it. The
 * refusals come from mpirun's tasks, whose start is most of their time
 * (Open MPI's), so a test starts all of its refusals at once and then
 * checks each: the same launches and assertions, one start-up's wait. */
typedef struct {
  char scen[256];
  child_t c;
  const char *w1, *w2;
} refusal_t;

static void refusal_start(refusal_t *f, unsigned np, const char *transport, const char *inject,
                          const char *w1, const char *w2) {
  char n[8];
  scenario_inject(f->scen, sizeof f->scen, 1, transport, 0, inject);
  snprintf(n, sizeof n, "%u", np);
  char *argv[] = {"mpirun", "-q", "--allow-run-as-root", "--oversubscribe", "-np", n,
                  JCT_BINARY, "rank", f->scen, NULL};
  f->c = spawn(argv, NULL);
  f->w1 = w1;
  f->w2 = w2;
}

/* The refusal's end: exit 2, nothing on stdout, one stderr line naming
 * both words. */
static void refusal_check(refusal_t *f) {
  result_t r = finish(&f->c, LIMIT_S);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  ck_assert_uint_eq(r.out_len, 0);
  ck_assert_msg(count_lines(r.err) == 1, "not one line: %s", r.err);
  ck_assert_msg(strstr(r.err, f->w1) && strstr(r.err, f->w2), "%s", r.err);
  result_free(&r);
  unlink(f->scen);
}

START_TEST(bad_world_and_device) {
  if (!can_launch("bad_world_and_device")) return;
  refusal_t f[4];
  size_t n = 0;
  refusal_start(&f[n++], 3, "uroce", "drop p=1e-3", "3 tasks", "4 ranks");
  /* On verbs there is no switch: an injector at it is refused, naming it,
   * before the device is looked for (so here too, with none). */
  refusal_start(&f[n++], 4, "verbs", "drop p=1e-3", "drop p=1e-3: not at a host", "at=host:RANK");
  refusal_start(&f[n++], 4, "verbs", "ecn p=0.05 at=host:1", "ecn p=0.05 at=host:1",
                "cannot run at a host");
  DIR *d = opendir("/sys/class/infiniband");
  bool rdma = false;
  for (struct dirent *e; d && (e = readdir(d));)
    rdma = rdma || e->d_name[0] != '.';
  if (d) closedir(d);
  if (!rdma)
    refusal_start(&f[n++], 4, "verbs", "drop psn=5 qp=0x103 at=host:1", "no RDMA device",
                  "/sys/class/infiniband");
  for (size_t i = 0; i < n; i++)
    refusal_check(&f[i]);
}
END_TEST

/* The pid of the task that is rank `rank` of the mpirun whose pid is m. */
static pid_t task_of(pid_t m, int rank) {
  DIR *d = opendir("/proc");
  pid_t found = 0;
  char want[64], tag[64];
  snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
  snprintf(tag, sizeof tag, "JCT_RANK_TEST=%d", (int)m);
  for (struct dirent *e; d && !found && (e = readdir(d));) {
    pid_t p = (pid_t)atoi(e->d_name);
    if (p <= 0) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", p);
    char env[16384];
    FILE *f = fopen(path, "r"); /* others' may be unreadable, or gone */
    size_t len = f ? fread(env, 1, sizeof env - 1, f) : 0;
    if (f) fclose(f);
    env[len] = 0;
    bool r = false, t = false;
    for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
      r = r || !strcmp(env + i, want);
      t = t || !strcmp(env + i, tag);
    }
    if (r && t) found = p;
  }
  if (d) closedir(d);
  return found;
}

/* Launch the 40-repetition ring under mpirun (JCT_RANK_TEST tagging its
 * tasks; extra: one more variable to pass, or NULL) and, once rank 2 runs
 * its repetitions, send it sig; *victim its pid, *sent_at when. */
static child_t launch_and_signal(const char *scen, const char *js, const char *extra, int sig,
                                 pid_t *victim, double *sent_at) {
  char tag[32];
  snprintf(tag, sizeof tag, "%d", (int)getpid());
  setenv("JCT_RANK_TEST", tag, 1);
  char *argv[] = {"mpirun", "-q", "--allow-run-as-root", "--oversubscribe", "-x", "JCT_RANK_TEST",
                  "-np", "4", JCT_BINARY, "rank", (char *)scen, "--json", (char *)js, NULL, NULL,
                  NULL};
  if (extra) { /* before -np */
    memmove(&argv[8], &argv[6], 8 * sizeof *argv);
    argv[6] = "-x";
    argv[7] = (char *)extra;
  }
  child_t c = spawn(argv, NULL);
  unsetenv("JCT_RANK_TEST");
  /* Once the repetitions run (the tasks up, a second or two), signal rank 2. */
  pid_t v = 0;
  for (int i = 0; i < 100 && !v; i++) {
    sleep_ms(50);
    v = task_of(getpid(), 2);
  }
  ck_assert_msg(v > 0, "rank 2's task not found");
  /* Its repetitions run once it has entered its namespace (rank 0's UP):
   * then a second and a half into them. */
  char mine[64] = "", its[64] = "", path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/net", (int)v);
  ck_assert_int_gt(readlink("/proc/self/ns/net", mine, sizeof mine - 1), 0);
  for (int i = 0; i < 400 && (readlink(path, its, sizeof its - 1) <= 0 || !strcmp(its, mine));
       i++) {
    memset(its, 0, sizeof its);
    sleep_ms(50);
  }
  ck_assert_msg(strcmp(its, mine), "rank 2 never entered its namespace");
  sleep_ms(1500);
  kill(v, sig);
  *sent_at = now_s();
  *victim = v;
  return c;
}

/* The job's end: within seconds of rank 2's death or silence (not the
 * repetition's limit, 10 s and more), no task left, the document invalid
 * with rank 2 named as `says`. */
static void expect_named(child_t *c, double sent_at, pid_t victim, const char *js,
                         const char *says, const char *what) {
  result_t r = finish(c, LIMIT_S);
  double took = now_s() - sent_at;
  kill(victim, SIGKILL); /* a stopped task, should the job have left it */
  printf("rank: rank 2 %s: mpirun ended %.1f s later, exit %d\n", what, took, r.status);
  ck_assert_msg(took < 8, "the job ended %.1f s after rank 2 %s", took, what);
  for (int i = 0; i < 4; i++)
    ck_assert_msg(task_of(getpid(), i) == 0, "rank %d's task outlived the job", i);
  ck_assert_int_ne(r.status, 0);
  char name[64];
  snprintf(name, sizeof name, "rank 2 (pid %d", (int)victim);
  ck_assert_msg(strstr(r.err, name) && strstr(r.err, says), "stderr: %s", r.err);
  json_error_t je;
  json_t *doc = json_load_file(js, 0, &je);
  ck_assert_msg(doc, "no document: %s", r.err);
  const char *why = json_string_value(jget(doc, "cases.0.invalid_why"));
  ck_assert_str_eq(json_string_value(jget(doc, "cases.0.verdict")), "invalid");
  ck_assert_msg(strstr(why, name) && strstr(why, says), "invalid_why: %s", why);
  json_decref(doc);
  result_free(&r);
}

START_TEST(dead_rank_named) {
  if (!can_launch("dead_rank_named")) return;
  char scen[256], js[256];
  scenario(scen, sizeof scen, 40, "uroce");
  craft_tmpname(js, sizeof js, ".json");
  pid_t victim;
  double at;
  child_t c = launch_and_signal(scen, js, NULL, SIGKILL, &victim, &at);
  expect_named(&c, at, victim, js, "died", "killed");
  unlink(js);
  unlink(scen);
}
END_TEST

/* A task that stops answering without dying (SIGSTOP: as a host that hangs
 * or drops off the network, which no launcher notices), rank 0 seeing it
 * as another host's (JCT_RANK_TEST_REMOTE=1: no /proc look): named by its
 * silence (no ALIVE for 1.5 s), the job ended. */
START_TEST(silent_rank_named) {
  if (!can_launch("silent_rank_named")) return;
  char scen[256], js[256];
  scenario(scen, sizeof scen, 40, "uroce");
  craft_tmpname(js, sizeof js, ".json");
  setenv("JCT_RANK_TEST_REMOTE", "1", 1);
  pid_t victim;
  double at;
  child_t c = launch_and_signal(scen, js, "JCT_RANK_TEST_REMOTE", SIGSTOP, &victim, &at);
  unsetenv("JCT_RANK_TEST_REMOTE");
  expect_named(&c, at, victim, js, "went silent", "stopped");
  unlink(js);
  unlink(scen);
}
END_TEST

/* A worker's report that is not one (JCT_RANK_TEST_BAD_REPORT=2: rank 2's
 * first report is 7 bytes of garbage) fails the repetition as soon as it
 * comes, naming the rank, instead of waiting out the repetition's limit
 * (10 s and more) for a report that will not come. */
START_TEST(malformed_report_named) {
  if (!can_launch("malformed_report_named")) return;
  char scen[256], js[256];
  scenario(scen, sizeof scen, 1, "uroce");
  craft_tmpname(js, sizeof js, ".json");
  setenv("JCT_RANK_TEST_BAD_REPORT", "2", 1);
  char *argv[] = {"mpirun", "-q", "--allow-run-as-root", "--oversubscribe",
                  "-x", "JCT_RANK_TEST_BAD_REPORT", "-np", "4", JCT_BINARY, "rank", scen,
                  "--json", js, NULL};
  double t0 = now_s();
  result_t r = run_cmd(argv, NULL, LIMIT_S);
  double took = now_s() - t0;
  unsetenv("JCT_RANK_TEST_BAD_REPORT");
  printf("rank: a malformed report: the job took %.1f s, exit %d\n", took, r.status);
  ck_assert_msg(r.status != 0 && r.status != 2, "exit %d: %s", r.status, r.err);
  json_error_t je;
  json_t *doc = json_load_file(js, 0, &je);
  ck_assert_msg(doc, "no document: %s", r.err);
  const char *why = json_string_value(jget(doc, "cases.0.invalid_why"));
  ck_assert_str_eq(json_string_value(jget(doc, "cases.0.verdict")), "invalid");
  ck_assert_msg(why && strstr(why, "rank 2 sent a malformed report (7 bytes"), "invalid_why: %s",
                why);
  ck_assert_msg(took < 20, "the job took %.1f s: it waited out a repetition's limit", took);
  json_decref(doc);
  result_free(&r);
  unlink(js);
  unlink(scen);
}
END_TEST

#else
START_TEST(mpi_off) {
  char *argv[] = {JCT_BINARY, "rank", "x.yaml", NULL};
  result_t r = run_cmd(argv, NULL, 20);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "not supported in this build"));
  result_free(&r);
}
END_TEST
#endif

Suite *rank_suite(void) {
  Suite *s = suite_create("rank");
#ifndef JCT_HAVE_MPI
  TCase *off = tcase_create("off");
  tcase_add_test(off, mpi_off);
  suite_add_tcase(s, off);
  return s;
#else
  TCase *u = tcase_create("ends");
  tcase_add_test(u, ends_merge);
  tcase_add_test(u, host_faults_split);
  tcase_add_test(u, host_faults_results);
  suite_add_tcase(s, u);
  TCase *l = tcase_create("launch");
  tcase_set_timeout(l, 150);
  tcase_add_test(l, mpirun_matches_run);
  tcase_add_test(l, bad_world_and_device);
  tcase_add_test(l, dead_rank_named);
  tcase_add_test(l, silent_rank_named);
  tcase_add_test(l, malformed_report_named);
  suite_add_tcase(s, l);
  /* Slurm's srun runs the same rank code as mpirun does (world_mpi.c, over
   * PMIx instead of Open MPI's own launcher): its 20 s go to slurmctld,
   * slurmd and the job, not to code the sanitizers would see anew. */
  TCase *slurm = tcase_create("slurm");
  tcase_set_timeout(slurm, 150);
  tcase_set_tags(slurm, "sanitizer-skip");
  tcase_add_test(slurm, srun_matches_run);
  suite_add_tcase(s, slurm);
  return s;
#endif
}
