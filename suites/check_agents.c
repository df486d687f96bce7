/* The orchestrator's side of the agents' protocol (harness/lab/agents.h), with
 * fake agents on socketpairs: a hello is taken only from the rank it
 * names, a done's op timings land on the orchestrator's clock, and an
 * agent that breaks the protocol (not JSON, an answer nobody asked for,
 * another rank's hello, an error, a closed channel) fails the set with a
 * reason that names the agent. No VM, no RDMA device. */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <jansson.h>
#include <netinet/in.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include "harness/lab/agents.h"
#include "harness/orch/backend.h"
#ifdef JCT_HAVE_VERBS
#include "harness/lab/agent_host.h"
#include "harness/lab/agent_link.h"
#endif
#include "schedule/schedule_json.h"
#include "harness/transport/rdma_sysfs.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/schedule.h"
#include "craft.h"
#include "nskit.h"
#include "suites.h"
#include "testkit.h"

typedef struct {
  uv_loop_t loop;
  int host[2], agent[2]; /* [i]: the orchestrator's end, the fake agent's end */
  jct__agents_t *a;
} rig_t;

static void rig_open(rig_t *r) {
  uv_loop_init(&r->loop);
  for (int i = 0; i < 2; i++) {
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    r->host[i] = sv[0];
    r->agent[i] = sv[1];
  }
  ck_assert_int_eq(jct__agents_new(&r->a, &r->loop, 2, r->host), 0);
}

static void rig_close(rig_t *r) {
  jct__agents_free(r->a);
  uv_run(&r->loop, UV_RUN_NOWAIT);
  uv_loop_close(&r->loop);
  for (int i = 0; i < 2; i++) {
    close(r->host[i]);
    close(r->agent[i]);
  }
}

static void say(rig_t *r, int i, const char *line) {
  ck_assert_int_eq(write(r->agent[i], line, strlen(line)), (ssize_t)strlen(line));
}

/* Run the loop until the phase is answered or failed (bounded). */
static void spin(rig_t *r) {
  for (int k = 0; k < 50 && jct__agents_waiting(r->a) && !jct__agents_failed(r->a, NULL, 0); k++)
    uv_run(&r->loop, UV_RUN_NOWAIT);
}

static void hellos(rig_t *r) {
  jct__agents_expect_hello(r->a);
  say(r, 0,
      "{\"msg\":\"hello\",\"rank\":0,\"kernel\":\"6.12\",\"dev\":\"rxe0\",\"netdev\":\"eth0\","
      "\"addr\":\"198.18.0.1\"}\n");
  /* Split across two writes: lines are reassembled. */
  say(r, 1, "{\"msg\":\"hello\",\"rank\":1,");
  spin(r);
  ck_assert(jct__agents_waiting(r->a));
  say(r, 1, "\"addr\":\"198.18.0.2\"}\n");
  spin(r);
  ck_assert(!jct__agents_waiting(r->a));
  ck_assert_int_eq(jct__agents_failed(r->a, NULL, 0), 0);
}

/* The job the rig's two agents run: a ring of 2 ranks, 1 MiB. */
static jct_schedule_t *ring2(void) {
  jct_schedule_t *s;
  char err[256];
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 2, 1 << 20, 1, err, sizeof err), 0);
  return s;
}

/* Both agents answer the setup: listening. */
static void both_listening(rig_t *r) {
  say(r, 0, "{\"msg\":\"listening\"}\n");
  say(r, 1, "{\"msg\":\"listening\"}\n");
  spin(r);
}

START_TEST(a_run_round_trip) {
  rig_t r;
  rig_open(&r);
  hellos(&r);
  ck_assert_ptr_nonnull(strstr(jct__agents_hello(r.a, 0), "rxe0 on eth0 198.18.0.1"));
  jct_schedule_t *s = ring2();
  jct__agents_setup_t so = {.timeout = 14,
                            .cts_timeout = 18,
                            .retry_cnt = 7,
                            .tos = 104,
                            .slots = 8,
                            .rate_bps = 100000000,
                            .mtu = 9000};
  ck_assert_int_eq(jct__agents_setup(r.a, s, &so), 0);
  /* What rank 1's agent got: its rank, the schedule and every rank's address. */
  char buf[65536];
  ssize_t n = read(r.agent[1], buf, sizeof buf - 1);
  ck_assert_int_gt(n, 0);
  buf[n] = '\0';
  json_t *m = json_loads(buf, 0, NULL);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "rank")), 1);
  /* The QPs' timer, and the destinations' for their clear-to-sends. */
  ck_assert_int_eq(json_integer_value(json_object_get(m, "timeout")), 14);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "cts_timeout")), 18);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(m, "addrs"), 1)), "198.18.0.2");
  ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(m, "schedule"), "ops")),
                    s->nops);
  json_decref(m);
  ck_assert_int_gt(read(r.agent[0], buf, sizeof buf), 0);
  both_listening(&r);
  ck_assert(!jct__agents_waiting(r.a));
  uint64_t before = jct_now_ns();
  ck_assert_int_eq(jct__agents_run(r.a, 7, true), 0);
  uint64_t after = jct_now_ns();
  say(&r, 0,
      "{\"msg\":\"done\",\"rep\":7,\"ops\":[[0,5,10,-1],[1,-1,-1,2000]],\"counters\":"
      "{\"rcvd_seq_err\":2}}\n");
  /* Rank 1's op 1 started at its run's very start (its clear-to-send came
   * first): 0 is a time, -1 what did not happen. */
  say(&r, 1,
      "{\"msg\":\"done\",\"rep\":7,\"ops\":[[0,-1,-1,1000],[1,0,0,-1]],\"counters\":"
      "{\"rcvd_seq_err\":1,\"sent_pkts\":9}}\n");
  spin(&r);
  ck_assert(!jct__agents_waiting(r.a));
  jct_op_timing_t t[4];
  ck_assert_int_eq(jct__agents_timing(r.a, t, 4), 0);
  /* Agent times are from its run: they land after the run was sent. */
  ck_assert_uint_ge(t[0].start_ns, before + 10);
  ck_assert_uint_le(t[0].start_ns, after + 10);
  /* Each agent's times are placed at the moment run was sent to it (the
   * sends are a few microseconds apart). */
  ck_assert_uint_ge(t[0].done_ns - t[0].start_ns, 990);
  ck_assert_uint_le(t[0].done_ns - t[0].start_ns, 990 + (after - before));
  ck_assert_uint_ge(t[1].start_ns, before);
  ck_assert_uint_le(t[1].start_ns, after);
  ck_assert_uint_eq(t[0].ready_ns, t[0].start_ns - 5);
  jct_dev_counters_t c;
  jct__agents_counters(r.a, &c);
  ck_assert_uint_eq(jct_dev_counters_get(&c, "rcvd_seq_err"), 3);
  ck_assert_uint_eq(jct_dev_counters_get(&c, "sent_pkts"), 9);
  /* Rank 1's agent read its run 50 us late: op 0, posted by rank 0 at 50
   * us, is received at 1 us of rank 1's run. Its times move later by the
   * least lag that has op 0 received after its post, all by the same. */
  ck_assert_int_eq(jct__agents_run(r.a, 9, false), 0);
  say(&r, 0, "{\"msg\":\"done\",\"rep\":9,\"ops\":[[0,50000,50000,-1],[1,-1,-1,70000]]}\n");
  say(&r, 1, "{\"msg\":\"done\",\"rep\":9,\"ops\":[[0,-1,-1,1000],[1,3000,3000,-1]]}\n");
  spin(&r);
  ck_assert_int_eq(jct__agents_timing(r.a, t, 4), 0);
  ck_assert_uint_ge(t[0].done_ns, t[0].start_ns);
  ck_assert_uint_le(t[0].done_ns - t[0].start_ns, after - before);
  ck_assert_uint_eq(t[1].start_ns - t[0].done_ns, 2000);
  ck_assert_uint_eq(t[1].ready_ns, t[1].start_ns);
  ck_assert_uint_ge(t[1].done_ns, t[1].start_ns);
  /* An op outside the schedule is refused. */
  ck_assert_int_eq(jct__agents_run(r.a, 8, false), 0);
  say(&r, 0, "{\"msg\":\"done\",\"rep\":8,\"ops\":[[99,1,1,1]]}\n");
  say(&r, 1, "{\"msg\":\"done\",\"rep\":8,\"ops\":[]}\n");
  spin(&r);
  ck_assert_int_eq(jct__agents_timing(r.a, t, 4), JCT_EINVAL);
  jct_schedule_free(s);
  rig_close(&r);
}
END_TEST

/* A VM stopped by a stall (jct__agents_frozen): its clock lost the stall,
 * so its times after the stall's start are placed past it, those before
 * it are not; a run forgets them. Rank 1's VM stopped 1 ms into the run
 * for 10 ms: its receipt of op 0 at 2 ms by its clock was at 12 ms. */
