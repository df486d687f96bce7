/* The schedule: what a replay executes, independent of where it came from
 * (a capture, or generated for N ranks and S bytes).
 *
 * Ranks 0..nranks-1; connections, each one reliable-connection QP pair from
 * a source rank to a destination rank on a channel; and send operations
 * (conn, bytes, deps[], gap_ns). An op is sent by its connection's source
 * rank. It may start once every op in deps has completed and gap_ns has
 * passed since the last of them did (the compute or reduction time between
 * receiving and sending). A dep is of one of two kinds, told apart by its
 * connection: a message to this op's rank (received: complete when the
 * rank has received all of it), or a message from this op's rank (program
 * order: one of its own earlier sends, complete when its sender's work
 * completion says so, i.e. the receiver acknowledged all of it). Sends on
 * one connection are delivered in order.
 *
 * JSON (jansson), shape version 1; README "Schedules" documents it:
 *   {"jctlab_schedule": 1, "algorithm": "ring", "ranks": 8, "bytes": 8388608,
 *    "connections": [{"src": 0, "dst": 1, "channel": 0}, ...],
 *    "ops": [{"conn": 0, "bytes": 1048576, "deps": [3], "gap_ns": 0,
 *             "step": 0}, ...]}
 * Op and connection ids are their indices in these arrays. "step" is
 * informational (the algorithm's step; -1 when unknown); so is "dep_kinds",
 * written for an op with a program-order dep: deps' kinds, in deps' order,
 * "received" or "order" (loading ignores it: the kind follows from the
 * dep's connection). A schedule inferred from a capture also carries
 * "profile": the captured system's figures (profile.h), optional, editable,
 * null or left out when unknown.
 */
#ifndef JCTLAB_SCHEDULE_H
#define JCTLAB_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "jctlab/profile.h"

typedef struct {
  uint32_t src, dst; /* ranks */
  uint32_t channel;
} jct_conn_t;

typedef struct {
  uint32_t conn;
  uint64_t bytes; /* message size, >= 1 */
  uint32_t *deps; /* op ids, ndeps of them */
  uint32_t ndeps;
  uint64_t gap_ns;
  int32_t step;
} jct_op_t;

/* The most ops and connections a schedule may have, refused before
 * anything is built: a ring of 1,448 ranks (2(N-1)N ops), an all-to-all of
 * 2,048. Written as JSON a schedule takes about 1 KB of memory per op (a
 * ring of 1,024 ranks: 2.1 M ops, 2 GB, 16 s here). */
#define JCT_SCHEDULE_MAX_OPS (1u << 22)
#define JCT_SCHEDULE_MAX_CONNS (1u << 22)

typedef struct {
  char algorithm[32]; /* "ring", "tree", ..., or "" */
  uint32_t nranks;
  uint64_t bytes; /* the collective's size S, 0 when unknown */
  jct_conn_t *conns;
  uint32_t nconns;
  jct_op_t *ops;
  uint32_t nops;
  jct_profile_t *profile; /* the captured system's, or NULL; freed with the schedule */
} jct_schedule_t;

/* Check a schedule: at least one rank and one op; every connection joins
 * two different existing ranks; every op names an existing connection and
 * has bytes > 0; every dep names an existing op other than itself whose
 * message goes to or comes from this op's sender; and the deps have no
 * cycle. Returns 0 or JCT_EINVAL with err naming the op or connection
 * ("op 12: dep 40 is a message from rank 2 to rank 3, neither to nor from
 * rank 5"). */
int jct_schedule_validate(const jct_schedule_t *s, char *err, size_t errlen);

/* A dep's kind (see above). */
typedef enum {
  JCT_DEP_RECEIVED = 0, /* a message to the op's rank */
  JCT_DEP_ORDER,        /* one of the op's rank's own earlier sends (program order) */
} jct_dep_kind_t;

/* The kind of op's dep on op dep, in a valid schedule (jct_schedule_validate). */
jct_dep_kind_t jct_schedule_dep_kind(const jct_schedule_t *s, uint32_t op, uint32_t dep);

/* Its name, as the JSON's "dep_kinds": "received", "order". */
const char *jct_dep_kind_name(jct_dep_kind_t k);

/* Load from a JSON file (path, or "-" for standard input) / from a string;
 * the result is validated. Errors: JCT_EIO (cannot read), JCT_EINVAL (not
 * JSON, wrong shape, or invalid as above; err says where), JCT_ENOMEM. */
int jct_schedule_load(jct_schedule_t **out, const char *path, char *err, size_t errlen);
int jct_schedule_loads(jct_schedule_t **out, const char *json, size_t len, char *err,
                       size_t errlen);

