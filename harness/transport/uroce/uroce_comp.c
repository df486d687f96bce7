/* uroce completer: turning the peer's ACK/NAKs and the retransmit timer into
 * progress: completed messages, or a restart of the send stream.
 *
 * Sources: IBA Vol. 1 ch. 9 (9.7.5.1 ACK/NAK generation and their
 * cumulative meaning, 9.7.5.2 NAK codes, 9.7.6.1 the requester's timers
 * and retry counter) and Linux rxe_comp.c (check_psn, check_ack,
 * do_complete, COMPST_ERROR_RETRY, rxe_retransmit_timer).
 *
 * - An ACK with PSN p retires every PSN up to p (ACKs are cumulative) and
 *   completes the messages that end there (SEND_DONE, in order). An ACK of
 *   the PSN before the oldest unacknowledged one is a repeat: accepted, no
 *   progress. An ACK outside that range (older, or for a PSN never sent) is
 *   stale and ignored.
 * - A NAK PSN-sequence-error with PSN p implicitly acknowledges everything
 *   before p and restarts the send stream at p (go-back-N). As the issue
 *   asks, a NAK does not use up the retry counter; rxe decrements it for
 *   NAKs as for timeouts (both go through COMPST_ERROR_RETRY).
 * - One go-back at a time, as rxe: once a NAK or the timer has restarted
 *   the stream, a further NAK is ignored (its implicit ACK still counts)
 *   until an ACK makes progress (rxe_comp.c: COMPST_ERROR_RETRY returns
 *   while comp.started_retry is set and the timer did not fire; check_psn
 *   and check_ack clear it through reset_retry_counters). So a second loss
 *   in the same stretch between ACKs (a lost retransmission, or a loss
 *   behind the first one's go-back) waits for the retransmit timer, which
 *   always restarts the stream.
 * - A slow host (cfg.nak_react_ns): the NAK's implicit ACK counts at once,
 *   its go-back starts that much later, and the requester sends on
 *   meanwhile (rxe hands the NAK to its completer task, which the
 *   requester's task runs beside).
 * - A captured requester (cfg.go_backs, a postmortem's): a NAK naming a
 *   packet the capture shows a go-back from goes back as deep as the
 *   capture's did: the requester sends on until it has sent that many PSNs
 *   from the NAKed one, or may send nothing more, then goes back (the QP
 *   file checks before each transmit pull and after each receive). rxe's
 *   depth is its hosts' timing (how many packets its requester task had
 *   handed to the kernel, and sent on, before its completer task acted on
 *   the NAK), which no constant reproduces: in the shipped capture a go-back
 *   re-sends 5 PSNs at one loss and 116 at another. When it may send
 *   nothing more before that depth, it goes back no earlier than the
 *   capture's NAK → go-back time (nak_to_resend_ns) after the NAK: with
 *   nothing in flight, the shipped capture's rxe still took 45-84 ms to
 *   act on its last NAKs, where going back at once took microseconds.
 *   How far it has sent is where its requester is (next PSN), not the
 *   highest PSN it ever sent: a NAK that arrives while a go-back re-sends
 *   lets it re-send on to that depth first (the shipped capture's NAK of
 *   PSN 1130004 came once its go-back had re-sent the 26 PSNs from it; the
 *   replay's, on a slower link, came 12 PSNs in). Meanwhile the QP's
 *   retransmit timer waits for it. A NAK ignored during a go-back (above)
 *   whose packet the capture shows a go-back at: on the wire that go-back
 *   was rxe's timer's (rxe_comp.c ignores the NAK as uroce does), as late
 *   after the NAK as the capture's, which the timer does not fire before
 *   (the shipped capture's rxe went back to PSN 1130005 84 ms after its
 *   NAK: its 67 ms timer and its host's lag, which the replay's timer alone
 *   would cut short).
 * - A captured timer go-back (cfg.go_backs timer_ns, a postmortem's; the
 *   requester arms it): an ACK acted on while PSNs are outstanding
 *   restarts it, timer_ns ahead (rxe restarts its timer on the completer's
 *   way out, COMPST_EXIT; a NAK does not: it sends the requester back to
 *   the NAKed PSN, so nothing is outstanding then). Until it is due, an
 *   ACK of its packet or later
 *   retires only the PSNs before that packet, and the rest of it is dropped
 *   (rx_acks_held), as if it had not reached the requester: the capture's
 *   rxe went back with no NAK, its ACK not acted on (an ACK slow or lost
 *   past the capture point, a slow completer task). When due it goes back
 *   to the oldest unacknowledged PSN as the timer does, counted as a
 *   timeout; the retry counter is left alone (what it stands for is
 *   recovered, not retried). Its ACKs stay held until the requester has
 *   re-sent as many PSNs as the capture's go-back did (or all it had sent):
 *   rxe's requester task re-sends its burst before the duplicates' ACKs
 *   reach the completer, where a prompt ACK would cut uroce's short.
 *   Capture order: one that runs out while a NAK's captured go-back that
 *   the capture showed before it still waits (go_back_ahead) waits too,
 *   and goes back its idle_ns after that go-back (uroce.h).
 * - A captured transmit stall (uroce_req.c) stops the QP's own retransmit
 *   timer: restarted during one, it starts at its end (uroce_loc.h).
 * - RNR NAKs and the other NAK codes are dropped as malformed: this
 *   responder never sends them.
 * - The retransmit timer (local ACK timeout, 4.096 us * 2^timeout; timeout
 *   0 means no timer, IBA 9.7.6.1.3) is started by the requester when a
 *   packet is sent and the timer is not running, restarted here whenever an
 *   ACK or NAK makes progress while PSNs are outstanding, and stopped when
 *   none are (rxe: mod_timer in update_state and at COMPST_EXIT). On expiry
 *   with PSNs outstanding the stream restarts at the oldest unacknowledged
 *   PSN and the retry counter is decremented; an expiry with the counter
 *   at 0 puts the QP in error (the QP file does it) and every pending
 *   message completes with RETRY_EXC_ERR (verbs would give the first
 *   RETRY_EXC and the rest WR_FLUSH_ERR; the issue asks for one status).
 *   So retry_cnt r fails on the (r+1)th expiry. IBA: retry_cnt 7 means
 *   seven retries; rxe treats 7 as "infinite" (it never decrements a count
 *   of 7) - we follow IBA, as hardware does. Progress (an ACK or NAK that
 *   retires PSNs) reloads the retry counter (rxe reset_retry_counters).
 */
