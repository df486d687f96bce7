/* RoCEv2 wire format: the opcode table, header read/write, the ICRC. */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "craft.h"
#include "jctlab/decode.h"
#include "jctlab/roce.h"
#include "suites.h"

#define TRACE JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap"

START_TEST(opcode_table) {
  unsigned known = 0;
  for (unsigned op = 0; op < 256; op++) {
    const struct jct_opcode_info *e = jct_opcode_info((uint8_t)op);
    if (!e) {
      ck_assert_str_eq(jct_opcode_name((uint8_t)op), "UNKNOWN");
      continue;
    }
    known++;
    ck_assert_str_eq(jct_opcode_name((uint8_t)op), e->name);
    ck_assert_uint_ge(e->hdr_bytes, JCT_BTH_BYTES);
    ck_assert(e->pos == JCT_POS_FIRST || e->pos == JCT_POS_MIDDLE || e->pos == JCT_POS_LAST ||
              e->pos == JCT_POS_ONLY);
  }
  ck_assert_uint_eq(known, 38);
  ck_assert_str_eq(jct_opcode_name(0x07), "RC_RDMA_WRITE_MIDDLE");
  ck_assert_str_eq(jct_opcode_name(0x81), "CNP");
  ck_assert_uint_eq(jct_opcode_info(0x0b)->hdr_bytes, 12 + 16 + 4); /* RETH + ImmDt */
  ck_assert_uint_eq(jct_opcode_info(0x12)->hdr_bytes, 12 + 4 + 8);  /* AETH + AtomicAckETH */
  ck_assert_uint_eq(jct_opcode_info(0x13)->hdr_bytes, 12 + 28);     /* AtomicETH */
  ck_assert_uint_eq(jct_opcode_info(0x65)->hdr_bytes, 12 + 8 + 4);  /* DETH + ImmDt */
  ck_assert_ptr_null(jct_opcode_info(0x15));
  ck_assert_ptr_null(jct_opcode_info(0x40)); /* RD is not RoCEv2 */
}
END_TEST

START_TEST(aeth_syndrome) {
  ck_assert_int_eq(jct_aeth_type(0x1f), JCT_AETH_ACK);
  ck_assert_uint_eq(jct_aeth_value(0x1f), 31);
  ck_assert_int_eq(jct_aeth_type(0x60), JCT_AETH_NAK);
  ck_assert_uint_eq(jct_aeth_value(0x60), JCT_NAK_PSN_SEQ_ERR);
  ck_assert_int_eq(jct_aeth_type(0x2e), JCT_AETH_RNR_NAK);
  ck_assert_int_eq(jct_aeth_type(0x63), JCT_AETH_NAK);
  ck_assert_uint_eq(jct_aeth_value(0x63), JCT_NAK_REMOTE_OP_ERR);
}
END_TEST

static struct jct_roce_hdrs random_hdrs(uint8_t opcode, unsigned seed) {
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  srand(seed);
  h.bth.opcode = opcode;
  h.bth.se = rand() & 1;
  h.bth.migreq = rand() & 1;
  h.bth.ackreq = rand() & 1;
  h.bth.fecn = rand() & 1;
  h.bth.becn = rand() & 1;
  h.bth.pad_count = (uint8_t)(rand() & 3);
  h.bth.tver = 0;
  h.bth.pkey = (uint16_t)rand();
  h.bth.dest_qp = (uint32_t)rand() & JCT_QPN_MASK;
  h.bth.psn = (uint32_t)rand() & JCT_PSN_MASK;
  h.reth.va = (uint64_t)rand() << 32 | (uint32_t)rand();
  h.reth.rkey = (uint32_t)rand();
  h.reth.dma_len_bytes = (uint32_t)rand();
  h.aeth.syndrome = (uint8_t)rand();
  h.aeth.msn = (uint32_t)rand() & 0xffffff;
  h.immdt = (uint32_t)rand();
  h.atomic.va = (uint64_t)rand() << 33;
  h.atomic.rkey = (uint32_t)rand();
  h.atomic.swap_add = (uint64_t)rand() << 20;
  h.atomic.compare = (uint64_t)rand() << 9;
  h.atomic_ack_orig = (uint64_t)rand() << 31;
  h.deth.qkey = (uint32_t)rand();
  h.deth.src_qp = (uint32_t)rand() & JCT_QPN_MASK;
  h.ieth_rkey = (uint32_t)rand();
  return h;
}

