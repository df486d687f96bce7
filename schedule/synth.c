/* Generated collectives: schedules for N ranks and S bytes as the
 * collective libraries run them.
 *
 * ring: NCCL's ring AllReduce (reduce-scatter, then all-gather; 2(N-1)
 *   steps; at step s rank r sends chunk (r - s) mod N to r+1, after
 *   receiving step s-1 from r-1). Patarasuk & Yuan, "Bandwidth optimal
 *   all-reduce algorithms for clusters of workstations", JPDC 2009.
 * tree: NCCL's double binary tree (Sanders, Speck & Träff, "Two-tree
 *   algorithms for full bandwidth broadcast, reduction and scan", 2009):
 *   two trees each carrying half of the data. Here both are heap-shaped
 *   (children of position p are 2p+1 and 2p+2) and the second maps position
 *   p to rank N-1-p, so the leaves of one are mostly inner nodes of the other.
 * halving-doubling: Rabenseifner's AllReduce (Thakur, Rabenseifner & Gropp,
 *   "Optimization of collective communication operations in MPICH", 2005):
 *   reduce-scatter by recursive halving, all-gather by recursive doubling.
 * all-to-all: every rank sends S/N to every other rank.
 * all-gather, reduce-scatter: NCCL's ring all-gather and ring reduce-scatter,
 *   each one half of the ring AllReduce: N-1 steps; at step s rank r sends
 *   one chunk of S/N to r+1, after receiving step s-1 from r-1. S is the
 *   gathered size (all-gather) or each rank's input (reduce-scatter), as
 *   nccl-tests counts them. All-gather sends chunk (r - s) mod N (its own
 *   first, then what it just received); reduce-scatter sends chunk
 *   (r - s - 1) mod N, so that rank r ends with chunk r reduced.
 * broadcast: NCCL's ring broadcast from rank 0: the data goes down the ring
 *   0 -> 1 -> ... -> N-1 in chunks of 512 KiB (NCCL's Simple protocol: a
 *   4 MiB buffer in NCCL_STEPS = 8 steps, BROADCAST_CHUNKSTEPS = 1), and
 *   each rank forwards a chunk as soon as it has received it, so the
 *   chunks pipeline along the ring; the last rank sends nothing.
 * incast: ranks 1..N-1 each send S bytes to rank 0 at once, no deps: the
 *   last hop of an AllReduce under load, parameter-server traffic, and the
 *   congestion-control test of Zhu et al., "Congestion Control for
 *   Large-Scale RDMA Deployments" (SIGCOMM 2015, DCQCN), whose N-to-1
 *   incasts show PFC's unfairness and congestion spreading. The receiver's
 *   link is the bottleneck: it carries (N-1)·S.
 * Channels split the data C ways, each channel with its own QPs, as NCCL's
 * channels do. Sizes are split exactly: the remainder bytes go to the first
 * chunks, so the ops of one rank always add up to what it must send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"

#define MAX_RANKS 4096u
#define MAX_CHANNELS 64u

/* The broadcast's pipeline chunk (above). */
#define BROADCAST_CHUNK_BYTES (512u << 10)

enum { RING, TREE, HALVING_DOUBLING, ALL_TO_ALL, ALL_GATHER, REDUCE_SCATTER, BROADCAST, INCAST };

const char *const jct_synth_algorithms[] = {"ring",       "tree",       "halving-doubling",
                                            "all-to-all", "all-gather", "reduce-scatter",
                                            "broadcast",  "incast",     NULL};

/* nccl-tests' names for the same collectives (its all_gather_perf and so
 * on), taken as they are and recorded under the names above. */
static const struct {
  const char *alias;
  int alg;
} aliases[] = {
    {"alltoall", ALL_TO_ALL}, {"allgather", ALL_GATHER}, {"reducescatter", REDUCE_SCATTER}};

/* A schedule under construction, with a hash from (src, dst, channel) to
 * connection id. */
