/* The switch model (include/jctlab/switch.h) on a fake clock: forwarding,
 * flooding, classification, serialization timing, strict priority, buffer
 * overflow, PFC (generation at the thresholds, an incast without loss,
 * reception), the PFC watchdog, ECN marking, hooks (and their duplicates),
 * bad configuration.
 * Every scenario ends by asserting the accounting identities. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/switch.h"
#include "suites.h"

#define MS 1000000ull

static uint64_t max64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

/* ---- frames ---------------------------------------------------------- */

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static unsigned be16(const uint8_t *p) {
  return (unsigned)p[0] << 8 | p[1];
}

static void host_mac(uint8_t m[6], unsigned i) {
  const uint8_t b[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, (uint8_t)(i + 1)};
  memcpy(m, b, 6);
}

static uint16_t ip_sum(const uint8_t *h, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2)
    s += (uint32_t)h[i] << 8 | h[i + 1];
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return (uint16_t)s;
}

typedef struct {
  const uint8_t *dst; /* NULL: broadcast */
  unsigned src_host;
  int pcp;   /* -1: untagged */
  int ipver; /* 0 (ethertype 0x88b5), 4 or 6 */
  unsigned dscp, ecn;
  size_t len;
} fspec_t;

static size_t mk(uint8_t *b, const fspec_t *s) {
  memset(b, 0, s->len);
  if (s->dst)
    memcpy(b, s->dst, 6);
  else
    memset(b, 0xff, 6);
  host_mac(b + 6, s->src_host);
  size_t o = 12;
  if (s->pcp >= 0) {
    put16(b + 12, 0x8100);
    put16(b + 14, (unsigned)s->pcp << 13 | 7);
    o = 16;
  }
  uint8_t tos = (uint8_t)(s->dscp << 2 | s->ecn);
  if (s->ipver == 4) {
    put16(b + o, 0x0800);
    uint8_t *h = b + o + 2;
    h[0] = 0x45;
    h[1] = tos;
    put16(h + 2, (unsigned)(s->len - o - 2));
    h[8] = 64;
    h[9] = 17;
    h[12] = 198, h[13] = 18, h[15] = 1;
    h[16] = 198, h[17] = 18, h[19] = 2;
    put16(h + 10, (uint16_t)~ip_sum(h, 20));
  } else if (s->ipver == 6) {
    put16(b + o, 0x86dd);
    uint8_t *h = b + o + 2;
    h[0] = (uint8_t)(0x60 | tos >> 4);
    h[1] = (uint8_t)(tos << 4);
    h[6] = 17;
    h[7] = 64;
  } else {
    put16(b + o, 0x88b5);
  }
  return s->len;
}

/* ---- a recording emitter and a fake-clock driver ---------------------- */

typedef struct {
  uint32_t port;
  size_t len;
  uint64_t t;
  uint8_t b[128];
  bool pfc;
} out_t;

typedef struct {
  out_t *o;
  size_t n, cap;
} rec_t;

static void on_emit(uint32_t port, const uint8_t *f, size_t len, uint64_t t, void *arg) {
  rec_t *r = arg;
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    r->o = realloc(r->o, r->cap * sizeof *r->o);
    ck_assert_ptr_nonnull(r->o);
  }
  out_t *o = &r->o[r->n++];
  o->port = port;
  o->len = len;
  o->t = t;
  memcpy(o->b, f, len < sizeof o->b ? len : sizeof o->b);
  o->pfc = len >= 16 && f[12] == 0x88 && f[13] == 0x08;
  if (r->n > 1) ck_assert_uint_ge(t, r->o[r->n - 2].t); /* departure order */
}

/* Poll at every deadline up to until. */
static void run_until(jct_switch_t *sw, uint64_t until, rec_t *r) {
  for (uint64_t d; (d = jct_switch_next_deadline_ns(sw)) <= until;)
    ck_assert_uint_gt(jct_switch_poll(sw, d, on_emit, r) + 1, 0);
  jct_switch_poll(sw, until, on_emit, r);
}

static void check_ok(const jct_switch_t *sw) {
  char err[256] = "";
  int rc = jct_switch_check(sw, err, sizeof err);
  ck_assert_msg(rc == 0, "accounting: %s", err);
}

static jct_switch_t *mksw(const jct_switch_config_t *c) {
  jct_switch_t *sw;
  char err[256] = "";
  int rc = jct_switch_new(&sw, c, err, sizeof err);
  ck_assert_msg(rc == 0, "switch_new: %s", err);
  for (unsigned i = 0; i < c->nports; i++) {
    uint8_t m[6];
    host_mac(m, i);
    ck_assert_int_eq(jct_switch_add_mac(sw, m, i), 0);
  }
  return sw;
}

static jct_switch_port_stats_t pst(const jct_switch_t *sw, uint32_t p, uint64_t now) {
  jct_switch_port_stats_t s;
  ck_assert_int_eq(jct_switch_port_stats(sw, p, now, &s), 0);
  return s;
}

static const uint8_t mac_control_dst[6] = {0x01, 0x80, 0xc2, 0, 0, 1};

/* 802.3x PAUSE (all priorities). */
static size_t mk_pause(uint8_t *b, uint16_t quanta) {
  memset(b, 0, 60);
  memcpy(b, mac_control_dst, 6);
  host_mac(b + 6, 9);
  put16(b + 12, 0x8808);
  put16(b + 14, 0x0001);
  put16(b + 16, quanta);
  return 60;
}

/* ---- core -------------------------------------------------------------- */

