/* DCQCN: RoCEv2 congestion control as uroce's QPs run it (Zhu et al.,
 * "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
 * as two pure state machines driven by the caller's clock (no I/O, no
 * timers of their own: every entry point takes now_ns and first brings its
 * timers up to it, so a test drives them with a fake clock).
 *
 * - Congestion point: the switch marks ECN-CE (RED-like: Kmin, Kmax, Pmax;
 *   switch.h).
 * - Notification point (NP, the receiver's QP): a request packet that
 *   arrives with CE owes the sender one CNP (BTH opcode 0x81, IBA Annex
 *   A17.9), at most one per QP per min_time_between_cnps.
 * - Reaction point (RP, the sender's QP): its current rate Rc, target rate
 *   Rt and congestion estimate alpha. On a CNP: Rt = Rc (see the clamp
 *   parameters), Rc = Rc * (1 - alpha/2) (no lower than rpg_min_dec_fac %
 *   of Rc, nor rpg_min_rate), then alpha = (1 - g) alpha + g; the first CNP
 *   of a QP uses initial_alpha instead. The alpha timer (alpha_period_ns,
 *   restarted by each CNP) decays alpha = (1 - g) alpha each time it
 *   expires. After a cut, the rate-increase timer (rpg_time_reset_ns) and
 *   the byte counter (rpg_byte_reset_bytes sent) each count increase
 *   events, T and BC (counted before the event, so the first F events are
 *   stages 0..F-1); each event: with F = rpg_threshold, if max(T, BC) < F
 *   fast recovery; else if min(T, BC) > F hyper increase, Rt += rpg_hai_rate;
 *   else additive increase, Rt += rpg_ai_rate; Rt no higher than the line
 *   rate; then Rc = (Rt + Rc) / 2 (rounded up, so Rc reaches Rt). A byte
 *   counter of 0 is off (BC follows T). Back at the line rate the limiter
 *   is off and its timers stop; alpha keeps decaying.
 *   Sources: the paper's RP algorithm (its figure of the RP state machine);
 *   NVIDIA's "DCQCN CC Parameters" (ConnectX-4 and later, the names and
 *   defaults of mlxconfig / MLNX_OFED's sysfs roce_rp/roce_np); the HPCC
 *   simulator's DCQCN (alibaba-edu/High-Precision-Congestion-Control,
 *   rdma-hw.cc) for the stage counting and the clamp, read, not copied.
 *
 * Where uroce's RP differs from a ConnectX: a CNP that comes within
 * rate_reduce_monitor_period_ns of the last cut moves alpha but does not cut
 * again (ConnectX keeps it for the end of the period); alpha follows the
 * paper (a CNP raises it at once, the timer decays it) rather than
 * ConnectX's once-per-period update, which gives the same values when CNPs
 * are rarer than the period.
 */
#ifndef JCTLAB_DCQCN_H
#define JCTLAB_DCQCN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every parameter, in the units of its name. */
typedef struct {
  /* Reaction point */
  uint64_t rpg_time_reset_ns;       /* rate-increase timer period, > 0 */
  uint64_t rpg_byte_reset_bytes;    /* byte counter period; 0: no byte counter */
  uint32_t rpg_threshold;           /* F: fast recovery stages, >= 1 */
  uint64_t rpg_ai_rate_bps;         /* additive increase of Rt */
  uint64_t rpg_hai_rate_bps;        /* hyper increase of Rt */
  uint32_t rpg_min_dec_fac_pct;     /* a cut leaves at least this % of Rc, 0..100 */
  uint64_t rpg_min_rate_bps;        /* Rc never below this */
  uint64_t rate_to_set_on_first_cnp_bps; /* Rc = Rt = this on a QP's first CNP; 0: cut as usual */
  bool clamp_tgt_rate;                   /* Rt = Rc on every cut */
  bool clamp_tgt_rate_after_time_inc;    /* without clamp_tgt_rate: Rt = Rc when the timer
                                            raised the rate since the last cut */
  double g;                         /* alpha's gain, (0, 1] */
  uint64_t alpha_period_ns;         /* alpha timer, > 0 */
  double initial_alpha;             /* alpha on a QP's first CNP, (0, 1] */
  uint64_t rate_reduce_monitor_period_ns; /* at most one cut per period (0: every CNP) */
  /* Notification point */
  uint64_t min_time_between_cnps_ns; /* per QP (0: a CNP for every CE packet) */
} jct_dcqcn_params_t;

typedef enum {
  JCT_DCQCN_CONNECTX = 0, /* NVIDIA ConnectX-4 and later firmware defaults */
  JCT_DCQCN_PAPER,        /* Zhu et al., SIGCOMM 2015 */
} jct_dcqcn_profile_t;

