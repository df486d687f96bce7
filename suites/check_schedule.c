/* Schedules: generated collectives, validation, JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "craft.h"
#include "jctlab/error.h"
#include "jctlab/run.h"
#include "jctlab/schedule.h"
#include "suites.h"
#include "testkit.h"

static uint64_t sent_by(const jct_schedule_t *s, uint32_t rank) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->conns[s->ops[i].conn].src == rank) b += s->ops[i].bytes;
  return b;
}

static uint64_t received_by(const jct_schedule_t *s, uint32_t rank) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->conns[s->ops[i].conn].dst == rank) b += s->ops[i].bytes;
  return b;
}

/* Bytes of part i of total split n ways, the remainder to the first parts
 * (as synth.c splits, recomputed here). */
static uint64_t share(uint64_t total, uint64_t n, uint64_t i) {
  return total / n + (i < total % n ? 1 : 0);
}

/* Which ranks' data each op carries: its sender's, and everything its deps
 * carried. Every rank must end up having heard from each rank in from
 * (for an AllReduce, all of them; for a broadcast, the root). */
static void assert_hears(const jct_schedule_t *s, uint64_t from) {
  ck_assert_uint_le(s->nranks, 64);
  uint64_t *carries = calloc(s->nops, sizeof *carries);
  uint64_t *heard = calloc(s->nranks, sizeof *heard);
  /* ops are emitted in dependency order by the generators: deps come first */
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    carries[i] = 1ull << s->conns[o->conn].src;
    for (uint32_t d = 0; d < o->ndeps; d++) {
      ck_assert_uint_lt(o->deps[d], i);
      carries[i] |= carries[o->deps[d]];
    }
    heard[s->conns[o->conn].dst] |= carries[i];
  }
  for (uint32_t r = 0; r < s->nranks; r++)
    ck_assert_msg(((heard[r] | 1ull << r) & from) == from, "%s: rank %u misses some ranks' data",
                  s->algorithm, r);
  free(carries);
  free(heard);
}

static void assert_everyone_hears_everyone(const jct_schedule_t *s) {
  assert_hears(s, s->nranks == 64 ? ~0ull : (1ull << s->nranks) - 1);
}

START_TEST(ring_shape) {
  char err[256];
  jct_schedule_t *s;
  const uint32_t n = 8;
  const uint64_t bytes = 8u << 20;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", n, bytes, 1, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, n * 2 * (n - 1));
  ck_assert_uint_eq(s->nconns, n);
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    const jct_conn_t *c = &s->conns[o->conn];
    ck_assert_uint_eq(c->dst, (c->src + 1) % n);
    ck_assert_uint_eq(o->bytes, bytes / n);
    ck_assert_uint_eq(o->ndeps, o->step == 0 ? 0 : 1);
    if (o->ndeps) { /* from the previous step of the previous rank */
      const jct_op_t *d = &s->ops[o->deps[0]];
      ck_assert_int_eq(d->step, o->step - 1);
      ck_assert_uint_eq(s->conns[d->conn].dst, c->src);
    }
  }
  for (uint32_t r = 0; r < n; r++)
    ck_assert_uint_eq(sent_by(s, r), 2 * (n - 1) * bytes / n);
  ck_assert_double_eq_tol(jct_schedule_busbw_factor(s), 2.0 * 7 / 8, 1e-12);
  assert_everyone_hears_everyone(s);
  jct_schedule_free(s);
}
END_TEST

/* Every generator, odd sizes and channel counts: valid, exact byte totals,
 * and an AllReduce that reaches everyone. */
