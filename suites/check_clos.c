/* The leaf-spine fabric (include/jctlab/clos.h, switch.h's ECMP, fabric.h's
 * links) and the transport's entropy (per-QP UDP source ports):
 *   - ecmp: the switch's hash is CRC-32 of the 5-tuple, mixed with the
 *     seed, recomputed here bit by bit; every frame of a flow leaves by one
 *     member; the same seed gives the same paths, another seed regroups
 *     the flows; per-packet spraying goes round robin; flowlets keep their
 *     member within the gap and draw again after it; floods never cross a
 *     link marked no_flood.
 *   - place: packed, spread, random:SEED and lists; shapes and placements
 *     refused with the bad word; link names to injector port numbers.
 *   - fabric (namespaces, the built jctlab): an 8-rank ring AllReduce on 4
 *     leaves x 2 spines, 2 hosts per leaf. Spread, every ring step crosses
 *     the spines: each connection's data is on exactly the uplink the hash
 *     picks for its 5-tuple (its source port rxe's hash of its QPN) and the
 *     matching downlink, with the schedule's bytes. Packed, only the 4
 *     steps between leaves use links. With 4 QPs per connection, each QP
 *     takes its own hash's uplink with a quarter of the bytes. Bad input
 *     exits 2 with one line.
 *     A 7 -> 1 incast on one spine: the spine's PFC pauses the leaves'
 *     uplinks, nothing is dropped. On two spines without congestion
 *     control the pauses spread upstream hop by hop: the spines' downlinks
 *     to the receiver's leaf, every uplink that carried data, the senders.
 *   - qps: the schedule split across QPs keeps bytes, ranks and deps.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "craft.h"
#include "harness/transport/uroce/ranks.h"
#include "jctlab/clos.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"
#include "jctlab/switch.h"
#include "suites.h"
#include "testkit.h"

/* ---- ecmp ---------------------------------------------------------------- */

/* CRC-32, IEEE 802.3 polynomial reflected (0xedb88320), zlib's convention:
 * crc32(seed, ...) continues from seed. One bit at a time. */
static uint32_t ref_crc32(uint32_t seed, const uint8_t *p, size_t n) {
  uint32_t c = ~seed;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int b = 0; b < 8; b++)
      c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

static uint32_t ref_fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

/* The 5-tuple key as switch.h documents it, IPv4, and the seed mixed in. */
static uint32_t ref_hash(uint32_t seed, uint32_t src_rank, uint32_t dst_rank, uint16_t sport,
                         uint16_t dport) {
  uint8_t k[13] = {198, 18, (uint8_t)((src_rank + 1) >> 8), (uint8_t)(src_rank + 1),
                   198, 18, (uint8_t)((dst_rank + 1) >> 8), (uint8_t)(dst_rank + 1),
                   17,  (uint8_t)(sport >> 8), (uint8_t)sport, (uint8_t)(dport >> 8),
                   (uint8_t)dport};
  return ref_fmix32(ref_crc32(0, k, sizeof k) ^ ref_fmix32(seed + 0x9e3779b9u));
}

START_TEST(hash_is_crc32_of_the_5tuple) {
  uint8_t f[2048];
  for (uint32_t seed = 0; seed < 4; seed++)
    for (uint16_t sport = 49152; sport < 49152 + 40; sport++) {
      size_t n = craft_flow_frame(f, 2, 5, sport);
      ck_assert_uint_eq(jct_switch_ecmp_hash(seed, f, n), ref_hash(seed, 2, 5, sport, 4791));
    }
  /* the seed changes the value; the payload does not */
  size_t n = craft_flow_frame(f, 2, 5, 50000);
  uint32_t h0 = jct_switch_ecmp_hash(0, f, n);
  ck_assert_uint_ne(h0, jct_switch_ecmp_hash(1, f, n));
  f[n - 10] ^= 0xff;
  ck_assert_uint_eq(h0, jct_switch_ecmp_hash(0, f, n));
}
END_TEST

#define NFLOWS 64
#define WAYS 4

