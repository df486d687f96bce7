/* Fuzz target for the uroce receive path (include/jctlab/uroce.h): two RC
 * QPs, A (198.18.0.1, QPN 0x11) and B (198.18.0.2, QPN 0x22), each with
 * messages posted, talk to each other through the fixture, and the fuzz
 * input is fed to them as received UDP payloads between rounds of their
 * real traffic, losses, duplicates, reordering, PFC pauses and timer
 * expiries. Both the requester/completer (ACKs and NAKs at A and B) and the
 * responder (RDMA WRITE requests) see garbage, near-valid packets (the ICRC
 * and the destination QP can be made right, fuzz_uroce.h) and real ones.
 * The input format is in fuzz_uroce.h.
 *
 * abort() when uroce breaks a promise it states:
 *  - no counter ever decreases; rx_pkts grows by one per jct_uroce_rx();
 *    the counter named by the rx result grows (bad_icrc, rx_malformed,
 *    rx_wrong_qp, dup_pkts, out_of_seq_pkts); tx_pkts/tx_bytes grow by one
 *    packet and its length per packet produced; msgs_sent and msgs_recv
 *    equal the SUCCESS completions and RECV events delivered;
 *  - a packet produced is at most jct_uroce_max_packet_bytes(), a multiple
 *    of 4 bytes, addressed to the peer's QPN, parses as an ACK or an RC
 *    RDMA WRITE, and carries the ICRC computed here independently over the
 *    IPv4/UDP header uroce.h says Linux writes; delivered unchanged, the
 *    peer never calls it bad, malformed or for another QP;
 *  - nothing is produced while paused or in error; an error is final; in
 *    error there is no deadline; after jct_uroce_on_timer(now) the next
 *    deadline is later than now;
 *  - completions come once each, in posting order, with the posted length,
 *    at the current time; RETRY_EXC_ERR only in error; a refused post gets
 *    none;
 *  - at the end, with a retransmit timer, lossless exchange completes every
 *    posted message (success or error), and when no forged packet was
 *    accepted and neither QP failed, every message succeeded and each side
 *    received exactly the other's messages (length, immediate) in order.
 *
 * Built with libFuzzer when JCT_FUZZ is on; without it, replay_main.c
 * replays files through the same function (ctest: fuzz_uroce_corpus). The
 * seeds in fuzz/corpus/uroce/ come from uroce_seeds.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_uroce.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"

/* Called by libFuzzer, or by replay_main.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_POSTS 4
#define LOG_RECVS 8
#define MAX_RECORDS 4096
#define EXCHANGE_ROUNDS 1024
#define FINISH_ROUNDS 4096
#define PAUSE_NS 2000000u
#define NSTATS (sizeof(jct_uroce_stats_t) / sizeof(uint64_t))

_Static_assert(sizeof(jct_uroce_stats_t) % sizeof(uint64_t) == 0,
               "jct_uroce_stats_t is all uint64_t counters");

struct msg {
  uint64_t wr_id;
  uint32_t bytes;
  bool has_imm;
  uint32_t imm;
};

struct side {
  jct__upair_t *pair;
  jct_uroce_qp_t *qp;
  struct msg posted[MAX_POSTS];
  uint32_t nposted;
  uint32_t done, ok; /* SEND_DONE events, and those with SUCCESS */
  struct msg recv[LOG_RECVS];
  uint64_t nrecv;        /* RECV events */
  uint64_t last[NSTATS]; /* the counters at the last check */
  bool was_in_error;
};

struct jct__upair {
  struct side s[2];
  uint64_t now_ns;
  uint64_t paused_until_ns; /* both ranks' PFC pause */
  bool timer;               /* the QPs have a retransmit timer */
  bool forged_accepted;     /* a packet from the input changed a QP's state */
  jct__upair_tap_fn tap;
  void *tap_arg;
  uint8_t buf[JCT_UROCE_MAX_PACKET_BYTES];
};

