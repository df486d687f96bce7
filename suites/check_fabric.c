/* The fabric's captures on both sides of the switch (harness/fabric/fabric.c):
 * pcap_in holds every frame as it arrived at a port, before the injectors,
 * and pcap_out every frame at its departure, on one clock, so pairing them
 * gives the time each frame spent in the switch: with 'delay 200us' on the
 * receiver's port, at least the delay and its wire time, and not much more.
 * pcap_snaplen cuts the frames kept, not their recorded length. A capture
 * path that cannot be written is refused with its name, before anything
 * runs.
 *
 * Each test runs in the child Check forks for it, isolated in namespaces of
 * its own (jct_ns_isolate), as suites/check_topo.c's do; when not root and
 * user namespaces are unavailable, a test says why and passes without
 * running. Traffic goes between 198.18.0.1 and 198.18.0.2 only.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "harness/fabric/chain.h"
#include "craft.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/fabric.h"
#include "jctlab/topo.h"
#include "nskit.h"
#include "suites.h"

#define NFRAMES 20
#define PORT 4791
#define RATE_BPS 1000000000u
#define HOLD_NS 200000u
#define PAYLOAD 200

typedef struct {
  uv_loop_t loop;
  jct_clock_t clock;
  jct_fabric_t *fab;
  jct__chain_t *chain;
  jct_topo_t *topo;
} rig_t;

static int rig_open(rig_t *r, const char *in, const char *out, uint32_t snaplen, char *err,
                    size_t errlen) {
  memset(r, 0, sizeof *r);
  jct_topo_opts_t to = {.mtu = 1500};
  ck_assert_int_eq(jct_topo_create(&r->topo, 2, &to, err, errlen), 0);
  ck_assert_int_eq(uv_loop_init(&r->loop), 0);
  ck_assert_int_eq(jct_clock_init(&r->clock, &r->loop), 0);
  const char *spec = "delay 200us port=1";
  ck_assert_int_eq(jct__chain_new(&r->chain, &spec, 1, 1, err, errlen), 0);
  jct_fabric_opts_t fo = {.nranks = 2,
                          .rate_bps = RATE_BPS,
                          .prop_delay_ns = 1000,
                          .mtu = 1500,
                          .data_prio = 3,
                          .topo = r->topo,
                          .pcap_in = in,
                          .pcap_out = out,
                          .pcap_snaplen = snaplen,
                          .chain = r->chain};
  return jct_fabric_new(&r->fab, &r->loop, &r->clock, &fo, err, errlen);
}

static void rig_close(rig_t *r) {
  jct_fabric_free(r->fab);
  jct_clock_close(&r->clock, NULL);
  while (uv_loop_close(&r->loop) == UV_EBUSY)
    uv_run(&r->loop, UV_RUN_NOWAIT);
  jct__chain_free(r->chain);
  jct_topo_destroy(r->topo);
}

/* Timestamps (ns) and lengths of a capture's UDP frames to port 4791, by
 * their first payload byte (the sequence number). */
static size_t read_side(const char *path, uint64_t ts[NFRAMES], uint32_t caplen[NFRAMES],
                        uint32_t len[NFRAMES]) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
  ck_assert_msg(p != NULL, "%s: %s", path, eb);
  struct pcap_pkthdr *h;
  const u_char *d;
  size_t n = 0;
  while (pcap_next_ex(p, &h, &d) == 1) {
    if (h->caplen < 43 || d[12] != 0x08 || d[13] != 0 || d[23] != 17 ||
        (d[36] << 8 | d[37]) != PORT)
      continue;
    unsigned seq = d[42];
    ck_assert_uint_lt(seq, NFRAMES);
    ck_assert_msg(ts[seq] == 0, "%s: frame %u twice", path, seq);
    ts[seq] = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
    caplen[seq] = h->caplen;
    len[seq] = h->len;
    n++;
  }
  pcap_close(p);
  return n;
}

/* Send NFRAMES datagrams from rank 0 to rank 1 through the fabric and wait
 * until rank 1 has them all (or 3 s). */
