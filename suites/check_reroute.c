/* Rerouting around a leaf-spine cable that is down (fabric.h
 * "Rerouting", switch.h's withdrawable groups, clos.h's detection time):
 *   - rehash: a withdrawn member gets no frame; only its flows move, spread
 *     over the live members; restoring it moves exactly them back; with
 *     every member down the flows keep theirs; a group of its own is never
 *     shared with jct_switch_add_mac_ecmp's.
 *   - detection: times and "off" read; negative, zero, garbage and
 *     too long refused naming the word; the CLI exits 2 with one line.
 *   - fabric (namespaces, the built jctlab): an 8-rank ring spread over 4
 *     leaves x 2 spines, uplinks at twice the host rate, spine0's downlink
 *     to leaf 2 flapped down for 300 ms mid-run. With a 20 ms detection:
 *     one withdrawal and one restore, the cable's down time, the flows that
 *     were on it found on spine 1's downlink to leaf 2 afterwards, and the
 *     frames lost (the flap's drops capture) all within the detection time
 *     (plus the feeding uplinks' queues, which still drain into the dead
 *     link) and no more bytes than the feeding uplinks' rate x detection
 *     time plus those queues. With detection off the same flap costs
 *     more re-sent packets (after timeouts or NAKs) and the down time in
 *     JCT.
 */
#include <check.h>
#include <jansson.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "jctlab/clos.h"
#include "jctlab/error.h"
#include "jctlab/switch.h"
#include "suites.h"
#include "testkit.h"

/* ---- rehash ---------------------------------------------------------------- */

#define NFLOWS 64
#define WAYS 4

static void emitted(uint32_t port, const uint8_t *frame, size_t len, uint64_t t, void *arg) {
  (void)len, (void)t;
  uint32_t *last = arg; /* port of each flow's latest frame, by UDP sport */
  last[(frame[34] << 8 | frame[35]) - 49152] = port;
}

/* Each flow's port now. */
static void paths(jct_switch_t *sw, uint64_t *t, uint32_t out[NFLOWS]) {
  for (uint32_t i = 0; i < NFLOWS; i++) {
    uint8_t f[2048];
    size_t n = craft_flow_frame(f, 0, 5, (uint16_t)(49152 + i));
    ck_assert_int_eq(jct_switch_rx(sw, 0, f, n, *t), 0);
    *t += 100000;
    jct_switch_poll(sw, *t, emitted, out);
  }
}