static void emitted(uint32_t port, const uint8_t *frame, size_t len, uint64_t t, void *arg) {
  (void)len, (void)t;
  uint32_t *last = arg; /* port of the latest frame of each flow, by its UDP sport */
  uint16_t sport = (uint16_t)(frame[34] << 8 | frame[35]);
  last[sport - 49152] = port;
}

/* Frames of NFLOWS flows into port 0; the member each flow left by. Each
 * flow's 4 frames must all leave by the same member. */
static void draw(uint32_t seed, jct_switch_ecmp_mode_t mode, uint32_t out[NFLOWS],
                 uint32_t per_member[WAYS + 1]) {
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, WAYS + 1, 1000000000u);
  cfg.ecmp_seed = seed;
  cfg.ecmp_mode = mode;
  jct_switch_t *sw;
  char err[256];
  ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
  uint32_t ports[WAYS] = {1, 2, 3, 4};
  const uint8_t mac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, 6};
  ck_assert_int_eq(jct_switch_add_mac_ecmp(sw, mac, ports, WAYS), 0);
  uint32_t last[NFLOWS];
  memset(per_member, 0, (WAYS + 1) * sizeof *per_member);
  uint64_t t = 0;
  for (int rep = 0; rep < 4; rep++)
    for (uint32_t i = 0; i < NFLOWS; i++) {
      uint8_t f[2048];
      size_t n = craft_flow_frame(f, 0, 5, (uint16_t)(49152 + i));
      ck_assert_int_eq(jct_switch_rx(sw, 0, f, n, t), 0);
      t += 100000;
      jct_switch_poll(sw, t, emitted, last);
      if (rep > 0 && mode == JCT_SW_ECMP_HASH)
        ck_assert_msg(last[i] == out[i], "flow %u left by port %u, then by %u", i, out[i],
                      last[i]);
      out[i] = last[i];
      per_member[last[i]]++;
    }
  ck_assert_int_eq(jct_switch_check(sw, err, sizeof err), 0);
  jct_switch_free(sw);
}

START_TEST(ecmp_deterministic_and_seeded) {
  uint32_t a[NFLOWS], b[NFLOWS], c[NFLOWS], use[WAYS + 1];
  draw(7, JCT_SW_ECMP_HASH, a, use);
  for (uint32_t m = 1; m <= WAYS; m++) /* 64 flows over 4 members: each gets some */
    ck_assert_msg(use[m] > 0, "member %u carried no flow", m);
  for (uint32_t i = 0; i < NFLOWS; i++) /* the member is the hash's */
    ck_assert_uint_eq(a[i], 1 + ref_hash(7, 0, 5, (uint16_t)(49152 + i), 4791) % WAYS);
  draw(7, JCT_SW_ECMP_HASH, b, use);
  ck_assert_mem_eq(a, b, sizeof a);
  /* Another seed regroups the flows, not only relabels the members: of
   * the pairs of flows that shared a member, many no longer do (a seed
   * that went into the CRC itself would keep every pair together). */
  draw(8, JCT_SW_ECMP_HASH, c, use);
  uint32_t shared = 0, split = 0;
  for (uint32_t i = 0; i < NFLOWS; i++)
    for (uint32_t j = i + 1; j < NFLOWS; j++)
      if (a[i] == a[j]) shared++, split += c[i] != c[j];
  ck_assert_msg(split * 2 >= shared, "another seed split only %u of %u pairs", split, shared);
}
END_TEST

START_TEST(ecmp_per_packet_sprays) {
  uint32_t a[NFLOWS], use[WAYS + 1];
  draw(7, JCT_SW_ECMP_PER_PACKET, a, use);
  for (uint32_t m = 1; m <= WAYS; m++) /* round robin: 4 x 64 frames, 64 each */
    ck_assert_uint_eq(use[m], NFLOWS);
}
END_TEST

static void last_port(uint32_t port, const uint8_t *frame, size_t len, uint64_t t, void *arg) {
  (void)frame, (void)len, (void)t;
  *(uint32_t *)arg = port;
}

/* Flowlets (a what-if): one flow's packets within the gap keep their
 * member; after a longer gap each flowlet draws again, so a flow whose
 * packets are all far apart uses every member. */
