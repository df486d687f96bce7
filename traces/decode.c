/* Decoding one captured frame down to RoCEv2 or PFC.
 *
 * Layers, each checked against both the captured bytes and the lengths the
 * headers claim:
 *   link:  Ethernet II with up to two 802.1Q/802.1ad tags (the outer tag's
 *          PCP and VID are kept), Linux cooked v1/v2, or raw IP;
 *   MAC control (ethertype 0x8808): 802.1Qbb PFC (opcode 0x0101, class-enable
 *          vector, eight 16-bit quanta) and 802.3x PAUSE (opcode 0x0001);
 *   IP:    IPv4 (RFC 791; options allowed, fragments set aside) and IPv6
 *          (RFC 8200; UDP must be the first next header, as RoCEv2 sends it);
 *          DSCP and ECN (RFC 2474, RFC 3168);
 *   UDP:   destination port 4791 (InfiniBand Annex A17.2);
 *   RoCE:  BTH and extension headers (roce_hdr.c), pad, payload and ICRC
 *          (icrc.c), verified when the whole packet was captured.
 * Ethernet padding beyond the IP length is ignored, as receivers do; the FCS
 * is taken to be absent, as libpcap delivers frames.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "jctlab/decode.h"
#include "common/wire.h"

#define ETH_HDR_BYTES 14
#define VLAN_TAG_BYTES 4
#define SLL_HDR_BYTES 16
#define SLL2_HDR_BYTES 20
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define ETHERTYPE_MAC_CONTROL 0x8808
#define MAC_CONTROL_PAUSE 0x0001
#define MAC_CONTROL_PFC 0x0101
#define PFC_BODY_BYTES 20  /* opcode, class-enable vector, 8 quanta */
#define PAUSE_BODY_BYTES 4 /* opcode, quanta */
#define IPV4_MIN_BYTES 20
#define IPV6_BYTES 40
#define UDP_BYTES 8
#define IPPROTO_UDP_ 17

static const char *const reason_keys[] = {
#define JCT__REASON_KEY(name, key, text) key,
    JCT_REASON_MAP(JCT__REASON_KEY)
#undef JCT__REASON_KEY
};
static const char *const reason_texts[] = {
#define JCT__REASON_TEXT(name, key, text) text,
    JCT_REASON_MAP(JCT__REASON_TEXT)
#undef JCT__REASON_TEXT
};

const char *jct_reason_key(jct_reason_t r) {
  return (unsigned)r < JCT_REASON__COUNT ? reason_keys[r] : "unknown";
}

const char *jct_reason_text(jct_reason_t r) {
  return (unsigned)r < JCT_REASON__COUNT ? reason_texts[r] : "unknown";
}

bool jct_link_supported(int linktype) {
  switch (linktype) {
  case JCT_LINK_EN10MB:
  case JCT_LINK_RAW:
  case JCT_LINK_LINUX_SLL:
  case JCT_LINK_IPV4:
  case JCT_LINK_IPV6:
  case JCT_LINK_LINUX_SLL2:
    return true;
  default:
    return false;
  }
}

char *jct_addr_str(const jct_addr_t *a, char *buf, size_t buflen) {
  int af = a->family == 6 ? AF_INET6 : AF_INET;
  if (a->family == 0 || !inet_ntop(af, a->bytes, buf, (socklen_t)buflen)) {
    if (buflen) snprintf(buf, buflen, "-");
  }
  return buf;
}

static jct_pkt_kind_t verdict(jct_packet_t *pkt, jct_reason_t r) {
  pkt->reason = r;
  pkt->kind = r >= JCT_REASON_FIRST_MALFORMED ? JCT_PKT_MALFORMED : JCT_PKT_OTHER;
  return pkt->kind;
}

/* The bytes of one layer: what was captured and what the wire carried. */
typedef struct {
  const uint8_t *p;
  size_t cap; /* captured bytes from p */
  size_t len; /* wire bytes from p */
} span_t;

static span_t advance(span_t s, size_t n) {
  span_t r = {s.p + n, s.cap > n ? s.cap - n : 0, s.len > n ? s.len - n : 0};
  return r;
}

static jct_pkt_kind_t decode_mac_control(span_t s, jct_packet_t *pkt) {
  if (s.cap < 2) return verdict(pkt, JCT_REASON_SHORT_PFC);
  uint16_t opcode = jct__be16(s.p);
  if (opcode == MAC_CONTROL_PFC) {
    if (s.cap < PFC_BODY_BYTES) return verdict(pkt, JCT_REASON_SHORT_PFC);
    pkt->pfc.class_enable = jct__be16(s.p + 2) & 0xff;
    for (int i = 0; i < 8; i++)
      pkt->pfc.quanta[i] = jct__be16(s.p + 4 + 2 * i);
  } else if (opcode == MAC_CONTROL_PAUSE) {
    if (s.cap < PAUSE_BODY_BYTES) return verdict(pkt, JCT_REASON_SHORT_PFC);
    pkt->pfc.is_pause = true;
    pkt->pfc.class_enable = 0xff;
    uint16_t q = jct__be16(s.p + 2);
    for (int i = 0; i < 8; i++)
      pkt->pfc.quanta[i] = q;
  } else {
    return verdict(pkt, JCT_REASON_MAC_CONTROL);
  }
  pkt->kind = JCT_PKT_PFC;
  return pkt->kind;
}

