/* Schedule inference (include/jctlab/infer.h) and `jctlab schedule`:
 * the shipped ring capture gives back the ring synth makes, op by op; the
 * default rxe trace gives a valid schedule with inspect's message count and
 * its losses; a crafted capture shows control traffic counted, a dep and a
 * loss found; the pattern recogniser names every generated collective; bad
 * input is an error, and exit status 2 from the binary; and `jctlab run
 * --schedule` runs what both shipped captures give (namespaces: as root,
 * or in a user namespace, as check_run.c). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "jctlab/error.h"
#include "jctlab/infer.h"
#include "jctlab/inspect.h"
#include "jctlab/schedule.h"
#include "suites.h"
#include "testkit.h"

#define RING_TRACE JCT_SOURCE_DIR "/traces/ring8.pcap"
#define RXE_TRACE JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap"
/* A shipped capture of the soft-RoCE lab (traces/README.md): "ring2-nodrop". */
#define LAB_TRACE(name) JCT_SOURCE_DIR "/traces/rxe-lab-" name ".pcap"

/* jct_infer on trace with the default options; the test fails, naming
 * the trace, when it does not infer a schedule. */
static void infer_ok(const char *trace, jct_schedule_t **s, jct_infer_report_t *rep) {
  char err[256];
  ck_assert_msg(jct_infer(trace, NULL, s, rep, err, sizeof err) == 0, "%s: %s", trace, err);
}

/* What infer_ok gave, freed. */
static void infer_free(jct_schedule_t *s, jct_infer_report_t *rep) {
  jct_infer_report_free(rep);
  jct_schedule_free(s);
}

START_TEST(ring_capture_gives_synths_ring) {
  jct_schedule_t *s, *want;
  jct_infer_report_t rep;
  char err[256];
  infer_ok(RING_TRACE, &s, &rep);
  ck_assert_int_eq(jct_schedule_synth(&want, "ring", 8, 256 * 1024, 1, err, sizeof err), 0);
  ck_assert_int_eq(jct_schedule_validate(s, err, sizeof err), 0);
  ck_assert_uint_eq(s->nranks, 8);
  ck_assert_uint_eq(s->nconns, 8);
  for (uint32_t c = 0; c < 8; c++) { /* r -> r+1, one channel */
    ck_assert_uint_eq(s->conns[c].src, want->conns[c].src);
    ck_assert_uint_eq(s->conns[c].dst, want->conns[c].dst);
    ck_assert_uint_eq(s->conns[c].dst, (c + 1) % 8);
  }
  ck_assert_uint_eq(s->nops, 2 * 7 * 8);
  ck_assert_uint_eq(s->nops, want->nops);
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *a = &s->ops[i], *b = &want->ops[i];
    ck_assert_msg(a->conn == b->conn && a->bytes == b->bytes && a->ndeps == b->ndeps,
                  "op %u: conn %u bytes %llu %u deps, synth: conn %u bytes %llu %u deps", i,
                  a->conn, (unsigned long long)a->bytes, a->ndeps, b->conn,
                  (unsigned long long)b->bytes, b->ndeps);
    for (uint32_t d = 0; d < a->ndeps; d++)
      ck_assert_uint_eq(a->deps[d], b->deps[d]);
    ck_assert_int_eq(a->step, b->step);
  }
  ck_assert_str_eq(rep.pattern, "ring");
  ck_assert_str_eq(s->algorithm, "ring");
  ck_assert_uint_eq(rep.bytes_estimate, 256 * 1024);
  ck_assert_uint_eq(rep.repetitions, 1);
  ck_assert_uint_eq(rep.flow_control, 112); /* one clear-to-send per message */
  ck_assert_uint_eq(rep.messages, 224);
  ck_assert_uint_eq(rep.nfaults, 0);
  ck_assert_uint_eq(rep.ops_with_deps, 104);
  ck_assert_uint_eq(rep.deps_program_order, 0); /* its waits are all explained by messages */
  ck_assert_uint_eq(rep.frames_backwards + rep.skewed_messages, 0);
  infer_free(s, &rep);
  jct_schedule_free(want);
}
END_TEST

