/* The report of an inferred schedule, as text and as JSON
 * (schedule_report.h). The words say what each figure means, so that a
 * person can judge whether the schedule is fit to replay. */
#include <stdio.h>

#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "schedule_report.h"
#include "harness/base/units.h"

#define RANKS_LISTED 8u

static const char *plural(uint64_t n) {
  return n == 1 ? "" : "s";
}

static void text_schedule(FILE *o, const jct_schedule_t *s, const jct_infer_report_t *r) {
  char b1[32], b2[32], a[48];
  fprintf(o, "Schedule   %u rank%s, %u connection%s, %u op%s, %s in all\n", r->ranks,
          plural(r->ranks), r->connections, plural(r->connections), r->ops, plural(r->ops),
          jct__fmt_bytes(r->total_bytes, b1, sizeof b1));
  fprintf(o, "           ranks by address:");
  for (uint32_t i = 0; i < r->ranks && i < RANKS_LISTED; i++)
    fprintf(o, " %u=%s", i, jct_addr_str(&r->rank_addr[i], a, sizeof a));
  fprintf(o, "%s\n", r->ranks > RANKS_LISTED ? " ..." : "");
  fprintf(o, "Pattern    %s: %s\n", r->pattern, r->evidence);
  if (r->bytes_estimate)
    fprintf(o, "           S = %s (the collective's size%s)\n",
            jct__fmt_bytes(r->bytes_estimate, b2, sizeof b2),
            r->repetitions > 1 ? ", per repetition" : "");
  (void)s;
}

static void text_confidence(FILE *o, const jct_infer_report_t *r) {
  char g1[32], g2[32], g3[32];
  fprintf(o,
          "Deps       %u of %u ops wait for something: %u dep%s on a message their rank received "
          "before they started, %u on their rank's own earlier sends (program order)",
          r->ops_with_deps, r->ops, r->deps_received, plural(r->deps_received),
          r->deps_program_order);
  if (r->ops_with_deps)
    fprintf(o,
            "; gap (the rank's compute) median %s, max %s, after taking %s of turnaround "
            "(the network's share) off each",
            jct__fmt_ns(r->gap_median_ns, g1, sizeof g1), jct__fmt_ns(r->gap_max_ns, g2, sizeof g2),
            jct__fmt_ns(r->turnaround_ns, g3, sizeof g3));
  fprintf(o, "\n");
  fprintf(o,
          "Order      %u op%s started after %s rank had nothing in flight for longer than any "
          "message took (%s) and no message received explains the pause (compute, or control "
          "traffic the replay leaves out)%s\n",
          r->ops_program_order, plural(r->ops_program_order),
          r->ops_program_order == 1 ? "its" : "their",
          jct__fmt_ns(r->order_pause_ns, g1, sizeof g1),
          r->ops_program_order == 1 ? ": it waits for its rank's sends before the pause, then "
                                      "the pause as its gap"
          : r->ops_program_order    ? ": each waits for its rank's sends before the pause, then "
                                      "the pause as its gap"
                                    : "");
  fprintf(o,
          "Confidence %u never completed at the capture point; %u started after all of their "
          "rank's earlier sends, the last well after their deps (maybe queued behind them: deps "
          "less certain)\n",
          r->ops_incomplete, r->ops_queued);
  fprintf(o, "Clock      %llu frame%s out of time order, %u message%s received before sent%s\n",
          (unsigned long long)r->frames_backwards, plural(r->frames_backwards), r->skewed_messages,
          plural(r->skewed_messages),
          r->frames_backwards || r->skewed_messages ? ": clock skew, deps are suspect"
                                                    : ": no sign of clock skew");
}

/* Op's place among its connection's ops (the schedule's order is each
 * connection's send order). */
static uint32_t position(const jct_schedule_t *s, uint32_t op) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < op && i < s->nops; i++)
    k += s->ops[i].conn == s->ops[op].conn;
  return k;
}

