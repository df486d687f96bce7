/* The schedule executor over a fake transport: a message of b bytes sent
 * at t arrives at t + lat + b / rate, and its acknowledgement is back at
 * the sender lat later; links never contend. That makes the job's
 * completion time exact, and every rule checkable: deps of both kinds,
 * gaps, CTS. */
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "suites.h"

#define LAT_NS 1000u
#define NS_PER_BYTE 8u /* 1 Gbit/s */

typedef struct {
  uint64_t at_ns;
  uint32_t conn, op;
  bool cts, ack; /* ack: the send of op completes at its sender */
} msg_t;

typedef struct {
  jct_exec_t *e;
  const jct_schedule_t *s;
  msg_t q[1 << 16];
  size_t n;
  uint64_t now;
  unsigned sends_before_ready, sends_without_cts;
  uint32_t *cts_in; /* CTS arrived per conn */
  uint32_t *sent;   /* sends per conn */
} fake_t;

static void push(fake_t *f, msg_t m) {
  ck_assert_uint_lt(f->n, sizeof f->q / sizeof *f->q);
  f->q[f->n++] = m;
}

static int post_cts(jct_exec_t *e, uint32_t conn) {
  fake_t *f = jct_exec_data(e);
  push(f, (msg_t){f->now + LAT_NS + 64 * NS_PER_BYTE, conn, 0, true, false});
  return 0;
}

static int post_send(jct_exec_t *e, uint32_t conn, uint32_t op, uint64_t bytes) {
  fake_t *f = jct_exec_data(e);
  const jct_op_timing_t *t = jct_exec_timing(f->e, op);
  if (t->ready_ns == 0 && f->s->ops[op].ndeps) f->sends_before_ready++;
  if (f->sent[conn] >= f->cts_in[conn]) f->sends_without_cts++;
  f->sent[conn]++;
  push(f, (msg_t){f->now + LAT_NS + bytes * NS_PER_BYTE, conn, op, false, false});
  return 0;
}

/* Deliver messages in time order, firing gap timers in between. */
static void run(fake_t *f) {
  ck_assert_int_eq(jct_exec_start(f->e, f->now), 0);
  for (;;) {
    size_t best = f->n;
    for (size_t i = 0; i < f->n; i++)
      if (best == f->n || f->q[i].at_ns < f->q[best].at_ns ||
          (f->q[i].at_ns == f->q[best].at_ns && f->q[i].op < f->q[best].op))
        best = i; /* a connection's messages sent at once arrive in order (RC) */
    uint64_t timer = jct_exec_next_deadline_ns(f->e);
    if (best == f->n && timer == UINT64_MAX) break;
    if (best == f->n || timer < f->q[best].at_ns) {
      f->now = timer;
      ck_assert_int_eq(jct_exec_on_timer(f->e, f->now), 0);
      continue;
    }
    msg_t m = f->q[best];
    f->q[best] = f->q[--f->n];
    f->now = m.at_ns;
    if (m.cts) {
      f->cts_in[m.conn]++;
      ck_assert_int_eq(jct_exec_on_cts(f->e, m.conn, f->now), 0);
    } else if (m.ack) {
      ck_assert_int_eq(jct_exec_on_sent(f->e, m.conn, m.op, f->now), 0);
    } else {
      ck_assert_int_eq(jct_exec_on_recv(f->e, m.conn, m.op, f->now), 0);
      push(f, (msg_t){f->now + LAT_NS, m.conn, m.op, false, true});
    }
  }
}

static fake_t *fake_new(const jct_schedule_t *s, uint32_t slots) {
  fake_t *f = calloc(1, sizeof *f);
  f->s = s;
  f->now = 1000000;
  f->cts_in = calloc(s->nconns, sizeof *f->cts_in);
  f->sent = calloc(s->nconns, sizeof *f->sent);
  jct_exec_hooks_t h = {post_cts, post_send, f};
  ck_assert_int_eq(jct_exec_new(&f->e, s, slots, &h), 0);
  return f;
}

static void fake_free(fake_t *f) {
  jct_exec_free(f->e);
  free(f->cts_in);
  free(f->sent);
  free(f);
}

/* Ring AllReduce: 2(N-1) steps, each one chunk's transfer plus the latency;
 * CTSs, sent ahead, never hold a step back. */
