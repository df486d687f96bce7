/* Reading and writing the BTH and the RoCEv2 extension headers.
 *
 * Layouts from the InfiniBand Architecture Specification Vol. 1, Release
 * 1.4, section 9.2 (BTH), 9.3 (DETH, RETH, AtomicETH, AETH, AtomicAckETH,
 * ImmDt, IETH). Extension headers follow the BTH in the order
 * DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH; an opcode carries
 * at most the ones its table entry names (opcodes.c).
 *
 * BTH (12 bytes):  opcode | SE M PadCnt(2) TVer(4) | P_Key(16)
 *                  | FECN BECN resv6 | DestQP(24) | A resv7 | PSN(24)
 * The FECN/BECN bits sit where Linux rxe keeps them (BTH_FECN_MASK,
 * BTH_BECN_MASK in rxe_hdr.h); RoCEv2 itself marks congestion with ECN.
 */
#include <string.h>

#include "jctlab/roce.h"
#include "common/wire.h"

static void bth_read(const uint8_t *p, struct jct_bth *b) {
  b->opcode = p[0];
  b->se = p[1] & 0x80;
  b->migreq = p[1] & 0x40;
  b->pad_count = (uint8_t)((p[1] >> 4) & 3);
  b->tver = (uint8_t)(p[1] & 0x0f);
  b->pkey = jct__be16(p + 2);
  b->fecn = p[4] & 0x80;
  b->becn = p[4] & 0x40;
  b->dest_qp = jct__be24(p + 5);
  b->ackreq = p[8] & 0x80;
  b->psn = jct__be24(p + 9);
}

static void bth_write(uint8_t *p, const struct jct_bth *b) {
  p[0] = b->opcode;
  p[1] = (uint8_t)((b->se ? 0x80 : 0) | (b->migreq ? 0x40 : 0) | (b->pad_count & 3) << 4 |
                   (b->tver & 0x0f));
  jct__put16(p + 2, b->pkey);
  p[4] = (uint8_t)((b->fecn ? 0x80 : 0) | (b->becn ? 0x40 : 0));
  jct__put24(p + 5, b->dest_qp & JCT_QPN_MASK);
  p[8] = b->ackreq ? 0x80 : 0;
  jct__put24(p + 9, b->psn & JCT_PSN_MASK);
}

size_t jct_roce_parse(const uint8_t *p, size_t len, struct jct_roce_hdrs *h) {
  if (len < JCT_BTH_BYTES) return 0;
  bth_read(p, &h->bth);
  const struct jct_opcode_info *op = jct_opcode_info(h->bth.opcode);
  if (!op || len < op->hdr_bytes) return 0;

  const uint8_t *q = p + JCT_BTH_BYTES;
  if (op->ext & JCT_EXT_DETH) {
    h->deth.qkey = jct__be32(q);
    h->deth.src_qp = jct__be24(q + 5);
    q += JCT_DETH_BYTES;
  }
  if (op->ext & JCT_EXT_RETH) {
    h->reth.va = jct__be64(q);
    h->reth.rkey = jct__be32(q + 8);
    h->reth.dma_len_bytes = jct__be32(q + 12);
    q += JCT_RETH_BYTES;
  }
  if (op->ext & JCT_EXT_ATOMICETH) {
    h->atomic.va = jct__be64(q);
    h->atomic.rkey = jct__be32(q + 8);
    h->atomic.swap_add = jct__be64(q + 12);
    h->atomic.compare = jct__be64(q + 20);
    q += JCT_ATOMICETH_BYTES;
  }
  if (op->ext & JCT_EXT_AETH) {
    h->aeth.syndrome = q[0];
    h->aeth.msn = jct__be24(q + 1);
    q += JCT_AETH_BYTES;
  }
  if (op->ext & JCT_EXT_ATOMICACKETH) {
    h->atomic_ack_orig = jct__be64(q);
    q += JCT_ATOMICACKETH_BYTES;
  }
  if (op->ext & JCT_EXT_IMMDT) {
    h->immdt = jct__be32(q);
    q += JCT_IMMDT_BYTES;
  }
  if (op->ext & JCT_EXT_IETH) {
    h->ieth_rkey = jct__be32(q);
    q += JCT_IETH_BYTES;
  }
  return (size_t)(q - p);
}

size_t jct_roce_write(uint8_t *p, size_t cap, const struct jct_roce_hdrs *h) {
  const struct jct_opcode_info *op = jct_opcode_info(h->bth.opcode);
  if (!op || cap < op->hdr_bytes) return 0;
  memset(p, 0, op->hdr_bytes);
  bth_write(p, &h->bth);

  uint8_t *q = p + JCT_BTH_BYTES;
  if (op->ext & JCT_EXT_DETH) {
    jct__put32(q, h->deth.qkey);
    jct__put24(q + 5, h->deth.src_qp & JCT_QPN_MASK);
    q += JCT_DETH_BYTES;
  }
  if (op->ext & JCT_EXT_RETH) {
    jct__put64(q, h->reth.va);
    jct__put32(q + 8, h->reth.rkey);
    jct__put32(q + 12, h->reth.dma_len_bytes);
    q += JCT_RETH_BYTES;
  }
  if (op->ext & JCT_EXT_ATOMICETH) {
    jct__put64(q, h->atomic.va);
    jct__put32(q + 8, h->atomic.rkey);
    jct__put64(q + 12, h->atomic.swap_add);
    jct__put64(q + 20, h->atomic.compare);
    q += JCT_ATOMICETH_BYTES;
  }
  if (op->ext & JCT_EXT_AETH) {
    q[0] = h->aeth.syndrome;
    jct__put24(q + 1, h->aeth.msn & 0xffffffu);
    q += JCT_AETH_BYTES;
  }
  if (op->ext & JCT_EXT_ATOMICACKETH) {
    jct__put64(q, h->atomic_ack_orig);
    q += JCT_ATOMICACKETH_BYTES;
  }
  if (op->ext & JCT_EXT_IMMDT) {
    jct__put32(q, h->immdt);
    q += JCT_IMMDT_BYTES;
  }
  if (op->ext & JCT_EXT_IETH) {
    jct__put32(q, h->ieth_rkey);
    q += JCT_IETH_BYTES;
  }
  return (size_t)(q - p);
}
