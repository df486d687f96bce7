/* Crafting frames and captures for the tests (see craft.h). */
#include "craft.h"

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/wire.h"

static const uint8_t mac_a[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
static const uint8_t mac_b[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

static uint16_t ipv4_checksum(const uint8_t *h, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2)
    sum += jct__be16(h + i);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

size_t craft_roce(uint8_t *buf, size_t cap, const craft_roce_t *c) {
  const struct jct_opcode_info *op = jct_opcode_info(c->h.bth.opcode);
  size_t hdrs = op ? op->hdr_bytes : JCT_BTH_BYTES;
  size_t udp_len = 8 + hdrs + c->payload_bytes + c->h.bth.pad_count + JCT_ICRC_BYTES;
  size_t ip_hdr = c->ipv6 ? 40 : 20;
  size_t l2 = 14 + (c->vlan ? 4 : 0);
  size_t total = l2 + ip_hdr + udp_len;
  if (total > cap) return 0;
  memset(buf, 0, total);

  memcpy(buf, mac_b, 6);
  memcpy(buf + 6, mac_a, 6);
  uint8_t *p = buf + 12;
  if (c->vlan) {
    jct__put16(p, 0x8100);
    jct__put16(p + 2, (uint16_t)(c->pcp << 13 | (c->vlan_id & 0xfff)));
    p += 4;
  }
  jct__put16(p, c->ipv6 ? 0x86dd : 0x0800);
  uint8_t *ip = p + 2;
  uint8_t tos = (uint8_t)(c->dscp << 2 | (c->ecn & 3));
  if (c->ipv6) {
    ip[0] = (uint8_t)(0x60 | tos >> 4);
    ip[1] = (uint8_t)(tos << 4);
    jct__put16(ip + 4, (uint16_t)udp_len);
    ip[6] = 17;
    ip[7] = 64;
    const char *src = c->src ? c->src : "2001:2::1", *dst = c->dst ? c->dst : "2001:2::2";
    assert_quiet(inet_pton(AF_INET6, src, ip + 8) == 1, "craft_roce: %s is not IPv6", src);
    assert_quiet(inet_pton(AF_INET6, dst, ip + 24) == 1, "craft_roce: %s is not IPv6", dst);
  } else {
    ip[0] = 0x45;
    ip[1] = tos;
    jct__put16(ip + 2, (uint16_t)(20 + udp_len));
    jct__put16(ip + 6, 0x4000); /* don't fragment, as rxe sends */
    ip[8] = 64;
    ip[9] = 17;
    const char *src = c->src ? c->src : "198.18.0.1", *dst = c->dst ? c->dst : "198.18.0.2";
    assert_quiet(inet_pton(AF_INET, src, ip + 12) == 1, "craft_roce: %s is not IPv4", src);
    assert_quiet(inet_pton(AF_INET, dst, ip + 16) == 1, "craft_roce: %s is not IPv4", dst);
    jct__put16(ip + 10, ipv4_checksum(ip, 20));
  }
  uint8_t *udp = ip + ip_hdr;
  jct__put16(udp, c->udp_sport ? c->udp_sport : 49152);
  jct__put16(udp + 2, c->udp_dport ? c->udp_dport : JCT_ROCEV2_UDP_PORT);
  jct__put16(udp + 4, (uint16_t)udp_len);
  uint8_t *bth = udp + 8;
  if (op) {
    jct_roce_write(bth, hdrs, &c->h);
  } else { /* an opcode RoCEv2 does not define: a bare BTH with it */
    struct jct_roce_hdrs h = c->h;
    h.bth.opcode = JCT_OP_RC_SEND_ONLY;
    jct_roce_write(bth, hdrs, &h);
    bth[0] = c->h.bth.opcode;
  }
  for (size_t i = 0; i < c->payload_bytes; i++)
    bth[hdrs + i] = (uint8_t)(i * 31 + 7);
  size_t icrc_off = ip_hdr + udp_len - JCT_ICRC_BYTES;
  uint32_t icrc = jct_icrc(ip, icrc_off);
  if (c->bad_icrc) icrc ^= 0x10;
  jct__putle32(ip + icrc_off, icrc);
  return total;
}

static size_t mac_control(uint8_t *buf, size_t cap, const uint8_t src_mac[6], uint16_t opcode) {
  static const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
  if (cap < 60) return 0;
  memset(buf, 0, 60);
  memcpy(buf, dst, 6);
  memcpy(buf + 6, src_mac, 6);
  jct__put16(buf + 12, 0x8808);
  jct__put16(buf + 14, opcode);
  return 60;
}

size_t craft_pfc(uint8_t *buf, size_t cap, const uint8_t src_mac[6], uint16_t class_enable,
                 const uint16_t quanta[8]) {
  size_t n = mac_control(buf, cap, src_mac, 0x0101);
  if (!n) return 0;
  jct__put16(buf + 16, class_enable);
  for (int i = 0; i < 8; i++)
    jct__put16(buf + 18 + 2 * i, quanta[i]);
  return n;
}

size_t craft_pause(uint8_t *buf, size_t cap, const uint8_t src_mac[6], uint16_t quanta) {
  size_t n = mac_control(buf, cap, src_mac, 0x0001);
  if (!n) return 0;
  jct__put16(buf + 16, quanta);
  return n;
}

struct craft_pcap {
  FILE *f;
  bool nanosecond;
};

static void put_le32(FILE *f, uint32_t v) {
  uint8_t b[4];
  jct__putle32(b, v);
  assert_quiet(fwrite(b, 1, 4, f) == 4, "pcap: a short write");
}

craft_pcap_t *craft_pcap_open(const char *path, bool nanosecond, uint32_t linktype) {
  craft_pcap_t *p = calloc(1, sizeof *p);
  ck_assert_ptr_nonnull(p);
  p->f = fopen(path, "wb");
  ck_assert_ptr_nonnull(p->f);
  p->nanosecond = nanosecond;
  put_le32(p->f, nanosecond ? 0xa1b23c4du : 0xa1b2c3d4u);
  put_le32(p->f, 2u | 4u << 16); /* version 2.4 */
  put_le32(p->f, 0);             /* thiszone */
  put_le32(p->f, 0);             /* sigfigs */
  put_le32(p->f, 65535);         /* snaplen */
  put_le32(p->f, linktype);
  return p;
}

void craft_pcap_add(craft_pcap_t *p, uint64_t ts_ns, const uint8_t *frame, size_t caplen,
                    size_t len) {
  put_le32(p->f, (uint32_t)(ts_ns / 1000000000u));
  uint64_t frac = ts_ns % 1000000000u;
  put_le32(p->f, (uint32_t)(p->nanosecond ? frac : frac / 1000u));
  put_le32(p->f, (uint32_t)caplen);
  put_le32(p->f, (uint32_t)len);
  assert_quiet(fwrite(frame, 1, caplen, p->f) == caplen, "pcap: a short write of a %zu-byte frame",
               caplen);
}

void craft_pcap_close(craft_pcap_t *p) {
  ck_assert_int_eq(fclose(p->f), 0);
  free(p);
}

void craft_tmpname(char *buf, size_t len, const char *suffix) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, len, "%s/jctlab-test-XXXXXX%s", dir && *dir ? dir : "/tmp", suffix ? suffix : "");
  int fd = mkstemps(buf, suffix ? (int)strlen(suffix) : 0);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

size_t craft_flow_frame(uint8_t *buf, uint32_t src_rank, uint32_t dst_rank, uint16_t sport) {
  char s[32], d[32];
  snprintf(s, sizeof s, "198.18.0.%u", src_rank + 1);
  snprintf(d, sizeof d, "198.18.0.%u", dst_rank + 1);
  craft_roce_t c = {.src = s, .dst = d, .udp_sport = sport, .payload_bytes = 64};
  c.h.bth.opcode = JCT_OP_RC_SEND_ONLY;
  c.h.bth.dest_qp = 0x101;
  size_t n = craft_roce(buf, 2048, &c);
  ck_assert_uint_gt(n, 0);
  /* destination MAC: rank dst's (topo.h), so the group entry matches */
  const uint8_t mac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, (uint8_t)(dst_rank + 1)};
  memcpy(buf, mac, 6);
  return n;
}

size_t craft_write_frame(uint8_t *buf, size_t cap, const char *src, const char *dst, uint32_t qp,
                         uint32_t psn, uint32_t k) {
  static const uint8_t op[] = {JCT_OP_RC_RDMA_WRITE_FIRST, JCT_OP_RC_RDMA_WRITE_MIDDLE,
                               JCT_OP_RC_RDMA_WRITE_LAST};
  craft_roce_t c = {.payload_bytes = 64, .src = src, .dst = dst};
  c.h.bth.opcode = op[k % 3];
  c.h.bth.dest_qp = qp;
  c.h.bth.psn = psn;
  c.h.reth.dma_len_bytes = 192;
  size_t n = craft_roce(buf, cap, &c);
  ck_assert_uint_gt(n, 0);
  return n;
}