static void broken(const char *what, int side) {
  fprintf(stderr, "fuzz_uroce: QP %c: %s\n", side ? 'B' : 'A', what);
  abort();
}

static void put24(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 16);
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)v;
}

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void stats_of(const struct side *s, uint64_t *out) {
  memcpy(out, jct_uroce_stats(s->qp), sizeof(jct_uroce_stats_t));
}

/* After any call: counters never decrease, errors are final, completions
 * and receptions match their counters. */
static void check_side(struct side *s, int i) {
  uint64_t now[NSTATS];
  stats_of(s, now);
  for (size_t k = 0; k < NSTATS; k++)
    if (now[k] < s->last[k]) broken("a counter decreased", i);
  memcpy(s->last, now, sizeof now);
  const jct_uroce_stats_t *st = jct_uroce_stats(s->qp);
  if (st->msgs_sent != s->ok) broken("msgs_sent differs from the successful SEND_DONEs", i);
  if (st->msgs_recv != s->nrecv) broken("msgs_recv differs from the RECV events", i);
  bool err = jct_uroce_in_error(s->qp);
  if (s->was_in_error && !err) broken("left the error state", i);
  s->was_in_error = err;
  if (err && jct_uroce_next_deadline_ns(s->qp) != UINT64_MAX) broken("a deadline in error", i);
}

static void check_both(jct__upair_t *p) {
  check_side(&p->s[0], 0);
  check_side(&p->s[1], 1);
}

static void on_event(jct_uroce_qp_t *qp, const jct_uroce_event_t *ev) {
  struct side *s = jct_uroce_data(qp);
  int i = s == &s->pair->s[0] ? 0 : 1;
  if (s->qp != qp) broken("event for another QP", i);
  if (ev->time_ns != s->pair->now_ns) broken("event time is not the current time", i);
  if (ev->type == JCT_UROCE_EV_SEND_DONE) {
    if (s->done >= s->nposted) broken("more SEND_DONEs than messages posted", i);
    const struct msg *m = &s->posted[s->done++];
    if (ev->wr_id != m->wr_id || ev->bytes != m->bytes) broken("SEND_DONE out of order", i);
    if (ev->status == JCT_UROCE_WC_SUCCESS) {
      if (jct_uroce_in_error(qp)) broken("SUCCESS from a QP in error", i);
      s->ok++;
    } else if (ev->status == JCT_UROCE_WC_RETRY_EXC_ERR) {
      if (!jct_uroce_in_error(qp)) broken("RETRY_EXC_ERR from a QP not in error", i);
    } else {
      broken("SEND_DONE with an unknown status", i);
    }
  } else if (ev->type == JCT_UROCE_EV_RECV) {
    if (ev->status != JCT_UROCE_WC_SUCCESS) broken("RECV that is not SUCCESS", i);
    if (!ev->has_imm && ev->imm) broken("RECV with imm but no has_imm", i);
    if (s->nrecv < LOG_RECVS) s->recv[s->nrecv] = (struct msg){0, ev->bytes, ev->has_imm, ev->imm};
    s->nrecv++;
  } else {
    broken("event of unknown type", i);
  }
}

/* The ICRC the peer of `to` puts on pkt/len, over the IPv4 and UDP header
 * uroce.h says Linux writes (ID 0, DF, protocol 17, UDP checksum 0);
 * computed here, not by uroce. 0 when len is too short. */
static uint32_t peer_icrc(const jct__upair_t *p, int to, const uint8_t *pkt, size_t len) {
  const jct_uroce_qp_t *from = p->s[1 - to].qp;
  size_t total = 20 + 8 + len;
  if (len < JCT_ICRC_BYTES || total > 0xffff) return 0;
  uint8_t *ip = calloc(1, total);
  if (!ip) return 0;
  ip[0] = 0x45;
  put16(ip + 2, (uint16_t)total);
  put16(ip + 6, 0x4000);
  ip[8] = 64;
  ip[9] = 17;
  ip[12] = 198, ip[13] = 18, ip[15] = (uint8_t)(to == UPAIR_A ? 2 : 1); /* from the peer */
  ip[16] = 198, ip[17] = 18, ip[19] = (uint8_t)(to == UPAIR_A ? 1 : 2); /* to `to` */
  put16(ip + 20, jct_uroce_udp_sport(from));
  put16(ip + 22, JCT_ROCEV2_UDP_PORT);
  put16(ip + 24, (uint16_t)(8 + len));
  memcpy(ip + 28, pkt, len);
  uint32_t icrc = jct_icrc(ip, total - JCT_ICRC_BYTES);
  free(ip);
  return icrc;
}