#include "uroce_loc.h"

/* Point the requester's next PSN (and the message holding it) at psn. */
static void set_next_psn(jct_uroce_qp_t *qp, uint32_t psn) {
  struct jct__uroce_req *r = &qp->req;
  r->next_psn = psn;
  r->cur_seq = qp->sq.head_seq;
  while (r->cur_seq != qp->sq.tail_seq &&
         jct_psn_diff(psn, jct__uroce_wqe_end_psn(jct__uroce_wqe_at(qp, r->cur_seq))) >= 0)
    r->cur_seq++;
}

/* Restart the timer while PSNs are outstanding, stop it when none are. */
static void restart_timer(jct_uroce_qp_t *qp, uint64_t now_ns) {
  qp->retrans_deadline_ns = qp->ack_timeout_ns && qp->comp.una_psn != qp->req.max_psn
                                ? jct__uroce_timer_start_ns(qp, now_ns) + qp->ack_timeout_ns
                                : UINT64_MAX;
}

static jct_uroce_event_t send_done(const struct jct__uroce_wqe *w, jct_uroce_wc_status_t status,
                                   uint64_t now_ns) {
  jct_uroce_event_t ev = {.type = JCT_UROCE_EV_SEND_DONE,
                          .status = status,
                          .wr_id = w->wr_id,
                          .bytes = w->bytes,
                          .has_imm = w->has_imm,
                          .imm = w->imm,
                          .time_ns = now_ns};
  return ev;
}

