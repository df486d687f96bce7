/* lab_rank's parts across the two VMs (lab_rank.h), Slurm over both:
 *   - four (issue 14's acceptance): suites/scenarios/lab-rank4.yaml, a
 *     4-rank ring on verbs, launched twice with four tasks, two a VM
 *     sharing its one rxe0 (ranks 0 and 1 in VM 0, 2 and 3 in VM 1, so
 *     that connections 0 -> 1 and 2 -> 3 stay inside a device and 1 -> 2
 *     and 3 -> 0 cross eth0, rxe to rxe between two kernels):
 *       srun -N 2 -n 4 --ntasks-per-node=2 --mpi=pmix jctlab rank ...
 *       salloc -N 2 -n 4 --ntasks-per-node=2 mpirun -np 4 \
 *         --host jctlab-vm0:2,jctlab-vm1:2 jctlab rank ...
 *     (the VMs have no sshd: Open MPI starts its daemon in VM 1 through
 *     the allocation's srun, as on any Slurm cluster). Each: exit 0, the
 *     document valid and named by its launcher, 4 tasks on their hosts,
 *     every rank sending and every op timed, each rank's named counters
 *     (two tasks' readings of one rxe0 a few ACKs apart, each VM's device
 *     counted once in the sum), clocks: one a host (rank 1 on rank 0's,
 *     offset and error 0; ranks 2 and 3 one estimate of VM 1's), so that
 *     every op inside a VM ends after it starts, and one across the VMs
 *     within the two ends' bounds;
 *   - pair (a 2-rank ring, `srun -N 2 --ntasks-per-node=1`, one task a VM,
 *     so that rank 1's traffic crosses eth0):
 *       - a clean case: valid, launched by srun, the two tasks on the two
 *         hosts, both ranks' ops timed, their clocks' offset and error
 *         bound reported;
 *       - drop pkt=0:5 qp-order=1 at=host:1 (the 6th packet of rank 1's
 *         data, its second QP to send: the first carries its
 *         clear-to-send to rank 0; in its tc-eBPF program on eth0's
 *         egress): exactly one rcvd_seq_err on rank 1 (the sender: rxe's
 *         NAK-sequence-error count) in each faulted repetition and none in
 *         the baselines, one drop a repetition in the document and one
 *         fault-log line each, at host:1;
 *       - drop psn=5 qp=0xfffff0 at=host:1 (a QP that is not there): the
 *         case is invalid, acted on nothing (exit 3);
 *       - drop p=0.01 (at the switch, which there is none of): exit 2, one
 *         line of jctlab's (srun adds its own). */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_rank.h"
#include "testkit.h"

#define SCEN4 "$SRC/suites/scenarios/lab-rank4.yaml"

static const char four_both[] =
    "launch srun4 timeout 300 srun -N 2 -n 4 --ntasks-per-node=2 --mpi=pmix \\\n"
    "  $J rank " SCEN4 " --json /root/srun4.json\n"
    "show srun4 /root/srun4.json\n"
    "launch mpirun4 timeout 300 salloc -Q -N 2 -n 4 --ntasks-per-node=2 \\\n"
    "  mpirun --allow-run-as-root -q -np 4 --host jctlab-vm0:2,jctlab-vm1:2 \\\n"
    "  $J rank " SCEN4 " --json /root/mpirun4.json\n"
    "show mpirun4 /root/mpirun4.json\n";