static void text_faults(FILE *o, const jct_schedule_t *s, const jct_infer_report_t *r,
                        unsigned max_faults) {
  uint32_t tail = 0, timeout = 0, again = 0, before = 0, retx = 0, lost_tx = 0, behind = 0;
  for (uint32_t i = 0; i < r->nfaults; i++) {
    const jct_infer_fault_t *f = &r->faults[i];
    for (uint32_t c = 0; c < JCT_INFER_MAX_COPIES && f->copies[c]; c++)
      lost_tx++, behind += (f->behind >> c) & 1u;
    tail += f->tail;
    timeout += f->timeout;
    again += f->again > 0;
    retx += f->retransmission;
    before += f->before_capture && !f->retransmission;
  }
  fprintf(o,
          "Losses     %u packet%s lost: %u first transmissions before the capture point, %u "
          "after it, %u retransmissions (the first got through); %u the last of its message, "
          "%u recovered by timeout, %u lost again when re-sent; %llu packets re-sent in all\n",
          r->nfaults, plural(r->nfaults), before, r->nfaults - before - retx, retx, tail, timeout,
          again, (unsigned long long)r->retransmitted_packets);
  fprintf(o,
          "           %u of %u lost transmissions came behind a hole (an earlier PSN still "
          "missing: the responder discarded them, no NAK of their own), %u at the expected PSN\n",
          behind, lost_tx, lost_tx - behind);
  for (uint32_t i = 0; i < r->nfaults && i < max_faults; i++) {
    const jct_infer_fault_t *f = &r->faults[i];
    if (f->cts && f->op < s->nops)
      fprintf(o, "           op %u's clear-to-send (connection %u's, position %u), psn %u", f->op,
              s->ops[f->op].conn, position(s, f->op), f->psn);
    else
      fprintf(o, "           op %u: offset %llu, psn %u%s", f->op,
              (unsigned long long)f->offset_bytes, f->psn, f->tail ? " (last packet)" : "");
    fprintf(o, ": %s, recovered by %s%s\n",
            f->retransmission   ? "a retransmission lost"
            : f->before_capture ? "lost before the capture point"
                                : "lost after the capture point",
            f->timeout ? "timeout" : "NAK", f->again ? ", lost again when re-sent" : "");
  }
  if (r->nfaults > max_faults) fprintf(o, "           ... (%u more)\n", r->nfaults - max_faults);
  if (r->faults_on_flow_control)
    fprintf(o, "           and %u loss%s of flow-control messages that announce no op\n",
            r->faults_on_flow_control, r->faults_on_flow_control == 1 ? "" : "es");
  fprintf(o, "Go-backs   %u after NAKs, %u with no NAK (timer)", r->ngo_backs - r->timer_go_backs,
          r->timer_go_backs);
  if (r->timer_est_ns) {
    char t[24];
    fprintf(o, "; their retransmit timer %s", jct__fmt_ns(r->timer_est_ns, t, sizeof t));
  }
  fputc('\n', o);
  unsigned shown = 0;
  for (uint32_t i = 0; i < r->ngo_backs && shown < max_faults; i++) {
    const jct_infer_go_back_t *g = &r->go_backs[i];
    if (!g->timer) continue;
    char t[24], d[24];
    fprintf(o,
            "           op %u: offset %llu, %u PSNs re-sent, %s after the timer's start (%s "
            "after the flow last heard anything)%s\n",
            g->op, (unsigned long long)g->offset_bytes, g->ahead_psns,
            jct__fmt_ns(g->timer_ns, t, sizeof t), jct__fmt_ns(g->idle_ns, d, sizeof d),
            g->recovers_loss ? ", recovering a loss" : ", nothing lost (the hosts')");
    shown++;
  }
  char floor_s[24];
  jct__fmt_ns(r->stall_min_ns, floor_s, sizeof floor_s);
  fprintf(o,
          "Stalls     %u transmit stall%s of a sender (a gap in a message over %ux its flow's "
          "spacing and %s, no go-back, window not full)\n",
          r->nstalls, r->nstalls == 1 ? "" : "s", JCT_INFER_STALL_SPACINGS, floor_s);
  for (uint32_t i = 0; i < r->nstalls && i < max_faults; i++) {
    const jct_infer_stall_t *x = &r->stalls[i];
    char t[24], g[24], sp[24];
    fprintf(o, "           op %u: offset %llu, psn %u: held %s (gap %s, spacing %s), %u unacked\n",
            x->op, (unsigned long long)x->offset_bytes, x->psn,
            jct__fmt_ns(x->stall_ns, t, sizeof t), jct__fmt_ns(x->gap_ns, g, sizeof g),
            jct__fmt_ns(x->spacing_ns, sp, sizeof sp), x->unacked_psns);
  }
}

int jct__infer_report_text(FILE *o, const char *trace, const jct_schedule_t *s,
                           const jct_infer_report_t *r, unsigned max_faults) {
  fprintf(o, "Capture    %s: %llu frames, %llu RoCE packets\n", trace,
          (unsigned long long)r->frames, (unsigned long long)r->roce_packets);
  fprintf(o,
          "Ignored    %llu control frame%s (%llu TCP, %llu CM MADs, %llu other: ARP, ND, ...), "
          "%llu PFC, %llu malformed\n",
          (unsigned long long)r->control_frames, plural(r->control_frames),
          (unsigned long long)r->control_tcp, (unsigned long long)r->control_cm,
          (unsigned long long)r->control_other, (unsigned long long)r->pfc_frames,
          (unsigned long long)r->malformed_frames);
  fprintf(o,
          "Messages   %llu started, %llu completed; %llu clear-to-send left out as flow "
          "control, %llu READ requests or atomics left out\n",
          (unsigned long long)r->messages, (unsigned long long)r->messages_completed,
          (unsigned long long)r->flow_control, (unsigned long long)r->not_sends);
  text_schedule(o, s, r);
  text_confidence(o, r);
  text_faults(o, s, r, max_faults);
  return ferror(o) ? JCT_EIO : 0;
}

