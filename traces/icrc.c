/* The RoCEv2 invariant CRC.
 *
 * InfiniBand Annex A17.3.3: the ICRC is a CRC-32 (the IEEE 802.3
 * polynomial, reflected, initial value and final XOR all ones) computed
 * over the packet from the IP header to the end of the payload and pad,
 * preceded by 64 bits of ones standing for the LRH that RoCEv2 does not
 * carry, with the fields a router may change masked to all ones: IPv4 type
 * of service, TTL and header checksum; IPv6 traffic class, flow label and
 * hop limit; the UDP checksum; and the BTH's reserved byte before the
 * destination QP (which also holds the FECN/BECN bits). It is stored in
 * little-endian byte order. Linux rxe (rxe_icrc.c) computes exactly this;
 * the shipped rxe capture checks clean against it.
 *
 * The CRC itself is ISA-L's crc32_gzip_refl (same polynomial and
 * conventions as gzip's), which uses carry-less multiplication where the
 * CPU has it: verifying every packet then costs far less than reading it.
 */
#include <isa-l/crc.h>
#include <string.h>

#include "jctlab/roce.h"

#define IPV4_MIN_BYTES 20
#define IPV6_BYTES 40
#define UDP_BYTES 8
#define MASKED_LRH_BYTES 8

uint32_t jct_icrc(const uint8_t *ip, size_t len_bytes) {
  /* The masked copy: LRH stand-in, IP header (up to 60 bytes), UDP, BTH. */
  uint8_t hdr[MASKED_LRH_BYTES + 60 + UDP_BYTES + JCT_BTH_BYTES];
  size_t ip_bytes;

  if (len_bytes < 1) return 0;
  unsigned version = ip[0] >> 4u;
  if (version == 4) {
    ip_bytes = (size_t)(ip[0] & 0x0f) * 4;
    if (ip_bytes < IPV4_MIN_BYTES) return 0;
  } else if (version == 6) {
    ip_bytes = IPV6_BYTES;
  } else {
    return 0;
  }
  size_t masked_bytes = ip_bytes + UDP_BYTES + JCT_BTH_BYTES;
  if (len_bytes < masked_bytes) return 0;

  memset(hdr, 0xff, MASKED_LRH_BYTES);
  uint8_t *h = hdr + MASKED_LRH_BYTES;
  memcpy(h, ip, masked_bytes);
  if (version == 4) {
    h[1] = 0xff;          /* type of service: DSCP and ECN */
    h[8] = 0xff;          /* TTL */
    h[10] = h[11] = 0xff; /* header checksum */
  } else {
    h[0] |= 0x0f;              /* traffic class, high nibble */
    h[1] = h[2] = h[3] = 0xff; /* traffic class, low nibble, and flow label */
    h[7] = 0xff;               /* hop limit */
  }
  uint8_t *udp = h + ip_bytes;
  udp[6] = udp[7] = 0xff;    /* UDP checksum */
  udp[UDP_BYTES + 4] = 0xff; /* BTH reserved byte (FECN, BECN, resv6) */

  uint32_t crc = crc32_gzip_refl(0, hdr, (uint64_t)(MASKED_LRH_BYTES + masked_bytes));
  return crc32_gzip_refl(crc, ip + masked_bytes, (uint64_t)(len_bytes - masked_bytes));
}
