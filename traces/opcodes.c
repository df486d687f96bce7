/* The RoCEv2 opcode table: which extension headers each opcode carries,
 * what it does and where it stands in a message.
 *
 * Source: InfiniBand Architecture Specification Vol. 1, Release 1.4,
 * table 9-1 "OpCode field" and section 9.2 (header presence per opcode);
 * the CNP opcode 0x81 from Annex A17.9 (RoCEv2 congestion management).
 * Names follow Linux's IB_OPCODE_* constants less their prefix, as
 * Wireshark's and rxe's users know them. The RD and XRC transports are not
 * used by RoCEv2 and are left out, so their opcodes decode as unknown.
 */
#include "jctlab/roce.h"

#define E_RETH JCT_EXT_RETH
#define E_AETH JCT_EXT_AETH
#define E_IMM JCT_EXT_IMMDT
#define E_ATOM JCT_EXT_ATOMICETH
#define E_AACK JCT_EXT_ATOMICACKETH
#define E_DETH JCT_EXT_DETH
#define E_IETH JCT_EXT_IETH

/* Header bytes (BTH plus extension headers) as a constant expression, so
 * the table cannot disagree with its own ext bits. */
#define EXT_BYTES(e)                                                                               \
  (((e)&E_DETH ? JCT_DETH_BYTES : 0) + ((e)&E_RETH ? JCT_RETH_BYTES : 0) +                         \
   ((e)&E_ATOM ? JCT_ATOMICETH_BYTES : 0) + ((e)&E_AETH ? JCT_AETH_BYTES : 0) +                    \
   ((e)&E_AACK ? JCT_ATOMICACKETH_BYTES : 0) + ((e)&E_IMM ? JCT_IMMDT_BYTES : 0) +                 \
   ((e)&E_IETH ? JCT_IETH_BYTES : 0))

#define OP(code, nm, ext_, kind_, pos_)                                                            \
  [code] = {nm, (ext_), (kind_), (pos_), JCT_BTH_BYTES + EXT_BYTES(ext_)}

static const struct jct_opcode_info table[256] = {
    OP(0x00, "RC_SEND_FIRST", 0, JCT_OPK_SEND, JCT_POS_FIRST),
    OP(0x01, "RC_SEND_MIDDLE", 0, JCT_OPK_SEND, JCT_POS_MIDDLE),
    OP(0x02, "RC_SEND_LAST", 0, JCT_OPK_SEND, JCT_POS_LAST),
    OP(0x03, "RC_SEND_LAST_WITH_IMMEDIATE", E_IMM, JCT_OPK_SEND, JCT_POS_LAST),
    OP(0x04, "RC_SEND_ONLY", 0, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", E_IMM, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x06, "RC_RDMA_WRITE_FIRST", E_RETH, JCT_OPK_WRITE, JCT_POS_FIRST),
    OP(0x07, "RC_RDMA_WRITE_MIDDLE", 0, JCT_OPK_WRITE, JCT_POS_MIDDLE),
    OP(0x08, "RC_RDMA_WRITE_LAST", 0, JCT_OPK_WRITE, JCT_POS_LAST),
    OP(0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", E_IMM, JCT_OPK_WRITE, JCT_POS_LAST),
    OP(0x0a, "RC_RDMA_WRITE_ONLY", E_RETH, JCT_OPK_WRITE, JCT_POS_ONLY),
    OP(0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", E_RETH | E_IMM, JCT_OPK_WRITE, JCT_POS_ONLY),
    OP(0x0c, "RC_RDMA_READ_REQUEST", E_RETH, JCT_OPK_READ_REQ, JCT_POS_ONLY),
    OP(0x0d, "RC_RDMA_READ_RESPONSE_FIRST", E_AETH, JCT_OPK_READ_RESP, JCT_POS_FIRST),
    OP(0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0, JCT_OPK_READ_RESP, JCT_POS_MIDDLE),
    OP(0x0f, "RC_RDMA_READ_RESPONSE_LAST", E_AETH, JCT_OPK_READ_RESP, JCT_POS_LAST),
    OP(0x10, "RC_RDMA_READ_RESPONSE_ONLY", E_AETH, JCT_OPK_READ_RESP, JCT_POS_ONLY),
    OP(0x11, "RC_ACKNOWLEDGE", E_AETH, JCT_OPK_ACK, JCT_POS_ONLY),
    OP(0x12, "RC_ATOMIC_ACKNOWLEDGE", E_AETH | E_AACK, JCT_OPK_ATOMIC_ACK, JCT_POS_ONLY),
    OP(0x13, "RC_COMPARE_SWAP", E_ATOM, JCT_OPK_ATOMIC, JCT_POS_ONLY),
    OP(0x14, "RC_FETCH_ADD", E_ATOM, JCT_OPK_ATOMIC, JCT_POS_ONLY),
    OP(0x16, "RC_SEND_LAST_WITH_INVALIDATE", E_IETH, JCT_OPK_SEND, JCT_POS_LAST),
    OP(0x17, "RC_SEND_ONLY_WITH_INVALIDATE", E_IETH, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x20, "UC_SEND_FIRST", 0, JCT_OPK_SEND, JCT_POS_FIRST),
    OP(0x21, "UC_SEND_MIDDLE", 0, JCT_OPK_SEND, JCT_POS_MIDDLE),
    OP(0x22, "UC_SEND_LAST", 0, JCT_OPK_SEND, JCT_POS_LAST),
    OP(0x23, "UC_SEND_LAST_WITH_IMMEDIATE", E_IMM, JCT_OPK_SEND, JCT_POS_LAST),
    OP(0x24, "UC_SEND_ONLY", 0, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", E_IMM, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x26, "UC_RDMA_WRITE_FIRST", E_RETH, JCT_OPK_WRITE, JCT_POS_FIRST),
    OP(0x27, "UC_RDMA_WRITE_MIDDLE", 0, JCT_OPK_WRITE, JCT_POS_MIDDLE),
    OP(0x28, "UC_RDMA_WRITE_LAST", 0, JCT_OPK_WRITE, JCT_POS_LAST),
    OP(0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", E_IMM, JCT_OPK_WRITE, JCT_POS_LAST),
    OP(0x2a, "UC_RDMA_WRITE_ONLY", E_RETH, JCT_OPK_WRITE, JCT_POS_ONLY),
    OP(0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", E_RETH | E_IMM, JCT_OPK_WRITE, JCT_POS_ONLY),
    OP(0x64, "UD_SEND_ONLY", E_DETH, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", E_DETH | E_IMM, JCT_OPK_SEND, JCT_POS_ONLY),
    OP(0x81, "CNP", 0, JCT_OPK_CNP, JCT_POS_ONLY),
};

const struct jct_opcode_info *jct_opcode_info(uint8_t opcode) {
  const struct jct_opcode_info *e = &table[opcode];
  return e->name ? e : NULL;
}

const char *jct_opcode_name(uint8_t opcode) {
  const struct jct_opcode_info *e = jct_opcode_info(opcode);
  return e ? e->name : "UNKNOWN";
}
