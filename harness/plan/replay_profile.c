/* A replay's fabric and transport from the capture's profile
 * (replay_profile.h). */
#include <math.h>
#include <string.h>
#include <stdio.h>

#include "common/errf.h"
#include "harness/base/units.h"
#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "jctlab/uroce.h"
#include "replay_profile.h"
#include "run_args.h"

/* rxe asks for an ACK every 64 packets (RXE_MAX_PKT_PER_ACK) and hands its
 * NIC at most 64 per QP (RXE_INFLIGHT_SKBS_PER_QP_HIGH) */
#define JCT__ACKREQ_PKTS 64

static const jct_profile_link_t *busiest(const jct_profile_t *p) {
  const jct_profile_link_t *best = NULL;
  for (uint32_t i = 0; i < p->nlinks; i++)
    if (p->links[i].rate_bps.mean && (!best || p->links[i].rate_bps.n > best->rate_bps.n))
      best = &p->links[i];
  return best;
}

/* The link whose mode holds the most back-to-back spacings: the rate the
 * captured NICs' bursts went at, the link's own (the lab's captures: their
 * 100 Mbit/s links, in 63 to 98% of each link's spacings). */
static const jct_profile_link_t *fullest_mode(const jct_profile_t *p) {
  const jct_profile_link_t *best = NULL;
  for (uint32_t i = 0; i < p->nlinks; i++)
    if (p->links[i].rate_bps.value && (!best || p->links[i].rate_mode_n > best->rate_mode_n))
      best = &p->links[i];
  return best;
}

/* Some rank both sends and receives data: its link carries its own data
 * beside its ACKs (a ring; not perftest's one way). */
static bool acks_behind_data(const jct_schedule_t *s) {
  for (uint32_t i = 0; i < s->nconns; i++)
    for (uint32_t j = 0; j < s->nconns; j++)
      if (s->conns[i].src == s->conns[j].dst) return true;
  return false;
}

uint64_t jct__replay_profile_verbs_rate(const jct_schedule_t *s, uint32_t user_set,
                                        const jct__replay_capture_t *capture,
                                        uint64_t sustained_bps, const jct_run_opts_t *o,
                                        char *why, size_t len) {
  const jct_profile_t *p = s->profile;
  if (!p || o->transport != JCT_TRANSPORT_VERBS || !capture->timer_recovers_loss ||
      capture->captured_rate_bps || (user_set & JCT__SET_RATE))
    return 0;
  const jct_profile_link_t *m = fullest_mode(p);
  int32_t exp = user_set & JCT__SET_TIMEOUT ? o->timeout : p->timeout_exp;
  if (!m || !sustained_bps || m->rate_bps.value <= sustained_bps || exp < 0) return 0;
  uint32_t mtu = o->path_mtu_bytes ? o->path_mtu_bytes : 4096;
  if (!(user_set & JCT__SET_PATH_MTU) && p->mtu_bytes.set) mtu = (uint32_t)p->mtu_bytes.value;
  bool behind = acks_behind_data(s);
  double bits =
      (behind ? 2.0 : 1.0) * JCT__ACKREQ_PKTS * 8.0 * (double)jct_uroce_full_packet_wire_bytes(mtu);
  double timer_ns = (double)jct_profile_timeout_ns(exp);
  if (bits * 1e9 / (double)sustained_bps < timer_ns) return 0;
  uint64_t rate = (uint64_t)ceil(bits * 1e9 / timer_ns / 1e3) * 1000; /* whole kbit/s */
  if (rate > m->rate_bps.value) rate = m->rate_bps.value;
  jct_run_opts_t t = *o;
  t.rate_bps = rate;
  jct_run_dilation_t d;
  jct_run_dilation(&t, &d);
  if (d.wall_rate_bps > (double)d.ceiling_bps) return 0;
  char sr[32], lr[32];
  snprintf(why, len,
           "on verbs the sustained %s raised to where rxe's %u packets a QP in its NIC%s drain "
           "within its timer of 2^%d (%.1f ms), at most the link's %s (the mode of %s > %s): "
           "slower, late ACKs would run out the timer that recovered the capture's losses",
           jct__fmt_rate(sustained_bps, sr, sizeof sr), JCT__ACKREQ_PKTS,
           behind ? ", twice that where the responder sends its own," : "", exp, timer_ns / 1e6,
           jct__fmt_rate(m->rate_bps.value, lr, sizeof lr), m->src, m->dst);
  return rate;
}