/* A frame to a known MAC leaves by that port only, unchanged; one to a MAC
 * on its own ingress port is filtered. */
START_TEST(forward_by_mac) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 4, 1000000000);
  jct_switch_t *sw = mksw(&c);
  uint8_t m2[6], m0[6], b[1500];
  host_mac(m2, 2);
  host_mac(m0, 0);
  size_t n = mk(b, &(fspec_t){m2, 0, -1, 4, 26, 0, 200});
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, 0), 0);
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(r.n, 1);
  ck_assert_uint_eq(r.o[0].port, 2);
  ck_assert_uint_eq(r.o[0].len, 200);
  ck_assert_mem_eq(r.o[0].b, b, 128);
  n = mk(b, &(fspec_t){m0, 1, -1, 4, 0, 0, 100});
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, MS), JCT_SW_DROP_SAME_PORT);
  jct_switch_port_stats_t s0 = pst(sw, 0, MS), s2 = pst(sw, 2, MS);
  ck_assert_uint_eq(s0.rx_frames, 2);
  ck_assert_uint_eq(s0.rx_drops[JCT_SW_DROP_SAME_PORT], 1);
  ck_assert_uint_eq(s2.tx_frames, 1);
  ck_assert_uint_eq(s2.tx_bytes, 200);
  ck_assert_uint_eq(s0.floods, 0);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* Broadcast and unknown unicast go to every port but the ingress. */
START_TEST(flood) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 4, 1000000000);
  jct_switch_t *sw = mksw(&c);
  uint8_t b[200], unknown[6] = {0x02, 0x99, 0, 0, 0, 1};
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk(b, &(fspec_t){NULL, 1, -1, 0, 0, 0, 64}), 0), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk(b, &(fspec_t){unknown, 1, -1, 4, 0, 0, 64}), 0), 0);
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(r.n, 6);
  unsigned per[4] = {0};
  for (size_t i = 0; i < r.n; i++)
    per[r.o[i].port]++;
  ck_assert_uint_eq(per[0], 2);
  ck_assert_uint_eq(per[1], 0);
  ck_assert_uint_eq(per[2], 2);
  ck_assert_uint_eq(per[3], 2);
  jct_switch_port_stats_t s1 = pst(sw, 1, MS);
  ck_assert_uint_eq(s1.floods, 2);
  ck_assert_uint_eq(s1.copies, 6);
  jct_switch_totals_t t;
  jct_switch_totals(sw, &t);
  ck_assert_uint_eq(t.tx_frames, 6);
  ck_assert_uint_eq(t.rx_frames, 2);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* PCP when tagged, else the DSCP map (default DSCP >> 3, reconfigurable),
 * else default_prio: seen as the ingress charge per priority. */
START_TEST(classify_priority) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 2, 1000000000);
  c.dscp_to_prio[46] = 6;
  c.default_prio = 1;
  jct_switch_t *sw = mksw(&c);
  uint8_t m1[6], b[300];
  host_mac(m1, 1);
  /* an 802.3x PAUSE holds every queue of port 1, so the charges stay */
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pause(b, 0xffff), 0), 0);
  const struct {
    fspec_t f;
    unsigned prio;
  } cases[] = {
      {{m1, 0, 5, 4, 26, 0, 256}, 5}, /* PCP wins over DSCP */
      {{m1, 0, -1, 4, 26, 0, 256}, 3}, {{m1, 0, -1, 6, 56, 0, 256}, 7},
      {{m1, 0, -1, 4, 46, 0, 256}, 6}, {{m1, 0, 2, 0, 0, 0, 256}, 2},
      {{m1, 0, -1, 0, 0, 0, 256}, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    jct_switch_port_stats_t before = pst(sw, 0, 0);
    ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &cases[i].f), 0), 0);
    jct_switch_port_stats_t after = pst(sw, 0, 0);
    for (unsigned p = 0; p < 8; p++)
      ck_assert_uint_eq(after.in_use_bytes[p] - before.in_use_bytes[p],
                        p == cases[i].prio ? 256 : 0);
  }
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pause(b, 0), 10), 0);
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(r.n, 6);
  ck_assert_uint_eq(pst(sw, 1, MS).paused_ns[4], 10);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* Back-to-back frames depart (L + 24) * 8 / rate apart, the first at
 * serialization + propagation; the fractional nanoseconds are carried. */
START_TEST(serialization_timing) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 2, 1000000000);
  c.port[1].prop_delay_ns = 1000;
  c.port[1].rate_bps = 10000000000ull;
  jct_switch_t *sw = mksw(&c);
  uint8_t m1[6], b[1500];
  host_mac(m1, 1);
  size_t n = mk(b, &(fspec_t){m1, 0, -1, 4, 0, 0, 1000});
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, 500), 0);
  ck_assert_uint_eq(jct_switch_next_deadline_ns(sw), 500 + 819 + 1000);
  rec_t r = {0};
  run_until(sw, 50000, &r);
  ck_assert_uint_eq(r.n, 3);
  /* 1024 bytes * 8 / 10 Gbit/s = 819.2 ns */
  ck_assert_uint_eq(r.o[0].t, 500 + 819 + 1000);
  ck_assert_uint_eq(r.o[1].t, 500 + 1638 + 1000);
  ck_assert_uint_eq(r.o[2].t, 500 + 2457 + 1000);
  /* after idle, a frame arriving later starts on arrival */
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, 100000), 0);
  run_until(sw, MS, &r);
  ck_assert_uint_eq(r.o[3].t, 100000 + 819 + 1000);
  /* the 1 Gbit/s way back: 8192 ns per frame, no propagation */
  uint8_t m0[6];
  host_mac(m0, 0);
  n = mk(b, &(fspec_t){m0, 1, -1, 4, 0, 0, 1000});
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, n, 2 * MS), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, n, 2 * MS), 0);
  run_until(sw, 3 * MS, &r);
  ck_assert_uint_eq(r.n, 6);
  ck_assert_uint_eq(r.o[4].t, 2 * MS + 8192);
  ck_assert_uint_eq(r.o[5].t - r.o[4].t, 8192);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* While the link is busy, priority 6 frames overtake the priority 1 ones
 * queued before them; FIFO within each priority. */