typedef struct {
  jct_schedule_t *s;
  uint32_t cap_ops, cap_conns;
  uint64_t *keys; /* key + 1; 0 is empty */
  uint32_t *vals;
  size_t hcap;
  int oom;
} builder_t;

static uint64_t conn_key(uint32_t src, uint32_t dst, uint32_t ch) {
  return ((uint64_t)ch << 40 | (uint64_t)src << 20 | dst) + 1;
}

static size_t hslot(const builder_t *b, uint64_t key) {
  uint64_t h = key * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 20) & (b->hcap - 1);
}

static int grow_hash(builder_t *b) {
  size_t ncap = b->hcap ? b->hcap * 2 : 1024;
  uint64_t *nk = calloc(ncap, sizeof *nk);
  uint32_t *nv = calloc(ncap, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return -1;
  }
  uint64_t *ok = b->keys;
  uint32_t *ov = b->vals;
  size_t ocap = b->hcap;
  b->keys = nk, b->vals = nv, b->hcap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (ok[i]) {
      size_t j = hslot(b, ok[i]);
      while (b->keys[j])
        j = (j + 1) & (b->hcap - 1);
      b->keys[j] = ok[i], b->vals[j] = ov[i];
    }
  free(ok);
  free(ov);
  return 0;
}

static uint32_t conn(builder_t *b, uint32_t src, uint32_t dst, uint32_t ch) {
  if (b->oom) return 0;
  if ((size_t)b->s->nconns * 2 >= b->hcap && grow_hash(b)) return b->oom = 1, 0;
  uint64_t key = conn_key(src, dst, ch);
  size_t j = hslot(b, key);
  for (; b->keys[j]; j = (j + 1) & (b->hcap - 1))
    if (b->keys[j] == key) return b->vals[j];
  if (b->s->nconns == b->cap_conns) {
    uint32_t ncap = b->cap_conns ? b->cap_conns * 2 : 64;
    jct_conn_t *n = realloc(b->s->conns, ncap * sizeof *n);
    if (!n) return b->oom = 1, 0;
    b->s->conns = n, b->cap_conns = ncap;
  }
  uint32_t id = b->s->nconns++;
  b->s->conns[id] = (jct_conn_t){src, dst, ch};
  b->keys[j] = key, b->vals[j] = id;
  return id;
}

/* Append an op; deps (n of them) are copied. Returns its id. */
static uint32_t op(builder_t *b, uint32_t c, uint64_t bytes, const uint32_t *deps, uint32_t n,
                   int32_t step) {
  if (b->oom) return 0;
  if (b->s->nops == b->cap_ops) {
    uint32_t ncap = b->cap_ops ? b->cap_ops * 2 : 256;
    jct_op_t *o = realloc(b->s->ops, ncap * sizeof *o);
    if (!o) return b->oom = 1, 0;
    b->s->ops = o, b->cap_ops = ncap;
  }
  jct_op_t *o = &b->s->ops[b->s->nops];
  memset(o, 0, sizeof *o);
  o->conn = c, o->bytes = bytes, o->step = step;
  if (n) {
    o->deps = malloc(n * sizeof *deps);
    if (!o->deps) return b->oom = 1, 0;
    memcpy(o->deps, deps, n * sizeof *deps);
    o->ndeps = n;
  }
  return b->s->nops++;
}

/* Bytes of part i when total is split n ways as evenly as possible. */
static uint64_t part(uint64_t total, uint64_t n, uint64_t i) {
  return total / n + (i < total % n ? 1 : 0);
}

static void synth_ring(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels) {
  uint32_t steps = 2 * (n - 1);
  for (uint32_t ch = 0; ch < channels; ch++) {
    uint64_t ch_bytes = part(bytes, channels, ch);
    uint32_t base = b->s->nops;
    for (uint32_t s = 0; s < steps; s++)
      for (uint32_t r = 0; r < n; r++) {
        uint32_t chunk = (r + n - s % n) % n;
        uint32_t dep = base + (s - 1) * n + (r + n - 1) % n; /* step s-1 of rank r-1 */
        op(b, conn(b, r, (r + 1) % n, ch), part(ch_bytes, n, chunk), &dep, s ? 1 : 0, (int32_t)s);
      }
  }
}

