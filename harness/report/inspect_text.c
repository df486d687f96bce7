/* `jctlab inspect`'s terminal summary: what a person reads in ten seconds.
 *
 * Top to bottom: the capture, the RoCE traffic, the opcodes, the loss and
 * retransmission story in one sentence, congestion (CNPs, ECN-CE), ICRC
 * checks, PFC pauses per link and priority, frames that are not RoCE by
 * reason, and the worst flows as a table (by retransmitted packets, then
 * time spent recovering). Aligned columns with units, as iperf3 and
 * nccl-tests print theirs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect_out.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"
#include "harness/base/units.h"

static const char *link_name(int linktype) {
  switch (linktype) {
  case JCT_LINK_EN10MB:
    return "Ethernet";
  case JCT_LINK_RAW:
  case JCT_LINK_IPV4:
  case JCT_LINK_IPV6:
    return "raw IP";
  case JCT_LINK_LINUX_SLL:
    return "Linux cooked v1";
  case JCT_LINK_LINUX_SLL2:
    return "Linux cooked v2";
  default:
    return "unknown link";
  }
}

static const char *plural(uint64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

/* s right-aligned in width terminal columns (µ is two bytes, one column). */
static const char *rj(char *buf, size_t len, const char *s, int width) {
  int cols = 0;
  for (const char *p = s; *p; p++)
    cols += ((unsigned char)*p & 0xc0) != 0x80;
  int pad = width > cols ? width - cols : 0;
  snprintf(buf, len, "%*s%s", pad, "", s);
  return buf;
}

static void capture(FILE *o, const jct__capture_info_t *cap, const jct_totals_t *t) {
  char b[32], d[32];
  fprintf(o, "Capture    %s\n", cap->file);
  fprintf(o, "           %s, %s timestamps, %s (link type %d)\n", cap->format,
          cap->nanosecond ? "nanosecond" : "microsecond", link_name(cap->linktype), cap->linktype);
  fprintf(o, "           %llu %s, %s on the wire, over %s\n", (unsigned long long)t->frames,
          plural(t->frames, "frame", "frames"), jct__fmt_bytes(t->wire_bytes, b, sizeof b),
          jct__fmt_ns(t->frames ? t->last_ns - t->first_ns : 0, d, sizeof d));
  if (cap->filter)
    fprintf(o, "           filter '%s': %llu of %llu %s matched, %llu filtered out\n", cap->filter,
            (unsigned long long)(cap->frames_read - cap->frames_filtered_out),
            (unsigned long long)cap->frames_read, plural(cap->frames_read, "frame", "frames"),
            (unsigned long long)cap->frames_filtered_out);
  if (cap->truncated) fprintf(o, "           ends early: %s\n", cap->truncated);
}

static void roce(FILE *o, const jct_inspect_t *ins, const jct_totals_t *t) {
  char b[32];
  uint64_t payload = 0, data = 0, acks = 0;
  for (size_t i = 0, n = jct_inspect_nflows(ins); i < n; i++)
    payload += jct_inspect_flow(ins, i)->st.payload_bytes;
  for (unsigned op = 0; op < 256; op++) {
    const struct jct_opcode_info *info = jct_opcode_info((uint8_t)op);
    if (!info || !t->opcode_packets[op]) continue;
    if (info->kind == JCT_OPK_ACK || info->kind == JCT_OPK_ATOMIC_ACK)
      acks += t->opcode_packets[op];
    else if (info->kind != JCT_OPK_CNP)
      data += t->opcode_packets[op];
  }
  fprintf(o, "RoCEv2     %llu packets in %zu %s: %llu data, %llu ACK/NAK, %llu CNP; %s payload\n",
          (unsigned long long)t->roce_packets, jct_inspect_nflows(ins),
          plural(jct_inspect_nflows(ins), "flow", "flows"), (unsigned long long)data,
          (unsigned long long)acks, (unsigned long long)t->cnps,
          jct__fmt_bytes(payload, b, sizeof b));
  fprintf(o, "           %llu messages started, %llu completed\n", (unsigned long long)t->messages,
          (unsigned long long)t->messages_completed);
}

static void opcode_table(FILE *o, const jct_totals_t *t) {
  if (!t->roce_packets) return;
  fprintf(o, "\n  Opcode  Name                                  Packets\n");
  for (unsigned op = 0; op < 256; op++) {
    if (!t->opcode_packets[op]) continue;
    fprintf(o, "  0x%02x    %-36s %8llu\n", op, jct_opcode_name((uint8_t)op),
            (unsigned long long)t->opcode_packets[op]);
  }
}