static jct_pkt_kind_t decode_roce(span_t ip, size_t ip_hdr_bytes, span_t s, jct_packet_t *pkt) {
  /* s: the UDP payload, s.len from the UDP length. */
  if (s.len < JCT_BTH_BYTES + JCT_ICRC_BYTES || s.cap < JCT_BTH_BYTES)
    return verdict(pkt, JCT_REASON_SHORT_BTH);
  const struct jct_opcode_info *op = jct_opcode_info(s.p[0]);
  if (!op) {
    jct_roce_parse(s.p, JCT_BTH_BYTES, &pkt->roce); /* the BTH, for the record */
    return verdict(pkt, JCT_REASON_UNKNOWN_OPCODE);
  }
  size_t body_bytes = s.len - JCT_ICRC_BYTES; /* headers, payload and pad */
  if (body_bytes < op->hdr_bytes || s.cap < op->hdr_bytes)
    return verdict(pkt, JCT_REASON_SHORT_EXT_HEADERS);
  jct_roce_parse(s.p, op->hdr_bytes, &pkt->roce);
  size_t after_hdrs = body_bytes - op->hdr_bytes;
  if (pkt->roce.bth.pad_count > after_hdrs) return verdict(pkt, JCT_REASON_BAD_PAD);

  pkt->op = op;
  pkt->payload_bytes = (uint32_t)(after_hdrs - pkt->roce.bth.pad_count);
  if (s.cap >= s.len) {
    pkt->icrc = jct__le32(s.p + body_bytes);
    pkt->icrc_checked = true;
    pkt->icrc_ok = jct_icrc(ip.p, ip_hdr_bytes + UDP_BYTES + body_bytes) == pkt->icrc;
  }
  pkt->kind = JCT_PKT_ROCE;
  return pkt->kind;
}

static jct_pkt_kind_t decode_udp(span_t ip, size_t ip_hdr_bytes, span_t s, jct_packet_t *pkt) {
  /* s: the IP payload, s.len from the IP header's length. */
  if (s.cap < UDP_BYTES || s.len < UDP_BYTES) return verdict(pkt, JCT_REASON_SHORT_UDP);
  pkt->udp_sport = jct__be16(s.p);
  pkt->udp_dport = jct__be16(s.p + 2);
  size_t udp_len = jct__be16(s.p + 4);
  if (udp_len < UDP_BYTES || udp_len > s.len) return verdict(pkt, JCT_REASON_BAD_UDP_LENGTH);
  if (pkt->udp_dport != JCT_ROCEV2_UDP_PORT) return verdict(pkt, JCT_REASON_NOT_ROCE_PORT);
  span_t payload = advance(s, UDP_BYTES);
  payload.len = udp_len - UDP_BYTES;
  if (payload.cap > payload.len) payload.cap = payload.len;
  return decode_roce(ip, ip_hdr_bytes, payload, pkt);
}

static jct_pkt_kind_t decode_ipv4(span_t s, jct_packet_t *pkt) {
  if (s.cap < IPV4_MIN_BYTES) return verdict(pkt, JCT_REASON_SHORT_IP);
  size_t hdr_bytes = (size_t)(s.p[0] & 0x0f) * 4;
  if ((s.p[0] >> 4) != 4 || hdr_bytes < IPV4_MIN_BYTES)
    return verdict(pkt, JCT_REASON_BAD_IP_HEADER);
  if (s.cap < hdr_bytes) return verdict(pkt, JCT_REASON_SHORT_IP);
  size_t total = jct__be16(s.p + 2);
  if (total < hdr_bytes || total > s.len) return verdict(pkt, JCT_REASON_BAD_IP_LENGTH);

  pkt->dscp = (uint8_t)(s.p[1] >> 2);
  pkt->ecn = (uint8_t)(s.p[1] & 3);
  pkt->ip_proto = s.p[9];
  pkt->src.family = pkt->dst.family = 4;
  memcpy(pkt->src.bytes, s.p + 12, 4);
  memcpy(pkt->dst.bytes, s.p + 16, 4);
  if (jct__be16(s.p + 6) & 0x3fff) return verdict(pkt, JCT_REASON_IP_FRAGMENT);
  if (pkt->ip_proto != IPPROTO_UDP_) return verdict(pkt, JCT_REASON_NOT_UDP);

  span_t ip = s;
  ip.len = total; /* drop Ethernet padding */
  if (ip.cap > total) ip.cap = total;
  return decode_udp(ip, hdr_bytes, advance(ip, hdr_bytes), pkt);
}

