/* A session (internal to the harness): one fabric, its ranks and its
 * injector chain, built once and then asked for repetitions one at a time,
 * each either with the injectors on the switch's path (faulted) or off it
 * (baseline); warm-up repetitions, first, are baseline ones nobody
 * measures. The ranks run on the transport's backend (backend.h); the
 * session keeps what every transport shares. `jctlab run` asks for K faulted repetitions; `jctlab
 * replay` alternates baseline and faulted ones on the same fabric
 * (DESIGN.md, decision 5), so both see the same machine at the same time.
 *
 * Each repetition reports its JCT, every op's timing, and the counters it
 * moved (transport, per connection retransmissions where the backend
 * counts them, switch, pauses, injectors) as differences over the
 * repetition and the drain after it, so that baseline and faulted figures
 * never mix. Retransmitted packets are also sampled over time, in bins of
 * bin_ns from the repetition's start, for the report's plot (where the
 * transport counts them: uroce).
 */
#ifndef JCT_SESSION_H
#define JCT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/replay.h"
#include "jctlab/run.h"

typedef struct jct__session jct__session_t;

/* Build what o describes (injectors first: a bad spec is bad input) and
 * let the links come up. bin_ns: the retransmission bins' width (0: none).
 * Errors as jct_run(). */
int jct__session_new(jct__session_t **out, const jct_run_opts_t *o, uint64_t bin_ns, char *err,
                     size_t errlen);

/* One repetition, faulted or not. Fills *rep (rep->ok false: it failed,
 * rep->why says how; the session is then unusable for more). Errors:
 * JCT_ENOMEM. */
int jct__session_rep(jct__session_t *s, bool faulted, uint32_t index, jct_rep_t *rep);

/* The session's o->warmup warm-up repetitions, one after the other,
 * without the injectors (baseline), their figures dropped: the loop's
 * lateness and the CPU time start again after them, and only frames the
 * harness lost by its own fault still count. Returns 0 with why empty,
 * or 0 with why saying which failed and how (the session is then
 * unusable, as after any failed repetition), or JCT_ENOMEM. */
int jct__session_warmup(jct__session_t *s, char *why, size_t len);

/* The loop's lateness over every repetition so far, CPU busy fraction,
 * the harness's own losses (nonzero: the run is invalid; why says how),
 * and totals over the session. */
typedef struct {
  uint64_t lateness_p50_ns, lateness_p99_ns, lateness_max_ns;
  double cpu_busy;
  uint64_t harness_losses;
  uint64_t skipped_ns; /* idle time the clock skipped (clock.h) */
  uint64_t wall_ns;    /* wall time since health restarted */
  double tdf;          /* the clock's time dilation (clock.h) */
  /* The session's loops pace packets: a jctlab switch (and uroce's ranks)
   * runs on them. Without one (verbs on hosts' own fabric: --agents,
   * `jctlab rank`) the NICs pace the traffic and a late loop only delays
   * the executors' gaps: its lateness is reported, never a verdict. */
  bool paces;
  char harness_why[200];
} jct__session_health_t;
void jct__session_health(jct__session_t *s, jct__session_health_t *h);

/* True when the loop, not the emulated link, set the pace (h->paces): h's p99
 * lateness exceeds one packet's serialization time (packet_time_ns). Such
 * a run or replay is invalid; why says so, with the figures. */
bool jct__session_loop_bound(const jct__session_health_t *h, double packet_time_ns, char *why,
                             size_t len);

/* The transport figures the session's backend counts (JCT_TSTAT_* bits,
 * run.h): every repetition's counters say so, and sums start from them. */
uint32_t jct__session_counted(const jct__session_t *s);

/* True when the backend counts retransmissions per connection: every
 * repetition then carries conn (replay.h). */
bool jct__session_counts_per_qp(const jct__session_t *s);

/* The session's dilation into *d: jct_run_dilation's, with what its
 * injectors add (the lab's clear-to-send timer, vm_stalls.h), computed once
 * in jct__session_new; the very figures its backend was given
 * (backend.h, env->dilation). */
void jct__session_dilation(const jct__session_t *s, jct_run_dilation_t *d);

/* The injectors' identities (spec, kind, seed; stats zero). */
uint32_t jct__session_injectors(const jct__session_t *s, jct_run_injector_t *out, uint32_t max);

/* With o->watch_losses: the measured repetitions' losses of one side,
 * their median hole → retransmission on the switch's wire and their
 * spread (JCT_FIGURE_BINS counts, loss_watch.h); false with 0, 0 and no
 * spread when none was timed, or the session does not watch. */
bool jct__session_losses(jct__session_t *s, bool faulted, uint64_t *median_ns, uint64_t *n,
                         uint64_t *spread);

/* The same side's go-backs after NAKs: their median depth in PSNs and
 * their spread (loss_watch.h). */
bool jct__session_go_back(jct__session_t *s, bool faulted, uint64_t *median_psns, uint64_t *n,
                          uint64_t *spread);

/* True when the session watches its switch's wire (loss_watch.h): the run
 * wants its losses (o->watch_losses) or the backend's devices count no
 * re-sent packets (backend.h, resent_on_wire). Otherwise nothing looks at
 * the frames the switch sends (fabric.h's tap is NULL). */
bool jct__session_watches(const jct__session_t *s);

/* The session's fabric (NULL: none, as with agents). */
jct_fabric_t *jct__session_fabric(jct__session_t *s);
void jct__rep_clear(jct_rep_t *rep); /* frees the timing, conn and links */
void jct__session_free(jct__session_t *s);

#endif
