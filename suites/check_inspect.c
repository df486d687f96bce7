/* The flow analyser: packets built by hand (the decoder's output, not
 * frames) fed with chosen timestamps, so every count and duration below is
 * worked out from inspect.h's definitions; then the shipped rxe capture,
 * decoded with libpcap + jct_decode, against Wireshark's figures. */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/inspect.h"
#include "suites.h"

#define A 0xc6120001u /* 198.18.0.1 */
#define B 0xc6120002u /* 198.18.0.2 */

static jct_addr_t addr4(uint32_t ip) {
  jct_addr_t a;
  memset(&a, 0, sizeof a);
  a.family = 4;
  a.bytes[0] = (uint8_t)(ip >> 24);
  a.bytes[1] = (uint8_t)(ip >> 16);
  a.bytes[2] = (uint8_t)(ip >> 8);
  a.bytes[3] = (uint8_t)ip;
  return a;
}

/* A RoCE packet as jct_decode() would give it, ICRC checked and good. */
static jct_packet_t roce(uint32_t src, uint32_t dst, uint32_t qp, uint8_t opcode, uint32_t psn,
                         uint32_t payload_bytes) {
  jct_packet_t p;
  memset(&p, 0, sizeof p);
  p.kind = JCT_PKT_ROCE;
  p.reason = JCT_REASON_NONE;
  p.op = jct_opcode_info(opcode);
  ck_assert_ptr_nonnull(p.op);
  p.src = addr4(src);
  p.dst = addr4(dst);
  p.ip_proto = 17;
  p.udp_dport = JCT_ROCEV2_UDP_PORT;
  p.roce.bth.opcode = opcode;
  p.roce.bth.dest_qp = qp;
  p.roce.bth.psn = psn;
  p.payload_bytes = payload_bytes;
  p.icrc_checked = true;
  p.icrc_ok = true;
  return p;
}

static jct_packet_t ack(uint32_t src, uint32_t dst, uint32_t qp, uint32_t psn, uint8_t syndrome) {
  jct_packet_t p = roce(src, dst, qp, JCT_OP_RC_ACKNOWLEDGE, psn, 0);
  p.roce.aeth.syndrome = syndrome;
  return p;
}

/* Events seen, in order. */
static struct {
  jct_event_t ev[64];
  size_t n;
} rec;

static void record(const jct_event_t *ev, void *arg) {
  (void)arg;
  if (rec.n < 64) rec.ev[rec.n] = *ev;
  rec.n++;
}

/* Forget the MSG_DONE events, for tests about the others. */
static void drop_msg_done(void) {
  size_t k = 0;
  for (size_t i = 0; i < rec.n && i < 64; i++)
    if (rec.ev[i].type != JCT_EV_MSG_DONE) rec.ev[k++] = rec.ev[i];
  rec.n = k;
}

static jct_inspect_t *fresh(uint64_t link_rate_bps) {
  memset(&rec, 0, sizeof rec);
  jct_inspect_opts_t o = {.link_rate_bps = link_rate_bps, .on_event = record};
  jct_inspect_t *ins = NULL;
  ck_assert_int_eq(jct_inspect_new(&ins, &o), 0);
  ck_assert_ptr_nonnull(ins);
  return ins;
}

static uint64_t frame_no;

/* Packets of opcode on flow i, through the sparse counters' one reader. */
static uint64_t op_packets(const jct_inspect_t *ins, size_t i, uint8_t opcode) {
  jct_opcode_count_t ops[256];
  size_t n = jct_inspect_flow_opcodes(ins, i, ops);
  for (size_t k = 0; k < n; k++)
    if (ops[k].opcode == opcode) return ops[k].packets;
  return 0;
}

static void add(jct_inspect_t *ins, jct_packet_t p, uint64_t ts_ns) {
  ck_assert_int_eq(jct_inspect_add(ins, &p, ts_ns, ++frame_no, 64 + p.payload_bytes), 0);
}

static void expect_event(size_t i, jct_event_type_t type, long flow, uint32_t psn, uint64_t value,
                         uint64_t dur_ns, uint64_t ts_ns) {
  ck_assert_uint_gt(rec.n, i);
  const jct_event_t *e = &rec.ev[i];
  ck_assert_str_eq(jct_event_name(e->type), jct_event_name(type));
  ck_assert_int_eq(e->flow, flow);
  ck_assert_int_eq(e->link, -1);
  ck_assert_uint_eq(e->psn, psn);
  ck_assert_uint_eq(e->value, value);
  ck_assert_uint_eq(e->dur_ns, dur_ns);
  ck_assert_uint_eq(e->ts_ns, ts_ns);
}

/* Flow i's losses re-sent and their summed latency (jct_inspect_flow_losses). */
static void expect_losses(const jct_inspect_t *ins, size_t i, uint64_t n, uint64_t ns) {
  uint64_t got_n, got_ns;
  jct_inspect_flow_losses(ins, i, &got_n, &got_ns);
  ck_assert_uint_eq(got_n, n);
  ck_assert_uint_eq(got_ns, ns);
}

