/* Finding things in an Ethernet frame without decoding it all (frame.h). */
#include "frame.h"

#include "jctlab/roce.h"
#include "common/wire.h"

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd

bool jct__frame_l3(const uint8_t *f, size_t len, size_t *l3, uint16_t *ethertype, int *pcp) {
  size_t o = 12;
  if (len < o + 2) return false;
  uint16_t t = jct__be16(f + o);
  *pcp = -1;
  for (int tags = 0; (t == 0x8100 || t == 0x88a8) && tags < 2 && len >= o + 6; tags++) {
    if (*pcp < 0) *pcp = f[o + 2] >> 5;
    o += 4;
    t = jct__be16(f + o);
  }
  *l3 = o + 2;
  *ethertype = t;
  return true;
}

bool jct__frame_roce(const uint8_t *f, size_t len, size_t *udp, size_t *udp_len) {
  size_t l3;
  return jct__frame_roce_l3(f, len, &l3, udp, udp_len);
}

bool jct__frame_roce_l3(const uint8_t *f, size_t len, size_t *l3, size_t *udp, size_t *udp_len) {
  size_t o;
  uint16_t t;
  int pcp;
  if (!jct__frame_l3(f, len, &o, &t, &pcp)) return false;
  *l3 = o;
  const uint8_t *ip = f + o;
  if (t == ETHERTYPE_IPV4) {
    if (len < o + 20 || ip[0] >> 4 != 4 || (ip[0] & 15u) < 5 || ip[9] != 17) return false;
    if (jct__be16(ip + 6) & 0x3fffu) return false; /* a fragment */
    o += (size_t)(ip[0] & 15u) * 4;
  } else if (t == ETHERTYPE_IPV6) {
    if (len < o + 40 || ip[0] >> 4 != 6 || ip[6] != 17) return false;
    o += 40;
  } else {
    return false;
  }
  if (len < o + 8 + JCT_BTH_BYTES || jct__be16(f + o + 2) != JCT_ROCEV2_UDP_PORT) return false;
  size_t ul = jct__be16(f + o + 4);
  if (ul < 8 + JCT_BTH_BYTES + JCT_ICRC_BYTES || ul > len - o) return false;
  if (!jct_opcode_info(f[o + 8])) return false;
  *udp = o;
  *udp_len = ul;
  return true;
}

uint16_t jct__csum_update(uint16_t hc, uint16_t m, uint16_t m1) {
  uint32_t sum = (uint32_t)(uint16_t)~hc + (uint16_t)~m + m1;
  sum = (sum & 0xffffu) + (sum >> 16);
  sum = (sum & 0xffffu) + (sum >> 16);
  return (uint16_t)~sum;
}

void jct__ip_set_ce(uint8_t *ip) {
  if (ip[0] >> 4 == 6) {
    ip[1] |= 0x30u; /* the traffic class's low two bits */
    return;
  }
  uint16_t m = jct__be16(ip);
  ip[1] |= 3u;
  jct__put16(ip + 10, jct__csum_update(jct__be16(ip + 10), m, jct__be16(ip)));
}