static jct_pkt_kind_t decode_ipv6(span_t s, jct_packet_t *pkt) {
  if (s.cap < IPV6_BYTES) return verdict(pkt, JCT_REASON_SHORT_IP);
  if ((s.p[0] >> 4) != 6) return verdict(pkt, JCT_REASON_BAD_IP_HEADER);
  size_t total = IPV6_BYTES + (size_t)jct__be16(s.p + 4);
  if (total > s.len) return verdict(pkt, JCT_REASON_BAD_IP_LENGTH);

  uint8_t tclass = (uint8_t)((s.p[0] & 0x0f) << 4 | s.p[1] >> 4);
  pkt->dscp = (uint8_t)(tclass >> 2);
  pkt->ecn = (uint8_t)(tclass & 3);
  pkt->ip_proto = s.p[6];
  pkt->src.family = pkt->dst.family = 6;
  memcpy(pkt->src.bytes, s.p + 8, 16);
  memcpy(pkt->dst.bytes, s.p + 24, 16);
  if (pkt->ip_proto != IPPROTO_UDP_) return verdict(pkt, JCT_REASON_NOT_UDP);

  span_t ip = s;
  ip.len = total;
  if (ip.cap > total) ip.cap = total;
  return decode_udp(ip, IPV6_BYTES, advance(ip, IPV6_BYTES), pkt);
}

static jct_pkt_kind_t decode_ethertype(span_t s, jct_packet_t *pkt) {
  switch (pkt->ethertype) {
  case ETHERTYPE_IPV4:
    return decode_ipv4(s, pkt);
  case ETHERTYPE_IPV6:
    return decode_ipv6(s, pkt);
  case ETHERTYPE_MAC_CONTROL:
    return decode_mac_control(s, pkt);
  default:
    return verdict(pkt, JCT_REASON_NOT_IP);
  }
}

static jct_pkt_kind_t decode_ethernet(span_t s, jct_packet_t *pkt) {
  if (s.cap < ETH_HDR_BYTES) return verdict(pkt, JCT_REASON_SHORT_L2);
  memcpy(pkt->dst_mac, s.p, 6);
  memcpy(pkt->src_mac, s.p + 6, 6);
  size_t off = 12;
  uint16_t type = jct__be16(s.p + off);
  for (int tags = 0; (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) && tags < 2; tags++) {
    if (s.cap < off + 2 + VLAN_TAG_BYTES) return verdict(pkt, JCT_REASON_SHORT_L2);
    uint16_t tci = jct__be16(s.p + off + 2);
    if (!pkt->vlan) {
      pkt->vlan = true;
      pkt->pcp = (uint8_t)(tci >> 13);
      pkt->vlan_id = tci & 0x0fff;
    }
    off += VLAN_TAG_BYTES;
    type = jct__be16(s.p + off);
  }
  pkt->ethertype = type;
  return decode_ethertype(advance(s, off + 2), pkt);
}

/* Linux cooked capture, v1: packet type(2) ARPHRD(2) addr len(2) addr(8)
 * protocol(2); v2: protocol(2) reserved(2) ifindex(4) ARPHRD(2) packet
 * type(1) addr len(1) addr(8). The address is the sender's MAC. */
static jct_pkt_kind_t decode_sll(span_t s, int version, jct_packet_t *pkt) {
  size_t hdr = version == 1 ? SLL_HDR_BYTES : SLL2_HDR_BYTES;
  if (s.cap < hdr) return verdict(pkt, JCT_REASON_SHORT_L2);
  size_t addr_off = version == 1 ? 6 : 12;
  size_t addr_len = version == 1 ? jct__be16(s.p + 4) : s.p[11];
  if (addr_len == 6) memcpy(pkt->src_mac, s.p + addr_off, 6);
  pkt->ethertype = jct__be16(s.p + (version == 1 ? 14 : 0));
  return decode_ethertype(advance(s, hdr), pkt);
}

static jct_pkt_kind_t decode_raw(span_t s, jct_packet_t *pkt) {
  if (s.cap < 1) return verdict(pkt, JCT_REASON_SHORT_IP);
  pkt->ethertype = (s.p[0] >> 4) == 6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4;
  return decode_ethertype(s, pkt);
}

jct_pkt_kind_t jct_decode(int linktype, const uint8_t *frame, size_t caplen, size_t wire_len,
                          jct_packet_t *pkt) {
  memset(pkt, 0, sizeof *pkt);
  span_t s = {frame, caplen, wire_len > caplen ? wire_len : caplen};
  switch (linktype) {
  case JCT_LINK_EN10MB:
    return decode_ethernet(s, pkt);
  case JCT_LINK_LINUX_SLL:
    return decode_sll(s, 1, pkt);
  case JCT_LINK_LINUX_SLL2:
    return decode_sll(s, 2, pkt);
  case JCT_LINK_RAW:
  case JCT_LINK_IPV4:
  case JCT_LINK_IPV6:
    return decode_raw(s, pkt);
  default:
    return verdict(pkt, JCT_REASON_SHORT_L2);
  }
}