/* One 4-task launch's document (see the top). */
static void check_four_run(const char *out, const char *name, const char *launcher) {
  char err[1024];
  lab_rank_expect(out, name, 0, err, sizeof err);
  json_t *doc = lab_rank_doc(out, name);
  ck_assert_str_eq(json_string_value(jget(doc, "command")), "rank");
  ck_assert_str_eq(json_string_value(jget(doc, "launch.launcher")), launcher);
  ck_assert_int_eq(jint(doc, "launch.tasks"), 4);
  ck_assert_msg(strstr(json_string_value(jget(doc, "launch.placement")), "RDMA device"), "%s",
                json_string_value(jget(doc, "launch.placement")));
  json_t *ranks = jget(doc, "launch.ranks");
  ck_assert_uint_eq(json_array_size(ranks), 4);
  json_int_t off[4], bound[4], worst = 0;
  for (size_t i = 0; i < 4; i++) {
    json_t *r = json_array_get(ranks, i);
    ck_assert_str_eq(json_string_value(jget(r, "host")), i < 2 ? "jctlab-vm0" : "jctlab-vm1");
    off[i] = jint(r, "clock_offset_ns");
    bound[i] = jint(r, "clock_error_ns");
    if (bound[i] > worst) worst = bound[i];
    ck_assert_int_lt(bound[i], 50000000); /* half an MPI round trip between TCG VMs */
  }
  ck_assert_int_eq(jint(doc, "launch.clock_error_max_ns"), worst);
  /* One host, one clock: rank 1 reads rank 0's (offset and error 0),
   * ranks 2 and 3 VM 1's, measured (error half a round trip, > 0), one
   * estimate for both. */
  ck_assert_msg(off[1] == 0 && bound[1] == 0, "%s: rank 1: offset %lld, bound %lld", name,
                (long long)off[1], (long long)bound[1]);
  ck_assert_int_gt(bound[2], 0);
  ck_assert_msg(off[2] == off[3] && bound[2] == bound[3],
                "%s: ranks 2 and 3: offsets %lld and %lld, bounds %lld and %lld", name,
                (long long)off[2], (long long)off[3], (long long)bound[2], (long long)bound[3]);
  json_t *c = jget(doc, "cases.0");
  ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s: %s", name,
                json_string_value(json_object_get(c, "invalid_why")));
  json_t *jct = jget(c, "baseline.jct_ns");
  ck_assert_uint_eq(json_array_size(jct), 2);
  for (size_t i = 0; i < 2; i++)
    ck_assert_int_gt(json_integer_value(json_array_get(jct, i)), 0);
  /* A 4-rank ring: 2 x 3 steps of 4 sends, each timed, by all 4 ranks. */
  json_t *ops = jget(c, "timeline.baseline.ops");
  ck_assert_uint_eq(json_array_size(ops), 24);
  /* Each op's start on its sender's clock, its done on its receiver's:
   * after it on one host's clock (0 -> 1, 2 -> 3), across the two within
   * the two bounds (1 -> 2, 3 -> 0). */
  unsigned sends[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < json_array_size(ops); i++) {
    json_t *op = json_array_get(ops, i);
    json_int_t rank = jint(op, "rank"), dst = jint(op, "dst"), start = jint(op, "start_ns"),
               done = jint(op, "done_ns");
    ck_assert(rank >= 0 && rank < 4 && dst >= 0 && dst < 4);
    sends[rank]++;
    ck_assert_int_ge(start, 0);
    json_int_t slack = rank / 2 == dst / 2 ? 0 : bound[rank] + bound[dst];
    ck_assert_msg(done + slack > start, "%s: op %lld (%lld -> %lld) done at %lld, started at %lld",
                  name, (long long)jint(op, "op"), (long long)rank, (long long)dst, (long long)done,
                  (long long)start);
    ck_assert_int_le(done, jint(c, "timeline.baseline.jct_ns") + start);
  }
  for (size_t i = 0; i < 4; i++)
    ck_assert_uint_eq(sends[i], 6);
  json_int_t sent[4];
  for (size_t i = 0; i < 4; i++) { /* 2 repetitions of 6 x 64 KiB at a 4096-byte MTU */
    sent[i] = lab_rank_counter(c, "baseline", 4, i, "sent_pkts");
    ck_assert_int_ge(sent[i], 2 * 6 * 16);
  }
  /* Each VM's rxe0 read by its two tasks, each around its own part: at
   * most one 64 KiB message's packets apart a repetition (16 data packets
   * and as many ACKs: a VM's other task may still be receiving its last
   * one), where a task's own traffic alone would be half; counted once in
   * the sum: ranks 0's and 2's. */
  ck_assert_msg(labs((long)(sent[0] - sent[1])) <= 2 * 32 &&
                    labs((long)(sent[2] - sent[3])) <= 2 * 32,
                "%s: sent_pkts by rank %lld %lld %lld %lld", name, (long long)sent[0],
                (long long)sent[1], (long long)sent[2], (long long)sent[3]);
  ck_assert_int_eq(jint(c, "baseline_device_counters.sent_pkts"), sent[0] + sent[2]);
  printf("lab_rank: %s: 4 tasks, JCT %lld, %lld ns; VM 1's clock offset %lld ns, bound %lld ns; "
         "sent_pkts %lld %lld %lld %lld\n",
         name, (long long)json_integer_value(json_array_get(jct, 0)),
         (long long)json_integer_value(json_array_get(jct, 1)), (long long)off[2],
         (long long)bound[2], (long long)sent[0], (long long)sent[1], (long long)sent[2],
         (long long)sent[3]);
  fflush(stdout);
  json_decref(doc);
}

static void check_four(const char *out) {
  check_four_run(out, "srun4", "srun");
  check_four_run(out, "mpirun4", "mpirun");
}

const lab_rank_part_t lab_rank_four = {.name = "four", .both = four_both, .check = check_four};