START_TEST(ecmp_flowlets) {
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, WAYS + 1, 1000000000u);
  cfg.ecmp_mode = JCT_SW_ECMP_FLOWLET;
  cfg.ecmp_flowlet_gap_ns = 1000000;
  jct_switch_t *sw;
  char err[256];
  ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
  uint32_t ports[WAYS] = {1, 2, 3, 4};
  const uint8_t mac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, 6};
  ck_assert_int_eq(jct_switch_add_mac_ecmp(sw, mac, ports, WAYS), 0);
  uint8_t f[2048];
  size_t n = craft_flow_frame(f, 0, 5, 50000);
  uint64_t t = 1000;
  uint32_t first = 0, port = 0, used = 0;
  for (int i = 0; i < 100; i++, t += 100000) { /* 100 us apart: one flowlet */
    ck_assert_int_eq(jct_switch_rx(sw, 0, f, n, t), 0);
    jct_switch_poll(sw, t + 50000, last_port, &port);
    if (i == 0) first = port;
    ck_assert_uint_eq(port, first);
  }
  for (int i = 0; i < 64; i++) { /* 2 ms apart: a flowlet each */
    t += 2000000;
    ck_assert_int_eq(jct_switch_rx(sw, 0, f, n, t), 0);
    jct_switch_poll(sw, t + 50000, last_port, &port);
    used |= 1u << port;
  }
  ck_assert_msg(used == 0x1e, "64 flowlets used members %#x", used);
  ck_assert_int_eq(jct_switch_check(sw, err, sizeof err), 0);
  jct_switch_free(sw);
  cfg.ecmp_flowlet_gap_ns = 0;
  ck_assert_int_eq(jct_switch_new(&sw, &cfg, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "ecmp_flowlet_gap_ns"));
}
END_TEST

static void count_port(uint32_t port, const uint8_t *frame, size_t len, uint64_t t, void *arg) {
  (void)frame, (void)len, (void)t;
  ((uint32_t *)arg)[port]++;
}

START_TEST(no_flood_ports) {
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, 4, 1000000000u);
  cfg.port[2].no_flood = cfg.port[3].no_flood = true;
  jct_switch_t *sw;
  char err[256];
  ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
  uint8_t f[2048];
  size_t n = craft_flow_frame(f, 0, 5, 49152);
  memset(f, 0xff, 6); /* broadcast */
  uint32_t out[4] = {0};
  ck_assert_int_eq(jct_switch_rx(sw, 0, f, n, 0), 0);
  jct_switch_poll(sw, 1000000, count_port, out);
  ck_assert_uint_eq(out[1], 1);
  ck_assert_uint_eq(out[2] + out[3], 0);
  ck_assert_int_eq(jct_switch_check(sw, err, sizeof err), 0);
  jct_switch_free(sw);
}
END_TEST

/* ---- place --------------------------------------------------------------- */

static jct_clos_t shape(const char *topo, const char *place) {
  jct_clos_t c;
  char err[256];
  jct_clos_default(&c);
  ck_assert_msg(jct_clos_parse(&c, topo, err, sizeof err) == 0, "%s", err);
  if (place) ck_assert_msg(jct_placement_parse(&c.placement, place, err, sizeof err) == 0, "%s", err);
  return c;
}