/* jct_uroce_rx() on an exact-size copy of pkt, with every check. */
static jct_uroce_rx_t deliver(jct__upair_t *p, int to, const uint8_t *pkt, size_t len,
                              bool forged) {
  struct side *s = &p->s[to];
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy) return JCT_UROCE_RX_IGNORED;
  if (len) memcpy(copy, pkt, len);
  jct_uroce_stats_t before = *jct_uroce_stats(s->qp);
  uint32_t dest = jct_uroce_dest_qpn(copy, len);
  jct_uroce_rx_t r =
      jct_uroce_rx(s->qp, copy, len, jct_uroce_udp_sport(p->s[1 - to].qp), p->now_ns);
  free(copy);
  const jct_uroce_stats_t *st = jct_uroce_stats(s->qp);
  if (st->rx_pkts != before.rx_pkts + 1) broken("rx_pkts did not grow by one", to);
  if ((len < JCT_BTH_BYTES) != (dest == UINT32_MAX)) broken("dest_qpn wrong about length", to);
  switch (r) {
  case JCT_UROCE_RX_ACCEPTED:
    if (forged) p->forged_accepted = true;
    break;
  case JCT_UROCE_RX_IGNORED:
    break;
  case JCT_UROCE_RX_DUPLICATE:
    if (st->dup_pkts != before.dup_pkts + 1) broken("DUPLICATE not counted", to);
    break;
  case JCT_UROCE_RX_OUT_OF_SEQ:
    if (st->out_of_seq_pkts != before.out_of_seq_pkts + 1) broken("OUT_OF_SEQ not counted", to);
    break;
  case JCT_UROCE_RX_BAD_ICRC:
    if (st->bad_icrc != before.bad_icrc + 1) broken("BAD_ICRC not counted", to);
    break;
  case JCT_UROCE_RX_MALFORMED:
    if (st->rx_malformed != before.rx_malformed + 1) broken("MALFORMED not counted", to);
    break;
  case JCT_UROCE_RX_WRONG_QP:
    if (st->rx_wrong_qp != before.rx_wrong_qp + 1) broken("WRONG_QP not counted", to);
    if (dest == jct_uroce_local_qpn(s->qp)) broken("WRONG_QP for its own QPN", to);
    break;
  default:
    broken("unknown rx result", to);
  }
  if (len < JCT_BTH_BYTES + JCT_ICRC_BYTES && r != JCT_UROCE_RX_MALFORMED)
    broken("a packet shorter than BTH + ICRC was not MALFORMED", to);
  if (!forged &&
      (r == JCT_UROCE_RX_BAD_ICRC || r == JCT_UROCE_RX_MALFORMED || r == JCT_UROCE_RX_WRONG_QP))
    broken("refused a packet its peer produced", to);
  check_both(p);
  return r;
}