START_TEST(frozen_host_times) {
  rig_t r;
  rig_open(&r);
  hellos(&r);
  for (int pass = 0; pass < 2; pass++) {
    uint64_t before = jct_now_ns();
    ck_assert_int_eq(jct__agents_run(r.a, 3 + (uint32_t)pass, true), 0);
    uint64_t after = jct_now_ns();
    if (pass == 0) {
      ck_assert_int_eq(jct__agents_frozen(r.a, 1, after + 1000000, 10000000), 0);
      ck_assert_int_eq(jct__agents_frozen(r.a, 2, after, 1), JCT_EINVAL);
    }
    char line[160];
    snprintf(line, sizeof line,
             "{\"msg\":\"done\",\"rep\":%d,\"ops\":[[0,0,0,-1],[1,-1,-1,3000000]]}\n", 3 + pass);
    say(&r, 0, line);
    snprintf(line, sizeof line,
             "{\"msg\":\"done\",\"rep\":%d,\"ops\":[[0,-1,-1,2000000],[1,500000,500000,-1]]}\n",
             3 + pass);
    say(&r, 1, line);
    spin(&r);
    ck_assert(!jct__agents_waiting(r.a));
    jct_op_timing_t t[4];
    ck_assert_int_eq(jct__agents_timing(r.a, t, 4), 0);
    uint64_t slack = after - before, want = pass == 0 ? 12000000 : 2000000;
    ck_assert_uint_ge(t[0].done_ns - t[0].start_ns + slack, want);
    ck_assert_uint_le(t[0].done_ns - t[0].start_ns, want + slack);
    ck_assert_uint_ge(t[1].start_ns, before + 500000); /* before the stall: where it was */
    ck_assert_uint_le(t[1].start_ns, after + 500000);
  }
  rig_close(&r);
}
END_TEST

/* Each way an agent can break the protocol fails the set, naming it. */
static void broken(const char *line, int who, const char *want) {
  rig_t r;
  rig_open(&r);
  jct__agents_expect_hello(r.a);
  say(&r, who, line);
  spin(&r);
  char why[512] = "";
  ck_assert_int_ne(jct__agents_failed(r.a, why, sizeof why), 0);
  ck_assert_msg(strstr(why, want), "'%s' gave '%s'", line, why);
  char agent[32];
  snprintf(agent, sizeof agent, "rank %d's agent", who);
  ck_assert_msg(strstr(why, agent), "'%s' does not name %s", why, agent);
  rig_close(&r);
}

START_TEST(protocol_errors_name_the_agent) {
  broken("this is not json\n", 0, "not a JSON object");
  broken("[1,2]\n", 1, "not a JSON object");
  broken("{\"rank\":0}\n", 0, "without \"msg\"");
  broken("{\"msg\":\"hello\",\"rank\":1}\n", 0, "says it is rank 1");
  broken("{\"msg\":\"done\",\"rep\":1}\n", 1, "sent \"done\" while hello was expected");
  broken("{\"msg\":\"error\",\"why\":\"rxe0 did not become ACTIVE\"}\n", 1, "ACTIVE");
  /* A channel closed by the agent. */
  rig_t r;
  rig_open(&r);
  jct__agents_expect_hello(r.a);
  close(r.agent[1]);
  r.agent[1] = -1;
  spin(&r);
  char why[512] = "";
  ck_assert_int_ne(jct__agents_failed(r.a, why, sizeof why), 0);
  ck_assert_ptr_nonnull(strstr(why, "rank 1's agent: closed its control channel"));
  rig_close(&r);
}
END_TEST

/* The agent's side: `jctlab agent --listen` answers bad input from the
 * orchestrator with an error line and goes on, answers reset and a second
 * hello (a kept lab), and ends on quit. */
static void agent_says2(int fd, const char *line, const char *want, const char *also);
static void agent_says(int fd, const char *line, const char *want) {
  agent_says2(fd, line, want, NULL);
}

static void agent_says2(int fd, const char *line, const char *want, const char *also) {
  if (line) ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
  char buf[4096];
  size_t len = 0;
  for (int k = 0; k < 100 && !memchr(buf, '\n', len); k++) {
    ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
    if (n > 0) len += (size_t)n;
    if (n <= 0) sleep_ms(20);
  }
  buf[len] = '\0';
  ck_assert_msg(strstr(buf, want), "sent %s, got '%s', not '%s'", line ? line : "nothing", buf,
                want);
  if (also) ck_assert_msg(strstr(buf, also), "got '%s', without '%s'", buf, also);
}

START_TEST(agent_answers_bad_input) {
#ifndef JCT_HAVE_VERBS
  /* Without rdma-core the agent only says it is not built. */
  char *off[] = {JCT_BINARY, "agent", "--listen", "127.0.0.1:1", NULL};
  result_t o = run_cmd(off, NULL, 10);
  ck_assert_int_eq(o.status, 2);
  ck_assert_ptr_nonnull(strstr(o.err, "not supported in this build"));
  result_free(&o);
  return;
#endif
  char port[32];
  int p = 43000 + (int)(getpid() % 2000);
  snprintf(port, sizeof port, "127.0.0.1:%d", p);
  char *argv[] = {JCT_BINARY, "agent", "--listen", port,     "--rank",    "1",
                  "--nranks", "2",     "--no-net", "--addr", "127.0.0.1", NULL};
  child_t c = spawn(argv, NULL);
  int fd = -1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  for (int k = 0; k < 100; k++) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) break;
    close(fd);
    fd = -1;
    sleep_ms(20);
  }
  ck_assert_int_ge(fd, 0);
  agent_says(fd, NULL, "\"msg\":\"hello\",\"rank\":1");
  agent_says(fd, "not json\n", "not a JSON object");
  agent_says(fd, "{\"rank\":1}\n", "without");
  agent_says(fd, "{\"msg\":\"dance\"}\n", "unknown message");
  agent_says(fd, "{\"msg\":\"run\",\"rep\":1}\n", "run before the connections are up");
  agent_says(fd, "{\"msg\":\"setup\",\"rank\":1}\n", "setup without a schedule");
  /* RDMA settings this host cannot honour: bad input, naming the word. */
  jct_schedule_t *sch;
  char e[256];
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 2, 65536, 1, e, sizeof e), 0);
  const char *bad[][2] = {{"\"device\":\"../sys\"", "device '../sys' is not an RDMA device"},
                          {"\"device\":\"nosuch9\"", "device 'nosuch9': no such RDMA device"},
                          {"\"counters\":[\"a/b\"]", "counters: 'a/b' is not a counter's name"},
                          /* ... with the ranks' addresses read first (and freed) */
                          {"\"addrs\":[\"198.18.0.1\",\"198.18.0.2\"],\"device\":\"nosuch9\"",
                           "device 'nosuch9': no such RDMA device"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *sj = jct__schedule_json(sch);
    char *text = json_dumps(sj, JSON_COMPACT);
    char line[8192];
    snprintf(line, sizeof line, "{\"msg\":\"setup\",\"rank\":1,\"schedule\":%s,%s}\n", text,
             bad[i][0]);
    free(text);
    json_decref(sj);
    agent_says2(fd, line, bad[i][1], "\"bad_input\":true");
    ck_assert_int_eq(write(fd, "{\"msg\":\"dance\"}\n", 16), 16);
    agent_says(fd, NULL, "unknown message"); /* still serving */
  }
  /* Addresses that are not one IPv4 address per rank: an error, no more. */
  const char *bad_addrs[][2] = {{"[\"198.18.0.1\"]", "addrs is not one IPv4 address per rank"},
                                {"[\"198.18.0.1\",\"rank1\"]", "addrs holds something that is not"}};
  for (size_t i = 0; i < sizeof bad_addrs / sizeof bad_addrs[0]; i++) {
    json_t *sj = jct__schedule_json(sch);
    char *text = json_dumps(sj, JSON_COMPACT);
    char line[8192];
    snprintf(line, sizeof line, "{\"msg\":\"setup\",\"rank\":1,\"schedule\":%s,\"addrs\":%s}\n",
             text, bad_addrs[i][0]);
    free(text);
    json_decref(sj);
    agent_says(fd, line, bad_addrs[i][1]);
  }
  jct_schedule_free(sch);
  /* A kept lab's next run: reset, then hello again; nothing set up after. */
  agent_says(fd, "{\"msg\":\"reset\"}\n", "{\"msg\":\"reset\"}");
  agent_says(fd, "{\"msg\":\"hello\"}\n", "\"msg\":\"hello\",\"rank\":1");
  agent_says(fd, "{\"msg\":\"run\",\"rep\":2}\n", "run before the connections are up");
  agent_says(fd, "{\"msg\":\"quit\"}\n", "bye");
  result_t r = finish(&c, 10);
  ck_assert_int_eq(r.status, 0);
  result_free(&r);
  close(fd);
}
END_TEST