START_TEST(placements) {
  char err[256];
  uint32_t h[8];
  jct_clos_t c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "packed");
  ck_assert_uint_eq(jct_clos_hosts(&c), 8);
  ck_assert_int_eq(jct_clos_place(&c, 8, h, err, sizeof err), 0);
  for (uint32_t i = 0; i < 8; i++)
    ck_assert_uint_eq(h[i], i);
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "spread");
  ck_assert_int_eq(jct_clos_place(&c, 8, h, err, sizeof err), 0);
  for (uint32_t i = 0; i < 8; i++) { /* ring neighbours under different leaves */
    ck_assert_uint_eq(h[i] / 2, i % 4);
    ck_assert_uint_ne(h[i] / 2, h[(i + 1) % 8] / 2);
  }
  /* random: a permutation, the same for the same seed, another for another */
  uint32_t r1[8], r2[8], r3[8];
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "random:3");
  ck_assert_int_eq(jct_clos_place(&c, 8, r1, err, sizeof err), 0);
  ck_assert_int_eq(jct_clos_place(&c, 8, r2, err, sizeof err), 0);
  ck_assert_mem_eq(r1, r2, sizeof r1);
  uint32_t seen = 0;
  for (uint32_t i = 0; i < 8; i++)
    seen |= 1u << r1[i];
  ck_assert_uint_eq(seen, 0xff);
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "random:4");
  ck_assert_int_eq(jct_clos_place(&c, 8, r3, err, sizeof err), 0);
  ck_assert_msg(memcmp(r1, r3, sizeof r1) != 0, "seeds 3 and 4 placed alike");
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "7,0,6,1");
  ck_assert_int_eq(jct_clos_place(&c, 4, h, err, sizeof err), 0);
  ck_assert_uint_eq(h[0], 7);
  ck_assert_uint_eq(h[3], 1);
  /* refusals name the problem */
  ck_assert_int_eq(jct_clos_place(&c, 5, h, err, sizeof err), JCT_EINVAL); /* list too short */
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "7,0,7");
  ck_assert_int_eq(jct_clos_place(&c, 3, h, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "host 7 holds two ranks"));
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "8");
  ck_assert_int_eq(jct_clos_place(&c, 1, h, err, sizeof err), JCT_EINVAL);
  c = shape("leaf-spine:leaves=2,spines=1,hosts-per-leaf=3", NULL);
  ck_assert_int_eq(jct_clos_place(&c, 7, h, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "6 hosts"));
}
END_TEST

