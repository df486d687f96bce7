/* drop: lose matched frames, by a random loss model, on a schedule, or one
 * targeted RoCE packet.
 *
 *   drop p=P                                Bernoulli: each frame lost with P
 *   drop p=P burst=K                        ... and a loss takes the next K-1 too
 *   drop model=gemodel p=P [r=R] [h=H] [k=K]    Gilbert-Elliott
 *   drop model=state p13=P [p31=] [p32=] [p23=] [p14=]   4-state Markov
 *   drop every=N [burst=K]                  frames N, 2N, ... (or the last K of
 *                                           every N: N-K+1..N, 2N-K+1..2N, ...)
 *   drop psn=PSN[,PSN...] qp=QPN [count=C] | pkt=MSG:PKT[,...] [qp=QPN]
 * Probabilities read 0.01 or 1%; each is kept as a 32-bit fraction and
 * compared with a 32-bit draw, as netem keeps them (common/rng.h): steps
 * of 2^-32, and p=1 loses every frame.
 *
 * The two correlated models are those of Linux netem (net/sched/sch_netem.c,
 * loss_gilb_ell and loss_4state), from S. Salsano, F. Ludovici, A. Ordine,
 * D. Giannuzzi, "Definition of a general and intuitive loss model for packet
 * networks and its implementation in the Netem module in the Linux kernel"
 * (University of Rome "Tor Vergata", 2012), with netem's transition rules
 * and tc's defaults, so a netem line carries over:
 *
 *   tc qdisc ... netem loss random P%           drop p=P%
 *   tc qdisc ... netem loss gemodel p r 1-h 1-k    drop model=gemodel p=p r=r h=h k=k
 *       (tc takes the loss probabilities 1-h and 1-k as percentages; here
 *       h and k are the probabilities of NOT losing: `gemodel 1% 30% 80% 0%`
 *       is `model=gemodel p=1% r=30% h=20% k=100%`)
 *   tc qdisc ... netem loss state p13 p31 p32 p23 p14
 *                                          drop model=state p13= p31= p32= p23= p14=
 *
 * Gilbert-Elliott (states Good and Bad, starting in Good). Per frame, as
 * netem: from the current state, first move (Good->Bad with p, Bad->Good
 * with r), then lose the frame with the loss probability of the state it
 * was in (1-k in Good, 1-h in Bad). Defaults as tc: r = 1-p, h = 0 (every
 * frame in Bad is lost), k = 1 (none in Good); p is required. Stationary
 * share of Bad = p/(p+r); loss rate = (r(1-k) + p(1-h))/(p+r); with h=0,
 * k=1 the mean loss burst is 1/r frames.
 *
 * 4-state Markov (tc-netem(8): state 1 good reception, 2 good reception
 * within a burst, 3 burst losses, 4 independent losses; starting in 1).
 * Per frame one uniform draw u moves the chain, and the frame is lost when
 * the state it lands in is 3 or 4:
 *   1: u < p14 -> 4;  u < p14+p13 -> 3;  else stay in 1
 *   2: u < p23 -> 3;  else stay in 2
 *   3: u < p32 -> 2;  u < p32+p31 -> 1;  else stay in 3
 *   4: -> 1
 * Defaults as tc: p31 = 1-p13, p32 = 0, p23 = 1, p14 = 0 (p13 alone is
 * Bernoulli with p13). p13+p14 and p31+p32 must not exceed 1.
 *
 * every=N counts matched frames from 1 and drops the Nth, 2Nth, ...;
 * burst=K with every=N drops the last K of each N (K=1 is every=N).
 * burst=K with p=P: each frame starts a burst of K losses with P.
 *
 * psn= and qp= pick the RoCEv2 packet (UDP port 4791 over IPv4 or IPv6,
 * optionally 802.1Q-tagged) whose BTH destination QP and PSN are these
 * (InfiniBand Architecture Specification vol. 1, 9.2 BTH; Annex A17
 * RoCEv2). A frame is a retransmission when its PSN is not after the
 * highest PSN already seen to that QP (24-bit serial arithmetic, as rxe
 * compares PSNs). By default only the first transmission is dropped
 * (count=1); with retransmissions=yes every frame carrying the PSN is,
 * up to count times (default: no limit), so the requester's retry
 * counter can be run out. psn= may list up to 64 PSNs of the same QP,
 * comma-separated (psn=100,164,200): count then applies to each (a
 * postmortem replays a trace's losses on one QP with one injector).
 * pkt=M:K (or a list) picks by position instead: the K-th packet (from 0)
 * of the M-th message (from 0, a message starting at a FIRST or ONLY
 * opcode) sent to the QP since the repetition started, counted over first
 * transmissions; PSNs go on from one repetition to the next on the
 * same QPs, positions do not.
 *
 * A target may name the T-th transmission of its packet with @T (T from
 * 1, at most 128): psn=105@2, pkt=3:7@2,3:7@3. Without @T it is the first
 * transmission (@1). Transmissions are counted the way packet-keyed draws
 * know packets (draw.c, jct_injector_packet_losses): the first re-sent
 * copy of a packet is transmission 2, and each time a copy is lost at the
 * site (this injector or another on the same port and side) the next copy
 * is the next transmission; the copies go-back-N sends of a packet not
 * lost since are the same transmission again (how many it sends depends
 * on timing: which were lost does not). Whether the first transmission
 * got through is what this injector saw: passed by it, or lost (by it, or
 * before it on the site, so never seen); an injector after it on the site
 * that loses the first transmission is not seen, so the targets of one
 * packet belong in one injector, or the later transmissions' in a later
 * injector. So a packet lost at its first
 * transmission and again at its second is pkt=M:K,M:K@2; one whose first
 * transmission got through but whose first re-sent copy (a go-back's) was
 * lost is pkt=M:K@2. After @T (T > 1), #C holds the drop back until the
 * packet's C-th copy (every copy seen here counts, the first transmission
 * as 1, and go-back-N's copies of a packet not lost since each count):
 * pkt=M:K@2#3 passes the first re-sent copy and drops the next, as when a
 * packet's first go-back got it through and the next go-back's copy was
 * lost (a capture's go-backs, replayed as deep as they went, re-send it as
 * often; infer.h's copies). count= applies to each target: the copies of
 * that transmission it drops (default 1). A pkt= target learns its packet's PSN
 * from the first transmission at its position, so a re-sent copy is found
 * by PSN. @T with T > 1 does not go with retransmissions=yes.
 *
 * epsn=expected or epsn=behind picks copies by what the responder makes of
 * them instead. The injector follows the QP's expected PSN (ePSN) as its
 * site sees it: the first request packet's PSN, then one past each PSN that
 * passes in order (IBA vol. 1, 9.7.5.2.1; rxe_resp.c check_psn). A copy of
 * the ePSN is one the responder accepts, and losing it opens a hole that
 * the responder NAKs or the requester's timer finds. A copy past the ePSN
 * comes behind a hole the responder has not seen filled; it discards the
 * copy as out of sequence, and losing it changes nothing. With epsn=, @T
 * counts only the packet's copies that come in that state: epsn=expected
 * pkt=3:7,3:7@2 drops the first two copies of the packet that the
 * responder would accept, whatever came before them behind holes.
 * A postmortem on verbs replays each loss in the state the capture lost it
 * in (harness/plan/postmortem.c): rxe in the lab goes back deeper than the
 * capture's requester, and a loss counted by transmission would fall behind
 * another's hole, drawing no NAK of its own. An epsn=behind target may find
 * no copy behind a hole and act on nothing; that does not make the run
 * invalid, as its loss changes nothing. epsn= does not go with #C,
 * retransmissions=yes or unreached=, and runs on the switch only. Default
 * epsn=any: every copy counts, as above.
 *
 * unreached=first (pkt= only) is for a replay whose sender goes back less
 * deep than the one it replays (rxe in the lab, harness/plan/postmortem.c):
 * a target at transmission T > 1 is a copy a go-back re-sent, and that
 * go-back comes only after an earlier loss of the flow. When the packet's
 * first transmission passes while no loss this injector made is still
 * unrepaired (every PSN it dropped has been re-sent since), no go-back
 * will re-send it: the first transmission stands in for the lowest such
 * target and is dropped, and the packet's later targets count one
 * transmission less (@3 becomes @2; their #C no longer holds them). The
 * receiver then meets the same hole at that packet (its NAK, the
 * requester's go-back), where it would not otherwise. Default
 * unreached=skip: such a target never acts.
 *
 * pkt= may go without qp=: the QP is then the
 * first one a request packet that passed where= went to (for transports
 * whose QP numbers the device picks, as rxe does: pick the flow with
 * where=, e.g. "src host 198.18.0.1 and udp[8] != 0x0b" for rank 0's data
 * without its 64-byte clear-to-send WRITE_ONLY_WITH_IMMEDIATEs). With
 * qp-order=N (instead of qp=) it is the N-th (from 0) QP a request packet
 * that passed where= went to, in the order of each QP's first such packet
 * in the repetition (N below 16): two connections between the same hosts
 * that a job uses one after the other (the postmortem of a perftest
 * capture, whose SEND test starts after its WRITE test ends) are told
 * apart by when they start, as rxe's QP numbers cannot be known ahead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"
#include "jctlab/roce.h"
#include "position.h"
#include "spec_int.h"

typedef enum { MODE_BERNOULLI, MODE_GEMODEL, MODE_4STATE, MODE_EVERY, MODE_PSN } drop_mode_t;

enum { GE_GOOD, GE_BAD };
enum { S_GOOD_RX = 1, S_BURST_RX = 2, S_BURST_LOSS = 3, S_ISOLATED_LOSS = 4 };

/* Probabilities are 32-bit fractions (common/rng.h), converted once by
 * init and compared with 32-bit draws, as netem keeps them. */