START_TEST(ring_jct_exact) {
  char err[256];
  jct_schedule_t *s;
  const uint32_t n = 8;
  const uint64_t bytes = 1 << 20;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", n, bytes, 1, err, sizeof err), 0);
  fake_t *f = fake_new(s, 0);
  run(f);
  ck_assert(jct_exec_done(f->e));
  ck_assert_uint_eq(jct_exec_ops_done(f->e), s->nops);
  uint64_t step = LAT_NS + bytes / n * NS_PER_BYTE;
  ck_assert_uint_eq(jct_exec_jct_ns(f->e), 2 * (n - 1) * step);
  ck_assert_uint_eq(f->sends_before_ready, 0);
  ck_assert_uint_eq(f->sends_without_cts, 0);
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_timing_t *t = jct_exec_timing(f->e, i);
    ck_assert_uint_ge(t->start_ns, t->ready_ns);
    ck_assert_uint_gt(t->done_ns, t->start_ns);
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++)
      ck_assert_uint_le(jct_exec_timing(f->e, s->ops[i].deps[d])->done_ns, t->start_ns);
  }
  fake_free(f);
  jct_schedule_free(s);
}
END_TEST

/* gap_ns delays each dependent send by exactly the gap. */
START_TEST(gaps_delay_sends) {
  char err[256];
  jct_schedule_t *s;
  const uint32_t n = 4;
  const uint64_t bytes = 4096;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", n, bytes, 1, err, sizeof err), 0);
  for (uint32_t i = 0; i < s->nops; i++)
    s->ops[i].gap_ns = s->ops[i].ndeps ? 5000 : 0;
  fake_t *f = fake_new(s, 0);
  run(f);
  uint64_t step = LAT_NS + bytes / n * NS_PER_BYTE;
  ck_assert_uint_eq(jct_exec_jct_ns(f->e), 2 * (n - 1) * step + (2 * (n - 1) - 1) * 5000);
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].ndeps) {
      const jct_op_timing_t *t = jct_exec_timing(f->e, i);
      ck_assert_uint_eq(t->start_ns, t->ready_ns + 5000);
    }
  fake_free(f);
  jct_schedule_free(s);
}
END_TEST

/* All-to-all between 2 ranks, 4 messages of 256 bytes each way, all on one
 * connection per direction. */
static jct_schedule_t *four_per_connection(void) {
  char err[256];
  jct_schedule_t *s;
  ck_assert_int_eq(jct_schedule_synth(&s, "all-to-all", 2, 2048, 4, err, sizeof err), 0);
  /* 4 channels: 4 connections each way; merge them onto one connection */
  for (uint32_t i = 0; i < s->nops; i++)
    s->ops[i].conn = s->conns[s->ops[i].conn].src == 0 ? 0 : 1;
  s->conns[1] = (jct_conn_t){1, 0, 0};
  s->nconns = 2;
  return s;
}

/* With one buffer per connection, a send waits for the CTS its receiver
 * sends only after taking the previous message: all-to-all, many messages
 * per connection, shows the round trips. */
START_TEST(one_slot_waits_for_cts) {
  jct_schedule_t *s = four_per_connection();
  fake_t *f = fake_new(s, 1);
  run(f);
  ck_assert_uint_eq(f->sends_without_cts, 0);
  /* 4 messages of 256 bytes per direction; each waits for a CTS that
   * follows the previous message's arrival. */
  uint64_t cts = LAT_NS + 64 * NS_PER_BYTE, msg = LAT_NS + 256 * NS_PER_BYTE;
  ck_assert_uint_eq(jct_exec_jct_ns(f->e), msg + 3 * (cts + msg));
  fake_free(f);
  jct_schedule_free(s);
}
END_TEST

/* A program-order dep (one of the rank's own earlier sends) waits for that
 * send's acknowledgement, a received one for the message's arrival: rank 0
 * sends op 0, then op 1 on another connection once op 0 is acknowledged
 * and 5 us have passed; rank 1 answers op 0 with op 2 as soon as it has it. */
#define PO_JSON                                                                                    \
  "{\"jctlab_schedule\":1,\"ranks\":2,\"connections\":[{\"src\":0,\"dst\":1},"                     \
  "{\"src\":0,\"dst\":1,\"channel\":1},{\"src\":1,\"dst\":0}],\"ops\":[{\"conn\":0,\"bytes\":"     \
  "1000},"                                                                                         \
  "{\"conn\":1,\"bytes\":100,\"deps\":[0],\"gap_ns\":5000},{\"conn\":2,\"bytes\":100,\"deps\":[0]" \
  "}]}"