/* jct_uroce_next_packet() into p->buf, with every check. */
static size_t pull(jct__upair_t *p, int from) {
  struct side *s = &p->s[from];
  jct_uroce_stats_t before = *jct_uroce_stats(s->qp);
  bool was_paused = p->now_ns < p->paused_until_ns, in_error = jct_uroce_in_error(s->qp);
  size_t n = jct_uroce_next_packet(s->qp, p->now_ns, p->buf, sizeof p->buf);
  const jct_uroce_stats_t *st = jct_uroce_stats(s->qp);
  if (!n) {
    if (st->tx_pkts != before.tx_pkts || st->tx_bytes != before.tx_bytes)
      broken("counted a packet it did not produce", from);
    check_both(p);
    return 0;
  }
  if (was_paused) broken("produced a packet while paused", from);
  if (in_error) broken("produced a packet in error", from);
  if (n > jct_uroce_max_packet_bytes(s->qp)) broken("packet above max_packet_bytes", from);
  if (n < JCT_BTH_BYTES + JCT_ICRC_BYTES || n % 4) broken("packet of an impossible length", from);
  if (st->tx_pkts != before.tx_pkts + 1 || st->tx_bytes != before.tx_bytes + n)
    broken("tx_pkts/tx_bytes do not count the packet", from);
  if (jct_uroce_dest_qpn(p->buf, n) != jct_uroce_local_qpn(p->s[1 - from].qp))
    broken("packet not addressed to the peer", from);
  struct jct_roce_hdrs h;
  size_t hdr = jct_roce_parse(p->buf, n - JCT_ICRC_BYTES, &h);
  if (!hdr || hdr + h.bth.pad_count > n - JCT_ICRC_BYTES) broken("packet does not parse", from);
  if (h.bth.opcode != JCT_OP_RC_ACKNOWLEDGE &&
      !(h.bth.opcode >= JCT_OP_RC_RDMA_WRITE_FIRST &&
        h.bth.opcode <= JCT_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE))
    broken("packet neither ACK nor RDMA WRITE", from);
  if (peer_icrc(p, 1 - from, p->buf, n) != get_le32(p->buf + n - JCT_ICRC_BYTES))
    broken("ICRC differs from the one over the documented IP/UDP header", from);
  check_both(p);
  if (p->tap) p->tap(p->tap_arg, from, p->buf, n);
  return n;
}

/* The real traffic: pull from A and B in turn until neither has anything. */
static void exchange(jct__upair_t *p, int mode) {
  uint8_t *held = NULL;
  size_t held_len = 0;
  int held_to = 0;
  unsigned count = 0;
  if (mode == UPAIR_X_NONE) return;
  if (mode == UPAIR_X_PAUSE) p->paused_until_ns = p->now_ns + PAUSE_NS;
  for (unsigned round = 0; round < EXCHANGE_ROUNDS; round++) {
    bool any = false;
    for (int from = 0; from < 2; from++) {
      size_t n = pull(p, from);
      if (!n) continue;
      any = true;
      count++;
      if ((mode == UPAIR_X_DROP_FIRST && count == 1) || (mode == UPAIR_X_DROP_A && from == 0) ||
          (mode == UPAIR_X_DROP_B && from == 1))
        continue;
      if (mode == UPAIR_X_REORDER && count == 1 && (held = malloc(n)) != NULL) {
        memcpy(held, p->buf, n);
        held_len = n;
        held_to = 1 - from;
        continue;
      }
      /* deliver() copies: p->buf is free again after it */
      deliver(p, 1 - from, p->buf, n, false);
      if (mode == UPAIR_X_DUP) {
        /* the copy in p->buf was not touched by rx */
        deliver(p, 1 - from, p->buf, n, false);
      }
    }
    if (!any) break;
  }
  if (held) {
    deliver(p, held_to, held, held_len, false);
    free(held);
  }
}

static uint64_t next_deadline(const jct__upair_t *p) {
  uint64_t a = jct_uroce_next_deadline_ns(p->s[0].qp), b = jct_uroce_next_deadline_ns(p->s[1].qp);
  return a < b ? a : b;
}

static void run_timers(jct__upair_t *p) {
  for (int i = 0; i < 2; i++) {
    jct_uroce_on_timer(p->s[i].qp, p->now_ns);
    if (jct_uroce_next_deadline_ns(p->s[i].qp) <= p->now_ns)
      broken("deadline not after the on_timer() that handled it", i);
    check_both(p);
  }
}

