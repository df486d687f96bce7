/* The uroce transport's state machines, driven by a fake clock and a fake
 * wire: two QPs, a serialization time and a propagation delay per packet,
 * and a filter that may drop or corrupt chosen packets. Every packet
 * produced is also wrapped in an Ethernet/IP/UDP frame, as the kernel would
 * send it, and decoded with jct_decode(), which checks its ICRC. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/uroce.h"
#include "suites.h"

#define MAXPKT JCT_UROCE_MAX_PACKET_BYTES
#define FLIGHT 2048
#define MAXEV 64
#define MIB (1u << 20)

typedef enum { PASS, DROP, CORRUPT } verdict_t;
typedef struct wire wire_t;
/* from: the sending side (0 = A, 1 = B); h: the packet's parsed headers. */
typedef verdict_t (*filter_fn)(wire_t *w, int from, const struct jct_roce_hdrs *h);

struct flight {
  uint64_t at;
  int to;
  uint16_t sport;
  size_t len;
  uint8_t buf[MAXPKT];
};

struct side {
  wire_t *w;
  int i;
};

struct wire {
  jct_uroce_qp_t *qp[2];
  struct side side[2];
  uint64_t now, ser_ns, prop_ns;
  uint64_t tx_free[2];
  struct flight *fl;
  size_t head, count;
  filter_fn filter;
  uint32_t arg; /* for the filter */
  int fired;    /* filter hits so far */
  uint64_t paused_until[2];

  /* What crossed the wire, by sender. */
  uint64_t pkts[2], data_pkts[2], frames_ok[2], ackreqs[2];
  uint64_t first_data_ns[2];
  uint32_t hi_data_psn[2]; /* highest request PSN sent */
  uint32_t hi_acked[2];    /* highest PSN acknowledged to this side (as requester) */
  uint32_t max_inflight[2];
  uint32_t noack_run[2], max_noack_run[2];
  uint64_t last_without_ackreq[2];
  uint32_t ackreq_psn[2][64];
  uint64_t naks_seen[2];        /* NAKs delivered to this side */
  uint32_t hi_at_nak[2];        /* hi_data_psn of this side when its first NAK arrived */
  uint64_t first_nak_ns[2];     /* ... and when */
  uint64_t resent_ns;           /* drop_then_time_resend: when the dropped PSN went again */
  uint64_t last_progress_ns[2]; /* last ACK delivered to this side that moved hi_acked */
  uint64_t timeout_ns[2][16];
  uint64_t progress_at_timeout[2][16]; /* last_progress_ns when that timeout fired */
  uint64_t ntimeouts[2];

  /* Events, by the side they were delivered to. */
  jct_uroce_event_t recv[2][MAXEV], done[2][MAXEV];
  unsigned nrecv[2], ndone[2];
  /* When set, a RECV without immediate (a CTS) at side i makes it post this. */
  jct_uroce_wr_t on_cts[2];
  bool has_on_cts[2];
};

static int32_t psn_diff(uint32_t a, uint32_t b) {
  uint32_t d = (a - b) & 0xffffffu;
  return d & 0x800000u ? (int32_t)d - 0x1000000 : (int32_t)d;
}

static void on_event(jct_uroce_qp_t *qp, const jct_uroce_event_t *ev) {
  struct side *s = jct_uroce_data(qp);
  wire_t *w = s->w;
  int i = s->i;
  if (ev->type == JCT_UROCE_EV_RECV) {
    ck_assert_uint_lt(w->nrecv[i], MAXEV);
    w->recv[i][w->nrecv[i]++] = *ev;
    if (!ev->has_imm && w->has_on_cts[i]) {
      char err[128];
      ck_assert_int_eq(jct_uroce_post_write(qp, &w->on_cts[i], err, sizeof err), 0);
    }
  } else {
    ck_assert_uint_lt(w->ndone[i], MAXEV);
    w->done[i][w->ndone[i]++] = *ev;
  }
}

static void addr4(jct_addr_t *a, const char *s) {
  memset(a, 0, sizeof *a);
  a->family = 4;
  ck_assert_int_eq(inet_pton(AF_INET, s, a->bytes), 1);
}
static void addr6(jct_addr_t *a, const char *s) {
  memset(a, 0, sizeof *a);
  a->family = 6;
  ck_assert_int_eq(inet_pton(AF_INET6, s, a->bytes), 1);
}

/* Captured transmit stalls A is created with (uroce.h); a test sets them. */
static const jct_uroce_stall_t *test_stalls;
static uint32_t test_nstalls;

/* Two connected QPs: A (QPN 0x11, PSN psn_a) and B (QPN 0x22, PSN 0x5000). */
/* Two QPs on a fake wire; each host's NAK turnaround (uroce.h) as given,
 * and both given the captured go-backs gb (uroce.h: A uses their depths as
 * the requester, B their NAK lags as the responder). */
static void wire_init_captured(wire_t *w, uint32_t psn_a, uint8_t timeout, bool ipv6,
                               uint64_t nak_delay_ns, uint64_t nak_react_ns,
                               const jct_uroce_go_back_t *gb, uint32_t ngb) {
  memset(w, 0, sizeof *w);
  w->fl = calloc(FLIGHT, sizeof *w->fl);
  ck_assert_ptr_nonnull(w->fl);
  w->ser_ns = 330; /* 4 KiB at 100 Gbit/s */
  w->prop_ns = 1000;
  uint32_t psn[2] = {psn_a, 0x5000};
  uint32_t qpn[2] = {0x11, 0x22};
  for (int i = 0; i < 2; i++) {
    jct_uroce_cfg_t c;
    jct_uroce_cfg_init(&c);
    c.local_qpn = qpn[i];
    c.remote_qpn = qpn[1 - i];
    c.sq_psn = psn[i];
    c.rq_psn = psn[1 - i];
    c.timeout = timeout;
    c.nak_delay_ns = nak_delay_ns;
    c.nak_react_ns = nak_react_ns;
    c.go_backs = gb;
    c.ngo_backs = ngb;
    c.stalls = i == 0 ? test_stalls : NULL; /* A's, the requester's */
    c.nstalls = i == 0 ? test_nstalls : 0;
    if (ipv6) {
      addr6(&c.local, i ? "2001:2::2" : "2001:2::1");
      addr6(&c.remote, i ? "2001:2::1" : "2001:2::2");
    } else {
      addr4(&c.local, i ? "198.18.0.2" : "198.18.0.1");
      addr4(&c.remote, i ? "198.18.0.1" : "198.18.0.2");
    }
    c.rkey = 0x1234;
    c.paused_until_ns = &w->paused_until[i];
    c.cb = on_event;
    w->side[i] = (struct side){w, i};
    c.data = &w->side[i];
    char err[128];
    ck_assert_int_eq(jct_uroce_qp_create(&c, &w->qp[i], err, sizeof err), 0);
    w->hi_acked[i] = (psn[i] - 1) & 0xffffffu;
    w->hi_data_psn[i] = w->hi_acked[i];
    w->first_data_ns[i] = UINT64_MAX;
  }
}

static void wire_init_slow(wire_t *w, uint32_t psn_a, uint8_t timeout, bool ipv6,
                           uint64_t nak_delay_ns, uint64_t nak_react_ns) {
  wire_init_captured(w, psn_a, timeout, ipv6, nak_delay_ns, nak_react_ns, NULL, 0);
}

static void wire_init(wire_t *w, uint32_t psn_a, uint8_t timeout, bool ipv6) {
  wire_init_slow(w, psn_a, timeout, ipv6, 0, 0);
}

static void wire_free(wire_t *w) {
  jct_uroce_qp_destroy(w->qp[0]);
  jct_uroce_qp_destroy(w->qp[1]);
  free(w->fl);
}

/* Wrap a UDP payload into the Ethernet/IP/UDP frame the kernel would send
 * (with its own TTL, DSCP and checksum) and decode it. */
/* The QPs of the current test use IPv6 addresses (2001:2::1 and ::2). */
static bool uroce_test_ipv6;

