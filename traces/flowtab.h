/* The lookup table behind jct_inspect: an open-addressing hash table that
 * maps a jct_flow_key_t to the index of a record in the caller's array.
 *
 * The table stores only (hash, index) pairs; the keys live in the caller's
 * records (at offset 0 of each, stride bytes apart), so the records can
 * move (realloc) without rehashing, and lookups compare against them in
 * place. Linear probing, power-of-two capacity, at most three quarters
 * full (11 to 21 bytes per entry: the tables are a tenth of the memory
 * per flow, inspect.h's budget); growing
 * rehashes from the stored hashes. The same table type serves flows,
 * address pairs (whose records are flows, compared by their addresses
 * only) and links (inspect.c and pause.c build keys for the latter two).
 * Internal to traces/.
 */
#ifndef JCT_FLOWTAB_H
#define JCT_FLOWTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jctlab/inspect.h"

struct jct__ftab_slot {
  uint32_t hash;
  uint32_t idx1; /* record index + 1; 0: empty */
};

typedef struct {
  struct jct__ftab_slot *slot;
  size_t mask; /* capacity - 1, capacity a power of two; slot NULL until the first insert */
  size_t count;
} jct__ftab_t;

static inline bool jct__key_eq(const jct_flow_key_t *a, const jct_flow_key_t *b) {
  return a->dest_qp == b->dest_qp && memcmp(a->src.bytes, b->src.bytes, 16) == 0 &&
         memcmp(a->dst.bytes, b->dst.bytes, 16) == 0 && a->src.family == b->src.family &&
         a->dst.family == b->dst.family;
}

uint32_t jct__ftab_hash(const jct_flow_key_t *k);

/* The index stored for k (hash h), or -1. base/stride: the records. */
long jct__ftab_find(const jct__ftab_t *t, const jct_flow_key_t *k, uint32_t h, const void *base,
                    size_t stride);

/* As jct__ftab_find(), for a table of address pairs: records are found by
 * their (src, dst) alone, k's dest_qp is not compared. */
long jct__ftab_find_pair(const jct__ftab_t *t, const jct_flow_key_t *k, uint32_t h,
                         const void *base, size_t stride);

/* Make room for one more entry, so that the next jct__ftab_insert() cannot
 * fail. Errors: JCT_ENOMEM (the table is unchanged). */
int jct__ftab_reserve(jct__ftab_t *t);

/* Store idx (below UINT32_MAX) under hash h; the key must not be present
 * yet. Grows the table as needed. Errors: JCT_ENOMEM (the table is
 * unchanged); none after jct__ftab_reserve(). */
int jct__ftab_insert(jct__ftab_t *t, uint32_t h, size_t idx);

void jct__ftab_free(jct__ftab_t *t);

#endif