START_TEST(strict_priority) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 3, 1000000000);
  jct_switch_t *sw = mksw(&c);
  uint8_t m2[6], b[1500];
  host_mac(m2, 2);
  /* untagged frame first occupies the link */
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m2, 0, -1, 0, 0, 0, 1000}), 0), 0);
  for (int i = 0; i < 3; i++) {
    size_t n = mk(b, &(fspec_t){m2, 0, 1, 0, 0, 0, 100});
    b[20] = (uint8_t)i;
    ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, 100 + (uint64_t)i), 0);
  }
  for (int i = 0; i < 3; i++) {
    size_t n = mk(b, &(fspec_t){m2, 1, 6, 0, 0, 0, 100});
    b[20] = (uint8_t)(10 + i);
    ck_assert_int_eq(jct_switch_rx(sw, 1, b, n, 200 + (uint64_t)i), 0);
  }
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(r.n, 7);
  const uint8_t want[6] = {10, 11, 12, 0, 1, 2};
  for (int i = 0; i < 6; i++) {
    ck_assert_uint_eq(r.o[1 + i].b[20], want[i]);
    ck_assert_uint_eq(r.o[1 + i].b[14] >> 5, i < 3 ? 6 : 1);
  }
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* Without PFC, frames past the buffer are dropped as buffer_overflow;
 * the rest leave. The first starts serializing at once (its charge is
 * released), then 16 KiB holds exactly 16 frames of 1024 bytes. */
START_TEST(buffer_overflow) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 2, 1000000000);
  c.buffer_bytes = 16384;
  jct_switch_t *sw = mksw(&c);
  uint8_t m1[6], b[1500];
  host_mac(m1, 1);
  size_t n = mk(b, &(fspec_t){m1, 0, -1, 4, 26, 0, 1024});
  unsigned drops = 0;
  for (int i = 0; i < 40; i++) {
    int rc = jct_switch_rx(sw, 0, b, n, 0);
    if (rc) {
      ck_assert_int_eq(rc, JCT_SW_DROP_BUFFER_OVERFLOW);
      drops++;
    }
  }
  ck_assert_uint_eq(drops, 23);
  jct_switch_totals_t t;
  jct_switch_totals(sw, &t);
  ck_assert_uint_eq(t.pool_used_bytes, 16384);
  ck_assert_uint_eq(t.drops[JCT_SW_DROP_BUFFER_OVERFLOW], 23);
  check_ok(sw);
  rec_t r = {0};
  run_until(sw, 10 * MS, &r);
  ck_assert_uint_eq(r.n, 17);
  jct_switch_totals(sw, &t);
  ck_assert_uint_eq(t.pool_used_bytes, 0);
  ck_assert_uint_eq(t.tx_frames + t.tx_drops, t.offered);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* ---- PFC ---------------------------------------------------------------- */

static jct_switch_config_t pfc_cfg(uint32_t nports) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, nports, 1000000000);
  c.pfc_enable = 1 << 3;
  c.xoff_bytes = 8192;
  c.xon_bytes = 4096;
  return c;
}

static size_t mk_pfc(uint8_t *b, unsigned prio, uint16_t quanta) {
  memset(b, 0, 60);
  memcpy(b, mac_control_dst, 6);
  host_mac(b + 6, 9);
  put16(b + 12, 0x8808);
  put16(b + 14, 0x0101);
  put16(b + 16, 1u << prio);
  put16(b + 18 + 2 * prio, quanta);
  return 60;
}

/* XOFF leaves the ingress port when its charge reaches xoff_bytes (802.1Qbb
 * format, source the port's MAC), is refreshed at half the pause while the
 * charge stays up, and XON follows once the charge falls below xon_bytes. */