START_TEST(bad_shapes_and_names) {
  char err[256];
  jct_clos_t c;
  jct_clos_default(&c);
  const char *bad[][2] = {{"leaf-spine:leaves=0,spines=2,hosts-per-leaf=2", "leaves=0"},
                          {"leaf-spine:leaves=4,spines=0,hosts-per-leaf=2", "spines=0"},
                          {"leaf-spine:leaves=4,spines=2", "hosts-per-leaf"},
                          {"leaf-spine:leaves=4,spines=2,hosts-per-leaf=2,colour=red", "colour"},
                          {"fat-tree", "fat-tree"},
                          {"leaf-spine:leaves=4,spines=2,hosts-per-leaf=2,uplink-rate=fast",
                           "uplink-rate=fast"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_int_eq(jct_clos_parse(&c, bad[i][0], err, sizeof err), JCT_EINVAL);
    ck_assert_msg(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
  }
  jct_placement_t p;
  ck_assert_int_eq(jct_placement_parse(&p, "tight", err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "tight"));
  c = shape("leaf-spine:leaves=4,spines=2,hosts-per-leaf=2,uplink-rate=50mbit,uplink-delay=2us",
            NULL);
  ck_assert_uint_eq(c.uplink_rate_bps, 50000000u);
  ck_assert_uint_eq(c.uplink_delay_ns, 2000u);
  /* link names: uplinks after the 8 ranks' ports, then downlinks */
  ck_assert_int_eq(jct_clos_port_number(&c, 8, "leaf0:spine0"), 8);
  ck_assert_int_eq(jct_clos_port_number(&c, 8, "leaf1:spine1"), 8 + 1 * 2 + 1);
  ck_assert_int_eq(jct_clos_port_number(&c, 8, "spine1:leaf2"), 8 + 8 + 1 * 4 + 2);
  ck_assert_int_eq(jct_clos_port_number(&c, 8, "leaf4:spine0"), -1);
  ck_assert_int_eq(jct_clos_port_number(&c, 8, "leaf1:spine0x"), -1);
  /* one spelling per link: no sign, space or empty number (sscanf's %u took
   * "leaf-0" for leaf 0 and "leaf+1" for leaf 1) */
  const char *aliases[] = {"leaf-0:spine0", "leaf+1:spine0", "leaf 1:spine0", "leaf1:spine+0",
                           "leaf:spine0",   "leaf1:",        "spine-0:leaf1", "leaf1spine0"};
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    ck_assert_msg(jct_clos_port_number(&c, 8, aliases[i]) == -1, "'%s' named a link", aliases[i]);
  char out[256];
  ck_assert_int_eq(jct_clos_spec_ports(&c, 8, "drop p=0.1 port=leaf1:spine0 dir=out", out,
                                       sizeof out, err, sizeof err),
                   0);
  ck_assert_str_eq(out, "drop p=0.1 port=10 dir=out");
  ck_assert_int_eq(jct_clos_spec_ports(&c, 8, "drop p=0.1 port=3", out, sizeof out, err,
                                       sizeof err),
                   0);
  ck_assert_str_eq(out, "drop p=0.1 port=3");
  ck_assert_int_eq(jct_clos_spec_ports(&c, 8, "drop p=0.1 port=leaf9:spine0", out, sizeof out,
                                       err, sizeof err),
                   JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "leaf9:spine0"));
}
END_TEST

/* ---- qps: several QPs per connection -------------------------------------- */

START_TEST(split_qps) {
  jct_schedule_t *s, *t;
  char err[256];
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 4, 1000003, 1, err, sizeof err), 0);
  ck_assert_int_eq(jct_schedule_split_qps(&t, s, 4, err, sizeof err), 0);
  ck_assert_uint_eq(t->nconns, 4 * s->nconns);
  ck_assert_uint_eq(t->nops, 4 * s->nops);
  ck_assert_msg(jct_schedule_validate(t, err, sizeof err) == 0, "%s", err);
  for (uint32_t i = 0; i < s->nops; i++) {
    uint64_t sum = 0;
    for (uint32_t q = 0; q < 4; q++) {
      const jct_op_t *p = &t->ops[i * 4 + q];
      sum += p->bytes;
      ck_assert_uint_le(p->bytes - s->ops[i].bytes / 4, 1); /* even, to a byte */
      const jct_conn_t *c = &t->conns[p->conn], *o = &s->conns[s->ops[i].conn];
      ck_assert_uint_eq(c->src, o->src);
      ck_assert_uint_eq(c->dst, o->dst);
      ck_assert_uint_eq(p->conn / 4, s->ops[i].conn);
      /* every part of every dependency */
      ck_assert_uint_eq(p->ndeps, 4 * s->ops[i].ndeps);
      for (uint32_t d = 0; d < p->ndeps; d++)
        ck_assert_uint_eq(p->deps[d] / 4, s->ops[i].deps[d / 4]);
    }
    ck_assert_uint_eq(sum, s->ops[i].bytes);
  }
  jct_schedule_free(t);
  ck_assert_int_eq(jct_schedule_split_qps(&t, s, 0, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct_schedule_split_qps(&t, s, 65, err, sizeof err), JCT_EINVAL);
  jct_schedule_free(s);
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 4, 12, 1, err, sizeof err), 0); /* 3 B msgs */
  ck_assert_int_eq(jct_schedule_split_qps(&t, s, 4, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "cannot be split across 4 QPs"));
  jct_schedule_free(s);
}
END_TEST

/* ---- fabric (namespaces, the built jctlab) ------------------------------- */

#define RANKS 8
#define BYTES (256u << 10)

static json_t *ring(const char *placement, const char *seed, const char *qps, int *status) {
  const char *args[] = {"run", "--synth", "ring", "--ranks", "8", "--bytes", "256KiB",
                        "--rate", "5mbit", "--reps", "1", "--topology",
                        "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "--placement",
                        placement, "--ecmp-seed", seed, "--qps-per-connection", qps, NULL};
  char *err = NULL;
  json_t *doc = jctlab_json_retry(args, status, &err);
  ck_assert_msg(*status == 0 && doc, "jctlab run exited %d: %s", *status, err);
  free(err);
  return doc;
}