static void check_frame(wire_t *w, int from, const uint8_t *pkt, size_t len) {
  static uint8_t f[14 + 40 + 8 + MAXPKT];
  jct_packet_t d;
  memset(f, 0, sizeof f);
  f[0] = 0x02, f[5] = (uint8_t)(2 - from);
  f[6] = 0x02, f[11] = (uint8_t)(1 + from);
  uint16_t sport = jct_uroce_udp_sport(w->qp[from]);
  uint8_t *ip = f + 14;
  size_t iphdr;
  if (uroce_test_ipv6) {
    jct__put16(f + 12, 0x86dd);
    iphdr = 40;
    ip[0] = 0x60 | (26 >> 2);
    ip[1] = (uint8_t)((26 << 2 | 2) << 4);
    ip[3] = 0x77; /* flow label: masked from the ICRC */
    jct__put16(ip + 4, (uint16_t)(8 + len));
    ip[6] = 17;
    ip[7] = 63;
    inet_pton(AF_INET6, from ? "2001:2::2" : "2001:2::1", ip + 8);
    inet_pton(AF_INET6, from ? "2001:2::1" : "2001:2::2", ip + 24);
  } else {
    jct__put16(f + 12, 0x0800);
    iphdr = 20;
    ip[0] = 0x45;
    ip[1] = 26 << 2 | 2; /* DSCP 26, ECT(0): masked from the ICRC */
    jct__put16(ip + 2, (uint16_t)(20 + 8 + len));
    jct__put16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = 17;
    inet_pton(AF_INET, from ? "198.18.0.2" : "198.18.0.1", ip + 12);
    inet_pton(AF_INET, from ? "198.18.0.1" : "198.18.0.2", ip + 16);
    uint32_t sum = 0;
    for (int k = 0; k < 20; k += 2)
      sum += jct__be16(ip + k);
    while (sum >> 16)
      sum = (sum & 0xffff) + (sum >> 16);
    jct__put16(ip + 10, (uint16_t)~sum);
  }
  uint8_t *udp = ip + iphdr;
  jct__put16(udp, sport);
  jct__put16(udp + 2, 4791);
  jct__put16(udp + 4, (uint16_t)(8 + len));
  memcpy(udp + 8, pkt, len);
  size_t flen = 14 + iphdr + 8 + len;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, flen, flen, &d), JCT_PKT_ROCE);
  ck_assert(d.icrc_checked);
  ck_assert(d.icrc_ok);
  w->frames_ok[from]++;
}

/* Check and record a packet A or B produced; h gets its headers. */
static void on_tx(wire_t *w, int from, const uint8_t *pkt, size_t len, struct jct_roce_hdrs *h) {
  size_t hdr = jct_roce_parse(pkt, len - JCT_ICRC_BYTES, h);
  ck_assert_uint_gt(hdr, 0);
  ck_assert_uint_le(hdr + h->bth.pad_count, len - JCT_ICRC_BYTES);
  check_frame(w, from, pkt, len);
  w->pkts[from]++;
  if (h->bth.opcode == JCT_OP_RC_ACKNOWLEDGE) return;
  const struct jct_opcode_info *op = jct_opcode_info(h->bth.opcode);
  uint32_t psn = h->bth.psn;
  if (!w->data_pkts[from]) w->first_data_ns[from] = w->now;
  w->data_pkts[from]++;
  if (psn_diff(psn, w->hi_data_psn[from]) > 0) w->hi_data_psn[from] = psn;
  uint32_t inflight = (uint32_t)psn_diff(psn, w->hi_acked[from]);
  if (inflight > w->max_inflight[from]) w->max_inflight[from] = inflight;
  if (h->bth.ackreq) {
    if (w->ackreqs[from] < 64) w->ackreq_psn[from][w->ackreqs[from]] = psn;
    w->ackreqs[from]++;
    w->noack_run[from] = 0;
  } else {
    w->noack_run[from]++;
    if (w->noack_run[from] > w->max_noack_run[from]) w->max_noack_run[from] = w->noack_run[from];
    if (op->pos & JCT_POS_LAST) w->last_without_ackreq[from]++;
  }
}

static void deliver(wire_t *w, struct flight *f) {
  struct jct_roce_hdrs h;
  int to = f->to;
  jct_uroce_rx(w->qp[to], f->buf, f->len, f->sport, w->now);
  if (!jct_roce_parse(f->buf, f->len - JCT_ICRC_BYTES, &h)) return;
  if (h.bth.opcode != JCT_OP_RC_ACKNOWLEDGE) return;
  if (jct_aeth_type(h.aeth.syndrome) == JCT_AETH_NAK) {
    if (!w->naks_seen[to]) w->hi_at_nak[to] = w->hi_data_psn[to], w->first_nak_ns[to] = w->now;
    w->naks_seen[to]++;
  } else if (psn_diff(h.bth.psn, w->hi_acked[to]) > 0) {
    w->hi_acked[to] = h.bth.psn;
    w->last_progress_ns[to] = w->now;
  }
}

/* Run until nothing is left to do or until_ns passes. */
static void wire_run(wire_t *w, uint64_t until_ns) {
  static uint8_t buf[MAXPKT];
  for (unsigned iter = 0; iter < 10000000; iter++) {
    while (w->count && w->fl[w->head].at <= w->now) {
      deliver(w, &w->fl[w->head]);
      w->head = (w->head + 1) % FLIGHT;
      w->count--;
    }
    for (int i = 0; i < 2; i++) {
      if (jct_uroce_next_deadline_ns(w->qp[i]) > w->now) continue;
      uint64_t before = jct_uroce_stats(w->qp[i])->timeouts;
      jct_uroce_on_timer(w->qp[i], w->now);
      if (jct_uroce_stats(w->qp[i])->timeouts != before && w->ntimeouts[i] < 16) {
        w->progress_at_timeout[i][w->ntimeouts[i]] = w->last_progress_ns[i];
        w->timeout_ns[i][w->ntimeouts[i]++] = w->now;
      }
    }
    for (int i = 0; i < 2; i++) {
      if (w->tx_free[i] > w->now) continue;
      size_t n = jct_uroce_next_packet(w->qp[i], w->now, buf, sizeof buf);
      if (!n) continue;
      ck_assert_uint_le(n, jct_uroce_max_packet_bytes(w->qp[i]));
      struct jct_roce_hdrs h;
      memset(&h, 0, sizeof h);
      on_tx(w, i, buf, n, &h);
      w->tx_free[i] = w->now + w->ser_ns;
      verdict_t v = w->filter ? w->filter(w, i, &h) : PASS;
      if (v == DROP) continue;
      ck_assert_uint_lt(w->count, FLIGHT);
      struct flight *f = &w->fl[(w->head + w->count) % FLIGHT];
      w->count++;
      f->at = w->now + w->ser_ns + w->prop_ns;
      f->to = 1 - i;
      f->sport = jct_uroce_udp_sport(w->qp[i]);
      f->len = n;
      memcpy(f->buf, buf, n);
      if (v == CORRUPT) f->buf[n / 2] ^= 0x40;
    }
    uint64_t t = UINT64_MAX;
    if (w->count) t = w->fl[w->head].at;
    for (int i = 0; i < 2; i++) {
      uint64_t d = jct_uroce_next_deadline_ns(w->qp[i]);
      if (d < t) t = d;
      if (w->tx_free[i] > w->now && w->tx_free[i] < t) t = w->tx_free[i];
    }
    if (t == UINT64_MAX || t > until_ns) return;
    ck_assert_uint_ge(t, w->now);
    w->now = t;
  }
  ck_abort_msg("the fake wire did not settle");
}

static void post(wire_t *w, int i, uint64_t wr_id, uint32_t bytes, bool has_imm, uint32_t imm) {
  jct_uroce_wr_t wr = {.wr_id = wr_id, .bytes = bytes, .has_imm = has_imm, .imm = imm};
  char err[128];
  ck_assert_int_eq(jct_uroce_post_write(w->qp[i], &wr, err, sizeof err), 0);
}

/* A repetition starts on both QPs (jct_uroce_rep_start), faulted or not. */
static void rep_start(wire_t *w, bool faulted) {
  jct_uroce_rep_start(w->qp[0], faulted);
  jct_uroce_rep_start(w->qp[1], faulted);
}

/* For filters: whether h is a data packet of A's with PSN psn while the
 * filter has hit fewer than copies packets (w->fired); a hit counts. */
static bool hit_data_psn(wire_t *w, int from, const struct jct_roce_hdrs *h, uint32_t psn,
                         int copies) {
  if (from != 0 || h->bth.opcode == JCT_OP_RC_ACKNOWLEDGE || h->bth.psn != psn ||
      w->fired >= copies)
    return false;
  w->fired++;
  return true;
}

/* Common end-of-test checks: one message of `bytes` from A, received once. */
static void assert_one_message(wire_t *w, uint32_t bytes, uint32_t imm) {
  ck_assert_uint_eq(w->nrecv[1], 1);
  ck_assert_uint_eq(w->recv[1][0].bytes, bytes);
  ck_assert(w->recv[1][0].has_imm);
  ck_assert_uint_eq(w->recv[1][0].imm, imm);
  ck_assert_uint_eq(w->ndone[0], 1);
  ck_assert_int_eq(w->done[0][0].status, JCT_UROCE_WC_SUCCESS);
  ck_assert_uint_eq(w->frames_ok[0], w->pkts[0]);
  ck_assert_uint_eq(w->frames_ok[1], w->pkts[1]);
  ck_assert_uint_eq(w->count, 0);
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(w->qp[0]), UINT64_MAX);
}

