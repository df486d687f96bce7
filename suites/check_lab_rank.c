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
 *   - a case with a drop at the switch: exit 2, no switch for it to act at;
 *   - injectors at host:1 (rank 1's task, on rxe0's netdev eth0, with the
 *     agent's code): a PFC storm sends its frames from eth0 in faulted
 *     repetitions only, counted in the document and logged at host:1 with
 *     their repetition; a targeted drop sees nothing here (rxe loops both
 *     tasks' packets back inside the device, past eth0's egress) and makes
 *     its case invalid, acted on nothing (exit 3);
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
 * cannot run (no qemu or kernel image) or Open MPI is missing.
 *
 * Two VMs (`jctlab lab-exec --vms 2`: rank 0's host jctlab-vm0 at
 * 198.18.0.1 and rank 1's jctlab-vm1 at 198.18.0.2, each its own rxe0, one
 * L2 segment), one Slurm over both (scripts/slurm-local conf/start:
 * slurmctld and slurmd in VM 0, slurmd in VM 1, the configuration from the
 * host's root), and `srun -N 2 --ntasks-per-node=1 --mpi=pmix jctlab rank
 * SCEN`, so that rank 1's traffic crosses a real netdev, rxe to rxe between
 * two kernels:
 *   - a clean case: valid, launched by srun, the two tasks on the two
 *     hosts, both ranks' ops timed, their clocks' offset and error bound
 *     reported;
 *   - drop pkt=0:5 qp-order=1 at=host:1 (the 6th packet of rank 1's data,
 *     its second QP to send: the first carries its clear-to-send to rank
 *     0; in its tc-eBPF program on eth0's egress): exactly one rcvd_seq_err
 *     on rank 1 (the sender: rxe's NAK-sequence-error count) in each
 *     faulted repetition and none in the baselines, one drop a repetition
 *     in the document and one fault-log line each, at host:1;
 *   - drop psn=5 qp=0xfffff0 at=host:1 (a QP that is not there): the case
 *     is invalid, acted on nothing (exit 3);
 *   - drop p=0.01 (at the switch, which there is none of): exit 2, one line.
 * One two-VM boot (TCG: 2-4 min here with the lock free). */
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

/* The 2-rank ring the host faults run on, 2 repetitions a side. */
#define RING2_REPS2 \
    "synth: {algorithm: ring, ranks: 2, bytes: 256KiB}\n" \
    "rate: 100mbit\n"                                    \
    "reps: 2\n"                                          \
    "transport: verbs\n"                                 \
    "timeout: 16\n"                                      \
    "seed: 7\n"

/* Injectors at rank 1's host, a case each (the idle one last: an invalid
 * case ends the run's later ones). */
static const char hosts_text[] =
    "name: lab-rank-hosts\n" RING2_REPS2
    "cases:\n"
    "  - name: storm\n"
    "    inject: [pause prio=3 quanta=1000 link=100mbit for=20ms at=host:1]\n"
    "  - name: idle\n"
    "    inject: [drop pkt=0:5 qp-order=0 at=host:1]\n";

/* The VM's program: each launch's exit status and stderr's first lines,
 * then the good run's document, between markers. */
static const char script_text[] =
    "#!/bin/sh\n"
    "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n"
    "ip link set lo up; hostname jctlab-vm0\n"
    "J=%s G=%s B=%s SRC=%s H=%s\n"
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
    "run hosts 2 $H --gid-index 1 --json /root/hosts.json --fault-log /root/hosts.jsonl\n"
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
    "echo '== json srun'; cat /root/srun.json; echo; echo '== end'\n"
    "echo '== json hosts'; cat /root/hosts.json; echo; echo '== end'\n"
    "echo '== json hostlog'; echo '['; sed '$!s/$/,/' /root/hosts-case1.jsonl; echo ']';\n"
    "  echo '== end'\n";

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

/* The injectors at host:1: the storm's frames in faulted repetitions only,
 * the idle targeted drop's case invalid. */
static void check_hosts(const char *out) {
  char err[1024];
  err_of(out, "hosts", err, sizeof err);
  ck_assert_msg(exit_of(out, "hosts") == 3, "hosts: exit %d\n%s", exit_of(out, "hosts"), err);
  json_t *doc = doc_of(out, "hosts");
  json_t *storm = jget(doc, "cases.0"), *idle = jget(doc, "cases.1");
  ck_assert_msg(json_is_null(json_object_get(storm, "invalid_why")), "%s",
                json_string_value(json_object_get(storm, "invalid_why")));
  json_int_t generated = jint(storm, "drops.injectors.0.generated");
  /* 20 ms at two frames per 5.12 ms pause time, in each of 2 faulted
   * repetitions: some frames each (the VM's timer is late under TCG). */
  ck_assert_int_ge(generated, 2);
  const char *why = json_string_value(json_object_get(idle, "invalid_why"));
  ck_assert_msg(why && strstr(why, "acted on nothing") && strstr(why, "at=host:1"), "%s",
                why ? why : "(valid)");
  /* The storm's fault log: one line per frame, at host:1, from faulted
   * repetitions only (baselines and faulted ones alternate; the log names
   * each line's repetition, and the document's faulted count is its). */
  json_t *log = doc_of(out, "hostlog");
  ck_assert_int_eq((json_int_t)json_array_size(log), generated);
  for (size_t i = 0; i < json_array_size(log); i++) {
    json_t *e = json_array_get(log, i);
    ck_assert_str_eq(json_string_value(jget(e, "at")), "host:1");
    ck_assert_str_eq(json_string_value(jget(e, "kind")), "pause");
    ck_assert_str_eq(json_string_value(jget(e, "action")), "generate");
  }
  json_decref(log);
  json_decref(doc);
}

START_TEST(mpirun_verbs_on_rxe) {
  char why[256] = "";
  if (!jct__lab_available(why, sizeof why) || system("command -v mpirun >/dev/null 2>&1")) {
    printf("lab_rank: SKIPPED: %s\n", why[0] ? why : "no mpirun (scripts/setup-deps)");
    return;
  }
  char scen[256], script[256], inj[256], hosts[256], fq[256], setup[256];
  craft_tmpname(fq, sizeof fq, ".sh");
  craft_tmpname(setup, sizeof setup, ".json");
  write_fq_setup(setup);
  craft_tmpname(hosts, sizeof hosts, ".yaml");
  FILE *hf = fopen(hosts, "w");
  ck_assert_ptr_nonnull(hf);
  fputs(hosts_text, hf);
  fclose(hf);
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
  fprintf(f, script_text, JCT_BINARY, scen, inj, JCT_SOURCE_DIR, hosts, fq, JCT_BINARY, setup);
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
  ck_assert_msg(strstr(err, "inject drop p=0.01: not at a host (at=host:RANK), and this run has "
                            "no switch"),
                "%s", err);
  ck_assert_uint_eq(count_lines(err), 1);
  check_hosts(out);
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
  unlink(hosts);
  unlink(scen);
  unlink(script);
  ck_assert_int_eq(count_qemu(), qemu_before);
}
END_TEST

/* Both VMs run it: VM 1 starts its slurmd and waits to be stopped; VM 0
 * starts slurmctld and its slurmd, waits for both nodes, and launches. */
static const char two_script[] =
    "#!/bin/sh\n"
    "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n"
    "J=%s SRC=%s CONF=%s G=%s D=%s I=%s B=%s\n"
    "ip link set lo up\n"
    "if ip -4 addr show dev eth0 | grep -q ' 198.18.0.2/'; then me=jctlab-vm1; else "
    "me=jctlab-vm0; fi\n"
    "hostname $me\n"
    "mount -t cgroup2 none /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/system.slice &&\n"
    "  echo '+cpu +memory +pids' >/sys/fs/cgroup/cgroup.subtree_control\n"
    "if ! $SRC/scripts/slurm-local start $CONF $me 2>/root/start.err; then\n"
    "  echo \"== start exit 1\"; sed 's/^/== start err: /' /root/start.err\n"
    "fi\n"
    "if [ $me = jctlab-vm1 ]; then echo '== vm1 slurmd started'; exec sleep 100000; fi\n"
    "export SLURM_CONF=$CONF OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp \\\n"
    "  OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0\n"
    "if ! $SRC/scripts/slurm-local wait $CONF 2 2>/root/wait.err; then\n"
    "  echo '== wait exit 1'; sed 's/^/== wait err: /' /root/wait.err\n"
    "fi\n"
    "run() {\n"
    "  name=$1 scen=$2; shift 2\n"
    "  timeout 300 srun -N 2 --ntasks-per-node=1 --mpi=pmix $J rank $scen --gid-index 1 \"$@\" \\\n"
    "    >/root/$name.out 2>/root/$name.err\n"
    "  echo \"== $name exit $?\"\n"
    "  grep -v '^$' /root/$name.err | sed \"s/^/== $name err: /\" | head -5\n"
    "}\n"
    "run good $G --json /root/good.json\n"
    "run drop $D --json /root/drop.json --fault-log /root/drop.jsonl\n"
    "run idle $I --json /root/idle.json\n"
    "run switch $B\n"
    "$SRC/scripts/slurm-local stop $CONF\n"
    "for n in good drop idle; do echo \"== json $n\"; cat /root/$n.json; echo; echo '== end'; done\n"
    "echo '== json droplog'; echo '['; sed '$!s/$/,/' /root/drop.jsonl; echo ']'; echo '== end'\n";

/* The 2-rank ring of the two VMs, with inject as its one case's. */
static void two_scenario(char *path, size_t len, const char *inject) {
  craft_tmpname(path, len, ".yaml");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "name: lab-rank-two-vms\n" RING2_REPS2
          "counters: [rcvd_seq_err, out_of_seq_request, sent_pkts]\n"
          "cases:\n"
          "  - name: one\n"
          "    inject: [%s]\n",
          inject);
  fclose(f);
}

/* rank's named counter in a document's case c, side. */
static json_int_t rank_counter(json_t *c, const char *side, size_t rank, const char *name) {
  char path[64];
  snprintf(path, sizeof path, "device_counters_by_rank.%s", side);
  json_t *by = jget(c, path);
  ck_assert_uint_eq(json_array_size(by), 2);
  json_t *e = json_array_get(by, rank);
  ck_assert_int_eq(jint(e, "rank"), (json_int_t)rank);
  return jint(jget(e, "counters"), name);
}

START_TEST(srun_two_vms) {
  char why[256] = "";
  if (!jct__lab_available(why, sizeof why) || system("command -v srun >/dev/null 2>&1")) {
    printf("lab_rank: SKIPPED: %s\n", why[0] ? why : "no srun (scripts/setup-deps)");
    return;
  }
  char good[256], drop[256], idle[256], sw[256], script[256], dir[256], cmd[768];
  two_scenario(good, sizeof good, "");
  two_scenario(drop, sizeof drop, "drop pkt=0:5 qp-order=1 at=host:1");
  two_scenario(idle, sizeof idle, "drop psn=5 qp=0xfffff0 at=host:1");
  two_scenario(sw, sizeof sw, "drop p=0.01");
  craft_tmpname(dir, sizeof dir, ".slurm");
  unlink(dir); /* a name only: slurm-local makes the folder */
  snprintf(cmd, sizeof cmd,
           "%s/scripts/slurm-local conf %s 2 jctlab-vm0=198.18.0.1,jctlab-vm1=198.18.0.2 "
           ">/dev/null",
           JCT_SOURCE_DIR, dir);
  ck_assert_int_eq(system(cmd), 0);
  char conf[300];
  snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
  craft_tmpname(script, sizeof script, ".sh");
  FILE *f = fopen(script, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, two_script, JCT_BINARY, JCT_SOURCE_DIR, conf, good, drop, idle, sw);
  fclose(f);
  ck_assert_int_eq(chmod(script, 0755), 0);
  int qemu_before = count_qemu();
  char *argv[] = {JCT_BINARY, "lab-exec", "--vms", "2", "--limit", "900", script, NULL};
  result_t r = run_cmd(argv, NULL, LIMIT_S + 300);
  ck_assert_msg(r.status == 0, "lab-exec --vms 2: exit %d\n%s\n%s", r.status, r.out, r.err);
  const char *out = r.out;
  char err[1024];
  ck_assert_msg(!strstr(out, "== start exit") && !strstr(out, "== wait exit"), "%s", out);
  /* The clean case: two hosts, one Slurm job, both ranks timed. */
  err_of(out, "good", err, sizeof err);
  ck_assert_msg(exit_of(out, "good") == 0, "good: exit %d\n%s", exit_of(out, "good"), out);
  json_t *doc = doc_of(out, "good");
  ck_assert_str_eq(json_string_value(jget(doc, "launch.launcher")), "srun");
  ck_assert_int_eq(jint(doc, "launch.tasks"), 2);
  ck_assert_str_eq(json_string_value(jget(doc, "launch.ranks.0.host")), "jctlab-vm0");
  ck_assert_str_eq(json_string_value(jget(doc, "launch.ranks.1.host")), "jctlab-vm1");
  /* Two kernels, two clocks: rank 1's offset measured within a bound
   * half the MPI round trip over the VMs' segment (TCG: well under 50 ms). */
  json_int_t e1 = jint(doc, "launch.ranks.1.clock_error_ns");
  ck_assert_int_gt(e1, 0);
  ck_assert_int_lt(e1, 50000000);
  ck_assert_int_eq(jint(doc, "launch.clock_error_max_ns"), e1);
  printf("lab_rank: two VMs: rank 1's clock offset %lld ns, error bound %lld ns\n",
         (long long)jint(doc, "launch.ranks.1.clock_offset_ns"), (long long)e1);
  fflush(stdout);
  json_t *c = jget(doc, "cases.0");
  ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s",
                json_string_value(json_object_get(c, "invalid_why")));
  json_t *ops = jget(c, "timeline.baseline.ops");
  ck_assert_uint_eq(json_array_size(ops), 4);
  bool sender[2] = {false, false};
  for (size_t i = 0; i < 4; i++) {
    json_t *op = json_array_get(ops, i);
    sender[jint(op, "rank")] = true;
    ck_assert_int_gt(jint(op, "done_ns"), jint(op, "start_ns"));
  }
  ck_assert(sender[0] && sender[1]);
  for (size_t rank = 0; rank < 2; rank++) /* 2 repetitions of 2 x 128 KiB each */
    ck_assert_int_ge(rank_counter(c, "baseline", rank, "sent_pkts"), 2 * 2 * 32);
  json_decref(doc);
  /* The targeted drop at host:1: one NAK-sequence-error on the sender a
   * faulted repetition, none in the baselines, one fault-log line each. */
  err_of(out, "drop", err, sizeof err);
  ck_assert_msg(exit_of(out, "drop") == 0, "drop: exit %d\n%s", exit_of(out, "drop"), err);
  doc = doc_of(out, "drop");
  c = jget(doc, "cases.0");
  ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s",
                json_string_value(json_object_get(c, "invalid_why")));
  ck_assert_int_eq(jint(c, "drops.injectors.0.dropped"), 2);
  ck_assert_int_eq(rank_counter(c, "faulted", 1, "rcvd_seq_err"), 2);
  ck_assert_int_eq(rank_counter(c, "baseline", 1, "rcvd_seq_err"), 0);
  ck_assert_int_eq(rank_counter(c, "faulted", 0, "rcvd_seq_err"), 0);
  ck_assert_int_ge(rank_counter(c, "faulted", 0, "out_of_seq_request"), 2);
  printf("lab_rank: two VMs, drop at host:1: JCT baseline %lld, %lld ns; faulted %lld, %lld ns; "
         "rank 0's out_of_seq_request %lld\n",
         (long long)jint(c, "baseline.jct_ns.0"), (long long)jint(c, "baseline.jct_ns.1"),
         (long long)jint(c, "faulted.jct_ns.0"), (long long)jint(c, "faulted.jct_ns.1"),
         (long long)rank_counter(c, "faulted", 0, "out_of_seq_request"));
  fflush(stdout);
  json_decref(doc);
  json_t *log = doc_of(out, "droplog");
  ck_assert_uint_eq(json_array_size(log), 2);
  for (size_t i = 0; i < 2; i++) {
    json_t *e = json_array_get(log, i);
    ck_assert_str_eq(json_string_value(jget(e, "at")), "host:1");
    ck_assert_str_eq(json_string_value(jget(e, "action")), "drop");
    ck_assert_str_eq(json_string_value(jget(e, "src")), "198.18.0.2");
    ck_assert_str_eq(json_string_value(jget(e, "dst")), "198.18.0.1");
    ck_assert(json_is_false(jget(e, "retransmission")));
  }
  json_decref(log);
  /* Aimed at nothing: invalid. */
  err_of(out, "idle", err, sizeof err);
  ck_assert_msg(exit_of(out, "idle") == 3, "idle: exit %d\n%s", exit_of(out, "idle"), err);
  doc = doc_of(out, "idle");
  const char *iw = json_string_value(json_object_get(jget(doc, "cases.0"), "invalid_why"));
  ck_assert_msg(iw && strstr(iw, "acted on nothing"), "%s", iw ? iw : "(valid)");
  json_decref(doc);
  /* At the switch: refused before any traffic, one line. */
  err_of(out, "switch", err, sizeof err);
  ck_assert_msg(exit_of(out, "switch") == 2, "switch: exit %d\n%s", exit_of(out, "switch"), err);
  ck_assert_msg(strstr(err, "drop p=0.01: not at a host"), "%s", err);
  unsigned mine = 0; /* jctlab's lines; srun adds its own ("srun: error: ... exit code 2") */
  for (const char *p = err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    mine += strncmp(p, "srun: ", 6) != 0;
  ck_assert_msg(mine == 1, "%s", err);
  result_free(&r);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
  unlink(good), unlink(drop), unlink(idle), unlink(sw), unlink(script);
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
  TCase *two = tcase_create("two_vms");
  tcase_set_timeout(two, LIMIT_S + 400);
  tcase_set_tags(two, "sanitizer-skip");
  tcase_add_test(two, srun_two_vms);
  suite_add_tcase(s, two);
  return s;
}