/* Everything before psn is acknowledged: retire it, complete messages. */
static void acknowledge(jct_uroce_qp_t *qp, uint32_t psn, uint64_t now_ns) {
  struct jct__uroce_sq *sq = &qp->sq;
  qp->comp.una_psn = psn;
  qp->comp.retry_left = qp->cfg.retry_cnt;
  if (qp->captured.timer_floor_ns && jct_psn_diff(psn, qp->comp.ignored_psn) > 0)
    qp->captured.timer_floor_ns = 0; /* the ignored NAK's packet arrived after all */
  if (jct_psn_diff(qp->req.next_psn, psn) < 0) set_next_psn(qp, psn);
  restart_timer(qp, now_ns);
  while (sq->head_seq != sq->tail_seq) {
    const struct jct__uroce_wqe *w = jct__uroce_wqe_at(qp, sq->head_seq);
    if (jct_psn_diff(psn, jct__uroce_wqe_end_psn(w)) < 0) break;
    jct_uroce_event_t ev = send_done(w, JCT_UROCE_WC_SUCCESS, now_ns);
    if (qp->req.cur_seq == sq->head_seq) qp->req.cur_seq++;
    sq->head_seq++;
    qp->stats.msgs_sent++;
    jct__uroce_emit(qp, &ev); /* may post: tail_seq moves, nothing else */
  }
}

/* Restart the send stream at psn. */
static void go_back_n(jct_uroce_qp_t *qp, uint32_t psn, uint64_t now_ns) {
  qp->comp.go_back_due_ns = UINT64_MAX; /* this one replaces any pending */
  qp->captured.go_back_ahead = 0;
  qp->captured.go_back_hold_ns = 0;
  qp->captured.hole_ahead = 0;
  qp->comp.nak_ignored = false;
  qp->captured.timer_floor_ns = 0;
  set_next_psn(qp, psn);
  qp->stats.go_back_n++;
  qp->comp.started_retry = true;
  if (qp->ack_timeout_ns)
    qp->retrans_deadline_ns = jct__uroce_timer_start_ns(qp, now_ns) + qp->ack_timeout_ns;
}

/* The first captured go-back (cfg.go_backs) this repetition has not used
 * for the packet at psn (its message counted from the repetition's first),
 * or -1. */
static long captured_go_back(const jct_uroce_qp_t *qp, uint32_t psn) {
  if (!qp->cfg.ngo_backs) return -1;
  uint32_t seq = qp->sq.head_seq;
  while (seq != qp->sq.tail_seq &&
         jct_psn_diff(psn, jct__uroce_wqe_end_psn(jct__uroce_wqe_at(qp, seq))) >= 0)
    seq++;
  if (seq == qp->sq.tail_seq) return -1;
  int32_t pkt = jct_psn_diff(psn, jct__uroce_wqe_at(qp, seq)->first_psn);
  uint32_t msg = seq - qp->rep_seq;
  for (uint32_t i = 0; pkt >= 0 && i < qp->cfg.ngo_backs; i++)
    if (!qp->captured.used[i] && qp->captured.go_backs[i].ahead_psns && !qp->captured.go_backs[i].timer_ns &&
        qp->captured.go_backs[i].msg == msg && qp->captured.go_backs[i].pkt == (uint32_t)pkt)
      return (long)i;
  return -1;
}