/* ---- RDMA settings and counters (harness/transport/rdma_sysfs.h) ------- */

/* Under --tdf 4 an agent's NIC honours a pause for the wall time the
 * wall rate gives (agent_pfc.c), so its nic_paused_ns comes back divided
 * by 4, emulated time as every time reported (a run at --tdf 4 reported
 * 2.49 s paused for a 300 ms storm); its counts stay as they are. */
START_TEST(dilated_agent_time_counters) {
  rig_t r;
  rig_open(&r);
  hellos(&r);
  jct_schedule_t *s = ring2();
  jct__agents_setup_t so = {.timeout = 14, .retry_cnt = 7, .slots = 8, .tdf = 4};
  ck_assert_int_eq(jct__agents_setup(r.a, s, &so), 0);
  char buf[65536];
  ck_assert_int_gt(read(r.agent[0], buf, sizeof buf), 0);
  ck_assert_int_gt(read(r.agent[1], buf, sizeof buf), 0);
  both_listening(&r);
  ck_assert_int_eq(jct__agents_run(r.a, 1, true), 0);
  say(&r, 0,
      "{\"msg\":\"done\",\"rep\":1,\"ops\":[],\"counters\":{\"nic_paused_ns\":"
      "2400000000,\"rcvd_seq_err\":8}}\n");
  say(&r, 1, "{\"msg\":\"done\",\"rep\":1,\"ops\":[],\"counters\":{\"nic_paused_ns\":4000}}\n");
  spin(&r);
  jct_dev_counters_t c0, sum;
  jct__agents_rank_counters(r.a, 0, &c0);
  jct__agents_counters(r.a, &sum);
  ck_assert_uint_eq(jct_dev_counters_get(&c0, "nic_paused_ns"), 600000000);
  ck_assert_uint_eq(jct_dev_counters_get(&c0, "rcvd_seq_err"), 8);
  ck_assert_uint_eq(jct_dev_counters_get(&sum, "nic_paused_ns"), 600001000);
  ck_assert_uint_eq(jct_dev_counters_get(&sum, "rcvd_seq_err"), 8);
  jct_schedule_free(s);
  rig_close(&r);
}
END_TEST

/* The setup carries the user's RDMA settings, absent when not given; each
 * rank's counters come back apart; an error with bad_input is the user's
 * (JCT_EINVAL, exit 2), one without is the run's (JCT_EIO). */
START_TEST(rdma_settings_and_rank_counters) {
  rig_t r;
  rig_open(&r);
  hellos(&r);
  jct_schedule_t *s = ring2();
  char err[256];
  jct_rdma_opts_t ro = {.device = "mlx5_1", .port = 1, .has_gid_index = true, .gid_index = 3};
  ck_assert_int_eq(jct__rdma_add_counters(&ro, "np_cnp_sent,out_of_sequence", err, sizeof err), 0);
  jct__agents_setup_t so = {.timeout = 14, .retry_cnt = 7, .tos = 106, .slots = 8, .rdma = &ro};
  ck_assert_int_eq(jct__agents_setup(r.a, s, &so), 0);
  char buf[65536];
  ssize_t n = read(r.agent[0], buf, sizeof buf - 1);
  ck_assert_int_gt(n, 0);
  buf[n] = '\0';
  json_t *m = json_loads(buf, 0, NULL);
  ck_assert_str_eq(json_string_value(json_object_get(m, "device")), "mlx5_1");
  ck_assert_int_eq(json_integer_value(json_object_get(m, "port")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "gid_index")), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "tos")), 106);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "cts_timeout")), 14); /* none: the QPs' */
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(m, "counters"), 1)),
                   "out_of_sequence");
  json_decref(m);
  ck_assert_int_gt(read(r.agent[1], buf, sizeof buf), 0);
  both_listening(&r);
  ck_assert_int_eq(jct__agents_run(r.a, 1, false), 0);
  say(&r, 0, "{\"msg\":\"done\",\"rep\":1,\"ops\":[],\"counters\":{\"np_cnp_sent\":4,"
             "\"out_of_sequence\":1}}\n");
  say(&r, 1, "{\"msg\":\"done\",\"rep\":1,\"ops\":[],\"counters\":{\"np_cnp_sent\":7}}\n");
  spin(&r);
  jct_dev_counters_t c0, c1, sum;
  jct__agents_rank_counters(r.a, 0, &c0);
  jct__agents_rank_counters(r.a, 1, &c1);
  jct__agents_counters(r.a, &sum);
  ck_assert_uint_eq(jct_dev_counters_get(&c0, "np_cnp_sent"), 4);
  ck_assert_uint_eq(jct_dev_counters_get(&c1, "np_cnp_sent"), 7);
  ck_assert_uint_eq(jct_dev_counters_get(&c1, "out_of_sequence"), 0);
  ck_assert_uint_eq(jct_dev_counters_get(&sum, "np_cnp_sent"), 11);
  /* Summed over repetitions, rank by rank (run.h's dev_rank). */
  jct_dev_counters_t reps[2] = {c0, c1}, *total = NULL;
  ck_assert_int_eq(jct_dev_counters_sum(&total, reps, 2), 0);
  ck_assert_int_eq(jct_dev_counters_sum(&total, reps, 2), 0);
  ck_assert_int_eq(jct_dev_counters_sum(&total, NULL, 2), 0);
  ck_assert_uint_eq(jct_dev_counters_get(&total[0], "np_cnp_sent"), 8);
  ck_assert_uint_eq(jct_dev_counters_get(&total[1], "np_cnp_sent"), 14);
  free(total);
  /* A device that cannot honour a setting: the user's input. */
  ck_assert_int_eq(jct__agents_run(r.a, 2, false), 0);
  say(&r, 1, "{\"msg\":\"error\",\"why\":\"port 2: rxe0 has no such port\",\"bad_input\":true}\n");
  spin(&r);
  char why[512] = "";
  ck_assert_int_eq(jct__agents_failed(r.a, why, sizeof why), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(why, "rank 1's agent: port 2"));
  jct_schedule_free(s);
  rig_close(&r);
  rig_open(&r);
  jct__agents_expect_hello(r.a);
  say(&r, 0, "{\"msg\":\"error\",\"why\":\"rxe0 did not become ACTIVE\"}\n");
  spin(&r);
  ck_assert_int_eq(jct__agents_failed(r.a, NULL, 0), JCT_EIO);
  rig_close(&r);
}
END_TEST

static char fake_root[512];

static void put(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", fake_root, rel);
  for (char *p = path + strlen(fake_root) + 1; (p = strchr(p, '/')); p++) {
    *p = 0;
    mkdir(path, 0755);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "%s", path);
  fputs(text, f);
  fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(p);
}

/* A fake /sys/class/infiniband: rxe0 with one port (GID 0 the link-local,
 * 1 the rank's address as RoCE v2, 2 the same as RoCE v1, 3 empty), and
 * mlx5_0 with two. */