START_TEST(pfc_thresholds) {
  jct_switch_config_t c = pfc_cfg(2);
  jct_switch_t *sw = mksw(&c);
  uint8_t m1[6], b[1500];
  host_mac(m1, 1);
  /* hold port 1's priority 3 queue: 0xffff quanta = 33.55 ms at 1 Gbit/s */
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 0xffff), 0), 0);
  size_t n = mk(b, &(fspec_t){m1, 0, -1, 4, 26, 1, 1024});
  rec_t r = {0};
  for (int i = 0; i < 7; i++)
    ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, 1000 + (uint64_t)i), 0);
  run_until(sw, 100000, &r);
  ck_assert_uint_eq(r.n, 0);
  ck_assert_uint_eq(pst(sw, 0, 100000).in_use_bytes[3], 7168);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, 100000), 0); /* 8192: XOFF */
  run_until(sw, 200000, &r);
  ck_assert_uint_eq(r.n, 1);
  ck_assert(r.o[0].pfc);
  ck_assert_uint_eq(r.o[0].port, 0);
  ck_assert_uint_eq(r.o[0].len, 60);
  ck_assert_uint_eq(r.o[0].t, 100000 + (60 + 24) * 8);
  const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0, 0, 1};
  ck_assert_mem_eq(r.o[0].b, dst, 6);
  ck_assert_mem_eq(r.o[0].b + 6, c.port[0].mac, 6);
  ck_assert_uint_eq(r.o[0].b[15], 0x01); /* opcode 0x0101 */
  ck_assert_uint_eq(r.o[0].b[17], 1 << 3);
  ck_assert_uint_eq(be16(r.o[0].b + 18 + 6), 0xffff);
  /* refresh at half of 0xffff * 512 ns after the first */
  run_until(sw, 20 * MS, &r);
  ck_assert_uint_eq(r.n, 2);
  ck_assert_uint_eq(r.o[1].t - r.o[0].t, 0xffffull * 512 / 2);
  ck_assert_uint_eq(pst(sw, 0, 20 * MS).tx_pfc_xoff, 2);
  /* release the queue: frames leave; XON once the charge is below 4096 */
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 0), 20 * MS), 0);
  run_until(sw, 30 * MS, &r);
  ck_assert_uint_eq(r.n, 2 + 8 + 1);
  size_t data_before_xon = 0, xon = 0;
  for (size_t i = 2; i < r.n; i++) {
    if (r.o[i].pfc) {
      xon = i;
      break;
    }
    data_before_xon++;
  }
  ck_assert_uint_gt(xon, 0);
  ck_assert_uint_eq(be16(r.o[xon].b + 18 + 6), 0);
  /* charge 8192 falls below 4096 when the 5th frame starts; XON is sent
   * when that start happens, so it reaches the sender before the 5th frame
   * reaches port 1's peer */
  ck_assert_uint_eq(r.o[xon].t, 20 * MS + 4 * 8384 + 672);
  jct_switch_port_stats_t s0 = pst(sw, 0, 30 * MS), s1 = pst(sw, 1, 30 * MS);
  ck_assert_uint_eq(s0.tx_pfc_xon, 1);
  ck_assert_uint_eq(s1.rx_pfc_xoff, 1);
  ck_assert_uint_eq(s1.rx_pfc_xon, 1);
  ck_assert_uint_eq(s1.paused_ns[3], 20 * MS);
  ck_assert_uint_eq(s1.tx_frames, 8);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* 2:1 incast at line rate with senders that honour pause: zero drops, the
 * ingress charge stays within xoff plus the in-flight headroom, and every
 * frame arrives. */
START_TEST(pfc_incast_lossless) {
  jct_switch_config_t c = pfc_cfg(3);
  c.buffer_bytes = 64 * 1024;
  c.xoff_bytes = 16 * 1024;
  c.xon_bytes = 8 * 1024;
  for (int p = 0; p < 3; p++)
    c.port[p].prop_delay_ns = 500;
  jct_switch_t *sw = mksw(&c);
  uint8_t m2[6], b[1500];
  host_mac(m2, 2);
  enum { PER = 2000 };
  const uint64_t gap = (1024 + 24) * 8; /* line rate at 1 Gbit/s */
  uint64_t free_at[2] = {0, 0}, paused_until[2] = {0, 0};
  unsigned sent[2] = {0, 0};
  size_t seen = 0;
  uint64_t max_use = 0;
  rec_t r = {0};
  for (;;) {
    uint64_t t = jct_switch_next_deadline_ns(sw);
    for (int s = 0; s < 2; s++)
      if (sent[s] < PER && max64(free_at[s], paused_until[s]) < t)
        t = max64(free_at[s], paused_until[s]);
    if (t == UINT64_MAX) break;
    jct_switch_poll(sw, t, on_emit, &r);
    for (; seen < r.n; seen++) {
      const out_t *o = &r.o[seen];
      if (!o->pfc || o->port > 1) continue;
      unsigned q = be16(o->b + 18 + 6);
      paused_until[o->port] = o->t + (uint64_t)q * 512; /* 1 bit = 1 ns */
    }
    for (int s = 0; s < 2; s++) {
      if (sent[s] >= PER || max64(free_at[s], paused_until[s]) > t) continue;
      /* the frame's last bit reaches the switch after serialization + propagation */
      size_t n = mk(b, &(fspec_t){m2, (unsigned)s, -1, 4, 26, 1, 1024});
      ck_assert_int_eq(jct_switch_rx(sw, (uint32_t)s, b, n, t + gap + 500), 0);
      sent[s]++;
      free_at[s] = t + gap;
      for (int p = 0; p < 2; p++) {
        uint64_t u = pst(sw, (uint32_t)p, t).in_use_bytes[3];
        if (u > max_use) max_use = u;
      }
    }
  }
  jct_switch_totals_t tot;
  jct_switch_totals(sw, &tot);
  ck_assert_uint_eq(tot.rx_drops + tot.tx_drops, 0);
  ck_assert_uint_eq(pst(sw, 2, 0).tx_frames, 2 * PER);
  ck_assert_uint_ge(pst(sw, 0, 0).tx_pfc_xoff, 1);
  ck_assert_uint_ge(pst(sw, 1, 0).tx_pfc_xoff, 1);
  ck_assert_uint_ge(pst(sw, 0, 0).tx_pfc_xon, 1);
  ck_assert_uint_ge(max_use, c.xoff_bytes);
  ck_assert_uint_le(max_use, c.xoff_bytes + 4 * 1024);
  ck_assert_uint_eq(tot.pool_used_bytes, 0);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* A received PFC holds that priority for quanta * 512 bit times; XON ends
 * it early; other priorities keep going. */
START_TEST(pfc_received) {
  jct_switch_config_t c = pfc_cfg(2);
  jct_switch_t *sw = mksw(&c);
  uint8_t m1[6], b[1500];
  host_mac(m1, 1);
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 100), 0), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, 4, 26, 0, 1000}), 0), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, 4, 0, 0, 1000}), 0), 0);
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(r.n, 2);
  ck_assert_uint_eq(r.o[0].t, 8192);             /* priority 0: not paused */
  ck_assert_uint_eq(r.o[1].t, 100 * 512 + 8192); /* priority 3: after the pause */
  ck_assert_uint_eq(pst(sw, 1, MS).paused_ns[3], 51200);
  /* XON after 10 us of a 1000-quanta pause */
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 1000), 2 * MS), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, 4, 26, 0, 1000}), 2 * MS),
                   0);
  ck_assert_uint_eq(pst(sw, 1, 2 * MS + 5000).paused_ns[3], 51200 + 5000);
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 0), 2 * MS + 10000), 0);
  run_until(sw, 3 * MS, &r);
  ck_assert_uint_eq(r.n, 3);
  ck_assert_uint_eq(r.o[2].t, 2 * MS + 10000 + 8192);
  ck_assert_uint_eq(pst(sw, 1, 3 * MS).paused_ns[3], 51200 + 10000);
  /* PFC on a priority without PFC enabled is consumed, not honoured */
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 0, 1000), 4 * MS), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, 4, 0, 0, 1000}), 4 * MS), 0);
  run_until(sw, 5 * MS, &r);
  ck_assert_uint_eq(r.o[3].t, 4 * MS + 8192);
  ck_assert_uint_eq(pst(sw, 1, 5 * MS).rx_control, 4);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* The watchdog's transitions, as its callback reports them. */