START_TEST(all_algorithms) {
  static const uint32_t ranks[] = {2, 3, 4, 7, 8, 16};
  char err[256];
  for (int a = 0; jct_synth_algorithms[a]; a++)
    for (size_t k = 0; k < sizeof ranks / sizeof *ranks; k++)
      for (uint32_t ch = 1; ch <= 3; ch++) {
        const char *alg = jct_synth_algorithms[a];
        uint32_t n = ranks[k];
        jct_schedule_t *s;
        int rc = jct_schedule_synth(&s, alg, n, 1000003, ch, err, sizeof err);
        if (strcmp(alg, "halving-doubling") == 0 && (n & (n - 1))) {
          ck_assert_int_eq(rc, JCT_EINVAL);
          continue;
        }
        ck_assert_msg(rc == 0, "%s n=%u: %s", alg, n, err);
        ck_assert_int_eq(jct_schedule_validate(s, err, sizeof err), 0);
        if (strcmp(alg, "broadcast") == 0) {
          assert_hears(s, 1); /* the root */
          for (uint32_t r = 1; r < n; r++)
            ck_assert_uint_eq(received_by(s, r), 1000003);
        } else if (strcmp(alg, "incast") == 0) {
          ck_assert_uint_eq(received_by(s, 0), (uint64_t)(n - 1) * 1000003);
          for (uint32_t r = 1; r < n; r++)
            ck_assert_uint_eq(sent_by(s, r), 1000003);
          ck_assert_uint_eq(sent_by(s, 0), 0);
        } else if (strcmp(alg, "all-to-all") == 0) {
          uint64_t total = 0;
          for (uint32_t r = 0; r < n; r++)
            total += sent_by(s, r);
          ck_assert_uint_eq(total, (uint64_t)n * 1000003 - 1000003 * 1); /* all but the own share */
        } else {
          assert_everyone_hears_everyone(s);
        }
        jct_schedule_free(s);
      }
}
END_TEST

/* Incast: N-1 senders to rank 0, every op at step 0 with no deps (all at
 * once), each sender's S split over the channels; busbw is the receiver's
 * link load, (N-1)·S / JCT; the model is one latency plus (N-1)·S at the
 * link's goodput. */
START_TEST(incast_shape) {
  char err[256];
  jct_schedule_t *s;
  const uint32_t n = 8, ch = 2;
  ck_assert_int_eq(jct_schedule_synth(&s, "incast", n, 1000001, ch, err, sizeof err), 0);
  ck_assert_str_eq(s->algorithm, "incast");
  ck_assert_uint_eq(s->nops, ch * (n - 1));
  ck_assert_uint_eq(s->nconns, ch * (n - 1));
  for (uint32_t i = 0; i < s->nops; i++) {
    ck_assert_uint_eq(s->ops[i].ndeps, 0);
    ck_assert_int_eq(s->ops[i].step, 0);
    ck_assert_uint_eq(s->conns[s->ops[i].conn].dst, 0);
    ck_assert(s->ops[i].bytes == 500000 || s->ops[i].bytes == 500001);
  }
  ck_assert_double_eq_tol(jct_schedule_busbw_factor(s), 7.0, 1e-12);
  jct_run_opts_t o = {.schedule = s, .rate_bps = 100000000, .prop_delay_ns = 1000};
  jct_run_result_t r;
  jct_run_model(&o, &r);
  double b = 100e6 * 4096 / (4096 + 82) / 8e9; /* bytes per ns, full packets */
  ck_assert_double_eq_tol(r.model_ns, r.alpha_ns + 7 * 1000001 / b, 1.0);
  jct_schedule_free(s);
  ck_assert_int_eq(jct_schedule_synth(&s, "incast", 8, 1, 2, err, sizeof err), JCT_EINVAL);
}
END_TEST

/* The ring all-gather and reduce-scatter: N-1 steps of one chunk per rank
 * and channel, each after the previous step of the previous rank (the
 * chunk it forwards), the chunks as NCCL's rings send them. */
