/* Injectors at the ranks' hosts where jctlab has no switch (internal to
 * orch/): the orchestrator's side of `at=host:RANK` for the verbs ranks of
 * `jctlab run --agents` (backend_verbs.c) and `jctlab rank` (backend_ranks.c).
 * Each rank's host runs its own with the agent's code (harness/lab/
 * agent_host.h: the tc-eBPF drop and delay program, the pause storm over
 * AF_PACKET, the flap over netlink behind its guard); the orchestrator
 * says which, and takes back their counters, drops, frames and link
 * changes into its chain's injectors and fault log, so that the report,
 * JSON and fault log read as those of the switch's injectors.
 *
 * The lists are agent_host.h's: [{index, spec, run_seed, seed}, ...] out,
 * [{index, seen, dropped, held, generated, link_down_ns, drops, frames,
 * frames_lost, links}, ...] back.
 */
#ifndef JCT_ORCH_HOST_FAULTS_H
#define JCT_ORCH_HOST_FAULTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/fabric/chain.h"

/* Whether specs (a run's --inject, n of them) can all run at the hosts of
 * nranks ranks with no switch: each at=host:R with R < nranks, of a kind a
 * host runs (drop, delay, pause, flap: chain.h, jct__chain_attach_remote).
 * Returns 0 or JCT_EINVAL with err naming the spec and why, one line;
 * JCT_ENOMEM. Nothing is attached anywhere. */
int jct__host_faults_check(const char *const *specs, size_t n, uint64_t run_seed, uint32_t nranks,
                           char *err, size_t errlen);

/* The injectors of c at rank's host, as that host's agent_host.h list (a
 * new reference, an empty array when none; NULL: out of memory). */
json_t *jct__host_faults_of(const jct__chain_t *c, uint32_t rank, uint64_t run_seed);

/* What rank's host says its injectors did in a repetition (agent_host.h's
 * done list; NULL is none): counters into c's injectors, drops, storm
 * frames and link changes into c's fault log. An entry whose index is not
 * one of c's at rank is ignored. */
void jct__host_faults_results(jct__chain_t *c, uint32_t rank, const json_t *list);

#endif