START_TEST(rxe_trace_gives_a_valid_schedule_and_its_losses) {
  jct_schedule_t *s;
  jct_infer_report_t rep;
  jct_inspect_t *ins;
  char err[256];
  ck_assert_int_eq(jct_inspect_path(RXE_TRACE, NULL, &ins, err, sizeof err), 0);
  const jct_totals_t *t = jct_inspect_totals(ins);
  infer_ok(RXE_TRACE, &s, &rep);
  ck_assert_int_eq(jct_schedule_validate(s, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, t->messages); /* 48 writes + 48 sends */
  ck_assert_uint_eq(s->nops, 96);
  ck_assert_uint_eq(rep.messages, t->messages);
  ck_assert_uint_eq(s->nranks, 2);
  ck_assert_uint_eq(s->nconns, 2); /* the write QP and the send QP, client to server */
  ck_assert_uint_eq(s->ops[0].bytes, 32768);
  ck_assert_uint_eq(s->ops[95].bytes, 4096);
  ck_assert_uint_eq(rep.control_tcp, 72); /* perftest's exchange of QP numbers */
  ck_assert_uint_eq(rep.control_frames, t->other_frames);
  ck_assert_uint_eq(rep.flow_control, 0);
  ck_assert_str_eq(rep.pattern, "unknown");
  /* Every PSN missing at the capture point is a lost first transmission. */
  uint32_t before = 0, timeouts = 0;
  for (uint32_t i = 0; i < rep.nfaults; i++) {
    const jct_infer_fault_t *f = &rep.faults[i];
    ck_assert_uint_lt(f->op, s->nops);
    ck_assert_uint_lt(f->offset_bytes, s->ops[f->op].bytes);
    before += f->before_capture && !f->retransmission;
    timeouts += f->timeout;
    if (i) ck_assert(f->op >= rep.faults[i - 1].op);
  }
  ck_assert_uint_eq(before, t->gap_psns);
  ck_assert_uint_ge(timeouts, t->timeouts);
  /* Program order: ib_send_bw's first send (frame 2332, 12.839027 s) came
   * 3.055439 s after ib_write_bw's last write had passed the capture point
   * (frame 2287, 9.783588 s), perftest's TCP exchange in between, which
   * the schedule leaves out: it waits for that write, with the pause as
   * its gap; every other op keeps no dep (each test's messages overlapped). */
  uint32_t first_send = UINT32_MAX, last_write = 0;
  for (uint32_t i = 0; i < s->nops; i++) {
    if (s->ops[i].conn == 1 && first_send == UINT32_MAX) first_send = i;
    if (s->ops[i].conn == 0) last_write = i;
  }
  ck_assert_uint_eq(s->ops[first_send].ndeps, 1);
  ck_assert_uint_eq(s->ops[first_send].deps[0], last_write);
  ck_assert_int_eq(jct_schedule_dep_kind(s, first_send, last_write), JCT_DEP_ORDER);
  ck_assert_uint_eq(s->ops[first_send].gap_ns, 3055439000u); /* no received dep: no turnaround */
  ck_assert_uint_eq(rep.turnaround_ns, 0);
  ck_assert_uint_eq(rep.ops_with_deps, 1);
  ck_assert_uint_eq(rep.ops_program_order, 1);
  ck_assert_uint_eq(rep.deps_program_order, 1);
  ck_assert_uint_eq(rep.deps_received, 0);
  ck_assert_uint_gt(rep.order_pause_ns, 0);
  ck_assert_uint_lt(rep.order_pause_ns, 3055439000u);
  ck_assert_uint_eq(rep.faults[0].op, 0); /* the first gap: psn 9768683, 17 KiB into write 0 */
  ck_assert_uint_eq(rep.faults[0].psn, 9768683);
  ck_assert_uint_eq(rep.faults[0].offset_bytes, 16384);
  ck_assert(!rep.faults[0].timeout && !rep.faults[0].tail);
  /* Every go-back after a NAK, as deep as it went (frame 71: 17 PSNs
   * re-sent from the first gap's, whose NAK came 7.731 ms after the hole
   * with 15 PSNs past it seen; frame 2532: the SEND test's first, 116). */
  ck_assert_uint_eq(rep.ngo_backs, t->rewinds + t->timeouts);
  ck_assert_uint_eq(rep.timer_go_backs, t->timeouts);
  ck_assert_uint_eq(rep.go_backs[0].op, 0);
  ck_assert_uint_eq(rep.go_backs[0].offset_bytes, 16384);
  ck_assert_uint_eq(rep.go_backs[0].ahead_psns, 17);
  ck_assert_uint_eq(rep.go_backs[0].nak_ahead_psns, 15);
  ck_assert_uint_eq(rep.go_backs[0].hole_to_nak_ns, 7731000);
  ck_assert_uint_eq(rep.go_backs[0].nak_to_resend_ns, 6397000); /* its NAK to frame 71 */
  /* The SEND test's last three NAKs, answered with nothing in flight
   * (frames 2767, 2823, 2849): 44.6, 49.0 and 84.1 ms after them. */
  ck_assert_uint_ge(rep.ngo_backs, 3);
  const jct_infer_go_back_t *last = &rep.go_backs[rep.ngo_backs - 3];
  ck_assert_uint_eq(s->ops[last[0].op].conn, 1);
  ck_assert_uint_eq(last[0].nak_to_resend_ns, 44569000);
  ck_assert_uint_eq(last[1].nak_to_resend_ns, 48950000);
  ck_assert_uint_eq(last[2].nak_to_resend_ns, 84068000);
  /* Which copy each lost transmission was: the SEND test's go-backs re-sent
   * PSNs 1129980, 1130004 and 1130005 (first_send + 35, + 41) through to
   * their third, fourth and fifth copies (first pass, then the go-backs from
   * 1129907, 1129936, 1129980 and 1130004), each lost there and NAKed
   * (frames 2766, 2822, 2848); PSN 1129936 was lost at its first re-sent
   * copy (2), and a lost first transmission is copy 1. */
  struct {
    uint32_t psn, op;
    uint8_t copy;
  } want[] = {{1129936, first_send + 24, 2}, {1129980, first_send + 35, 3},
              {1130004, first_send + 41, 4}, {1130005, first_send + 41, 5},
              {1130023, first_send + 46, 2}, {9768683, 0, 1}};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    uint32_t i = 0;
    while (i < rep.nfaults && rep.faults[i].psn != want[w].psn)
      i++;
    ck_assert_msg(i < rep.nfaults, "no fault at PSN %u", want[w].psn);
    ck_assert_uint_eq(rep.faults[i].op, want[w].op);
    ck_assert_uint_eq(rep.faults[i].copies[0], want[w].copy);
    ck_assert_uint_eq(rep.faults[i].copies[1], 0); /* lost once */
  }
  for (uint32_t i = 0; i < rep.nfaults; i++) { /* T lost transmissions: T copies, increasing */
    const jct_infer_fault_t *f = &rep.faults[i];
    uint32_t lost = 1 + f->again;
    for (uint32_t c = 0; c < lost && c < JCT_INFER_MAX_COPIES; c++) {
      ck_assert_uint_ge(f->copies[c], c + (f->retransmission ? 2 : 1));
      if (c) ck_assert_uint_gt(f->copies[c], f->copies[c - 1]);
    }
  }
  uint32_t k = 0;
  while (k < rep.ngo_backs && s->ops[rep.go_backs[k].op].conn != 1)
    k++;
  ck_assert_uint_lt(k, rep.ngo_backs);
  ck_assert_uint_eq(rep.go_backs[k].op, first_send + 17); /* PSN 69: its 18th message, packet 1 */
  ck_assert_uint_eq(rep.go_backs[k].offset_bytes, 1024);
  ck_assert_uint_eq(rep.go_backs[k].ahead_psns, 116);
  uint32_t timers = 0;
  for (uint32_t i = 0; i < rep.ngo_backs; i++) {
    const jct_infer_go_back_t *g = &rep.go_backs[i];
    ck_assert_uint_lt(g->op, s->nops);
    ck_assert_uint_ge(g->ahead_psns, 1);
    ck_assert_uint_le(g->ahead_psns, 129); /* rxe's window, and the NAKed PSN */
    ck_assert(g->timer == (g->timer_ns > 0));
    if (!g->timer) continue;
    ck_assert_uint_eq(g->nak_to_resend_ns, 0); /* no NAK named it */
    /* The one timeout: a lost retransmission re-sent by the 2^14 timer,
     * 67.2 ms after the flow last heard anything, 129 PSNs deep. */
    timers++;
    ck_assert_uint_eq(g->op, 4);
    ck_assert_uint_eq(g->offset_bytes, 12288);
    ck_assert_uint_eq(g->ahead_psns, 129);
    ck_assert_uint_ge(g->idle_ns, 67100000);
    ck_assert_uint_le(g->idle_ns, 67300000);
    ck_assert_uint_gt(g->timer_ns, g->idle_ns);
  }
  ck_assert_uint_eq(timers, 1);
  infer_free(s, &rep);
  jct_inspect_free(ins);
}
END_TEST

