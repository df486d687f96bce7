/* Decoding frames: every layer, every reason a frame is set aside, and
 * frames cut anywhere. */
#include <stdlib.h>
#include <string.h>

#include "craft.h"
#include "jctlab/decode.h"
#include "suites.h"

static const uint8_t mac_x[6] = {0x52, 0x54, 0x00, 0x00, 0x00, 0x07};

static size_t write_only(uint8_t *f, size_t cap, craft_roce_t *c) {
  c->h.bth.opcode = JCT_OP_RC_RDMA_WRITE_ONLY;
  c->h.bth.dest_qp = 0x11;
  c->h.bth.psn = 0xabcdef;
  c->h.reth.dma_len_bytes = c->payload_bytes;
  c->h.reth.rkey = 0x1234;
  return craft_roce(f, cap, c);
}

START_TEST(every_opcode_ipv4) {
  for (unsigned op = 0; op < 256; op++) {
    if (!jct_opcode_info((uint8_t)op)) continue;
    craft_roce_t c = {.payload_bytes = 37};
    c.h.bth.opcode = (uint8_t)op;
    c.h.bth.pad_count = 3; /* 37 + 3 = 40 */
    c.h.bth.dest_qp = 0x345;
    c.h.bth.psn = op * 1000;
    c.h.aeth.syndrome = 0x60;
    uint8_t f[512];
    size_t n = craft_roce(f, sizeof f, &c);
    jct_packet_t p;
    ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_ROCE);
    ck_assert_uint_eq(p.roce.bth.opcode, op);
    ck_assert_ptr_eq(p.op, jct_opcode_info((uint8_t)op));
    ck_assert_uint_eq(p.roce.bth.dest_qp, 0x345);
    ck_assert_uint_eq(p.roce.bth.psn, op * 1000);
    ck_assert_uint_eq(p.payload_bytes, 37);
    ck_assert(p.icrc_checked && p.icrc_ok);
    if (p.op->ext & JCT_EXT_AETH) ck_assert_uint_eq(p.roce.aeth.syndrome, 0x60);
    char a[64], b[64];
    ck_assert_str_eq(jct_addr_str(&p.src, a, sizeof a), "198.18.0.1");
    ck_assert_str_eq(jct_addr_str(&p.dst, b, sizeof b), "198.18.0.2");
    ck_assert_uint_eq(p.udp_dport, 4791);
  }
}
END_TEST

START_TEST(vlan_ipv6_ecn) {
  craft_roce_t c = {.ipv6 = true,
                    .vlan = true,
                    .vlan_id = 100,
                    .pcp = 3,
                    .dscp = 26,
                    .ecn = 3,
                    .src = "2001:2::a",
                    .dst = "2001:2:0:1::b",
                    .payload_bytes = 1024};
  uint8_t f[2048];
  size_t n = write_only(f, sizeof f, &c);
  jct_packet_t p;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_ROCE);
  ck_assert(p.vlan);
  ck_assert_uint_eq(p.vlan_id, 100);
  ck_assert_uint_eq(p.pcp, 3);
  ck_assert_uint_eq(p.dscp, 26);
  ck_assert_uint_eq(p.ecn, JCT_ECN_CE);
  ck_assert_uint_eq(p.src.family, 6);
  char a[64];
  ck_assert_str_eq(jct_addr_str(&p.src, a, sizeof a), "2001:2::a");
  ck_assert_str_eq(jct_addr_str(&p.dst, a, sizeof a), "2001:2:0:1::b");
  ck_assert_uint_eq(p.roce.reth.dma_len_bytes, 1024);
  ck_assert_uint_eq(p.roce.reth.rkey, 0x1234);
  ck_assert_uint_eq(p.payload_bytes, 1024);
  ck_assert(p.icrc_ok);

  /* A second (inner) tag: the outer one's priority is kept. */
  uint8_t q[2048];
  memcpy(q, f, 16);                                  /* MACs and the outer tag */
  const uint8_t inner[4] = {0x81, 0x00, 0xe0, 0x07}; /* PCP 7, VID 7 */
  memcpy(q + 16, inner, 4);
  memcpy(q + 20, f + 16, n - 16);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, q, n + 4, n + 4, &p), JCT_PKT_ROCE);
  ck_assert_uint_eq(p.pcp, 3);
  ck_assert_uint_eq(p.vlan_id, 100);
  ck_assert(p.icrc_ok);
}
END_TEST

