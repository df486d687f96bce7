/* Sparse per-flow opcode counters (opcount.h). A packet costs a scan of the
 * few counters its flow has: the opcode is the top byte of each. */
#include "opcount.h"

#include <stdbool.h>
#include <stdlib.h>

#include "jctlab/error.h"

#define TAG(op) ((uint64_t)(op) << 56)
#define TAG_MASK TAG(0xff)
#define COUNT_MASK (~TAG_MASK)
#define MORE_FIRST_CAP 8u

static inline bool bump(uint64_t *v, uint64_t tag) {
  if ((*v & TAG_MASK) != tag || !(*v & COUNT_MASK)) return false;
  ++*v; /* 2^56 packets of one opcode on one flow will not happen */
  return true;
}

int jct__opcount_add(jct__opcount_t *c, uint8_t opcode) {
  uint64_t tag = TAG(opcode);
  for (size_t i = 0; i < JCT__OPCOUNT_INLINE; i++) {
    if (!c->in[i]) {
      c->in[i] = tag | 1u;
      return 0;
    }
    if (bump(&c->in[i], tag)) return 0;
  }
  size_t used = c->more ? (size_t)(c->more[0] & 0xffffffffu) : 0;
  for (size_t i = 1; i <= used; i++)
    if (bump(&c->more[i], tag)) return 0;
  size_t cap = c->more ? (size_t)(c->more[0] >> 32) : 0;
  if (used + 2 > cap) {
    size_t ncap = cap ? 2 * cap : MORE_FIRST_CAP;
    uint64_t *m = realloc(c->more, ncap * sizeof *m);
    if (!m) return JCT_ENOMEM;
    c->more = m;
    cap = ncap;
  }
  c->more[used + 1] = tag | 1u;
  c->more[0] = (uint64_t)(used + 1) | (uint64_t)cap << 32;
  return 0;
}

static void put(jct_opcode_count_t *out, size_t *n, uint64_t v) {
  /* Insertion in opcode order: at most a few dozen entries. */
  uint8_t op = (uint8_t)(v >> 56);
  size_t k = *n;
  while (k > 0 && out[k - 1].opcode > op) {
    out[k] = out[k - 1];
    k--;
  }
  out[k] = (jct_opcode_count_t){.opcode = op, .packets = v & COUNT_MASK};
  ++*n;
}

size_t jct__opcount_get(const jct__opcount_t *c, jct_opcode_count_t out[256]) {
  size_t n = 0;
  for (size_t i = 0; i < JCT__OPCOUNT_INLINE && c->in[i]; i++)
    put(out, &n, c->in[i]);
  size_t used = c->more ? (size_t)(c->more[0] & 0xffffffffu) : 0;
  for (size_t i = 1; i <= used; i++)
    put(out, &n, c->more[i]);
  return n;
}

void jct__opcount_free(jct__opcount_t *c) {
  free(c->more);
  c->more = NULL;
}