typedef struct {
  drop_mode_t mode;
  /* Bernoulli */
  uint32_t p;
  uint64_t burst;      /* frames lost per loss event (>= 1) */
  uint64_t burst_left; /* losses still owed by the current burst */
  /* Gilbert-Elliott: p (above) and r move, lose_good = 1-k, lose_bad = 1-h */
  uint32_t r, lose_good, lose_bad;
  int ge_state;
  /* 4-state, as cumulative thresholds on one draw: from 1, p14 and
   * p14+p13; from 3, p32 and p32+p31; from 2, p23 */
  uint32_t to4, to4_or_3, to2, to2_or_1, to3;
  int state;
  /* every=N */
  uint64_t every, nth;
  /* targeted */
#define DROP_MAX_PSNS 64
  uint32_t psn[DROP_MAX_PSNS], qp;
  uint32_t npsn;
  uint64_t done_psn[DROP_MAX_PSNS];
  uint8_t tx[DROP_MAX_PSNS];        /* the transmission target i drops (1: the first) */
  uint8_t copy[DROP_MAX_PSNS];      /* ... not before its copy-th copy (#C; 0: any copy) */
  uint8_t copies[DROP_MAX_PSNS];    /* copies of its packet seen here, the first included */
  int8_t first_lost[DROP_MAX_PSNS]; /* -1 not seen; else whether it dropped the first
                                       transmission itself */
  bool by_msg;                      /* pkt=: psn[i] is message msg_of[i]'s packet psn[i] */
  bool resolved[DROP_MAX_PSNS];     /* pkt=: the first transmission at the position was seen ... */
  uint32_t psn_at[DROP_MAX_PSNS];   /* ... and carried this PSN */
  uint32_t msg_of[DROP_MAX_PSNS];
  uint64_t count;
  bool retransmissions;
  bool unreached_first; /* unreached=first: the first transmission stands in (above) */
  enum { EPSN_ANY, EPSN_EXPECTED, EPSN_BEHIND } epsn_mode; /* epsn= (above) */
  bool epsn_known;                 /* a request packet of the QP has passed ... */
  uint32_t epsn;                   /* ... and this is the responder's expected PSN */
  uint8_t in_state[DROP_MAX_PSNS]; /* epsn=: copies of its packet seen in that state */
  bool hole;            /* a PSN it dropped has not been re-sent since ... */
  uint32_t hole_psn;    /* ... the lowest such */
  jct__position_t at;   /* the QP's packets: which, first or re-sent, where (position.h) */
} drop_t;