/* Bytes of flow src->dst:sport on the link (0: not there). */
static json_int_t flow_bytes(json_t *link, uint32_t src, uint32_t dst, uint16_t sport) {
  json_t *flows = json_object_get(link, "flows");
  for (size_t i = 0; i < json_array_size(flows); i++) {
    json_t *f = json_array_get(flows, i);
    if (jint(f, "src_rank") == src && jint(f, "dst_rank") == dst && jint(f, "udp_sport") == sport)
      return jint(f, "bytes");
  }
  return 0;
}

/* Connection c's source end: rxe's port for its QPN (ranks.h, uroce_qp.c). */
static uint16_t sport_of(uint32_t conn) {
  return (uint16_t)(0xc000u + (((JCT__UROCE_QPN_BASE + 2 * conn) * 0x61c88647u) >> 18));
}

/* Each ring connection i -> i+1 whose ends are under different leaves is
 * on the uplink the hash picks and the downlink to its destination, with
 * the schedule's payload plus headers; on no other uplink; connections
 * within a leaf on no link. Returns how many crossed. */
static uint32_t check_paths(json_t *doc, const uint32_t host_of[RANKS], uint32_t seed,
                            uint32_t nqps) {
  /* a ring of 8 over 256 KiB: 2 * 7 messages of 32 KiB per connection,
   * split over its nqps QPs */
  const double payload = 2.0 * (RANKS - 1) * (BYTES / RANKS) / nqps;
  uint32_t crossed = 0;
  json_t *qps = jget(doc, "qps");
  ck_assert_uint_eq(json_array_size(qps), RANKS * nqps);
  for (uint32_t c = 0; c < RANKS * nqps; c++) {
    json_t *q = json_array_get(qps, c);
    uint32_t s = (uint32_t)jint(q, "src"), d = (uint32_t)jint(q, "dst");
    uint32_t ls = host_of[s] / 2, ld = host_of[d] / 2;
    uint16_t sp = sport_of(c);
    uint32_t spine = ref_hash(seed, s, d, sp, 4791) % 2;
    for (uint32_t x = 0; x < 2; x++) {
      char up[32], down[32];
      snprintf(up, sizeof up, "leaf%u:spine%u", ls, x);
      snprintf(down, sizeof down, "spine%u:leaf%u", x, ld);
      json_int_t bu = flow_bytes(jlink(doc, up), s, d, sp),
                 bd = flow_bytes(jlink(doc, down), s, d, sp);
      if (ls == ld || x != spine) {
        ck_assert_msg(bu == 0, "connection %u (%u->%u) on %s", c, s, d, up);
        continue;
      }
      ck_assert_msg(bu >= payload && bu < payload * 1.05,
                    "connection %u (%u->%u:%u) carried %lld bytes on %s, payload %.0f", c, s, d,
                    sp, (long long)bu, up, payload);
      ck_assert_msg(bd == bu, "connection %u: %lld bytes up, %lld down", c, (long long)bu,
                    (long long)bd);
      crossed++;
    }
  }
  return crossed;
}

START_TEST(ring_across_spines) {
  int status;
  json_t *doc = ring("spread", "5", "1", &status);
  uint32_t host_of[RANKS];
  for (uint32_t i = 0; i < RANKS; i++)
    host_of[i] = (i % 4) * 2 + i / 4;
  ck_assert_uint_eq(check_paths(doc, host_of, 5, 1), RANKS);
  /* the imbalance is max / mean of the uplinks' bytes, recomputed */
  json_t *links = jget(doc, "fabric_links.links");
  ck_assert_uint_eq(json_array_size(links), 16);
  double max = 0, sum = 0;
  for (size_t i = 0; i < 16; i++) {
    json_t *l = json_array_get(links, i);
    if (!jbool(l, "uplink")) continue;
    double b = (double)jint(l, "bytes");
    sum += b;
    max = b > max ? b : max;
  }
  ck_assert_double_eq_tol(jnum(doc, "fabric_links.ecmp_imbalance"), max * 8 / sum, 1e-9);
  json_decref(doc);
}
END_TEST

