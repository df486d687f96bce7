/* The where= filters' BPF interpreter (bpf.h). */
#include "bpf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INSNS 4096 /* as Linux's BPF_MAXINSNS */

static bool known(uint16_t code) {
  switch (code) {
  case BPF_LD | BPF_W | BPF_ABS:
  case BPF_LD | BPF_H | BPF_ABS:
  case BPF_LD | BPF_B | BPF_ABS:
  case BPF_LD | BPF_W | BPF_IND:
  case BPF_LD | BPF_H | BPF_IND:
  case BPF_LD | BPF_B | BPF_IND:
  case BPF_LD | BPF_W | BPF_LEN:
  case BPF_LD | BPF_IMM:
  case BPF_LD | BPF_MEM:
  case BPF_LDX | BPF_W | BPF_IMM:
  case BPF_LDX | BPF_W | BPF_MEM:
  case BPF_LDX | BPF_W | BPF_LEN:
  case BPF_LDX | BPF_B | BPF_MSH:
  case BPF_ST:
  case BPF_STX:
  case BPF_RET | BPF_K:
  case BPF_RET | BPF_A:
  case BPF_MISC | BPF_TAX:
  case BPF_MISC | BPF_TXA:
  case BPF_JMP | BPF_JA:
    return true;
  default:
    break;
  }
  switch (BPF_CLASS(code)) {
  case BPF_ALU:
    switch (BPF_OP(code)) {
    case BPF_ADD:
    case BPF_SUB:
    case BPF_MUL:
    case BPF_DIV:
    case BPF_MOD:
    case BPF_AND:
    case BPF_OR:
    case BPF_XOR:
    case BPF_LSH:
    case BPF_RSH:
      return (code & ~(BPF_OP(code) | BPF_SRC(code))) == BPF_ALU;
    case BPF_NEG:
      return code == (BPF_ALU | BPF_NEG);
    default:
      return false;
    }
  case BPF_JMP:
    switch (BPF_OP(code)) {
    case BPF_JEQ:
    case BPF_JGT:
    case BPF_JGE:
    case BPF_JSET:
      return (code & ~(BPF_OP(code) | BPF_SRC(code))) == BPF_JMP;
    default:
      return false;
    }
  default:
    return false;
  }
}

static bool check(const struct bpf_program *prog) {
  size_t n = (size_t)prog->bf_len;
  const struct bpf_insn *p = prog->bf_insns;
  if (!p || n == 0 || n > MAX_INSNS) return false;
  for (size_t i = 0; i < n; i++) {
    uint16_t c = (uint16_t)p[i].code;
    if (!known(c)) return false;
    size_t rest = n - i - 1; /* instructions after this one */
    switch (BPF_CLASS(c)) {
    case BPF_JMP:
      if (BPF_OP(c) == BPF_JA) {
        if ((size_t)p[i].k >= rest) return false;
      } else if ((size_t)p[i].jt >= rest || (size_t)p[i].jf >= rest) {
        return false;
      }
      break;
    case BPF_LD:
    case BPF_LDX:
      if (BPF_MODE(c) == BPF_MEM && (uint32_t)p[i].k >= BPF_MEMWORDS) return false;
      break;
    case BPF_ST:
    case BPF_STX:
      if ((uint32_t)p[i].k >= BPF_MEMWORDS) return false;
      break;
    case BPF_ALU:
      if ((BPF_OP(c) == BPF_DIV || BPF_OP(c) == BPF_MOD) && BPF_SRC(c) == BPF_K && p[i].k == 0)
        return false;
      break;
    default:
      break;
    }
  }
  return BPF_CLASS(p[n - 1].code) == BPF_RET;
}

/* Fused pairs: a load then a conditional jump on a constant (codes above
 * any classic BPF code). The jump stays in place after the load, so jump
 * offsets need no change: the fused instruction loads, tests with the
 * next one's k and jumps from it. */
enum {
  F_LDW_JEQ = 0x100,
  F_LDH_JEQ,
  F_LDB_JEQ,
  F_LDH_X_JEQ,
  F_LDB_X_JEQ,
  F_LDW_JGT,
  F_LDH_JGT,
  F_LDB_JGT,
  F_LDH_JGE,
  F_LDB_JGE,
  F_LDH_JSET,
  F_LDB_JSET,
};