/* Only the headers an opcode carries survive a round trip; compare those. */
static void assert_same_for(const struct jct_opcode_info *e, const struct jct_roce_hdrs *a,
                            const struct jct_roce_hdrs *b) {
  ck_assert(memcmp(&a->bth, &b->bth, sizeof a->bth) == 0);
  if (e->ext & JCT_EXT_RETH) ck_assert(memcmp(&a->reth, &b->reth, sizeof a->reth) == 0);
  if (e->ext & JCT_EXT_AETH) {
    ck_assert_uint_eq(a->aeth.syndrome, b->aeth.syndrome);
    ck_assert_uint_eq(a->aeth.msn, b->aeth.msn);
  }
  if (e->ext & JCT_EXT_IMMDT) ck_assert_uint_eq(a->immdt, b->immdt);
  if (e->ext & JCT_EXT_ATOMICETH) ck_assert(memcmp(&a->atomic, &b->atomic, sizeof a->atomic) == 0);
  if (e->ext & JCT_EXT_ATOMICACKETH) ck_assert_uint_eq(a->atomic_ack_orig, b->atomic_ack_orig);
  if (e->ext & JCT_EXT_DETH) {
    ck_assert_uint_eq(a->deth.qkey, b->deth.qkey);
    ck_assert_uint_eq(a->deth.src_qp, b->deth.src_qp);
  }
  if (e->ext & JCT_EXT_IETH) ck_assert_uint_eq(a->ieth_rkey, b->ieth_rkey);
}

START_TEST(headers_round_trip) {
  for (unsigned op = 0; op < 256; op++) {
    const struct jct_opcode_info *e = jct_opcode_info((uint8_t)op);
    if (!e) continue;
    struct jct_roce_hdrs in = random_hdrs((uint8_t)op, op + 1), out;
    uint8_t buf[64];
    memset(&out, 0, sizeof out);
    ck_assert_uint_eq(jct_roce_write(buf, sizeof buf, &in), e->hdr_bytes);
    ck_assert_uint_eq(jct_roce_parse(buf, e->hdr_bytes, &out), e->hdr_bytes);
    assert_same_for(e, &in, &out);
    /* One byte short: nothing is claimed. */
    ck_assert_uint_eq(jct_roce_parse(buf, e->hdr_bytes - 1u, &out), 0);
    ck_assert_uint_eq(jct_roce_write(buf, e->hdr_bytes - 1u, &in), 0);
  }
}
END_TEST

START_TEST(bth_bit_positions) {
  /* Frame 38 of the shipped trace, as Wireshark shows its BTH:
   * RC_RDMA_WRITE_FIRST, P_Key 0xffff, DestQP 0x11, PSN 9768667. */
  static const uint8_t bth[12] = {0x06, 0x00, 0xff, 0xff, 0x00, 0x00,
                                  0x00, 0x11, 0x00, 0x95, 0x0e, 0xdb};
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  ck_assert_uint_eq(jct_roce_parse(bth, sizeof bth, &h), 0); /* RETH missing */
  ck_assert_uint_eq(h.bth.opcode, 0x06);
  ck_assert_uint_eq(h.bth.pkey, 0xffff);
  ck_assert_uint_eq(h.bth.dest_qp, 0x11);
  ck_assert_uint_eq(h.bth.psn, 9768667);
  ck_assert(!h.bth.ackreq);
  uint8_t b2[12];
  memcpy(b2, bth, 12);
  b2[1] = 0xb0; /* SE, pad 3 */
  b2[8] = 0x80; /* AckReq */
  jct_roce_parse(b2, 12, &h);
  ck_assert(h.bth.se && !h.bth.migreq && h.bth.ackreq);
  ck_assert_uint_eq(h.bth.pad_count, 3);
}
END_TEST

/* Every RoCE packet rxe sent in the shipped capture carries an ICRC that
 * jct_icrc() reproduces. */
