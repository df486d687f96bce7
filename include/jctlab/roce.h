/* RoCEv2 wire format: BTH and its extension headers, opcodes, ICRC.
 *
 * Sources: InfiniBand Architecture Specification Vol. 1, Release 1.4,
 * chapter 9 (transport headers, opcodes table 9-1 / section 9.2, AETH
 * syndrome 9.7.5.1) and Annex A17 "RoCEv2" (UDP destination port 4791,
 * ICRC over the masked IP/UDP/BTH headers). The ICRC masking follows the
 * Linux soft-RoCE driver (drivers/infiniband/sw/rxe/rxe_icrc.c), which is
 * what the shipped captures were made with.
 *
 * All multi-byte fields are big-endian on the wire; the structs below hold
 * host-order values. The ICRC is the exception: it is stored little-endian.
 */
#ifndef JCTLAB_ROCE_H
#define JCTLAB_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JCT_ROCEV2_UDP_PORT 4791
#define JCT_BTH_BYTES 12
#define JCT_RETH_BYTES 16
#define JCT_AETH_BYTES 4
#define JCT_IMMDT_BYTES 4
#define JCT_ATOMICETH_BYTES 28
#define JCT_ATOMICACKETH_BYTES 8
#define JCT_DETH_BYTES 8
#define JCT_IETH_BYTES 4
#define JCT_ICRC_BYTES 4
#define JCT_CNP_PAYLOAD_BYTES 16 /* reserved bytes after the BTH of a CNP */
#define JCT_PSN_MASK 0xffffffu   /* PSNs are 24-bit and wrap */
#define JCT_QPN_MASK 0xffffffu
/* The longest message a QP carries: 2^31 bytes (IBA Vol. 1, the 2 GiB
 * message limit of the reliable connected service; Linux rxe refuses more). */
#define JCT_ROCE_MAX_MSG_BYTES 0x80000000u

/* Opcodes used by RoCEv2 (IBA Vol. 1 table 9-1; CNP from Annex A17). */
enum jct_opcode {
  JCT_OP_RC_SEND_FIRST = 0x00,
  JCT_OP_RC_SEND_MIDDLE = 0x01,
  JCT_OP_RC_SEND_LAST = 0x02,
  JCT_OP_RC_SEND_LAST_WITH_IMMEDIATE = 0x03,
  JCT_OP_RC_SEND_ONLY = 0x04,
  JCT_OP_RC_SEND_ONLY_WITH_IMMEDIATE = 0x05,
  JCT_OP_RC_RDMA_WRITE_FIRST = 0x06,
  JCT_OP_RC_RDMA_WRITE_MIDDLE = 0x07,
  JCT_OP_RC_RDMA_WRITE_LAST = 0x08,
  JCT_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
  JCT_OP_RC_RDMA_WRITE_ONLY = 0x0a,
  JCT_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
  JCT_OP_RC_RDMA_READ_REQUEST = 0x0c,
  JCT_OP_RC_RDMA_READ_RESPONSE_FIRST = 0x0d,
  JCT_OP_RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
  JCT_OP_RC_RDMA_READ_RESPONSE_LAST = 0x0f,
  JCT_OP_RC_RDMA_READ_RESPONSE_ONLY = 0x10,
  JCT_OP_RC_ACKNOWLEDGE = 0x11,
  JCT_OP_RC_ATOMIC_ACKNOWLEDGE = 0x12,
  JCT_OP_RC_COMPARE_SWAP = 0x13,
  JCT_OP_RC_FETCH_ADD = 0x14,
  JCT_OP_RC_SEND_LAST_WITH_INVALIDATE = 0x16,
  JCT_OP_RC_SEND_ONLY_WITH_INVALIDATE = 0x17,
  JCT_OP_UC_SEND_FIRST = 0x20,
  JCT_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2b,
  JCT_OP_UD_SEND_ONLY = 0x64,
  JCT_OP_UD_SEND_ONLY_WITH_IMMEDIATE = 0x65,
  JCT_OP_CNP = 0x81,
};

/* Extension headers an opcode carries, in wire order after the BTH. */
enum jct_ext {
  JCT_EXT_DETH = 1u << 0,
  JCT_EXT_RETH = 1u << 1,
  JCT_EXT_ATOMICETH = 1u << 2,
  JCT_EXT_AETH = 1u << 3,
  JCT_EXT_ATOMICACKETH = 1u << 4,
  JCT_EXT_IMMDT = 1u << 5,
  JCT_EXT_IETH = 1u << 6,
};

/* What an opcode does, for rebuilding messages. */
enum jct_op_kind {
  JCT_OPK_SEND,
  JCT_OPK_WRITE,
  JCT_OPK_READ_REQ,
  JCT_OPK_READ_RESP,
  JCT_OPK_ACK,
  JCT_OPK_ATOMIC,
  JCT_OPK_ATOMIC_ACK,
  JCT_OPK_CNP,
};

/* Where a packet stands in its message. ONLY is FIRST|LAST. */
enum jct_op_pos {
  JCT_POS_FIRST = 1,
  JCT_POS_MIDDLE = 2,
  JCT_POS_LAST = 4,
  JCT_POS_ONLY = JCT_POS_FIRST | JCT_POS_LAST,
};