/* The lab's lossless ring (traces/README.md): rxe went back twice with no
 * NAK and nothing lost. Both are timer go-backs, no loss: frame 54 re-sends
 * the whole of rank 0's message (PSN 5050142, 32 packets) 73.0 ms after
 * its first transmission (frame 16), which started the timer; frame 189
 * rank 1's from PSN 10879000, 64 PSNs, 165 ms after frame 13 (tshark reads
 * the same times): the ACK of its first 32 PSNs (frame 118, 32.3 ms before)
 * was not acted on, since rxe went back to its first PSN, so frame 13's
 * send is the timer's start. Then the timers of the other lab captures,
 * from rxe's reference (infer_timer.c): all from one timer of 4.096 us x
 * 2^14 (the QP timeout asked for), plus the VMs' lag. */
START_TEST(lab_timer_go_backs) {
  jct_schedule_t *s;
  jct_infer_report_t rep;
  infer_ok(LAB_TRACE("ring2-nodrop"), &s, &rep);
  ck_assert_uint_eq(rep.nfaults, 0);
  ck_assert_uint_eq(rep.ngo_backs, 2);
  ck_assert_uint_eq(rep.timer_go_backs, 2);
  const jct_infer_go_back_t *a = &rep.go_backs[0], *b = &rep.go_backs[1];
  ck_assert(a->timer && b->timer);
  ck_assert_uint_eq(a->offset_bytes, 0);
  ck_assert_uint_eq(a->ahead_psns, 32);
  ck_assert_uint_eq(a->timer_ns / 100000, 730); /* 0.386165 - 0.313143 s */
  ck_assert_uint_eq(b->offset_bytes, 0);
  ck_assert_uint_eq(b->ahead_psns, 64);
  ck_assert_uint_eq(b->timer_ns / 1000000, 165); /* 0.474668 - 0.309666 s */
  ck_assert_uint_ne(s->ops[a->op].conn, s->ops[b->op].conn);
  ck_assert(!a->recovers_loss && !b->recovers_loss);
  ck_assert_uint_eq(rep.timer_est_ns, 4096ull << 14);
  infer_free(s, &rep);

  /* ring2-drop1pct: frame 374 goes back to PSN 7918847 79.1 ms after the
   * last ACK acted on with PSNs outstanding (frame 206, 0.373661 s), not
   * 114 ms after its message's start, nor 23.0 ms after the NAK of that
   * PSN (frame 322), which does not restart rxe's timer. It re-sends the
   * PSN lost before the capture point: it recovers a loss. */
  infer_ok(LAB_TRACE("ring2-drop1pct"), &s, &rep);
  ck_assert_uint_eq(rep.timer_go_backs, 1);
  for (uint32_t i = 0; i < rep.ngo_backs; i++) {
    const jct_infer_go_back_t *g = &rep.go_backs[i];
    if (!g->timer) continue;
    ck_assert_uint_eq(g->timer_ns / 100000, 791); /* 0.452777 - 0.373661 s */
    ck_assert_uint_eq(g->timer_lead_ns, 0);       /* the ACK came after its message's start */
    ck_assert(g->recovers_loss);
  }
  ck_assert_uint_eq(rep.timer_est_ns, 4096ull << 14);
  /* The profile's timeout is that timer (profile.h), not idle time's. */
  ck_assert_ptr_nonnull(s->profile);
  ck_assert_int_eq(s->profile->timeout_exp, 14);
  ck_assert_uint_eq(s->profile->timeout_ns.value, 4096ull << 14);
  ck_assert_uint_eq(s->profile->timeout_timer_go_backs, 1);
  infer_free(s, &rep);

  /* ring4: five timer go-backs, nothing lost in them, each 6-27 ms past
   * the 67.1 ms timer; the last (frame 1122, 5.325 s) from the send that
   * ended a quiet stretch after the timer had run out (5.252 s), not from
   * the duplicate ACKs 3 ms before it (frames 1119-1121), not acted on. */
  infer_ok(LAB_TRACE("ring4-drop05pct"), &s, &rep);
  ck_assert_uint_eq(rep.timer_go_backs, 5);
  ck_assert_uint_eq(rep.timer_est_ns, 4096ull << 14);
  ck_assert_int_eq(s->profile->timeout_exp, 14);
  ck_assert_uint_eq(s->profile->timeout_timer_go_backs, 5);
  for (uint32_t i = 0; i < rep.ngo_backs; i++) {
    const jct_infer_go_back_t *g = &rep.go_backs[i];
    if (!g->timer) continue;
    ck_assert_uint_ge(g->timer_ns, 4096ull << 14);
    ck_assert_uint_le(g->timer_ns, (4096ull << 14) + 27000000);
    ck_assert(!g->recovers_loss);
  }
  infer_free(s, &rep);
}
END_TEST

/* Transmit stalls (infer.h's rule), what it finds in each shipped rxe
 * capture. ring2-nodrop: rank 1's VM sent the first packet of its first
 * message (PSN 10879000, frame 13, 0.309666 s) and the next (frame 48,
 * 0.371547 s) 61.9 ms later, nothing of its flow in flight but that one
 * and no go-back between; its VM went on draining with further gaps of
 * 8-34 ms with nothing on the wire to explain them (frames 49-50: 12.8 ms).
 * Each stall's gap is over 20 spacings and 5 ms, and the profile's link
 * carries their sum. */