START_TEST(resilient_rehash) {
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, WAYS + 2, 1000000000u);
  cfg.ecmp_seed = 7;
  jct_switch_t *sw;
  char err[256];
  ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
  uint32_t ports[WAYS] = {1, 2, 3, 4};
  int g = jct_switch_ecmp_group_new(sw, ports, WAYS);
  ck_assert_int_ge(g, 0);
  const uint8_t mac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, 6};
  ck_assert_int_eq(jct_switch_add_mac_group(sw, mac, (uint32_t)g), 0);
  /* a shared group of the same ports is another group */
  const uint8_t other[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, 9};
  ck_assert_int_eq(jct_switch_add_mac_ecmp(sw, other, ports, WAYS), 0);
  ck_assert_int_eq(jct_switch_ecmp_group_new(sw, ports, 1), JCT_EINVAL);
  ck_assert_int_eq(jct_switch_ecmp_member_up(sw, (uint32_t)g, 5, false), JCT_EINVAL);
  ck_assert_int_eq(jct_switch_ecmp_member_up(sw, (uint32_t)g + 5, 1, false), JCT_EINVAL);
  ck_assert_int_eq(jct_switch_add_mac_group(sw, mac, 60), JCT_EINVAL);

  uint64_t t = 0;
  uint32_t before[NFLOWS], during[NFLOWS], after[NFLOWS], on2 = 0;
  paths(sw, &t, before);
  for (uint32_t i = 0; i < NFLOWS; i++)
    on2 += before[i] == 2;
  ck_assert_uint_gt(on2, 4); /* 64 flows over 4 members: about 16 */
  ck_assert_int_eq(jct_switch_ecmp_member_up(sw, (uint32_t)g, 2, false), WAYS - 1);
  paths(sw, &t, during);
  uint32_t moved_to[WAYS + 2] = {0};
  for (uint32_t i = 0; i < NFLOWS; i++) {
    ck_assert_uint_ne(during[i], 2);
    if (before[i] != 2)
      ck_assert_msg(during[i] == before[i], "flow %u moved from %u to %u", i, before[i], during[i]);
    else
      moved_to[during[i]]++;
  }
  ck_assert_uint_eq(moved_to[1] + moved_to[3] + moved_to[4], on2);
  ck_assert_msg(moved_to[1] && moved_to[3] && moved_to[4], "moved to 1: %u, 3: %u, 4: %u",
                moved_to[1], moved_to[3], moved_to[4]);
  ck_assert_int_eq(jct_switch_ecmp_member_up(sw, (uint32_t)g, 2, true), WAYS);
  paths(sw, &t, after);
  ck_assert_mem_eq(after, before, sizeof before);
  /* every member down: the flows keep their own */
  for (uint32_t k = 0; k < WAYS; k++)
    jct_switch_ecmp_member_up(sw, (uint32_t)g, ports[k], false);
  paths(sw, &t, during);
  ck_assert_mem_eq(during, before, sizeof before);
  ck_assert_int_eq(jct_switch_check(sw, err, sizeof err), 0);
  jct_switch_free(sw);
}
END_TEST

/* ---- detection ------------------------------------------------------------- */

START_TEST(detection_parse) {
  jct_clos_t c;
  char err[256];
  jct_clos_default(&c);
  ck_assert_uint_eq(jct_clos_reroute_detect_ns(&c), 1000000);
  ck_assert_int_eq(jct_clos_reroute_parse(&c, "50us", err, sizeof err), 0);
  ck_assert_uint_eq(jct_clos_reroute_detect_ns(&c), 50000);
  ck_assert_int_eq(jct_clos_reroute_parse(&c, "off", err, sizeof err), 0);
  ck_assert_uint_eq(jct_clos_reroute_detect_ns(&c), JCT_CLOS_REROUTE_OFF);
  const char *bad[] = {"-1ms", "1.5ms", "ms", "0", "11s", "", "fast"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    c.reroute_detect_ns = 7;
    ck_assert_int_eq(jct_clos_reroute_parse(&c, bad[i], err, sizeof err), JCT_EINVAL);
    char want[32];
    snprintf(want, sizeof want, "'%s'", bad[i]);
    ck_assert_msg(strstr(err, want), "%s: %s", bad[i], err);
    ck_assert_uint_eq(c.reroute_detect_ns, 7); /* untouched */
  }
}
END_TEST

START_TEST(detection_bad_input) {
  const char *words[] = {"-5ms", "soon"};
  for (size_t i = 0; i < 2; i++) {
    char *argv[] = {JCT_BINARY,
                    "run",
                    "--synth",
                    "ring",
                    "--ranks",
                    "8",
                    "--bytes",
                    "64KiB",
                    "--topology",
                    "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2",
                    "--reroute-detection",
                    (char *)words[i],
                    NULL};
    expect_bad_input(argv, words[i], "--reroute-detection");
  }
}
END_TEST

/* ---- fabric ---------------------------------------------------------------- */

#define HOST_RATE 5000000ull
#define UP_RATE 10000000ull
#define DOWN_NS 300000000ull
#define DETECT_NS 20000000ull
#define OVERHEAD_BYTES 24 /* preamble, SFD, FCS, IFG: what the switch's rate counts */

