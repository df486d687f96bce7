/* A size sweep's result (internal): `jctlab run --synth ALGO` over a list
 * of sizes, one row per size, printed as nccl-tests prints its table and
 * written as one JSON document, schema "jctlab_sweep": 1 (README, "Size
 * sweeps"). plan/size_sweep.c runs the sizes and fills the rows; this
 * file only formats them.
 *
 * Per size: the size S in bytes and nccl-tests' count (4-byte elements, as
 * its default type float; per rank for all-gather, reduce-scatter and
 * all-to-all, whose count nccl-tests gives per rank); the baseline's
 * median JCT, algbw = S / median and busbw = algbw x the collective's
 * factor (jct_schedule_busbw_factor); with injectors the faulted side's,
 * and degradation = faulted median / baseline median with its 95%
 * bootstrap interval (replay.h).
 */
#ifndef JCT_SWEEP_REPORT_H
#define JCT_SWEEP_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "jctlab/run.h"

/* One side (baseline or faulted) of one size. */
typedef struct {
  uint32_t reps;
  uint64_t *jct_ns; /* reps of them, in the order they ran; owned (NULL when invalid) */
  uint64_t median_ns, min_ns, max_ns;
  double algbw_gbps, busbw_gbps;   /* GB/s (1e9 bytes per second) */
  jct_transport_stats_t transport; /* summed over the side's repetitions */
} jct__sweep_side_t;

typedef struct {
  uint64_t bytes; /* S, nccl-tests' size */
  uint64_t count; /* nccl-tests' count: elements of 4 bytes */
  bool valid;
  char invalid_why[256];
  bool faulted; /* injectors: a replay; fault, degradation and dropped are set */
  jct__sweep_side_t base, fault;
  double degradation, ci95_low, ci95_high; /* NaN: no interval (fewer than 5 reps a side) */
  uint64_t dropped;                        /* frames the injectors dropped, faulted reps */
  double model_ns;                         /* the α-β model (run.h) */
  json_t *loss_model; /* the go-back-N model's prediction (result.h, jct__model_json); owned */
  uint64_t lateness_p50_ns, lateness_p99_ns, lateness_max_ns;
  double packet_time_ns;
  bool loop_bound; /* p99 lateness over one packet's time: the loop set the pace */
  uint32_t qps_used; /* QPs that carried messages (faulted side with injectors), measured */
} jct__sweep_row_t;

/* What every row shares. */
typedef struct {
  const char *algorithm;
  uint32_t ranks, channels;
  const jct_run_opts_t *o; /* fabric, reps, warmup, seed, injectors */
  uint32_t qps_per_conn;   /* QPs per connection (0, 1: one) */
} jct__sweep_info_t;

/* nccl-tests' count for S bytes of algorithm over n ranks. */
uint64_t jct__sweep_count(const char *algorithm, uint32_t n, uint64_t bytes);

/* The table's heading lines (each starting with '#', as nccl-tests'), one
 * row, and the closing lines (average busbw over the valid rows). */
void jct__sweep_print_header(FILE *f, const jct__sweep_info_t *info);
void jct__sweep_print_row(FILE *f, const jct__sweep_info_t *info, const jct__sweep_row_t *row);
void jct__sweep_print_footer(FILE *f, const jct__sweep_info_t *info, const jct__sweep_row_t *rows,
                             uint32_t n);

/* The document: {"jctlab_sweep": 1, "config", "sizes": [one per row],
 * "avg_busbw_gbps", "interrupted"}; every key always present, null where
 * it has no value. NULL: out of memory. */
json_t *jct__sweep_json(const jct__sweep_info_t *info, const jct__sweep_row_t *rows, uint32_t n);

void jct__sweep_row_free(jct__sweep_row_t *row);

#endif