typedef struct {
  unsigned n;
  uint32_t port[4];
  int prio[4];
  bool storm[4];
  uint64_t t[4];
} wd_seen_t;

static void on_wd(jct_switch_t *sw, uint32_t port, int prio, bool storm, uint64_t now_ns,
                  void *arg) {
  (void)sw;
  wd_seen_t *w = arg;
  if (w->n < 4)
    w->port[w->n] = port, w->prio[w->n] = prio, w->storm[w->n] = storm, w->t[w->n] = now_ns;
  w->n++;
}

/* A pause storm on port 1 priority 3: PFC every 10 ms for 500 ms, frames
 * to port 1 every ms until 1 s. With the watchdog (SONiC defaults) the
 * storm is declared at 200 ms and restored 200 ms after the last pause;
 * its callback hears both, for port 1's priority 3. */
static void storm(jct_switch_wd_action_t action) {
  jct_switch_config_t c = pfc_cfg(2);
  c.xoff_bytes = 256 * 1024;
  c.xon_bytes = 128 * 1024;
  c.wd_enable = true;
  c.wd_action = action;
  jct_switch_t *sw = mksw(&c);
  wd_seen_t w = {0};
  ck_assert_int_eq(jct_switch_set_wd_cb(sw, on_wd, &w), 0);
  uint8_t m1[6], b[1500];
  host_mac(m1, 1);
  rec_t r = {0};
  unsigned wd_drops = 0, sent = 0;
  for (uint64_t t = 0; t <= 1000 * MS; t += MS) {
    run_until(sw, t, &r);
    if (t <= 500 * MS && t % (10 * MS) == 0)
      ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 0xffff), t), 0);
    int rc = jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, 4, 26, 0, 256}), t);
    sent++;
    if (rc == JCT_SW_DROP_PFC_WATCHDOG)
      wd_drops++;
    else
      ck_assert_int_eq(rc, 0);
    check_ok(sw);
  }
  run_until(sw, 1100 * MS, &r);
  jct_switch_port_stats_t s1 = pst(sw, 1, 1100 * MS);
  ck_assert_uint_eq(s1.wd_storms, 1);
  ck_assert_uint_eq(s1.wd_restores, 1);
  ck_assert_uint_eq(w.n, 2);
  ck_assert(w.storm[0] && !w.storm[1]);
  ck_assert_uint_eq(w.port[0], 1);
  ck_assert_uint_eq(w.port[1], 1);
  ck_assert_int_eq(w.prio[0], 3);
  ck_assert_int_eq(w.prio[1], 3);
  ck_assert_uint_eq(w.t[0], 200 * MS);
  ck_assert_uint_eq(w.t[1], 700 * MS);
  jct_switch_totals_t tot;
  jct_switch_totals(sw, &tot);
  ck_assert_uint_eq(tot.wd_storms, 1);
  ck_assert_uint_eq(tot.wd_restores, 1);
  size_t data = 0;
  uint64_t first = UINT64_MAX;
  for (size_t i = 0; i < r.n; i++)
    if (r.o[i].port == 1) {
      data++;
      if (first == UINT64_MAX) first = r.o[i].t;
    }
  if (action == JCT_SW_WD_DROP) {
    /* queued 0..199 ms: 200 frames dropped at detection; arrivals 200..700 ms dropped */
    ck_assert_uint_eq(s1.tx_drops[JCT_SW_DROP_PFC_WATCHDOG], 200 + wd_drops);
    ck_assert_uint_eq(wd_drops, 500);
    ck_assert_uint_eq(data, sent - 200 - wd_drops);
    ck_assert_uint_ge(first, 700 * MS);
  } else {
    ck_assert_uint_eq(wd_drops, 0);
    ck_assert_uint_eq(s1.tx_drops[JCT_SW_DROP_PFC_WATCHDOG], 0);
    ck_assert_uint_eq(data, sent);
    /* held until detection, then forwarded despite the pause */
    ck_assert_uint_eq(first, 200 * MS + (256 + 24) * 8);
  }
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}