/* Save as JSON (indented). Errors: JCT_EIO. */
int jct_schedule_save(const jct_schedule_t *s, const char *path, char *err, size_t errlen);

/* Generated collectives (synth.c), for nranks ranks and bytes_total bytes:
 *   "ring": NCCL's ring AllReduce: reduce-scatter then all-gather over the
 *      ring r -> r+1, 2(N-1) steps, chunks of S/N per step (S/(N*C) per
 *      channel with C channels, each channel its own ring of QPs);
 *   "tree": double binary tree (NCCL): two trees each carrying half the
 *      data, reduce to the root then broadcast back; the second tree is the
 *      first mirrored (rank r -> N-1-r), so most leaves of one are inner
 *      nodes of the other;
 *   "halving-doubling": Rabenseifner's reduce-scatter by recursive halving
 *      then all-gather by recursive doubling (N a power of two);
 *   "all-to-all": every rank sends S/N to every other rank, no deps;
 *   "all-gather": NCCL's ring all-gather of S bytes in all (S/N from each
 *      rank): N-1 steps, at step s rank r sends chunk (r - s) mod N of S/N
 *      to r+1, after receiving step s-1 from r-1;
 *   "reduce-scatter": NCCL's ring reduce-scatter of S bytes per rank, each
 *      ending with S/N: the same ring, chunk (r - s - 1) mod N at step s;
 *   "broadcast": NCCL's ring broadcast from rank 0 down 0 -> 1 -> ... ->
 *      N-1, pipelined in chunks of 512 KiB per channel (NCCL's Simple
 *      protocol: 4 MiB buffers in 8 steps, one step a chunk); rank h
 *      forwards chunk j after receiving it; step = j + h;
 *   "incast": ranks 1..N-1 each send S bytes (split over the channels) to
 *      rank 0 at once, no deps: N-1 senders, one receiver.
 * nccl-tests' spellings "allgather", "reducescatter" and "alltoall" are
 * taken too; the schedule records the names above.
 * Errors: JCT_EINVAL (unknown algorithm, nranks < 2, bytes too small for
 * one byte per chunk, N not a power of two for halving-doubling, more ops
 * than JCT_SCHEDULE_MAX_OPS; err says which), JCT_ENOMEM. */
int jct_schedule_synth(jct_schedule_t **out, const char *algorithm, uint32_t nranks,
                       uint64_t bytes_total, uint32_t channels, char *err, size_t errlen);

/* The algorithm names jct_schedule_synth() knows, NULL-terminated. */
extern const char *const jct_synth_algorithms[];

/* Multiply every op's size (bytes) and the collective's size S (bytes;
 * left at 0 when unknown) by factor, each rounded to the nearest byte and
 * never below 1 byte; the shape (ranks, connections, deps, gap_ns) is left
 * alone. A what-if for a slower fabric (DESIGN.md decision 6): scaled runs
 * say so. Factor 1 changes nothing. Errors: JCT_EINVAL (factor not a finite
 * number > 0, or a size that would no longer fit in 64 bits; err says
 * which), and then s is unchanged. */
int jct_schedule_scale(jct_schedule_t *s, double factor, char *err, size_t errlen);

/* Bus bandwidth factor for nccl-tests' busbw = algbw * factor, by the
 * schedule's algorithm: AllReduce 2(N-1)/N (ring, tree, halving-doubling,
 * and any other name, a captured schedule's included); all-to-all,
 * all-gather and reduce-scatter (N-1)/N; broadcast 1; incast N-1 (not
 * nccl-tests': busbw is then the receiver's link load, (N-1)·S / JCT). */
double jct_schedule_busbw_factor(const jct_schedule_t *s);

/* Several QPs per connection, as NCCL_IB_QPS_PER_CONNECTION: a schedule in
 * which connection c of s is n connections c*n .. c*n+n-1 (same ranks,
 * each its own QP pair, so its own UDP source port on the wire: ECMP
 * entropy), and op i is n ops i*n + q of bytes/n each (the first bytes % n
 * one byte more), each depending on every part of each of op i's deps: a
 * message is whole once all its parts are. n = 1 copies. The profile is
 * not carried. Errors: JCT_EINVAL (n outside 1..JCT_SCHEDULE_MAX_QPS_PER_CONN,
 * a message under n bytes, too many ops), JCT_ENOMEM. */
#define JCT_SCHEDULE_MAX_QPS_PER_CONN 64
int jct_schedule_split_qps(jct_schedule_t **out, const jct_schedule_t *s, uint32_t n, char *err,
                           size_t errlen);

void jct_schedule_free(jct_schedule_t *s);

#endif