/* A job without flow control (perftest, a capture with no CTS): no CTS is
 * sent, and every message goes as soon as it may start. */
START_TEST(no_cts_sends_at_once) {
  jct_schedule_t *s = four_per_connection();
  fake_t *f = fake_new(s, JCT_EXEC_NO_CTS);
  run(f);
  ck_assert(jct_exec_done(f->e));
  ck_assert_uint_eq(f->cts_in[0] + f->cts_in[1], 0);
  ck_assert_uint_eq(f->sent[0] + f->sent[1], s->nops);
  for (uint32_t i = 1; i < s->nops; i++) /* all at the start */
    ck_assert_uint_eq(jct_exec_timing(f->e, i)->start_ns, jct_exec_timing(f->e, 0)->start_ns);
  ck_assert_uint_eq(jct_exec_jct_ns(f->e), LAT_NS + 256 * NS_PER_BYTE);
  fake_free(f);
  jct_schedule_free(s);
}
END_TEST

START_TEST(program_order_waits_for_the_ack) {
  char err[256];
  jct_schedule_t *s;
  ck_assert_int_eq(jct_schedule_loads(&s, PO_JSON, strlen(PO_JSON), err, sizeof err), 0);
  ck_assert_int_eq(jct_schedule_dep_kind(s, 1, 0), JCT_DEP_ORDER);
  ck_assert_int_eq(jct_schedule_dep_kind(s, 2, 0), JCT_DEP_RECEIVED);
  fake_t *f = fake_new(s, 0);
  run(f);
  ck_assert(jct_exec_done(f->e));
  const jct_op_timing_t *t0 = jct_exec_timing(f->e, 0), *t1 = jct_exec_timing(f->e, 1),
                        *t2 = jct_exec_timing(f->e, 2);
  ck_assert_uint_eq(t0->done_ns, t0->start_ns + LAT_NS + 1000 * NS_PER_BYTE);
  ck_assert_uint_eq(t2->ready_ns, t0->done_ns);          /* received */
  ck_assert_uint_eq(t1->ready_ns, t0->done_ns + LAT_NS); /* acknowledged */
  ck_assert_uint_eq(t1->start_ns, t1->ready_ns + 5000);
  fake_free(f);
  jct_schedule_free(s);
}
END_TEST

START_TEST(out_of_order_recv_rejected) {
  char err[256];
  jct_schedule_t *s;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 3, 3000, 1, err, sizeof err), 0);
  fake_t *f = fake_new(s, 0);
  ck_assert_int_eq(jct_exec_start(f->e, 1), 0);
  /* conn 0 carries ops 0, 3, 6, 9: op 3 cannot come first */
  ck_assert_int_eq(jct_exec_on_recv(f->e, 0, 3, 2), JCT_EINVAL);
  ck_assert_int_eq(jct_exec_on_recv(f->e, 99, 0, 2), JCT_EINVAL);
  /* A send completes only once posted (op 0 waits for its CTS), in order,
   * and once. */
  ck_assert_int_eq(jct_exec_on_sent(f->e, 0, 0, 2), JCT_EINVAL);
  ck_assert_int_eq(jct_exec_on_cts(f->e, 0, 2), 0); /* op 0 goes */
  ck_assert_int_eq(jct_exec_on_sent(f->e, 0, 3, 3), JCT_EINVAL);
  ck_assert_int_eq(jct_exec_on_sent(f->e, 99, 0, 3), JCT_EINVAL);
  ck_assert_int_eq(jct_exec_on_sent(f->e, 0, 0, 3), 0);
  ck_assert_int_eq(jct_exec_on_sent(f->e, 0, 0, 4), JCT_EINVAL); /* once */
  ck_assert(!jct_exec_done(f->e));
  ck_assert_uint_eq(jct_exec_jct_ns(f->e), 0);
  fake_free(f);
  jct_schedule_free(s);
}
END_TEST

Suite *exec_suite(void) {
  Suite *s = suite_create("exec");
  TCase *core = tcase_create("core");
  tcase_add_test(core, ring_jct_exact);
  tcase_add_test(core, gaps_delay_sends);
  tcase_add_test(core, one_slot_waits_for_cts);
  tcase_add_test(core, no_cts_sends_at_once);
  tcase_add_test(core, program_order_waits_for_the_ack);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, out_of_order_recv_rejected);
  suite_add_tcase(s, limits);
  return s;
}