static uint32_t depth_of(uint32_t p) {
  uint32_t d = 0;
  for (; p; p = (p - 1) / 2)
    d++;
  return d;
}

static void synth_tree(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels) {
  uint32_t maxd = depth_of(n - 1);
  uint32_t *up = malloc(n * sizeof *up);     /* reduce op out of position p */
  uint32_t *down = malloc(n * sizeof *down); /* broadcast op into position p */
  if (!up || !down) {
    b->oom = 1;
    goto out;
  }
  for (uint32_t ch = 0; ch < channels; ch++)
    for (uint32_t t = 0; t < 2; t++) {
      uint64_t tb = part(part(bytes, channels, ch), 2, t);
      uint32_t qch = ch * 2 + t;
#define RANK(p) (t ? n - 1 - (p) : (p))
      /* reduce, deepest positions first: p sends after hearing from its children */
      for (uint32_t p = n - 1; p >= 1; p--) {
        uint32_t deps[2], nd = 0;
        for (uint32_t k = 2 * p + 1; k <= 2 * p + 2 && k < n; k++)
          deps[nd++] = up[k];
        up[p] = op(b, conn(b, RANK(p), RANK((p - 1) / 2), qch), tb, deps, nd,
                   (int32_t)(maxd - depth_of(p)));
      }
      /* broadcast, root first: after the root has it all, or after hearing from the parent */
      for (uint32_t p = 1; p < n; p++) {
        uint32_t par = (p - 1) / 2, deps[2], nd = 0;
        if (par == 0) {
          for (uint32_t k = 1; k <= 2 && k < n; k++)
            deps[nd++] = up[k];
        } else {
          deps[nd++] = down[par];
        }
        down[p] = op(b, conn(b, RANK(par), RANK(p), qch), tb, deps, nd,
                     (int32_t)(maxd + depth_of(p) - 1));
      }
#undef RANK
    }
out:
  free(up);
  free(down);
}

/* Each send needs everything its rank has received so far: the segment it
 * sends was reduced with (or gathered from) every earlier partner, and
 * those receipts are not implied by the last one. */
static void synth_halving_doubling(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels) {
  uint32_t levels = 0;
  while ((1u << levels) < n)
    levels++;
  uint64_t *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi);
  uint32_t *recv = malloc((size_t)n * 2 * levels * sizeof *recv); /* recv[r * 2L + s] */
  uint32_t *sent = malloc(n * sizeof *sent);
  if (!lo || !hi || !recv || !sent) {
    b->oom = 1;
    goto out;
  }
  for (uint32_t ch = 0; ch < channels; ch++) {
    for (uint32_t r = 0; r < n; r++)
      lo[r] = 0, hi[r] = part(bytes, channels, ch);
    for (uint32_t s = 0; s < 2 * levels; s++) {
      uint32_t d = s < levels ? n >> (s + 1) : 1u << (s - levels);
      for (uint32_t r = 0; r < n; r++) {
        uint64_t bytes_out;
        if (s < levels) { /* halving: send the half the partner keeps */
          uint64_t mid = lo[r] + (hi[r] - lo[r]) / 2;
          bytes_out = (r & d) ? mid - lo[r] : hi[r] - mid;
        } else { /* doubling: send all this rank holds */
          bytes_out = hi[r] - lo[r];
        }
        sent[r] =
            op(b, conn(b, r, r ^ d, ch), bytes_out, &recv[(size_t)r * 2 * levels], s, (int32_t)s);
      }
      for (uint32_t r = 0; r < n; r++) {
        recv[(size_t)r * 2 * levels + s] = sent[r ^ d];
        if (s < levels) {
          uint64_t mid = lo[r] + (hi[r] - lo[r]) / 2;
          if (r & d)
            lo[r] = mid;
          else
            hi[r] = mid;
        }
      }
      if (s >= levels) /* both now hold the union of their two segments */
        for (uint32_t r = 0; r < n; r++)
          if (r < (r ^ d)) {
            uint32_t q = r ^ d;
            uint64_t l = lo[r] < lo[q] ? lo[r] : lo[q], h = hi[r] > hi[q] ? hi[r] : hi[q];
            lo[r] = lo[q] = l, hi[r] = hi[q] = h;
          }
    }
  }