START_TEST(write_messages_in_order) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 5, JCT_OP_RC_RDMA_WRITE_FIRST, 100, 1024), 1000);
  add(ins, roce(A, B, 5, JCT_OP_RC_RDMA_WRITE_MIDDLE, 101, 1024), 1100);
  add(ins, roce(A, B, 5, JCT_OP_RC_RDMA_WRITE_LAST, 102, 512), 1300);
  add(ins, roce(A, B, 5, JCT_OP_RC_RDMA_WRITE_ONLY, 103, 100), 1400);
  add(ins, ack(B, A, 9, 103, 0x1f), 1450);
  add(ins, roce(A, B, 5, JCT_OP_RC_SEND_FIRST, 104, 1024), 2000);
  add(ins, roce(A, B, 5, JCT_OP_RC_SEND_LAST, 105, 1024), 2900);
  jct_inspect_finish(ins);

  ck_assert_uint_eq(jct_inspect_nflows(ins), 2);
  const jct_flow_t *f = jct_inspect_flow(ins, 0);
  ck_assert_uint_eq(f->key.dest_qp, 5);
  ck_assert_int_eq(f->peer, 1);
  ck_assert_int_eq(jct_inspect_flow(ins, 1)->peer, 0);
  ck_assert_ptr_null(jct_inspect_flow(ins, 2));
  ck_assert_uint_eq(f->st.packets, 6);
  ck_assert_uint_eq(f->st.payload_bytes, 4708);
  ck_assert_uint_eq(f->st.messages[JCT_MSG_WRITE], 2);
  ck_assert_uint_eq(f->st.messages[JCT_MSG_SEND], 1);
  ck_assert_uint_eq(f->st.messages_completed, 3);
  ck_assert_uint_eq(f->st.message_bytes, 4708);
  ck_assert_uint_eq(f->st.msg_time_min_ns, 0);
  ck_assert_uint_eq(f->st.msg_time_max_ns, 900);
  ck_assert_uint_eq(f->st.msg_time_sum_ns, 300 + 0 + 900);
  ck_assert_uint_eq(f->st.first_ns, 1000);
  ck_assert_uint_eq(f->st.last_ns, 2900);
  ck_assert_uint_eq(f->st.psn_first, 100);
  ck_assert_uint_eq(f->st.psn_highest, 105);
  ck_assert_uint_eq(op_packets(ins, 0, JCT_OP_RC_RDMA_WRITE_MIDDLE), 1);
  ck_assert_uint_eq(op_packets(ins, 0, JCT_OP_RC_RDMA_WRITE_FIRST), 1);
  ck_assert_uint_eq(op_packets(ins, 0, JCT_OP_RC_ACKNOWLEDGE), 0);
  ck_assert_uint_eq(op_packets(ins, 1, JCT_OP_RC_ACKNOWLEDGE), 1);
  ck_assert_uint_eq(f->st.retransmitted_packets + f->st.gaps + f->st.rewinds + f->st.timeouts, 0);
  ck_assert_uint_eq(jct_inspect_flow(ins, 1)->st.acks, 1);

  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->frames, 7);
  ck_assert_uint_eq(t->roce_packets, 7);
  ck_assert_uint_eq(t->messages, 3);
  ck_assert_uint_eq(t->messages_completed, 3);
  ck_assert_uint_eq(t->acks, 1);
  ck_assert_uint_eq(t->opcode_packets[JCT_OP_RC_ACKNOWLEDGE], 1);
  ck_assert_uint_eq(t->first_ns, 1000);
  ck_assert_uint_eq(t->last_ns, 2900);

  ck_assert_uint_eq(rec.n, 3);
  expect_event(0, JCT_EV_MSG_DONE, 0, 100, 2560, 300, 1300);
  expect_event(1, JCT_EV_MSG_DONE, 0, 103, 100, 0, 1400);
  expect_event(2, JCT_EV_MSG_DONE, 0, 104, 2048, 900, 2900);
  jct_inspect_free(ins);
}
END_TEST

/* PSN 12 is lost before the capture point; the responder NAKs it and the
 * requester goes back to it (go-back-N). */
START_TEST(gap_nak_go_back_n) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_FIRST, 10, 256), 100);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_MIDDLE, 11, 256), 200);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_LAST, 13, 256), 300); /* 12 lost */
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_ONLY, 14, 256), 400);
  add(ins, ack(B, A, 3, 12, 0x60), 450);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_MIDDLE, 12, 256), 500);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_LAST, 13, 256), 600);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_ONLY, 14, 256), 700);
  add(ins, roce(A, B, 7, JCT_OP_RC_SEND_ONLY, 15, 256), 800);
  jct_inspect_finish(ins);

  const jct_flow_t *f = jct_inspect_flow(ins, 0);
  const jct_flow_t *r = jct_inspect_flow(ins, 1);
  ck_assert_int_eq(f->peer, 1);
  ck_assert_uint_eq(r->st.nak_seq_err, 1);
  ck_assert_uint_eq(r->st.acks, 0);
  ck_assert_uint_eq(f->st.gaps, 1);
  ck_assert_uint_eq(f->st.gap_psns, 1);
  ck_assert_uint_eq(f->st.retransmitted_packets, 3);
  ck_assert_uint_eq(f->st.retransmitted_bytes, 768);
  ck_assert_uint_eq(f->st.rewinds, 1);
  ck_assert_uint_eq(f->st.timeouts, 0);
  ck_assert_uint_eq(f->st.recovery_ns, 300);
  ck_assert_uint_eq(f->st.messages[JCT_MSG_SEND], 3);
  ck_assert_uint_eq(f->st.messages_completed, 3);
  ck_assert_uint_eq(f->st.msg_time_max_ns, 500);
  ck_assert_uint_eq(f->st.msg_time_sum_ns, 500 + 300 + 0);

  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->retransmitted_packets, 3);
  ck_assert_uint_eq(t->nak_seq_err, 1);
  ck_assert_uint_eq(t->rewinds, 1);
  ck_assert_uint_eq(t->recovery_ns, 300);

  /* The loss of PSN 12: hole at 300, NAK at 450, re-sent at 500. */
  expect_losses(ins, 0, 1, 200);
  ck_assert_uint_eq(t->losses_recovered, 1);
  ck_assert_uint_eq(t->loss_recovery_ns, 200);

  ck_assert_uint_eq(rec.n, 8);
  expect_event(0, JCT_EV_GAP, 0, 12, 1, 0, 300);
  expect_event(1, JCT_EV_NAK, 1, 12, 0x60, 0, 450);
  expect_event(2, JCT_EV_REWIND, 0, 12, 3, 0, 500);
  expect_event(3, JCT_EV_HOLE_RESENT, 0, 12, 50, 200, 500);
  expect_event(4, JCT_EV_MSG_DONE, 0, 10, 1024, 500, 600);
  expect_event(5, JCT_EV_MSG_DONE, 0, 14, 256, 300, 700);
  expect_event(6, JCT_EV_RECOVERED, 0, 15, 0, 300, 800);
  expect_event(7, JCT_EV_MSG_DONE, 0, 15, 256, 0, 800);
  ck_assert_uint_eq(rec.ev[2].frame_no, rec.ev[1].frame_no + 1);
  jct_inspect_free(ins);
}
END_TEST