static void fake_sysfs(void) {
  snprintf(fake_root, sizeof fake_root, "%s/jctlab-sysfs-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(fake_root));
  put("rxe0/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3401\n");
  put("rxe0/ports/1/gid_attrs/types/0", "RoCE v2\n");
  put("rxe0/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:c612:0001\n");
  put("rxe0/ports/1/gid_attrs/types/1", "RoCE v2\n");
  put("rxe0/ports/1/gids/2", "0000:0000:0000:0000:0000:ffff:c612:0001\n");
  put("rxe0/ports/1/gid_attrs/types/2", "IB/RoCE v1\n");
  put("rxe0/ports/1/gids/3", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  put("rxe0/ports/1/gid_attrs/ndevs/1", "eth0\n");
  put("rxe0/ports/1/hw_counters/rcvd_seq_err", "10\n");
  put("rxe0/ports/1/hw_counters/sent_pkts", "1000\n");
  put("rxe0/ports/1/hw_counters/completer_retry_err", "5\n");
  put("rxe0/ports/1/counters/port_xmit_packets", "2000\n");
  put("rxe0/ports/1/counters/port_rcv_errors", "0\n");
  put("mlx5_0/ports/1/hw_counters/np_cnp_sent", "0\n");
  put("mlx5_0/ports/2/hw_counters/np_cnp_sent", "0\n");
}

static void fake_sysfs_gone(void) {
  ck_assert_int_eq(nftw(fake_root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* Check want against rxe0 port 1 bound to 198.18.0.1: 0, or an error saying want_err. */
static void check(const jct_rdma_opts_t *want, const char *want_err) {
  char err[512] = "";
  uint32_t addr;
  inet_pton(AF_INET, "198.18.0.1", &addr);
  int rc = jct__rdma_check(fake_root, want, "rxe0", 1, addr, err, sizeof err);
  if (!want_err) {
    ck_assert_msg(rc == 0, "%s", err);
    return;
  }
  ck_assert_int_eq(rc, JCT_EINVAL);
  ck_assert_msg(strstr(err, want_err), "'%s' does not say '%s'", err, want_err);
  ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(rdma_check_fake_sysfs) {
  fake_sysfs();
  jct_rdma_opts_t w = {0};
  check(&w, NULL);
  snprintf(w.device, sizeof w.device, "rxe0");
  w.port = 1;
  w.has_gid_index = true;
  w.gid_index = 1;
  char err[256];
  ck_assert_int_eq(jct__rdma_add_counters(&w, "rcvd_seq_err,port_xmit_packets", err, sizeof err), 0);
  check(&w, NULL);
  jct_rdma_opts_t b = w;
  snprintf(b.device, sizeof b.device, "mlx5_9");
  check(&b, "device 'mlx5_9': no such RDMA device here (there: ");
  snprintf(b.device, sizeof b.device, "mlx5_0");
  check(&b, "device 'mlx5_0': the rank's address is on rxe0");
  b = w;
  b.port = 2;
  check(&b, "port 2: rxe0 has no such port (its ports: 1)");
  b = w;
  b.gid_index = 0;
  check(&b, "gid_index 0: holds fe80:0000:0000:0000:5054:00ff:fe12:3401, not the rank's address "
            "::ffff:198.18.0.1");
  b.gid_index = 2;
  check(&b, "gid_index 2: a IB/RoCE v1 GID, not RoCE v2");
  b.gid_index = 3;
  check(&b, "gid_index 3: no GID there (empty entry)");
  b.gid_index = 9;
  check(&b, "gid_index 9: the port has no GID entry 9");
  b = w;
  ck_assert_int_eq(jct__rdma_add_counters(&b, "np_cnp_sent", err, sizeof err), 0);
  check(&b, "counters: rxe0 port 1 has no counter 'np_cnp_sent'");
  fake_sysfs_gone();
}
END_TEST

/* By hand (`jctlab rank --transport verbs`): the GID index given is
 * taken when its entry holds a RoCE v2 GID, whatever its address; without
 * one, the first RoCE v2 GID of an IPv4 address (rxe0's 1, not its
 * link-local 0 nor the RoCE v1 2); mlx5_0 has none: refused. */
static void pick(const jct_rdma_opts_t *w, const char *dev, int want_index, const char *want) {
  char err[512] = "", text[128] = "";
  uint32_t idx = 777;
  int rc = jct__rdma_pick_gid(fake_root, w, dev, 1, &idx, text, sizeof text, err, sizeof err);
  if (want_index >= 0) {
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(idx, (uint32_t)want_index);
    ck_assert_str_eq(text, want);
    return;
  }
  ck_assert_int_eq(rc, JCT_EINVAL);
  ck_assert_uint_eq(idx, 777);
  ck_assert_msg(strstr(err, want), "'%s' does not say '%s'", err, want);
  ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(rdma_pick_gid_fake_sysfs) {
  fake_sysfs();
  jct_rdma_opts_t w = {0};
  pick(&w, "rxe0", 1, "0000:0000:0000:0000:0000:ffff:c612:0001");
  pick(&w, "mlx5_0", -1, "gid_index: mlx5_0 port 1 has no RoCE v2 GID of an IPv4 address");
  w.has_gid_index = true;
  w.gid_index = 0; /* a choice now: the link-local GID is RoCE v2 too */
  pick(&w, "rxe0", 0, "fe80:0000:0000:0000:5054:00ff:fe12:3401");
  w.gid_index = 2;
  pick(&w, "rxe0", -1, "gid_index 2: 0000:0000:0000:0000:0000:ffff:c612:0001 on rxe0 port 1 is "
                       "a IB/RoCE v1 GID, not RoCE v2");
  w.gid_index = 3;
  pick(&w, "rxe0", -1, "gid_index 3: no GID there on rxe0 port 1 (empty entry)");
  w.gid_index = 9;
  pick(&w, "rxe0", -1, "gid_index 9: rxe0 port 1 has no GID entry 9");
  /* The GID's netdev, where `jctlab rank`'s injectors at the host act. */
  char nd[32] = "", err[300] = "";
  ck_assert_int_eq(jct__rdma_gid_netdev(fake_root, "rxe0", 1, 1, nd, sizeof nd, err, sizeof err), 0);
  ck_assert_str_eq(nd, "eth0");
  ck_assert_int_eq(jct__rdma_gid_netdev(fake_root, "rxe0", 1, 3, nd, sizeof nd, err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "rxe0 port 1 GID 3 has no network device"), "%s", err);
  /* Soft RoCE on a netdev (a flap there cuts, agent_link.h): rxe0, a
   * virtual device, has eth0 as its parent; mlx5_0, a bus device (its
   * device entry), sits on eth1 and is not soft. */
  put("rxe0/parent", "eth0\n");
  put("mlx5_0/parent", "eth1\n");
  put("mlx5_0/device/vendor", "0x15b3\n");
  char dev[32] = "";
  ck_assert(jct__rdma_soft_on(fake_root, "eth0", dev, sizeof dev));
  ck_assert_str_eq(dev, "rxe0");
  ck_assert(!jct__rdma_soft_on(fake_root, "eth1", dev, sizeof dev));
  ck_assert(!jct__rdma_soft_on(fake_root, "eth2", dev, sizeof dev));
  fake_sysfs_gone();
}
END_TEST

/* Counters before and after a repetition: every hw_counter and the named
 * port counters, their deltas (a counter that went back: 0), and the
 * named ones picked in the scenario's order. */
START_TEST(rdma_counters_fake_sysfs) {
  fake_sysfs();
  jct_rdma_opts_t w = {0};
  char err[256];
  ck_assert_int_eq(jct__rdma_add_counters(&w, "port_xmit_packets,rcvd_seq_err", err, sizeof err), 0);
  jct_dev_counters_t before, after, moved, picked;
  ck_assert_uint_eq(jct__rdma_counters(fake_root, "rxe0", 1, &w, &before), 4);
  ck_assert_uint_eq(jct_dev_counters_get(&before, "sent_pkts"), 1000);
  ck_assert_uint_eq(jct_dev_counters_get(&before, "port_xmit_packets"), 2000);
  ck_assert_uint_eq(jct_dev_counters_get(&before, "port_rcv_errors"), 0); /* not named */
  put("rxe0/ports/1/hw_counters/rcvd_seq_err", "13\n");
  put("rxe0/ports/1/hw_counters/sent_pkts", "1500\n");
  put("rxe0/ports/1/hw_counters/completer_retry_err", "2\n"); /* reset under us */
  put("rxe0/ports/1/counters/port_xmit_packets", "2600\n");
  ck_assert_uint_eq(jct__rdma_counters(fake_root, "rxe0", 1, &w, &after), 4);
  jct__rdma_counters_delta(&before, &after, &moved);
  ck_assert_uint_eq(jct_dev_counters_get(&moved, "rcvd_seq_err"), 3);
  ck_assert_uint_eq(jct_dev_counters_get(&moved, "sent_pkts"), 500);
  ck_assert_uint_eq(jct_dev_counters_get(&moved, "port_xmit_packets"), 600);
  ck_assert_uint_eq(jct_dev_counters_get(&moved, "completer_retry_err"), 0);
  jct__rdma_counters_pick(&moved, &w, &picked);
  ck_assert_uint_eq(picked.n, 2);
  ck_assert_str_eq(picked.c[0].name, "port_xmit_packets");
  ck_assert_uint_eq(picked.c[1].value, 3);
  jct__rdma_counters_pick(&moved, NULL, &picked);
  ck_assert_uint_eq(picked.n, 4);
  /* Another port, and a device that is not there: nothing read. */
  ck_assert_uint_eq(jct__rdma_counters(fake_root, "mlx5_0", 2, NULL, &after), 1);
  ck_assert_uint_eq(jct__rdma_counters(fake_root, "mlx5_7", 1, NULL, &after), 0);
  fake_sysfs_gone();
}
END_TEST

START_TEST(rdma_names_form) {
  jct_rdma_opts_t w = {0};
  char err[256];
  ck_assert_int_eq(jct__rdma_set_device(&w, "mlx5_0", err, sizeof err), 0);
  ck_assert_int_eq(jct__rdma_set_device(&w, "..", err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct__rdma_set_device(&w, "rxe0/../x", err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "device 'rxe0/../x' is not an RDMA device's name"));
  ck_assert_int_eq(jct__rdma_add_counters(&w, "a,,b", err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "counters: '' is not a counter's name"));
  w.ncounters = 0;
  for (int i = 0; i < JCT_RDMA_MAX_COUNTERS; i++)
    ck_assert_int_eq(jct__rdma_add_counters(&w, "np_cnp_sent", err, sizeof err), 0);
  ck_assert_int_eq(jct__rdma_add_counters(&w, "one_more", err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "at most 32 counters"));
}
END_TEST

/* ---- injectors at=host with --agents (no switch) -------------------------- */

/* A fake agent for rank, serving one orchestrator on the listening socket
 * ls (a child process): hello, setup, connect, run, quit as agents.h says.
 * Its setup must carry exactly want_spec in host_drops (NULL: none), or
 * it answers an error; in a faulted repetition each of its host injectors
 * reports `drops` drops of PSN 100+k on QP 0x12 (a baseline's none), as a
 * real agent's tc-eBPF program would. Ops take 1 ms and 3 ms. */
/* What a fake agent's setup must carry besides (-1: anything): its QPs'
 * timeout and the destinations' clear-to-send timeout exponents. */
static int fake_want_timeout = -1, fake_want_cts_timeout = -1;

static void fake_agent(int ls, int rank, const char *want_spec, int drops) {
  int fd = accept(ls, NULL, NULL);
  FILE *in = fd >= 0 ? fdopen(fd, "r") : NULL, *out = fd >= 0 ? fdopen(dup(fd), "w") : NULL;
  if (!in || !out) _exit(1);
  fprintf(out,
          "{\"msg\":\"hello\",\"rank\":%d,\"kernel\":\"fake\",\"dev\":\"fake0\",\"netdev\":\"lo\","
          "\"addr\":\"198.18.0.%d\"}\n",
          rank, rank + 1);
  fflush(out);
  json_t *setup = NULL;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, in) > 0) {
    json_t *m = json_loads(line, 0, NULL);
    const char *msg = json_string_value(json_object_get(m, "msg"));
    if (!msg) _exit(1);
    if (!strcmp(msg, "setup")) {
      json_t *hd = json_object_get(m, "host_drops");
      const char *spec = json_string_value(json_object_get(json_array_get(hd, 0), "spec"));
      bool ok = want_spec ? json_array_size(hd) == 1 && spec && !strcmp(spec, want_spec)
                          : json_array_size(hd) == 0;
      json_int_t t = json_integer_value(json_object_get(m, "timeout")),
                 cts = json_integer_value(json_object_get(m, "cts_timeout"));
      if (!ok)
        fprintf(out, "{\"msg\":\"error\",\"why\":\"fake: host_drops not as expected\"}\n");
      else if ((fake_want_timeout >= 0 && t != fake_want_timeout) ||
               (fake_want_cts_timeout >= 0 && cts != fake_want_cts_timeout))
        fprintf(out,
                "{\"msg\":\"error\",\"why\":\"fake: timeout %lld cts_timeout %lld, not %d %d\"}\n",
                (long long)t, (long long)cts, fake_want_timeout, fake_want_cts_timeout);
      else
        fprintf(out, "{\"msg\":\"listening\",\"dev\":\"fake0\"}\n");
      setup = json_incref(m);
    } else if (!strcmp(msg, "connect")) {
      fprintf(out, "{\"msg\":\"connected\",\"qps\":2}\n");
    } else if (!strcmp(msg, "run")) {
      json_t *sched = json_object_get(setup, "schedule"),
             *conns = json_object_get(sched, "connections");
      json_t *ops = json_array(), *hds = json_array(), *op;
      size_t i;
      json_array_foreach(json_object_get(sched, "ops"), i, op) {
        json_t *c = json_array_get(conns, (size_t)json_integer_value(json_object_get(op, "conn")));
        if (json_integer_value(json_object_get(c, "src")) == rank)
          json_array_append_new(ops, json_pack("[I,i,i,i]", (json_int_t)i, 0, 1000000, -1));
        else if (json_integer_value(json_object_get(c, "dst")) == rank)
          json_array_append_new(ops, json_pack("[I,i,i,i]", (json_int_t)i, -1, -1, 3000000));
      }
      bool faulted = json_is_true(json_object_get(m, "faulted"));
      json_t *d;
      json_array_foreach(json_object_get(setup, "host_drops"), i, d) {
        if (!strncmp(json_string_value(json_object_get(d, "spec")), "flap", 4)) {
          json_array_append_new(hds, json_pack("{s:O,s:i,s:i,s:I,s:[],s:[[i,b],[i,b]]}", "index",
                                               json_object_get(d, "index"), "seen", 0, "dropped", 0,
                                               "link_down_ns", (json_int_t)(faulted ? 50000000 : 0),
                                               "drops", "links", 1000000, 0, 51000000, 1));
          if (!faulted) json_array_clear(json_object_get(json_array_get(hds, i), "links"));
          continue;
        }
        json_t *ev = json_array();
        for (int k = 0; faulted && k < drops; k++)
          json_array_append_new(ev, json_pack("[i,i,i,i,b,i,s,s]", 500000 + k, 0x12, 100 + k, 10, 0,
                                              4, "198.18.0.2", "198.18.0.1"));
        json_array_append_new(hds, json_pack("{s:O,s:i,s:i,s:i,s:i,s:o}", "index",
                                             json_object_get(d, "index"), "seen", faulted ? 40 : 0,
                                             "dropped", faulted ? drops : 0, "held", 0,
                                             "events_lost", 0, "drops", ev));
      }
      json_t *done =
          json_pack("{s:s,s:O,s:o,s:{s:i},s:o}", "msg", "done", "rep", json_object_get(m, "rep"),
                    "ops", ops, "counters", "rcvd_seq_err", faulted ? drops : 0, "host_drops", hds);
      char *t = json_dumps(done, JSON_COMPACT);
      fprintf(out, "%s\n", t);
      free(t);
      json_decref(done);
    } else if (!strcmp(msg, "quit")) {
      fprintf(out, "{\"msg\":\"bye\"}\n");
      fflush(out);
      _exit(0);
    }
    fflush(out);
    json_decref(m);
  }
  _exit(0);
}

/* Two fake agents on 127.0.0.1 (rank 1 with the host injector): their
 * ports as --agents' list, their pids for the end. */
static void fake_agents(const char *spec, int drops, char *list, size_t len, pid_t pid[2]) {
  int port[2];
  for (int r = 0; r < 2; r++) {
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t sl = sizeof sa;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(ls, 1), 0);
    ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    port[r] = ntohs(sa.sin_port);
    if ((pid[r] = fork()) == 0) fake_agent(ls, r, r == 1 ? spec : NULL, drops);
    ck_assert_int_gt(pid[r], 0);
    close(ls);
  }
  snprintf(list, len, "127.0.0.1:%d,127.0.0.1:%d", port[0], port[1]);
}

static void reap(pid_t pid[2]) {
  for (int r = 0; r < 2; r++) {
    kill(pid[r], SIGKILL);
    waitpid(pid[r], NULL, 0);
  }
}

/* `jctlab run --transport verbs` of a 2-rank ring of 64 KiB, reps
 * repetitions, --inject spec, over --agents to two fake agents (rank 1's
 * dropping drops PSNs a faulted repetition): its document in *run, the
 * run having exited 0, and its --fault-log's text in *fault_log (its file
 * removed). False, with nothing run, in a build without verbs (no agent
 * side to run): the test then passes without asserting. */
static bool run_via_agents(const char *spec, int drops, const char *reps, json_t **run,
                           char **fault_log) {
#ifndef JCT_HAVE_VERBS
  return false;
#endif
  char list[64], path[256];
  pid_t pid[2];
  fake_agents(spec, drops, list, sizeof list, pid);
  craft_tmpname(path, sizeof path, ".log");
  const char *args[] = {"run",  "--transport", "verbs", "--agents",    list,    "--synth",
                        "ring", "--ranks",     "2",     "--bytes",     "64KiB", "--reps",
                        reps,   "--inject",    spec,    "--fault-log", path,    NULL};
  int status;
  char *err = NULL;
  *run = jctlab_json(args, &status, &err);
  reap(pid);
  ck_assert_msg(status == 0 && *run, "exit %d: %s", status, err);
  free(err);
  *fault_log = slurp(path, NULL);
  ck_assert_ptr_nonnull(*fault_log);
  unlink(path);
  return true;
}

/* --agents with drop at=host:1: the spec goes to rank 1's agent alone,
 * each repetition says whether it is faulted, and what the agent counted
 * and dropped comes back as the injector's counters and the fault log's
 * lines (at host:1), only in faulted repetitions; no switch anywhere. */
START_TEST(host_injector_via_agents) {
  json_t *run;
  char *text;
  if (!run_via_agents("drop psn=100,101 qp=0x12 at=host:1", 2, "3", &run, &text)) return;
  ck_assert_int_eq(jint(run, "injectors.0.dropped"), 2 * 3);
  ck_assert_int_eq(jint(run, "injectors.0.seen"), 40 * 3);
  ck_assert_uint_eq(count_lines(text), 2 * 3);
  const char *p = text;
  for (int k = 0; k < 6; k++, p = strchr(p, '\n') + 1) {
    json_t *l = json_loadb(p, strcspn(p, "\n"), 0, NULL);
    ck_assert_msg(l, "fault-log line %d: %.200s", k, p);
    ck_assert_str_eq(json_string_value(json_object_get(l, "at")), "host:1");
    ck_assert_str_eq(json_string_value(json_object_get(l, "action")), "drop");
    ck_assert_int_eq(json_integer_value(json_object_get(l, "psn")), 100 + k % 2);
    json_decref(l);
  }
  free(text);
  json_decref(run);
}
END_TEST

/* The verbs backend gives the agents the session's dilation as it was
 * handed over (backend.h, env->dilation), the one the run's report shows
 * (session.h, jct__session_dilation), and computes none of its own: a
 * dilation no recomputation from these options could give (x4 and a
 * clear-to-send timer 2^23 where --agents alone runs x1 with none) reaches
 * the agents' setup as it is. The lab alone holds stalls, so a whole run
 * outside it always has no clear-to-send timer: this is the test of the
 * hand-over that can run without the lab. */
START_TEST(backend_takes_session_dilation) {
  char list[64], err[256] = "";
  pid_t pid[2];
  fake_want_timeout = 16;
  fake_want_cts_timeout = 23;
  fake_agents(NULL, 0, list, sizeof list, pid);
  fake_want_timeout = fake_want_cts_timeout = -1;
  jct_schedule_t *sch;
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 2, 64 << 10, 1, err, sizeof err), 0);
  jct_run_opts_t o = {.transport = JCT_TRANSPORT_VERBS,
                      .agents = list,
                      .schedule = sch,
                      .rate_bps = 1000000000ull,
                      .timeout = 14,
                      .retry_cnt = 7};
  jct_run_dilation_t own, dil;
  jct_run_dilation(&o, &own);
  ck_assert(own.tdf == 1 && own.verbs_timeout_exp == 0 && own.verbs_cts_timeout_exp == 0);
  dil = own;
  dil.tdf = 4;
  dil.wall_rate_bps = 250e6;
  dil.verbs_timeout_exp = 16;
  dil.verbs_cts_timeout_exp = 23;
  jct__loop_t loop = {0}; /* as a session's (calloc) */
  ck_assert_int_eq(jct__loop_open(&loop, 1000000, err, sizeof err), 0);
  jct_fabric_opts_t fo = {.nranks = 2};
  jct__backend_env_t env = {.loop = &loop, .o = &o, .dilation = &dil, .fabric = &fo};
  void *b = NULL;
  int rc = jct__backend_verbs.up(&b, &env, err, sizeof err);
  if (b) jct__backend_verbs.down(b);
  jct__loop_close(&loop);
  reap(pid);
  jct_schedule_free(sch);
  ck_assert_msg(rc == 0, "%s", err);
}
END_TEST

/* A targeted drop the host's agent never applied (its program saw none of
 * its targets): the faulted repetitions are invalid, the injector named,
 * as on the switch. */
START_TEST(idle_host_target_invalid) {
#ifndef JCT_HAVE_VERBS
  return;
#endif
  const char *spec = "drop psn=100 qp=0x12 at=host:1";
  char list[64];
  pid_t pid[2];
  fake_agents(spec, 0, list, sizeof list, pid);
  char *argv[] = {JCT_BINARY, "run",  "--transport", "verbs",      "--agents", list,
                  "--synth",  "ring", "--ranks",     "2",          "--bytes",  "64KiB",
                  "--reps",   "1",    "--inject",    (char *)spec, NULL};
  result_t r = run_cmd(argv, NULL, 60);
  reap(pid);
  ck_assert_msg(r.status != 0, "exit 0: %s", r.out);
  ck_assert_msg(strstr(r.out, "acted on nothing") || strstr(r.err, "acted on nothing"),
                "exit %d: %s%s", r.status, r.out, r.err);
  result_free(&r);
}
END_TEST

/* What --agents refuses before dialling anyone: an injector at the switch
 * (there is none), a kind no host runs; each exit 2, one line naming it. */
START_TEST(agents_refuse_switch_injectors) {
#ifndef JCT_HAVE_VERBS
  return;
#endif
  static const struct {
    const char *spec, *says;
  } cases[] = {
      {"drop p=1%", "'drop p=1%': with --agents"},
      {"delay 10us port=1", "at=host:RANK"},
      {"ecn p=1% at=host:1", "ecn cannot run at a host"},
      {"drop p=1% at=host:2", "host:2 does not exist"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[] = {JCT_BINARY,    "run",
                    "--transport", "verbs",
                    "--agents",    "127.0.0.1:1,127.0.0.1:1",
                    "--synth",     "ring",
                    "--ranks",     "2",
                    "--bytes",     "64KiB",
                    "--reps",      "1",
                    "--inject",    (char *)cases[i].spec,
                    NULL};
    expect_bad_input(argv, cases[i].says, NULL);
  }
}
END_TEST

#if defined(JCT_HAVE_VERBS) && defined(JCT_HAVE_HOSTFAULT)
/* A real agent (jctlab agent --listen) in a namespace of the test's own,
 * asked over TCP for what its host cannot do, answers bad input (the
 * orchestrator's exit 2), leaves nothing and serves on: delay at=host:1 on
 * its netdev (lo here) under a root with a class and a filter (htb),
 * naming them; where this kernel has no fq qdisc, naming fq; a
 * flap on lo, which its control connection arrives on, naming lo (the
 * link stays up). Needs root (the program, the namespace); says so and
 * passes otherwise. */
START_TEST(agent_refuses_host_faults) {
  if (!ns_own("agents", "agent_refuses_host_faults", NS_LO_UP)) return;
  char err[256] = "";
  char *argv[] = {JCT_BINARY,  "agent", "--listen", "127.0.0.1:7472", "--rank", "1",
                  "--nranks",  "2",     "--no-net", "--netdev",       "lo",     "--addr",
                  "127.0.0.1", NULL};
  child_t c = spawn(argv, NULL);
  int fd = -1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(7472)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  for (int k = 0; k < 100; k++) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) break;
    close(fd);
    fd = -1;
    sleep_ms(20);
  }
  ck_assert_int_ge(fd, 0);
  agent_says(fd, NULL, "\"msg\":\"hello\",\"rank\":1");
  const char *spec = "delay 10us at=host:1";
  jct_injector_t *inj;
  ck_assert_int_eq(jct_injector_new(&inj, spec, 1, 0, err, sizeof err), 0);
  jct_schedule_t *sch;
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 2, 65536, 1, err, sizeof err), 0);
  json_t *sj = jct__schedule_json(sch);
  char *text = json_dumps(sj, JSON_COMPACT);
  char line[8192];
  snprintf(line, sizeof line,
           "{\"msg\":\"setup\",\"rank\":1,\"schedule\":%s,\"host_drops\":[{\"index\":0,"
           "\"spec\":\"%s\",\"run_seed\":1,\"seed\":%llu}]}\n",
           text, spec, (unsigned long long)inj->seed);
  free(text);
  json_decref(sj);
  /* A root of the host's with a class and a filter (htb): the delay's fq
   * would take them with the root, and jctlab puts back the root alone:
   * refused, naming them, the tree as before. */
  char before[4096], after[4096];
  if (!tc_present()) {
    printf("agents: agent_refuses_host_faults: no tc(8), the htb root not tried\n");
  } else {
    tc_ok("qdisc replace dev lo root handle 1: htb default 1");
    tc_ok("class add dev lo parent 1: classid 1:1 htb rate 10mbit");
    tc_ok("filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport 4791 0xffff "
          "flowid 1:1");
    tc_tree("lo", before, sizeof before, NULL);
    agent_says2(fd, line, "lo: its root qdisc htb 1: has 1 class, 1 filter, which",
                "\"bad_input\":true");
    ck_assert_str_eq(tc_tree("lo", after, sizeof after, NULL), before);
    tc_ok("qdisc del dev lo root");
  }
  agent_says2(fd, line, "needs the fq qdisc", "\"bad_input\":true");
  /* A flap on lo, which the control connection (127.0.0.1) arrives on. */
  const char *flap = "flap down=50ms every=1s at=host:1";
  jct_injector_t *fi;
  ck_assert_int_eq(jct_injector_new(&fi, flap, 1, 0, err, sizeof err), 0);
  sj = jct__schedule_json(sch);
  text = json_dumps(sj, JSON_COMPACT);
  snprintf(line, sizeof line,
           "{\"msg\":\"setup\",\"rank\":1,\"schedule\":%s,\"host_drops\":[{\"index\":0,"
           "\"spec\":\"%s\",\"run_seed\":1,\"seed\":%llu}]}\n",
           text, flap, (unsigned long long)fi->seed);
  free(text);
  json_decref(sj);
  agent_says2(fd, line, "lo carries this agent's control connection", "\"bad_input\":true");
  ck_assert(jct__agent_link_is_up("lo"));
  jct_injector_free(fi);
  ck_assert_int_eq(write(fd, "{\"msg\":\"dance\"}\n", 16), 16);
  agent_says(fd, NULL, "unknown message"); /* still serving */
  agent_says(fd, "{\"msg\":\"quit\"}\n", "bye");
  result_t r = finish(&c, 10);
  ck_assert_int_eq(r.status, 0);
  result_free(&r);
  close(fd);
  jct_injector_free(inj);
  jct_schedule_free(sch);
}
END_TEST
#endif

