/* `jctlab rank` on verbs (issue 14) on real soft-RoCE: this machine's
 * kernel has no rdma_rxe, the lab's VMs do. One VM (`jctlab lab-exec`: rxe0
 * on eth0 198.18.0.1, Open MPI from the host's root) runs
 *   mpirun --allow-run-as-root --oversubscribe -np 2 jctlab rank SCEN \
 *     --transport verbs --gid-index 1 --json OUT
 * where rxe loops both tasks' QPs back on the one device, connected by
 * hand from ends exchanged over MPI (rank_verbs.c), and then the refusals:
 *   - the document, valid (the tasks' loops pace no packet): command rank, launched by mpirun, 2
 * tasks on verbs, both ranks' ops timed (each op started and done, senders of both ranks), the
 * named counters per rank (sent_pkts moved on both), the device the two share counted once in the
 * sum;
 *   - --gid-index 7 (an empty entry) and 0 (rxe's link-local GID, which
 *     reaches no peer here): exit 2, one line naming gid_index;
 *   - -np 3 for a job of 2 ranks: exit 2, the world's size named;
 *   - a case with a drop: exit 2, no switch for it to act at;
 *   - `srun -n 2 --mpi=pmix` under slurmctld and slurmd started in the VM
 *     (scripts/slurm-local): the same document, launched by srun;
 *   - a host delay's fq (the VM's kernel has fq, this machine's has not):
 *     `jctlab agent --listen --no-net --netdev eth0` given `delay 1ms
 *     at=host:0` over its control connection puts jctlab's fq (fc7:) at
 *     eth0's root; `tc qdisc show dev eth0` reads as before it once the
 *     agent is SIGKILLed (its guard), after a clean quit, with a tbf root
 *     of the host's (made again), and when agent and guard were both
 *     killed, after the next agent starts (it removes the stale fq);
 *   - nothing left behind: no qemu.
 * One boot (50-80 s under TCG here, with the lock free). Skipped, saying why, where the lab
 * cannot run (no qemu or kernel image) or Open MPI is missing. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "craft.h"
#include "harness/lab/lab.h"
#include "jctlab/schedule.h"
#include "schedule/schedule_json.h"
#include "suites.h"
#include "testkit.h"

#define LIMIT_S 600.0

static const char scen_text[] =
    "name: lab-rank-verbs\n"
    "synth: {algorithm: ring, ranks: 2, bytes: 256KiB}\n"
    "rate: 100mbit\n"
    "reps: 3\n"
    "transport: verbs\n"
    "timeout: 16\n"
    "seed: 7\n"
    "counters: [rcvd_seq_err, out_of_seq_request, completer_retry_err, sent_pkts]\n"
    "cases:\n"
    "  - name: clean\n"
    "    inject: []\n";

/* The same job with a drop, which has no switch to act at. */
static const char inject_text[] = "synth: {algorithm: ring, ranks: 2, bytes: 64KiB}\n"
                                  "transport: verbs\n"
                                  "cases:\n"
                                  "  - inject: [drop p=0.01]\n";

/* The VM's program: each launch's exit status and stderr's first lines,
 * then the good run's document, between markers. */
