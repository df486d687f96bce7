/* lab_rank's parts on one VM each (lab_rank.h), run while the other VM is
 * busy with its own:
 *   - refusals (`mpirun --oversubscribe -np 2` on one VM's one rxe0): in
 *     VM 1, --gid-index 7 (an empty entry) and 0 (rxe's link-local GID,
 *     which reaches no peer here: both tasks on one device) exit 2 with one
 *     line naming gid_index; in VM 0, -np 3 for a job of 2 ranks: exit 2,
 *     the world's size named; a case with a drop at the switch: exit 2, one
 *     line, no switch for it to act at;
 *   - hosts (VM 0, the same two tasks): injectors at host:1 (rank 1's
 *     task, on rxe0's netdev eth0, with the agent's code): a PFC storm
 *     sends its frames from eth0 in faulted repetitions only, counted in
 *     the document and logged at host:1; a targeted drop sees nothing here
 *     (rxe loops both tasks' packets back inside the device, past eth0's
 *     egress) and makes its case invalid, acted on nothing (exit 3);
 *   - fq (VM 1, before its slurmd starts; the VM's kernel has fq, this
 *     machine's has not): `jctlab agent --listen --no-net --netdev eth0`
 *     given `delay 1ms at=host:0` over its control connection puts
 *     jctlab's fq (fc7:) at eth0's root; `tc qdisc show dev eth0` reads as
 *     before it once the agent is SIGKILLed (its guard), after a clean
 *     quit, with a tbf root of the host's (made again), and when agent and
 *     guard were both killed, after the next agent starts (it removes the
 *     stale fq); then agents' pause tcase (this runner) on the VM's
 *     kernel: the shaper's fq under its tbf, kept through a pause. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jctlab/schedule.h"
#include "lab_rank.h"
#include "schedule/schedule_json.h"
#include "testkit.h"

/* A 2-rank ring on verbs (written into VM 0's /root), the refusals' job. */
static const char refusals_alone[] =
    "cat >/root/ring2.yaml <<'EOF'\n"
    "name: lab-rank-verbs\n"
    "synth: {algorithm: ring, ranks: 2, bytes: 256KiB}\n"
    "rate: 100mbit\n"
    "transport: verbs\n"
    "counters: [rcvd_seq_err, out_of_seq_request, completer_retry_err, sent_pkts]\n"
    "cases:\n"
    "  - name: clean\n"
    "    inject: []\n"
    "EOF\n"
    "cat >/root/switch2.yaml <<'EOF'\n"
    "synth: {algorithm: ring, ranks: 2, bytes: 64KiB}\n"
    "transport: verbs\n"
    "cases:\n"
    "  - inject: [drop p=0.01]\n"
    "EOF\n"
    "mpi1 world 3 /root/ring2.yaml --transport verbs\n"
    "mpi1 inject 2 /root/switch2.yaml --transport verbs\n";

/* The GID refusals in VM 1 meanwhile, on its own rxe0. */
static const char refusals_vm1[] = "cat >/root/gid2.yaml <<'EOF'\n"
                                   "synth: {algorithm: ring, ranks: 2, bytes: 256KiB}\n"
                                   "transport: verbs\n"
                                   "cases:\n"
                                   "  - inject: []\n"
                                   "EOF\n"
                                   "mpi1 badgid 2 /root/gid2.yaml --gid-index 7\n"
                                   "mpi1 linklocal 2 /root/gid2.yaml --gid-index 0\n";

/* NAME's stderr, which must be the one line of an exit 2 saying want. */
static void refused(const char *out, const char *name, const char *want, bool one_line) {
  char err[1024];
  lab_rank_expect(out, name, 2, err, sizeof err);
  ck_assert_msg(strstr(err, want), "%s: %s", name, err);
  if (one_line) ck_assert_uint_eq(count_lines(err), 1);
}

static void check_refusals(const char *out) {
  refused(out, "badgid", "gid_index 7: no GID there on rxe0 port 1 (empty entry)", true);
  refused(out, "linklocal", "gid_index 0: the peer's GID", false);
  refused(out, "world", "the MPI world has 3 tasks but the job has 2 ranks", false);
  refused(out, "inject",
          "inject drop p=0.01: not at a host (at=host:RANK), and this run has no switch", true);
}

const lab_rank_part_t lab_rank_refusals = {
    .name = "refusals", .vm1 = refusals_vm1, .alone = refusals_alone, .check = check_refusals};

/* Injectors at rank 1's host, a case each, 2 repetitions a side (the idle
 * one last: an invalid case ends the run's later ones). */