jct_uroce_rx_t jct__uroce_comp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  uint64_t now_ns) {
  uint32_t una = qp->comp.una_psn, max = qp->req.max_psn;
  uint32_t psn = h->bth.psn;
  uint8_t syn = h->aeth.syndrome;
  enum jct_aeth_type type = jct_aeth_type(syn);

  if (qp->captured.timer_hold && jct_psn_diff(qp->req.next_psn, qp->captured.timer_end) >= 0)
    qp->captured.timer_hold = false; /* re-sent as deep as the capture's */
  bool held = (qp->captured.timer_due_ns != UINT64_MAX || qp->captured.timer_hold) &&
              jct_psn_diff(psn, qp->captured.timer_psn) >= 0;
  if (held && type == JCT_AETH_ACK) { /* only what comes before the timer go-back's packet */
    qp->stats.rx_acks++;
    qp->stats.rx_acks_held++;
    if (jct_psn_diff(qp->captured.timer_psn, una) > 0) acknowledge(qp, qp->captured.timer_psn, now_ns);
    return JCT_UROCE_RX_IGNORED;
  }
  if (type == JCT_AETH_ACK) {
    qp->stats.rx_acks++;
    if (qp->captured.hole_ahead && jct_psn_diff(psn, qp->captured.hole_psn) >= 0)
      qp->captured.hole_ahead = 0; /* the captured hole's packet got through */
    /* valid: una - 1 (a repeat, no progress) .. max_psn - 1 */
    if (jct_psn_diff(psn, una) < -1 || jct_psn_diff(psn, max) >= 0) {
      qp->stats.rx_stale_acks++;
      return JCT_UROCE_RX_IGNORED;
    }
    if (jct_psn_diff(psn, una) >= 0) {
      acknowledge(qp, jct_psn_add(psn, 1), now_ns);
      qp->comp.started_retry = false;
    }
    if (qp->captured.timer_due_ns != UINT64_MAX && qp->comp.una_psn != qp->req.max_psn)
      qp->captured.timer_due_ns = now_ns + qp->captured.timer_ns; /* rxe: COMPST_EXIT's mod_timer */
    return JCT_UROCE_RX_ACCEPTED;
  }
  if (type == JCT_AETH_NAK && jct_aeth_value(syn) == JCT_NAK_PSN_SEQ_ERR) {
    qp->stats.rx_naks++;
    qp->captured.hole_ahead = 0; /* heard of: its captured go-back holds the depth now */
    if (jct_psn_diff(psn, una) < 0 || jct_psn_diff(psn, max) >= 0) {
      qp->stats.rx_stale_acks++;
      return JCT_UROCE_RX_IGNORED;
    }
    if (jct_psn_diff(psn, una) > 0) acknowledge(qp, psn, now_ns); /* implicit ACK */
    if (qp->comp.started_retry) {
      qp->stats.rx_naks_ignored++;
      qp->comp.nak_ignored = true;
      qp->comp.ignored_psn = psn;
      long g = captured_go_back(qp, psn);
      if (g >= 0 && qp->captured.go_backs[g].nak_to_resend_ns) { /* its go-back was the timer's */
        qp->captured.used[g] = true;
        qp->captured.timer_floor_ns = now_ns + qp->captured.go_backs[g].nak_to_resend_ns;
      }
      return JCT_UROCE_RX_ACCEPTED;
    }
    if (qp->error) return JCT_UROCE_RX_ACCEPTED;
    long g = captured_go_back(qp, psn);
    if (g >= 0) { /* as far as the captured requester got: the QP file starts it */
      qp->captured.used[g] = true;
      qp->captured.go_back_idx = (uint32_t)g;
      qp->stats.go_back_captured++;
      qp->comp.started_retry = true;
      qp->comp.go_back_psn = psn;
      qp->captured.go_back_ahead = qp->captured.go_backs[g].ahead_psns;
      uint64_t react = qp->captured.go_backs[g].nak_to_resend_ns;
      qp->captured.go_back_hold_ns = react ? now_ns + react : 0;
    } else if (!qp->cfg.nak_react_ns) {
      go_back_n(qp, psn, now_ns);
    } else { /* a slow host: the go-back starts later, new packets go out meanwhile */
      qp->comp.started_retry = true;
      qp->comp.go_back_psn = psn;
      qp->comp.go_back_due_ns = now_ns + qp->cfg.nak_react_ns;
    }
    return JCT_UROCE_RX_ACCEPTED;
  }
  qp->stats.rx_malformed++;
  return JCT_UROCE_RX_IGNORED;
}

/* How long after the NAK's captured go-back a timer go-back that ran out
 * before it goes back (uroce.h: capture order). */
static uint64_t timer_gap_ns(const jct_uroce_qp_t *qp) {
  return qp->captured.timer_idle_ns > 1000 ? qp->captured.timer_idle_ns : 1000;
}

/* Whether the pending NAK's captured go-back came before the armed timer
 * go-back in the capture. */
static bool timer_waits(const jct_uroce_qp_t *qp) {
  return qp->captured.go_back_ahead && qp->captured.go_back_idx < qp->captured.timer_idx;
}