static void half_ring_shape(const char *alg, bool gather) {
  char err[256];
  jct_schedule_t *s;
  const uint32_t n = 5, ch = 2;
  const uint64_t bytes = 1000003; /* odd: the chunks differ by a byte */
  ck_assert_int_eq(jct_schedule_synth(&s, alg, n, bytes, ch, err, sizeof err), 0);
  ck_assert_str_eq(s->algorithm, alg);
  ck_assert_uint_eq(s->nops, ch * n * (n - 1));
  ck_assert_uint_eq(s->nconns, ch * n);
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    const jct_conn_t *c = &s->conns[o->conn];
    ck_assert_uint_eq(c->dst, (c->src + 1) % n);
    ck_assert_int_ge(o->step, 0);
    ck_assert_int_lt(o->step, (int32_t)(n - 1));
    uint32_t step = (uint32_t)o->step;
    uint32_t chunk = gather ? (c->src + n - step) % n : (c->src + 2 * n - step - 1) % n;
    ck_assert_uint_eq(o->bytes, share(share(bytes, ch, c->channel), n, chunk));
    ck_assert_uint_eq(o->ndeps, step == 0 ? 0 : 1);
    if (o->ndeps) { /* the chunk the previous rank sent it one step before */
      const jct_op_t *d = &s->ops[o->deps[0]];
      ck_assert_int_eq(d->step, o->step - 1);
      ck_assert_uint_eq(s->conns[d->conn].dst, c->src);
      ck_assert_uint_eq(s->conns[d->conn].channel, c->channel);
      ck_assert_uint_eq(d->bytes, o->bytes);
    }
  }
  /* All-gather: each rank sends every chunk but its successor's, and
   * receives every chunk but its own. Reduce-scatter: each rank sends
   * every chunk but its own, and receives every chunk but its
   * predecessor's (the last it receives is its own, reduced). */
  for (uint32_t r = 0; r < n; r++) {
    uint64_t not_sent = 0, not_received = 0;
    for (uint32_t k = 0; k < ch; k++) {
      uint64_t cb = share(bytes, ch, k);
      not_sent += share(cb, n, gather ? (r + 1) % n : r);
      not_received += share(cb, n, gather ? r : (r + n - 1) % n);
    }
    ck_assert_uint_eq(sent_by(s, r), bytes - not_sent);
    ck_assert_uint_eq(received_by(s, r), bytes - not_received);
  }
  assert_everyone_hears_everyone(s);
  ck_assert_double_eq_tol(jct_schedule_busbw_factor(s), 4.0 / 5, 1e-12);
  jct_schedule_free(s);
}

START_TEST(all_gather_shape) {
  half_ring_shape("all-gather", true);
  /* nccl-tests' spelling, recorded under jctlab's name. */
  char err[256];
  jct_schedule_t *s;
  ck_assert_int_eq(jct_schedule_synth(&s, "allgather", 3, 3000, 1, err, sizeof err), 0);
  ck_assert_str_eq(s->algorithm, "all-gather");
  jct_schedule_free(s);
}
END_TEST

START_TEST(reduce_scatter_shape) {
  half_ring_shape("reduce-scatter", false);
  /* Rank r's last receive (step N-2) is chunk r of each channel. */
  char err[256];
  jct_schedule_t *s;
  ck_assert_int_eq(jct_schedule_synth(&s, "reducescatter", 4, 4000 + 6, 1, err, sizeof err), 0);
  ck_assert_str_eq(s->algorithm, "reduce-scatter");
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].step == 2) {
      uint32_t dst = s->conns[s->ops[i].conn].dst;
      ck_assert_uint_eq(s->ops[i].bytes, share(4006, 4, dst));
    }
  jct_schedule_free(s);
}
END_TEST

/* The ring broadcast: chunks of 512 KiB per channel down 0 -> 1 -> ... ->
 * N-1; each hop forwards a chunk after receiving it; every rank but the
 * root receives all of it, every rank but the last sends all of it. */