static json_t *flapped_ring(const char *detection, const char *drops, int *status) {
  const char *args[] = {"run",
                        "--synth",
                        "ring",
                        "--ranks",
                        "8",
                        "--bytes",
                        "512KiB",
                        "--rate",
                        "5mbit",
                        "--no-pfc",
                        "--tdf", /* dilated x4 (1.25 Mbit/s here): a loaded machine keeps up */
                        "4",
                        "--reps",
                        "1",
                        "--timeout",
                        "17", /* 537 ms: none spurious at 5 Mbit/s */
                        "--topology",
                        "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2,uplink-rate=10mbit",
                        "--placement",
                        "spread",
                        "--qps-per-connection",
                        "4",
                        "--inject",
                        "flap down=300ms every=100s at=200ms port=spine0:leaf2 dir=out",
                        "--reroute-detection",
                        detection,
                        "--pcap-drops",
                        drops,
                        NULL};
  char *err = NULL;
  json_t *doc = jctlab_json_retry_dilated(args, status, &err); /* x4 -> x16 -> x64 */
  ck_assert_msg(*status == 0 && doc, "jctlab run exited %d: %s", *status, err);
  free(err);
  return doc;
}

static bool has_flow(json_t *link, json_t *flow) {
  json_t *flows = json_object_get(link, "flows");
  for (size_t i = 0; i < json_array_size(flows); i++) {
    json_t *f = json_array_get(flows, i);
    if (jint(f, "src_rank") == jint(flow, "src_rank") &&
        jint(f, "dst_rank") == jint(flow, "dst_rank") &&
        jint(f, "udp_sport") == jint(flow, "udp_sport"))
      return true;
  }
  return false;
}

typedef struct {
  uint64_t frames, bytes, first_ns, last_ns;
} lost_t;

/* The drops capture: how many, their bytes on the wire, their span. */
static lost_t read_drops(const char *path) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
  ck_assert_msg(p, "%s", eb);
  lost_t l = {0};
  struct pcap_pkthdr *h;
  const u_char *d;
  while (pcap_next_ex(p, &h, &d) == 1) {
    uint64_t t = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
    if (!l.frames) l.first_ns = t;
    l.last_ns = t;
    l.frames++;
    l.bytes += h->len + OVERHEAD_BYTES;
  }
  pcap_close(p);
  return l;
}