static const char script_text[] =
    "#!/bin/sh\n"
    "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n"
    "ip link set lo up; hostname jctlab-vm0\n"
    "J=%s G=%s B=%s SRC=%s\n"
    "run() {\n"
    "  name=$1 np=$2 scen=$3; shift 3\n"
    "  mpirun --allow-run-as-root --oversubscribe -q -np $np $J rank $scen \"$@\" \\\n"
    "    >/root/$name.out 2>/root/$name.err\n"
    "  echo \"== $name exit $?\"\n"
    "  grep -v '^$' /root/$name.err | sed \"s/^/== $name err: /\" | head -5\n"
    "}\n"
    "run good 2 $G --transport verbs --gid-index 1 --json /root/good.json\n"
    "run badgid 2 $G --transport verbs --gid-index 7\n"
    "run linklocal 2 $G --transport verbs --gid-index 0\n"
    "run world 3 $G --transport verbs\n"
    "run inject 2 $B --transport verbs\n"
    /* Slurm: slurmctld and slurmd in the VM (scripts/slurm-local), whose
     * slurmd wants a cgroup v2 tree and, without systemd, to make it
     * itself (cgroup.conf IgnoreSystemd). */
    "mount -t cgroup2 none /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/system.slice &&\n"
    "  echo '+cpu +memory +pids' >/sys/fs/cgroup/cgroup.subtree_control\n"
    "mkdir -p /root/slurm && echo IgnoreSystemd=yes >/root/slurm/cgroup.conf\n"
    "if conf=$($SRC/scripts/slurm-local up /root/slurm 4 2>/root/slurm.err); then\n"
    "  SLURM_CONF=$conf srun -n 2 --mpi=pmix $J rank $G --transport verbs --gid-index 1 \\\n"
    "    --json /root/srun.json >/root/srun.out 2>/root/srun.err\n"
    "  echo \"== srun exit $?\"\n"
    "  $SRC/scripts/slurm-local down /root/slurm\n"
    "else\n"
    "  echo '== srun exit -2'; sed 's/^/== srun err: /' /root/slurm.err\n"
    "fi\n"
    "bash %s %s %s 2>&1\n"
    "echo '== json good'; cat /root/good.json; echo; echo '== end'\n"
    "echo '== json srun'; cat /root/srun.json; echo; echo '== end'\n";

/* The fq case (bash, for /dev/tcp): `fq_script JCTLAB SETUP`, SETUP the
 * setup line that gives the agent a delay at its host. "== fq ..." lines. */
static const char fq_script[] =
    "J=$1 SETUP=$2\n"
    "show() { tc qdisc show dev eth0; }\n"
    "start() { # an agent on eth0 given the delay: its pid in A, its fq seen in FQ\n"
    "  $J agent --listen 127.0.0.1:$1 --rank 0 --nranks 2 --no-net --netdev eth0 \\\n"
    "    --addr 198.18.0.1 2>>/root/agent.err &\n"
    "  A=$!\n"
    "  for i in $(seq 100); do { exec 3<>/dev/tcp/127.0.0.1/$1; } 2>/dev/null && break; sleep 0.1; "
    "done\n"
    "  read -r -t 20 line <&3; cat $SETUP >&3; read -r -t 30 line <&3\n"
    "  FQ=$(show | grep -c 'qdisc fq fc7: root')\n"
    "}\n"
    "back() { # the qdiscs as $1 within 5 s\n"
    "  for i in $(seq 100); do [ \"$(show)\" = \"$1\" ] && break; sleep 0.05; done\n"
    "  [ \"$(show)\" = \"$1\" ] && echo yes || { echo no; show | sed 's/^/== fq now: /'; }\n"
    "}\n"
    "B=$(show); echo \"$B\" | sed 's/^/== fq before: /'\n"
    "start 7601; echo \"== fq kill fq $FQ\"; kill -9 $A; wait $A\n"
    "echo \"== fq kill back $(back \"$B\")\"\n"
    "start 7602; echo \"== fq quit fq $FQ\"; echo '{\"msg\":\"quit\"}' >&3; wait $A\n"
    "echo \"== fq quit exit $? back $(back \"$B\")\"\n"
    "tc qdisc replace dev eth0 root handle 1: tbf rate 100mbit burst 64kb limit 1mb; T=$(show)\n"
    "start 7603; echo \"== fq tbf fq $FQ\"; kill -9 $A; wait $A\n"
    "echo \"== fq tbf back $(back \"$T\")\"\n"
    "tc qdisc del dev eth0 root\n"
    "start 7604; echo \"== fq stale fq $FQ\"; G=$(pgrep -P $A); kill -9 $G $A; wait $A\n"
    "echo \"== fq stale left $(show | grep -c 'qdisc fq fc7:') guard $G\"\n"
    "start 7605; echo '{\"msg\":\"quit\"}' >&3; wait $A\n"
    "echo \"== fq next back $(back \"$B\")\"\n"
    "echo \"== fq removed $(grep -c 'removed the fq qdisc a killed agent left on eth0' "
    "/root/agent.err)\"\n"
    "sed 's/^/== fq err: /' /root/agent.err\n";

/* The setup line giving rank 0's agent `delay 1ms at=host:0` (its seed
 * named, so the agent's is the same), into path. */