START_TEST(icrc_real_trace) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline(TRACE, err);
  ck_assert_msg(p != NULL, "%s", err);
  struct pcap_pkthdr *hdr;
  const u_char *data;
  unsigned roce = 0, ok = 0;
  while (pcap_next_ex(p, &hdr, &data) == 1) {
    jct_packet_t pkt;
    if (jct_decode(JCT_LINK_EN10MB, data, hdr->caplen, hdr->len, &pkt) != JCT_PKT_ROCE) continue;
    roce++;
    ok += pkt.icrc_checked && pkt.icrc_ok;
  }
  pcap_close(p);
  ck_assert_uint_eq(roce, 2799);
  ck_assert_uint_eq(ok, roce);
}
END_TEST

static uint32_t icrc_of(uint8_t *frame, size_t len, size_t l2) {
  return jct_icrc(frame + l2, len - l2 - JCT_ICRC_BYTES);
}

/* The fields a router may rewrite are masked; everything else is covered. */
START_TEST(icrc_masking) {
  for (int v6 = 0; v6 <= 1; v6++) {
    craft_roce_t c = {.ipv6 = v6, .payload_bytes = 40};
    c.h.bth.opcode = JCT_OP_RC_SEND_ONLY;
    c.h.bth.dest_qp = 0x12;
    c.h.bth.psn = 77;
    uint8_t f[256];
    size_t n = craft_roce(f, sizeof f, &c);
    ck_assert_uint_gt(n, 0);
    uint32_t base = icrc_of(f, n, 14);
    size_t ip_bytes = v6 ? 40 : 20, udp = 14 + ip_bytes, bth = udp + 8;
    /* masked: TOS/traffic class, TTL/hop limit, IPv4 checksum, flow label, UDP checksum, BTH resv8a
     */
    size_t masked_v4[] = {14 + 1, 14 + 8, 14 + 10, 14 + 11, udp + 6, udp + 7, bth + 4};
    size_t masked_v6[] = {14 + 1, 14 + 2, 14 + 3, 14 + 7, udp + 6, udp + 7, bth + 4};
    size_t *masked = v6 ? masked_v6 : masked_v4;
    for (size_t i = 0; i < 7; i++) {
      f[masked[i]] ^= 0x5a;
      ck_assert_uint_eq(icrc_of(f, n, 14), base);
      f[masked[i]] ^= 0x5a;
    }
    /* covered: addresses, ports, opcode, QPN, PSN, payload */
    size_t covered[] = {14 + (v6 ? 8 : 12), udp + 0, bth + 0, bth + 7, bth + 11, bth + 12 + 5};
    for (size_t i = 0; i < 6; i++) {
      f[covered[i]] ^= 0x01;
      ck_assert_uint_ne(icrc_of(f, n, 14), base);
      f[covered[i]] ^= 0x01;
    }
  }
}
END_TEST

START_TEST(icrc_limits) {
  uint8_t junk[64] = {0x45};
  ck_assert_uint_eq(jct_icrc(junk, 0), 0);
  ck_assert_uint_eq(jct_icrc(junk, 20 + 8 + 11), 0); /* one short of the BTH */
  junk[0] = 0x75;                                    /* IP version 7 */
  ck_assert_uint_eq(jct_icrc(junk, sizeof junk), 0);
  junk[0] = 0x44; /* IHL 4 */
  ck_assert_uint_eq(jct_icrc(junk, sizeof junk), 0);
}
END_TEST

Suite *roce_suite(void) {
  Suite *s = suite_create("roce");
  TCase *core = tcase_create("core");
  tcase_add_test(core, opcode_table);
  tcase_add_test(core, aeth_syndrome);
  tcase_add_test(core, headers_round_trip);
  tcase_add_test(core, bth_bit_positions);
  suite_add_tcase(s, core);
  TCase *icrc = tcase_create("icrc");
  tcase_add_test(icrc, icrc_real_trace);
  tcase_add_test(icrc, icrc_masking);
  tcase_add_test(icrc, icrc_limits);
  suite_add_tcase(s, icrc);
  return s;
}
