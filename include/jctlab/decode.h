/* Decoding one captured frame: Ethernet (802.1Q), IPv4/IPv6, UDP/4791 and
 * RoCEv2, or an 802.1Qbb PFC / 802.3x PAUSE frame.
 *
 * The decoder is a pure function of the frame's bytes: no allocation, no
 * state, safe on any input (fuzzed, fuzz/fuzz_decode.c). A frame that is not
 * RoCE or PFC is classified by why not (JCT_PKT_OTHER with a reason); one
 * that claims to be but is broken is JCT_PKT_MALFORMED with a reason.
 *
 * Sources: IEEE 802.1Q (tag, PCP), IEEE 802.1Qbb clause 36 and 802.3
 * Annex 31D (PFC frame: MAC control ethertype 0x8808, opcode 0x0101,
 * class-enable vector, 8 quanta in units of 512 bit times), 802.3 Annex 31B
 * (PAUSE, opcode 0x0001), RFC 791 / RFC 8200 (IP), RFC 3168 (ECN),
 * InfiniBand Annex A17 (RoCEv2), see roce.h.
 */
#ifndef JCTLAB_DECODE_H
#define JCTLAB_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jctlab/roce.h"

/* Link types the decoder reads (values of libpcap's DLT_* / LINKTYPE_*). */
#define JCT_LINK_EN10MB 1      /* Ethernet */
#define JCT_LINK_RAW 101       /* raw IPv4 or IPv6 */
#define JCT_LINK_LINUX_SLL 113 /* "tcpdump -i any", version 1 */
#define JCT_LINK_IPV4 228
#define JCT_LINK_IPV6 229
#define JCT_LINK_LINUX_SLL2 276

/* True when jct_decode() reads this link type. */
bool jct_link_supported(int linktype);

typedef enum {
  JCT_PKT_ROCE,      /* a RoCEv2 packet: roce, payload_bytes, icrc_* are set */
  JCT_PKT_PFC,       /* a PFC or PAUSE frame: pfc is set */
  JCT_PKT_OTHER,     /* not RoCE, not PFC: reason says what it is */
  JCT_PKT_MALFORMED, /* broken on the way to RoCE or PFC: reason says where */
} jct_pkt_kind_t;

/* Why a frame is not a RoCE or PFC packet. The OTHER reasons come first. */
#define JCT_REASON_MAP(XX)                                                                         \
  XX(NONE, "none", "none")                                                                         \
  XX(NOT_IP, "not_ip", "ethertype is not IPv4 or IPv6")                                            \
  XX(NOT_UDP, "not_udp", "IP protocol is not UDP")                                                 \
  XX(NOT_ROCE_PORT, "not_roce_port", "UDP destination port is not 4791")                           \
  XX(IP_FRAGMENT, "ip_fragment", "IP fragment")                                                    \
  XX(MAC_CONTROL, "mac_control", "MAC control frame that is not PFC or PAUSE")                     \
  XX(SHORT_L2, "short_l2", "frame shorter than its link header")                                   \
  XX(SHORT_IP, "short_ip", "shorter than its IP header")                                           \
  XX(BAD_IP_HEADER, "bad_ip_header", "bad IP version or header length")                            \
  XX(BAD_IP_LENGTH, "bad_ip_length", "IP length disagrees with the frame")                         \
  XX(SHORT_UDP, "short_udp", "shorter than its UDP header")                                        \
  XX(BAD_UDP_LENGTH, "bad_udp_length", "UDP length disagrees with IP")                             \
  XX(SHORT_BTH, "short_bth", "UDP payload shorter than BTH and ICRC")                              \
  XX(UNKNOWN_OPCODE, "unknown_opcode", "BTH opcode RoCEv2 does not define")                        \
  XX(SHORT_EXT_HEADERS, "short_ext_headers",                                                       \
     "shorter than the opcode's extension headers and ICRC")                                       \
  XX(BAD_PAD, "bad_pad", "pad count larger than the payload")                                      \
  XX(SHORT_PFC, "short_pfc", "MAC control frame shorter than a PFC/PAUSE body")

typedef enum {
#define JCT__REASON_ENUM(name, key, text) JCT_REASON_##name,
  JCT_REASON_MAP(JCT__REASON_ENUM)
#undef JCT__REASON_ENUM
      JCT_REASON__COUNT
} jct_reason_t;

/* The first reason that makes a frame MALFORMED rather than OTHER. */
#define JCT_REASON_FIRST_MALFORMED JCT_REASON_SHORT_L2

/* Short stable name ("not_udp", "short_bth") for JSON, and a sentence. */
const char *jct_reason_key(jct_reason_t r);
const char *jct_reason_text(jct_reason_t r);

typedef struct {
  uint8_t family;    /* 4 or 6; 0 when the frame had no IP header */
  uint8_t bytes[16]; /* IPv4 in the first 4 bytes, the rest zero */
} jct_addr_t;

typedef struct {
  uint16_t class_enable; /* bit p set: quanta[p] applies (PAUSE: all eight) */
  uint16_t quanta[8];    /* pause time per priority, units of 512 bit times */
  bool is_pause;         /* 802.3x PAUSE (opcode 0x0001), not PFC */
} jct_pfc_t;

enum { JCT_ECN_NOT_ECT = 0, JCT_ECN_ECT1 = 1, JCT_ECN_ECT0 = 2, JCT_ECN_CE = 3 };

typedef struct {
  jct_pkt_kind_t kind;
  jct_reason_t reason; /* JCT_REASON_NONE for ROCE and PFC */

  /* Link layer (zero for link types without one). */
  uint8_t dst_mac[6], src_mac[6];
  uint16_t ethertype; /* after any VLAN tags */
  bool vlan;          /* an 802.1Q tag was present (the outer one is kept) */
  uint16_t vlan_id;
  uint8_t pcp; /* 802.1Q priority code point, 0 when untagged */

  /* IP (family 0 when absent). */
  jct_addr_t src, dst;
  uint8_t dscp, ecn; /* ecn: JCT_ECN_* (RFC 3168) */
  uint8_t ip_proto;
  uint16_t udp_sport, udp_dport;

  /* RoCEv2 (kind == JCT_PKT_ROCE). */
  struct jct_roce_hdrs roce;
  const struct jct_opcode_info *op; /* never NULL for ROCE */
  uint32_t payload_bytes;           /* after the extension headers, less pad and ICRC */
  uint32_t icrc;                    /* as read, little-endian */
  bool icrc_checked;                /* false when the frame was cut short by the snap length */
  bool icrc_ok;

  /* PFC / PAUSE (kind == JCT_PKT_PFC). */
  jct_pfc_t pfc;
} jct_packet_t;

/* Decode one frame.
 * frame/caplen: the captured bytes; wire_len: the frame's length on the
 * wire (pcap's len; at least caplen). A frame cut by the snap length is
 * still decoded as far as its headers go; its ICRC is then not checked and
 * payload_bytes is worked out from the IP length. Ethernet FCS is taken to
 * be absent, as libpcap delivers frames.
 * Returns pkt->kind. Never fails otherwise; any byte sequence is safe. */
jct_pkt_kind_t jct_decode(int linktype, const uint8_t *frame, size_t caplen, size_t wire_len,
                          jct_packet_t *pkt);

/* Whether a and b are the same address (family and bytes). */
static inline bool jct_addr_eq(const jct_addr_t *a, const jct_addr_t *b) {
  return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

/* Format an address as text ("198.18.0.1", "2001:2::1"); buf needs 46
 * bytes. Returns buf. */
char *jct_addr_str(const jct_addr_t *a, char *buf, size_t buflen);

#endif