static void write_fq_setup(const char *path) {
  char e[256] = "";
  jct_schedule_t *sch;
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 2, 65536, 1, e, sizeof e), 0);
  json_t *m = json_pack("{s:s,s:i,s:o,s:[{s:s,s:i,s:i,s:i}]}", "msg", "setup", "rank", 0,
                        "schedule", jct__schedule_json(sch), "host_drops", "spec",
                        "delay 1ms seed=5 at=host:0", "index", 0, "run_seed", 1, "seed", 5);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(json_dumpf(m, f, JSON_COMPACT), 0);
  fputc('\n', f);
  fclose(f);
  json_decref(m);
  jct_schedule_free(sch);
}

/* "== fq KEY " in out: the rest of its line, into buf. */
static const char *fq_line(const char *out, const char *key, char *buf, size_t len) {
  char k[64];
  snprintf(k, sizeof k, "== fq %s ", key);
  const char *p = strstr(out, k);
  ck_assert_msg(p, "no '%s' line from the fq case:\n%s", k, out);
  p += strlen(k);
  snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
  return buf;
}

/* A host delay's fq undone however its agent ends (the script's lines). */
static void check_fq(const char *out) {
  char b[256];
  ck_assert_msg(strstr(out, "== fq before: qdisc ") && !strstr(out, "== fq before: qdisc fq fc7:"),
                "%s", out);
  ck_assert_str_eq(fq_line(out, "kill", b, sizeof b), "fq 1");
  ck_assert_msg(!strcmp(fq_line(out, "kill back", b, sizeof b), "yes"),
                "SIGKILL: the qdiscs are not as before the agent:\n%s", out);
  ck_assert_str_eq(fq_line(out, "quit", b, sizeof b), "fq 1");
  ck_assert_msg(!strcmp(fq_line(out, "quit exit", b, sizeof b), "0 back yes"),
                "quit: not as before:\n%s", out);
  ck_assert_str_eq(fq_line(out, "tbf", b, sizeof b), "fq 1");
  ck_assert_msg(!strcmp(fq_line(out, "tbf back", b, sizeof b), "yes"),
                "a tbf root: not made again:\n%s", out);
  ck_assert_str_eq(fq_line(out, "stale", b, sizeof b), "fq 1");
  ck_assert_msg(!strncmp(fq_line(out, "stale left", b, sizeof b), "1 guard ", 8) && atoi(b + 8) > 0,
                "agent and guard killed: %s\n%s", b, out);
  ck_assert_msg(!strcmp(fq_line(out, "next back", b, sizeof b), "yes"),
                "the next agent left the stale fq:\n%s", out);
  ck_assert_str_eq(fq_line(out, "removed", b, sizeof b), "1");
  ck_assert_msg(!strstr(out, "guard: the kernel refused"), "%s", out);
}

/* The document between "== json NAME" and "== end" in out. */
static json_t *doc_of(const char *out, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "== json %s\n", name);
  const char *js = strstr(out, key), *end = js ? strstr(js, "\n== end") : NULL;
  ck_assert_msg(js && end, "no document of %s:\n%s", name, out);
  char *text = strndup(js + strlen(key), (size_t)(end - js) - strlen(key));
  json_t *doc = parse_json(text, name);
  free(text);
  return doc;
}

/* Both ranks' named counters in a document's case c, side: sent_pkts
 * each into sent[2]. */
static void by_rank(json_t *c, const char *side, json_int_t sent[2]) {
  char path[64];
  snprintf(path, sizeof path, "device_counters_by_rank.%s", side);
  json_t *by = jget(c, path);
  ck_assert_uint_eq(json_array_size(by), 2);
  for (size_t i = 0; i < 2; i++) {
    json_t *e = json_array_get(by, i);
    ck_assert_int_eq(jint(e, "rank"), (json_int_t)i);
    json_t *k = jget(e, "counters");
    ck_assert_uint_eq(json_object_size(k), 4); /* the names asked for, no more */
    ck_assert_ptr_nonnull(json_object_get(k, "rcvd_seq_err"));
    ck_assert_ptr_nonnull(json_object_get(k, "completer_retry_err"));
    sent[i] = jint(k, "sent_pkts");
    /* 3 repetitions of 2 x 128 KiB from each rank at a 4096-byte MTU:
     * at least 192 data packets each. */
    ck_assert_int_ge(sent[i], 3 * 2 * 32);
  }
}

