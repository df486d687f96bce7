/* Finding things in an Ethernet frame without decoding it all (internal to
 * jctlab): for the per-frame paths that must stay cheap, the switch's
 * classification and the injectors. jct_decode() (decode.h) is the full,
 * checked decoder; these helpers agree with it on what they find.
 */
#ifndef JCT_FRAME_H
#define JCT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The L3 header after up to two 802.1Q/802.1ad tags: its offset and
 * ethertype, and the outer tag's PCP (-1 when untagged). False when the
 * frame is shorter than its link header. */
bool jct__frame_l3(const uint8_t *f, size_t len, size_t *l3, uint16_t *ethertype, int *pcp);

/* The UDP datagram of a RoCEv2 packet: IPv4 (not a fragment) or IPv6 with
 * UDP next, destination port 4791, a UDP length that fits the frame and
 * holds a BTH and ICRC, and an opcode RoCEv2 defines. Offset and length of
 * the datagram; false for anything else. */
bool jct__frame_roce(const uint8_t *f, size_t len, size_t *udp, size_t *udp_len);
/* The same, also giving the IP header's offset (l3). */
bool jct__frame_roce_l3(const uint8_t *f, size_t len, size_t *l3, size_t *udp, size_t *udp_len);

/* RFC 1624 eqn. 3: the Internet checksum hc after a 16-bit word of the data
 * changed from m to m1. */
uint16_t jct__csum_update(uint16_t hc, uint16_t m, uint16_t m1);

/* Set ECN CE (RFC 3168) in the IPv4 or IPv6 header at ip, keeping the IPv4
 * header checksum right. */
void jct__ip_set_ce(uint8_t *ip);

#endif