/* --agents with flap at=host:1: the spec goes to rank 1's agent, which
 * sets its own link; its down time becomes the injector's link_down_ns and
 * its transitions the fault log's link-down and link-up lines. */
START_TEST(flap_via_agents) {
  json_t *run;
  char *text;
  if (!run_via_agents("flap down=50ms every=10s at=1ms at=host:1", 0, "2", &run, &text)) return;
  ck_assert_int_eq(jint(run, "injectors.0.link_down_ns"), 2 * 50000000);
  ck_assert_uint_eq(count_lines(text), 2 * 2);
  char *down = strstr(text, "\"action\":\"link-down\""),
       *up = strstr(text, "\"action\":\"link-up\"");
  ck_assert(down && up && up > down);
  ck_assert_ptr_nonnull(strstr(text, "\"at\":\"host:1\",\"injector\":0,\"kind\":\"flap\""));
  free(text);
  json_decref(run);
}
END_TEST

/* The agent's own flap (agent_host.h) on lo in a namespace of the test's:
 * down for 50 ms every 200 ms from the repetition's start, for 300 ms: two
 * periods, 100 ms down, four transitions at 0, 50, 200 and 250 ms,
 * emulated; the link up at the end; a baseline repetition leaves it alone.
 * Under a dilation tdf (the setup's "tdf") those times are emulated: the
 * transitions come tdf times later by the agent's (wall) clock, as the
 * test sees the link go down and up, and are reported at 0, 50, 200 and
 * 250 ms all the same, the down time 100 ms. */