/* Rewinds with no NAK before them are timeouts; a NAK makes only the next
 * rewind a go-back-N one. */
START_TEST(rewind_without_nak_is_timeout) {
  jct_inspect_t *ins = fresh(0);
  for (uint32_t psn = 10; psn <= 12; psn++)
    add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, psn, 64), psn * 100);
  add(ins, ack(B, A, 3, 11, 0x1f), 1250);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 10, 64), 5000); /* timer expired */
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 11, 64), 5100);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 13, 64), 6000);
  add(ins, ack(B, A, 3, 12, 0x60), 6050);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 12, 64), 6100); /* go-back-N */
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 14, 64), 6200);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 14, 64), 9000); /* timeout again */
  jct_inspect_finish(ins);

  const jct_flow_t *f = jct_inspect_flow(ins, 0);
  ck_assert_uint_eq(f->st.timeouts, 2);
  ck_assert_uint_eq(f->st.rewinds, 1);
  ck_assert_uint_eq(f->st.retransmitted_packets, 4);
  ck_assert_uint_eq(f->st.gaps, 0);
  ck_assert_uint_eq(f->st.recovery_ns, (6000 - 5000) + (6200 - 6100)); /* last one never ends */
  ck_assert_uint_eq(jct_inspect_flow(ins, 1)->st.acks, 1);
  ck_assert_uint_eq(f->st.messages_completed, 5); /* 10, 11, 12, 13, 14 */
  /* 10 and 11 were never seen missing: no hole. 13 came before the go-back
   * re-sent 12: that re-send was lost, a hole at 6000 until 6100. */
  expect_losses(ins, 0, 1, 100);
  drop_msg_done();
  ck_assert_uint_eq(rec.n, 7);
  expect_event(0, JCT_EV_TIMEOUT, 0, 10, 3, 3750, 5000); /* heard nothing since the ACK */
  expect_event(1, JCT_EV_RECOVERED, 0, 13, 0, 1000, 6000);
  expect_event(2, JCT_EV_NAK, 1, 12, 0x60, 0, 6050);
  expect_event(3, JCT_EV_REWIND, 0, 12, 2, 0, 6100);
  expect_event(4, JCT_EV_HOLE_RESENT, 0, 12, 50, 100, 6100);
  expect_event(5, JCT_EV_RECOVERED, 0, 14, 0, 100, 6200);
  expect_event(6, JCT_EV_TIMEOUT, 0, 14, 1, 2800, 9000); /* since its packet at 6200 */
  jct_inspect_free(ins);
}
END_TEST

/* The flow's first packet lost before the capture point: the NAK names a
 * PSN the capture never saw on it, and still pairs with it, so the
 * go-back is the NAK's (rxe-lab-ring4-drop05pct.pcap, frames 15, 24, 31). */