void jct__uroce_comp_timer_go_back(jct_uroce_qp_t *qp, uint64_t now_ns) {
  if (now_ns < qp->captured.timer_due_ns) return;
  if (timer_waits(qp)) { /* the capture's went back after that NAK's: so does this */
    uint64_t from = qp->captured.go_back_hold_ns > now_ns ? qp->captured.go_back_hold_ns : now_ns;
    qp->captured.timer_due_ns = from + timer_gap_ns(qp);
    return;
  }
  qp->captured.timer_due_ns = UINT64_MAX;
  if (qp->comp.una_psn == qp->req.max_psn) return; /* nothing outstanding: a NAK went first */
  qp->stats.timeouts++;
  qp->stats.go_back_timer++;
  uint32_t sent = (uint32_t)jct_psn_diff(qp->req.max_psn, qp->comp.una_psn);
  uint32_t deep = qp->captured.timer_ahead < sent ? qp->captured.timer_ahead : sent;
  qp->captured.timer_hold = deep > 0;
  qp->captured.timer_end = jct_psn_add(qp->comp.una_psn, deep);
  go_back_n(qp, qp->comp.una_psn, now_ns);
}

void jct__uroce_comp_go_back_due(jct_uroce_qp_t *qp, uint64_t now_ns) {
  if (now_ns < qp->comp.go_back_due_ns) return;
  /* PSNs the implicit and later ACKs retired are not resent. */
  uint32_t psn = qp->comp.go_back_psn;
  if (jct_psn_diff(psn, qp->comp.una_psn) < 0) psn = qp->comp.una_psn;
  go_back_n(qp, psn, now_ns);
}

bool jct__uroce_comp_go_back_holds(const jct_uroce_qp_t *qp) {
  return qp->captured.go_back_ahead &&
         jct_psn_diff(qp->req.next_psn, qp->comp.go_back_psn) >= (int32_t)qp->captured.go_back_ahead;
}

void jct__uroce_comp_go_back_deep(jct_uroce_qp_t *qp, bool ready, uint64_t now_ns) {
  if (!qp->captured.go_back_ahead) return;
  uint32_t psn = qp->comp.go_back_psn;
  if (ready && jct_psn_diff(qp->req.next_psn, psn) < (int32_t)qp->captured.go_back_ahead) return;
  if (now_ns < qp->captured.go_back_hold_ns) return; /* the capture's reaction, nothing sent */
  if (jct_psn_diff(psn, qp->comp.una_psn) < 0) psn = qp->comp.una_psn;
  bool waited = qp->captured.timer_due_ns != UINT64_MAX && timer_waits(qp);
  go_back_n(qp, psn, now_ns);
  if (waited && qp->captured.timer_due_ns < now_ns + timer_gap_ns(qp))
    qp->captured.timer_due_ns = now_ns + timer_gap_ns(qp); /* the timer's goes back after it */
}

bool jct__uroce_comp_timeout(jct_uroce_qp_t *qp, uint64_t now_ns) {
  if (qp->comp.una_psn == qp->req.max_psn) return false; /* spurious: all acknowledged */
  qp->stats.timeouts++;
  if (qp->comp.nak_ignored && qp->comp.ignored_psn == qp->comp.una_psn)
    qp->stats.timeouts_after_nak++; /* the wire shows it as that NAK's go-back */
  if (qp->comp.retry_left == 0) return true;
  qp->comp.retry_left--;
  go_back_n(qp, qp->comp.una_psn, now_ns);
  return false;
}

void jct__uroce_comp_flush(jct_uroce_qp_t *qp, uint64_t now_ns) {
  struct jct__uroce_sq *sq = &qp->sq;
  while (sq->head_seq != sq->tail_seq) {
    jct_uroce_event_t ev =
        send_done(jct__uroce_wqe_at(qp, sq->head_seq), JCT_UROCE_WC_RETRY_EXC_ERR, now_ns);
    sq->head_seq++;
    jct__uroce_emit(qp, &ev); /* posts fail now: the QP is in error */
  }
  qp->req.cur_seq = sq->head_seq;
}