/* ---- core ---- */

START_TEST(one_mib_with_cts) {
  wire_t w;
  wire_init(&w, 0x100, 20, false);
  /* B sends the clear-to-send; A posts the data when it sees it. */
  w.on_cts[0] = (jct_uroce_wr_t){.wr_id = 7, .bytes = MIB, .has_imm = true, .imm = 0xc0ffee};
  w.has_on_cts[0] = true;
  char err[128];
  ck_assert_int_eq(jct_uroce_post_cts(w.qp[1], 99, err, sizeof err), 0);
  wire_run(&w, UINT64_MAX);

  ck_assert_uint_eq(w.nrecv[0], 1); /* the CTS */
  ck_assert_uint_eq(w.recv[0][0].bytes, JCT_UROCE_CTS_BYTES);
  ck_assert(!w.recv[0][0].has_imm);
  ck_assert_uint_eq(w.data_pkts[1], 1);
  ck_assert_uint_eq(w.ndone[1], 1);
  ck_assert_uint_eq(w.done[1][0].wr_id, 99);

  assert_one_message(&w, MIB, 0xc0ffee);
  ck_assert_uint_eq(w.done[0][0].wr_id, 7);
  ck_assert_uint_eq(w.data_pkts[0], (MIB + 4095) / 4096); /* 256, no retransmission */
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]), *b = jct_uroce_stats(w.qp[1]);
  ck_assert_uint_eq(a->tx_data_pkts, 256);
  ck_assert_uint_eq(a->retx_pkts, 0);
  ck_assert_uint_eq(a->rx_naks + a->timeouts + b->dup_pkts + b->out_of_seq_pkts, 0);
  ck_assert_uint_eq(b->msgs_recv, 1);
  ck_assert_uint_eq(a->msgs_sent, 1);
  /* AckReq on PSN offsets 63, 127, 191 and the last, 255: four ACKs back. */
  ck_assert_uint_eq(w.ackreqs[0], 4);
  for (unsigned k = 0; k < 4; k++)
    ck_assert_uint_eq(w.ackreq_psn[0][k], 0x100 + 64 * k + 63);
  ck_assert_uint_eq(b->tx_acks, 4);
  ck_assert_uint_eq(w.last_without_ackreq[0], 0);
  ck_assert_uint_eq(w.hi_acked[0], 0x100 + 255);
  ck_assert_uint_eq(a->tx_bytes, 256 * 12 + 16 + 4 + MIB + 256 * 4 + a->tx_acks * 20);
  wire_free(&w);
}
END_TEST

START_TEST(ackreq_placement) {
  wire_t w;
  wire_init(&w, 0, 20, false);
  /* 200 packets, then three 1-packet and one 3-packet messages. */
  post(&w, 0, 1, 200 * 4096 - 5, true, 1);
  post(&w, 0, 2, 1, true, 2);
  post(&w, 0, 3, 0, false, 0);
  post(&w, 0, 4, 4096, true, 4);
  post(&w, 0, 5, 3 * 4096, false, 0);
  wire_run(&w, UINT64_MAX);
  ck_assert_uint_eq(w.data_pkts[0], 200 + 3 + 3);
  ck_assert_uint_eq(w.ackreqs[0], 3 + 1 + 3 + 1);
  uint32_t want[] = {63, 127, 191, 199, 200, 201, 202, 205};
  for (unsigned k = 0; k < 8; k++)
    ck_assert_uint_eq(w.ackreq_psn[0][k], want[k]);
  ck_assert_uint_le(w.max_noack_run[0], JCT_UROCE_MAX_PKTS_PER_ACK - 1);
  ck_assert_uint_eq(w.last_without_ackreq[0], 0);
  ck_assert_uint_eq(w.nrecv[1], 5);
  ck_assert_uint_eq(w.recv[1][0].bytes, 200 * 4096 - 5); /* padded on the wire, not here */
  ck_assert_uint_eq(w.recv[1][2].bytes, 0);
  ck_assert(!w.recv[1][2].has_imm);
  ck_assert_uint_eq(w.ndone[0], 5);
  for (unsigned k = 0; k < 5; k++)
    ck_assert_uint_eq(w.done[0][k].wr_id, k + 1);
  wire_free(&w);
}
END_TEST

START_TEST(psn_wrap) {
  wire_t w;
  wire_init(&w, 0xffff80, 20, false);
  post(&w, 0, 1, MIB, true, 42);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, MIB, 42);
  ck_assert_uint_eq(w.data_pkts[0], 256);
  ck_assert_uint_eq(w.hi_data_psn[0], 0x7f); /* 0xffff80 + 255, wrapped */
  ck_assert_uint_eq(w.hi_acked[0], 0x7f);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->retx_pkts, 0);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[1])->out_of_seq_pkts, 0);
  wire_free(&w);
}
END_TEST

START_TEST(window_128) {
  wire_t w;
  wire_init(&w, 0xffff00, 20, false);
  w.prop_ns = 1000000; /* 1 ms: ~3000 packets would fit in flight */
  post(&w, 0, 1, 4 * MIB, true, 5);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, 4 * MIB, 5);
  ck_assert_uint_eq(w.max_inflight[0], JCT_UROCE_MAX_UNACKED_PSNS);
  ck_assert_uint_gt(jct_uroce_stats(w.qp[0])->window_stalls, 0);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->retx_pkts, 0);
  /* 1024 packets, 128 per round trip of ~2 ms: at least 8 round trips. */
  ck_assert_uint_ge(w.now, 8 * 2 * w.prop_ns);
  wire_free(&w);
}
END_TEST

static verdict_t drop_a_psn_once(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  return hit_data_psn(w, from, h, w->arg, 1) ? DROP : PASS;
}

START_TEST(drop_middle) {
  wire_t w;
  wire_init(&w, 1000, 20, false);
  w.filter = drop_a_psn_once;
  w.arg = 1000 + 100;
  post(&w, 0, 1, MIB, true, 9);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, MIB, 9);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]), *b = jct_uroce_stats(w.qp[1]);
  ck_assert_uint_eq(b->tx_naks, 1);
  ck_assert_uint_eq(a->rx_naks, 1);
  ck_assert_uint_eq(w.naks_seen[0], 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  ck_assert_uint_eq(a->timeouts, 0);
  uint32_t in_flight = w.hi_at_nak[0] - w.arg + 1; /* the lost one and all sent after it */
  ck_assert_uint_gt(in_flight, 1);
  ck_assert_uint_eq(a->retx_pkts, in_flight);
  ck_assert_uint_eq(b->out_of_seq_pkts, in_flight - 1);
  ck_assert_uint_eq(a->tx_data_pkts, 256 + in_flight);
  ck_assert_uint_eq(b->dup_pkts, 0);
  wire_free(&w);
}
END_TEST

/* PSN arg lost, then PSN arg + 10 lost again when the go-back resends it:
 * no ACK came between (the next AckReq is at offset 127), so its NAK is
 * ignored, as rxe ignores a NAK while a retry is under way, and the
 * retransmit timer recovers it. */
static verdict_t drop_then_drop_resent(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  if (from != 0 || h->bth.opcode == JCT_OP_RC_ACKNOWLEDGE) return PASS;
  if (h->bth.psn == w->arg && w->fired == 0) return w->fired++, DROP;
  if (h->bth.psn == w->arg + 10 && w->fired == 1 && w->naks_seen[0] == 1) return w->fired++, DROP;
  return PASS;
}

START_TEST(nak_during_a_go_back_is_ignored) {
  wire_t w;
  wire_init(&w, 1000, 10, false);
  w.filter = drop_then_drop_resent;
  w.arg = 1000 + 100;
  post(&w, 0, 1, MIB, true, 9);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, MIB, 9);
  ck_assert_int_eq(w.fired, 2);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]), *b = jct_uroce_stats(w.qp[1]);
  ck_assert_uint_eq(b->tx_naks, 2);
  ck_assert_uint_eq(a->rx_naks, 2);
  ck_assert_uint_eq(a->rx_naks_ignored, 1);
  ck_assert_uint_eq(a->timeouts, 1);
  ck_assert_uint_eq(a->go_back_n, 2); /* the first NAK's, the timer's */
  /* ... back to the PSN the ignored NAK named: on the wire, its go-back. */
  ck_assert_uint_eq(a->timeouts_after_nak, 1);
  /* The timer fired at least one timeout after the last ACK. */
  ck_assert_uint_eq(w.ntimeouts[0], 1);
  ck_assert_uint_ge(w.timeout_ns[0][0] - w.progress_at_timeout[0][0], 4096ull << 10);
  wire_free(&w);
}
END_TEST

/* A slow host: the NAK leaves 200 us after the gap and the go-back starts
 * 300 us after the NAK arrives; the requester sends on meanwhile, so the
 * one loss costs what it sent in that half millisecond more (1 packet per
 * 330 ns), and still one NAK and no timeout. */