static void assert_stalls(const char *trace, uint32_t want, uint64_t want_total_ms,
                          uint32_t want_unacked_total) {
  /* The floor: 1/16 of the capture's timer (2^14 in every rxe capture),
   * 5 ms where its timer went back nowhere. */
  jct_schedule_t *s;
  jct_infer_report_t rep;
  infer_ok(trace, &s, &rep);
  ck_assert_msg(rep.nstalls == want, "%s: %u stalls", trace, rep.nstalls);
  ck_assert_uint_eq(rep.stall_min_ns, rep.timer_est_ns ? rep.timer_est_ns / 16 : 5000000);
  if (rep.timer_est_ns) ck_assert_uint_eq(rep.timer_est_ns, 4096ull << 14);
  uint64_t total = 0, on_links = 0;
  uint32_t unacked = 0;
  for (uint32_t i = 0; i < rep.nstalls; i++) {
    const jct_infer_stall_t *x = &rep.stalls[i];
    ck_assert_uint_lt(x->unacked_psns, JCT_INFER_STALL_WINDOW_PSNS + 1);
    unacked += x->unacked_psns;
    ck_assert_uint_lt(x->op, s->nops);
    ck_assert_uint_gt(x->offset_bytes, 0); /* never before a message's first packet */
    ck_assert_uint_lt(x->offset_bytes, s->ops[x->op].bytes);
    ck_assert_uint_gt(x->gap_ns, rep.stall_min_ns);
    ck_assert_uint_gt(x->gap_ns, JCT_INFER_STALL_SPACINGS * x->spacing_ns);
    ck_assert_uint_eq(x->stall_ns, x->gap_ns - x->spacing_ns);
    total += x->stall_ns;
  }
  for (uint32_t i = 0; i < s->profile->nlinks; i++)
    on_links += s->profile->links[i].stall_ns;
  ck_assert_uint_eq(on_links, total);
  ck_assert_msg(total / 1000000 == want_total_ms, "%s: %llu ms of stalls", trace,
                (unsigned long long)(total / 1000000));
  ck_assert_msg(unacked == want_unacked_total, "%s: %u PSNs unacknowledged through its stalls",
                trace, unacked);
  infer_free(s, &rep);
}

START_TEST(lab_transmit_stalls) {
  jct_schedule_t *s;
  jct_infer_report_t rep;
  infer_ok(LAB_TRACE("ring2-nodrop"), &s, &rep);
  ck_assert_uint_ge(rep.nstalls, 1);
  const jct_infer_stall_t *x = &rep.stalls[0];
  ck_assert_uint_eq(s->conns[s->ops[x->op].conn].src, 1); /* rank 1's */
  ck_assert_uint_eq(x->psn, 10879001);                    /* after its first packet */
  ck_assert_uint_eq(x->offset_bytes, 4096);
  ck_assert_uint_eq(x->gap_ns / 100000, 618); /* 0.371547 - 0.309666 s */
  ck_assert_uint_eq(x->spacing_ns / 1000, 334);
  for (uint32_t i = 0; i < rep.nstalls; i++) /* the longest by far */
    ck_assert(i == 0 || rep.stalls[i].stall_ns * 3 < x->stall_ns * 2);
  infer_free(s, &rep);
  assert_stalls(LAB_TRACE("ring2-nodrop"), 9, 184, 108);
  assert_stalls(LAB_TRACE("p2p-delay-drop"), 0, 0, 0);
  /* ring2-drop1pct: the VMs taking turns, two of them between its first
   * loss (PSN 7918736, frame 23) and its go-back (frame 145), 51 and 46
   * PSNs unacknowledged (traces/README.md). */
  assert_stalls(LAB_TRACE("ring2-drop1pct"), 5, 62, 133);
  assert_stalls(LAB_TRACE("ring4-drop05pct"), 27, 387, 387);
  /* The shipped capture: its sender held the WRITE test's 3rd packet of
   * op 41 91.6 ms (frames 1954-1956), an ACK in between, nothing lost;
   * op 0's 2nd 4.8 ms, over its floor (4.19 ms: 1/16 of its 67.1 ms timer). */
  assert_stalls(RXE_TRACE, 4, 113, 7);
  assert_stalls(RING_TRACE, 0, 0, 0);
  /* ... its first two packets unacknowledged all along, 88.2 ms after the
   * ACK in it (frame 1955) restarted rxe's 67.1 ms timer (2^14), and no
   * go-back: the host's timer stopped with it, as a replay's does. */
  infer_ok(RXE_TRACE, &s, &rep);
  ck_assert_uint_eq(rep.nstalls, 4);
  ck_assert_uint_eq(rep.stalls[2].psn, 9769981);
  ck_assert_uint_eq(rep.stalls[2].unacked_psns, 2);
  ck_assert_uint_gt(rep.stalls[2].stall_ns, 4096ull << 14);
  ck_assert_uint_eq(rep.stalls[2].stall_ns / 100000, 916);
  infer_free(s, &rep);
}
END_TEST

/* The lab's ring of 4 (traces/README.md), made by the verbs transport:
 * its clear-to-sends are 64-byte WRITE ONLY WITH IMMEDIATE 0xffffffff on
 * each data connection's QP pair the other way, flow control, so the job
 * is a ring of 4 connections of 6 ops each (not 8 connections, half of
 * them of 64-byte messages). Its first drop, PSN 9983832 (198.18.0.4 ->
 * .3, QP 0x11, never seen at the capture point: the NAK of frame 24 names
 * it, frame 31 re-sends it), is the first clear-to-send of connection
 * 2 -> 3: it announced that connection's op at position 0 (the flow's
 * first PSN: in PSN order, before its successor of frame 15, not last as
 * when it was timed by its retransmission). Its NAK's go-back is that
 * clear-to-send's, 6 PSNs deep (all six); the other loss is a data
 * packet's. */
START_TEST(lab_cts_is_flow_control) {
  jct_schedule_t *s;
  jct_infer_report_t rep;
  infer_ok(LAB_TRACE("ring4-drop05pct"), &s, &rep);
  ck_assert_str_eq(rep.pattern, "ring");
  ck_assert_uint_eq(s->nconns, 4);
  ck_assert_uint_eq(s->nops, 24);
  ck_assert_uint_eq(rep.flow_control, 24);
  ck_assert_uint_eq(rep.faults_on_flow_control, 0);
  ck_assert_uint_eq(rep.nfaults, 2);
  ck_assert_uint_eq(rep.cts_faults, 1);
  const jct_infer_fault_t *f = NULL, *d = NULL;
  for (uint32_t i = 0; i < rep.nfaults; i++)
    if (rep.faults[i].psn == 9983832)
      f = &rep.faults[i];
    else
      d = &rep.faults[i];
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(d);
  ck_assert(f->cts && !d->cts);
  ck_assert(f->before_capture);
  ck_assert_uint_eq(f->offset_bytes, 0);
  const jct_op_t *op = &s->ops[f->op];
  ck_assert_uint_eq(op->bytes, 128 * 1024);
  ck_assert_uint_eq(s->conns[op->conn].src, 2); /* 198.18.0.3 */
  ck_assert_uint_eq(s->conns[op->conn].dst, 3); /* 198.18.0.4, the clear-to-send's sender */
  uint32_t position = 0;
  for (uint32_t i = 0; i < f->op; i++)
    position += s->ops[i].conn == op->conn;
  ck_assert_uint_eq(position, 0);
  ck_assert_uint_eq(d->psn, 2918720);
  ck_assert_uint_eq(d->offset_bytes, 106496);
  uint32_t cts_go_backs = 0;
  for (uint32_t i = 0; i < rep.ngo_backs; i++) {
    const jct_infer_go_back_t *g = &rep.go_backs[i];
    if (!g->cts) continue;
    cts_go_backs++;
    ck_assert_uint_eq(g->op, f->op);
    ck_assert(!g->timer && g->recovers_loss);
    ck_assert_uint_eq(g->offset_bytes, 0);
    ck_assert_uint_eq(g->ahead_psns, 6);
  }
  ck_assert_uint_eq(cts_go_backs, 1);
  infer_free(s, &rep);

  /* The lab's 2-rank ring: two connections, one each way, not four. */
  infer_ok(LAB_TRACE("ring2-drop1pct"), &s, &rep);
  ck_assert_uint_eq(s->nconns, 2);
  ck_assert_str_eq(rep.pattern, "ring");
  ck_assert_uint_eq(rep.flow_control, s->nops);
  infer_free(s, &rep);
}
END_TEST