/* Gilbert-Elliott, as netem's loss_gilb_ell: true when the frame is lost. */
static bool loss_gilb_ell(drop_t *d, jct_injector_t *inj) {
  switch (d->ge_state) {
  case GE_GOOD:
    if (jct__rng_hit(jct_injector_u32(inj), d->p)) d->ge_state = GE_BAD;
    return jct__rng_hit(jct_injector_u32(inj), d->lose_good);
  default:
    if (jct__rng_hit(jct_injector_u32(inj), d->r)) d->ge_state = GE_GOOD;
    return jct__rng_hit(jct_injector_u32(inj), d->lose_bad);
  }
}

/* 4-state Markov, as netem's loss_4state: true when the frame is lost. */
static bool loss_4state(drop_t *d, jct_injector_t *inj) {
  uint32_t u = jct_injector_u32(inj);
  switch (d->state) {
  case S_GOOD_RX:
    if (jct__rng_hit(u, d->to4))
      d->state = S_ISOLATED_LOSS;
    else if (jct__rng_hit(u, d->to4_or_3))
      d->state = S_BURST_LOSS;
    break;
  case S_BURST_RX:
    if (jct__rng_hit(u, d->to3)) d->state = S_BURST_LOSS;
    break;
  case S_BURST_LOSS:
    if (jct__rng_hit(u, d->to2))
      d->state = S_BURST_RX;
    else if (jct__rng_hit(u, d->to2_or_1))
      d->state = S_GOOD_RX;
    break;
  default: /* S_ISOLATED_LOSS */
    d->state = S_GOOD_RX;
    break;
  }
  return d->state == S_BURST_LOSS || d->state == S_ISOLATED_LOSS;
}

/* Bernoulli, each loss extended to a burst of d->burst frames. */
static bool loss_bernoulli(drop_t *d, jct_injector_t *inj, jct_frame_t *f) {
  if (d->burst_left) {
    d->burst_left--;
    return true;
  }
  if (jct__rng_hit(jct_injector_packet_u32(inj, f, 0), d->p)) {
    d->burst_left = d->burst - 1;
    return true;
  }
  return false;
}

/* The last `burst` of every `every` matched frames. */
static bool loss_every(drop_t *d) {
  uint64_t pos = d->nth++ % d->every; /* 0-based position in the period */
  return pos >= d->every - d->burst;
}

/* Whether target i is the packet whose PSN is psn (a pkt= target once its
 * position was seen). */
static bool target_psn(const drop_t *d, uint32_t i, uint32_t psn) {
  return d->by_msg ? d->resolved[i] && d->psn_at[i] == psn : d->psn[i] == psn;
}