START_TEST(bad_icrc_and_cnp) {
  craft_roce_t c = {.payload_bytes = 100, .bad_icrc = true};
  uint8_t f[512];
  size_t n = write_only(f, sizeof f, &c);
  jct_packet_t p;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_ROCE);
  ck_assert(p.icrc_checked);
  ck_assert(!p.icrc_ok);

  craft_roce_t cnp = {.payload_bytes = JCT_CNP_PAYLOAD_BYTES, .ecn = 1};
  cnp.h.bth.opcode = JCT_OP_CNP;
  cnp.h.bth.dest_qp = 0x22;
  cnp.h.bth.becn = true;
  n = craft_roce(f, sizeof f, &cnp);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_ROCE);
  ck_assert_uint_eq(p.op->kind, JCT_OPK_CNP);
  ck_assert(p.roce.bth.becn);
  ck_assert(p.icrc_ok);
}
END_TEST

START_TEST(pfc_and_pause) {
  uint16_t quanta[8] = {0, 0, 0, 0xffff, 0, 0, 0x10, 0};
  uint8_t f[64];
  size_t n = craft_pfc(f, sizeof f, mac_x, 0x48, quanta);
  jct_packet_t p;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_PFC);
  ck_assert_uint_eq(p.pfc.class_enable, 0x48);
  ck_assert_uint_eq(p.pfc.quanta[3], 0xffff);
  ck_assert_uint_eq(p.pfc.quanta[6], 0x10);
  ck_assert(!p.pfc.is_pause);
  ck_assert(memcmp(p.src_mac, mac_x, 6) == 0);

  n = craft_pause(f, sizeof f, mac_x, 300);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_PFC);
  ck_assert(p.pfc.is_pause);
  ck_assert_uint_eq(p.pfc.class_enable, 0xff);
  for (int i = 0; i < 8; i++)
    ck_assert_uint_eq(p.pfc.quanta[i], 300);

  f[15] = 0x02; /* MAC control opcode 0x0102: neither */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_OTHER);
  ck_assert_int_eq(p.reason, JCT_REASON_MAC_CONTROL);
  n = craft_pfc(f, sizeof f, mac_x, 0x08, quanta);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, 20, 20, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_SHORT_PFC);
}
END_TEST

/* Set aside, with the reason: not IP, not UDP, another port, a fragment. */
START_TEST(other_frames) {
  craft_roce_t c = {.payload_bytes = 8};
  uint8_t f[512];
  size_t n = write_only(f, sizeof f, &c);
  jct_packet_t p;

  uint8_t g[512];
  memcpy(g, f, n);
  g[12] = 0x08, g[13] = 0x06; /* ARP */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_OTHER);
  ck_assert_int_eq(p.reason, JCT_REASON_NOT_IP);

  memcpy(g, f, n);
  g[14 + 9] = 6; /* TCP */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_OTHER);
  ck_assert_int_eq(p.reason, JCT_REASON_NOT_UDP);

  c.udp_dport = 53;
  n = write_only(f, sizeof f, &c);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_OTHER);
  ck_assert_int_eq(p.reason, JCT_REASON_NOT_ROCE_PORT);
  ck_assert_uint_eq(p.udp_dport, 53);

  c.udp_dport = 0;
  n = write_only(f, sizeof f, &c);
  f[14 + 6] = 0x20; /* more fragments */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, &p), JCT_PKT_OTHER);
  ck_assert_int_eq(p.reason, JCT_REASON_IP_FRAGMENT);
  ck_assert_str_eq(jct_reason_key(p.reason), "ip_fragment");
  ck_assert_str_eq(jct_reason_key(JCT_REASON_SHORT_BTH), "short_bth");
  ck_assert_str_eq(jct_reason_key((jct_reason_t)999), "unknown");
}
END_TEST

/* Headers that disagree with each other or with the frame. */
START_TEST(malformed_frames) {
  craft_roce_t c = {.payload_bytes = 64};
  uint8_t f[512];
  size_t n = write_only(f, sizeof f, &c);
  jct_packet_t p;
  uint8_t g[512];

  memcpy(g, f, n);
  g[14] = 0x43; /* IHL 3 */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_BAD_IP_HEADER);

  memcpy(g, f, n);
  g[14 + 2] = 0x7f; /* IP total length beyond the frame */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_BAD_IP_LENGTH);

  memcpy(g, f, n);
  g[34 + 4] = 0x7f; /* UDP length beyond IP */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_BAD_UDP_LENGTH);

  memcpy(g, f, n);
  g[42] = 0x15; /* reserved opcode */
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_UNKNOWN_OPCODE);
  ck_assert_uint_eq(p.roce.bth.opcode, 0x15);

  /* WRITE_ONLY needs a RETH: claim a UDP length that leaves no room for it. */
  craft_roce_t s = {.payload_bytes = 0};
  s.h.bth.opcode = JCT_OP_RC_SEND_ONLY;
  n = craft_roce(g, sizeof g, &s);
  g[42] = JCT_OP_RC_RDMA_WRITE_ONLY;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_SHORT_EXT_HEADERS);

  s.h.bth.pad_count = 3; /* pad larger than an empty payload: craft writes 3 pad bytes... */
  n = craft_roce(g, sizeof g, &s);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_ROCE);
  ck_assert_uint_eq(p.payload_bytes, 0);
  /* ...so cut the UDP and IP lengths by 3 to leave the pad count without its bytes. */
  g[14 + 3] = (uint8_t)(g[14 + 3] - 3);
  g[34 + 5] = (uint8_t)(g[34 + 5] - 3);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, g, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_BAD_PAD);

  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, 10, 10, &p), JCT_PKT_MALFORMED);
  ck_assert_int_eq(p.reason, JCT_REASON_SHORT_L2);
  ck_assert_int_eq(jct_decode(12345, f, n, n, &p), JCT_PKT_MALFORMED);
  ck_assert(!jct_link_supported(12345));
}
END_TEST