static uint64_t resent_after_one_loss_slow(uint64_t delay_ns, uint64_t react_ns) {
  wire_t w;
  wire_init_slow(&w, 1000, 20, false, delay_ns, react_ns);
  w.filter = drop_a_psn_once;
  w.arg = 1000 + 100;
  post(&w, 0, 1, 4 * MIB, true, 9);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, 4 * MIB, 9);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]), *b = jct_uroce_stats(w.qp[1]);
  ck_assert_uint_eq(b->tx_naks, 1);
  ck_assert_uint_eq(a->rx_naks, 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  ck_assert_uint_eq(a->timeouts, 0);
  uint64_t resent = a->retx_pkts;
  wire_free(&w);
  return resent;
}

START_TEST(slow_host_turnaround) {
  uint64_t fast = resent_after_one_loss_slow(0, 0), slow = resent_after_one_loss_slow(200000, 300000);
  /* 500 us at one packet per 330 ns: about 1500 more, up to the 128-PSN window. */
  ck_assert_msg(fast < 20, "a NIC's turnaround resent %llu", (unsigned long long)fast);
  ck_assert_msg(slow > fast + 100, "slow host resent %llu against %llu", (unsigned long long)slow,
                (unsigned long long)fast);
  ck_assert_uint_le(slow, 128);
}
END_TEST

/* One 4 MiB message from A with the captured go-backs gb, through filter
 * (arg: its PSN), run to the end; returns A's counters. */
static const jct_uroce_stats_t *run_captured(wire_t *w, uint8_t timeout,
                                             const jct_uroce_go_back_t *gb, uint32_t ngb,
                                             filter_fn filter, uint32_t arg) {
  wire_init_captured(w, 1000, timeout, false, 0, 0, gb, ngb);
  w->filter = filter;
  w->arg = arg;
  post(w, 0, 1, 4 * MIB, true, 9);
  wire_run(w, UINT64_MAX);
  assert_one_message(w, 4 * MIB, 9);
  return jct_uroce_stats(w->qp[0]);
}

/* A captured requester (uroce.h, jct_uroce_go_back_t): one loss at packet
 * 100 of the first message; the go-back re-sends what the capture's did
 * (ahead PSNs from the lost one), not what a prompt NAK leaves in flight.
 * Whatever NAKs no captured loss falls back to the turnaround. */