/* Target i's drop, when it has drops left. */
static bool take(drop_t *d, uint32_t i) {
  if (d->done_psn[i] >= d->count) return false;
  d->done_psn[i]++;
  return true;
}

/* pkt=, at a first transmission of psn: the targets at the position the
 * tracker has reached learn their PSN (their re-sent copies carry it). */
static void resolve(drop_t *d, uint32_t psn) {
  if (!d->by_msg) return;
  for (uint32_t i = 0; i < d->npsn; i++)
    if (d->msg_of[i] == d->at.msg && d->psn[i] == d->at.pkt)
      d->resolved[i] = true, d->psn_at[i] = psn;
}

/* unreached=first, at a first transmission that nothing lost before it
 * waits on: the lowest later-transmission target of the packet (pkt= at
 * the tracker's position) drops it, the others count one less. */
static bool stand_in(drop_t *d) {
  uint32_t low = d->npsn;
  for (uint32_t i = 0; i < d->npsn; i++)
    if (d->msg_of[i] == d->at.msg && d->psn[i] == d->at.pkt && d->tx[i] > 1 &&
        d->done_psn[i] < d->count && (low == d->npsn || d->tx[i] < d->tx[low]))
      low = i;
  if (low == d->npsn) return false;
  for (uint32_t i = 0; i < d->npsn; i++)
    if (i != low && d->msg_of[i] == d->at.msg && d->psn[i] == d->at.pkt && d->tx[i] > d->tx[low])
      d->tx[i]--, d->copy[i] = 0;
  return take(d, low);
}

/* A first transmission of psn: targets at transmission 1 (a pkt= target
 * at the message and packet position the tracker has reached). */
static bool first_transmission(drop_t *d, uint32_t psn) {
  bool lose = false;
  resolve(d, psn);
  for (uint32_t i = 0; i < d->npsn; i++)
    if (target_psn(d, i, psn) && d->tx[i] == 1 && !lose) lose = take(d, i);
  if (!lose && d->unreached_first && !d->hole) lose = stand_in(d);
  for (uint32_t i = 0; i < d->npsn; i++) /* whether its first transmission got past here */
    if (target_psn(d, i, psn)) d->first_lost[i] = lose, d->copies[i] = 1;
  return lose;
}

/* A re-sent copy of psn: targets at the transmission it is, counted from
 * the PSN's losses at the site (draw.c). */
static bool resent(drop_t *d, jct_injector_t *inj, jct_frame_t *f, uint32_t psn) {
  if (d->retransmissions) { /* every copy, up to count */
    for (uint32_t i = 0; i < d->npsn; i++)
      if (target_psn(d, i, psn)) return take(d, i);
    return false;
  }
  bool lose = false, known = false;
  uint32_t losses = 0;
  for (uint32_t i = 0; i < d->npsn; i++) {
    if (!target_psn(d, i, psn)) continue;
    /* Every copy counts, the first's unseen here (lost before it) too. */
    if (d->copies[i] < UINT8_MAX) d->copies[i]++;
    if (d->tx[i] < 2) continue;
    if (!known) losses = jct_injector_packet_losses(inj, f), known = true;
    /* Its first transmission unseen here: lost before it on the site. */
    uint32_t t = 1 + losses + (d->first_lost[i] == 0 ? 1 : 0);
    uint32_t copy = d->copies[i] + (d->first_lost[i] < 0 ? 1u : 0u);
    if (t == d->tx[i] && copy >= d->copy[i] && !lose) lose = take(d, i);
  }
  return lose;
}

/* The flow's unrepaired losses this injector made (unreached=first): a
 * drop of psn opens one, a copy of the lowest passing repairs them (a
 * go-back re-sends every PSN after it as well). */
static void track_hole(drop_t *d, uint32_t psn, bool lost) {
  if (lost && (!d->hole || jct_psn_diff(psn, d->hole_psn) < 0))
    d->hole = true, d->hole_psn = psn;
  else if (!lost && d->hole && psn == d->hole_psn)
    d->hole = false;
}

/* epsn=expected|behind: a copy of psn counts for its targets when it comes
 * in their state (at the ePSN, or past it); target i drops the tx[i]-th
 * such copy, and the next ones up to count. A copy of the ePSN that passes
 * moves it on. */
static bool loss_by_epsn(drop_t *d, jct__position_kind_t kind, uint32_t psn) {
  if (kind == JCT__POS_FIRST_TX) resolve(d, psn);
  if (!d->epsn_known) d->epsn_known = true, d->epsn = psn;
  int32_t ahead = jct_psn_diff(psn, d->epsn);
  bool in_state = d->epsn_mode == EPSN_EXPECTED ? ahead == 0 : ahead > 0, lose = false;
  for (uint32_t i = 0; in_state && i < d->npsn; i++) {
    if (!target_psn(d, i, psn)) continue;
    if (d->in_state[i] < UINT8_MAX) d->in_state[i]++;
    if (d->in_state[i] >= d->tx[i] && !lose) lose = take(d, i);
  }
  if (!lose && ahead == 0) d->epsn = (psn + 1) & JCT_PSN_MASK;
  return lose;
}