static void advance(jct__upair_t *p, int mode) {
  uint64_t d;
  switch (mode) {
  case UPAIR_CLOCK_100US:
    p->now_ns += 100000;
    break;
  case UPAIR_CLOCK_5MS:
    p->now_ns += 5000000;
    break;
  case UPAIR_CLOCK_DEADLINE:
    d = next_deadline(p);
    if (d != UINT64_MAX && d > p->now_ns) p->now_ns = d;
    break;
  default:
    break;
  }
}

static int make_qp(jct__upair_t *p, int i, uint8_t config) {
  static const uint8_t retry[4] = {0, 1, 3, 7};
  jct_uroce_cfg_t cfg;
  char err[128];
  jct_uroce_cfg_init(&cfg);
  uint32_t sq[2] = {0x000100, 0xabcdef};
  if (config & UPAIR_CFG_WRAP) sq[0] = 0xfffffe, sq[1] = 0xffffff;
  cfg.local_qpn = i ? 0x22 : 0x11;
  cfg.remote_qpn = i ? 0x11 : 0x22;
  cfg.sq_psn = sq[i];
  cfg.rq_psn = sq[1 - i];
  cfg.path_mtu_bytes = 256u << (config & 7) % 5;
  cfg.timeout = config & UPAIR_CFG_NO_TIMER ? 0 : 8; /* 4.096 us << 8: 1.05 ms */
  cfg.retry_cnt = retry[(config >> 4) & 3];
  cfg.local.family = cfg.remote.family = 4;
  memcpy(cfg.local.bytes, (uint8_t[]){198, 18, 0, (uint8_t)(i + 1)}, 4);
  memcpy(cfg.remote.bytes, (uint8_t[]){198, 18, 0, (uint8_t)(2 - i)}, 4);
  cfg.udp_sport = i ? 0xc123 : 0; /* B: chosen; A: rxe's hash of the QPN */
  cfg.sq_depth = config & UPAIR_CFG_SQ2 ? 2 : 8;
  cfg.paused_until_ns = &p->paused_until_ns;
  cfg.cb = on_event;
  cfg.data = &p->s[i];
  p->s[i].pair = p;
  if (jct_uroce_qp_create(&cfg, &p->s[i].qp, err, sizeof err) != 0) return -1;
  if (jct_uroce_max_packet_bytes(p->s[i].qp) > JCT_UROCE_MAX_PACKET_BYTES)
    broken("max_packet_bytes above JCT_UROCE_MAX_PACKET_BYTES", i);
  return 0;
}

static void post(jct__upair_t *p, int i, uint64_t wr_id, uint32_t bytes, bool has_imm,
                 uint32_t imm) {
  struct side *s = &p->s[i];
  jct_uroce_wr_t wr = {.wr_id = wr_id,
                       .bytes = bytes,
                       .has_imm = has_imm,
                       .imm = imm,
                       .remote_va = 0x10000 * wr_id,
                       .rkey = 0};
  char err[128] = "";
  int rc = jct_uroce_post_write(s->qp, &wr, err, sizeof err);
  if (rc == 0 && s->nposted < MAX_POSTS) {
    s->posted[s->nposted++] = (struct msg){wr_id, bytes, has_imm, has_imm ? imm : 0};
  } else if (rc != JCT_ENOMEM || !err[0]) {
    broken("post failed other than with a full send queue", i);
  }
}

jct__upair_t *jct__upair_new(uint8_t config, jct__upair_tap_fn tap, void *arg) {
  jct__upair_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->tap = tap;
  p->tap_arg = arg;
  p->timer = !(config & UPAIR_CFG_NO_TIMER);
  if (make_qp(p, 0, config) || make_qp(p, 1, config)) {
    jct__upair_free(p);
    return NULL;
  }
  uint32_t mtu = 256u << (config & 7) % 5;
  post(p, 0, 1, 2 * mtu + 100, true, 0xa1a1a1a1);
  if (jct_uroce_post_cts(p->s[0].qp, 2, NULL, 0) != 0) broken("CTS post failed", 0);
  p->s[0].posted[p->s[0].nposted++] = (struct msg){2, JCT_UROCE_CTS_BYTES, false, 0};
  post(p, 0, 3, 0, true, 0xa3); /* refused when the send queue holds 2 */
  if ((config & UPAIR_CFG_SQ2) && p->s[0].nposted != 2) broken("a third post fitted in 2", 0);
  post(p, 1, 11, mtu, false, 0);
  check_both(p);
  return p;
}