static void pass_traffic(rig_t *r) {
  char err[256];
  int tx = jct_topo_socket(r->topo, 0, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0, err, sizeof err);
  int rx = jct_topo_socket(r->topo, 1, AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, err,
                           sizeof err);
  ck_assert_msg(tx >= 0 && rx >= 0, "sockets: %s", err);
  struct sockaddr_storage ss;
  socklen_t sl = jct_rank_sockaddr(1, AF_INET, PORT, &ss);
  ck_assert_int_eq(bind(rx, (struct sockaddr *)&ss, sl), 0);
  ck_assert_int_eq(connect(tx, (struct sockaddr *)&ss, sl), 0);
  jct_fabric_start(r->fab, jct_now_ns());
  uint8_t buf[PAYLOAD];
  memset(buf, 0xab, sizeof buf);
  for (unsigned i = 0; i < NFRAMES; i++) {
    buf[0] = (uint8_t)i;
    ck_assert_int_eq(send(tx, buf, sizeof buf, 0), (ssize_t)sizeof buf);
  }
  unsigned got = 0;
  uint64_t end = jct_now_ns() + 3000000000u;
  while (got < NFRAMES && jct_now_ns() < end) {
    uv_run(&r->loop, UV_RUN_NOWAIT);
    while (recv(rx, buf, sizeof buf, 0) == (ssize_t)sizeof buf)
      got++;
  }
  ck_assert_uint_eq(got, NFRAMES);
  close(tx);
  close(rx);
}

/* One side of the switch as its capture saw NFRAMES frames, by sequence. */
typedef struct {
  uint64_t t[NFRAMES];
  uint32_t caplen[NFRAMES], len[NFRAMES];
} side_t;

/* Pass the traffic through a fabric capturing both sides (snaplen: as
 * jct_fabric_opts_t's) and read both captures back, whole. */
static void capture_both(uint32_t snaplen, side_t *in, side_t *out) {
  char inpath[256], outpath[256], err[512] = "";
  craft_tmpname(inpath, sizeof inpath, ".pcap");
  craft_tmpname(outpath, sizeof outpath, ".pcap");
  rig_t r;
  int rc = rig_open(&r, inpath, outpath, snaplen, err, sizeof err);
  ck_assert_msg(rc == 0, "jct_fabric_new: %s", err);
  pass_traffic(&r);
  jct_fabric_free(r.fab); /* flushes the captures */
  r.fab = NULL;
  memset(in, 0, sizeof *in);
  memset(out, 0, sizeof *out);
  size_t nin = read_side(inpath, in->t, in->caplen, in->len);
  size_t nout = read_side(outpath, out->t, out->caplen, out->len);
  unlink(inpath);
  unlink(outpath);
  rig_close(&r);
  ck_assert_uint_eq(nin, NFRAMES);
  ck_assert_uint_eq(nout, NFRAMES);
}

START_TEST(pcap_in_pairs_with_pcap_out) {
  if (!ns_own("fabric", "pcap_in_pairs_with_pcap_out", NS_USERNS)) return;
  side_t in, out;
  capture_both(0, &in, &out);
  /* Wire time of one frame at 1 Gbit/s: (242 + 24) bytes, 2.1 us. */
  double ser = (double)(14 + 20 + 8 + PAYLOAD + 24) * 8e9 / RATE_BPS;
  for (unsigned i = 0; i < NFRAMES; i++) {
    ck_assert_uint_eq(in.caplen[i], in.len[i]); /* whole frames */
    ck_assert_uint_eq(in.len[i], 14 + 20 + 8 + PAYLOAD);
    ck_assert_uint_eq(out.len[i], in.len[i]);
    if (i) ck_assert_uint_ge(in.t[i], in.t[i - 1]); /* in arrival order */
    double spent = (double)(out.t[i] - in.t[i]);
    /* The hold, the wire time and 1 us of propagation at least; at most
     * that behind every earlier frame, plus 300 us of slack (for a loop
     * that read a frame late, after the switch's clock had passed it). */
    ck_assert_msg(spent >= HOLD_NS + ser + 1000 - 1, "frame %u: %.0f ns in the switch", i, spent);
    ck_assert_msg(spent <= HOLD_NS + (i + 1) * ser + 1000 + 300000,
                  "frame %u: %.0f ns in the switch", i, spent);
  }
}
END_TEST