/* A TCP segment: Ethernet, IPv4 (protocol 6), 20 bytes of TCP header. */
static size_t tcp_frame(uint8_t *f) {
  static const uint8_t hdr[] = {
      2,    0, 0, 0,  0, 2, 2,    0, 0,  0, 0, 1, 0x08, 0x00, /* Ethernet */
      0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 198,  18,   0, 1, 198, 18, 0, 2};
  memset(f, 0, 54);
  memcpy(f, hdr, sizeof hdr);
  f[34] = 0x4e, f[35] = 0x20, f[36] = 0x4e, f[37] = 0x21; /* ports 20000 -> 20001 */
  f[46] = 0x50;                                           /* data offset 5 */
  return 54;
}

/* A RoCE frame at t_us: a WRITE's RETH says reth_len bytes; an ACK's
 * syndrome is syn (0x1f: ACK, 0x60: NAK, PSN sequence error). */
static void add_frame(craft_pcap_t *p, uint64_t t_us, const char *src, const char *dst,
                      uint8_t opcode, uint32_t qp, uint32_t psn, uint32_t payload,
                      uint32_t reth_len, uint8_t syn) {
  uint8_t f[2048];
  craft_roce_t c = {.src = src, .dst = dst, .payload_bytes = payload};
  c.h.bth.opcode = opcode;
  c.h.bth.dest_qp = qp;
  c.h.bth.psn = psn;
  c.h.bth.pkey = 0xffff;
  c.h.reth.dma_len_bytes = reth_len;
  c.h.aeth.syndrome = syn;
  c.h.deth.src_qp = 1;
  size_t n = craft_roce(f, sizeof f, &c);
  ck_assert_uint_gt(n, 0);
  craft_pcap_add(p, t_us * 1000, f, n, n);
}

/* As add_frame, 3 KiB WRITEs, the ACK of PSN 101 a NAK. */
static void add(craft_pcap_t *p, uint64_t t_us, const char *src, const char *dst, uint8_t opcode,
                uint32_t qp, uint32_t psn, uint32_t payload) {
  add_frame(p, t_us, src, dst, opcode, qp, psn, payload, 3072,
            opcode == JCT_OP_RC_ACKNOWLEDGE && psn == 101 ? 0x60 : 0x1f);
}

