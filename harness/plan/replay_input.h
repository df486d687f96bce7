/* What `jctlab replay` replays (internal): a generated collective, a
 * schedule file, or a capture whose schedule is inferred and whose own
 * losses become the postmortem's injectors; sizes optionally scaled. */
#ifndef JCT_REPLAY_INPUT_H
#define JCT_REPLAY_INPUT_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "harness/report/fidelity.h"
#include "jctlab/schedule.h"
#include "postmortem.h"
#include "run_args.h"

typedef struct {
  jct_schedule_t *schedule;
  char source[512];
  const char *kind; /* "synth", "schedule", "trace" */
  char pattern[32]; /* what inference recognised ("ring", ...), "" otherwise */
  char *fault_specs[JCT_POSTMORTEM_MAX_SPECS]; /* a trace's own losses as targeted drops */
  uint32_t nfaults;
  uint32_t nak_holds; /* of them, on verbs: the NAK holds at the hosts (postmortem.h), last */
  uint64_t lost_packets; /* of the trace, that fault_specs replay */
  uint64_t lost_retransmissions; /* of them, re-sent copies (their 2nd, 3rd... transmission) */
  jct_uroce_go_back_t *go_backs; /* a trace's go-backs, each as captured (postmortem.h) */
  uint64_t *go_back_idle_ns;     /* ... each timer go-back's idle time before it */
  uint32_t ngo_backs;
  jct_uroce_stall_t *stalls; /* a trace's transmit stalls (postmortem.h), the host's: every
                                repetition on uroce holds them */
  uint32_t nstalls;
  /* On verbs in the lab, what the capture's hosts did with no fault behind
   * it, which every case of the replay adds to its injectors, the user's
   * too: its transmit stalls as stall injectors, then its timer go-backs
   * with nothing lost as timeout injectors (postmortem.h). The first
   * nstall_specs are the stalls, the rest the timeouts (each kind up to
   * JCT_POSTMORTEM_MAX_SPECS). */
  char *host_specs[2 * JCT_POSTMORTEM_MAX_SPECS];
  uint32_t nhost_specs;
  uint32_t nstall_specs; /* of them the stall injectors: the lab holds the stalls */
  bool no_cts; /* a trace whose job sent no clear-to-sends (perftest): the replay sends none */
  bool have_capture;             /* a trace: capture holds what it showed (fidelity.h) */
  jct__capture_figures_t capture;
  json_t *replay_profile; /* where the fabric's figures came from (replay_profile.h), or NULL */
  uint64_t captured_rate_bps; /* --captured-rate: the capture's link rate instead of the
                                 measured one (0: measured; replay_profile.h) */
} jct__replay_input_t;

/* Load: a->synth (with a->ranks, a->bytes, a->channels), or path: a schedule
 * (JSON: a ".json" name or a file starting with '{') or else a capture;
 * NULL path and no synth: the shipped trace, whose schedule is inferred
 * and whose losses become fault_specs (postmortem.h). Every message's size
 * is multiplied by scale (jct_schedule_scale()). Errors: JCT_EINVAL /
 * JCT_EIO (err says what), JCT_ENOMEM. */
int jct__replay_input_load(jct__replay_input_t *in, const jct__run_args_t *a, const char *path,
                           double scale, char *err, size_t errlen);

/* A case's injectors, as `jctlab replay` and a scenario's cases alike get
 * them: the trace's own losses (fault_specs) when trace_losses, then the
 * user's (n_user of user), then in the lab the trace's transmit stall specs
 * and timer go-back specs (host_specs: held in every case and repetition,
 * the user's too). *n is
 * their count; o's counts of the capture's own among them
 * (capture_timeouts, capture_nak_holds: run.h) are set. Returns a calloc'd
 * array (the strings stay in and user's) or NULL on no memory; *n above
 * JCT_RUN_MAX_INJECTORS is for the caller to refuse. */
const char **jct__replay_input_specs(const jct__replay_input_t *in, bool trace_losses,
                                     const char *const *user, uint32_t n_user, uint32_t *n,
                                     jct_run_opts_t *o);

/* Set the figures of o that the user did not give (user_set, JCT__SET_*)
 * from the schedule's profile, and keep where each came from
 * (jct__replay_profile_apply); o->tdf_floor 4 when the lab holds the
 * capture's host pauses (host_specs), else 0 (run.h,
 * jct_run_dilation); on verbs with o->hold_naks, a postmortem's
 * fault_specs gain the holds of the capture's NAKs at their responders'
 * hosts (jct__postmortem_nak_holds, once). Errors: JCT_EINVAL (err names
 * the figure; hold_naks off verbs), JCT_ENOMEM. */
int jct__replay_input_fabric(jct__replay_input_t *in, uint32_t user_set, jct_run_opts_t *o,
                             char *err, size_t errlen);

void jct__replay_input_free(jct__replay_input_t *in);

#endif
