/* The topology's addressing plan: a pure function of the rank index, with
 * or without a topology (see include/jctlab/topo.h). Rank i's eth0 has MAC
 * 02:00:c6:12:HH:LL and its switch port 02:00:c6:13:HH:LL, HHLL = i + 1
 * (bit 0x02 of the first octet set: locally administered, unicast); IPv4
 * 198.18.0.0 + (i + 1) and IPv6 2001:2::(i + 1), in the ranges reserved for
 * benchmarking, 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180; both
 * in the special-purpose registries of RFC 6890), so that nothing jctlab
 * sends is routable.
 */
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "jctlab/topo.h"

static void mac_with(size_t i, uint8_t b3, uint8_t mac[6]) {
  uint32_t v = (uint32_t)(i + 1);
  mac[0] = 0x02; /* locally administered, unicast */
  mac[1] = 0x00;
  mac[2] = 0xc6;
  mac[3] = b3;
  mac[4] = (uint8_t)(v >> 8);
  mac[5] = (uint8_t)v;
}

void jct_rank_mac(size_t i, uint8_t mac[6]) {
  mac_with(i, 0x12, mac);
}

void jct_switch_port_mac(size_t i, uint8_t mac[6]) {
  mac_with(i, 0x13, mac);
}

jct_addr_t jct_rank_ipv4(size_t i) {
  jct_addr_t a = {.family = 4};
  uint32_t v = 0xc6120000u + (uint32_t)(i + 1); /* 198.18.0.0 + (i + 1) */
  a.bytes[0] = (uint8_t)(v >> 24);
  a.bytes[1] = (uint8_t)(v >> 16);
  a.bytes[2] = (uint8_t)(v >> 8);
  a.bytes[3] = (uint8_t)v;
  return a;
}

jct_addr_t jct_rank_ipv6(size_t i) {
  jct_addr_t a = {.family = 6};
  uint32_t v = (uint32_t)(i + 1); /* 2001:2::(i + 1) */
  a.bytes[0] = 0x20;
  a.bytes[1] = 0x01;
  a.bytes[3] = 0x02;
  a.bytes[12] = (uint8_t)(v >> 24);
  a.bytes[13] = (uint8_t)(v >> 16);
  a.bytes[14] = (uint8_t)(v >> 8);
  a.bytes[15] = (uint8_t)v;
  return a;
}

socklen_t jct_rank_sockaddr(size_t i, int family, uint16_t port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (i >= JCT_TOPO_MAX_RANKS) return 0;
  if (family == AF_INET) {
    struct sockaddr_in *sin = (struct sockaddr_in *)(void *)ss;
    jct_addr_t a = jct_rank_ipv4(i);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    memcpy(&sin->sin_addr, a.bytes, 4);
    return sizeof *sin;
  }
  if (family == AF_INET6) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(void *)ss;
    jct_addr_t a = jct_rank_ipv6(i);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    memcpy(&sin6->sin6_addr, a.bytes, 16);
    return sizeof *sin6;
  }
  return 0;
}