static const jct_uroce_stats_t *captured_loss(wire_t *w, uint32_t ahead, uint32_t pkt) {
  jct_uroce_go_back_t gb = {.conn = 0, .msg = 0, .pkt = pkt, .ahead_psns = ahead};
  const jct_uroce_stats_t *a = run_captured(w, 20, &gb, 1, drop_a_psn_once, 1000 + 100);
  ck_assert_uint_eq(jct_uroce_stats(w->qp[1])->tx_naks, 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  ck_assert_uint_eq(a->timeouts, 0);
  return a;
}

START_TEST(captured_go_back_depth) {
  wire_t w;
  const jct_uroce_stats_t *a = captured_loss(&w, 0, 100); /* no captured figure */
  uint64_t prompt = a->retx_pkts;
  ck_assert_uint_eq(a->go_back_captured, 0);
  wire_free(&w);
  ck_assert_uint_lt(prompt, 20);
  a = captured_loss(&w, 60, 100);
  ck_assert_uint_eq(a->go_back_captured, 1);
  ck_assert_uint_eq(a->retx_pkts, 60); /* PSNs 1100..1159, as the capture's */
  ck_assert_uint_eq(w.hi_data_psn[0], 1000 + 1023);
  wire_free(&w);
  /* Another packet's figure is not this loss's. */
  a = captured_loss(&w, 60, 99);
  ck_assert_uint_eq(a->go_back_captured, 0);
  ck_assert_uint_eq(a->retx_pkts, prompt);
  wire_free(&w);
}
END_TEST

/* A repetition starts (jct_uroce_rep_start) and its messages count from 0
 * again: the same loss in the next repetition's first message goes back as
 * deep as the capture's again, its captured go-back unused once more. */
START_TEST(captured_go_back_each_repetition) {
  wire_t w;
  const jct_uroce_stats_t *a = captured_loss(&w, 60, 100);
  ck_assert_uint_eq(a->retx_pkts, 60);
  rep_start(&w, true);
  w.arg = 1000 + 1024 + 100; /* packet 100 of the repetition's message 0 */
  w.fired = 0;
  post(&w, 0, 2, 4 * MIB, true, 10);
  wire_run(&w, UINT64_MAX);
  ck_assert_int_eq(w.fired, 1);
  ck_assert_uint_eq(w.nrecv[1], 2);
  ck_assert_uint_eq(a->go_back_captured, 2);
  ck_assert_uint_eq(a->retx_pkts, 120);
  wire_free(&w);
}
END_TEST

/* Drops PSN arg once from A and notes when A sends it again. */
static verdict_t drop_then_time_resend(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  if (from != 0 || h->bth.opcode == JCT_OP_RC_ACKNOWLEDGE || h->bth.psn != w->arg) return PASS;
  if (w->fired++) {
    if (!w->resent_ns) w->resent_ns = w->now;
    return PASS;
  }
  return DROP;
}

/* A captured go-back with its NAK → go-back time (nak_to_resend_ns), for
 * a loss at packet pkt of a 1024-packet message, ahead PSNs deep: it goes
 * back the captured time after the NAK, not at once, and re-sends
 * resent PSNs (what it had sent by then). Returns NAK → re-sent. */
static uint64_t held_go_back_at(wire_t *w, uint32_t pkt, uint32_t ahead, uint64_t react_ns,
                                uint64_t resent) {
  jct_uroce_go_back_t gb = {
      .conn = 0, .msg = 0, .pkt = pkt, .ahead_psns = ahead, .nak_to_resend_ns = react_ns};
  const jct_uroce_stats_t *a = run_captured(w, 20, &gb, 1, drop_then_time_resend, 1000 + pkt);
  ck_assert_uint_eq(a->go_back_captured, 1);
  ck_assert_uint_eq(a->retx_pkts, resent);
  ck_assert_uint_eq(a->timeouts, 0);
  ck_assert_uint_eq(w->naks_seen[0], 1);
  ck_assert_uint_ge(w->resent_ns, w->first_nak_ns[0]);
  ck_assert_uint_gt(w->resent_ns, 0);
  return w->resent_ns - w->first_nak_ns[0];
}

/* Without a reaction time the go-back starts within prompt_ns of the NAK;
 * with react_ns it starts that long after the NAK, as deep. */
static void check_held(uint32_t pkt, uint32_t ahead, uint64_t resent, uint64_t prompt_ns,
                       uint64_t react_ns) {
  wire_t w;
  uint64_t prompt = held_go_back_at(&w, pkt, ahead, 0, resent);
  wire_free(&w);
  ck_assert_uint_lt(prompt, prompt_ns);
  uint64_t held = held_go_back_at(&w, pkt, ahead, react_ns, resent);
  ck_assert_uint_ge(held, react_ns);
  ck_assert_uint_lt(held, react_ns + 10000);
  wire_free(&w);
}

/* The loss at the message's 4th-last packet: when the NAK comes the
 * requester may send nothing more, short of the capture's depth (200);
 * without a reaction time it goes back at once, the next transmit pull. */
START_TEST(captured_go_back_held) {
  check_held(1020, 200, 4, 10000, 5000000);
}
END_TEST

/* A captured go-back whose depth the requester reaches with more to send
 * (ahead 60 of a 1024-packet message) and whose NAK → go-back time is
 * longer: it sends nothing past the capture's depth (PSNs 1100..1159
 * re-sent) and goes back that long after the NAK (the shipped capture's
 * first loss: 17 PSNs deep, 6.4 ms after its NAK, its host slow), not as
 * soon as the depth is reached (59 packets' time without one). */
START_TEST(captured_go_back_stalls) {
  check_held(100, 60, 60, 100000, 3000000);
}
END_TEST

/* Drops PSN arg's first copy and PSN arg + 1's second (a go-back's copy:
 * a loss during the go-back, whose NAK the requester ignores, rxe_comp.c),
 * and notes when PSN arg + 1 goes a third time. */
static verdict_t drop_in_go_back(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  if (from != 0 || h->bth.opcode == JCT_OP_RC_ACKNOWLEDGE) return PASS;
  if (h->bth.psn == w->arg) return w->fired++ ? PASS : DROP;
  if (h->bth.psn != w->arg + 1) return PASS;
  w->fired += 16; /* copies of arg + 1, above the low bits */
  if (w->fired >> 4 == 3 && !w->resent_ns) w->resent_ns = w->now;
  return w->fired >> 4 == 2 ? DROP : PASS;
}

/* That loss's NAK, ignored, leaves it to the retransmit timer (2^8 here,
 * 1.05 ms); with a captured go-back at it, the timer fires no earlier than
 * its nak_to_resend_ns after the NAK (the shipped capture's rxe went back
 * 84 ms after such a NAK, past its 67 ms timer). */
static uint64_t ignored_nak_go_back(wire_t *w, uint64_t react_ns) {
  jct_uroce_go_back_t gb[] = {
      {.conn = 0, .msg = 0, .pkt = 1000, .ahead_psns = 10},
      {.conn = 0, .msg = 0, .pkt = 1001, .ahead_psns = 10, .nak_to_resend_ns = react_ns}};
  const jct_uroce_stats_t *a =
      run_captured(w, 8, gb, react_ns ? 2 : 1, drop_in_go_back, 1000 + 1000);
  ck_assert_uint_eq(a->rx_naks_ignored, 1);
  ck_assert_uint_eq(a->timeouts, 1); /* the timer went back, as rxe's did */
  ck_assert_uint_gt(w->resent_ns, 0);
  return w->resent_ns - w->first_nak_ns[0];
}

START_TEST(captured_ignored_nak_holds_timer) {
  wire_t w;
  uint64_t timer = ignored_nak_go_back(&w, 0);
  wire_free(&w);
  ck_assert_uint_lt(timer, 3000000);
  uint64_t held = ignored_nak_go_back(&w, 5000000);
  ck_assert_uint_ge(held, 5000000);
  wire_free(&w);
}
END_TEST

/* The loss at packet 100 of a 1024-packet message with the capture's NAK
 * lag, hole_to_nak_ns 2 ms; first_tx as given; a faulted repetition. */
static const jct_uroce_stats_t *lagged_loss(wire_t *w, bool first_tx) {
  jct_uroce_go_back_t gb = {.conn = 0,
                            .msg = 0,
                            .pkt = 100,
                            .ahead_psns = 60,
                            .hole_to_nak_ns = 2000000,
                            .nak_ahead_psns = 30,
                            .first_tx = first_tx};
  wire_init_captured(w, 1000, 20, false, 0, 0, &gb, 1);
  jct_uroce_rep_start(w->qp[0], true);
  jct_uroce_rep_start(w->qp[1], true);
  w->filter = drop_a_psn_once;
  w->arg = 1000 + 100;
  post(w, 0, 1, 4 * MIB, true, 9);
  wire_run(w, UINT64_MAX);
  assert_one_message(w, 4 * MIB, 9);
  const jct_uroce_stats_t *a = jct_uroce_stats(w->qp[0]);
  ck_assert_uint_eq(jct_uroce_stats(w->qp[1])->tx_naks, 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  ck_assert_uint_eq(a->timeouts, 0);
  return a;
}

/* The captured responder NAKs hole_to_nak_ns after the gap, not once the
 * capture's count of PSNs past the hole (nak_ahead_psns 30) arrived: here
 * they arrive within 11 us (the shipped capture's first loss: 15 PSNs in
 * 0.41 ms, its NAK 7.7 ms after the hole). */
START_TEST(captured_nak_lag) {
  wire_t w;
  lagged_loss(&w, false);
  /* The hole went about 100 packets (33 us) after the first; the gap one
   * packet and the propagation later, the NAK 2 ms after the gap. */
  uint64_t after = w.first_nak_ns[0] - w.first_data_ns[0];
  ck_assert_uint_ge(after, 2000000 + 100 * 330);
  ck_assert_uint_lt(after, 2000000 + 100 * 330 + 10000);
  /* Meanwhile the requester filled its window (128 PSNs from the last
   * ACKed, PSN 1064 after packet 63's AckReq): 91 PSNs past the hole. */
  ck_assert_uint_eq(jct_uroce_stats(w.qp[1])->out_of_seq_pkts, 1064 + 128 - 1101);
  wire_free(&w);
}
END_TEST

/* ... and the requester, whose NAK comes that late, sends on meanwhile to
 * its window (above) and re-sends all of it; with first_tx it sends no
 * PSN the capture's depth (60) past the hole before the NAK, and re-sends
 * exactly the capture's 60 (uroce_req.c). */
START_TEST(captured_hole_holds_depth) {
  wire_t w;
  const jct_uroce_stats_t *a = lagged_loss(&w, false);
  ck_assert_uint_eq(a->retx_pkts, 1064 + 128 - 1100);
  wire_free(&w);
  a = lagged_loss(&w, true);
  ck_assert_uint_eq(w.hi_at_nak[0], 1000 + 100 + 59);
  ck_assert_uint_eq(a->retx_pkts, 60);
  ck_assert_uint_eq(a->go_back_captured, 1);
  wire_free(&w);
}
END_TEST

/* A first_tx hole whose packet gets through (a baseline repetition has no
 * drop; a faulted one whose copy was not lost) holds nothing for long: in
 * a baseline it is not armed, in a faulted repetition the first ACK past
 * it frees the requester (an AckReq every 64 packets). */
START_TEST(captured_hole_not_lost) {
  for (int faulted = 0; faulted < 2; faulted++) {
    wire_t w;
    jct_uroce_go_back_t gb = {
        .pkt = 100, .ahead_psns = 60, .hole_to_nak_ns = 2000000, .first_tx = true};
    wire_init_captured(&w, 1000, 20, false, 0, 0, &gb, 1);
    jct_uroce_rep_start(w.qp[0], faulted);
    jct_uroce_rep_start(w.qp[1], faulted);
    post(&w, 0, 1, 4 * MIB, true, 9);
    wire_run(&w, UINT64_MAX);
    assert_one_message(&w, 4 * MIB, 9);
    ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->retx_pkts, 0);
    ck_assert_uint_lt(w.recv[1][0].time_ns - w.first_data_ns[0], 1024 * 330 + 200000);
    wire_free(&w);
  }
}
END_TEST

/* A captured timer go-back (uroce.h, timer_ns): nothing lost, yet the
 * capture's requester went back with no NAK 2 ms after the message's
 * start, its ACK not acted on. The replay goes back then, not at its own
 * timer (2^8 = 1.05 ms here, which waits for it), re-sends the message and
 * completes it on the ACK of the re-sent copy. */
static const jct_uroce_stats_t *captured_timer(wire_t *w, uint64_t timer_ns) {
  jct_uroce_go_back_t gb = {.conn = 0, .msg = 0, .pkt = 0, .ahead_psns = 32, .timer_ns = timer_ns};
  wire_init_captured(w, 1000, 8, false, 0, 0, &gb, 1);
  post(w, 0, 1, 128 * 1024, true, 5);
  wire_run(w, UINT64_MAX);
  assert_one_message(w, 128 * 1024, 5);
  ck_assert_uint_eq(jct_uroce_stats(w->qp[1])->tx_naks, 0);
  return jct_uroce_stats(w->qp[0]);
}

START_TEST(captured_timer_go_back) {
  wire_t w;
  const jct_uroce_stats_t *a = captured_timer(&w, 0); /* a NAK's entry: no NAK, nothing */
  ck_assert_uint_eq(a->retx_pkts, 0);
  ck_assert_uint_eq(a->timeouts, 0);
  ck_assert_uint_eq(a->rx_acks_held, 0);
  wire_free(&w);
  a = captured_timer(&w, 2000000);
  ck_assert_uint_eq(a->timeouts, 1);
  ck_assert_uint_eq(a->go_back_timer, 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  ck_assert_uint_eq(a->retx_pkts, 32);
  ck_assert_uint_ge(a->rx_acks_held, 1);
  ck_assert_uint_eq(w.ntimeouts[0], 1);
  ck_assert_uint_eq(w.timeout_ns[0][0], w.first_data_ns[0] + 2000000);
  ck_assert_uint_gt(w.done[0][0].time_ns, w.timeout_ns[0][0]);
  ck_assert_uint_ge(jct_uroce_stats(w.qp[1])->dup_pkts, 32);
  wire_free(&w);
}
END_TEST

/* A captured timer go-back runs as rxe's timer did (uroce.h): started
 * timer_lead_ns before its message's first send; restarted by an ACK acted
 * on while PSNs are outstanding (the first message's, with the second
 * outstanding); one that recovers a loss only in a faulted repetition. */
START_TEST(captured_timer_reference) {
  wire_t w;
  jct_uroce_go_back_t gb = {
      .msg = 0, .pkt = 0, .ahead_psns = 32, .timer_ns = 2000000, .timer_lead_ns = 500000};
  wire_init_captured(&w, 1000, 8, false, 0, 0, &gb, 1);
  post(&w, 0, 1, 128 * 1024, true, 5);
  wire_run(&w, UINT64_MAX);
  ck_assert_uint_eq(w.ntimeouts[0], 1);
  ck_assert_uint_eq(w.timeout_ns[0][0], w.first_data_ns[0] + 1500000);
  wire_free(&w);

  gb = (jct_uroce_go_back_t){.msg = 1, .pkt = 0, .ahead_psns = 32, .timer_ns = 2000000};
  wire_init_captured(&w, 1000, 8, false, 0, 0, &gb, 1);
  post(&w, 0, 1, 128 * 1024, true, 5);
  post(&w, 0, 1, 128 * 1024, true, 6);
  wire_run(&w, UINT64_MAX);
  ck_assert_uint_eq(w.ndone[0], 2);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->go_back_timer, 1);
  ck_assert_uint_eq(w.ntimeouts[0], 1);
  /* the first message completes at its ACK, 32 packets after the second
   * message's first send: the timer runs from there */
  ck_assert_uint_gt(w.done[0][0].time_ns, w.first_data_ns[0] + 32 * w.ser_ns);
  ck_assert_uint_eq(w.timeout_ns[0][0], w.done[0][0].time_ns + 2000000);
  wire_free(&w);

  for (int faulted = 0; faulted < 2; faulted++) {
    gb = (jct_uroce_go_back_t){
        .msg = 0, .pkt = 0, .ahead_psns = 32, .timer_ns = 2000000, .recovers_loss = true};
    wire_init_captured(&w, 1000, 8, false, 0, 0, &gb, 1);
    jct_uroce_rep_start(w.qp[0], faulted);
    post(&w, 0, 1, 128 * 1024, true, 5);
    wire_run(&w, UINT64_MAX);
    assert_one_message(&w, 128 * 1024, 5);
    ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->go_back_timer, (uint64_t)faulted);
    ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->retx_pkts, faulted ? 32u : 0u);
    wire_free(&w);
  }
}
END_TEST