START_TEST(broadcast_shape) {
  char err[256];
  jct_schedule_t *s;
  const uint32_t n = 4, ch = 2;
  const uint64_t bytes = (3u << 20) + 7; /* 1.5 MiB and some a channel: 4 chunks */
  const uint64_t chunks = 4;
  ck_assert_int_eq(jct_schedule_synth(&s, "broadcast", n, bytes, ch, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, ch * chunks * (n - 1));
  ck_assert_uint_eq(s->nconns, ch * (n - 1));
  int32_t last_step[64] = {0}; /* per connection: chunk order kept */
  for (uint32_t i = 0; i < s->nconns; i++)
    last_step[i] = -1;
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    const jct_conn_t *c = &s->conns[o->conn];
    ck_assert_uint_eq(c->dst, c->src + 1);
    ck_assert_uint_le(o->bytes, 512u << 10);
    ck_assert_int_gt(o->step, last_step[o->conn]);
    last_step[o->conn] = o->step;
    ck_assert_uint_eq(o->ndeps, c->src == 0 ? 0 : 1);
    if (o->ndeps) { /* the same chunk, one hop up the ring */
      const jct_op_t *d = &s->ops[o->deps[0]];
      ck_assert_uint_eq(s->conns[d->conn].dst, c->src);
      ck_assert_uint_eq(s->conns[d->conn].channel, c->channel);
      ck_assert_uint_eq(d->bytes, o->bytes);
      ck_assert_int_eq(d->step, o->step - 1);
    }
  }
  for (uint32_t r = 0; r < n; r++) {
    ck_assert_uint_eq(sent_by(s, r), r + 1 < n ? bytes : 0);
    ck_assert_uint_eq(received_by(s, r), r ? bytes : 0);
  }
  assert_hears(s, 1);
  ck_assert_double_eq_tol(jct_schedule_busbw_factor(s), 1.0, 1e-12);
  jct_schedule_free(s);
  /* Up to one chunk a channel: one message a hop, no pipeline. */
  ck_assert_int_eq(jct_schedule_synth(&s, "broadcast", 3, 4096, 1, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, 2);
  ck_assert_uint_eq(s->ops[1].deps[0], 0);
  jct_schedule_free(s);
  /* The op limit counts the chunks: 1 TiB in 512 KiB chunks down 4 ranks. */
  ck_assert_int_eq(jct_schedule_synth(&s, "broadcast", 4, 1ull << 40, 1, err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "6291456 ops"), "%s", err);
  ck_assert_ptr_null(s);
}
END_TEST

START_TEST(synth_rejects) {
  char err[256];
  jct_schedule_t *s = (jct_schedule_t *)1;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 1, 100, 1, err, sizeof err), JCT_EINVAL);
  /* Too many ops, refused before any is made (a ring of 4096: 33.5 M). */
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 4096, 1ull << 30, 1, err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "33546240 ops") && strstr(err, "at most 4194304"), "%s", err);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 64, 1ull << 30, 2, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, 2u * 2 * 63 * 64); /* the count the limit is checked on */
  jct_schedule_free(s);
  ck_assert_int_eq(jct_schedule_synth(&s, "butterfly", 4, 100, 1, err, sizeof err), JCT_EINVAL);
  ck_assert(strstr(err, "butterfly") != NULL);
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 8, 7, 1, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 8, 1 << 20, 0, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct_schedule_synth(&s, "halving-doubling", 6, 1 << 20, 1, err, sizeof err),
                   JCT_EINVAL);
  ck_assert(strstr(err, "power-of-two") != NULL);
}
END_TEST

static int load(const char *json, char *err, size_t errlen) {
  jct_schedule_t *s = NULL;
  int rc = jct_schedule_loads(&s, json, strlen(json), err, errlen);
  jct_schedule_free(s);
  return rc;
}

#define TWO_CONNS "\"connections\":[{\"src\":0,\"dst\":1},{\"src\":1,\"dst\":0}]"

