/* Request packets sent again, counted where the fabric sends frames out to
 * the hosts (fabric.c's emit_host, where --pcap-out records them: the lab
 * captures' capture point), as `jctlab inspect` counts a capture's
 * (traces/inspect.c): a data packet (a request, or a READ response) whose
 * PSN is not above the highest already seen on its flow, the flow being its
 * source and destination address and destination QP (IBA vol. 1, 9.7.1:
 * PSNs compared in 24-bit serial arithmetic). For transports whose devices
 * count none (Linux rxe has no such counter): fabric.h's count_resent.
 *
 * Internal to the fabric. Nothing here allocates; a frame of a flow past
 * the table's JCT__RESENT_FLOWS is counted in `untracked` instead.
 */
#ifndef JCT_RESENT_H
#define JCT_RESENT_H

#include <stddef.h>
#include <stdint.h>

#define JCT__RESENT_FLOWS 256

typedef struct {
  uint8_t src[16], dst[16]; /* IPv4 addresses in the first 4 bytes */
  uint32_t qp;              /* destination QP, 24 bits */
  uint32_t psn_highest;
} jct__resent_flow_t;

typedef struct {
  jct__resent_flow_t flow[JCT__RESENT_FLOWS];
  uint32_t nflows;
  uint64_t packets;   /* data packets not above their flow's highest PSN */
  uint64_t bytes;     /* their UDP payload (BTH to ICRC), as uroce counts retx_bytes */
  uint64_t untracked; /* data packets of flows past the table */
} jct__resent_t;

/* Look at one Ethernet frame (anything but a RoCEv2 data packet is
 * ignored). */
void jct__resent_frame(jct__resent_t *r, const uint8_t *frame, size_t len);

#endif