json_t *jct__infer_report_json(const char *trace, const jct_infer_report_t *r) {
  json_t *addrs = json_array(), *faults = json_array(), *gbs = json_array(), *stalls = json_array();
  char a[48];
  for (uint32_t i = 0; addrs && i < r->ranks; i++)
    json_array_append_new(addrs, json_string(jct_addr_str(&r->rank_addr[i], a, sizeof a)));
  for (uint32_t i = 0; faults && i < r->nfaults; i++) {
    const jct_infer_fault_t *f = &r->faults[i];
    json_t *copies = json_array(), *behind = json_array();
    for (uint32_t c = 0; copies && behind && c < JCT_INFER_MAX_COPIES && f->copies[c]; c++) {
      json_array_append_new(copies, json_integer(f->copies[c]));
      json_array_append_new(behind, json_boolean((f->behind >> c) & 1u));
    }
    json_array_append_new(faults,
                          json_pack("{s:I,s:b,s:I,s:I,s:b,s:b,s:b,s:b,s:I,s:o*,s:o*}", "op",
                                    (json_int_t)f->op, "cts", f->cts, "psn", (json_int_t)f->psn,
                                    "offset_bytes", (json_int_t)f->offset_bytes, "tail", f->tail,
                                    "timeout", f->timeout, "before_capture", f->before_capture,
                                    "retransmission", f->retransmission, "again",
                                    (json_int_t)f->again, "copies", copies, "behind", behind));
  }
  for (uint32_t i = 0; gbs && i < r->ngo_backs; i++) {
    const jct_infer_go_back_t *g = &r->go_backs[i];
    json_array_append_new(
        gbs, json_pack("{s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:b,s:I,s:I,s:I,s:b}", "op", (json_int_t)g->op,
                       "cts", g->cts, "offset_bytes", (json_int_t)g->offset_bytes, "ahead_psns",
                       (json_int_t)g->ahead_psns, "hole_to_nak_ns", (json_int_t)g->hole_to_nak_ns,
                       "nak_ahead_psns", (json_int_t)g->nak_ahead_psns, "nak_to_resend_ns",
                       (json_int_t)g->nak_to_resend_ns, "timer", g->timer, "timer_ns",
                       (json_int_t)g->timer_ns, "timer_lead_ns", (json_int_t)g->timer_lead_ns,
                       "idle_ns", (json_int_t)g->idle_ns, "recovers_loss", g->recovers_loss));
  }
  for (uint32_t i = 0; stalls && i < r->nstalls; i++) {
    const jct_infer_stall_t *x = &r->stalls[i];
    json_array_append_new(stalls,
                          json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "op", (json_int_t)x->op, "psn",
                                    (json_int_t)x->psn, "offset_bytes", (json_int_t)x->offset_bytes,
                                    "stall_ns", (json_int_t)x->stall_ns, "gap_ns",
                                    (json_int_t)x->gap_ns, "spacing_ns", (json_int_t)x->spacing_ns,
                                    "unacked_psns", (json_int_t)x->unacked_psns));
  }
#define I(x) ((json_int_t)(x))
  json_t *capture =
      json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "frames", I(r->frames),
                "roce_packets", I(r->roce_packets), "pfc_frames", I(r->pfc_frames),
                "malformed_frames", I(r->malformed_frames), "control_frames", I(r->control_frames),
                "control_tcp", I(r->control_tcp), "control_cm", I(r->control_cm), "control_other",
                I(r->control_other), "messages", I(r->messages), "messages_completed",
                I(r->messages_completed), "flow_control", I(r->flow_control), "not_sends",
                I(r->not_sends), "retransmitted_packets", I(r->retransmitted_packets));
  json_t *conf = json_pack(
      "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ops_with_deps", I(r->ops_with_deps),
      "deps_received", I(r->deps_received), "deps_program_order", I(r->deps_program_order),
      "ops_program_order", I(r->ops_program_order), "order_pause_ns", I(r->order_pause_ns),
      "ops_incomplete", I(r->ops_incomplete), "ops_queued", I(r->ops_queued), "frames_backwards",
      I(r->frames_backwards), "skewed_messages", I(r->skewed_messages), "turnaround_ns",
      I(r->turnaround_ns), "gap_median_ns", I(r->gap_median_ns), "gap_max_ns", I(r->gap_max_ns));
  return json_pack("{s:i,s:s,s:o*,s:{s:I,s:I,s:I,s:I,s:o*},s:{s:s,s:s,s:I,s:I},s:o*,s:o*,s:I,s:o*,"
                   "s:I,s:o*,s:I}",
                   "jctlab_infer", 1, "trace", trace, "capture", capture, "schedule", "ranks",
                   I(r->ranks), "connections", I(r->connections), "ops", I(r->ops), "total_bytes",
                   I(r->total_bytes), "rank_addresses", addrs, "pattern", "name", r->pattern,
                   "evidence", r->evidence, "bytes_estimate", I(r->bytes_estimate), "repetitions",
                   I(r->repetitions), "confidence", conf, "faults", faults,
                   "faults_on_flow_control", I(r->faults_on_flow_control), "go_backs", gbs,
                   "timer_estimate_ns", I(r->timer_est_ns), "stalls", stalls, "stall_min_ns",
                   I(r->stall_min_ns));
#undef I
}