/* A captured transmit stall (uroce.h): the first transmission of the
 * message's packet 3 leaves stall_ns after the wire was free for it, the
 * packets before and after it one serialisation apart; in every
 * repetition, once; a go-back's copy of that packet is not held again. */
static uint64_t tx_at[2][16];
static verdict_t time_data(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  uint32_t k = (uint32_t)psn_diff(h->bth.psn, 0);
  if (from == 0 && h->bth.opcode != JCT_OP_RC_ACKNOWLEDGE && k < 16 && !tx_at[w->arg][k])
    tx_at[w->arg][k] = w->now;
  return PASS;
}

/* A wire whose requester A holds its first message's packet 3 stall_ns
 * (a captured transmit stall: wire_init's A gets test_stalls), through
 * filter, tx_at cleared. */
static void wire_init_stalled(wire_t *w, uint8_t timeout, uint64_t stall_ns, filter_fn filter) {
  jct_uroce_stall_t st = {.conn = 0, .msg = 0, .pkt = 3, .stall_ns = stall_ns};
  test_stalls = &st; /* copied by jct_uroce_qp_create */
  test_nstalls = 1;
  wire_init(w, 0, timeout, false);
  test_stalls = NULL;
  test_nstalls = 0;
  memset(tx_at, 0, sizeof tx_at);
  w->filter = filter;
}

START_TEST(captured_stall_holds) {
  const uint64_t stall = 5000000;
  wire_t w;
  wire_init_stalled(&w, 20, stall, time_data);
  for (uint32_t rep = 0; rep < 2; rep++) {
    w.arg = rep;
    rep_start(&w, rep == 1);
    uint64_t t0 = w.now;
    uint32_t base = rep * 8; /* PSNs go on from the first repetition's */
    post(&w, 0, 1, 8 * 4096, true, 8);
    wire_run(&w, t0 + stall / 2);
    ck_assert_uint_eq(jct_uroce_next_deadline_ns(w.qp[0]), tx_at[rep][base + 2] + w.ser_ns + stall);
    wire_run(&w, UINT64_MAX);
    for (uint32_t k = 1; k < 8; k++) {
      uint64_t gap = tx_at[rep][base + k] - tx_at[rep][base + k - 1];
      ck_assert_uint_eq(gap, k == 3 ? w.ser_ns + stall : w.ser_ns);
    }
    ck_assert_uint_eq(w.nrecv[1], rep + 1);
    ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->stalls, rep + 1);
  }
  wire_free(&w);

  /* A go-back over packet 3 re-sends it at once (B NAKs the lost PSN 2 when the held 3 comes). */
  wire_t v;
  wire_init_stalled(&v, 20, stall, drop_a_psn_once);
  v.arg = 2;
  jct_uroce_rep_start(v.qp[0], true);
  post(&v, 0, 1, 8 * 4096, true, 8);
  wire_run(&v, UINT64_MAX);
  ck_assert_uint_eq(jct_uroce_stats(v.qp[0])->stalls, 1);
  ck_assert_uint_ge(jct_uroce_stats(v.qp[0])->retx_pkts, 6);
  ck_assert_uint_lt(v.now, 2 * stall);
  assert_one_message(&v, 8 * 4096, 8);
  wire_free(&v);
}
END_TEST

/* The QP's own retransmit timer does not run during a captured stall
 * (uroce.h): a 10 ms stall after 3 packets, nothing of them acknowledged
 * (no AckReq before the last), against a 4.19 ms timer (2^10) that would
 * otherwise run out in it and re-send them. It resumes with the time it
 * had left: with the message's last packet lost (nothing after it reveals
 * the gap), it goes back 4.19 ms after the first send plus the stall. */
static verdict_t time_drop_last(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  time_data(w, from, h);
  return hit_data_psn(w, from, h, 7, 1) ? DROP : PASS;
}

START_TEST(captured_stall_stops_own_timer) {
  const uint64_t stall = 10000000, timer = 4096ull << 10;
  for (int lose_last = 0; lose_last < 2; lose_last++) {
    wire_t w;
    wire_init_stalled(&w, 10, stall, lose_last ? time_drop_last : time_data);
    rep_start(&w, true);
    post(&w, 0, 1, 8 * 4096, true, 8);
    wire_run(&w, UINT64_MAX);
    const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]);
    ck_assert_uint_eq(a->stalls, 1);
    ck_assert_uint_eq(tx_at[0][3] - tx_at[0][2], w.ser_ns + stall);
    ck_assert_uint_gt(stall, timer);
    if (!lose_last) {
      ck_assert_uint_eq(a->timeouts, 0);
      ck_assert_uint_eq(a->retx_pkts, 0);
    } else {
      ck_assert_uint_eq(a->timeouts, 1);
      ck_assert_uint_eq(w.ntimeouts[0], 1);
      ck_assert_uint_eq(w.timeout_ns[0][0], w.first_data_ns[0] + timer + stall);
      ck_assert_uint_eq(a->retx_pkts, 8); /* back to PSN 0: nothing was acknowledged */
    }
    assert_one_message(&w, 8 * 4096, 8);
    wire_free(&w);
  }
}
END_TEST

/* Captured go-backs keep the capture's order (uroce.h): PSN 1010 lost,
 * and its NAK's go-back's copy lost too; in the capture (entry 0) the NAK's
 * go-back came 100 us after the NAK and the timer's (entry 1: 50 us after
 * the message's first send, 20 us of quiet before it) after that. The
 * timer runs out first here; it waits for the NAK's go-back and goes back
 * 20 us after it, re-sending the copy that gets through: one timeout, the
 * job done in microseconds. Taking the NAK's go-back's place, it would
 * re-send the copy that is lost, and only the QP's own timer (2^14, 67
 * ms) would re-send it again. */
static verdict_t drop_1010_twice(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  return hit_data_psn(w, from, h, 1010, 2) ? DROP : PASS;
}

START_TEST(captured_go_backs_keep_capture_order) {
  jct_uroce_go_back_t gb[2] = {
      {.msg = 0, .pkt = 10, .ahead_psns = 22, .nak_to_resend_ns = 100000, .recovers_loss = true},
      {.msg = 0,
       .pkt = 10,
       .ahead_psns = 22,
       .timer_ns = 50000,
       .idle_ns = 20000,
       .recovers_loss = true}};
  wire_t w;
  wire_init_captured(&w, 1000, 14, false, 0, 0, gb, 2);
  w.filter = drop_1010_twice;
  rep_start(&w, true);
  post(&w, 0, 1, 32 * 4096, true, 5);
  wire_run(&w, UINT64_MAX);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]);
  ck_assert_int_eq(w.fired, 2);
  ck_assert_uint_eq(a->go_back_captured, 1);
  ck_assert_uint_eq(a->go_back_timer, 1);
  ck_assert_uint_eq(a->timeouts, 1);
  ck_assert_uint_eq(w.ntimeouts[0], 1);
  ck_assert_uint_gt(w.first_nak_ns[0] + 100000, w.first_data_ns[0] + 50000); /* ran out first */
  ck_assert_uint_eq(w.timeout_ns[0][0], w.first_nak_ns[0] + 100000 + 20000);
  ck_assert_uint_lt(w.done[0][0].time_ns, 1000000);
  assert_one_message(&w, 32 * 4096, 5);
  wire_free(&w);
}
END_TEST