typedef struct {
  json_t *doc;
  uint32_t user_set;
  int failed;
} used_t;

/* Record a figure: the user's when bit is set, else the capture's when
 * have (then *field = v), else the default. */
static void figure(used_t *u, const char *key, uint32_t bit, bool have, uint64_t v, uint64_t *field,
                   const char *from) {
  const char *source = "default";
  if (u->user_set & bit)
    source = "user";
  else if (have)
    source = "capture", *field = v;
  json_t *o = json_pack("{s:I, s:s}", "value", (json_int_t)*field, "source", source);
  if (o && !strcmp(source, "capture") && from && json_object_set_new(o, "from", json_string(from)))
    u->failed = 1;
  if (!o || json_object_set_new(u->doc, key, o)) u->failed = 1;
}

/* The time dilation the replay's rate takes (run.h, jct_run_dilation):
 * chosen by the capture (its rate, from_capture, or the lab's floor for
 * its held host pauses, d.floored), by the user (--tdf, or a --rate above
 * the ceiling), or none. */
static void tdf_figure(used_t *u, const jct_run_opts_t *o, bool from_capture) {
  jct_run_dilation_t d;
  jct_run_dilation(o, &d);
  const char *source = o->tdf > 0                  ? "user"
                       : d.tdf == 1                ? "default"
                       : d.floored || from_capture ? "capture"
                                                   : "user";
  char from[400], r[32], c[32];
  jct__fmt_rate((uint64_t)d.wall_rate_bps, r, sizeof r);
  jct__fmt_rate(d.ceiling_bps, c, sizeof c);
  if (o->tdf > 0)
    snprintf(from, sizeof from, "--tdf: the links at %s here", r);
  else if (d.floored)
    snprintf(from, sizeof from,
             "the capture's host pauses (transmit stalls, late ACKs) are held in the lab: at "
             "least x%g, so that its VMs' own, undilated as long as the captured hosts' were, "
             "count %g times less beside them (the links at %s here)",
             d.tdf, d.tdf, r);
  else if (d.tdf == 1 && jct_run_in_lab(o))
    snprintf(from, sizeof from,
             "the rate is at most the ceiling of %s and no host pause of the capture is held: "
             "none, the lab's VMs at their own pace (a requester slower than its link goes back "
             "as deep as it sent while its NAK came, not as deep as a dilated VM's NIC queue)",
             c);
  else if (d.tdf > 1)
    snprintf(from, sizeof from,
             "the rate over the ceiling of %s: the smallest power of two that brings the links "
             "under it (%s here); every time reported / F",
             c, r);
  else
    snprintf(from, sizeof from, "the rate is at most the ceiling of %s: none", c);
  json_t *f = json_pack("{s:f, s:s, s:s}", "value", d.tdf, "source", source, "from", from);
  if (!f || json_object_set_new(u->doc, "tdf", f)) u->failed = 1;
}