/* The 2-rank ring a VM each, with each case's one injector. */
static const char pair_both[] =
    "scen2() { # scen2 FILE INJECT: the ring, its one case injecting INJECT\n"
    "  printf '%s\\n' 'name: lab-rank-two-vms' \\\n"
    "    'synth: {algorithm: ring, ranks: 2, bytes: 256KiB}' \\\n"
    "    'rate: 100mbit' 'reps: 2' 'transport: verbs' 'timeout: 16' 'seed: 7' \\\n"
    "    'counters: [rcvd_seq_err, out_of_seq_request, sent_pkts]' 'cases:' '  - name: one' \\\n"
    "    \"    inject: [$2]\" >$1\n"
    "}\n"
    "scen2 /root/good.yaml ''\n"
    "scen2 /root/drop.yaml 'drop pkt=0:5 qp-order=1 at=host:1'\n"
    "scen2 /root/idle.yaml 'drop psn=5 qp=0xfffff0 at=host:1'\n"
    "scen2 /root/switch.yaml 'drop p=0.01'\n"
    "run good /root/good.yaml --json /root/good.json\n"
    "run drop /root/drop.yaml --json /root/drop.json --fault-log /root/drop.jsonl\n"
    "run idle /root/idle.yaml --json /root/idle.json\n"
    "run switch /root/switch.yaml\n"
    "for n in good drop idle; do show $n /root/$n.json; done\n"
    "showlog droplog /root/drop.jsonl\n";

static void check_pair_good(const char *out) {
  char err[1024];
  lab_rank_expect(out, "good", 0, err, sizeof err);
  json_t *doc = lab_rank_doc(out, "good");
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
  for (size_t i = 0; i < 4; i++) { /* start and done on two clocks, within rank 1's bound */
    json_t *op = json_array_get(ops, i);
    sender[jint(op, "rank")] = true;
    ck_assert_int_gt(jint(op, "done_ns") + e1, jint(op, "start_ns"));
  }
  ck_assert(sender[0] && sender[1]);
  for (size_t rank = 0; rank < 2; rank++) /* 2 repetitions of 2 x 128 KiB each */
    ck_assert_int_ge(lab_rank_counter(c, "baseline", 2, rank, "sent_pkts"), 2 * 2 * 32);
  json_decref(doc);
}

/* The targeted drop at host:1: one NAK-sequence-error on the sender a
 * faulted repetition, none in the baselines, one fault-log line each. */
static void check_pair_drop(const char *out) {
  char err[1024];
  lab_rank_expect(out, "drop", 0, err, sizeof err);
  json_t *doc = lab_rank_doc(out, "drop");
  json_t *c = jget(doc, "cases.0");
  ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s",
                json_string_value(json_object_get(c, "invalid_why")));
  ck_assert_int_eq(jint(c, "drops.injectors.0.dropped"), 2);
  ck_assert_int_eq(lab_rank_counter(c, "faulted", 2, 1, "rcvd_seq_err"), 2);
  ck_assert_int_eq(lab_rank_counter(c, "baseline", 2, 1, "rcvd_seq_err"), 0);
  ck_assert_int_eq(lab_rank_counter(c, "faulted", 2, 0, "rcvd_seq_err"), 0);
  json_int_t oos = lab_rank_counter(c, "faulted", 2, 0, "out_of_seq_request");
  ck_assert_int_ge(oos, 2);
  printf("lab_rank: two VMs, drop at host:1: JCT baseline %lld, %lld ns; faulted %lld, %lld ns; "
         "rank 0's out_of_seq_request %lld\n",
         (long long)jint(c, "baseline.jct_ns.0"), (long long)jint(c, "baseline.jct_ns.1"),
         (long long)jint(c, "faulted.jct_ns.0"), (long long)jint(c, "faulted.jct_ns.1"),
         (long long)oos);
  fflush(stdout);
  json_decref(doc);
  json_t *log = lab_rank_doc(out, "droplog");
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
}

static void check_pair(const char *out) {
  check_pair_good(out);
  check_pair_drop(out);
  /* Aimed at nothing: invalid. */
  char err[1024];
  lab_rank_expect(out, "idle", 3, err, sizeof err);
  json_t *doc = lab_rank_doc(out, "idle");
  const char *iw = json_string_value(json_object_get(jget(doc, "cases.0"), "invalid_why"));
  ck_assert_msg(iw && strstr(iw, "acted on nothing"), "%s", iw ? iw : "(valid)");
  json_decref(doc);
  /* At the switch: refused before any traffic, one line. */
  lab_rank_expect(out, "switch", 2, err, sizeof err);
  ck_assert_msg(strstr(err, "drop p=0.01: not at a host"), "%s", err);
  unsigned mine = 0; /* jctlab's lines; srun adds its own ("srun: error: ... exit code 2") */
  for (const char *p = err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    mine += strncmp(p, "srun: ", 6) != 0;
  ck_assert_msg(mine == 1, "%s", err);
}

const lab_rank_part_t lab_rank_pair = {.name = "pair", .both = pair_both, .check = check_pair};