START_TEST(nak_before_the_first_psn) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 11, 64), 100);
  add(ins, ack(B, A, 3, 10, 0x60), 200);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 10, 64), 300);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 11, 64), 400);
  jct_inspect_finish(ins);
  const jct_flow_t *f = jct_inspect_flow(ins, 0);
  ck_assert_int_eq(f->peer, 1);
  ck_assert_uint_eq(jct_inspect_flow(ins, 1)->st.nak_seq_err, 1);
  ck_assert_uint_eq(f->st.rewinds, 1);
  ck_assert_uint_eq(f->st.timeouts, 0);
  jct_inspect_free(ins);
  /* 200 PSNs before it is no window of rxe's: no pairing, a timeout. */
  ins = fresh(0);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 300, 64), 100);
  add(ins, ack(B, A, 3, 100, 0x60), 200);
  add(ins, roce(A, B, 7, JCT_OP_RC_RDMA_WRITE_ONLY, 299, 64), 300);
  jct_inspect_finish(ins);
  ck_assert_uint_eq(jct_inspect_flow(ins, 0)->st.timeouts, 1);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(psn_wraps) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 1, JCT_OP_RC_RDMA_WRITE_FIRST, 0xfffffe, 100), 10);
  add(ins, roce(A, B, 1, JCT_OP_RC_RDMA_WRITE_MIDDLE, 0xffffff, 100), 20);
  add(ins, roce(A, B, 1, JCT_OP_RC_RDMA_WRITE_MIDDLE, 0, 100), 30);
  add(ins, roce(A, B, 1, JCT_OP_RC_RDMA_WRITE_LAST, 1, 100), 40);
  const jct_flow_t *f = jct_inspect_flow(ins, 0);
  ck_assert_uint_eq(f->st.retransmitted_packets, 0);
  ck_assert_uint_eq(f->st.gaps, 0);
  ck_assert_uint_eq(f->st.messages_completed, 1);
  ck_assert_uint_eq(f->st.message_bytes, 400);
  ck_assert_uint_eq(f->st.psn_first, 0xfffffe);
  ck_assert_uint_eq(f->st.psn_highest, 1);
  add(ins, roce(A, B, 1, JCT_OP_RC_RDMA_WRITE_ONLY, 3, 100), 50);          /* 2 missing */
  add(ins, roce(A, B, 1, JCT_OP_RC_RDMA_WRITE_MIDDLE, 0xffffff, 100), 60); /* behind: re-sent */
  jct_inspect_finish(ins);
  f = jct_inspect_flow(ins, 0);
  ck_assert_uint_eq(f->st.gaps, 1);
  ck_assert_uint_eq(f->st.gap_psns, 1);
  ck_assert_uint_eq(f->st.retransmitted_packets, 1);
  ck_assert_uint_eq(f->st.timeouts, 1);
  ck_assert_uint_eq(f->st.psn_highest, 3);
  expect_event(1, JCT_EV_GAP, 0, 2, 1, 0, 50);
  expect_event(2, JCT_EV_TIMEOUT, 0, 0xffffff, 5, 10, 60);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(nak_codes) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 1, JCT_OP_RC_SEND_ONLY, 50, 8), 1);
  add(ins, ack(B, A, 2, 50, 0x00), 2); /* ACK, credit 0 */
  add(ins, ack(B, A, 2, 50, 0x3f), 3); /* RNR NAK */
  add(ins, ack(B, A, 2, 50, 0x21), 4); /* RNR NAK */
  add(ins, ack(B, A, 2, 50, 0x60), 5); /* PSN sequence error */
  add(ins, ack(B, A, 2, 50, 0x61), 6); /* invalid request */
  add(ins, ack(B, A, 2, 50, 0x63), 7); /* remote operational error */
  add(ins, ack(B, A, 2, 50, 0x40), 8); /* reserved: neither */
  jct_packet_t aa = roce(B, A, 2, JCT_OP_RC_ATOMIC_ACKNOWLEDGE, 50, 0);
  aa.roce.aeth.syndrome = 0x1f;
  add(ins, aa, 9);
  jct_packet_t rr = roce(B, A, 2, JCT_OP_RC_RDMA_READ_RESPONSE_ONLY, 50, 16);
  rr.roce.aeth.syndrome = 0x1f; /* read-response AETHs are not ACKs */
  add(ins, rr, 10);
  jct_inspect_finish(ins);
  const jct_flow_t *r = jct_inspect_flow(ins, 1);
  ck_assert_uint_eq(r->st.acks, 2);
  ck_assert_uint_eq(r->st.nak_rnr, 2);
  ck_assert_uint_eq(r->st.nak_seq_err, 1);
  ck_assert_uint_eq(r->st.nak_other, 2);
  ck_assert_uint_eq(r->st.packets, 9);
  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->acks, 2);
  ck_assert_uint_eq(t->nak_rnr, 2);
  ck_assert_uint_eq(t->nak_other, 2);
  ck_assert_uint_eq(t->nak_seq_err, 1);
  size_t naks = 0;
  for (size_t i = 0; i < rec.n; i++)
    naks += rec.ev[i].type == JCT_EV_NAK;
  ck_assert_uint_eq(naks, 5);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(bad_icrc_does_not_advance) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 4, JCT_OP_RC_SEND_FIRST, 20, 64), 1);
  jct_packet_t bad = roce(A, B, 4, JCT_OP_RC_SEND_LAST, 22, 64); /* would be a gap */
  bad.icrc_ok = false;
  bad.icrc = 0xdeadbeef;
  add(ins, bad, 2);
  add(ins, roce(A, B, 4, JCT_OP_RC_SEND_MIDDLE, 21, 64), 3);
  jct_packet_t snapped = roce(A, B, 4, JCT_OP_RC_SEND_LAST, 22, 64);
  snapped.icrc_checked = false;
  add(ins, snapped, 4);
  jct_inspect_finish(ins);
  const jct_flow_t *f = jct_inspect_flow(ins, 0);
  ck_assert_uint_eq(f->st.packets, 4);
  ck_assert_uint_eq(op_packets(ins, 0, JCT_OP_RC_SEND_LAST), 2);
  ck_assert_uint_eq(f->st.bad_icrc, 1);
  ck_assert_uint_eq(f->st.gaps, 0);
  ck_assert_uint_eq(f->st.retransmitted_packets, 0);
  ck_assert_uint_eq(f->st.messages_completed, 1);
  ck_assert_uint_eq(f->st.message_bytes, 192);
  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->bad_icrc, 1);
  ck_assert_uint_eq(t->icrc_unchecked, 1);
  ck_assert_uint_eq(t->roce_packets, 4);
  ck_assert_uint_eq(rec.n, 2);
  ck_assert_int_eq(rec.ev[0].type, JCT_EV_BAD_ICRC);
  ck_assert_uint_eq(rec.ev[0].value, 0xdeadbeef);
  ck_assert_uint_eq(rec.ev[0].psn, 22);
  ck_assert_int_eq(rec.ev[1].type, JCT_EV_MSG_DONE);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(cnp_and_ecn) {
  jct_inspect_t *ins = fresh(0);
  jct_packet_t d = roce(A, B, 4, JCT_OP_RC_RDMA_WRITE_ONLY, 1, 64);
  d.ecn = JCT_ECN_CE;
  add(ins, d, 1);
  d = roce(A, B, 4, JCT_OP_RC_RDMA_WRITE_ONLY, 2, 64);
  d.ecn = JCT_ECN_ECT0;
  add(ins, d, 2);
  add(ins, roce(B, A, 6, JCT_OP_CNP, 0, 16), 3);
  jct_packet_t cnp = roce(B, A, 6, JCT_OP_CNP, 0, 16);
  cnp.ecn = JCT_ECN_CE;
  add(ins, cnp, 4);
  jct_inspect_finish(ins);
  const jct_flow_t *f = jct_inspect_flow(ins, 0), *c = jct_inspect_flow(ins, 1);
  ck_assert_uint_eq(f->st.ecn_ce, 1);
  ck_assert_uint_eq(f->st.cnps, 0);
  ck_assert_uint_eq(c->st.cnps, 2);
  ck_assert_uint_eq(c->st.ecn_ce, 1);
  ck_assert_uint_eq(c->st.retransmitted_packets, 0); /* CNPs are not data */
  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->cnps, 2);
  ck_assert_uint_eq(t->ecn_ce, 2);
  ck_assert_uint_eq(t->opcode_packets[JCT_OP_CNP], 2);
  size_t ncnp = 0, nce = 0;
  for (size_t i = 0; i < rec.n; i++) {
    ncnp += rec.ev[i].type == JCT_EV_CNP;
    nce += rec.ev[i].type == JCT_EV_ECN_CE;
  }
  ck_assert_uint_eq(ncnp, 2);
  ck_assert_uint_eq(nce, 2);
  jct_inspect_free(ins);
}
END_TEST

