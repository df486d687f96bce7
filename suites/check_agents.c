/* The orchestrator's side of the agents' protocol (harness/lab/agents.h), with
 * fake agents on socketpairs: a hello is taken only from the rank it
 * names, a done's op timings land on the orchestrator's clock, and an
 * agent that breaks the protocol (not JSON, an answer nobody asked for,
 * another rank's hello, an error, a closed channel) fails the set with a
 * reason that names the agent. No VM, no RDMA device. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "harness/lab/agents.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"
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

START_TEST(a_run_round_trip) {
  rig_t r;
  rig_open(&r);
  hellos(&r);
  ck_assert_ptr_nonnull(strstr(jct__agents_hello(r.a, 0), "rxe0 on eth0 198.18.0.1"));
  jct_schedule_t *s;
  char err[256];
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 2, 1 << 20, 1, err, sizeof err), 0);
  jct__agents_setup_t so = {
      .timeout = 14, .retry_cnt = 7, .tos = 104, .slots = 8, .rate_bps = 100000000, .mtu = 9000};
  ck_assert_int_eq(jct__agents_setup(r.a, s, &so), 0);
  /* What rank 1's agent got: its rank, the schedule and every rank's address. */
  char buf[65536];
  ssize_t n = read(r.agent[1], buf, sizeof buf - 1);
  ck_assert_int_gt(n, 0);
  buf[n] = '\0';
  json_t *m = json_loads(buf, 0, NULL);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "rank")), 1);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(m, "addrs"), 1)), "198.18.0.2");
  ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(m, "schedule"), "ops")),
                    s->nops);
  json_decref(m);
  ck_assert_int_gt(read(r.agent[0], buf, sizeof buf), 0);
  say(&r, 0, "{\"msg\":\"listening\"}\n");
  say(&r, 1, "{\"msg\":\"listening\"}\n");
  spin(&r);
  ck_assert(!jct__agents_waiting(r.a));
  uint64_t before = jct_now_ns();
  ck_assert_int_eq(jct__agents_run(r.a, 7, true), 0);
  uint64_t after = jct_now_ns();
  say(&r, 0,
      "{\"msg\":\"done\",\"rep\":7,\"ops\":[[0,5,10,0],[1,0,0,2000]],\"counters\":"
      "{\"rcvd_seq_err\":2}}\n");
  say(&r, 1,
      "{\"msg\":\"done\",\"rep\":7,\"ops\":[[0,0,0,1000],[1,5,20,0]],\"counters\":"
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
  jct_dev_counters_t c;
  jct__agents_counters(r.a, &c);
  ck_assert_uint_eq(jct_dev_counters_get(&c, "rcvd_seq_err"), 3);
  ck_assert_uint_eq(jct_dev_counters_get(&c, "sent_pkts"), 9);
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
 * orchestrator with an error line and goes on, and ends on quit. */
static void agent_says(int fd, const char *line, const char *want) {
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
  agent_says(fd, "{\"msg\":\"quit\"}\n", "bye");
  result_t r = finish(&c, 10);
  ck_assert_int_eq(r.status, 0);
  result_free(&r);
  close(fd);
}
END_TEST

Suite *agents_suite(void) {
  Suite *s = suite_create("agents");
  TCase *t = tcase_create("protocol");
  tcase_add_test(t, a_run_round_trip);
  tcase_add_test(t, protocol_errors_name_the_agent);
  tcase_add_test(t, agent_answers_bad_input);
  suite_add_tcase(s, t);
  return s;
}
