/* A session's insides (internal to session.c and session_lab.c). */
#ifndef JCT_SESSION_INT_H
#define JCT_SESSION_INT_H

#include <stdio.h>
#include <uv.h>

#include "harness/lab/agents.h"
#include "harness/fabric/chain.h"
#include "jctlab/clock.h"
#include "jctlab/fabric.h"
#include "harness/lab/lab.h"
#include "harness/transport/uroce/ranks.h"
#include "session.h"

#define DATA_PRIO 3
#define DATA_DSCP 26 /* DSCP 26 >> 3 = priority 3 */
#define DRAIN_NS 2000000000u
#define SETTLE_NS 20000000u
/* Spin rather than sleep for timers due this soon (clock.h): sleeping and
 * re-arming cost more than the gaps between packets. */
#define SPIN_NS 1000000u

struct jct__session {
  uv_loop_t loop;
  bool loop_open;
  jct_clock_t clock;
  bool clock_open;
  const jct_run_opts_t *o;
  double model_ns;
  uint64_t bin_ns;
  jct__chain_t *chain;
  FILE *fault_log;
  jct_fabric_t *fab;
  jct__ranks_t *ranks;                  /* uroce: the ranks in namespaces; NULL on verbs */
  jct__lab_t *lab;                      /* verbs with the lab: one VM per rank */
  jct__agents_t *agents;                /* verbs: the ranks' agents */
  uint32_t agent_runs;                 /* runs asked of the agents so far */
  int agent_fds[JCT_SWITCH_MAX_PORTS]; /* --agents: the TCP connections */
  uint32_t nagent_fds;
  jct_exec_t *exec;
  jct_timer_t exec_timer, wake;
  bool broken;
  double cpu0;
  uint64_t wall0;
  /* Sampling retransmissions during a repetition. */
  jct_rep_t *sampling;
  uint64_t rep_start_ns, next_sample_ns, retx_at_start;
};

/* Run the loop until done() or the deadline; returns whether done. */
bool jct__session_run_until(jct__session_t *s, bool (*done)(jct__session_t *), uint64_t deadline_ns);

/* verbs (session_lab.c): boot the lab, let the agents set up and connect
 * (after the fabric is up); one repetition; shut the agents down. */
int jct__session_lab_up(jct__session_t *s, char *err, size_t errlen);
int jct__session_agents_up(jct__session_t *s, char *err, size_t errlen);
void jct__session_verbs_rep(jct__session_t *s, uint32_t index, uint64_t limit_ns, jct_rep_t *rep);
void jct__session_lab_down(jct__session_t *s);
/* Mark rep failed (why) and the session unusable for more. */
void jct__session_fail_rep(jct__session_t *s, jct_rep_t *rep, const char *why);
/* Nonzero once a rank failed (either transport); why says which. */
int jct__session_failed(const jct__session_t *s, char *why, size_t len);

#endif