out:
  free(lo);
  free(hi);
  free(recv);
  free(sent);
}

static void synth_all_to_all(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels) {
  for (uint32_t ch = 0; ch < channels; ch++) {
    uint64_t per_rank = part(bytes, channels, ch);
    for (uint32_t r = 0; r < n; r++)
      for (uint32_t k = 1; k < n; k++) {
        uint32_t q = (r + k) % n;
        op(b, conn(b, r, q, ch), part(per_rank, n, q), NULL, 0, (int32_t)(k - 1));
      }
  }
}

/* Half a ring AllReduce: N-1 steps, each rank sending one chunk to the
 * next after receiving the previous step's from the one before. first is
 * the chunk rank r sends at step 0 relative to r: 0 for all-gather (its
 * own), N-1 for reduce-scatter (chunk r-1, so that r ends with chunk r). */
static void synth_half_ring(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels,
                            uint32_t first) {
  for (uint32_t ch = 0; ch < channels; ch++) {
    uint64_t ch_bytes = part(bytes, channels, ch);
    uint32_t base = b->s->nops;
    for (uint32_t s = 0; s + 1 < n; s++)
      for (uint32_t r = 0; r < n; r++) {
        uint32_t chunk = (r + first + n - s % n) % n;
        uint32_t dep = base + (s - 1) * n + (r + n - 1) % n; /* step s-1 of rank r-1 */
        op(b, conn(b, r, (r + 1) % n, ch), part(ch_bytes, n, chunk), &dep, s ? 1 : 0, (int32_t)s);
      }
  }
}

/* Chunks of one channel's share of a broadcast. */
static uint64_t broadcast_chunks(uint64_t ch_bytes) {
  return (ch_bytes + BROADCAST_CHUNK_BYTES - 1) / BROADCAST_CHUNK_BYTES;
}

/* Chunk-major, so each connection's messages go in chunk order; hop h is
 * rank h sending to h+1, after receiving the same chunk from h-1. The step
 * is the chunk's slot in the pipeline, chunk + hop. */
static void synth_broadcast(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels) {
  for (uint32_t ch = 0; ch < channels; ch++) {
    uint64_t ch_bytes = part(bytes, channels, ch), k = broadcast_chunks(ch_bytes);
    for (uint64_t j = 0; j < k; j++) {
      uint32_t prev = 0;
      for (uint32_t h = 0; h + 1 < n; h++)
        prev =
            op(b, conn(b, h, h + 1, ch), part(ch_bytes, k, j), &prev, h ? 1 : 0, (int32_t)(j + h));
    }
  }
}

/* Every sender's S split over the channels, all at step 0. */
static void synth_incast(builder_t *b, uint32_t n, uint64_t bytes, uint32_t channels) {
  for (uint32_t ch = 0; ch < channels; ch++)
    for (uint32_t r = 1; r < n; r++)
      op(b, conn(b, r, 0, ch), part(bytes, channels, ch), NULL, 0, 0);
}