START_TEST(watchdog_drop) {
  storm(JCT_SW_WD_DROP);
}
END_TEST

START_TEST(watchdog_forward) {
  storm(JCT_SW_WD_FORWARD);
}
END_TEST

/* ---- ECN ---------------------------------------------------------------- */

/* 3,000 ECT(0) frames of 64 bytes into a paused queue: the marks follow
 * Pmax (q - Kmin) / (Kmax - Kmin); the count lies within 4.5 sigma of its
 * expectation (a sum of Bernoulli trials), the same seed gives the same
 * marks, and every marked IPv4 header keeps a valid checksum. */
static unsigned ecn_run(uint64_t seed, int ipver, double *expect, double *var, uint8_t *marks) {
  jct_switch_config_t c = pfc_cfg(2);
  c.buffer_bytes = 1 << 20;
  c.xoff_bytes = 1 << 20;
  c.xon_bytes = 1 << 19;
  c.ecn_enable = 1 << 3;
  c.kmin_bytes = 20000;
  c.kmax_bytes = 170000;
  c.pmax = 0.4;
  c.seed = seed;
  jct_switch_t *sw = mksw(&c);
  uint8_t m1[6], b[200];
  host_mac(m1, 1);
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 0xffff), 0), 0);
  enum { N = 3000 };
  *expect = *var = 0;
  for (unsigned i = 0; i < N; i++) {
    double q = 64.0 * i, p = 0;
    if (q > 170000)
      p = 1;
    else if (q > 20000)
      p = 0.4 * (q - 20000) / 150000;
    *expect += p;
    *var += p * (1 - p);
    ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, ipver, 26, 2, 64}), 1), 0);
  }
  /* a Not-ECT frame at full depth is never marked */
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, mk(b, &(fspec_t){m1, 0, -1, ipver, 26, 0, 64}), 1), 0);
  ck_assert_int_eq(jct_switch_rx(sw, 1, b, mk_pfc(b, 3, 0), 2), 0);
  rec_t r = {0};
  run_until(sw, 100 * MS, &r);
  ck_assert_uint_eq(r.n, N + 1);
  unsigned marked = 0;
  for (size_t i = 0; i < r.n; i++) {
    const uint8_t *h = r.o[i].b + 14;
    unsigned ecn = ipver == 4 ? h[1] & 3 : (h[1] >> 4) & 3;
    if (i == N) {
      ck_assert_uint_eq(ecn, 0);
      break;
    }
    ck_assert(ecn == 2 || ecn == 3);
    marks[i] = ecn == 3;
    marked += ecn == 3;
    if (ipver == 4) ck_assert_uint_eq(ip_sum(h, 20), 0xffff);
  }
  ck_assert_uint_eq(pst(sw, 1, 100 * MS).ecn_marked, marked);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
  return marked;
}

START_TEST(ecn_marking) {
  static uint8_t m1[3000], m2[3000];
  double e, v;
  unsigned k = ecn_run(42, 4, &e, &v, m1);
  ck_assert_msg(fabs(k - e) <= 4.5 * sqrt(v), "marked %u, expected %.1f +- %.1f", k, e, sqrt(v));
  ck_assert_uint_eq(ecn_run(42, 4, &e, &v, m2), k);
  ck_assert_mem_eq(m1, m2, sizeof m1);
  /* the first frames (q <= Kmin) are never marked, the last (q >= Kmax) always */
  for (int i = 0; i <= 312; i++)
    ck_assert_uint_eq(m1[i], 0);
  for (int i = 2657; i < 3000; i++)
    ck_assert_uint_eq(m1[i], 1);
  k = ecn_run(7, 6, &e, &v, m1);
  ck_assert_msg(fabs(k - e) <= 4.5 * sqrt(v), "v6 marked %u, expected %.1f", k, e);
}
END_TEST

/* ---- hooks -------------------------------------------------------------- */

static jct_switch_verdict_t drop_odd(jct_switch_frame_t *f, uint64_t now_ns, uint64_t *hold,
                                     void *arg) {
  (void)now_ns;
  (void)hold;
  unsigned *n = arg;
  (*n)++;
  ck_assert_uint_eq(f->out_port, UINT32_MAX);
  return f->data[20] & 1 ? JCT_SW_DROP : JCT_SW_PASS;
}

static jct_switch_verdict_t hold_50us(jct_switch_frame_t *f, uint64_t now_ns, uint64_t *hold,
                                      void *arg) {
  (void)arg;
  ck_assert_uint_eq(f->out_port, 1);
  jct_switch_frame_writable(f)[21] = 0xee;
  *hold = now_ns + 50000;
  return JCT_SW_HOLD;
}

/* Ingress drop is counted as injector at the ingress port; an egress hold
 * delays departure by its time and keeps the hook's change. */