#ifdef JCT_HAVE_VERBS /* the agent's own code */
static void stop_loop(uv_timer_t *t) {
  *(bool *)t->data = true;
  uv_stop(t->loop);
}

/* Run loop until wall_ms after t0 (the agent's clock), calling seen after
 * each turn of it, as the agent's loop sleeps until its next timer. */
static void run_loop_until(uv_loop_t *loop, uint64_t t0, uint64_t wall_ms,
                           void (*seen)(void *arg, uint64_t now_ns), void *arg) {
  uv_timer_t end;
  bool ended = false;
  uv_timer_init(loop, &end);
  end.data = &ended;
  uv_update_time(loop);
  uint64_t now = jct_now_ns(), at = t0 + wall_ms * 1000000;
  uv_timer_start(&end, stop_loop, at > now ? (at - now) / 1000000 : 0, 0);
  while (!ended) {
    uv_run(loop, UV_RUN_ONCE);
    if (seen) seen(arg, jct_now_ns());
  }
  uv_timer_stop(&end);
  uv_close((uv_handle_t *)&end, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

/* The link's changes as the test saw them, in wall ms from t0. */
typedef struct {
  uint64_t t0;
  bool up;
  double at_ms[8];
  size_t n;
} link_seen_t;

static void link_seen(void *arg, uint64_t now_ns) {
  link_seen_t *l = arg;
  bool up = jct__agent_link_is_up("lo");
  if (up == l->up) return;
  l->up = up;
  if (l->n < 8) l->at_ms[l->n++] = (double)(now_ns - l->t0) / 1e6;
}

/* An agent's host injector of spec at dilation tdf on lo, its own loop
 * and clock: the host, its injector and its setup entry in *inj, *list. */
static jct__agent_host_t *host_on_lo(const char *spec, double tdf, jct_injector_t **inj,
                                     json_t **list, uv_loop_t *loop, jct_clock_t *clock) {
  char err[256] = "";
  ck_assert_int_eq(jct_injector_new(inj, spec, 1, 0, err, sizeof err), 0);
  *list = json_pack("[{s:i,s:s,s:i,s:I,s:f}]", "index", 0, "spec", spec, "run_seed", 1, "seed",
                    (json_int_t)(*inj)->seed, "tdf", tdf);
  uv_loop_init(loop);
  jct_clock_init(clock, loop);
  jct__agent_host_t *h;
  ck_assert_msg(jct__agent_host_new(&h, *list, "lo", NULL, false, clock, err, sizeof err) == 0,
                "%s", err);
  return h;
}

/* Everything host_on_lo made, freed and closed. */
static void host_off_lo(jct__agent_host_t *h, jct_injector_t *inj, json_t *list, uv_loop_t *loop,
                        jct_clock_t *clock) {
  jct__agent_host_free(h);
  jct_clock_close(clock, NULL);
  uv_run(loop, UV_RUN_NOWAIT); /* the clock's close */
  uv_loop_close(loop);
  json_decref(list);
  jct_injector_free(inj);
}

static void flap_on_lo(double tdf) {
  const char *spec = "flap down=50ms every=200ms at=host:1";
  jct_injector_t *inj;
  json_t *list;
  uv_loop_t loop;
  jct_clock_t clock;
  jct__agent_host_t *h = host_on_lo(spec, tdf, &inj, &list, &loop, &clock);
  const double at[] = {0, 50, 200, 250}; /* emulated ms */
  for (int faulted = 1; faulted >= 0; faulted--) {
    uint64_t t0 = jct_now_ns();
    link_seen_t seen = {.t0 = t0, .up = true};
    ck_assert_int_eq(jct__agent_host_start(h, faulted, t0, t0), 0);
    link_seen(&seen, jct_now_ns()); /* down at once: at 0 */
    run_loop_until(&loop, t0, (uint64_t)(300 * tdf), link_seen, &seen);
    json_t *done = jct__agent_host_done(h), *e = json_array_get(done, 0);
    ck_assert(jct__agent_link_is_up("lo"));
    ck_assert((seen.n > 0) == (bool)faulted);
    json_t *links = json_object_get(e, "links");
    double down_ms = (double)json_integer_value(json_object_get(e, "link_down_ns")) / 1e6;
    printf("agents: agent's flap under F = %g (faulted %d): link down %.1f ms, %zu transitions, "
           "seen %zu\n",
           tdf, faulted, down_ms, json_array_size(links), seen.n);
    if (faulted) {
      ck_assert_uint_eq(json_array_size(links), 4);
      ck_assert_uint_eq(seen.n, 4);
      /* Each transition as late as the loop's wake-up on a loaded machine
       * (seen: 27 ms, the down time 73 ms of 100); the down time counted is
       * the transitions' own, down to up. In wall time, each no earlier
       * than tdf times its emulated time. */
      double t[4];
      for (size_t k = 0; k < 4; k++) {
        json_t *l = json_array_get(links, k);
        t[k] = (double)json_integer_value(json_array_get(l, 0)) / 1e6;
        ck_assert_msg(t[k] >= at[k] && t[k] <= at[k] + 30, "transition %zu at %.1f ms", k, t[k]);
        ck_assert(json_is_true(json_array_get(l, 1)) == (k % 2 == 1));
        ck_assert_msg(seen.at_ms[k] >= at[k] * tdf && seen.at_ms[k] <= (at[k] + 30) * tdf,
                      "transition %zu seen %.1f ms of wall time after the start, not %.0f", k,
                      seen.at_ms[k], at[k] * tdf);
      }
      double counted_ms = (t[1] - t[0]) + (t[3] - t[2]);
      ck_assert_msg(down_ms >= counted_ms - 1 && down_ms <= counted_ms + 1,
                    "down %.1f ms, its transitions %.1f ms", down_ms, counted_ms);
    } else {
      ck_assert_uint_eq(json_array_size(links), 0);
      ck_assert_int_eq(json_integer_value(json_object_get(e, "link_down_ns")), 0);
    }
    json_decref(done);
  }
  host_off_lo(h, inj, list, &loop, &clock);
}

START_TEST(agent_flaps_its_link) {
  if (!ns_own("agents", "agent_flaps_its_link", NS_LO_UP)) return;
  flap_on_lo(1);
}
END_TEST

START_TEST(agent_flap_dilated) {
  if (!ns_own("agents", "agent_flap_dilated", NS_LO_UP)) return;
  flap_on_lo(2);
}
END_TEST

/* The agent's own storm (agent_host.h) from lo under F = 2: a frame every
 * 250 ms of emulated time for 1 s, from the repetition's start (at 0, 250,
 * 500 and 750 ms), sent 500 ms of wall time apart: by 1.25 s of wall time
 * the first three have left, the fourth not (due at 1.5 s; undilated all
 * four would have left by 750 ms), each reported at its emulated time, as
 * late as the agent's timer fired (seen: 81.6 ms emulated, a loaded
 * machine). */
START_TEST(agent_storm_dilated) {
  if (!ns_own("agents", "agent_storm_dilated", NS_LO_UP)) return;
  const char *spec = "pause prio=3 quanta=1000 rate=4/s for=1s at=host:0";
  const double tdf = 2;
  jct_injector_t *inj;
  json_t *list;
  uv_loop_t loop;
  jct_clock_t clock;
  jct__agent_host_t *h = host_on_lo(spec, tdf, &inj, &list, &loop, &clock);
  uint64_t t0 = jct_now_ns();
  ck_assert_int_eq(jct__agent_host_start(h, true, t0, t0), 0);
  run_loop_until(&loop, t0, 1250, NULL, NULL);
  json_t *done = jct__agent_host_done(h), *e = json_array_get(done, 0),
         *frames = json_object_get(e, "frames");
  printf("agents: %s under F = %g: %zu frames by 1.25 s of wall time, %lld generated\n", spec, tdf,
         json_array_size(frames), (long long)json_integer_value(json_object_get(e, "generated")));
  ck_assert_uint_eq(json_array_size(frames), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(e, "generated")), 3);
  for (size_t k = 0; k < 3; k++) {
    json_t *f = json_array_get(frames, k);
    double t = (double)json_integer_value(json_array_get(f, 0)) / 1e6;
    ck_assert_msg(t >= 250.0 * (double)k && t <= 250.0 * (double)k + 100,
                  "frame %zu at %.1f ms, not %zu (emulated)", k, t, 250 * k);
    ck_assert(json_is_true(json_array_get(f, 2)));
  }
  json_decref(done);
  host_off_lo(h, inj, list, &loop, &clock);
}
END_TEST

#ifdef JCT_HAVE_HOSTFAULT
/* One RoCEv2 frame (a WRITE MIDDLE) sent on lo from a packet socket, so
 * that it crosses lo's egress, where the agent's program sits. */
static void send_roce_on_lo(void) {
  uint8_t buf[256];
  craft_roce_t c = {.payload_bytes = 64};
  c.h.bth.opcode = JCT_OP_RC_RDMA_WRITE_MIDDLE;
  c.h.bth.dest_qp = 0x101;
  size_t n = craft_roce(buf, sizeof buf, &c);
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex("lo")};
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sll, sizeof sll), 0);
  ck_assert_int_eq(send(fd, buf, n, 0), (ssize_t)n);
  close(fd);
}