int jct_schedule_synth(jct_schedule_t **out, const char *algorithm, uint32_t nranks,
                       uint64_t bytes_total, uint32_t channels, char *err, size_t errlen) {
  *out = NULL;
  if (nranks < 2 || nranks > MAX_RANKS)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: --ranks %u is outside [2, %u]", algorithm,
                     nranks, MAX_RANKS);
  if (channels < 1 || channels > MAX_CHANNELS)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: --channels %u is outside [1, %u]", algorithm,
                     channels, MAX_CHANNELS);
  int alg = -1;
  for (int i = 0; jct_synth_algorithms[i]; i++)
    if (strcmp(algorithm, jct_synth_algorithms[i]) == 0) alg = i;
  for (size_t i = 0; alg < 0 && i < sizeof aliases / sizeof *aliases; i++)
    if (strcmp(algorithm, aliases[i].alias) == 0) alg = aliases[i].alg;
  if (alg < 0) {
    char names[160] = "";
    for (int i = 0; jct_synth_algorithms[i]; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               jct_synth_algorithms[i]);
    return jct__errf(err, errlen, JCT_EINVAL, "unknown algorithm '%.60s' (%s)", algorithm, names);
  }
  algorithm = jct_synth_algorithms[alg];
  if (alg == HALVING_DOUBLING && (nranks & (nranks - 1)))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "halving-doubling needs a power-of-two number of ranks, not %u", nranks);
  /* The ops it will make, before making them: ring 2(N-1) per rank, tree
   * 2(N-1) per tree and two trees, halving-doubling 2 log2 N per rank,
   * all-to-all, all-gather and reduce-scatter N-1 per rank; each per
   * channel; broadcast N-1 per chunk of each channel. */
  uint64_t n = nranks, lg = 0, nops = 0;
  while ((1ull << lg) < n)
    lg++;
  switch (alg) {
  case RING:
    nops = channels * 2 * (n - 1) * n;
    break;
  case TREE:
    nops = channels * 4 * (n - 1);
    break;
  case HALVING_DOUBLING:
    nops = channels * 2 * lg * n;
    break;
  case INCAST:
    nops = channels * (n - 1);
    break;
  case BROADCAST:
    for (uint32_t ch = 0; ch < channels; ch++)
      nops += (n - 1) * broadcast_chunks(part(bytes_total, channels, ch));
    break;
  default:
    nops = channels * n * (n - 1);
    break;
  }
  if (nops > JCT_SCHEDULE_MAX_OPS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s of %u ranks x %u channels is %llu ops: a schedule has at most %u "
                     "(about 1 KB each while it is written as JSON)",
                     algorithm, nranks, channels, (unsigned long long)nops, JCT_SCHEDULE_MAX_OPS);
  /* One byte at least in every message. */
  uint64_t smallest =
      alg == BROADCAST || alg == INCAST ? channels : (uint64_t)nranks * channels * (alg == TREE ? 2 : 1);
  if (bytes_total < smallest)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s: %llu bytes is less than one byte per chunk (%llu chunks)", algorithm,
                     (unsigned long long)bytes_total, (unsigned long long)smallest);

  builder_t b = {0};
  b.s = calloc(1, sizeof *b.s);
  if (!b.s) return JCT_ENOMEM;
  snprintf(b.s->algorithm, sizeof b.s->algorithm, "%s", algorithm);
  b.s->nranks = nranks;
  b.s->bytes = bytes_total;
  switch (alg) {
  case RING:
    synth_ring(&b, nranks, bytes_total, channels);
    break;
  case TREE:
    synth_tree(&b, nranks, bytes_total, channels);
    break;
  case HALVING_DOUBLING:
    synth_halving_doubling(&b, nranks, bytes_total, channels);
    break;
  case ALL_TO_ALL:
    synth_all_to_all(&b, nranks, bytes_total, channels);
    break;
  case ALL_GATHER:
    synth_half_ring(&b, nranks, bytes_total, channels, 0);
    break;
  case REDUCE_SCATTER:
    synth_half_ring(&b, nranks, bytes_total, channels, nranks - 1);
    break;
  case INCAST:
    synth_incast(&b, nranks, bytes_total, channels);
    break;
  default:
    synth_broadcast(&b, nranks, bytes_total, channels);
    break;
  }
  free(b.keys);
  free(b.vals);
  if (b.oom) {
    jct_schedule_free(b.s);
    return jct__errf(err, errlen, JCT_ENOMEM, "%s: out of memory for %u ranks", algorithm, nranks);
  }
  /* A generator bug shows here rather than as a hung run. */
  int rc = jct_schedule_validate(b.s, err, errlen);
  if (rc) {
    jct_schedule_free(b.s);
    return rc;
  }
  *out = b.s;
  return 0;
}
