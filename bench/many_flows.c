/* Make a capture of N distinct RoCEv2 flows, each frame cut to a snap
 * length (80 bytes by default, as a capture taken with `tcpdump -s 80`):
 * the input bench/inspect measures memory per flow on.
 *
 * Flows come in pairs: flow 2i is one RDMA WRITE ONLY of 1 KiB from
 * 198.18.x.y to 198.19.x.y (both chosen by i, so every pair of addresses
 * is its own, the costliest case for the analyser's per-address-pair
 * index), flow 2i+1 is the responder's ACK for it on the requester's QP.
 * An odd N ends with one WRITE and no ACK. Frames are 1 µs apart in a
 * nanosecond pcap (Ethernet); the WRITEs are cut by the snap length (their
 * ICRC cannot be checked), the 62-byte ACKs fit whole and carry a valid
 * ICRC.
 *
 * Usage: many_flows N OUT [SNAPLEN]
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/roce.h"

#define PAYLOAD_BYTES 1024u
#define ETH_BYTES 14u
#define IP_BYTES 20u
#define UDP_BYTES 8u
#define FRAME_MAX 2048u

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v) {
  put16(p, (uint16_t)(v >> 16));
  put16(p + 2, (uint16_t)v);
}

/* The RFC 791 header checksum of a 20-byte IPv4 header. */
static uint16_t ip_csum(const uint8_t *ip) {
  uint32_t s = 0;
  for (int i = 0; i < 20; i += 2)
    s += (uint32_t)ip[i] << 8 | ip[i + 1];
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return (uint16_t)~s;
}

/* One RoCEv2 frame from src to dst carrying h and payload bytes of zeros.
 * Returns its length. */
static size_t frame(uint8_t *buf, uint32_t src, uint32_t dst, uint16_t sport,
                    const struct jct_roce_hdrs *h, uint32_t payload) {
  memset(buf, 0, FRAME_MAX);
  static const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0x0a}, mac_b[6] = {0x02, 0, 0, 0, 0, 0x0b};
  memcpy(buf, mac_b, 6);
  memcpy(buf + 6, mac_a, 6);
  put16(buf + 12, 0x0800);
  uint8_t *ip = buf + ETH_BYTES, *udp = ip + IP_BYTES, *bth = udp + UDP_BYTES;
  size_t hdrs = jct_roce_write(bth, FRAME_MAX - ETH_BYTES - IP_BYTES - UDP_BYTES, h);
  size_t udp_len = UDP_BYTES + hdrs + payload + JCT_ICRC_BYTES;
  ip[0] = 0x45;
  put16(ip + 2, (uint16_t)(IP_BYTES + udp_len));
  put16(ip + 6, 0x4000); /* DF */
  ip[8] = 64;
  ip[9] = 17;
  put32(ip + 12, src);
  put32(ip + 16, dst);
  put16(ip + 10, ip_csum(ip));
  put16(udp, sport);
  put16(udp + 2, JCT_ROCEV2_UDP_PORT);
  put16(udp + 4, (uint16_t)udp_len);
  size_t icrc_at = IP_BYTES + udp_len - JCT_ICRC_BYTES;
  uint32_t icrc = jct_icrc(ip, icrc_at);
  for (int k = 0; k < 4; k++) /* little-endian on the wire, as rxe */
    ip[icrc_at + (size_t)k] = (uint8_t)(icrc >> (8 * k));
  return ETH_BYTES + IP_BYTES + udp_len;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4 || atol(argv[1]) < 1 || (argc == 4 && atoi(argv[3]) < 64)) {
    fprintf(stderr, "usage: %s N OUT [SNAPLEN >= 64]\n", argv[0]);
    return 2;
  }
  uint64_t n = (uint64_t)atoll(argv[1]);
  const char *out = argv[2];
  uint32_t snap = argc == 4 ? (uint32_t)atoi(argv[3]) : 80u;
  pcap_t *dead =
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)snap, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t *d = dead ? pcap_dump_open(dead, out) : NULL;
  if (!d) {
    fprintf(stderr, "%s: %s\n", out, dead ? pcap_geterr(dead) : "cannot open");
    if (dead) pcap_close(dead);
    return 2;
  }
  static uint8_t buf[FRAME_MAX];
  uint64_t ts_ns = 1700000000ull * 1000000000ull;
  for (uint64_t f = 0; f < n; f++, ts_ns += 1000) {
    uint64_t i = f / 2;
    uint32_t req = 0xc6120000u | (uint32_t)(i & 0xffff);          /* 198.18.x.y */
    uint32_t resp = 0xc6130000u | (uint32_t)((i >> 16) & 0xffff); /* 198.19.x.y */
    uint32_t psn = (uint32_t)(i * 7919u) & JCT_PSN_MASK;
    uint16_t sport = (uint16_t)(49152u + (i & 0x3fff));
    struct jct_roce_hdrs h;
    memset(&h, 0, sizeof h);
    h.bth.pkey = 0xffff;
    h.bth.psn = psn;
    size_t len;
    if (f % 2 == 0) {
      h.bth.opcode = JCT_OP_RC_RDMA_WRITE_ONLY;
      h.bth.dest_qp = 0x100u + (uint32_t)(i % 4096u);
      h.bth.ackreq = true;
      h.reth.va = 0x10000000u;
      h.reth.rkey = 0x1234;
      h.reth.dma_len_bytes = PAYLOAD_BYTES;
      len = frame(buf, req, resp, sport, &h, PAYLOAD_BYTES);
    } else {
      h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
      h.bth.dest_qp = 0x2000u + (uint32_t)(i % 4096u);
      h.aeth.syndrome = 0x1f; /* ACK, unlimited credit */
      h.aeth.msn = 1;
      len = frame(buf, resp, req, sport, &h, 0);
    }
    struct pcap_pkthdr hdr = {.caplen = (bpf_u_int32)(len < snap ? len : snap),
                              .len = (bpf_u_int32)len};
    hdr.ts.tv_sec = (time_t)(ts_ns / 1000000000u);
    hdr.ts.tv_usec = (suseconds_t)(ts_ns % 1000000000u); /* ns: the dumper is nanosecond */
    pcap_dump((u_char *)d, &hdr, buf);
  }
  int bad = pcap_dump_flush(d) != 0;
  pcap_dump_close(d);
  pcap_close(dead);
  if (bad) {
    fprintf(stderr, "%s: write failed\n", out);
    return 2;
  }
  printf("%llu flows in %llu frames\n", (unsigned long long)n, (unsigned long long)n);
  return 0;
}
