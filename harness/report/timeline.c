/* `jctlab inspect --timeline`: every event the analysis finds (a message
 * completed, a PSN gap, a NAK, a go-back-N rewind or a timeout, the
 * recovery, a lost PSN's retransmission, a CNP, an ECN-CE mark, a bad
 * ICRC, a PFC pause or resume),
 * written the moment it is found, one line each: nothing is kept.
 *
 * text: "   1234.567  198.18.0.2>198.18.0.1 qp 0x11  nak  expected psn ..."
 *       time in µs since the capture's first frame, the flow (or the link
 *       and priority for pause events), the event, its details;
 * json: one object per line (JSON Lines), keys as in the README.
 */
#include <stdio.h>

#include "inspect_out.h"
#include "jctlab/decode.h"
#include "jctlab/inspect.h"
#include "jctlab/roce.h"

static const char *syndrome_text(uint8_t syn) {
  switch (jct_aeth_type(syn)) {
  case JCT_AETH_ACK:
    return "ACK";
  case JCT_AETH_RNR_NAK:
    return "RNR NAK";
  case JCT_AETH_NAK:
    switch (jct_aeth_value(syn)) {
    case JCT_NAK_PSN_SEQ_ERR:
      return "PSN sequence error";
    case JCT_NAK_INVALID_REQUEST:
      return "invalid request";
    case JCT_NAK_REMOTE_ACCESS:
      return "remote access error";
    case JCT_NAK_REMOTE_OP_ERR:
      return "remote operational error";
    case JCT_NAK_INVALID_RD_REQUEST:
      return "invalid RD request";
    default:
      return "reserved NAK code";
    }
  default:
    return "reserved";
  }
}

static void mac_str(const uint8_t *b, char *buf, size_t len) {
  snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
}

/* "198.18.0.1>198.18.0.2 qp 0x11", or "02:00:00:00:00:01 prio 3". */
static void who(const jct__timeline_t *tl, const jct_event_t *ev, char *buf, size_t len) {
  const jct_flow_t *f =
      ev->flow >= 0 && tl->ins ? jct_inspect_flow(tl->ins, (size_t)ev->flow) : NULL;
  const jct_link_t *l =
      ev->link >= 0 && tl->ins ? jct_inspect_link(tl->ins, (size_t)ev->link) : NULL;
  if (f) {
    char a[64], b[64];
    snprintf(buf, len, "%s>%s qp 0x%x", jct_addr_str(&f->key.src, a, sizeof a),
             jct_addr_str(&f->key.dst, b, sizeof b), f->key.dest_qp);
  } else if (l) {
    char m[18];
    mac_str(l->src_mac, m, sizeof m);
    snprintf(buf, len, "%s prio %u", m, ev->prio);
  } else {
    snprintf(buf, len, "-");
  }
}

static void details(const jct_event_t *ev, char *buf, size_t len) {
  unsigned long long v = ev->value;
  double dur_us = (double)ev->dur_ns / 1e3;
  switch (ev->type) {
  case JCT_EV_MSG_DONE:
    snprintf(buf, len, "psn %u, %llu bytes in %.3f µs", ev->psn, v, dur_us);
    break;
  case JCT_EV_GAP:
    snprintf(buf, len, "psn %u, %llu missing", ev->psn, v);
    break;
  case JCT_EV_NAK:
    snprintf(buf, len, "expected psn %u, %s (syndrome 0x%02llx)", ev->psn,
             syndrome_text((uint8_t)v), v);
    break;
  case JCT_EV_REWIND:
    snprintf(buf, len, "back to psn %u, %llu re-sent ahead", ev->psn, v);
    break;
  case JCT_EV_TIMEOUT:
    snprintf(buf, len, "back to psn %u, %llu re-sent ahead, after %.3f µs heard nothing", ev->psn,
             v, dur_us);
    break;
  case JCT_EV_RECOVERED:
    snprintf(buf, len, "psn %u, after %.3f µs", ev->psn, dur_us);
    break;
  case JCT_EV_BAD_ICRC:
    snprintf(buf, len, "psn %u, icrc 0x%08llx", ev->psn, v);
    break;
  case JCT_EV_PAUSE:
    snprintf(buf, len, "quanta %llu (%.3f µs)", v, dur_us);
    break;
  case JCT_EV_RESUME:
    snprintf(buf, len, "after %.3f µs", dur_us);
    break;
  case JCT_EV_HOLE_RESENT:
    if (v)
      snprintf(buf, len, "psn %u, %.3f µs after the hole, %.3f µs after its NAK", ev->psn, dur_us,
               (double)v / 1e3);
    else
      snprintf(buf, len, "psn %u, %.3f µs after the hole, no NAK", ev->psn, dur_us);
    break;
  default:
    snprintf(buf, len, "psn %u", ev->psn);
    break;
  }
}

/* Times are given from the first frame of the capture. */
static uint64_t origin_ns(const jct__timeline_t *tl) {
  return tl->ins ? jct_inspect_totals(tl->ins)->first_ns : 0;
}

static void write_text(const jct__timeline_t *tl, const jct_event_t *ev) {
  char w[128], d[128];
  who(tl, ev, w, sizeof w);
  details(ev, d, sizeof d);
  uint64_t origin = origin_ns(tl);
  double t_us = ev->ts_ns >= origin ? (double)(ev->ts_ns - origin) / 1e3 : 0;
  fprintf(tl->out, "%14.3f  %-34s %-9s %s  [frame %llu]\n", t_us, w, jct_event_name(ev->type), d,
          (unsigned long long)ev->frame_no);
}

static void write_json(const jct__timeline_t *tl, const jct_event_t *ev) {
  FILE *o = tl->out;
  uint64_t origin = origin_ns(tl);
  uint64_t t = ev->ts_ns >= origin ? ev->ts_ns - origin : 0;
  fprintf(o, "{\"t_ns\":%llu,\"ts_ns\":%llu,\"frame\":%llu,\"event\":\"%s\"", (unsigned long long)t,
          (unsigned long long)ev->ts_ns, (unsigned long long)ev->frame_no,
          jct_event_name(ev->type));
  const jct_flow_t *f =
      ev->flow >= 0 && tl->ins ? jct_inspect_flow(tl->ins, (size_t)ev->flow) : NULL;
  const jct_link_t *l =
      ev->link >= 0 && tl->ins ? jct_inspect_link(tl->ins, (size_t)ev->link) : NULL;
  if (f) {
    char a[64], b[64];
    fprintf(o, ",\"flow\":%ld,\"src\":\"%s\",\"dst\":\"%s\",\"dest_qp\":%u,\"psn\":%u", ev->flow,
            jct_addr_str(&f->key.src, a, sizeof a), jct_addr_str(&f->key.dst, b, sizeof b),
            f->key.dest_qp, ev->psn);
  }
  if (l) {
    char m[18];
    mac_str(l->src_mac, m, sizeof m);
    fprintf(o, ",\"link\":%ld,\"src_mac\":\"%s\",\"priority\":%u", ev->link, m, ev->prio);
  }
  fprintf(o, ",\"value\":%llu,\"dur_ns\":%llu}\n", (unsigned long long)ev->value,
          (unsigned long long)ev->dur_ns);
}

void jct__timeline_event(const jct_event_t *ev, void *arg) {
  const jct__timeline_t *tl = arg;
  if (tl->format == JCT__TIMELINE_JSON)
    write_json(tl, ev);
  else
    write_text(tl, ev);
}