/* A repetition never sees the previous one's go-backs or completions
 * (jct_uroce_rep_start): a faulted repetition's captured timer go-back is
 * still pending when its job ends (the message received, its ACKs held);
 * the next repetition (a baseline) completes only its own message, and
 * nothing of the old one is re-sent or timed out. */
START_TEST(rep_start_retires_previous) {
  wire_t w;
  jct_uroce_go_back_t gb = {
      .msg = 0, .pkt = 0, .ahead_psns = 32, .timer_ns = 50000000, .recovers_loss = true};
  wire_init_captured(&w, 1000, 8, false, 0, 0, &gb, 1);
  rep_start(&w, true);
  post(&w, 0, 1, 128 * 1024, true, 5);
  wire_run(&w, 1000000); /* the job ends: received, the go-back due at 50 ms */
  ck_assert_uint_eq(w.nrecv[1], 1);
  ck_assert_uint_eq(w.ndone[0], 0);
  ck_assert_uint_ge(jct_uroce_stats(w.qp[0])->rx_acks_held, 1);
  rep_start(&w, false);
  post(&w, 0, 2, 128 * 1024, true, 6);
  wire_run(&w, UINT64_MAX);
  ck_assert_uint_eq(w.nrecv[1], 2);
  ck_assert_uint_eq(w.recv[1][1].imm, 6);
  ck_assert_uint_eq(w.ndone[0], 1);
  ck_assert_uint_eq(w.done[0][0].wr_id, 2);
  ck_assert_int_eq(w.done[0][0].status, JCT_UROCE_WC_SUCCESS);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]);
  ck_assert_uint_eq(a->timeouts, 0);
  ck_assert_uint_eq(a->go_back_n, 0);
  ck_assert_uint_eq(a->retx_pkts, 0);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[1])->dup_pkts, 0);
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(w.qp[0]), UINT64_MAX);
  wire_free(&w);
}
END_TEST

START_TEST(drop_last) {
  wire_t w;
  wire_init(&w, 1000, 10, false);
  w.filter = drop_a_psn_once;
  w.arg = 1000 + 255;
  post(&w, 0, 1, MIB, true, 9);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, MIB, 9);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]), *b = jct_uroce_stats(w.qp[1]);
  ck_assert_uint_eq(b->tx_naks, 0);
  ck_assert_uint_eq(a->timeouts, 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  /* Go-back-N from the oldest unacknowledged PSN, 192 (the last AckReq
   * before the lost one was 191): 192..254 arrive again as duplicates, the
   * re-ACK stops the resending; 255 is accepted. */
  ck_assert_uint_ge(a->retx_pkts, 1);
  ck_assert_uint_le(a->retx_pkts, 64);
  ck_assert_uint_eq(b->dup_pkts + 1, a->retx_pkts);
  ck_assert_uint_eq(b->out_of_seq_pkts, 0);
  ck_assert_uint_eq(w.ntimeouts[0], 1);
  /* 4.096 us * 2^10 after the last ACK that made progress (PSN offset 191). */
  uint64_t rto = 4096ull << 10;
  ck_assert_uint_eq(rto, 4194304);
  ck_assert_uint_gt(w.progress_at_timeout[0][0], 0);
  ck_assert_uint_eq(w.timeout_ns[0][0] - w.progress_at_timeout[0][0], rto);
  wire_free(&w);
}
END_TEST

static verdict_t drop_acks(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  if (from == 1 && h->bth.opcode == JCT_OP_RC_ACKNOWLEDGE && w->fired < 2 &&
      (h->bth.psn == w->arg + 63 || h->bth.psn == w->arg + 255)) {
    w->fired++;
    return DROP;
  }
  return PASS;
}

START_TEST(drop_ack) {
  wire_t w;
  wire_init(&w, 0, 10, false);
  w.filter = drop_acks;
  w.arg = 0;
  post(&w, 0, 1, MIB, true, 3);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, MIB, 3); /* delivered once despite the resends */
  ck_assert_int_eq(w.fired, 2);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]), *b = jct_uroce_stats(w.qp[1]);
  /* The lost ACK of 63 is covered by that of 127; the lost final ACK costs
   * one timeout and a resend from the oldest unacknowledged PSN, 192. */
  ck_assert_uint_eq(a->timeouts, 1);
  ck_assert_uint_eq(a->go_back_n, 1);
  ck_assert_uint_ge(a->retx_pkts, 1); /* resending stops once the re-ACK of 255 arrives */
  ck_assert_uint_le(a->retx_pkts, 64);
  ck_assert_uint_eq(b->dup_pkts, a->retx_pkts);
  ck_assert_uint_eq(b->tx_naks, 0);
  ck_assert_uint_eq(b->msgs_recv, 1);
  ck_assert_uint_eq(w.hi_acked[0], 255);
  wire_free(&w);
}
END_TEST

static verdict_t drop_all_data(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  (void)w;
  return from == 0 && h->bth.opcode != JCT_OP_RC_ACKNOWLEDGE ? DROP : PASS;
}

START_TEST(retry_exceeded) {
  wire_t w;
  wire_init(&w, 0, 10, false);
  w.filter = drop_all_data;
  post(&w, 0, 1, 3 * 4096, true, 1);
  post(&w, 0, 2, 100, true, 2);
  post(&w, 0, 3, 0, false, 0);
  wire_run(&w, UINT64_MAX);
  const jct_uroce_stats_t *a = jct_uroce_stats(w.qp[0]);
  uint64_t rto = 4096ull << 10;
  ck_assert_uint_eq(a->timeouts, 7 + 1);
  ck_assert_uint_eq(a->go_back_n, 7);
  ck_assert(jct_uroce_in_error(w.qp[0]));
  ck_assert_uint_eq(w.ndone[0], 3);
  for (unsigned k = 0; k < 3; k++) {
    ck_assert_int_eq(w.done[0][k].status, JCT_UROCE_WC_RETRY_EXC_ERR);
    ck_assert_uint_eq(w.done[0][k].wr_id, k + 1);
    ck_assert_uint_eq(w.done[0][k].time_ns, 8 * rto); /* timer from the first packet at 0 */
  }
  for (unsigned k = 0; k < 8; k++)
    ck_assert_uint_eq(w.timeout_ns[0][k], (k + 1) * rto);
  ck_assert_uint_eq(a->tx_data_pkts, 5 * 8);
  ck_assert_uint_eq(w.nrecv[1], 0);
  char err[128] = "";
  jct_uroce_wr_t wr = {.bytes = 1};
  ck_assert_int_eq(jct_uroce_post_write(w.qp[0], &wr, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "error state"));
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(w.qp[0]), UINT64_MAX);
  wire_free(&w);
}
END_TEST

START_TEST(pause_holds_sending) {
  wire_t w;
  wire_init(&w, 0, 20, false);
  w.paused_until[0] = 1000000;
  post(&w, 0, 1, 64 * 4096, true, 8);
  wire_run(&w, 900000);
  ck_assert_uint_eq(w.pkts[0], 0);
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(w.qp[0]), 1000000);
  wire_run(&w, UINT64_MAX);
  ck_assert_uint_eq(w.first_data_ns[0], 1000000);
  assert_one_message(&w, 64 * 4096, 8);
  /* Paused in the middle: B's ACKs held, A's timer still runs. */
  wire_t v;
  wire_init(&v, 0, 8, false); /* 1.05 ms timeout */
  v.paused_until[1] = 3000000;
  post(&v, 0, 1, 10 * 4096, true, 8);
  wire_run(&v, UINT64_MAX);
  ck_assert_uint_eq(v.pkts[1] - jct_uroce_stats(v.qp[1])->tx_acks, 0);
  ck_assert_uint_ge(jct_uroce_stats(v.qp[0])->timeouts, 2);
  assert_one_message(&v, 10 * 4096, 8);
  wire_free(&v);
  wire_free(&w);
}
END_TEST

static verdict_t corrupt_once(wire_t *w, int from, const struct jct_roce_hdrs *h) {
  return hit_data_psn(w, from, h, w->arg, 1) ? CORRUPT : PASS;
}

START_TEST(bad_icrc_dropped) {
  wire_t w;
  wire_init(&w, 0, 20, false);
  w.filter = corrupt_once;
  w.arg = 10;
  post(&w, 0, 1, 32 * 4096, true, 1);
  wire_run(&w, UINT64_MAX);
  assert_one_message(&w, 32 * 4096, 1);
  const jct_uroce_stats_t *b = jct_uroce_stats(w.qp[1]);
  ck_assert_uint_eq(b->bad_icrc, 1);
  ck_assert_uint_eq(b->tx_naks, 1); /* then handled as a loss */
  ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->go_back_n, 1);
  wire_free(&w);
}
END_TEST