static const char hosts_alone[] =
    "cat >/root/hosts.yaml <<'EOF'\n"
    "name: lab-rank-hosts\n"
    "synth: {algorithm: ring, ranks: 2, bytes: 256KiB}\n"
    "rate: 100mbit\n"
    "reps: 2\n"
    "transport: verbs\n"
    "timeout: 16\n"
    "seed: 7\n"
    "cases:\n"
    "  - name: storm\n"
    "    inject: [pause prio=3 quanta=1000 link=100mbit for=20ms at=host:1]\n"
    "  - name: idle\n"
    "    inject: [drop pkt=0:5 qp-order=0 at=host:1]\n"
    "EOF\n"
    "mpi1 hosts 2 /root/hosts.yaml --gid-index 1 --json /root/hosts.json \\\n"
    "  --fault-log /root/hosts.jsonl\n"
    "show hosts /root/hosts.json\n"
    "showlog hostlog /root/hosts-case1.jsonl\n";

/* The storm's frames in faulted repetitions only, the idle targeted
 * drop's case invalid. */
static void check_hosts(const char *out) {
  char err[1024];
  lab_rank_expect(out, "hosts", 3, err, sizeof err);
  json_t *doc = lab_rank_doc(out, "hosts");
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
  json_t *log = lab_rank_doc(out, "hostlog");
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

const lab_rank_part_t lab_rank_hosts = {
    .name = "hosts", .alone = hosts_alone, .check = check_hosts};

/* The setup line giving rank 0's agent `delay 1ms at=host:0` (its seed
 * named, so the agent's is the same), as FQ_SETUP='...'. */
static void fq_vars(FILE *script) {
  char e[256] = "";
  jct_schedule_t *sch;
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 2, 65536, 1, e, sizeof e), 0);
  json_t *m = json_pack("{s:s,s:i,s:o,s:[{s:s,s:i,s:i,s:i}]}", "msg", "setup", "rank", 0,
                        "schedule", jct__schedule_json(sch), "host_drops", "spec",
                        "delay 1ms seed=5 at=host:0", "index", 0, "run_seed", 1, "seed", 5);
  char *text = json_dumps(m, JSON_COMPACT);
  ck_assert_ptr_nonnull(text);
  ck_assert_ptr_null(strchr(text, '\'')); /* inside single quotes */
  fprintf(script, "FQ_SETUP='%s'\n", text);
  free(text);
  /* This very runner, for agents' pause tcase on the VM's kernel (sch_fq). */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ck_assert_int_gt(n, 0);
  self[n] = '\0';
  fprintf(script, "CK='%s'\n", self);
  json_decref(m);
  jct_schedule_free(sch);
}

/* In VM 1, bash (for /dev/tcp): "== fq ..." lines. */
static const char fq_vm1[] =
    "echo \"$FQ_SETUP\" >/root/fq-setup.json\n"
    "cat >/root/fq.sh <<'EOF'\n"
    "J=$1 SETUP=$2 ADDR=$3\n"
    "show() { tc qdisc show dev eth0; }\n"
    "start() { # an agent on eth0 given the delay: its pid in A, its fq seen in FQ\n"
    "  $J agent --listen 127.0.0.1:$1 --rank 0 --nranks 2 --no-net --netdev eth0 \\\n"
    "    --addr $ADDR 2>>/root/agent.err &\n"
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
    "sed 's/^/== fq err: /' /root/agent.err\n"
    "EOF\n"
    "bash /root/fq.sh $J /root/fq-setup.json $ADDR 2>&1\n"
    "CK_RUN_SUITE=agents CK_RUN_CASE=pause $CK 2>&1 | sed 's/^/== fq ck: /'\n";

/* "== fq KEY ": the rest of its line. */
static const char *fq_line(const char *out, const char *key, char *buf, size_t len) {
  char k[64];
  snprintf(k, sizeof k, "== fq %s ", key);
  return lab_rank_line(out, k, buf, len);
}

/* A host delay's fq undone however its agent ends. */
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
  /* agents' pause tcase on the lab's kernel, which has sch_fq: the
   * shaper's fq under its tbf, kept through a pause. */
  ck_assert_msg(strstr(out, "== fq ck: agents: the shaper's queues, with sch_fq: set"), "%s", out);
  ck_assert_msg(strstr(out, "== fq ck: 100%: Checks: 2, Failures: 0, Errors: 0"), "%s", out);
}

const lab_rank_part_t lab_rank_fq = {
    .name = "fq", .vars = fq_vars, .vm1 = fq_vm1, .check = check_fq};