START_TEST(validation_names_the_op) {
  char err[256];
  ck_assert_int_eq(
      load("{\"jctlab_schedule\":1,\"ranks\":2," TWO_CONNS
           ",\"ops\":[{\"conn\":0,\"bytes\":5},{\"conn\":1,\"bytes\":5,\"deps\":[0]}]}",
           err, sizeof err),
      0);
  ck_assert_int_eq(load("{\"jctlab_schedule\":1,\"ranks\":2," TWO_CONNS
                        ",\"ops\":[{\"conn\":0,\"bytes\":5,\"deps\":[1]},{\"conn\":1,\"bytes\":5,"
                        "\"deps\":[0]}]}",
                        err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "cycle") && strstr(err, "op "), "%s", err);
  ck_assert_int_eq(
      load("{\"jctlab_schedule\":1,\"ranks\":0,\"connections\":[],\"ops\":[]}", err, sizeof err),
      JCT_EINVAL);
  ck_assert_msg(strstr(err, "zero ranks"), "%s", err);
  ck_assert_int_eq(
      load("{\"jctlab_schedule\":1,\"ranks\":2,\"connections\":[{\"src\":0,\"dst\":5}],"
           "\"ops\":[{\"conn\":0,\"bytes\":1}]}",
           err, sizeof err),
      JCT_EINVAL);
  ck_assert_msg(strstr(err, "connection 0: rank 5"), "%s", err);
  /* A dep on the rank's own earlier send is program order; one on a
   * message between two other ranks is nothing to it. */
  ck_assert_int_eq(
      load("{\"jctlab_schedule\":1,\"ranks\":2," TWO_CONNS
           ",\"ops\":[{\"conn\":0,\"bytes\":5},{\"conn\":0,\"bytes\":5,\"deps\":[0]}]}",
           err, sizeof err),
      0);
  ck_assert_int_eq(
      load("{\"jctlab_schedule\":1,\"ranks\":3,\"connections\":[{\"src\":0,\"dst\":1},"
           "{\"src\":1,\"dst\":2}],\"ops\":[{\"conn\":1,\"bytes\":5},{\"conn\":0,\"bytes\":5,"
           "\"deps\":[0]}]}",
           err, sizeof err),
      JCT_EINVAL);
  ck_assert_msg(
      strstr(err, "op 1: dep 0 is a message from rank 1 to rank 2, neither to nor from rank 0"),
      "%s", err);
  ck_assert_int_eq(load("{\"jctlab_schedule\":1,\"ranks\":2," TWO_CONNS
                        ",\"ops\":[{\"conn\":7,\"bytes\":5}]}",
                        err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "op 0: connection 7"), "%s", err);
  ck_assert_int_eq(load("{\"jctlab_schedule\":1,\"ranks\":2," TWO_CONNS
                        ",\"ops\":[{\"conn\":0,\"bytes\":-5}]}",
                        err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "op 0: \"bytes\""), "%s", err);
  ck_assert_int_eq(load("{\"ranks\":2}", err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "not a jctlab schedule"), "%s", err);
  ck_assert_int_eq(load("{\"jctlab_schedule\":1,", err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "line 1"), "%s", err);
}
END_TEST

/* jct_schedule_scale: sizes rounded to the nearest byte, never below 1,
 * S scaled with them (0 stays unknown), the shape untouched; a bad factor
 * or an overflow leaves the schedule as it was. */
