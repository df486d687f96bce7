/* The senders' transmit stalls on the lab's VMs (internal to orch/): a
 * stall injector (injectors/stall.c) asks, through the chain
 * (jct__chain_set_stall_fn), that rank R's host send nothing for a time;
 * here its VM is stopped at once and a timer on the session's clock has it
 * go on when the time is up (lab.h, jct__lab_freeze: qemu's stop/cont).
 * A stall asked while the VM is stopped already extends it to the later
 * end. The time is emulated (the clock's): dilated F times it is F times
 * longer in wall time, as rxe's timer in the VM is (run.h).
 *
 * Never leave a VM stopped: jct__vm_stalls_thaw_all (a repetition's end,
 * whatever ended it) and jct__vm_stalls_free have every stopped VM go on.
 *
 * Each stall of the repetition is kept, on the clock's time, from when the
 * VM stopped to when it went on: a stopped VM's clock lost that time
 * (lab.h), so the agents' op times are placed across it
 * (jct__agents_frozen). */
#ifndef JCT_ORCH_VM_STALLS_H
#define JCT_ORCH_VM_STALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/fabric/chain.h"
#include "jctlab/clock.h"
#include "jctlab/run.h"

/* Stop (frozen true) or continue rank's VM: 0 or a negative JCT_E*. */
typedef int (*jct__vm_freeze_fn)(void *arg, uint32_t rank, bool frozen);

typedef struct jct__vm_stalls jct__vm_stalls_t;

/* For nranks VMs, timed on clock, stopped by freeze(arg, ...). Errors:
 * JCT_ENOMEM. */
int jct__vm_stalls_new(jct__vm_stalls_t **out, jct_clock_t *clock, uint32_t nranks,
                       jct__vm_freeze_fn freeze, void *arg);

/* Stop rank's VM for stall_ns from now_ns (a jct__chain_stall_fn: arg is
 * the jct__vm_stalls_t). Errors: JCT_EINVAL (no such rank), the freeze
 * fn's. */
int jct__vm_stalls_stall(void *arg, uint32_t rank, uint64_t stall_ns, uint64_t now_ns);

/* A repetition starts: the stalls kept so far are forgotten. */
void jct__vm_stalls_begin(jct__vm_stalls_t *x);

/* Every stopped VM goes on now (its stall kept as ending at now_ns). */
void jct__vm_stalls_thaw_all(jct__vm_stalls_t *x, uint64_t now_ns);

/* The repetition's stalls of rank, in order: *n of them, at[k] when the
 * VM stopped and len[k] for how long (clock ns); NULL/0 when none. */
void jct__vm_stalls_of(const jct__vm_stalls_t *x, uint32_t rank, const uint64_t **at,
                       const uint64_t **len, uint32_t *n);

/* The local ACK timeout exponent for the peers' clear-to-sends
 * (verbs.h, cts_timeout) where the lab holds stalls of up to stall_max_ns
 * (emulated) at dilation tdf: the first from timeout (the QPs' own, in the
 * VMs' time, dilated already) whose timer, 4.096 us * 2^exponent, outlasts
 * twice the longest stall in the VMs' time (x tdf), at most 31 (IBA vol. 1
 * 9.7.6.1.3). A stopped VM cannot ACK its peer's clear-to-send; without
 * this the peer's timer ran out on the held 92 ms stall of the shipped
 * capture at x4 (a timeout the capture, perftest with no such flow, never
 * had). 0 (the QPs' own) when no stall is held or timeout is 0 (no timer). */
uint8_t jct__vm_stalls_cts_timeout(uint8_t timeout, uint64_t stall_max_ns, double tdf);

/* The same for run o at dilation d with its injector chain c: in the lab
 * (jct_run_in_lab), past the chain's longest stall, from the QPs' timer
 * as rxe gets it (d's dilated exponent, else o's); 0 elsewhere. */
uint8_t jct__vm_stalls_run_cts_timeout(const jct_run_opts_t *o, const jct_run_dilation_t *d,
                                       const jct__chain_t *c);

/* Thaws them all first. NULL is fine. */
void jct__vm_stalls_free(jct__vm_stalls_t *x);

#endif
