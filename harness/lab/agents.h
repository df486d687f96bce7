/* The orchestrator's side of the rank agents (internal to the harness).
 *
 * A rank that runs outside jctlab's process, on the `verbs` transport, is
 * driven by an agent (`jctlab agent`, harness/agent.c): in a soft-RoCE VM
 * of the lab (harness/lab.h) today, on a host with an RDMA NIC later. Each
 * agent is reached over one byte stream (the VM's virtio-serial port; a TCP
 * connection would do as well) carrying JSON objects, one per line, whose
 * "msg" says what they are:
 *
 *   agent -> orchestrator  hello {rank, kernel, dev, netdev, addr}, once up
 *   setup {rank, schedule, timeout, cts_timeout, retry_cnt, tos, slots, rate_bps, mtu,
 *          device, port, gid_index, counters: the RDMA settings the user
 *          gave (run.h's jct_rdma_opts_t; each absent when not given),
 *          addrs: every rank's data address, from the hellos,
 *          host_drops: the injectors at=host:RANK of this rank (drop,
 *          delay, pause), as harness/lab/agent_host.h reads them (absent:
 *          none)}
 *                                                           -> listening
 *   connect                                                 -> connected {qps}
 *   run {rep, faulted: whether the host_drops act}
 *                    -> done {rep, ops: [[op, ready_ns, start_ns, done_ns]..]
 *                             (-1: not this rank's, or did not happen),
 *                             counters: {name: delta, ..},
 *                             host_drops: [{index, seen, dropped, held,
 *                                           generated, drops, and a
 *                                           storm's frames}..]}
 *                                                           or failed {why}
 *   reset: free what setup made (QPs, host programs, PFC
 *          responder), abandoning a repetition still running, and
 *          serve the next setup (a lab kept between runs, run.h's
 *          jct_run_lab_keep)                                  -> reset
 *   hello: say it again (the next run on a kept lab)           -> hello
 *   quit                                                    -> bye
 *   error {why} may come at any time: the agent cannot go on; with
 *   bad_input: true, a setting its device cannot honour (JCT_EINVAL).
 *
 * Each phase is asynchronous: start it, run the loop until
 * jct__agents_waiting() is false or jct__agents_failed() is set. Times in a
 * done message are the agent's, from when it received run; the
 * orchestrator places them on its own clock at the moment it sent run to
 * that agent, moved later by the least lag that puts every op's receipt
 * after its post at the other agent (a loaded TCG VM reads its run tens of
 * ms late; without the lag its times came out that much too early).
 */
#ifndef JCT_AGENTS_H
#define JCT_AGENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "jctlab/executor.h"
#include "jctlab/rdma.h"
#include "jctlab/dev_counters.h"
#include "jctlab/schedule.h"

#define JCT_AGENT_PORT 7471 /* rdma_cm port the agents listen on */

typedef struct jct_agents jct__agents_t;

/* Watch n control channels (fds, not owned, made nonblocking) in loop.
 * Each agent i is expected to be rank i. Errors: JCT_ENOMEM, JCT_EIO. */
int jct__agents_new(jct__agents_t **out, uv_loop_t *loop, uint32_t n, const int *fds);

/* The phases. hello: wait for every agent's hello. */
void jct__agents_expect_hello(jct__agents_t *a);
/* Ask every agent for its hello again (agents that were reset), and wait
 * for it as jct__agents_expect_hello. Errors: JCT_ENOMEM, JCT_EIO. */
int jct__agents_ask_hello(jct__agents_t *a);
/* An injector at=host:RANK, for its rank's agent to run. */
typedef struct {
  uint32_t rank, index; /* index: in the run's injector chain */
  const char *spec;
  uint64_t run_seed, seed; /* the agent makes it from spec, run_seed, index: seed */
} jct__agents_host_drop_t;

typedef struct {
  uint8_t timeout, retry_cnt, tos; /* the QPs' (ack timeout exponent, retries, IP TOS) */
  uint8_t cts_timeout;             /* the destinations' (verbs.h; 0: timeout) */
  uint32_t slots;                  /* CTS announced ahead per connection */
  uint64_t rate_bps;               /* the agent's NIC shapes its sending to this */
  uint32_t mtu;                    /* the agent's NIC's IP MTU */
  /* Time dilation (include/jctlab/clock.h): the agents keep real time, so
   * the schedule's compute gaps go to them multiplied by tdf and the op
   * times they report, and their counters of time (nic_paused_ns), come
   * back divided by it (1: none). */
  double tdf;
  /* The RDMA settings (NULL: none; tos above is already the traffic class). */
  const jct_rdma_opts_t *rdma;
  /* The injectors at=host:RANK, each to its rank's agent. */
  const jct__agents_host_drop_t *host_drops;
  uint32_t nhost_drops;
} jct__agents_setup_t;
int jct__agents_setup(jct__agents_t *a, const jct_schedule_t *s, const jct__agents_setup_t *o);
int jct__agents_connect(jct__agents_t *a);
/* faulted: the agents' host_drops act in this repetition. */
int jct__agents_run(jct__agents_t *a, uint32_t rep, bool faulted);
int jct__agents_quit(jct__agents_t *a);
/* Back to before setup (the lab is kept for the next run). */
int jct__agents_reset(jct__agents_t *a);

/* Some agent has not answered the current phase yet. */
bool jct__agents_waiting(const jct__agents_t *a);
/* Nonzero once an agent failed, closed its channel or broke the protocol;
 * err says which agent and why. */
int jct__agents_failed(const jct__agents_t *a, char *err, size_t errlen);

/* What rank i said in its hello ("kernel 6.12.x, rxe0 on eth0 198.18.0.1"). */
const char *jct__agents_hello(const jct__agents_t *a, uint32_t i);

/* After a run: every op's timing on the orchestrator's clock (ns,
 * CLOCK_MONOTONIC; 0 where no agent reported it), for nops ops, each
 * agent's times moved later by the least lag that has no op received
 * before it was posted (above). Returns JCT_EINVAL when an agent named an
 * op outside the schedule, JCT_ENOMEM. */
int jct__agents_timing(const jct__agents_t *a, jct_op_timing_t *t, uint32_t nops);

/* Agent i's host was stopped during the current run from at_ns for len_ns
 * (the orchestrator's clock; in order, at most JCT_AGENTS_MAX_FROZEN a
 * run): a lab VM stopped by a stall (harness/orch/vm_stalls.h), whose
 * clock stood still meanwhile (lab.h, jct__lab_freeze), so the agent's
 * times after it read len_ns short. jct__agents_timing places them past
 * it: the job time counts the stall, as the orchestrator's clock saw it.
 * Forgotten at the next jct__agents_run. Errors: JCT_EINVAL (no such
 * agent, or too many). */
#define JCT_AGENTS_MAX_FROZEN 64
int jct__agents_frozen(jct__agents_t *a, uint32_t i, uint64_t at_ns, uint64_t len_ns);
void jct__agents_counters(const jct__agents_t *a, jct_dev_counters_t *sum);
/* Agent i's device counters from its last done message (what each moved). */
void jct__agents_rank_counters(const jct__agents_t *a, uint32_t i, jct_dev_counters_t *out);
/* Agent i's host_drops from its last done message (borrowed; NULL: none). */
const json_t *jct__agents_host_drops(const jct__agents_t *a, uint32_t i);

/* Stop watching (handles close through the loop: run it once more). */
void jct__agents_free(jct__agents_t *a);

#endif