static int count_qemu(void) {
  FILE *p = popen("pgrep -c -f '^qemu-system-x86_64'", "r");
  int n = 0;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = 0;
    pclose(p);
  }
  return n;
}

/* "== NAME exit N" in out: N (-1: none). */
static int exit_of(const char *out, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "== %s exit ", name);
  const char *p = strstr(out, key);
  return p ? atoi(p + strlen(key)) : -1;
}

/* NAME's stderr lines, as the script quoted them. */
static void err_of(const char *out, const char *name, char *buf, size_t len) {
  char key[64];
  snprintf(key, sizeof key, "== %s err: ", name);
  size_t n = 0;
  buf[0] = 0;
  for (const char *p = out; (p = strstr(p, key)) && n < len; p++) {
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    n += (size_t)snprintf(buf + n, len - n, "%.*s\n", (int)(l - strlen(key)), p + strlen(key));
  }
}

START_TEST(mpirun_verbs_on_rxe) {
  char why[256] = "";
  if (!jct__lab_available(why, sizeof why) || system("command -v mpirun >/dev/null 2>&1")) {
    printf("lab_rank: SKIPPED: %s\n", why[0] ? why : "no mpirun (scripts/setup-deps)");
    return;
  }
  char scen[256], script[256], inj[256], fq[256], setup[256];
  craft_tmpname(fq, sizeof fq, ".sh");
  craft_tmpname(setup, sizeof setup, ".json");
  write_fq_setup(setup);
  craft_tmpname(scen, sizeof scen, ".yaml");
  craft_tmpname(inj, sizeof inj, ".yaml");
  craft_tmpname(script, sizeof script, ".sh");
  FILE *f = fopen(scen, "w");
  ck_assert_ptr_nonnull(f);
  fputs(scen_text, f);
  fclose(f);
  ck_assert_ptr_nonnull(f = fopen(inj, "w"));
  fputs(inject_text, f);
  fclose(f);
  ck_assert_ptr_nonnull(f = fopen(script, "w"));
  fprintf(f, script_text, JCT_BINARY, scen, inj, JCT_SOURCE_DIR, fq, JCT_BINARY, setup);
  fclose(f);
  ck_assert_int_eq(chmod(script, 0755), 0);
  ck_assert_ptr_nonnull(f = fopen(fq, "w"));
  fputs(fq_script, f);
  fclose(f);
  int qemu_before = count_qemu();
  char *argv[] = {JCT_BINARY, "lab-exec", "--limit", "500", script, NULL};
  result_t r = run_cmd(argv, NULL, LIMIT_S);
  ck_assert_msg(r.status == 0, "lab-exec: exit %d\n%s\n%s", r.status, r.out, r.err);
  const char *out = r.out;
  char err[1024];
  /* The good run: both ranks' ops, each rank's named counters. */
  err_of(out, "good", err, sizeof err);
  ck_assert_msg(exit_of(out, "good") == 0, "good run: exit %d\n%s", exit_of(out, "good"), out);
  json_t *doc = doc_of(out, "good");
  ck_assert_str_eq(json_string_value(jget(doc, "command")), "rank");
  ck_assert_str_eq(json_string_value(jget(doc, "launch.launcher")), "mpirun");
  ck_assert_int_eq(jint(doc, "launch.tasks"), 2);
  ck_assert_msg(strstr(json_string_value(jget(doc, "launch.placement")), "RDMA device"), "%s",
                json_string_value(jget(doc, "launch.placement")));
  ck_assert_int_le(jint(doc, "launch.clock_error_max_ns"), 5000000); /* one host, one clock */
  json_t *c = jget(doc, "cases.0");
  /* Valid although two tasks on one emulated CPU keep late loops (p99
   * 2.4 ms against a 0.33 ms packet at the scenario's rate): no loop of
   * theirs paces a packet, the NIC does. */
  ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s",
                json_string_value(json_object_get(c, "invalid_why")));
  ck_assert_uint_eq(json_array_size(jget(c, "baseline.jct_ns")), 3);
  for (size_t i = 0; i < 3; i++)
    ck_assert_int_gt(json_integer_value(json_array_get(jget(c, "baseline.jct_ns"), i)), 0);
  json_t *ops = jget(c, "timeline.baseline.ops");
  ck_assert_uint_eq(json_array_size(ops), 4); /* a 2-rank ring: 2 steps, 2 sends each */
  bool sender[2] = {false, false};
  for (size_t i = 0; i < json_array_size(ops); i++) {
    json_t *op = json_array_get(ops, i);
    json_int_t rank = jint(op, "rank"), start = jint(op, "start_ns"), done = jint(op, "done_ns");
    ck_assert(rank == 0 || rank == 1);
    sender[rank] = true;
    ck_assert_int_ge(start, 0);
    ck_assert_int_gt(done, start);
    ck_assert_int_le(done, jint(c, "timeline.baseline.jct_ns") + start);
  }
  ck_assert(sender[0] && sender[1]);
  json_int_t sent[2];
  by_rank(c, "baseline", sent);
  /* Both tasks read one rxe0 (each at its part's end, a few ACKs apart:
   * 416 and 420 here), counted once in the sum: the first rank's. */
  ck_assert_int_le(labs((long)(sent[0] - sent[1])), (long)sent[0] / 50);
  ck_assert_int_eq(jint(c, "baseline_device_counters.sent_pkts"), sent[0]);
  json_decref(doc);
  /* The refusals: one line each, exit 2. */
  err_of(out, "badgid", err, sizeof err);
  ck_assert_msg(exit_of(out, "badgid") == 2, "--gid-index 7: exit %d\n%s", exit_of(out, "badgid"),
                err);
  ck_assert_msg(strstr(err, "gid_index 7: no GID there on rxe0 port 1 (empty entry)"), "%s", err);
  ck_assert_uint_eq(count_lines(err), 1);
  err_of(out, "linklocal", err, sizeof err);
  ck_assert_msg(exit_of(out, "linklocal") == 2, "--gid-index 0: exit %d\n%s",
                exit_of(out, "linklocal"), err);
  ck_assert_msg(strstr(err, "gid_index 0: the peer's GID"), "%s", err);
  err_of(out, "world", err, sizeof err);
  ck_assert_msg(exit_of(out, "world") == 2, "-np 3: exit %d\n%s", exit_of(out, "world"), err);
  ck_assert_msg(strstr(err, "the MPI world has 3 tasks but the job has 2 ranks"), "%s", err);
  err_of(out, "inject", err, sizeof err);
  ck_assert_msg(exit_of(out, "inject") == 2, "inject: exit %d\n%s", exit_of(out, "inject"), err);
  ck_assert_msg(strstr(err, "inject 'drop p=0.01': on verbs under the launcher there is no jctlab "
                            "switch"),
                "%s", err);
  ck_assert_uint_eq(count_lines(err), 1);
  /* srun -n 2 under Slurm's own daemons, through PMIx: the same job. */
  err_of(out, "srun", err, sizeof err);
  ck_assert_msg(exit_of(out, "srun") == 0, "srun: exit %d\n%s", exit_of(out, "srun"), err);
  doc = doc_of(out, "srun");
  ck_assert_str_eq(json_string_value(jget(doc, "launch.launcher")), "srun");
  ck_assert_int_eq(jint(doc, "launch.tasks"), 2);
  c = jget(doc, "cases.0");
  ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s",
                json_string_value(json_object_get(c, "invalid_why")));
  by_rank(c, "faulted", sent);
  json_decref(doc);
  check_fq(out);
  result_free(&r);
  unlink(fq);
  unlink(setup);
  unlink(inj);
  unlink(scen);
  unlink(script);
  ck_assert_int_eq(count_qemu(), qemu_before);
}
END_TEST

Suite *lab_rank_suite(void) {
  Suite *s = suite_create("lab_rank");
  TCase *t = tcase_create("mpirun");
  tcase_set_timeout(t, LIMIT_S + 60);
  /* The build pass only: the time is the VM's and rxe's, which no
   * sanitizer sees (scripts/test). */
  tcase_set_tags(t, "sanitizer-skip");
  tcase_add_test(t, mpirun_verbs_on_rxe);
  suite_add_tcase(s, t);
  return s;
}