int jct__replay_profile_apply(const jct_schedule_t *s, uint32_t user_set,
                              const jct__replay_capture_t *capture, jct_run_opts_t *o,
                              json_t **used, char *err, size_t errlen) {
  *used = NULL;
  o->ngo_backs = 0;
  const jct_profile_t *p = s->profile;
  if (!p) return 0;
  if (!(user_set & JCT__SET_PATH_MTU) && p->mtu_bytes.set) {
    uint64_t m = p->mtu_bytes.value;
    if (m < 256 || m > 4096 || (m & (m - 1)))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "the capture's path MTU is %llu bytes, which RoCE lacks (256, 512, 1024, "
                       "2048 or 4096): give --path-mtu",
                       (unsigned long long)m);
  }
  const jct_profile_link_t *l = busiest(p);
  /* A replay that holds the capture's stalls (o->nstalls) takes them out of the link's time. */
  uint64_t cap_rate = capture->captured_rate_bps ? capture->captured_rate_bps
                      : l ? (o->nstalls ? jct_profile_link_unstalled_bps(l) : l->rate_bps.mean)
                          : 0;
  bool unstalled = !capture->captured_rate_bps && l && o->nstalls && cap_rate != l->rate_bps.mean;
  if (!(user_set & JCT__SET_RATE) && cap_rate) {
    jct_run_opts_t t = *o;
    t.rate_bps = cap_rate;
    jct_run_dilation_t d;
    jct_run_dilation(&t, &d);
    if (d.wall_rate_bps > (double)d.ceiling_bps) {
      char r[32], w[32], c[32];
      return jct__errf(err, errlen, JCT_EINVAL,
                       "the capture's link rate %s is beyond what this machine emulates even "
                       "dilated x%g (its links at %s here, over the ceiling of %s): give --rate",
                       jct__fmt_rate(cap_rate, r, sizeof r), d.tdf,
                       jct__fmt_rate((uint64_t)d.wall_rate_bps, w, sizeof w),
                       jct__fmt_rate(d.ceiling_bps, c, sizeof c));
    }
  }
  used_t u = {.doc = json_object(), .user_set = user_set};
  if (!u.doc) return JCT_ENOMEM;
  char from[512];
  uint64_t v;

  char timer_why[512] = "";
  uint64_t timer_rate = jct__replay_profile_verbs_rate(s, user_set, capture, cap_rate, o,
                                                       timer_why, sizeof timer_why);
  if (timer_rate) cap_rate = timer_rate;
  if (capture->captured_rate_bps)
    snprintf(from, sizeof from, "--captured-rate");
  else if (timer_rate)
    snprintf(from, sizeof from, "%s", timer_why);
  else
    snprintf(from, sizeof from, "sustained rate of %s > %s%s", l ? l->src : "", l ? l->dst : "",
             unstalled ? ", less its sender's transmit stalls (held apart)" : "");
  v = o->rate_bps;
  figure(&u, "rate_bps", JCT__SET_RATE, cap_rate != 0, cap_rate, &v, from);
  o->rate_bps = v;

  const jct_figure_t *hn = &p->hole_to_nak_ns;
  v = o->prop_delay_ns;
  figure(&u, "prop_delay_ns", JCT__SET_DELAY, false, 0, &v, NULL);
  o->prop_delay_ns = v;

  v = o->path_mtu_bytes ? o->path_mtu_bytes : 4096;
  figure(&u, "path_mtu_bytes", JCT__SET_PATH_MTU, p->mtu_bytes.set, p->mtu_bytes.value, &v,
         "payload of FIRST and MIDDLE packets");
  o->path_mtu_bytes = (uint32_t)v;

  /* The capture's go-backs, each as deep: they hold what the NIC queue held. */
  bool per_loss = capture->ngo_backs && o->transport == JCT_TRANSPORT_UROCE &&
                  !(user_set & (JCT__SET_NIC_QUEUE | JCT__SET_NAK_REACT));
  if (per_loss) o->ngo_backs = capture->ngo_backs;
  v = o->ngo_backs;
  figure(&u, "go_backs", JCT__SET_NIC_QUEUE | JCT__SET_NAK_REACT, per_loss, capture->ngo_backs, &v,
         "the capture's go-backs, each at the same packet: after NAKs as deep (PSNs re-sent), "
         "with no NAK (timer) as long after its message's start");

  /* Flow control: NCCL's 8 buffers ahead, or none as the captured job. */
  v = o->cts_slots == JCT_EXEC_NO_CTS ? 0 : JCT_EXEC_DEFAULT_SLOTS;
  figure(&u, "cts_slots", 0, capture->no_cts && o->transport == JCT_TRANSPORT_UROCE, 0, &v,
         "the capture has no clear-to-sends: every message posted as soon as it may start");
  o->cts_slots = v ? 0 : JCT_EXEC_NO_CTS;

  const double pkt_bits = 8.0 * (double)jct_uroce_full_packet_wire_bytes(o->path_mtu_bytes);
  /* Past the NAKed PSN, what the link sent in the recovery time; the rest queued. */
  const jct_figure_t *gb = &p->go_back_psns, *nr = &p->nak_to_resend_ns;
  bool have_q = gb->set && hn->set && nr->set && o->rate_bps;
  uint64_t q = 0;
  if (have_q) {
    double flight = (double)(hn->value + nr->value) * 1e-9 * (double)o->rate_bps / pkt_bits;
    double rest = (double)gb->value - flight;
    q = rest > 0 ? (uint64_t)llround(rest) : 0;
    if (q > 4096) q = 4096;
  }
  v = o->nic_queue_pkts;
  if (per_loss)
    figure(&u, "nic_queue_pkts", JCT__SET_NIC_QUEUE, true, 0, &v,
           "none: the capture's go-backs, each as deep, hold what it held");
  else
    figure(&u, "nic_queue_pkts", JCT__SET_NIC_QUEUE, have_q, q, &v,
           "median go-back depth less the packets sent in the median recovery time");
  o->nic_queue_pkts = (uint32_t)v;

  v = o->nak_delay_ns;
  figure(&u, "nak_delay_ns", JCT__SET_NAK_DELAY, hn->set, hn->value, &v,
         "the median hole -> NAK latency");
  o->nak_delay_ns = v;

  /* The resend waits behind the NIC's queue: the rest is the reaction. */
  uint64_t queued_ns =
      o->rate_bps ? (uint64_t)((double)o->nic_queue_pkts * pkt_bits * 1e9 / (double)o->rate_bps)
                  : 0;
  v = o->nak_react_ns;
  figure(&u, "nak_react_ns", JCT__SET_NAK_REACT, nr->set,
         nr->value > queued_ns ? nr->value - queued_ns : 0, &v,
         "the median NAK -> retransmission latency less the NIC queue's drain");
  o->nak_react_ns = v;

  /* uroce: a timer shorter than two AckReq intervals take at the rate
   * fires on every window (replay_profile.h): the shortest exponent that
   * does not. verbs: rxe runs its own timer (qp attr timeout), the
   * capture's, unless its NIC queue (one AckReq interval of packets)
   * outlasts it at this rate: the shortest exponent that it does not. */
  bool verbs = o->transport == JCT_TRANSPORT_VERBS;
  uint64_t window_ns =
      o->rate_bps ? (uint64_t)(2.0 * JCT__ACKREQ_PKTS * pkt_bits * 1e9 / (double)o->rate_bps) : 0;
  uint64_t floor_ns = verbs ? window_ns / 2 : window_ns;
  int32_t exp = p->timeout_exp;
  bool timer = exp >= 0 && jct_profile_timeout_ns(exp) > floor_ns;
  while (exp >= 0 && exp < 31 && jct_profile_timeout_ns(exp) <= floor_ns)
    exp++; /* the shortest that would not */
  char why[400], src[120] = "the retransmit timeout, 4.096 us x 2^timeout";
  if (p->timeout_timer_go_backs)
    snprintf(src, sizeof src,
             "the retransmit timer of the capture's %u timer go-backs (from rxe's reference), "
             "4.096 us x 2^timeout",
             p->timeout_timer_go_backs);
  if (timer && verbs && jct_profile_timeout_ns(exp) <= window_ns)
    snprintf(why, sizeof why,
             "%s; on verbs as captured: rxe runs it as the capture's rxe did (uroce would take the "
             "shortest longer than two AckReq intervals at this rate)",
             src);
  else if (timer)
    snprintf(why, sizeof why, "%s", src);
  else if (verbs)
    snprintf(why, sizeof why,
             "%s: the capture's 2^%d is shorter than rxe's NIC queue of %u packets takes at "
             "this rate (its timer would fire on packets still queued, which the captured rxe's "
             "faster link never held): the shortest that is not",
             src, p->timeout_exp, JCT__ACKREQ_PKTS);
  else
    snprintf(why, sizeof why,
             "%s: the capture's 2^%d is shorter than two AckReq intervals at this rate (uroce "
             "paces every window at it: its timer would fire on each); the shortest that is not",
             src, p->timeout_exp);
  v = o->timeout;
  figure(&u, "timeout", JCT__SET_TIMEOUT, exp >= 0, (uint64_t)exp, &v, why);
  o->timeout = (uint8_t)v;
  o->timeout_captured = verbs && exp >= 0 && !(user_set & JCT__SET_TIMEOUT);

  v = o->retry_cnt;
  figure(&u, "retry_cnt", JCT__SET_RETRY, false, 0, &v, NULL);

  tdf_figure(&u, o, cap_rate != 0 && !(user_set & JCT__SET_RATE));
  if (u.failed) {
    json_decref(u.doc);
    return JCT_ENOMEM;
  }
  *used = u.doc;
  return 0;
}
