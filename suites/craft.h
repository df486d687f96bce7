/* Crafting frames and captures for tests: RoCEv2 over IPv4/IPv6 with or
 * without an 802.1Q tag (valid ICRC unless asked otherwise), PFC and PAUSE
 * frames, and pcap files written byte by byte (so that tests can also cut
 * them short). Test code only. */
#ifndef JCT_CRAFT_H
#define JCT_CRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/roce.h"

/* ck_assert_msg for code run per frame, 10^4 to 10^6 times a test: it
 * fails as ck_assert_msg does (ck_abort_msg, the message formatted), but a
 * pass costs nothing, where each passing Check assertion writes its file and
 * line to Check's log (a write(2): 3.3 million of them were most of the
 * injector_kinds suite's time). Needs <check.h>. */
#define assert_quiet(expr, ...)                                                                   \
  do {                                                                                            \
    if (!(expr)) ck_abort_msg(__VA_ARGS__);                                                       \
  } while (0)

typedef struct {
  bool ipv6;
  bool vlan;
  uint16_t vlan_id;
  uint8_t pcp;
  uint8_t dscp, ecn;
  const char *src, *dst;  /* "198.18.0.1" or "2001:2::1"; defaults 198.18.0.1 -> .2 */
  uint16_t udp_sport;     /* default 49152 */
  uint16_t udp_dport;     /* default 4791 */
  struct jct_roce_hdrs h; /* bth.opcode and the fields its headers need */
  uint32_t payload_bytes; /* filled with a pattern; padded to 4 as bth.pad_count says */
  bool bad_icrc;          /* store the ICRC with one bit flipped */
} craft_roce_t;

/* Write the Ethernet frame into buf. Returns its length, 0 when it does not fit. */
size_t craft_roce(uint8_t *buf, size_t cap, const craft_roce_t *c);

/* An 802.1Qbb PFC frame from src_mac (quanta for the priorities in class_enable). */
size_t craft_pfc(uint8_t *buf, size_t cap, const uint8_t src_mac[6], uint16_t class_enable,
                 const uint16_t quanta[8]);
/* An 802.3x PAUSE frame. */
size_t craft_pause(uint8_t *buf, size_t cap, const uint8_t src_mac[6], uint16_t quanta);

/* A 64-byte RoCEv2 SEND from rank src_rank (198.18.0.<src+1>) to
 * dst_rank, UDP source port sport, to rank dst_rank's MAC (topo.h): one
 * flow of a switch's ECMP tests. */
size_t craft_flow_frame(uint8_t *buf, uint32_t src_rank, uint32_t dst_rank, uint16_t sport);

/* Packet k of a QP's stream of 3-packet RDMA WRITE messages (FIRST,
 * MIDDLE, LAST by k % 3, 64 bytes each), PSN psn, to QP qp, from src to
 * dst (NULL: craft_roce's defaults): a sender's data for the stall and
 * timeout injectors' tests. Returns its length; fails the test when it
 * does not fit. */
size_t craft_write_frame(uint8_t *buf, size_t cap, const char *src, const char *dst, uint32_t qp,
                         uint32_t psn, uint32_t k);

/* A pcap file (microsecond or nanosecond magic) written by hand. */
typedef struct craft_pcap craft_pcap_t;
craft_pcap_t *craft_pcap_open(const char *path, bool nanosecond, uint32_t linktype);
/* Add a record; caplen may be less than len (a snapped frame). */
void craft_pcap_add(craft_pcap_t *p, uint64_t ts_ns, const uint8_t *frame, size_t caplen,
                    size_t len);
void craft_pcap_close(craft_pcap_t *p);

/* A fresh temporary file name under $TMPDIR (or /tmp) in buf; the file
 * exists, empty. The test removes it. */
void craft_tmpname(char *buf, size_t len, const char *suffix);

#endif