/* The agent's program keeps wall time, so under --tdf F the window of a
 * host injector reaches it x F, as chain_host.c gives it in namespaces
 * (jct__hostdrop_cfg_of): at=50ms until=200ms with F = 4 drops from 200
 * to 800 ms of wall time after the repetition's start, not from 50 to
 * 200. A frame sent 100 ms after the start passes, one sent 400 ms after
 * it is dropped (the start is set back that far: nothing waits). */
START_TEST(agent_window_dilated) {
  if (!ns_own("agents", "agent_window_dilated", NS_LO_UP)) return;
  const char *spec = "drop p=1 at=host:0 at=50ms until=200ms";
  jct_injector_t *inj;
  json_t *list;
  uv_loop_t loop;
  jct_clock_t clock;
  jct__agent_host_t *h = host_on_lo(spec, 4, &inj, &list, &loop, &clock);
  const struct { uint64_t since_start_ms, dropped; } probe[] = {{100, 0}, {400, 1}};
  for (size_t k = 0; k < 2; k++) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the program's clock */
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t start = now - probe[k].since_start_ms * 1000000u;
    ck_assert_int_eq(jct__agent_host_start(h, true, start, jct_now_ns()), 0);
    send_roce_on_lo();
    json_t *done = jct__agent_host_done(h), *e = json_array_get(done, 0);
    json_int_t dropped = json_integer_value(json_object_get(e, "dropped"));
    printf("agents: %s under F = 4, a frame %llu ms after the start: %lld dropped\n", spec,
           (unsigned long long)probe[k].since_start_ms, (long long)dropped);
    ck_assert_int_eq(dropped, (json_int_t)probe[k].dropped);
    json_decref(done);
  }
  host_off_lo(h, inj, list, &loop, &clock);
}
END_TEST
#endif