START_TEST(pcap_snaplen_cuts) {
  if (!ns_own("fabric", "pcap_snaplen_cuts", NS_USERNS)) return;
  side_t in, out;
  capture_both(64, &in, &out);
  for (unsigned i = 0; i < NFRAMES; i++) {
    ck_assert_uint_eq(in.caplen[i], 64);
    ck_assert_uint_eq(out.caplen[i], 64);
    ck_assert_uint_eq(in.len[i], 14 + 20 + 8 + PAYLOAD);
    ck_assert_uint_eq(out.len[i], 14 + 20 + 8 + PAYLOAD);
  }
}
END_TEST

START_TEST(pcap_in_unwritable) {
  if (!ns_own("fabric", "pcap_in_unwritable", NS_USERNS)) return;
  char err[512] = "";
  rig_t r;
  const char *bad = "/nonexistent-dir/in.pcap";
  int rc = rig_open(&r, bad, NULL, 0, err, sizeof err);
  ck_assert_int_eq(rc, JCT_EIO);
  ck_assert_ptr_null(r.fab);
  ck_assert_msg(strstr(err, bad) != NULL, "error \"%s\" does not name %s", err, bad);
  rig_close(&r);
}
END_TEST

/* A frame longer than a port's snap length (the fabric's MTU + 64 bytes:
 * here the links carry 9000-byte frames and the fabric is told 1500, as a
 * port with GRO on would hand it more than its MTU) is the harness's loss:
 * counted as truncated, never forwarded cut; the short frame beside it
 * goes through. */
START_TEST(longer_than_snaplen_is_a_harness_loss) {
  if (!ns_own("fabric", "longer_than_snaplen_is_a_harness_loss", NS_USERNS)) return;
  char err[512] = "";
  rig_t r;
  memset(&r, 0, sizeof r);
  jct_topo_opts_t to = {.mtu = 9000};
  ck_assert_int_eq(jct_topo_create(&r.topo, 2, &to, err, sizeof err), 0);
  ck_assert_int_eq(uv_loop_init(&r.loop), 0);
  ck_assert_int_eq(jct_clock_init(&r.clock, &r.loop), 0);
  jct_fabric_opts_t fo = {
      .nranks = 2, .rate_bps = RATE_BPS, .mtu = 1500, .data_prio = 3, .topo = r.topo};
  ck_assert_msg(jct_fabric_new(&r.fab, &r.loop, &r.clock, &fo, err, sizeof err) == 0, "%s", err);
  int tx = jct_topo_socket(r.topo, 0, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0, err, sizeof err);
  int rx = jct_topo_socket(r.topo, 1, AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, err,
                           sizeof err);
  ck_assert_msg(tx >= 0 && rx >= 0, "sockets: %s", err);
  struct sockaddr_storage ss;
  socklen_t sl = jct_rank_sockaddr(1, AF_INET, PORT, &ss);
  ck_assert_int_eq(bind(rx, (struct sockaddr *)&ss, sl), 0);
  ck_assert_int_eq(connect(tx, (struct sockaddr *)&ss, sl), 0);
  static uint8_t big[4000], buf[4000];
  ck_assert_int_eq(send(tx, big, sizeof big, 0), (ssize_t)sizeof big);
  ck_assert_int_eq(send(tx, big, PAYLOAD, 0), PAYLOAD);
  ssize_t got = -1;
  uint64_t end = jct_now_ns() + 2000000000u;
  while (got < 0 && jct_now_ns() < end) {
    uv_run(&r.loop, UV_RUN_NOWAIT);
    got = recv(rx, buf, sizeof buf, 0);
  }
  ck_assert_int_eq(got, PAYLOAD); /* the short one, and not the long one cut */
  jct_fabric_harness_stats_t hs;
  jct_fabric_harness_stats(r.fab, &hs);
  ck_assert_uint_eq(hs.truncated, 1);
  ck_assert_uint_eq(hs.frames_in, 2);
  ck_assert_uint_eq(hs.frames_out, 1);
  ck_assert_int_lt(recv(rx, buf, sizeof buf, 0), 0);
  close(tx);
  close(rx);
  rig_close(&r);
}
END_TEST

Suite *fabric_suite(void) {
  Suite *s = suite_create("fabric");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 20);
  tcase_add_test(core, pcap_in_pairs_with_pcap_out);
  tcase_add_test(core, pcap_snaplen_cuts);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, pcap_in_unwritable);
  tcase_add_test(limits, longer_than_snaplen_is_a_harness_loss);
  suite_add_tcase(s, limits);
  return s;
}