START_TEST(ring_packed) {
  int status;
  json_t *doc = ring("packed", "5", "1", &status);
  uint32_t host_of[RANKS];
  for (uint32_t i = 0; i < RANKS; i++)
    host_of[i] = i;
  ck_assert_uint_eq(check_paths(doc, host_of, 5, 1), 4); /* 1->2, 3->4, 5->6, 7->0 */
  json_decref(doc);
}
END_TEST

/* Four QPs per connection: 32 QPs, each on the uplink its own source port
 * hashes to, a quarter of the bytes each. */
START_TEST(ring_four_qps) {
  int status;
  json_t *doc = ring("spread", "5", "4", &status);
  uint32_t host_of[RANKS];
  for (uint32_t i = 0; i < RANKS; i++)
    host_of[i] = (i % 4) * 2 + i / 4;
  ck_assert_uint_eq(check_paths(doc, host_of, 5, 4), 4 * RANKS);
  ck_assert_int_eq(jint(doc, "config.qps_per_connection"), 4);
  json_decref(doc);
}
END_TEST

/* PFC between switches: a 7 -> 1 incast on 4 leaves x 1 spine fills the
 * spine's downlink to rank 0's leaf; the spine's XOFF stops the other
 * leaves' uplinks (their egress paused), nothing is dropped, and the
 * downlink carries the six senders under other leaves, all their bytes. */
START_TEST(pfc_between_switches) {
  const char *args[] = {"run", "--synth", "incast", "--ranks", "8", "--bytes", "256KiB",
                        "--rate", "5mbit", "--reps", "1", "--topology",
                        "leaf-spine:leaves=4,spines=1,hosts-per-leaf=2", NULL};
  int status;
  char *err = NULL;
  json_t *doc = jctlab_json_retry(args, &status, &err);
  ck_assert_msg(status == 0 && doc, "jctlab run exited %d: %s", status, err);
  free(err);
  uint64_t paused = 0;
  for (uint32_t l = 0; l < 4; l++) {
    char up[32], down[32];
    snprintf(up, sizeof up, "leaf%u:spine0", l);
    snprintf(down, sizeof down, "spine0:leaf%u", l);
    json_t *u = jlink(doc, up), *d = jlink(doc, down);
    ck_assert_ptr_nonnull(u);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(jint(u, "drops") + jint(d, "drops"), 0);
    if (l) paused += (uint64_t)jint(u, "paused_ns");
  }
  ck_assert_msg(paused > 0, "no leaf uplink was paused by the spine");
  json_t *down0 = jlink(doc, "spine0:leaf0");
  for (uint32_t src = 2; src < 8; src++) {
    json_int_t b = 0;
    json_t *flows = json_object_get(down0, "flows");
    for (size_t i = 0; i < json_array_size(flows); i++) {
      json_t *f = json_array_get(flows, i);
      if (jint(f, "src_rank") == src && jint(f, "dst_rank") == 0) b += jint(f, "bytes");
    }
    ck_assert_msg(b >= (json_int_t)BYTES, "rank %u: %lld bytes down to leaf 0", src, (long long)b);
  }
  json_decref(doc);
}
END_TEST

/* PFC across two tiers, no congestion control: a 7 -> 1 incast to rank 0
 * (leaf 0) on 4 leaves x 2 spines. Leaf 0's port to rank 0 is the
 * bottleneck; its XOFFs pause both spines' downlinks to it (hop 1); the
 * spines' buffers then fill from the other leaves' uplinks, and their
 * XOFFs pause every uplink that carried a sender's data (hop 2); the
 * leaves' XOFFs pause the senders' NICs (hop 3). Leaf 0's own uplinks,
 * upstream of nothing, are never paused; nothing is dropped. */