static bool loss_targeted(drop_t *d, jct_injector_t *inj, jct_frame_t *f) {
  uint32_t psn;
  bool lost;
  jct__position_kind_t kind = jct__position_see(&d->at, f, &psn);
  if (kind != JCT__POS_OTHER && d->epsn_mode != EPSN_ANY) return loss_by_epsn(d, kind, psn);
  switch (kind) {
  case JCT__POS_FIRST_TX:
    lost = first_transmission(d, psn);
    break;
  case JCT__POS_RESENT:
    lost = resent(d, inj, f, psn);
    break;
  default:
    return false;
  }
  track_hole(d, psn, lost);
  return lost;
}

static jct_verdict_t drop_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  drop_t *d = inj->priv;
  bool lose = false;
  switch (d->mode) {
  case MODE_BERNOULLI:
    lose = loss_bernoulli(d, inj, f);
    break;
  case MODE_GEMODEL:
    lose = loss_gilb_ell(d, inj);
    break;
  case MODE_4STATE:
    lose = loss_4state(d, inj);
    break;
  case MODE_EVERY:
    lose = loss_every(d);
    break;
  case MODE_PSN:
    lose = loss_targeted(d, inj, f);
    break;
  }
  return lose ? JCT_DROP : JCT_PASS;
}

/* ---- configuration ------------------------------------------------------ */

/* Keys (blank-separated in keys) that only other modes take: present with
 * this mode is an error naming the word. */
static int refuse(const jct_spec_t *spec, const char *keys, const char *mode, char *err,
                  size_t errlen) {
  for (uint32_t i = 0; i < spec->nargs; i++) {
    const char *key = spec->arg[i].key, *at = keys;
    size_t n = strlen(key);
    while (n && (at = strstr(at, key)) != NULL) {
      bool word = (at == keys || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0');
      if (word) {
        char detail[96];
        snprintf(detail, sizeof detail, "does not go with %s", mode);
        return jct__spec_word_err(spec, (int)i, err, errlen, detail);
      }
      at += n;
    }
  }
  return 0;
}

static int need(const jct_spec_t *spec, const char *key, const char *mode, char *err,
                size_t errlen) {
  if (jct__spec_find(spec, key) >= 0) return 0;
  return jct__errf(err, errlen, JCT_EINVAL, "%s: %s needs %s=", spec->text, mode, key);
}

#define PROB(key, dst)                                                                             \
  do {                                                                                             \
    if ((rc = jct_spec_prob(spec, key, dst, err, errlen)) < 0) return rc;                          \
  } while (0)

static int init_gemodel(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  static const char others[] = "p13 p31 p32 p23 p14 every burst "
                               "psn pkt qp qp-order count retransmissions unreached epsn";
  int rc;
  if ((rc = refuse(spec, others, "model=gemodel", err, errlen)) < 0) return rc;
  if ((rc = need(spec, "p", "model=gemodel", err, errlen)) < 0) return rc;
  double p = 0, r, h = 0.0, k = 1.0;
  PROB("p", &p);
  r = 1.0 - p;
  PROB("r", &r);
  PROB("h", &h);
  PROB("k", &k);
  d->p = jct__rng_prob32(p);
  d->r = jct__rng_prob32(r);
  d->lose_good = jct__rng_prob32(1.0 - k);
  d->lose_bad = jct__rng_prob32(1.0 - h);
  d->mode = MODE_GEMODEL;
  d->ge_state = GE_GOOD;
  return 0;
}

static int init_4state(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  static const char others[] = "p r h k every burst "
                               "psn pkt qp qp-order count retransmissions unreached epsn";
  int rc;
  if ((rc = refuse(spec, others, "model=state", err, errlen)) < 0) return rc;
  if ((rc = need(spec, "p13", "model=state", err, errlen)) < 0) return rc;
  double p13 = 0, p31, p32 = 0.0, p23 = 1.0, p14 = 0.0;
  PROB("p13", &p13);
  p31 = 1.0 - p13;
  PROB("p31", &p31);
  PROB("p32", &p32);
  PROB("p23", &p23);
  PROB("p14", &p14);
  if (p13 + p14 > 1.0 + 1e-12)
    return jct__spec_word_err(
        spec, jct__spec_find(spec, jct__spec_find(spec, "p14") >= 0 ? "p14" : "p13"), err, errlen,
        "p13 + p14 exceed 1 (both leave state 1)");
  if (p31 + p32 > 1.0 + 1e-12)
    return jct__spec_word_err(
        spec, jct__spec_find(spec, jct__spec_find(spec, "p32") >= 0 ? "p32" : "p31"), err, errlen,
        "p31 + p32 exceed 1 (both leave state 3)");
  d->to4 = jct__rng_prob32(p14);
  d->to4_or_3 = jct__rng_prob32(p14 + p13);
  d->to2 = jct__rng_prob32(p32);
  d->to2_or_1 = jct__rng_prob32(p32 + p31);
  d->to3 = jct__rng_prob32(p23);
  d->mode = MODE_4STATE;
  d->state = S_GOOD_RX;
  return 0;
}

static int init_every(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  static const char others[] = "p r h k p13 p31 p32 p23 p14 "
                               "psn pkt qp qp-order count retransmissions unreached epsn";
  int rc;
  if ((rc = refuse(spec, others, "every=", err, errlen)) < 0) return rc;
  d->burst = 1;
  if ((rc = jct_spec_u64(spec, "every", UINT64_MAX, &d->every, err, errlen)) < 0) return rc;
  if ((rc = jct_spec_u64(spec, "burst", UINT64_MAX, &d->burst, err, errlen)) < 0) return rc;
  if (d->every == 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "every"), err, errlen,
                              "must be at least 1");
  if (d->burst == 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "burst"), err, errlen,
                              "must be at least 1");
  if (d->burst > d->every)
    return jct__spec_word_err(spec, jct__spec_find(spec, "burst"), err, errlen,
                              "is longer than every=");
  d->mode = MODE_EVERY;
  return 0;
}

