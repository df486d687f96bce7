/* An RDMA device's own counters, as the verbs transport reads them after
 * each repetition (harness/transport/dev_counters.c).
 *
 * Source: the files of /sys/class/infiniband/DEV/ports/PORT/hw_counters/
 * (and counters/ for a counter a scenario names; rdma_sysfs.h), one
 * counter each, as Linux rxe keeps them (drivers/infiniband/sw/rxe/
 * rxe_hw_counters.c: rcvd_seq_err counts NAK-sequence-errors received,
 * out_of_seq_request out-of-order requests seen, completer_retry_err the
 * requester's go-back-N restarts, ...); mlx5 keeps its own names there.
 */
#ifndef JCTLAB_DEV_COUNTERS_H
#define JCTLAB_DEV_COUNTERS_H

#include <stdint.h>

#define JCT_DEV_COUNTERS_MAX 128 /* mlx5: ~60 hw_counters and ~20 port counters */

/* Counters by name (at most JCT_DEV_COUNTERS_MAX; names up to 39 bytes),
 * each with how much it moved, summed over ranks where a caller sums. */
typedef struct {
  uint32_t n;
  struct {
    char name[40];
    uint64_t value;
  } c[JCT_DEV_COUNTERS_MAX];
} jct_dev_counters_t;

/* The value of counter name (0 when absent). */
uint64_t jct_dev_counters_get(const jct_dev_counters_t *h, const char *name);
/* Add value to counter name (added when absent and there is room). */
void jct_dev_counters_add(jct_dev_counters_t *h, const char *name, uint64_t value);

/* Add n ranks' counters x[n] into (*sum)[n], which is allocated (zeroed)
 * when NULL; x NULL: nothing to add. Returns 0 or JCT_ENOMEM. */
int jct_dev_counters_sum(jct_dev_counters_t **sum, const jct_dev_counters_t *x, uint32_t n);

#endif
