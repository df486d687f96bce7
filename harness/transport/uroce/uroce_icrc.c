/* uroce ICRC: the invariant CRC of the packets a QP sends and receives.
 *
 * The ICRC (IBA Vol. 1 7.8.1; Annex A17.3.3 for RoCEv2) covers the IP and
 * UDP headers as well as the BTH .. payload, with the fields a router may
 * change masked; jct_icrc() (include/jctlab/roce.h) does the CRC and the
 * masking. A userspace QP hands its UDP payload to a socket, so the kernel
 * writes those headers: this file builds them in qp->scratch as Linux will
 * for an unconnected UDP socket sending with IP_PMTUDISC_DO (see uroce.h),
 * IPv4 or IPv6, then the payload, and computes the ICRC over all of it.
 *
 * As Linux rxe_icrc.c: rxe_icrc_generate fills a sent packet's ICRC,
 * rxe_icrc_check compares a received one (a mismatch is dropped silently by
 * the caller and counted).
 */
#include <string.h>

#include "common/wire.h"
#include "uroce_loc.h"

#define IPV4_HDR_BYTES 20
#define IPV6_HDR_BYTES 40
#define UDP_HDR_BYTES 8

size_t jct__uroce_scratch_bytes(uint32_t path_mtu_bytes) {
  return IPV6_HDR_BYTES + UDP_HDR_BYTES + JCT_BTH_BYTES + JCT_RETH_BYTES + JCT_IMMDT_BYTES +
         path_mtu_bytes + JCT_ICRC_BYTES;
}

/* The ICRC of a UDP payload (pkt/len, its last 4 bytes the ICRC itself)
 * sent from src:sport to dst:4791; 0 when it does not fit the scratch. */
static uint32_t compute(jct_uroce_qp_t *qp, const jct_addr_t *src, const jct_addr_t *dst,
                        uint16_t sport, const uint8_t *pkt, size_t len) {
  size_t ip_bytes = src->family == 6 ? IPV6_HDR_BYTES : IPV4_HDR_BYTES;
  size_t udp_len = UDP_HDR_BYTES + len;
  if (len < JCT_BTH_BYTES + JCT_ICRC_BYTES || ip_bytes + udp_len > qp->scratch_bytes) return 0;
  uint8_t *ip = qp->scratch;
  memset(ip, 0, ip_bytes + UDP_HDR_BYTES);
  if (src->family == 6) {
    ip[0] = 0x60;
    jct__put16(ip + 4, (uint16_t)udp_len);
    ip[6] = 17; /* next header: UDP */
    ip[7] = 64; /* hop limit (masked) */
    memcpy(ip + 8, src->bytes, 16);
    memcpy(ip + 24, dst->bytes, 16);
  } else {
    ip[0] = 0x45;
    jct__put16(ip + 2, (uint16_t)(ip_bytes + udp_len));
    /* ID 0 (bytes 4-5): Linux's choice for DF datagrams from unconnected sockets */
    jct__put16(ip + 6, 0x4000); /* DF */
    ip[8] = 64;                 /* TTL (masked) */
    ip[9] = 17;                 /* UDP */
    memcpy(ip + 12, src->bytes, 4);
    memcpy(ip + 16, dst->bytes, 4);
  }
  uint8_t *udp = ip + ip_bytes;
  jct__put16(udp, sport);
  jct__put16(udp + 2, JCT_ROCEV2_UDP_PORT);
  jct__put16(udp + 4, (uint16_t)udp_len);
  /* checksum 0: RoCEv2 over IPv4 sends none; masked from the ICRC anyway */
  memcpy(udp + UDP_HDR_BYTES, pkt, len);
  return jct_icrc(ip, ip_bytes + udp_len - JCT_ICRC_BYTES);
}

void jct__uroce_icrc_generate(jct_uroce_qp_t *qp, uint8_t *pkt, size_t len) {
  uint32_t icrc = compute(qp, &qp->cfg.local, &qp->cfg.remote, qp->udp_sport, pkt, len);
  jct__putle32(pkt + len - JCT_ICRC_BYTES, icrc);
}

bool jct__uroce_icrc_check(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len, uint16_t udp_sport) {
  uint32_t icrc = compute(qp, &qp->cfg.remote, &qp->cfg.local, udp_sport, pkt, len);
  return icrc == jct__le32(pkt + len - JCT_ICRC_BYTES);
}