#define DROP_MAX_TX 128   /* @T: draw.c's loss records count 127 losses */
#define DROP_MAX_COPY 255 /* #C: copies counted per target */

/* An optional @T after a target at *p (the transmission, 1 when absent),
 * and after it an optional #C (not before the packet's C-th copy; 0 when
 * absent): false when T is not a whole number in [1, DROP_MAX_TX], or C
 * not one in [T, DROP_MAX_COPY] with T > 1. */
static bool parse_tx(const char **p, uint8_t *tx, uint8_t *copy) {
  *tx = 1;
  *copy = 0;
  if (**p != '@') return true;
  char *end;
  if ((*p)[1] < '0' || (*p)[1] > '9') return false;
  unsigned long long t = strtoull(*p + 1, &end, 10);
  if (t < 1 || t > DROP_MAX_TX) return false;
  *tx = (uint8_t)t;
  *p = end;
  if (**p != '#') return true;
  if (t < 2 || (*p)[1] < '0' || (*p)[1] > '9') return false;
  unsigned long long c = strtoull(*p + 1, &end, 10);
  if (c < t || c > DROP_MAX_COPY) return false;
  *copy = (uint8_t)c;
  *p = end;
  return true;
}

/* psn=A or psn=A,B@2,C (PSNs < 2^24, decimal or 0x hex). */
static int parse_psns(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  const char *v = jct_spec_get(spec, "psn");
  d->npsn = 0;
  for (const char *p = v;;) {
    char *end;
    if (*p < '0' || *p > '9') break;
    unsigned long long x = strtoull(p, &end, 0);
    if (end == p || x > JCT_PSN_MASK || d->npsn == DROP_MAX_PSNS) break;
    const char *at = end;
    if (!parse_tx(&at, &d->tx[d->npsn], &d->copy[d->npsn])) break;
    d->psn[d->npsn++] = (uint32_t)x;
    if (*at == 0) return 0;
    if (*at != ',') break;
    p = at + 1;
  }
  return jct__spec_word_err(
      spec, jct__spec_find(spec, "psn"), err, errlen,
      "is a PSN below 2^24 with an optional @TRANSMISSION (1 to 128) and #COPY "
      "(TRANSMISSION to 255), or up to 64 of them separated by commas");
}

/* pkt=M:K or pkt=M:K@T,M:K,... (message and packet indices from 0). */
static int parse_pkts(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  const char *v = jct_spec_get(spec, "pkt");
  d->npsn = 0;
  d->by_msg = true;
  for (const char *p = v;;) {
    const char *at = p;
    if (d->npsn == DROP_MAX_PSNS || !jct__spec_msg_pkt(&at, &d->msg_of[d->npsn], &d->psn[d->npsn]))
      break;
    if (!parse_tx(&at, &d->tx[d->npsn], &d->copy[d->npsn])) break;
    d->npsn++;
    if (*at == 0) return 0;
    if (*at != ',') break;
    p = at + 1;
  }
  return jct__spec_word_err(
      spec, jct__spec_find(spec, "pkt"), err, errlen,
      "is MESSAGE:PACKET (from 0) with an optional @TRANSMISSION (1 to 128) and "
      "#COPY (TRANSMISSION to 255), or up to 64 of them separated by commas");
}

/* epsn=any|expected|behind, which goes without #C, retransmissions=yes
 * and unreached= (they count every copy). */
static int init_epsn(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  int at = jct__spec_find(spec, "epsn");
  const char *v = jct_spec_get(spec, "epsn");
  if (!v) v = "any";
  if (strcmp(v, "expected") == 0)
    d->epsn_mode = EPSN_EXPECTED;
  else if (strcmp(v, "behind") == 0)
    d->epsn_mode = EPSN_BEHIND;
  else if (strcmp(v, "any") != 0)
    return jct__spec_word_err(spec, at, err, errlen, "is any, expected or behind");
  if (d->epsn_mode == EPSN_ANY) return 0;
  if (d->retransmissions || jct__spec_find(spec, "unreached") >= 0)
    return jct__spec_word_err(
        spec, at, err, errlen,
        "goes without retransmissions= and unreached= (they count every copy)");
  for (uint32_t i = 0; i < d->npsn; i++)
    if (d->copy[i])
      return jct__spec_word_err(spec, at, err, errlen,
                                "goes without a target's #COPY (its @T counts the copies in its "
                                "state)");
  return 0;
}