START_TEST(hooks) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 2, 1000000000);
  jct_switch_t *sw = mksw(&c);
  unsigned calls = 0;
  ck_assert_int_eq(jct_switch_set_hook(sw, 0, JCT_SW_INGRESS, drop_odd, &calls), 0);
  ck_assert_int_eq(jct_switch_set_hook(sw, 1, JCT_SW_EGRESS, hold_50us, NULL), 0);
  ck_assert_int_eq(jct_switch_set_hook(sw, 2, JCT_SW_EGRESS, hold_50us, NULL), JCT_EINVAL);
  uint8_t m1[6], b[200];
  host_mac(m1, 1);
  for (int i = 0; i < 4; i++) {
    size_t n = mk(b, &(fspec_t){m1, 0, -1, 0, 0, 0, 100});
    b[20] = (uint8_t)i;
    int rc = jct_switch_rx(sw, 0, b, n, (uint64_t)i * 100000);
    ck_assert_int_eq(rc, i & 1 ? JCT_SW_DROP_INJECTOR : 0);
  }
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(calls, 4);
  ck_assert_uint_eq(r.n, 2);
  ck_assert_uint_eq(r.o[0].t, 50000 + 124 * 8);
  ck_assert_uint_eq(r.o[1].t, 200000 + 50000 + 124 * 8);
  ck_assert_uint_eq(r.o[0].b[21], 0xee);
  ck_assert_uint_eq(pst(sw, 0, MS).rx_drops[JCT_SW_DROP_INJECTOR], 2);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

typedef struct {
  unsigned calls, copies;
} dup_calls_t;

/* Ingress: duplicate every frame and mark the first pass (byte 21); the
 * copy must be the frame as received; drop the copy of frame 2. */
static jct_switch_verdict_t dup_in(jct_switch_frame_t *f, uint64_t now_ns, uint64_t *hold,
                                   void *arg) {
  (void)now_ns;
  (void)hold;
  dup_calls_t *c = arg;
  c->calls++;
  f->duplicate = true; /* on a copy: ignored */
  if (f->copy) {
    c->copies++;
    ck_assert_uint_eq(f->data[21], 0);
    return f->data[20] == 2 ? JCT_SW_DROP : JCT_SW_PASS;
  }
  jct_switch_frame_writable(f)[21] = 0xaa;
  return JCT_SW_MODIFIED;
}

/* Egress: duplicate frame 3 (which ingress marked), hold every copy 10 us. */
static jct_switch_verdict_t dup_out(jct_switch_frame_t *f, uint64_t now_ns, uint64_t *hold,
                                    void *arg) {
  dup_calls_t *c = arg;
  c->calls++;
  if (f->copy) {
    c->copies++;
    *hold = now_ns + 10000;
    return JCT_SW_HOLD;
  }
  ck_assert_uint_eq(f->data[21], 0xaa);
  f->duplicate = f->data[20] == 3;
  return JCT_SW_PASS;
}

/* A hook's duplicate: the frame as the hook received it, back to the same
 * hook with copy set, forwarded by its own verdict behind the frame; an
 * ingress copy is not duplicated again at egress; every copy accounted. */
START_TEST(hooks_duplicate) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 2, 1000000000);
  jct_switch_t *sw = mksw(&c);
  dup_calls_t in = {0}, out = {0};
  ck_assert_int_eq(jct_switch_set_hook(sw, 0, JCT_SW_INGRESS, dup_in, &in), 0);
  ck_assert_int_eq(jct_switch_set_hook(sw, 1, JCT_SW_EGRESS, dup_out, &out), 0);
  uint8_t m1[6], b[200];
  host_mac(m1, 1);
  for (int i = 0; i < 4; i++) {
    size_t n = mk(b, &(fspec_t){m1, 0, -1, 0, 0, 0, 100});
    b[20] = (uint8_t)i;
    ck_assert_int_eq(jct_switch_rx(sw, 0, b, n, (uint64_t)i * 100000), 0);
  }
  rec_t r = {0};
  run_until(sw, MS, &r);
  ck_assert_uint_eq(in.calls, 8);
  ck_assert_uint_eq(in.copies, 4);
  ck_assert_uint_eq(out.calls, 8); /* 4 frames, 3 ingress copies, 1 egress copy */
  ck_assert_uint_eq(out.copies, 4);
  ck_assert_uint_eq(r.n, 8);
  /* frame i (marked), then its copies 10 us later: frame 2 has none,
   * frame 3 two (ingress: unmarked; egress: marked, as egress got it) */
  const uint8_t want_seq[8] = {0, 0, 1, 1, 2, 3, 3, 3};
  const uint8_t want_mark[8] = {0xaa, 0, 0xaa, 0, 0xaa, 0xaa, 0xaa, 0};
  uint64_t ser = 124 * 8;
  for (size_t k = 0; k < 8; k++) {
    ck_assert_uint_eq(r.o[k].b[20], want_seq[k]);
    ck_assert_uint_eq(r.o[k].b[21], want_mark[k]);
    uint64_t t0 = (uint64_t)want_seq[k] * 100000;
    bool copy = k > 0 && want_seq[k - 1] == want_seq[k];
    if (!copy)
      ck_assert_uint_eq(r.o[k].t, t0 + ser);
    else
      ck_assert_uint_ge(r.o[k].t, t0 + 10000 + ser);
  }
  jct_switch_port_stats_t s0 = pst(sw, 0, MS), s1 = pst(sw, 1, MS);
  ck_assert_uint_eq(s0.rx_frames, 4);
  ck_assert_uint_eq(s0.rx_duplicates, 4);
  ck_assert_uint_eq(s0.rx_drops[JCT_SW_DROP_INJECTOR], 1);
  ck_assert_uint_eq(s0.rx_forwarded, 7);
  ck_assert_uint_eq(s1.tx_duplicates, 1);
  ck_assert_uint_eq(s1.offered, 8);
  ck_assert_uint_eq(s1.tx_frames, 8);
  jct_switch_totals_t t;
  jct_switch_totals(sw, &t);
  ck_assert_uint_eq(t.duplicates, 5);
  check_ok(sw);
  free(r.o);
  jct_switch_free(sw);
}
END_TEST