START_TEST(ipv6_icrc) {
  wire_t w;
  uroce_test_ipv6 = true;
  wire_init(&w, 0, 20, true);
  post(&w, 0, 1, 10000, true, 6);
  wire_run(&w, UINT64_MAX);
  uroce_test_ipv6 = false;
  assert_one_message(&w, 10000, 6);
  ck_assert_uint_eq(w.data_pkts[0], 3);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[1])->bad_icrc, 0);
  wire_free(&w);
}
END_TEST

/* ---- limits ---- */

START_TEST(config_checks) {
  jct_uroce_cfg_t c;
  jct_uroce_qp_t *qp = (jct_uroce_qp_t *)&c;
  char err[128];
  jct_uroce_cfg_init(&c);
  ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), JCT_EINVAL); /* no addresses */
  ck_assert_ptr_null(qp);
  ck_assert_ptr_nonnull(strstr(err, "IPv4"));
  addr4(&c.local, "198.18.0.1");
  addr6(&c.remote, "2001:2::2");
  ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), JCT_EINVAL);
  addr4(&c.remote, "198.18.0.2");
  uint32_t mtus[] = {0, 128, 1000, 8192};
  for (unsigned k = 0; k < 4; k++) {
    c.path_mtu_bytes = mtus[k];
    ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), JCT_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "MTU"));
  }
  c.path_mtu_bytes = 256;
  c.timeout = 32;
  ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "timeout 32"));
  c.timeout = 0;
  c.retry_cnt = 8;
  ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), JCT_EINVAL);
  c.retry_cnt = 0;
  c.local_qpn = 0x1000000;
  ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), JCT_EINVAL);
  c.local_qpn = 0x11;
  c.sq_depth = 2;
  ck_assert_int_eq(jct_uroce_qp_create(&c, &qp, err, sizeof err), 0);
  /* rxe's source port: 0xc000 + 14 bits of hash_32(qpn). */
  ck_assert_uint_eq(jct_uroce_udp_sport(qp), 0xc000 + ((0x11u * 0x61c88647u) >> 18));
  ck_assert_uint_ge(jct_uroce_udp_sport(qp), 0xc000);
  ck_assert_uint_eq(jct_uroce_max_packet_bytes(qp), 12 + 16 + 4 + 256 + 4);
  jct_uroce_wr_t wr = {.bytes = 1000};
  ck_assert_int_eq(jct_uroce_post_write(qp, &wr, err, sizeof err), 0);
  ck_assert_int_eq(jct_uroce_post_write(qp, &wr, err, sizeof err), 0);
  ck_assert_int_eq(jct_uroce_post_write(qp, &wr, err, sizeof err), JCT_ENOMEM);
  /* timeout 0: no retransmit timer at all. */
  uint8_t buf[MAXPKT];
  size_t n = jct_uroce_next_packet(qp, 5, buf, sizeof buf);
  ck_assert_uint_eq(n, 12 + 16 + 256 + 4);                      /* FIRST: BTH + RETH + 256 + ICRC */
  ck_assert_uint_eq(jct_uroce_next_packet(qp, 5, buf, 100), 0); /* cap too small */
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(qp), UINT64_MAX);
  /* receive: short, wrong QP, unknown opcode after a good ICRC */
  ck_assert_int_eq(jct_uroce_rx(qp, buf, 10, 1, 6), JCT_UROCE_RX_MALFORMED);
  ck_assert_uint_eq(jct_uroce_dest_qpn(buf, n), 0); /* remote_qpn 0 */
  ck_assert_uint_eq(jct_uroce_dest_qpn(buf, 3), UINT32_MAX);
  jct_uroce_qp_destroy(qp);
}
END_TEST

START_TEST(rx_checks) {
  wire_t w;
  wire_init(&w, 0, 20, false);
  post(&w, 0, 1, 100, true, 1);
  uint8_t buf[MAXPKT];
  size_t n = jct_uroce_next_packet(w.qp[0], 0, buf, sizeof buf);
  ck_assert_uint_eq(n, 12 + 16 + 4 + 100 + 4);
  uint16_t sport = jct_uroce_udp_sport(w.qp[0]);
  /* The wrong source port is in the ICRC: dropped as corrupt. */
  ck_assert_int_eq(jct_uroce_rx(w.qp[1], buf, n, (uint16_t)(sport + 1), 1), JCT_UROCE_RX_BAD_ICRC);
  /* A's own packet fed back to A: valid ICRC only from B's side. */
  ck_assert_int_eq(jct_uroce_rx(w.qp[0], buf, n, sport, 1), JCT_UROCE_RX_BAD_ICRC);
  ck_assert_int_eq(jct_uroce_rx(w.qp[1], buf, n, sport, 1), JCT_UROCE_RX_ACCEPTED);
  ck_assert_int_eq(jct_uroce_rx(w.qp[1], buf, n, sport, 2), JCT_UROCE_RX_DUPLICATE);
  ck_assert_uint_eq(w.nrecv[1], 1);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[1])->bad_icrc, 1);
  ck_assert_uint_eq(jct_uroce_stats(w.qp[0])->bad_icrc, 1);
  /* One coalesced ACK is owed for the accepted packet and the duplicate. */
  uint8_t ack[64];
  size_t m = jct_uroce_next_packet(w.qp[1], 3, ack, sizeof ack);
  ck_assert_uint_eq(m, 0); /* cap below a data packet: refused */
  static uint8_t big[MAXPKT];
  m = jct_uroce_next_packet(w.qp[1], 3, big, sizeof big);
  ck_assert_uint_eq(m, 12 + 4 + 4);
  struct jct_roce_hdrs h;
  ck_assert_uint_eq(jct_roce_parse(big, m - 4, &h), 16);
  ck_assert_uint_eq(h.bth.opcode, JCT_OP_RC_ACKNOWLEDGE);
  ck_assert_uint_eq(h.aeth.syndrome, 0x1f);
  ck_assert_uint_eq(h.aeth.msn, 1);
  ck_assert_uint_eq(h.bth.psn, 0);
  ck_assert_uint_eq(h.bth.dest_qp, 0x11);
  ck_assert_uint_eq(jct_uroce_next_packet(w.qp[1], 3, big, sizeof big), 0);
  ck_assert_int_eq(jct_uroce_rx(w.qp[0], big, m, jct_uroce_udp_sport(w.qp[1]), 4),
                   JCT_UROCE_RX_ACCEPTED);
  ck_assert_uint_eq(w.ndone[0], 1);
  /* The same ACK again: a repeat without progress. A future one: stale. */
  ck_assert_int_eq(jct_uroce_rx(w.qp[0], big, m, jct_uroce_udp_sport(w.qp[1]), 5),
                   JCT_UROCE_RX_ACCEPTED);
  ck_assert_uint_eq(w.ndone[0], 1);
  wire_free(&w);
}
END_TEST

Suite *uroce_suite(void) {
  Suite *s = suite_create("uroce");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 60);
  tcase_add_test(core, one_mib_with_cts);
  tcase_add_test(core, ackreq_placement);
  tcase_add_test(core, psn_wrap);
  tcase_add_test(core, window_128);
  tcase_add_test(core, drop_middle);
  tcase_add_test(core, drop_last);
  tcase_add_test(core, nak_during_a_go_back_is_ignored);
  tcase_add_test(core, slow_host_turnaround);
  tcase_add_test(core, captured_go_back_depth);
  tcase_add_test(core, captured_go_back_each_repetition);
  tcase_add_test(core, captured_nak_lag);
  tcase_add_test(core, captured_hole_holds_depth);
  tcase_add_test(core, captured_hole_not_lost);
  tcase_add_test(core, captured_go_back_held);
  tcase_add_test(core, captured_go_back_stalls);
  tcase_add_test(core, captured_ignored_nak_holds_timer);
  tcase_add_test(core, captured_timer_go_back);
  tcase_add_test(core, captured_timer_reference);
  tcase_add_test(core, rep_start_retires_previous);
  tcase_add_test(core, captured_stall_holds);
  tcase_add_test(core, captured_stall_stops_own_timer);
  tcase_add_test(core, captured_go_backs_keep_capture_order);
  tcase_add_test(core, drop_ack);
  tcase_add_test(core, retry_exceeded);
  tcase_add_test(core, pause_holds_sending);
  tcase_add_test(core, bad_icrc_dropped);
  tcase_add_test(core, ipv6_icrc);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, config_checks);
  tcase_add_test(limits, rx_checks);
  suite_add_tcase(s, limits);
  suite_add_tcase(s, uroce_ranks_tcase());
  return s;
}