static int init_psn(jct_injector_t *inj, drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  static const char others[] = "p r h k p13 p31 p32 p23 p14 every burst";
  int rc;
  if ((rc = refuse(spec, others, "psn=", err, errlen)) < 0) return rc;
  bool by_msg = jct__spec_find(spec, "pkt") >= 0;
  if (by_msg && jct__spec_find(spec, "psn") >= 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "pkt"), err, errlen, "goes without psn=");
  if (!by_msg && jct__spec_find(spec, "qp-order") >= 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "qp-order"), err, errlen,
                              "goes with pkt=, not psn=");
  if (!by_msg && (rc = need(spec, "psn", "drop qp=", err, errlen)) < 0) return rc;
  if (!by_msg && (rc = need(spec, "qp", "drop psn=", err, errlen)) < 0) return rc;
  if ((rc = by_msg ? parse_pkts(d, spec, err, errlen) : parse_psns(d, spec, err, errlen)) < 0)
    return rc;
  if ((rc = jct__position_from_spec(&d->at, spec, err, errlen)) < 0) return rc;
  const char *retx = jct_spec_get(spec, "retransmissions");
  if (retx && by_msg)
    return jct__spec_word_err(spec, jct__spec_find(spec, "retransmissions"), err, errlen,
                              "cannot go with pkt= (it counts first transmissions)");
  if (retx) {
    if (strcmp(retx, "yes") == 0)
      d->retransmissions = true;
    else if (strcmp(retx, "no") != 0)
      return jct__spec_word_err(spec, jct__spec_find(spec, "retransmissions"), err, errlen,
                                "is yes or no");
  }
  const char *unreached = jct_spec_get(spec, "unreached");
  if (unreached && !by_msg)
    return jct__spec_word_err(spec, jct__spec_find(spec, "unreached"), err, errlen,
                              "goes with pkt= only");
  if (unreached && strcmp(unreached, "first") != 0 && strcmp(unreached, "skip") != 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "unreached"), err, errlen,
                              "is first or skip");
  d->unreached_first = unreached && strcmp(unreached, "first") == 0;
  if ((rc = init_epsn(d, spec, err, errlen)) < 0) return rc;
  for (uint32_t i = 0; i < d->npsn; i++) {
    d->first_lost[i] = -1;
    if (d->retransmissions && d->tx[i] > 1)
      return jct__spec_word_err(spec, jct__spec_find(spec, "retransmissions"), err, errlen,
                                "cannot go with a target's @TRANSMISSION (it drops every copy)");
  }
  /* Meant to act: acting on nothing makes the run invalid (not behind a
   * hole: such a loss changes nothing, and may find no copy there). */
  inj->targeted = d->epsn_mode != EPSN_BEHIND;
  d->count = d->retransmissions ? UINT64_MAX : 1;
  if ((rc = jct_spec_u64(spec, "count", UINT64_MAX, &d->count, err, errlen)) < 0) return rc;
  if (d->count == 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "count"), err, errlen,
                              "must be at least 1");
  d->mode = MODE_PSN;
  return 0;
}

static int init_bernoulli(drop_t *d, jct_spec_t *spec, char *err, size_t errlen) {
  static const char others[] = "r h k p13 p31 p32 p23 p14 every "
                               "psn pkt qp qp-order count retransmissions unreached epsn";
  int rc;
  if ((rc = refuse(spec, others, "p=", err, errlen)) < 0) return rc;
  double p = 0;
  PROB("p", &p);
  d->p = jct__rng_prob32(p);
  d->burst = 1;
  if ((rc = jct_spec_u64(spec, "burst", UINT64_MAX, &d->burst, err, errlen)) < 0) return rc;
  if (d->burst == 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, "burst"), err, errlen,
                              "must be at least 1");
  d->mode = MODE_BERNOULLI;
  return 0;
}