/* An agent killed with its link down (SIGKILL: no cleanup of its own):
 * its guard sets the link up again; freed normally, it is up at once. */
START_TEST(killed_agent_leaves_link_up) {
  if (!ns_own("agents", "killed_agent_leaves_link_up", NS_LO_UP)) return;
  char err[256] = "";
  jct__agent_link_t *l;
  ck_assert_int_eq(jct__agent_link_new(&l, "lo", err, sizeof err), 0);
  ck_assert_int_eq(jct__agent_link_set(l, false, err, sizeof err), 0);
  ck_assert(!jct__agent_link_is_up("lo"));
  jct__agent_link_free(l);
  ck_assert(jct__agent_link_is_up("lo"));
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t agent = fork();
  if (agent == 0) { /* the agent: the link down mid-flap, then killed */
    close(p[0]);
    if (jct__agent_link_new(&l, "lo", err, sizeof err) ||
        jct__agent_link_set(l, false, err, sizeof err))
      _exit(1);
    if (write(p[1], "d", 1) != 1) _exit(1);
    for (;;)
      pause();
  }
  close(p[1]);
  char b;
  ck_assert_int_eq(read(p[0], &b, 1), 1);
  close(p[0]);
  ck_assert(!jct__agent_link_is_up("lo"));
  kill(agent, SIGKILL);
  waitpid(agent, NULL, 0);
  double t0 = now_s();
  while (!jct__agent_link_is_up("lo") && now_s() - t0 < 5)
    sleep_ms(5);
  printf("agents: killed agent's link up again after %.1f ms\n", (now_s() - t0) * 1e3);
  ck_assert(jct__agent_link_is_up("lo"));
}
END_TEST
#endif

Suite *agents_suite(void) {
  Suite *s = suite_create("agents");
  TCase *t = tcase_create("protocol");
  tcase_add_test(t, a_run_round_trip);
  tcase_add_test(t, frozen_host_times);
  tcase_add_test(t, protocol_errors_name_the_agent);
  tcase_add_test(t, agent_answers_bad_input);
  tcase_add_test(t, rdma_settings_and_rank_counters);
  tcase_add_test(t, dilated_agent_time_counters);
  suite_add_tcase(s, t);
  TCase *d = tcase_create("sysfs");
  tcase_add_test(d, rdma_check_fake_sysfs);
  tcase_add_test(d, rdma_counters_fake_sysfs);
  tcase_add_test(d, rdma_pick_gid_fake_sysfs);
  tcase_add_test(d, rdma_names_form);
  suite_add_tcase(s, d);
  TCase *h = tcase_create("hosts");
  tcase_set_timeout(h, 120);
  tcase_add_test(h, host_injector_via_agents);
  tcase_add_test(h, idle_host_target_invalid);
  tcase_add_test(h, backend_takes_session_dilation);
  tcase_add_test(h, agents_refuse_switch_injectors);
#if defined(JCT_HAVE_VERBS) && defined(JCT_HAVE_HOSTFAULT)
  tcase_add_test(h, agent_refuses_host_faults);
#endif
  tcase_add_test(h, flap_via_agents);
#ifdef JCT_HAVE_VERBS
  tcase_add_test(h, agent_flaps_its_link);
  tcase_add_test(h, agent_flap_dilated);
  tcase_add_test(h, agent_storm_dilated);
  tcase_add_test(h, killed_agent_leaves_link_up);
#ifdef JCT_HAVE_HOSTFAULT
  tcase_add_test(h, agent_window_dilated);
#endif
#endif
  suite_add_tcase(s, h);
  TCase *g = agents_guard_tcase(); /* check_agents_guard.c */
  if (g) suite_add_tcase(s, g);
  if ((g = agents_qdisc_tcase())) suite_add_tcase(s, g); /* check_agents_qdisc.c */
  if ((g = agents_pause_tcase())) suite_add_tcase(s, g);
  return s;
}