START_TEST(crafted_capture_control_dep_and_loss) {
  char path[512], err[256];
  uint8_t f[64];
  craft_tmpname(path, sizeof path, ".pcap");
  craft_pcap_t *p = craft_pcap_open(path, true, 1);
  size_t n = tcp_frame(f);
  craft_pcap_add(p, 0, f, n, n);
  add(p, 1, "198.18.0.1", "198.18.0.2", JCT_OP_UD_SEND_ONLY, 1, 7, 256); /* a CM MAD */
  add(p, 10, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_FIRST, 0x11, 100, 1024);
  add(p, 12, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_LAST, 0x11, 102, 1024);
  add(p, 13, "198.18.0.2", "198.18.0.1", JCT_OP_RC_ACKNOWLEDGE, 0x22, 101, 0); /* NAK */
  add(p, 14, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_MIDDLE, 0x11, 101, 1024);
  add(p, 15, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_LAST, 0x11, 102, 1024);
  add(p, 16, "198.18.0.2", "198.18.0.1", JCT_OP_RC_ACKNOWLEDGE, 0x22, 102, 0);
  add(p, 30, "198.18.0.2", "198.18.0.1", JCT_OP_RC_SEND_ONLY, 0x33, 500, 512);
  add(p, 31, "198.18.0.1", "198.18.0.2", JCT_OP_RC_ACKNOWLEDGE, 0x44, 500, 0);
  craft_pcap_close(p);

  jct_schedule_t *s;
  jct_infer_report_t rep;
  jct_infer_opts_t o = {.keep_turnaround = true};
  int rc = jct_infer(path, &o, &s, &rep, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_uint_eq(rep.control_tcp, 1);
  ck_assert_uint_eq(rep.control_cm, 1);
  ck_assert_uint_eq(rep.control_frames, 2);
  ck_assert_uint_eq(s->nranks, 2);
  ck_assert_uint_eq(s->nconns, 2);
  ck_assert_uint_eq(s->nops, 2);
  ck_assert_uint_eq(s->ops[0].bytes, 3072); /* the RETH's length */
  ck_assert_uint_eq(s->ops[1].bytes, 512);
  ck_assert_uint_eq(s->ops[0].ndeps, 0);
  ck_assert_uint_eq(s->ops[1].ndeps, 1); /* the send followed the write's completion */
  ck_assert_uint_eq(s->ops[1].deps[0], 0);
  ck_assert_uint_eq(s->ops[1].gap_ns, 15000);
  ck_assert_uint_eq(rep.nfaults, 1);
  ck_assert_uint_eq(rep.faults[0].op, 0);
  ck_assert_uint_eq(rep.faults[0].psn, 101);
  ck_assert_uint_eq(rep.faults[0].offset_bytes, 1024);
  ck_assert(rep.faults[0].before_capture && !rep.faults[0].timeout && !rep.faults[0].tail);
  infer_free(s, &rep);
  /* Without keep_turnaround the smallest gap is the network's: none is left. */
  infer_ok(path, &s, &rep);
  ck_assert_uint_eq(s->ops[1].gap_ns, 0);
  ck_assert_uint_eq(rep.turnaround_ns, 15000);
  infer_free(s, &rep);
  unlink(path);
}
END_TEST

/* A go-back cut short by another (frames of a 10-packet WRITE, PSNs
 * 100-109, 1 KiB each): PSN 102 is lost first time; its NAK sends the
 * requester back from 109, the highest (go-back A, 8 deep); A re-sends
 * 102-104, its copy of 105 is lost before the capture point, 106-107 get
 * through; then the requester goes back to 105 (go-back B), after a NAK
 * of it (nak) or its timer: it had got to 107, so B is 3 deep (105-107)
 * and re-sends 105-109. The capture sees 10 retransmissions (A's 5, B's
 * 5); with A's lost copy of 105, 11: the depths' sum. Counted from the
 * highest PSN (main's figure), B was 5 deep, and a replay that re-sends as
 * deep as the capture's re-sent 108 and 109 once too often. */
static void nested_go_back_capture(const char *path, bool nak) {
  craft_pcap_t *p = craft_pcap_open(path, true, 1);
  const char *a = "198.18.0.1", *b = "198.18.0.2";
  for (uint32_t psn = 100; psn <= 109; psn++) { /* 102 lost */
    uint8_t op = psn == 100   ? JCT_OP_RC_RDMA_WRITE_FIRST
                 : psn == 109 ? JCT_OP_RC_RDMA_WRITE_LAST
                              : JCT_OP_RC_RDMA_WRITE_MIDDLE;
    if (psn != 102) add_frame(p, 10 + psn - 100, a, b, op, 0x11, psn, 1024, 10240, 0);
  }
  add_frame(p, 30, b, a, JCT_OP_RC_ACKNOWLEDGE, 0x22, 102, 0, 0, 0x60); /* NAK 102 */
  /* A, its copy of 105 lost before the capture point; then B, from 105. */
  const uint32_t first_go_back[] = {102, 103, 104, 106, 107};
  for (uint32_t i = 0; i < 5; i++)
    add_frame(p, 40 + i, a, b, JCT_OP_RC_RDMA_WRITE_MIDDLE, 0x11, first_go_back[i], 1024, 10240, 0);
  if (nak) add_frame(p, 50, b, a, JCT_OP_RC_ACKNOWLEDGE, 0x22, 105, 0, 0, 0x60); /* NAK 105 */
  for (uint32_t psn = 105; psn <= 109; psn++)
    add_frame(p, 60 + psn - 105, a, b,
              psn == 109 ? JCT_OP_RC_RDMA_WRITE_LAST : JCT_OP_RC_RDMA_WRITE_MIDDLE, 0x11, psn, 1024,
              10240, 0);
  add_frame(p, 70, b, a, JCT_OP_RC_ACKNOWLEDGE, 0x22, 109, 0, 0, 0x1f);
  craft_pcap_close(p);
}

START_TEST(nested_go_back_depth) {
  char path[512], err[256];
  for (int nak = 1; nak >= 0; nak--) {
    craft_tmpname(path, sizeof path, ".pcap");
    nested_go_back_capture(path, nak);
    jct_schedule_t *s;
    jct_infer_report_t rep;
    ck_assert_msg(jct_infer(path, NULL, &s, &rep, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(s->nops, 1);
    ck_assert_uint_eq(rep.retransmitted_packets, 10);
    ck_assert_uint_eq(rep.ngo_backs, 2);
    const jct_infer_go_back_t *ga = &rep.go_backs[0], *gb = &rep.go_backs[1];
    ck_assert(!ga->timer);
    ck_assert_uint_eq(ga->offset_bytes, 2048); /* PSN 102 */
    ck_assert_uint_eq(ga->ahead_psns, 8);      /* 102-109 */
    ck_assert_uint_eq(ga->nak_ahead_psns, 7);  /* 109 seen when its NAK came */
    ck_assert_uint_eq(gb->offset_bytes, 5120); /* PSN 105 */
    ck_assert_uint_eq(gb->ahead_psns, 3);      /* 105-107, where A had got to */
    ck_assert(gb->timer == !nak);
    ck_assert_uint_eq(gb->nak_ahead_psns, nak ? 2 : 0); /* A was at 107 at the NAK, not 109 */
    ck_assert(gb->recovers_loss);                       /* it re-sent 105, whose copy A lost */
    ck_assert_uint_eq(ga->ahead_psns + gb->ahead_psns, rep.retransmitted_packets + 1);
    /* The faults: 102's first transmission, 105's re-sent copy (its 2nd). */
    ck_assert_uint_eq(rep.nfaults, 2);
    ck_assert_uint_eq(rep.faults[0].psn, 102);
    ck_assert(!rep.faults[0].retransmission && rep.faults[0].before_capture);
    ck_assert_uint_eq(rep.faults[1].psn, 105);
    ck_assert(rep.faults[1].retransmission);
    ck_assert_uint_eq(rep.faults[1].copies[0], 2);
    infer_free(s, &rep);

    /* The inspector's go-back depth (profile.h go_back_psns): per go-back
     * after a NAK, PSNs past the NAKed one where the requester was: 7 and 2. */
    jct_inspect_t *ins;
    jct_profile_t *prof;
    ck_assert_int_eq(jct_inspect_path(path, NULL, &ins, err, sizeof err), 0);
    ck_assert_int_eq(jct_inspect_profile(ins, &prof), 0);
    ck_assert_uint_eq(prof->go_back_psns.n, nak ? 2 : 1);
    ck_assert_uint_eq(prof->go_back_psns.max, 7);
    ck_assert_uint_eq(prof->go_back_psns.min, nak ? 2 : 7);
    ck_assert_uint_eq(prof->go_back_after_nak_psns.max, 0); /* nothing new after either NAK */
    jct_profile_free(prof);
    jct_inspect_free(ins);
    unlink(path);
  }
}
END_TEST

/* Program order: rank 0 sends A once it has B from rank 1; A completes,
 * the rank pauses 4,998 us with nothing received (compute), then sends C on
 * another QP. C depends on A (its rank's earlier send, program order; B is
 * implied through A), its gap the pause less the turnaround that A's
 * received dep measured. */
START_TEST(crafted_pause_is_program_order) {
  char path[512], err[256];
  craft_tmpname(path, sizeof path, ".pcap");
  craft_pcap_t *p = craft_pcap_open(path, true, 1);
  add(p, 5, "198.18.0.2", "198.18.0.1", JCT_OP_RC_SEND_ONLY, 0x21, 300, 256); /* B */
  add(p, 6, "198.18.0.1", "198.18.0.2", JCT_OP_RC_ACKNOWLEDGE, 0x31, 300, 0);
  add(p, 10, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_FIRST, 0x11, 200, 1024); /* A */
  add(p, 12, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_LAST, 0x11, 201, 1024);
  add(p, 13, "198.18.0.2", "198.18.0.1", JCT_OP_RC_ACKNOWLEDGE, 0x22, 201, 0);
  add(p, 5010, "198.18.0.1", "198.18.0.2", JCT_OP_RC_SEND_ONLY, 0x12, 400, 512); /* C */
  add(p, 5011, "198.18.0.2", "198.18.0.1", JCT_OP_RC_ACKNOWLEDGE, 0x23, 400, 0);
  craft_pcap_close(p);
  for (int keep = 0; keep < 2; keep++) {
    jct_schedule_t *s;
    jct_infer_report_t rep;
    jct_infer_opts_t o = {.keep_turnaround = keep};
    ck_assert_msg(jct_infer(path, &o, &s, &rep, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(jct_schedule_validate(s, err, sizeof err), 0);
    ck_assert_uint_eq(s->nops, 3);
    uint32_t a = UINT32_MAX, b = UINT32_MAX, c = UINT32_MAX; /* by size: 3072 (RETH), 256, 512 */
    for (uint32_t i = 0; i < 3; i++)
      *(s->ops[i].bytes == 3072 ? &a : s->ops[i].bytes == 256 ? &b : &c) = i;
    ck_assert(a < 3 && b < 3 && c < 3);
    ck_assert_uint_eq(s->ops[a].ndeps, 1);
    ck_assert_uint_eq(s->ops[a].deps[0], b);
    ck_assert_int_eq(jct_schedule_dep_kind(s, a, b), JCT_DEP_RECEIVED);
    ck_assert_uint_eq(s->ops[c].ndeps, 1);
    ck_assert_uint_eq(s->ops[c].deps[0], a);
    ck_assert_int_eq(jct_schedule_dep_kind(s, c, a), JCT_DEP_ORDER);
    ck_assert_uint_eq(rep.turnaround_ns, keep ? 0 : 5000); /* from A's received dep alone */
    ck_assert_uint_eq(s->ops[a].gap_ns, keep ? 5000 : 0);
    ck_assert_uint_eq(s->ops[c].gap_ns, keep ? 4998000 : 4993000);
    ck_assert_uint_eq(rep.ops_with_deps, 2);
    ck_assert_uint_eq(rep.deps_received, 1);
    ck_assert_uint_eq(rep.deps_program_order, 1);
    ck_assert_uint_eq(rep.ops_program_order, 1);
    ck_assert_uint_eq(rep.order_pause_ns, 2000); /* A's 2 us, the longest message */
    infer_free(s, &rep);
  }
  unlink(path);
}
END_TEST

/* Rank 0 sends P, then A and B on two QPs, B starting while A is in
 * flight. After a short pause (1 us, less than A's 20 us) nothing is
 * program order: streamed messages. After a long one (1,001 us) A and B
 * both depend on P, and not on each other: they overlapped. */
START_TEST(overlapping_sends_stay_independent) {
  for (int pause = 0; pause < 2; pause++) {
    char path[512];
    uint64_t t = pause ? 1000 : 0;
    craft_tmpname(path, sizeof path, ".pcap");
    craft_pcap_t *p = craft_pcap_open(path, true, 1);
    add(p, 1, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_FIRST, 0x11, 200, 1024); /* P */
    add(p, 2, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_LAST, 0x11, 201, 1024);
    add(p, t + 3, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_FIRST, 0x11, 202, 1024); /* A */
    add(p, t + 13, "198.18.0.1", "198.18.0.2", JCT_OP_RC_SEND_FIRST, 0x12, 500, 1024);      /* B */
    add(p, t + 23, "198.18.0.1", "198.18.0.2", JCT_OP_RC_RDMA_WRITE_LAST, 0x11, 203, 1024);
    add(p, t + 33, "198.18.0.1", "198.18.0.2", JCT_OP_RC_SEND_LAST, 0x12, 501, 1024);
    craft_pcap_close(p);
    jct_schedule_t *s;
    jct_infer_report_t rep;
    infer_ok(path, &s, &rep);
    ck_assert_uint_eq(s->nops, 3);
    ck_assert_uint_eq(s->nconns, 2);
    /* Ops by channel: P and A on the first QP, B on the second. */
    uint32_t P = 0, A = 1, B = 2;
    ck_assert_uint_eq(s->ops[P].conn, s->ops[A].conn);
    ck_assert_uint_ne(s->ops[B].conn, s->ops[A].conn);
    ck_assert_uint_eq(rep.order_pause_ns, 20000);
    ck_assert_uint_eq(s->ops[P].ndeps, 0);
    if (!pause) {
      ck_assert_uint_eq(s->ops[A].ndeps + s->ops[B].ndeps, 0);
      ck_assert_uint_eq(rep.deps_program_order, 0);
    } else {
      ck_assert_uint_eq(s->ops[A].ndeps, 1);
      ck_assert_uint_eq(s->ops[A].deps[0], P);
      ck_assert_uint_eq(s->ops[B].ndeps, 1);
      ck_assert_uint_eq(s->ops[B].deps[0], P);
      ck_assert_uint_eq(s->ops[A].gap_ns, 1001000); /* each from P's completion */
      ck_assert_uint_eq(s->ops[B].gap_ns, 1011000);
      ck_assert_uint_eq(rep.deps_program_order, 2);
      ck_assert_uint_eq(rep.ops_program_order, 2);
    }
    ck_assert_uint_eq(rep.deps_received, 0);
    infer_free(s, &rep);
    unlink(path);
  }
}
END_TEST

START_TEST(bad_input_is_an_error) {
  jct_schedule_t *s = (jct_schedule_t *)1;
  char err[256], path[512];
  ck_assert_int_eq(jct_infer("/nonexistent/x.pcap", NULL, &s, NULL, err, sizeof err), JCT_EIO);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(jct_infer(JCT_SOURCE_DIR "/traces/README.md", NULL, &s, NULL, err, sizeof err),
                   JCT_ENOTCAP);
  /* A capture with no RoCE message: only control traffic. */
  uint8_t f[64];
  craft_tmpname(path, sizeof path, ".pcap");
  craft_pcap_t *p = craft_pcap_open(path, false, 1);
  size_t n = tcp_frame(f);
  craft_pcap_add(p, 0, f, n, n);
  craft_pcap_close(p);
  ck_assert_int_eq(jct_infer(path, NULL, &s, NULL, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "no RoCE message"));
  ck_assert_ptr_null(s);
  unlink(path);
}
END_TEST

/* Each generated collective is recognised, with its size back. */
START_TEST(patterns_of_synth) {
  static const struct {
    const char *alg;
    uint32_t n, channels;
  } cases[] = {{"ring", 8, 1},
               {"ring", 2, 1},
               {"ring", 5, 2},
               {"tree", 8, 1},
               {"tree", 4, 1},
               {"tree", 3, 1},
               {"halving-doubling", 8, 1},
               {"halving-doubling", 4, 1},
               {"all-to-all", 8, 1},
               {"all-to-all", 3, 2}};
  char err[256], ev[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    jct_schedule_t *s;
    uint64_t bytes = 0, want = 1u << 20;
    uint32_t reps = 0;
    ck_assert_int_eq(
        jct_schedule_synth(&s, cases[i].alg, cases[i].n, want, cases[i].channels, err, sizeof err),
        0);
    const char *name = jct_infer_pattern(s, ev, sizeof ev, &bytes, &reps);
    const char *expect = cases[i].n == 2 ? "ring" : cases[i].alg;
    ck_assert_msg(strcmp(name, expect) == 0, "%s N=%u: %s (%s)", cases[i].alg, cases[i].n, name,
                  ev);
    ck_assert_msg(bytes == want, "%s N=%u: S %llu", cases[i].alg, cases[i].n,
                  (unsigned long long)bytes);
    jct_schedule_free(s);
  }
}
END_TEST

START_TEST(cli_schedule) {
  char out[512], rep[512];
  craft_tmpname(out, sizeof out, ".json");
  craft_tmpname(rep, sizeof rep, ".json");
  char *argv[] = {JCT_BINARY, "schedule", RING_TRACE, "-o", out, "--json-report", rep, NULL};
  result_t r = run_jctlab(argv, NULL, 60);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "Pattern    ring")); /* the report, on stdout */
  result_free(&r);
  jct_schedule_t *s;
  char err[256];
  ck_assert_int_eq(jct_schedule_load(&s, out, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, 112);
  jct_schedule_free(s);
  char *text = slurp(rep, NULL);
  json_t *doc = parse_json(text, "report");
  ck_assert_str_eq(json_string_value(jget(doc, "pattern.name")), "ring");
  ck_assert_int_eq(jint(doc, "capture.flow_control"), 112);
  ck_assert_int_eq(jint(doc, "schedule.ranks"), 8);
  json_decref(doc);
  free(text);
  unlink(out);
  unlink(rep);

  char *missing[] = {JCT_BINARY, "schedule", "/nonexistent/x.pcap", NULL};
  char *notcap[] = {JCT_BINARY, "schedule", JCT_SOURCE_DIR "/traces/README.md", NULL};
  char *opt[] = {JCT_BINARY, "schedule", "--bogus", NULL};
  char **bad[] = {missing, notcap, opt};
  for (size_t i = 0; i < 3; i++) {
    r = run_jctlab(bad[i], NULL, 60);
    ck_assert_msg(r.status == 2, "%s: exit %d", bad[i][2], r.status);
    ck_assert_ptr_nonnull(strstr(r.err, "jctlab schedule: "));
    ck_assert_uint_eq(r.out_len, 0);
    result_free(&r);
  }
}
END_TEST

/* Both shipped captures give schedules `jctlab run --schedule` executes,
 * program order included. At 5 Mbit/s: at 1 Gbit/s, or 8 ranks at 100 (2 under ASan at 25), one loop is
 * behind the link (a loop-bound run is invalid), and the rxe trace's 3 s
 * pause is skipped as idle time anyway. */
START_TEST(inferred_schedules_run) {
  const char *traces[] = {RING_TRACE, RXE_TRACE};
  for (size_t i = 0; i < 2; i++) {
    char sched[512];
    craft_tmpname(sched, sizeof sched, ".json");
    char *infer[] = {JCT_BINARY, "schedule", (char *)traces[i], "-o", sched, "--quiet", NULL};
    result_t r = run_jctlab(infer, NULL, 60);
    ck_assert_msg(r.status == 0, "%s: exit %d: %s", traces[i], r.status, r.err);
    result_free(&r);
    char *run[] = {JCT_BINARY, "run", "--schedule", sched, "--rate", "5mbit",
                   "--reps",   "1",   "--json",     "-",   NULL};
    r = run_jctlab(run, NULL, 60);
    ck_assert_msg(r.status == 0, "%s: run exit %d: %s", traces[i], r.status, r.err);
    json_t *doc = parse_json(r.out, "run");
    ck_assert(jbool(doc, "valid"));
    ck_assert_uint_eq(json_array_size(jget(doc, "jct_ns")), 1);
    ck_assert_int_gt(jint(doc, "jct_ns.0"), 0);
    /* The rxe trace's second test waits for the first's last write to be
     * acknowledged (uroce's completion, program order), then its 3.055 s. */
    if (i == 1) ck_assert_int_gt(jint(doc, "jct_ns.0"), 3055439000);
    json_decref(doc);
    result_free(&r);
    unlink(sched);
  }
}
END_TEST

Suite *infer_suite(void) {
  Suite *s = suite_create("infer");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 60);
  tcase_add_test(core, ring_capture_gives_synths_ring);
  tcase_add_test(core, rxe_trace_gives_a_valid_schedule_and_its_losses);
  tcase_add_test(core, crafted_capture_control_dep_and_loss);
  tcase_add_test(core, crafted_pause_is_program_order);
  tcase_add_test(core, lab_timer_go_backs);
  tcase_add_test(core, nested_go_back_depth);
  tcase_add_test(core, lab_cts_is_flow_control);
  tcase_add_test(core, lab_transmit_stalls);
  tcase_add_test(core, overlapping_sends_stay_independent);
  tcase_add_test(core, patterns_of_synth);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, bad_input_is_an_error);
  suite_add_tcase(s, limits);
  TCase *cli = tcase_create("cli");
  tcase_set_timeout(cli, 120);
  tcase_add_test(cli, cli_schedule);
  tcase_add_test(cli, inferred_schedules_run);
  suite_add_tcase(s, cli);
  return s;
}