static void loss_story(FILE *o, const jct_totals_t *t, const jct_figure_t *per_loss) {
  char b[32], d[32];
  uint64_t naks = t->nak_seq_err;
  fprintf(o, "\nLoss and retransmission\n");
  fprintf(o,
          "  %llu %s (PSN sequence error) → %llu go-back-N %s, %llu %s (%s) re-sent, "
          "%llu %s; %s spent recovering\n",
          (unsigned long long)naks, plural(naks, "NAK", "NAKs"), (unsigned long long)t->rewinds,
          plural(t->rewinds, "rewind", "rewinds"), (unsigned long long)t->retransmitted_packets,
          plural(t->retransmitted_packets, "packet", "packets"),
          jct__fmt_bytes(t->retransmitted_bytes, b, sizeof b), (unsigned long long)t->timeouts,
          plural(t->timeouts, "timeout", "timeouts"), jct__fmt_ns(t->recovery_ns, d, sizeof d));
  if (per_loss->set) {
    char m[32];
    fprintf(o, "  %llu lost %s re-sent: hole → retransmission %s in all, %s per loss (median)\n",
            (unsigned long long)t->losses_recovered, plural(t->losses_recovered, "PSN", "PSNs"),
            jct__fmt_ns(t->loss_recovery_ns, d, sizeof d),
            jct__fmt_ns(per_loss->median, m, sizeof m));
  }
  fprintf(o,
          "  %llu PSN %s at the capture point (%llu %s lost before it); %llu RNR NAKs, "
          "%llu other NAKs\n",
          (unsigned long long)t->gaps, plural(t->gaps, "gap", "gaps"),
          (unsigned long long)t->gap_psns, plural(t->gap_psns, "PSN", "PSNs"),
          (unsigned long long)t->nak_rnr, (unsigned long long)t->nak_other);
  fprintf(o, "Congestion %llu CNPs, %llu ECN-CE marks\n", (unsigned long long)t->cnps,
          (unsigned long long)t->ecn_ce);
  fprintf(o, "ICRC       %llu bad", (unsigned long long)t->bad_icrc);
  if (t->icrc_unchecked)
    fprintf(o, ", %llu not checked (cut by the snap length)",
            (unsigned long long)t->icrc_unchecked);
  fprintf(o, "\n");
}

static void pauses(FILE *o, const jct_inspect_t *ins, const jct_totals_t *t) {
  char d[32], r[32];
  size_t n = jct_inspect_nlinks(ins);
  if (!n) {
    fprintf(o, "Pauses     none\n");
    return;
  }
  fprintf(o, "Pauses     %llu XOFF, %llu XON frames; %s paused in all (quanta at %s)\n",
          (unsigned long long)t->pause_frames_xoff, (unsigned long long)t->pause_frames_xon,
          jct__fmt_ns(t->paused_ns, d, sizeof d),
          jct__fmt_rate(jct_inspect_link_rate_bps(ins), r, sizeof r));
  fprintf(o, "  %-17s  %4s  %8s  %8s  %8s  %10s\n", "Sender", "Prio", "Frames", "XOFF", "XON",
          "Paused");
  for (size_t i = 0; i < n; i++) {
    const jct_link_t *l = jct_inspect_link(ins, i);
    const uint8_t *m = l->src_mac;
    char mac[18];
    snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    for (unsigned p = 0; p < 8; p++) {
      const jct_pause_prio_t *pp = &l->prio[p];
      if (!pp->frames) continue;
      char c[48];
      fprintf(o, "  %-17s  %4u  %8llu  %8llu  %8llu  %s%s\n", mac, p,
              (unsigned long long)pp->frames, (unsigned long long)pp->xoff,
              (unsigned long long)pp->xon,
              rj(c, sizeof c, jct__fmt_ns(pp->paused_ns, d, sizeof d), 10),
              l->pause_802_3x ? "  (802.3x PAUSE)" : "");
    }
  }
}

static void reasons(FILE *o, const char *title, uint64_t total, const jct_totals_t *t,
                    unsigned from, unsigned to) {
  fprintf(o, "%-10s %llu %s\n", title, (unsigned long long)total, plural(total, "frame", "frames"));
  for (unsigned r = from; r < to; r++)
    if (t->by_reason[r])
      fprintf(o, "  %8llu  %s\n", (unsigned long long)t->by_reason[r],
              jct_reason_text((jct_reason_t)r));
}

/* Worst first: more retransmitted packets, then more time recovering, then
 * more packets; ties keep first-seen order. The worst top_n are kept in a
 * heap whose root is the least bad of them, so memory follows top_n, not
 * the number of flows. */
typedef struct {
  uint64_t retx, recovery_ns, packets;
  size_t i;
} rank_t;