static int drop_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  drop_t d = {0};
  int rc;
  const char *model = jct_spec_get(spec, "model");
  if (model) {
    if (strcmp(model, "gemodel") == 0)
      rc = init_gemodel(&d, spec, err, errlen);
    else if (strcmp(model, "state") == 0)
      rc = init_4state(&d, spec, err, errlen);
    else if (strcmp(model, "random") == 0 || strcmp(model, "bernoulli") == 0) {
      if ((rc = need(spec, "p", "model=random", err, errlen)) < 0) return rc;
      rc = init_bernoulli(&d, spec, err, errlen);
    } else {
      return jct__spec_word_err(spec, jct__spec_find(spec, "model"), err, errlen,
                                "unknown loss model (random, gemodel, state)");
    }
  } else if (jct__spec_find(spec, "psn") >= 0 || jct__spec_find(spec, "qp") >= 0 ||
             jct__spec_find(spec, "pkt") >= 0 || jct__spec_find(spec, "qp-order") >= 0) {
    rc = init_psn(inj, &d, spec, err, errlen);
  } else if (jct__spec_find(spec, "every") >= 0) {
    rc = init_every(&d, spec, err, errlen);
  } else if (jct__spec_find(spec, "p") >= 0) {
    rc = init_bernoulli(&d, spec, err, errlen);
  } else {
    return jct__errf(err, errlen, JCT_EINVAL, "%s: drop needs p=, model=, every= or psn= (%s)",
                     spec->text, jct_drop_ops.usage);
  }
  if (rc < 0) return rc;
  *(drop_t *)inj->priv = d; /* all validated: now it applies */
  return 0;
}

/* at=host: the same decision for the kernel program (jctlab/kdrop.h),
 * every kind the switch runs: the program counts pkt= positions and finds
 * qp-order='s QP as this file does. */
static int drop_kernel(const jct_injector_t *inj, struct jct_kdrop_cfg *cfg, char *err,
                       size_t errlen) {
  const drop_t *d = inj->priv;
  memset(cfg, 0, sizeof *cfg);
  cfg->burst = d->burst;
  switch (d->mode) {
  case MODE_BERNOULLI:
    cfg->mode = JCT_KDROP_BERNOULLI;
    cfg->p = d->p;
    break;
  case MODE_GEMODEL:
    cfg->mode = JCT_KDROP_GEMODEL;
    cfg->p = d->p, cfg->r = d->r, cfg->lose_good = d->lose_good, cfg->lose_bad = d->lose_bad;
    break;
  case MODE_4STATE:
    cfg->mode = JCT_KDROP_4STATE;
    cfg->to4 = d->to4, cfg->to4_or_3 = d->to4_or_3, cfg->to2 = d->to2;
    cfg->to2_or_1 = d->to2_or_1, cfg->to3 = d->to3;
    break;
  case MODE_EVERY:
    cfg->mode = JCT_KDROP_EVERY;
    cfg->every = d->every;
    break;
  case MODE_PSN:
    if (d->unreached_first || d->epsn_mode != EPSN_ANY)
      return jct__errf(err, errlen, JCT_EINVAL, "%s: %s runs on the switch only, not at a host",
                       inj->spec, d->unreached_first ? "unreached=first" : "epsn=");
    cfg->mode = JCT_KDROP_PSN;
    cfg->qp = d->at.qp;
    cfg->by_msg = d->by_msg;
    cfg->any_qp = d->at.any_qp;
    cfg->qp_order = d->at.qp_order;
    for (unsigned op = 0; op < 256; op++) { /* where a message begins, as first_transmission */
      const struct jct_opcode_info *info = jct_opcode_info((uint8_t)op);
      if (info && info->pos & JCT_POS_FIRST) cfg->first_op[op >> 3] |= (uint8_t)(1u << (op & 7));
    }
    cfg->count = d->count;
    cfg->retransmissions = d->retransmissions;
    cfg->ntargets = d->npsn;
    for (uint32_t i = 0; i < d->npsn; i++) {
      if (d->copy[i])
        return jct__errf(err, errlen, JCT_EINVAL,
                         "%s: at a host a target cannot name its copy (#%u): the host's program "
                         "counts transmissions only",
                         inj->spec, d->copy[i]);
      cfg->psn[i] = d->psn[i], cfg->tx[i] = d->tx[i], cfg->msg[i] = d->msg_of[i];
      uint32_t same = 0;
      for (uint32_t j = 0; j <= i; j++)
        same += d->psn[j] == d->psn[i] && d->msg_of[j] == d->msg_of[i];
      if (same > JCT_KDROP_TX_PER_PSN)
        return jct__errf(err, errlen, JCT_EINVAL,
                         "%s: at a host one packet takes at most %d targets (%s %u has more)",
                         inj->spec, JCT_KDROP_TX_PER_PSN, d->by_msg ? "pkt" : "psn", d->psn[i]);
    }
    break;
  }
  return 0;
}

const struct jct_injector_ops jct_drop_ops = {
    .name = "drop",
    .usage = "drop p=P [burst=K] | model=gemodel p= [r= h= k=] | model=state p13= [p31= p32= "
             "p23= p14=] | every=N [burst=K] | psn=PSN[,PSN...] qp=QPN [count=C] "
             "[retransmissions=yes] | pkt=MSG:PKT[,...] [qp=QPN | qp-order=N] [count=C] "
             "[unreached=first] [epsn=expected|behind]; a target "
             "may end "
             "in @T, its T-th transmission (psn=105@2), and then #C, not before its C-th copy "
             "(pkt=3:7@2#3)",
    .priv_size = sizeof(drop_t),
    .init = drop_init,
    .process = drop_process,
    .kernel = drop_kernel,
};