struct jct_opcode_info {
  const char *name;  /* "RC_RDMA_WRITE_MIDDLE", as Linux's IB_OPCODE_* less the prefix */
  uint16_t ext;      /* enum jct_ext bits */
  uint8_t kind;      /* enum jct_op_kind */
  uint8_t pos;       /* enum jct_op_pos */
  uint8_t hdr_bytes; /* BTH plus extension headers */
};

/* The table entry for an opcode, or NULL when RoCEv2 does not define it
 * (reserved values, the RD and XRC transports). */
const struct jct_opcode_info *jct_opcode_info(uint8_t opcode);

/* Name of an opcode, or "UNKNOWN" for one jct_opcode_info() rejects. */
const char *jct_opcode_name(uint8_t opcode);

/* AETH syndrome (IBA 9.7.5.1): bits 6-5 say ACK / RNR NAK / NAK, bits 4-0
 * carry the credit count, the RNR timer or the NAK code. */
enum jct_aeth_type {
  JCT_AETH_ACK = 0,
  JCT_AETH_RNR_NAK = 1,
  JCT_AETH_RESERVED = 2,
  JCT_AETH_NAK = 3
};
enum jct_nak_code {
  JCT_NAK_PSN_SEQ_ERR = 0,
  JCT_NAK_INVALID_REQUEST = 1,
  JCT_NAK_REMOTE_ACCESS = 2,
  JCT_NAK_REMOTE_OP_ERR = 3,
  JCT_NAK_INVALID_RD_REQUEST = 4,
};
static inline enum jct_aeth_type jct_aeth_type(uint8_t syndrome) {
  return (enum jct_aeth_type)((syndrome >> 5) & 3u);
}
static inline uint8_t jct_aeth_value(uint8_t syndrome) {
  return (uint8_t)(syndrome & 0x1fu);
}

struct jct_bth {
  uint8_t opcode;
  bool se, migreq, ackreq;
  bool fecn, becn;   /* the two top bits of the reserved byte before the QPN, as rxe */
  uint8_t pad_count; /* 0..3 bytes of padding before the ICRC */
  uint8_t tver;
  uint16_t pkey;
  uint32_t dest_qp; /* 24 bits */
  uint32_t psn;     /* 24 bits */
};

struct jct_reth {
  uint64_t va;
  uint32_t rkey;
  uint32_t dma_len_bytes;
};

struct jct_aeth {
  uint8_t syndrome;
  uint32_t msn; /* 24 bits */
};

struct jct_atomiceth {
  uint64_t va;
  uint32_t rkey;
  uint64_t swap_add;
  uint64_t compare;
};

struct jct_deth {
  uint32_t qkey;
  uint32_t src_qp; /* 24 bits */
};

/* The BTH and whichever extension headers its opcode carries. */
struct jct_roce_hdrs {
  struct jct_bth bth;
  struct jct_reth reth;
  struct jct_aeth aeth;
  uint32_t immdt;
  struct jct_atomiceth atomic;
  uint64_t atomic_ack_orig;
  struct jct_deth deth;
  uint32_t ieth_rkey;
};

/* Parse the BTH and the extension headers its opcode calls for from the
 * start of a UDP payload.
 * Returns the header bytes consumed (>= JCT_BTH_BYTES), or 0 when len is too
 * short for them, or when the opcode is unknown (h->bth is still filled in
 * whenever len >= JCT_BTH_BYTES, so the caller can report the opcode). */
size_t jct_roce_parse(const uint8_t *p, size_t len, struct jct_roce_hdrs *h);

/* Write the BTH and the extension headers of h->bth.opcode.
 * Returns the bytes written, or 0 when cap is too small or the opcode is
 * unknown. */
size_t jct_roce_write(uint8_t *p, size_t cap, const struct jct_roce_hdrs *h);

/* The ICRC of a RoCEv2 packet (Annex A17.3.3; rxe_icrc.c): CRC-32 (IEEE
 * 802.3 polynomial) over 8 bytes of 0xff standing for the masked LRH, the IP
 * header with TOS/traffic class, TTL/hop limit, IPv4 checksum and IPv6 flow
 * label set to all ones, the UDP header with its checksum all ones, the BTH
 * with its reserved byte before the QPN all ones, then the rest of the
 * packet up to the ICRC.
 * ip: the IPv4 or IPv6 header, followed by UDP, BTH, ... and payload and
 * pad; len_bytes: from ip up to (not including) the ICRC.
 * Returns the value to compare with the ICRC read little-endian from the
 * wire. The IP version is taken from the first nibble; a len_bytes shorter
 * than the IP+UDP+BTH headers gives 0. */
uint32_t jct_icrc(const uint8_t *ip, size_t len_bytes);

/* PSN a minus PSN b in the 24-bit serial arithmetic of IBA Vol. 1 9.7.1
 * (what Linux rxe's psn_compare() does): a signed distance in
 * [-2^23, 2^23). Positive: a is after b. */
static inline int32_t jct_psn_diff(uint32_t a, uint32_t b) {
  uint32_t d = (a - b) & JCT_PSN_MASK;
  return d & 0x800000u ? (int32_t)d - 0x1000000 : (int32_t)d;
}

/* The PSN n packets after psn, wrapped to 24 bits. */
static inline uint32_t jct_psn_add(uint32_t psn, uint32_t n) {
  return (psn + n) & JCT_PSN_MASK;
}

#endif