static int worse(const void *a, const void *b) {
  const rank_t *x = a, *y = b;
  if (x->retx != y->retx) return x->retx > y->retx ? -1 : 1;
  if (x->recovery_ns != y->recovery_ns) return x->recovery_ns > y->recovery_ns ? -1 : 1;
  if (x->packets != y->packets) return x->packets > y->packets ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Restore the heap below slot i: each parent less bad than its children. */
static void sift_down(rank_t *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && worse(&h[m], &h[l]) < 0) m = l;
    if (r < n && worse(&h[m], &h[r]) < 0) m = r;
    if (m == i) return;
    rank_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void sift_up(rank_t *h, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (worse(&h[p], &h[i]) >= 0) return;
    rank_t t = h[i];
    h[i] = h[p];
    h[p] = t;
    i = p;
  }
}

static int worst_flows(FILE *o, const jct_inspect_t *ins, size_t top_n) {
  size_t n = jct_inspect_nflows(ins);
  if (!n || !top_n) return 0;
  if (top_n > n) top_n = n;
  rank_t *idx = malloc(top_n * sizeof *idx);
  if (!idx) return JCT_ENOMEM;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    const jct_flow_stats_t *s = &jct_inspect_flow(ins, i)->st;
    rank_t r = {s->retransmitted_packets, s->recovery_ns, s->packets, i};
    if (kept < top_n) {
      idx[kept] = r;
      sift_up(idx, kept++);
    } else if (worse(&r, &idx[0]) < 0) {
      idx[0] = r;
      sift_down(idx, kept, 0);
    }
  }
  qsort(idx, top_n, sizeof *idx, worse);
  fprintf(o, "\nWorst flows (%zu of %zu, by retransmitted packets, then recovery time)\n", top_n,
          n);
  fprintf(o, "  %-33s %8s %8s %10s %7s %6s %5s %7s %4s %10s %6s %10s\n", "Flow", "QP", "Packets",
          "Payload", "Retx", "Retx%", "NAKs", "Rewinds", "T/O", "Recovery", "Msgs", "Msg mean");
  for (size_t k = 0; k < top_n; k++) {
    const jct_flow_t *f = jct_inspect_flow(ins, idx[k].i);
    const jct_flow_stats_t *s = &f->st;
    char a[64], b[64], who[140], qp[16], pay[32], rec[32], mean[32], c1[48], c2[48];
    snprintf(who, sizeof who, "%s > %s", jct_addr_str(&f->key.src, a, sizeof a),
             jct_addr_str(&f->key.dst, b, sizeof b));
    snprintf(qp, sizeof qp, "0x%06x", f->key.dest_qp);
    /* The NAKs that made this flow rewind travel on its peer. */
    const jct_flow_t *peer = f->peer >= 0 ? jct_inspect_flow(ins, (size_t)f->peer) : NULL;
    uint64_t naks = peer ? peer->st.nak_seq_err + peer->st.nak_rnr + peer->st.nak_other : 0;
    double pct = s->packets ? 100.0 * (double)s->retransmitted_packets / (double)s->packets : 0;
    if (s->messages_completed)
      jct__fmt_ns(s->msg_time_sum_ns / s->messages_completed, mean, sizeof mean);
    else
      snprintf(mean, sizeof mean, "-");
    fprintf(
        o, "  %-33s %8s %8llu %10s %7llu %5.1f%% %5llu %7llu %4llu %10s %6llu %10s\n", who, qp,
        (unsigned long long)s->packets, jct__fmt_bytes(s->payload_bytes, pay, sizeof pay),
        (unsigned long long)s->retransmitted_packets, pct, (unsigned long long)naks,
        (unsigned long long)s->rewinds, (unsigned long long)s->timeouts,
        rj(c1, sizeof c1, s->recovery_ns ? jct__fmt_ns(s->recovery_ns, rec, sizeof rec) : "-", 10),
        (unsigned long long)s->messages_completed, rj(c2, sizeof c2, mean, 10));
  }
  free(idx);
  return 0;
}

int jct__inspect_text(FILE *o, const jct_inspect_t *ins, const jct__capture_info_t *cap,
                      size_t top_n) {
  const jct_totals_t *t = jct_inspect_totals(ins);
  jct_profile_t *prof;
  if (jct_inspect_profile(ins, &prof)) return JCT_ENOMEM;
  capture(o, cap, t);
  roce(o, ins, t);
  opcode_table(o, t);
  loss_story(o, t, &prof->loss_recovery_ns);
  pauses(o, ins, t);
  reasons(o, "Not RoCE", t->other_frames, t, 1, JCT_REASON_FIRST_MALFORMED);
  reasons(o, "Malformed", t->malformed_frames, t, JCT_REASON_FIRST_MALFORMED, JCT_REASON__COUNT);
  int rc = worst_flows(o, ins, top_n);
  if (rc == 0) jct__inspect_profile_text(o, prof);
  jct_profile_free(prof);
  if (rc == 0 && (fflush(o) != 0 || ferror(o))) rc = JCT_EIO;
  return rc;
}