START_TEST(scale_sizes) {
  jct_schedule_t *s;
  char err[256];
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 4, 1u << 20, 1, err, sizeof err), 0);
  uint32_t nops = s->nops;
  uint64_t b0 = s->ops[0].bytes, S = s->bytes;
  ck_assert_int_eq(jct_schedule_scale(s, 0.25, err, sizeof err), 0);
  ck_assert_uint_eq(s->nops, nops);
  ck_assert_uint_eq(s->ops[0].bytes, (b0 + 2) / 4);
  ck_assert_uint_eq(s->bytes, S / 4);
  ck_assert_int_eq(jct_schedule_scale(s, 1e-9, err, sizeof err), 0);
  for (uint32_t i = 0; i < s->nops; i++)
    ck_assert_uint_eq(s->ops[i].bytes, 1);
  uint64_t before = s->ops[0].bytes;
  ck_assert_int_eq(jct_schedule_scale(s, 0, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct_schedule_scale(s, -1, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct_schedule_scale(s, 1.0 / 0.0, err, sizeof err), JCT_EINVAL);
  s->ops[1].bytes = UINT64_MAX / 2;
  ck_assert_int_eq(jct_schedule_scale(s, 4, err, sizeof err), JCT_EINVAL);
  ck_assert_uint_eq(s->ops[0].bytes, before); /* untouched by the refused scale */
  ck_assert_uint_eq(s->ops[1].bytes, UINT64_MAX / 2);
  s->bytes = 0;
  s->ops[1].bytes = 1;
  ck_assert_int_eq(jct_schedule_scale(s, 3, err, sizeof err), 0);
  ck_assert_uint_eq(s->bytes, 0);
  ck_assert_uint_eq(s->ops[0].bytes, 3);
  jct_schedule_free(s);
}
END_TEST

START_TEST(json_round_trip) {
  char err[256], path[256];
  jct_schedule_t *a, *b;
  ck_assert_int_eq(jct_schedule_synth(&a, "tree", 7, 123457, 2, err, sizeof err), 0);
  craft_tmpname(path, sizeof path, ".json");
  ck_assert_int_eq(jct_schedule_save(a, path, err, sizeof err), 0);
  ck_assert_int_eq(jct_schedule_load(&b, path, err, sizeof err), 0);
  unlink(path);
  ck_assert_str_eq(a->algorithm, b->algorithm);
  ck_assert_uint_eq(a->nranks, b->nranks);
  ck_assert_uint_eq(a->bytes, b->bytes);
  ck_assert_uint_eq(a->nconns, b->nconns);
  ck_assert_uint_eq(a->nops, b->nops);
  ck_assert(memcmp(a->conns, b->conns, a->nconns * sizeof *a->conns) == 0);
  for (uint32_t i = 0; i < a->nops; i++) {
    ck_assert_uint_eq(a->ops[i].conn, b->ops[i].conn);
    ck_assert_uint_eq(a->ops[i].bytes, b->ops[i].bytes);
    ck_assert_uint_eq(a->ops[i].gap_ns, b->ops[i].gap_ns);
    ck_assert_int_eq(a->ops[i].step, b->ops[i].step);
    ck_assert_uint_eq(a->ops[i].ndeps, b->ops[i].ndeps);
    for (uint32_t d = 0; d < a->ops[i].ndeps; d++)
      ck_assert_uint_eq(a->ops[i].deps[d], b->ops[i].deps[d]);
  }
  jct_schedule_free(b);
  /* No dep_kinds without program order: the file reads as before. */
  craft_tmpname(path, sizeof path, ".json");
  ck_assert_int_eq(jct_schedule_save(a, path, err, sizeof err), 0);
  char *text = slurp(path, NULL);
  ck_assert_ptr_null(strstr(text, "dep_kinds"));
  free(text);
  jct_schedule_free(a);
  /* Op 2 of rank 0 waits for its own op 0 (program order) and for op 1,
   * received from rank 1: dep_kinds names both, and loading ignores it. */
  const char *json = "{\"jctlab_schedule\":1,\"ranks\":2," TWO_CONNS
                     ",\"ops\":[{\"conn\":0,\"bytes\":5},{\"conn\":1,\"bytes\":5},"
                     "{\"conn\":0,\"bytes\":5,\"deps\":[0,1],\"gap_ns\":7}]}";
  ck_assert_int_eq(jct_schedule_loads(&a, json, strlen(json), err, sizeof err), 0);
  ck_assert_int_eq(jct_schedule_dep_kind(a, 2, 0), JCT_DEP_ORDER);
  ck_assert_int_eq(jct_schedule_dep_kind(a, 2, 1), JCT_DEP_RECEIVED);
  ck_assert_int_eq(jct_schedule_save(a, path, err, sizeof err), 0);
  text = slurp(path, NULL);
  json_t *doc = parse_json(text, "schedule");
  ck_assert_ptr_null(json_object_get(jget(doc, "ops.0"), "dep_kinds"));
  ck_assert_ptr_null(json_object_get(jget(doc, "ops.1"), "dep_kinds"));
  ck_assert_str_eq(json_string_value(jget(doc, "ops.2.dep_kinds.0")), "order");
  ck_assert_str_eq(json_string_value(jget(doc, "ops.2.dep_kinds.1")), "received");
  json_decref(doc);
  free(text);
  ck_assert_int_eq(jct_schedule_load(&b, path, err, sizeof err), 0);
  ck_assert_uint_eq(b->ops[2].ndeps, 2);
  ck_assert_uint_eq(b->ops[2].deps[0], 0);
  ck_assert_uint_eq(b->ops[2].deps[1], 1);
  ck_assert_uint_eq(b->ops[2].gap_ns, 7);
  unlink(path);
  jct_schedule_free(a);
  jct_schedule_free(b);
  ck_assert_int_eq(jct_schedule_load(&b, "/nonexistent/x.json", err, sizeof err), JCT_EIO);
  ck_assert_msg(strstr(err, "/nonexistent/x.json"), "%s", err);
}
END_TEST

Suite *schedule_suite(void) {
  Suite *s = suite_create("schedule");
  TCase *core = tcase_create("core");
  tcase_add_test(core, ring_shape);
  tcase_add_test(core, all_algorithms);
  tcase_add_test(core, incast_shape);
  tcase_add_test(core, all_gather_shape);
  tcase_add_test(core, reduce_scatter_shape);
  tcase_add_test(core, broadcast_shape);
  tcase_add_test(core, json_round_trip);
  tcase_add_test(core, scale_sizes);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, synth_rejects);
  tcase_add_test(limits, validation_names_the_op);
  suite_add_tcase(s, limits);
  return s;
}