void jct__upair_step(jct__upair_t *p, uint8_t ctl, const uint8_t *bytes, size_t len) {
  advance(p, ctl >> 6);
  run_timers(p);
  exchange(p, (ctl >> 3) & 7);
  int to = ctl & UPAIR_TO_A ? UPAIR_A : UPAIR_B;
  uint8_t *pkt = malloc(len ? len : 1);
  if (!pkt) return;
  if (len) memcpy(pkt, bytes, len);
  if ((ctl & UPAIR_FIX_QPN) && len >= JCT_BTH_BYTES)
    put24(pkt + 5, jct_uroce_local_qpn(p->s[to].qp));
  if ((ctl & UPAIR_FIX_ICRC) && len >= JCT_ICRC_BYTES) {
    uint32_t icrc = peer_icrc(p, to, pkt, len);
    for (int k = 0; k < 4; k++)
      pkt[len - 4 + (size_t)k] = (uint8_t)(icrc >> (8 * k));
  }
  if (len) deliver(p, to, pkt, len, true);
  free(pkt);
}

static bool same_msgs(const struct msg *sent, uint32_t nsent, const struct side *rx) {
  if (rx->nrecv != nsent) return false;
  for (uint32_t k = 0; k < nsent && k < LOG_RECVS; k++)
    if (sent[k].bytes != rx->recv[k].bytes || sent[k].has_imm != rx->recv[k].has_imm ||
        sent[k].imm != rx->recv[k].imm)
      return false;
  return true;
}

void jct__upair_finish(jct__upair_t *p) {
  if (!p->timer) return; /* without a timer, a lost packet stalls a QP for good (IBA) */
  for (unsigned round = 0; round < FINISH_ROUNDS; round++) {
    exchange(p, UPAIR_X_ALL);
    if (p->s[0].done == p->s[0].nposted && p->s[1].done == p->s[1].nposted) break;
    uint64_t d = next_deadline(p);
    if (d == UINT64_MAX) break;
    if (d > p->now_ns) p->now_ns = d;
    run_timers(p);
  }
  for (int i = 0; i < 2; i++)
    if (p->s[i].done != p->s[i].nposted) broken("a posted message never completed", i);
  if (p->forged_accepted || jct_uroce_in_error(p->s[0].qp) || jct_uroce_in_error(p->s[1].qp))
    return;
  for (int i = 0; i < 2; i++) {
    if (p->s[i].ok != p->s[i].nposted) broken("a message failed without an error", i);
    if (!same_msgs(p->s[i].posted, p->s[i].nposted, &p->s[1 - i]))
      broken("the peer received other messages than were sent", i);
  }
}

void jct__upair_free(jct__upair_t *p) {
  if (!p) return;
  jct_uroce_qp_destroy(p->s[0].qp);
  jct_uroce_qp_destroy(p->s[1].qp);
  free(p);
}

const jct_uroce_qp_t *jct__upair_qp(const jct__upair_t *p, int side) {
  return p->s[side ? 1 : 0].qp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  jct__upair_t *p = jct__upair_new(data[0], NULL, NULL);
  if (!p) return 0;
  size_t at = 1;
  for (unsigned rec = 0; rec < MAX_RECORDS && at + 3 <= size; rec++) {
    uint8_t ctl = data[at];
    size_t len = (size_t)data[at + 1] << 8 | data[at + 2];
    at += 3;
    if (len > size - at) len = size - at;
    jct__upair_step(p, ctl, data + at, len);
    at += len;
  }
  jct__upair_finish(p);
  jct__upair_free(p);
  return 0;
}