/* ---- limits ------------------------------------------------------------- */

static void bad(void (*edit)(jct_switch_config_t *), const char *word) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 4, 1000000000);
  edit(&c);
  jct_switch_t *sw = (jct_switch_t *)&c;
  char err[256] = "";
  ck_assert_int_eq(jct_switch_new(&sw, &c, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_null(sw);
  ck_assert_msg(strstr(err, word) != NULL, "'%s' does not name %s", err, word);
}

static void e_rate0(jct_switch_config_t *c) {
  c->port[2].rate_bps = 0;
}
static void e_rate_big(jct_switch_config_t *c) {
  c->port[0].rate_bps = 2000000000000ull;
}
static void e_xon(jct_switch_config_t *c) {
  c->pfc_enable = 8;
  c->xon_bytes = c->xoff_bytes + 1;
}
static void e_kmin(jct_switch_config_t *c) {
  c->ecn_enable = 8;
  c->kmin_bytes = c->kmax_bytes + 1;
}
static void e_pmax(jct_switch_config_t *c) {
  c->ecn_enable = 8;
  c->pmax = 1.5;
}
static void e_pmax_nan(jct_switch_config_t *c) {
  c->ecn_enable = 8;
  c->pmax = NAN;
}
static void e_nports(jct_switch_config_t *c) {
  c->nports = 1;
}
static void e_dscp(jct_switch_config_t *c) {
  c->dscp_to_prio[9] = 8;
}
static void e_buffer(jct_switch_config_t *c) {
  c->buffer_bytes = 100;
}
static void e_wd(jct_switch_config_t *c) {
  c->wd_enable = true;
  c->wd_detection_ns = 0;
}
static void e_bdp(jct_switch_config_t *c) {
  c->port[1].rate_bps = 1000000000000ull;
  c->port[1].prop_delay_ns = 1000000000;
}

START_TEST(bad_config) {
  bad(e_rate0, "port 2: rate_bps");
  bad(e_rate_big, "port 0: rate_bps");
  bad(e_xon, "xon_bytes");
  bad(e_kmin, "kmin_bytes");
  bad(e_pmax, "pmax");
  bad(e_pmax_nan, "pmax");
  bad(e_nports, "nports");
  bad(e_dscp, "dscp_to_prio[9]");
  bad(e_buffer, "buffer_bytes");
  bad(e_wd, "wd_detection_ns");
  bad(e_bdp, "port 1");
}
END_TEST

/* Bad calls, runts and oversize frames, a full MAC table. */
START_TEST(bad_input) {
  jct_switch_config_t c;
  jct_switch_config_default(&c, 2, 1000000000);
  c.mac_table_size = 2;
  c.max_frame_bytes = 1518;
  jct_switch_t *sw = mksw(&c);
  uint8_t b[2000] = {0}, extra[6] = {0x02, 1, 2, 3, 4, 5}, group[6] = {0x01, 0, 0x5e, 0, 0, 1};
  ck_assert_int_eq(jct_switch_add_mac(sw, extra, 0), JCT_ENOMEM);
  ck_assert_int_eq(jct_switch_add_mac(sw, group, 0), JCT_EINVAL);
  ck_assert_int_eq(jct_switch_add_mac(sw, extra, 2), JCT_EINVAL);
  ck_assert_int_eq(jct_switch_rx(sw, 2, b, 64, 0), JCT_EINVAL);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, 13, 0), JCT_SW_DROP_RUNT);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, 1519, 0), JCT_SW_DROP_OVERSIZE);
  ck_assert_int_eq(jct_switch_rx(sw, 0, b, 0, 0), JCT_SW_DROP_RUNT);
  ck_assert_str_eq(jct_switch_drop_name(JCT_SW_DROP_PFC_HEADROOM), "pfc_headroom_overflow");
  ck_assert_str_eq(jct_switch_drop_name(99), "unknown");
  ck_assert_uint_eq(jct_switch_next_deadline_ns(sw), UINT64_MAX);
  check_ok(sw);
  jct_switch_free(sw);
}
END_TEST

Suite *switch_suite(void) {
  Suite *s = suite_create("switch");
  TCase *core = tcase_create("core");
  tcase_add_test(core, forward_by_mac);
  tcase_add_test(core, flood);
  tcase_add_test(core, classify_priority);
  tcase_add_test(core, serialization_timing);
  tcase_add_test(core, strict_priority);
  tcase_add_test(core, buffer_overflow);
  tcase_add_test(core, hooks);
  tcase_add_test(core, hooks_duplicate);
  suite_add_tcase(s, core);
  TCase *pfc = tcase_create("pfc");
  tcase_add_test(pfc, pfc_thresholds);
  tcase_add_test(pfc, pfc_incast_lossless);
  tcase_add_test(pfc, pfc_received);
  tcase_add_test(pfc, watchdog_drop);
  tcase_add_test(pfc, watchdog_forward);
  suite_add_tcase(s, pfc);
  TCase *stats = tcase_create("stats");
  tcase_add_test(stats, ecn_marking);
  tcase_set_timeout(stats, 30);
  suite_add_tcase(s, stats);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, bad_config);
  tcase_add_test(limits, bad_input);
  suite_add_tcase(s, limits);
  return s;
}