static uint16_t fuse(uint16_t ld, uint16_t jmp) {
  static const struct {
    uint16_t ld, jmp, fused;
  } pairs[] = {
      {BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K, F_LDW_JEQ},
      {BPF_LD | BPF_H | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K, F_LDH_JEQ},
      {BPF_LD | BPF_B | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K, F_LDB_JEQ},
      {BPF_LD | BPF_H | BPF_IND, BPF_JMP | BPF_JEQ | BPF_K, F_LDH_X_JEQ},
      {BPF_LD | BPF_B | BPF_IND, BPF_JMP | BPF_JEQ | BPF_K, F_LDB_X_JEQ},
      {BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JGT | BPF_K, F_LDW_JGT},
      {BPF_LD | BPF_H | BPF_ABS, BPF_JMP | BPF_JGT | BPF_K, F_LDH_JGT},
      {BPF_LD | BPF_B | BPF_ABS, BPF_JMP | BPF_JGT | BPF_K, F_LDB_JGT},
      {BPF_LD | BPF_H | BPF_ABS, BPF_JMP | BPF_JGE | BPF_K, F_LDH_JGE},
      {BPF_LD | BPF_B | BPF_ABS, BPF_JMP | BPF_JGE | BPF_K, F_LDB_JGE},
      {BPF_LD | BPF_H | BPF_ABS, BPF_JMP | BPF_JSET | BPF_K, F_LDH_JSET},
      {BPF_LD | BPF_B | BPF_ABS, BPF_JMP | BPF_JSET | BPF_K, F_LDB_JSET},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
    if (pairs[i].ld == ld && pairs[i].jmp == jmp) return pairs[i].fused;
  return 0;
}

struct bpf_insn *jct__bpf_prepare(const struct bpf_program *prog) {
  if (!check(prog)) return NULL;
  size_t n = (size_t)prog->bf_len;
  struct bpf_insn *out = malloc(n * sizeof *out);
  bool *target = calloc(n, sizeof *target);
  if (!out || !target) {
    free(out);
    free(target);
    return NULL;
  }
  memcpy(out, prog->bf_insns, n * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    if (BPF_CLASS(out[i].code) != BPF_JMP) continue;
    if (BPF_OP(out[i].code) == BPF_JA) {
      target[i + 1 + out[i].k] = true;
    } else {
      target[i + 1 + out[i].jt] = true;
      target[i + 1 + out[i].jf] = true;
    }
  }
  for (size_t i = 0; i + 1 < n; i++) {
    uint16_t f = fuse((uint16_t)out[i].code, (uint16_t)out[i + 1].code);
    if (f && !target[i + 1]) {
      out[i].code = f;
      i++; /* the jump itself is not the start of another pair */
    }
  }
  free(target);
  return out;
}

static inline uint32_t be32(const uint8_t *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Loads: size bytes at k (+ X); out of the packet ends the run with 0. */
#define LOAD(off, size, expr)                                                                      \
  do {                                                                                             \
    uint32_t o_ = (off);                                                                           \
    if (o_ > len || size > len - o_) return 0;                                                     \
    A = (expr);                                                                                    \
  } while (0)

uint32_t jct__bpf_run(const struct bpf_insn *pc, const uint8_t *pkt, uint32_t len) {
  uint32_t A = 0, X = 0, mem[BPF_MEMWORDS] = {0};
  for (;; pc++) {
    uint32_t k = (uint32_t)pc->k;
    switch (pc->code) {
    case BPF_RET | BPF_K:
      return k;
    case BPF_RET | BPF_A:
      return A;
    /* fused: load, then the next instruction's test, jumping from it */
    case F_LDW_JEQ:
      LOAD(k, 4u, be32(pkt + k));
      pc++;
      pc += A == (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDH_JEQ:
      LOAD(k, 2u, (uint32_t)pkt[k] << 8 | pkt[k + 1]);
      pc++;
      pc += A == (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDB_JEQ:
      LOAD(k, 1u, pkt[k]);
      pc++;
      pc += A == (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDH_X_JEQ:
      if (k + X < k) return 0;
      LOAD(k + X, 2u, (uint32_t)pkt[k + X] << 8 | pkt[k + X + 1]);
      pc++;
      pc += A == (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDB_X_JEQ:
      if (k + X < k) return 0;
      LOAD(k + X, 1u, pkt[k + X]);
      pc++;
      pc += A == (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDW_JGT:
      LOAD(k, 4u, be32(pkt + k));
      pc++;
      pc += A > (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDH_JGT:
      LOAD(k, 2u, (uint32_t)pkt[k] << 8 | pkt[k + 1]);
      pc++;
      pc += A > (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDB_JGT:
      LOAD(k, 1u, pkt[k]);
      pc++;
      pc += A > (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDH_JGE:
      LOAD(k, 2u, (uint32_t)pkt[k] << 8 | pkt[k + 1]);
      pc++;
      pc += A >= (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDB_JGE:
      LOAD(k, 1u, pkt[k]);
      pc++;
      pc += A >= (uint32_t)pc->k ? pc->jt : pc->jf;
      break;
    case F_LDH_JSET:
      LOAD(k, 2u, (uint32_t)pkt[k] << 8 | pkt[k + 1]);
      pc++;
      pc += (A & (uint32_t)pc->k) ? pc->jt : pc->jf;
      break;
    case F_LDB_JSET:
      LOAD(k, 1u, pkt[k]);
      pc++;
      pc += (A & (uint32_t)pc->k) ? pc->jt : pc->jf;
      break;
    case BPF_LD | BPF_W | BPF_ABS:
      LOAD(k, 4u, be32(pkt + k));
      break;
    case BPF_LD | BPF_H | BPF_ABS:
      LOAD(k, 2u, (uint32_t)pkt[k] << 8 | pkt[k + 1]);
      break;
    case BPF_LD | BPF_B | BPF_ABS:
      LOAD(k, 1u, pkt[k]);
      break;
    case BPF_LD | BPF_W | BPF_IND:
      if (k + X < k) return 0;
      LOAD(k + X, 4u, be32(pkt + k + X));
      break;
    case BPF_LD | BPF_H | BPF_IND:
      if (k + X < k) return 0;
      LOAD(k + X, 2u, (uint32_t)pkt[k + X] << 8 | pkt[k + X + 1]);
      break;
    case BPF_LD | BPF_B | BPF_IND:
      if (k + X < k) return 0;
      LOAD(k + X, 1u, pkt[k + X]);
      break;
    case BPF_LD | BPF_W | BPF_LEN:
      A = len;
      break;
    case BPF_LDX | BPF_W | BPF_LEN:
      X = len;
      break;
    case BPF_LD | BPF_IMM:
      A = k;
      break;
    case BPF_LDX | BPF_W | BPF_IMM:
      X = k;
      break;
    case BPF_LD | BPF_MEM:
      A = mem[k];
      break;
    case BPF_LDX | BPF_W | BPF_MEM:
      X = mem[k];
      break;
    case BPF_LDX | BPF_B | BPF_MSH:
      if (k >= len) return 0;
      X = (uint32_t)(pkt[k] & 0xf) << 2;
      break;
    case BPF_ST:
      mem[k] = A;
      break;
    case BPF_STX:
      mem[k] = X;
      break;
    case BPF_JMP | BPF_JA:
      pc += k;
      break;
    case BPF_JMP | BPF_JEQ | BPF_K:
      pc += A == k ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JGT | BPF_K:
      pc += A > k ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JGE | BPF_K:
      pc += A >= k ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JSET | BPF_K:
      pc += (A & k) ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JEQ | BPF_X:
      pc += A == X ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JGT | BPF_X:
      pc += A > X ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JGE | BPF_X:
      pc += A >= X ? pc->jt : pc->jf;
      break;
    case BPF_JMP | BPF_JSET | BPF_X:
      pc += (A & X) ? pc->jt : pc->jf;
      break;
    case BPF_ALU | BPF_ADD | BPF_K:
      A += k;
      break;
    case BPF_ALU | BPF_SUB | BPF_K:
      A -= k;
      break;
    case BPF_ALU | BPF_MUL | BPF_K:
      A *= k;
      break;
    case BPF_ALU | BPF_DIV | BPF_K:
      A /= k; /* k != 0: checked */
      break;
    case BPF_ALU | BPF_MOD | BPF_K:
      A %= k;
      break;
    case BPF_ALU | BPF_AND | BPF_K:
      A &= k;
      break;
    case BPF_ALU | BPF_OR | BPF_K:
      A |= k;
      break;
    case BPF_ALU | BPF_XOR | BPF_K:
      A ^= k;
      break;
    case BPF_ALU | BPF_LSH | BPF_K:
      A = k < 32 ? A << k : 0;
      break;
    case BPF_ALU | BPF_RSH | BPF_K:
      A = k < 32 ? A >> k : 0;
      break;
    case BPF_ALU | BPF_ADD | BPF_X:
      A += X;
      break;
    case BPF_ALU | BPF_SUB | BPF_X:
      A -= X;
      break;
    case BPF_ALU | BPF_MUL | BPF_X:
      A *= X;
      break;
    case BPF_ALU | BPF_DIV | BPF_X:
      if (X == 0) return 0;
      A /= X;
      break;
    case BPF_ALU | BPF_MOD | BPF_X:
      if (X == 0) return 0;
      A %= X;
      break;
    case BPF_ALU | BPF_AND | BPF_X:
      A &= X;
      break;
    case BPF_ALU | BPF_OR | BPF_X:
      A |= X;
      break;
    case BPF_ALU | BPF_XOR | BPF_X:
      A ^= X;
      break;
    case BPF_ALU | BPF_LSH | BPF_X:
      A = X < 32 ? A << X : 0;
      break;
    case BPF_ALU | BPF_RSH | BPF_X:
      A = X < 32 ? A >> X : 0;
      break;
    case BPF_ALU | BPF_NEG:
      A = 0u - A;
      break;
    case BPF_MISC | BPF_TAX:
      X = A;
      break;
    case BPF_MISC | BPF_TXA:
      A = X;
      break;
    default:
      return 0; /* check() refuses it: not reached */
    }
  }
}