START_TEST(reroute_around_a_flap) {
  char drops[256];
  craft_tmpname(drops, sizeof drops, ".pcap");
  int status;
  json_t *doc = flapped_ring("20ms", drops, &status);
  json_t *down = jlink(doc, "spine0:leaf2"), *up = jlink(doc, "leaf2:spine0");
  ck_assert_int_eq(jint(down, "reroutes"), 1);
  ck_assert_int_eq(jint(down, "restores"), 1);
  ck_assert_int_eq(jint(up, "reroutes"), 1); /* one cable, both ends */
  json_int_t down_ns = jint(down, "down_ns");
  /* its transitions are seen as late as the loop runs (ms under load) */
  ck_assert_msg(down_ns > (json_int_t)(DOWN_NS * 95 / 100) &&
                    down_ns < (json_int_t)(DOWN_NS * 105 / 100),
                "down %lld ns", (long long)down_ns);
  ck_assert_int_eq(jint(doc, "config.topology.reroute_detection_ns"), DETECT_NS);
  /* the flows that were on the dead downlink are on spine 1's afterwards */
  ck_assert_int_ge(jint(down, "flows_moved"), 1);
  json_t *other = jlink(doc, "spine1:leaf2"), *flows = json_object_get(down, "flows");
  for (size_t i = 0; i < json_array_size(flows); i++)
    ck_assert_msg(has_flow(other, json_array_get(flows, i)),
                  "flow %zu of spine0:leaf2 never "
                  "took spine1:leaf2",
                  i);
  /* lost only while undetected: what the uplinks feeding spine 0 toward
   * leaf 2 could carry in the detection time, plus what their queues held
   * (it still drains into the dead link after the withdrawal) */
  lost_t l = read_drops(drops);
  ck_assert_int_eq((json_int_t)l.frames, jint(down, "drops"));
  ck_assert_uint_ge(l.frames, 1);
  uint64_t feeding = 0, queued = 0;
  bool feeds[4] = {false}; /* leaves with flows on it (spread: rank i under leaf i mod 4) */
  for (size_t i = 0; i < json_array_size(flows); i++)
    feeds[jint(json_array_get(flows, i), "src_rank") % 4] = true;
  for (uint32_t leaf = 0; leaf < 4; leaf++) {
    if (!feeds[leaf]) continue;
    char name[32];
    snprintf(name, sizeof name, "leaf%u:spine0", leaf);
    feeding++;
    queued += (uint64_t)jint(jlink(doc, name), "peak_queue_bytes");
  }
  double bound_bytes = (double)feeding * UP_RATE * DETECT_NS / 8e9 + (double)queued + 4200;
  ck_assert_msg((double)l.bytes <= bound_bytes, "lost %llu bytes, bound %.0f",
                (unsigned long long)l.bytes, bound_bytes);
  double span_bound_ns = DETECT_NS + (double)queued * 8e9 / UP_RATE + 2e6;
  ck_assert_msg((double)(l.last_ns - l.first_ns) <= span_bound_ns,
                "losses over %llu ns, detection %llu ns",
                (unsigned long long)(l.last_ns - l.first_ns), DETECT_NS);
  double jct_rr = jnum(doc, "jct.median_ns") / 1e9;
  json_int_t resent_rr = jint(doc, "transport.retransmitted_packets");
  json_decref(doc);

  /* no rerouting: the flows through spine 0 to leaf 2 wait for the link */
  doc = flapped_ring("off", drops, &status);
  down = jlink(doc, "spine0:leaf2");
  ck_assert_int_eq(jint(down, "reroutes"), 0);
  ck_assert_int_eq(jint(down, "flows_moved"), 0);
  ck_assert(json_is_null(json_object_get(jget(doc, "config.topology"), "reroute_detection_ns")));
  lost_t off = read_drops(drops);
  ck_assert_msg(off.last_ns - off.first_ns > DOWN_NS / 2, "losses over %llu ns only",
                (unsigned long long)(off.last_ns - off.first_ns));
  /* the frames lost over the down time are re-sent, after a timeout or a
   * NAK: which one depends on whether the QP had more to send once the
   * link was back (a CI run under ASan saw no timeout, only NAKs) */
  json_int_t resent_off = jint(doc, "transport.retransmitted_packets");
  ck_assert_msg(resent_off > resent_rr, "re-sent %lld, rerouted %lld", (long long)resent_off,
                (long long)resent_rr);
  ck_assert_int_ge(jint(doc, "transport.timeouts") + jint(doc, "transport.naks"), 1);
  double jct_off = jnum(doc, "jct.median_ns") / 1e9;
  /* the ring's other steps go on meanwhile, up to their dependencies on
   * the stalled ones: measured 0.14 to 0.25 s of the 0.3 s down time */
  ck_assert_msg(jct_off > jct_rr + DOWN_NS / 5e9, "JCT %.3f s without rerouting, %.3f s with",
                jct_off, jct_rr);
  json_decref(doc);
  unlink(drops);
}
END_TEST

Suite *reroute_suite(void) {
  Suite *s = suite_create("reroute");
  TCase *rehash = tcase_create("rehash");
  tcase_add_test(rehash, resilient_rehash);
  tcase_add_test(rehash, detection_parse);
  suite_add_tcase(s, rehash);
  TCase *fabric = tcase_create("fabric");
  tcase_set_timeout(fabric, 300);
  tcase_add_test(fabric, detection_bad_input);
  tcase_add_test(fabric, reroute_around_a_flap);
  suite_add_tcase(s, fabric);
  return s;
}