/* A frame cut by the snap length at every byte: never read past caplen
 * (ASan watches), classified by where the cut falls. */
START_TEST(truncated_everywhere) {
  craft_roce_t c = {.payload_bytes = 200};
  uint8_t f[512];
  size_t n = write_only(f, sizeof f, &c);
  size_t hdrs_end = 14 + 20 + 8 + 12 + 16; /* through the RETH */
  for (size_t cut = 0; cut <= n; cut++) {
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, f, cut);
    jct_packet_t p;
    jct_pkt_kind_t k = jct_decode(JCT_LINK_EN10MB, copy, cut, n, &p);
    if (cut >= hdrs_end) {
      ck_assert_int_eq(k, JCT_PKT_ROCE);
      ck_assert_uint_eq(p.payload_bytes, 200); /* from the IP and UDP lengths */
      ck_assert(p.icrc_checked == (cut == n));
      ck_assert(cut < n || p.icrc_ok);
    } else {
      ck_assert_int_eq(k, JCT_PKT_MALFORMED);
    }
    free(copy);
  }
}
END_TEST

/* Ethernet pads frames to 60 bytes: the IP length decides where RoCE ends. */
START_TEST(ethernet_padding) {
  craft_roce_t c = {0};
  c.h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
  c.h.aeth.syndrome = 0x1f;
  uint8_t f[128];
  size_t n = craft_roce(f, sizeof f, &c); /* 14 + 20 + 8 + 16 + 4 = 62 */
  memset(f + n, 0, 8);
  jct_packet_t p;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n + 8, n + 8, &p), JCT_PKT_ROCE);
  ck_assert(p.icrc_ok);
  ck_assert_uint_eq(p.payload_bytes, 0);
}
END_TEST

START_TEST(other_link_types) {
  craft_roce_t c = {.payload_bytes = 16};
  uint8_t f[256];
  size_t n = write_only(f, sizeof f, &c);
  jct_packet_t p;
  /* raw IP: the frame less its Ethernet header */
  ck_assert_int_eq(jct_decode(JCT_LINK_RAW, f + 14, n - 14, n - 14, &p), JCT_PKT_ROCE);
  ck_assert(p.icrc_ok);
  ck_assert_int_eq(jct_decode(JCT_LINK_IPV4, f + 14, n - 14, n - 14, &p), JCT_PKT_ROCE);

  /* Linux cooked v1: 16-byte header, protocol last, sender's MAC inside */
  uint8_t sll[256] = {0x00, 0x04, 0x00, 0x01, 0x00, 0x06};
  memcpy(sll + 6, mac_x, 6);
  sll[14] = 0x08;
  memcpy(sll + 16, f + 14, n - 14);
  ck_assert_int_eq(jct_decode(JCT_LINK_LINUX_SLL, sll, n + 2, n + 2, &p), JCT_PKT_ROCE);
  ck_assert(memcmp(p.src_mac, mac_x, 6) == 0);
  ck_assert(p.icrc_ok);

  /* Linux cooked v2: 20-byte header, protocol first */
  uint8_t sll2[256] = {0x08, 0x00};
  sll2[11] = 6;
  memcpy(sll2 + 12, mac_x, 6);
  memcpy(sll2 + 20, f + 14, n - 14);
  ck_assert_int_eq(jct_decode(JCT_LINK_LINUX_SLL2, sll2, n + 6, n + 6, &p), JCT_PKT_ROCE);
  ck_assert(p.icrc_ok);
  ck_assert(jct_link_supported(JCT_LINK_LINUX_SLL2));
}
END_TEST

Suite *decode_suite(void) {
  Suite *s = suite_create("decode");
  TCase *core = tcase_create("core");
  tcase_add_test(core, every_opcode_ipv4);
  tcase_add_test(core, vlan_ipv6_ecn);
  tcase_add_test(core, bad_icrc_and_cnp);
  tcase_add_test(core, pfc_and_pause);
  tcase_add_test(core, other_link_types);
  tcase_add_test(core, ethernet_padding);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, other_frames);
  tcase_add_test(limits, malformed_frames);
  tcase_add_test(limits, truncated_everywhere);
  suite_add_tcase(s, limits);
  return s;
}