/* READ requests take as many PSNs as their responses: no false gaps. */
START_TEST(read_spans_no_gap) {
  jct_inspect_t *ins = fresh(0);
  add(ins, roce(A, B, 8, JCT_OP_RC_RDMA_WRITE_ONLY, 5, 64), 1);
  jct_packet_t rq = roce(A, B, 8, JCT_OP_RC_RDMA_READ_REQUEST, 6, 0);
  rq.roce.reth.dma_len_bytes = 4096;
  add(ins, rq, 2);
  add(ins, roce(B, A, 3, JCT_OP_RC_RDMA_READ_RESPONSE_FIRST, 6, 1024), 3);
  add(ins, roce(B, A, 3, JCT_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 7, 1024), 4);
  add(ins, roce(B, A, 3, JCT_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 8, 1024), 5);
  add(ins, roce(B, A, 3, JCT_OP_RC_RDMA_READ_RESPONSE_LAST, 9, 1024), 6);
  add(ins, roce(A, B, 8, JCT_OP_RC_RDMA_WRITE_ONLY, 10, 64), 7);
  rq = roce(A, B, 8, JCT_OP_RC_RDMA_READ_REQUEST, 11, 0);
  rq.roce.reth.dma_len_bytes = 8;
  add(ins, rq, 8);
  add(ins, roce(B, A, 3, JCT_OP_RC_RDMA_READ_RESPONSE_ONLY, 11, 8), 9);
  add(ins, roce(A, B, 8, JCT_OP_RC_RDMA_WRITE_ONLY, 14, 64), 10); /* 12, 13 lost */
  jct_inspect_finish(ins);
  const jct_flow_t *q = jct_inspect_flow(ins, 0), *r = jct_inspect_flow(ins, 1);
  ck_assert_uint_eq(q->st.gaps, 1);
  ck_assert_uint_eq(q->st.gap_psns, 2);
  ck_assert_uint_eq(q->st.messages[JCT_MSG_READ_REQ], 2);
  ck_assert_uint_eq(q->st.messages[JCT_MSG_WRITE], 3);
  ck_assert_uint_eq(q->st.messages_completed, 4); /* the last write waits for 12 */
  ck_assert_uint_eq(r->st.gaps, 0);
  ck_assert_uint_eq(r->st.messages[JCT_MSG_READ_RESP], 2);
  ck_assert_uint_eq(r->st.messages_completed, 2);
  ck_assert_uint_eq(r->st.message_bytes, 4104);
  jct_inspect_free(ins);
}
END_TEST

static jct_packet_t pfc(uint8_t mac_last, uint16_t class_enable, const uint16_t quanta[8]) {
  jct_packet_t p;
  memset(&p, 0, sizeof p);
  p.kind = JCT_PKT_PFC;
  p.ethertype = 0x8808;
  uint8_t mac[6] = {0x52, 0x54, 0, 0, 0, mac_last};
  memcpy(p.src_mac, mac, 6);
  p.pfc.class_enable = class_enable;
  memcpy(p.pfc.quanta, quanta, sizeof p.pfc.quanta);
  return p;
}