START_TEST(pfc_spreads_across_spines) {
  const char *args[] = {"run",   "--synth", "incast", "--ranks",    "8", "--bytes", "512KiB",
                        "--rate", "10mbit", "--tdf",  "4",          "--reps", "1", "--topology",
                        "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", NULL};
  int status;
  char *err = NULL;
  json_t *doc = jctlab_json_retry_dilated(args, &status, &err); /* x4 -> x16 -> x64 */
  ck_assert_msg(status == 0 && doc, "jctlab run exited %d: %s", status, err);
  free(err);
  ck_assert_str_eq(json_string_value(jget(doc, "config.cc")), "none");
  uint32_t data_uplinks = 0;
  for (uint32_t s = 0; s < 2; s++) {
    char name[32];
    snprintf(name, sizeof name, "spine%u:leaf0", s);
    ck_assert_msg(jint(jlink(doc, name), "paused_ns") > 0, "%s never paused", name);
    for (uint32_t l = 0; l < 4; l++) {
      snprintf(name, sizeof name, "leaf%u:spine%u", l, s);
      json_t *up = jlink(doc, name);
      ck_assert_int_eq(jint(up, "drops"), 0);
      if (l == 0) {
        ck_assert_int_eq(jint(up, "paused_ns"), 0);
      } else if (jint(up, "bytes") >= 256 << 10) {
        ck_assert_msg(jint(up, "paused_ns") > 0, "%s carried data, never paused", name);
        data_uplinks++;
      }
    }
  }
  ck_assert_uint_ge(data_uplinks, 2);
  ck_assert_int_gt(jint(doc, "transport.nic_paused_ns"), 0);
  json_decref(doc);
}
END_TEST

static void expect_bad(const char *const extra[], const char *word) {
  char *argv[40] = {JCT_BINARY, "run", "--synth", "ring", "--ranks", "8", "--bytes", "64KiB",
                    "--reps", "1"};
  size_t n = 10;
  for (size_t i = 0; extra[i]; i++)
    argv[n++] = (char *)extra[i];
  argv[n] = NULL;
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  ck_assert_msg(count_lines(r.err) == 1, "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, word), "stderr: %s (wanted %s)", r.err, word);
  result_free(&r);
}

START_TEST(bad_input) {
  const char *zero_spines[] = {"--topology", "leaf-spine:leaves=4,spines=0,hosts-per-leaf=2",
                               NULL};
  expect_bad(zero_spines, "spines=0");
  const char *zero_leaves[] = {"--topology", "leaf-spine:leaves=0,spines=2,hosts-per-leaf=2",
                               NULL};
  expect_bad(zero_leaves, "leaves=0");
  const char *few_hosts[] = {"--topology", "leaf-spine:leaves=3,spines=2,hosts-per-leaf=2", NULL};
  expect_bad(few_hosts, "6 hosts");
  const char *placement[] = {"--topology", "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2",
                             "--placement", "tight", NULL};
  expect_bad(placement, "tight");
  const char *ecmp[] = {"--topology", "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "--ecmp",
                        "flowlet:0", NULL};
  expect_bad(ecmp, "ecmp 'flowlet:0'");
  const char *port[] = {"--topology", "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2", "--inject",
                        "drop p=0.1 port=leaf7:spine0", NULL};
  expect_bad(port, "leaf7:spine0");
}
END_TEST

Suite *clos_suite(void) {
  Suite *s = suite_create("clos");
  TCase *ecmp = tcase_create("ecmp");
  tcase_add_test(ecmp, hash_is_crc32_of_the_5tuple);
  tcase_add_test(ecmp, ecmp_deterministic_and_seeded);
  tcase_add_test(ecmp, ecmp_per_packet_sprays);
  tcase_add_test(ecmp, ecmp_flowlets);
  tcase_add_test(ecmp, no_flood_ports);
  suite_add_tcase(s, ecmp);
  TCase *place = tcase_create("place");
  tcase_add_test(place, placements);
  tcase_add_test(place, bad_shapes_and_names);
  tcase_add_test(place, split_qps);
  suite_add_tcase(s, place);
  TCase *fabric = tcase_create("fabric");
  tcase_set_timeout(fabric, 300);
  tcase_add_test(fabric, ring_across_spines);
  tcase_add_test(fabric, ring_packed);
  tcase_add_test(fabric, pfc_spreads_across_spines);
  tcase_add_test(fabric, ring_four_qps);
  tcase_add_test(fabric, pfc_between_switches);
  tcase_add_test(fabric, bad_input);
  suite_add_tcase(s, fabric);
  return s;
}