/* A profile's parameters (harness/transport/uroce/uroce_dcqcn.c gives each value's source). */
void jct_dcqcn_params(jct_dcqcn_params_t *p, jct_dcqcn_profile_t profile);

/* The line rate a profile's values were made for: ConnectX's defaults for
 * its 100 Gbit/s ports, the paper's for its 40 Gbit/s testbed. */
uint64_t jct_dcqcn_profile_rate_bps(jct_dcqcn_profile_t profile);

/* Dilate p by factor (DESIGN.md decision 8, applied to congestion
 * control): every time constant x factor, the rate steps (AI, HAI, the
 * rate on the first CNP) / factor, bytes (the byte counter) and alpha's
 * gain unchanged. A link factor times slower than the profile's then sees
 * the same dynamics per packet: the same packets per timer period, the
 * same fraction of the line rate per increase step. rpg_min_rate is not
 * dilated: a floor of 1 Mbit/s keeps a paced packet within the QP's ACK
 * timeout, which is not dilated. factor <= 1 changes nothing. */
void jct_dcqcn_dilate(jct_dcqcn_params_t *p, double factor);
/* "connectx" or "paper" into *out; JCT_EINVAL for another word. */
int jct_dcqcn_profile_parse(const char *name, jct_dcqcn_profile_t *out);
const char *jct_dcqcn_profile_name(jct_dcqcn_profile_t profile);
/* Check every field; JCT_EINVAL with err naming the first bad one. */
int jct_dcqcn_params_check(const jct_dcqcn_params_t *p, char *err, size_t errlen);

/* Reaction point. Fields are the state, readable; change them only through
 * the functions. */
typedef struct {
  jct_dcqcn_params_t p;
  uint64_t line_bps;
  uint64_t rc_bps, rt_bps; /* current and target rate */
  double alpha;
  bool active;        /* Rc below the line rate: the rate limiter is on */
  bool seen_cnp;      /* a CNP came before (initial_alpha is used once) */
  bool time_inc;      /* the timer raised the rate since the last cut */
  uint64_t alpha_next_ns; /* alpha timer's next expiry (UINT64_MAX: before the first CNP) */
  uint64_t inc_next_ns;   /* rate-increase timer's next expiry (UINT64_MAX: stopped) */
  uint32_t t_stage, bc_stage; /* T and BC */
  uint64_t bc_bytes;          /* sent since the byte counter last expired */
  uint64_t last_cut_ns;
  uint64_t below_since_ns; /* when Rc last left the line rate */
  /* Counters */
  uint64_t cnps;          /* CNPs handled */
  uint64_t rate_cuts;     /* CNPs that cut Rc */
  uint64_t below_line_ns; /* time Rc spent below the line rate, closed intervals */
} jct_dcqcn_rp_t;

/* At the line rate, alpha 0, no timer running. */
void jct_dcqcn_rp_init(jct_dcqcn_rp_t *rp, const jct_dcqcn_params_t *p, uint64_t line_rate_bps);
/* Back to the line rate as a QP idle long enough to have recovered (alpha
 * 0, the next CNP a first one), keeping the counters: a time below the
 * line rate under way ends at now_ns. */
void jct_dcqcn_rp_reset(jct_dcqcn_rp_t *rp, uint64_t now_ns);
/* Fire the timers due up to now_ns, in order. now_ns must not go back. */
void jct_dcqcn_rp_advance(jct_dcqcn_rp_t *rp, uint64_t now_ns);
/* A CNP for this QP arrived. */
void jct_dcqcn_rp_on_cnp(jct_dcqcn_rp_t *rp, uint64_t now_ns);
/* The QP sent bytes (what its limiter paces: the frame on the wire). */
void jct_dcqcn_rp_on_sent(jct_dcqcn_rp_t *rp, uint64_t bytes, uint64_t now_ns);
/* Time Rc has spent below the line rate up to now_ns (after advance). */
uint64_t jct_dcqcn_rp_below_line_ns(const jct_dcqcn_rp_t *rp, uint64_t now_ns);

/* Notification point. */
typedef struct {
  uint64_t min_gap_ns;
  uint64_t last_cnp_ns;
  bool sent;          /* a CNP went before (last_cnp_ns is meaningful) */
  uint64_t ce_pkts;   /* CE-marked requests seen */
  uint64_t cnps;      /* CNPs owed */
} jct_dcqcn_np_t;

void jct_dcqcn_np_init(jct_dcqcn_np_t *np, const jct_dcqcn_params_t *p);
/* A CE-marked request arrived: true when a CNP is owed now. */
bool jct_dcqcn_np_on_ce(jct_dcqcn_np_t *np, uint64_t now_ns);

#endif