START_TEST(pfc_pause_union) {
  /* 1 Gbit/s: one quantum (512 bit times) is 512 ns. */
  jct_inspect_t *ins = fresh(1000000000u);
  ck_assert_uint_eq(jct_inspect_link_rate_bps(ins), 1000000000u);
  uint16_t q[8] = {0};
  q[3] = 100;
  q[5] = 7;
  add(ins, pfc(1, 1u << 3 | 1u << 5, q), 1000); /* p3 until 52200, p5 until 4584 */
  q[5] = 0;
  add(ins, pfc(1, 1u << 3, q), 20000);                /* p3 extended to 71200 */
  add(ins, pfc(1, 1u << 3, (uint16_t[8]){0}), 60000); /* XON: p3 paused 59000 */
  q[3] = 10;
  add(ins, pfc(1, 1u << 3, q), 100000);                       /* 5120, expires */
  add(ins, pfc(1, 1u << 3, (uint16_t[8]){[3] = 1}), 200000);  /* 512, open at the end */
  add(ins, pfc(1, 1u << 3, (uint16_t[8]){[3] = 50}), 200100); /* extends it to 225700 */
  jct_inspect_finish(ins);

  ck_assert_uint_eq(jct_inspect_nlinks(ins), 1);
  const jct_link_t *l = jct_inspect_link(ins, 0);
  ck_assert_uint_eq(l->src_mac[5], 1);
  ck_assert_uint_eq(l->frames, 6);
  ck_assert(!l->pause_802_3x);
  ck_assert_uint_eq(l->prio[3].frames, 6);
  ck_assert_uint_eq(l->prio[3].xoff, 5);
  ck_assert_uint_eq(l->prio[3].xon, 1);
  ck_assert_uint_eq(l->prio[3].paused_ns, 59000 + 5120 + (200100 + 25600 - 200000));
  ck_assert_uint_eq(l->prio[5].frames, 1);
  ck_assert_uint_eq(l->prio[5].paused_ns, 3584);
  ck_assert_uint_eq(l->prio[0].frames, 0);
  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->pfc_frames, 6);
  ck_assert_uint_eq(t->pause_frames_xoff, 6);
  ck_assert_uint_eq(t->pause_frames_xon, 1);
  ck_assert_uint_eq(t->paused_ns, 59000 + 5120 + 25700 + 3584);

  ck_assert_uint_eq(rec.n, 7);
  ck_assert_int_eq(rec.ev[0].type, JCT_EV_PAUSE);
  ck_assert_uint_eq(rec.ev[0].prio, 3);
  ck_assert_uint_eq(rec.ev[0].value, 100);
  ck_assert_uint_eq(rec.ev[0].dur_ns, 51200);
  ck_assert_int_eq(rec.ev[0].link, 0);
  ck_assert_int_eq(rec.ev[0].flow, -1);
  ck_assert_uint_eq(rec.ev[1].prio, 5);
  ck_assert_int_eq(rec.ev[3].type, JCT_EV_RESUME);
  ck_assert_uint_eq(rec.ev[3].dur_ns, 59000);
  ck_assert_uint_eq(rec.ev[3].ts_ns, 60000);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(pause_802_3x) {
  jct_inspect_t *ins = fresh(0); /* 100 Gbit/s: 1000 quanta = 5120 ns */
  ck_assert_uint_eq(jct_inspect_link_rate_bps(ins), 100000000000u);
  uint16_t q[8];
  for (int i = 0; i < 8; i++)
    q[i] = 1000;
  jct_packet_t p = pfc(9, 0xff, q);
  p.pfc.is_pause = true;
  add(ins, p, 0);
  add(ins, pfc(1, 1, q), 0);
  jct_inspect_finish(ins);
  ck_assert_uint_eq(jct_inspect_nlinks(ins), 2);
  const jct_link_t *l = jct_inspect_link(ins, 0);
  ck_assert(l->pause_802_3x);
  ck_assert(!jct_inspect_link(ins, 1)->pause_802_3x);
  for (int i = 0; i < 8; i++)
    ck_assert_uint_eq(l->prio[i].paused_ns, 5120);
  ck_assert_uint_eq(jct_inspect_totals(ins)->paused_ns, 9 * 5120);
  ck_assert_uint_eq(jct_inspect_totals(ins)->pause_frames_xoff, 9);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(other_and_malformed_by_reason) {
  jct_inspect_t *ins = fresh(0);
  jct_packet_t p;
  memset(&p, 0, sizeof p);
  p.kind = JCT_PKT_OTHER;
  p.reason = JCT_REASON_NOT_UDP;
  ck_assert_int_eq(jct_inspect_add(ins, &p, 500, 1, 60), 0);
  ck_assert_int_eq(jct_inspect_add(ins, &p, 100, 2, 70), 0);
  p.reason = JCT_REASON_NOT_IP;
  ck_assert_int_eq(jct_inspect_add(ins, &p, 300, 3, 80), 0);
  p.kind = JCT_PKT_MALFORMED;
  p.reason = JCT_REASON_SHORT_BTH;
  ck_assert_int_eq(jct_inspect_add(ins, &p, 900, 4, 90), 0);
  jct_inspect_finish(ins);
  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->frames, 4);
  ck_assert_uint_eq(t->wire_bytes, 300);
  ck_assert_uint_eq(t->other_frames, 3);
  ck_assert_uint_eq(t->malformed_frames, 1);
  ck_assert_uint_eq(t->by_reason[JCT_REASON_NOT_UDP], 2);
  ck_assert_uint_eq(t->by_reason[JCT_REASON_NOT_IP], 1);
  ck_assert_uint_eq(t->by_reason[JCT_REASON_SHORT_BTH], 1);
  ck_assert_uint_eq(t->by_reason[JCT_REASON_NONE], 0);
  ck_assert_uint_eq(t->roce_packets, 0);
  ck_assert_uint_eq(t->first_ns, 100);
  ck_assert_uint_eq(t->last_ns, 900);
  ck_assert_uint_eq(jct_inspect_nflows(ins), 0);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(event_names) {
  ck_assert_str_eq(jct_event_name(JCT_EV_MSG_DONE), "msg_done");
  ck_assert_str_eq(jct_event_name(JCT_EV_RECOVERED), "recovered");
  ck_assert_str_eq(jct_event_name(JCT_EV_ECN_CE), "ecn_ce");
  ck_assert_str_eq(jct_event_name(JCT_EV_RESUME), "resume");
  ck_assert_str_eq(jct_event_name(JCT_EV_HOLE_RESENT), "hole_resent");
}
END_TEST

/* 10,000 flows, interleaved so that the last-flow cache rarely helps: all
 * found again, in first-seen order, with their own counts. */
START_TEST(many_flows) {
  enum { N = 10000 };
  jct_inspect_t *ins = fresh(0);
  uint64_t sent = 0;
  for (int round = 0; round < 3; round++)
    for (uint32_t i = 0; i < N; i++) {
      if (round > (int)(i % 3)) continue;
      jct_packet_t p =
          roce(0x0a000000u + i / 7, B, i % 7 + 1, JCT_OP_RC_SEND_ONLY, (uint32_t)round, 10);
      add(ins, p, (uint64_t)round * N + i);
      sent++;
    }
  jct_inspect_finish(ins);
  ck_assert_uint_eq(jct_inspect_nflows(ins), N);
  for (uint32_t i = 0; i < N; i++) {
    const jct_flow_t *f = jct_inspect_flow(ins, i);
    jct_addr_t src = addr4(0x0a000000u + i / 7);
    ck_assert_mem_eq(f->key.src.bytes, src.bytes, 16);
    ck_assert_uint_eq(f->key.dest_qp, i % 7 + 1);
    ck_assert_uint_eq(f->st.packets, i % 3 + 1);
    ck_assert_uint_eq(f->st.messages_completed, i % 3 + 1);
    ck_assert_uint_eq(f->st.retransmitted_packets, 0);
    ck_assert_uint_eq(f->st.first_ns, i);
  }
  ck_assert_uint_eq(sent, 19999);
  ck_assert_uint_eq(jct_inspect_totals(ins)->roce_packets, sent);
  jct_inspect_free(ins);
}
END_TEST

/* A flow's opcode counts: more opcodes than the flow holds in place (four),
 * met in descending order and in uneven numbers, come back ascending with
 * their counts; a flow that does not exist has none. */
START_TEST(flow_opcodes_sparse) {
  static const uint8_t ops[] = {
      JCT_OP_RC_FETCH_ADD,        JCT_OP_RC_COMPARE_SWAP,    JCT_OP_RC_RDMA_READ_REQUEST,
      JCT_OP_RC_RDMA_WRITE_ONLY,  JCT_OP_RC_RDMA_WRITE_LAST, JCT_OP_RC_RDMA_WRITE_MIDDLE,
      JCT_OP_RC_RDMA_WRITE_FIRST, JCT_OP_RC_SEND_ONLY,       JCT_OP_RC_SEND_LAST,
      JCT_OP_RC_SEND_MIDDLE,      JCT_OP_RC_SEND_FIRST,      JCT_OP_CNP};
  enum { NOPS = sizeof ops / sizeof ops[0] };
  jct_inspect_t *ins = fresh(0);
  uint32_t psn = 0;
  for (uint32_t k = 0; k < NOPS; k++)
    for (uint32_t rep = 0; rep <= k; rep++, psn++) /* opcode k: k + 1 packets */
      add(ins, roce(A, B, 3, ops[k], psn, 0), psn);
  jct_inspect_finish(ins);
  ck_assert_uint_eq(jct_inspect_nflows(ins), 1);
  jct_opcode_count_t got[256];
  size_t n = jct_inspect_flow_opcodes(ins, 0, got);
  ck_assert_uint_eq(n, NOPS);
  for (size_t k = 1; k < n; k++)
    ck_assert_uint_lt(got[k - 1].opcode, got[k].opcode);
  uint64_t sum = 0;
  for (uint32_t k = 0; k < NOPS; k++) {
    ck_assert_uint_eq(op_packets(ins, 0, ops[k]), k + 1);
    sum += got[k].packets;
  }
  ck_assert_uint_eq(sum, jct_inspect_flow(ins, 0)->st.packets);
  ck_assert_uint_eq(jct_inspect_flow_opcodes(ins, 1, got), 0);
  jct_inspect_free(ins);
}
END_TEST

/* Message starts held while PSNs are missing, on several flows at once and
 * then on others after those were resolved (the held starts live in rings
 * lent from a pool and given back): each message's time still runs from
 * its own first transmission. Per flow: ONLY 10 is taken, ONLY 12 comes
 * before 11 (lost before the capture point), then 11 and 12 are re-sent. */
START_TEST(held_starts_per_flow) {
  enum { FLOWS = 6 };
  jct_inspect_t *ins = fresh(0);
  for (int wave = 0; wave < 2; wave++) {
    uint32_t qp0 = (uint32_t)wave * 3 + 1;
    uint64_t t0 = (uint64_t)wave * 100000;
    for (uint32_t q = qp0; q < qp0 + 3; q++) {
      add(ins, roce(A, B, q, JCT_OP_RC_SEND_ONLY, 10, 8), t0 + q);
      add(ins, roce(A, B, q, JCT_OP_RC_SEND_ONLY, 12, 8), t0 + 100 + q);
    }
    for (uint32_t q = qp0; q < qp0 + 3; q++) {
      add(ins, roce(A, B, q, JCT_OP_RC_SEND_ONLY, 11, 8), t0 + 1000 + q);
      add(ins, roce(A, B, q, JCT_OP_RC_SEND_ONLY, 12, 8), t0 + 2000 + 10 * q);
    }
  }
  jct_inspect_finish(ins);
  ck_assert_uint_eq(jct_inspect_nflows(ins), FLOWS);
  for (size_t i = 0; i < FLOWS; i++) {
    const jct_flow_stats_t *s = &jct_inspect_flow(ins, i)->st;
    uint64_t q = i + 1;
    ck_assert_uint_eq(s->gaps, 1);
    ck_assert_uint_eq(s->messages[JCT_MSG_SEND], 3); /* 11's first transmission was not seen */
    ck_assert_uint_eq(s->messages_completed, 3);
    /* 10: 0; 11: 0 (starts when seen); 12: from its first transmission. */
    ck_assert_uint_eq(s->msg_time_max_ns, (2000 + 10 * q) - (100 + q));
    ck_assert_uint_eq(s->msg_time_sum_ns, (2000 + 10 * q) - (100 + q));
  }
  jct_inspect_free(ins);
}
END_TEST

/* The shipped rxe capture, decoded frame by frame: Wireshark's figures. */
START_TEST(rxe_trace_figures) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t *pc = pcap_open_offline_with_tstamp_precision(
      JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap", PCAP_TSTAMP_PRECISION_NANO, errbuf);
  ck_assert_msg(pc != NULL, "%s", errbuf);
  jct_inspect_t *ins = fresh(0);
  int linktype = pcap_datalink(pc);
  struct pcap_pkthdr *h;
  const u_char *data;
  uint64_t n = 0;
  while (pcap_next_ex(pc, &h, &data) == 1) {
    jct_packet_t p;
    jct_decode(linktype, data, h->caplen, h->len, &p);
    uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
    ck_assert_int_eq(jct_inspect_add(ins, &p, ts, ++n, h->len), 0);
  }
  pcap_close(pc);
  jct_inspect_finish(ins);
  const jct_totals_t *t = jct_inspect_totals(ins);
  ck_assert_uint_eq(t->frames, 2889);
  ck_assert_uint_eq(t->roce_packets, 2799);
  ck_assert_uint_eq(t->retransmitted_packets, 971);
  ck_assert_uint_eq(t->nak_seq_err, 26);
  ck_assert_uint_eq(t->opcode_packets[0x07], 2038);
  ck_assert_uint_eq(t->opcode_packets[0x11], 122);
  ck_assert_uint_eq(t->bad_icrc, 0);
  /* perftest: 48 WRITEs of 32 KiB, then 48 SENDs of 4 KiB, all completed. */
  ck_assert_uint_eq(t->messages, 96);
  ck_assert_uint_eq(t->messages_completed, 96);
  ck_assert_uint_eq(jct_inspect_nflows(ins), 4);
  for (size_t i = 0; i < 4; i++)
    ck_assert_int_ge(jct_inspect_flow(ins, i)->peer, 0);
  /* Each of the 26 NAKs is followed by one go-back-N rewind. Once, the
   * retransmission of PSN 9768807 was lost again after its NAK: the
   * responder stays silent after one NAK (rxe_resp.c), so the requester
   * went back only when its retransmit timer expired, 71.7 ms later
   * (perftest's default QP timeout 14: 4.096 us * 2^14 = 67.1 ms). */
  ck_assert_uint_eq(t->rewinds, 26);
  ck_assert_uint_eq(t->timeouts, 1);
  jct_inspect_free(ins);
}
END_TEST

Suite *inspect_suite(void) {
  Suite *s = suite_create("inspect");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, write_messages_in_order);
  tcase_add_test(tc, gap_nak_go_back_n);
  tcase_add_test(tc, rewind_without_nak_is_timeout);
  tcase_add_test(tc, nak_before_the_first_psn);
  tcase_add_test(tc, nak_codes);
  tcase_add_test(tc, bad_icrc_does_not_advance);
  tcase_add_test(tc, cnp_and_ecn);
  tcase_add_test(tc, read_spans_no_gap);
  tcase_add_test(tc, event_names);
  tcase_add_test(tc, flow_opcodes_sparse);
  tcase_add_test(tc, held_starts_per_flow);
  suite_add_tcase(s, tc);
  tc = tcase_create("limits");
  tcase_add_test(tc, psn_wraps);
  tcase_add_test(tc, other_and_malformed_by_reason);
  tcase_add_test(tc, many_flows);
  suite_add_tcase(s, tc);
  tc = tcase_create("pause");
  tcase_add_test(tc, pfc_pause_union);
  tcase_add_test(tc, pause_802_3x);
  suite_add_tcase(s, tc);
  tc = tcase_create("trace");
  tcase_add_test(tc, rxe_trace_figures);
  suite_add_tcase(s, tc);
  return s;
}
