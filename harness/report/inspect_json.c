/* `jctlab inspect --json`: the whole analysis as one JSON document with a
 * fixed, versioned shape (iperf3's habit: consumers can rely on every key
 * being present). Counters are integers; times are nanoseconds (…_ns),
 * sizes bytes (…_bytes), rates bits per second (…_bps). A value that does
 * not exist (a flow with no completed message, a flow with no peer yet) is
 * null, never left out. The README's "jctlab inspect" section documents
 * every key; "jctlab_inspect" is the shape's version, raised when a key
 * changes meaning or goes away (new keys may be added without it).
 */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "inspect_out.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"

#define JSON_VERSION 1

static const char *const msg_keys[JCT_MSG__COUNT] = {"send", "write", "read_req", "read_resp",
                                                     "atomic"};

/* Every json_* call below may return NULL on allocation failure; jansson's
 * json_object_set_new() and json_array_append_new() accept NULL values and
 * fail, so a failure is caught once, at the end, by counting them. */
typedef struct {
  int failed;
} ctx_t;

static void put(ctx_t *c, json_t *obj, const char *key, json_t *v) {
  if (json_object_set_new(obj, key, v) < 0) c->failed = 1;
}

static void put_u(ctx_t *c, json_t *obj, const char *key, uint64_t v) {
  put(c, obj, key, json_integer((json_int_t)v));
}

static void append(ctx_t *c, json_t *arr, json_t *v) {
  if (json_array_append_new(arr, v) < 0) c->failed = 1;
}

/* A string that may not be UTF-8 (a file name): bytes jansson refuses
 * become '?'. */
static json_t *text(const char *s) {
  json_t *v = json_string(s);
  if (v) return v;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *p = buf; *p; p++)
    if ((unsigned char)*p >= 0x80) *p = '?';
  return json_string(buf);
}

static json_t *opcodes(ctx_t *c, const uint64_t counts[256]) {
  json_t *arr = json_array();
  for (unsigned op = 0; op < 256; op++) {
    if (!counts[op]) continue;
    json_t *o = json_object();
    put_u(c, o, "opcode", op);
    put(c, o, "name", json_string(jct_opcode_name((uint8_t)op)));
    put_u(c, o, "packets", counts[op]);
    append(c, arr, o);
  }
  return arr;
}

static json_t *reasons(ctx_t *c, const jct_totals_t *t, unsigned from, unsigned to) {
  json_t *o = json_object();
  for (unsigned r = from; r < to; r++)
    put_u(c, o, jct_reason_key((jct_reason_t)r), t->by_reason[r]);
  return o;
}

static json_t *capture(ctx_t *c, const jct__capture_info_t *cap, const jct_totals_t *t,
                       uint64_t link_rate_bps) {
  json_t *o = json_object();
  put(c, o, "file", text(cap->file));
  put(c, o, "format", json_string(cap->format));
  put_u(c, o, "linktype", (uint64_t)cap->linktype);
  put(c, o, "nanosecond", json_boolean(cap->nanosecond));
  put_u(c, o, "frames", t->frames);
  put(c, o, "first_ns", t->frames ? json_integer((json_int_t)t->first_ns) : json_null());
  put(c, o, "last_ns", t->frames ? json_integer((json_int_t)t->last_ns) : json_null());
  put_u(c, o, "duration_ns", t->frames ? t->last_ns - t->first_ns : 0);
  put_u(c, o, "link_rate_bps", link_rate_bps);
  return o;
}

static json_t *totals(ctx_t *c, const jct_totals_t *t) {
  json_t *o = json_object();
  static const struct {
    const char *key;
    size_t off;
  } fields[] = {
#define F(name) {#name, offsetof(jct_totals_t, name)}
      F(frames),
      F(wire_bytes),
      F(roce_packets),
      F(pfc_frames),
      F(other_frames),
      F(malformed_frames),
      F(messages),
      F(messages_completed),
      F(acks),
      F(nak_seq_err),
      F(nak_rnr),
      F(nak_other),
      F(retransmitted_packets),
      F(retransmitted_bytes),
      F(gaps),
      F(gap_psns),
      F(rewinds),
      F(timeouts),
      F(recovery_ns),
      F(cnps),
      F(ecn_ce),
      F(bad_icrc),
      F(icrc_unchecked),
      F(paused_ns),
      F(pause_frames_xoff),
      F(pause_frames_xon),
#undef F
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    put_u(c, o, fields[i].key, *(const uint64_t *)(const void *)((const char *)t + fields[i].off));
  return o;
}

static json_t *flow(ctx_t *c, const jct_flow_t *f, const jct_flow_t *peer, size_t index) {
  const jct_flow_stats_t *s = &f->st;
  char a[64];
  json_t *o = json_object();
  put_u(c, o, "index", index);
  put(c, o, "src", json_string(jct_addr_str(&f->key.src, a, sizeof a)));
  put(c, o, "dst", json_string(jct_addr_str(&f->key.dst, a, sizeof a)));
  put_u(c, o, "dest_qp", f->key.dest_qp);
  put(c, o, "peer", f->peer >= 0 ? json_integer(f->peer) : json_null());
  put_u(c, o, "pcp", f->pcp);
  put_u(c, o, "dscp", f->dscp);
  put_u(c, o, "packets", s->packets);
  put_u(c, o, "wire_bytes", s->wire_bytes);
  put_u(c, o, "payload_bytes", s->payload_bytes);
  put_u(c, o, "first_ns", s->first_ns);
  put_u(c, o, "last_ns", s->last_ns);
  put_u(c, o, "psn_first", s->psn_first);
  put_u(c, o, "psn_highest", s->psn_highest);
  json_t *m = json_object();
  for (int k = 0; k < JCT_MSG__COUNT; k++)
    put_u(c, m, msg_keys[k], s->messages[k]);
  put(c, o, "messages", m);
  put_u(c, o, "messages_completed", s->messages_completed);
  put_u(c, o, "message_bytes", s->message_bytes);
  bool any = s->messages_completed > 0;
  put(c, o, "message_time_min_ns",
      any ? json_integer((json_int_t)s->msg_time_min_ns) : json_null());
  put(c, o, "message_time_mean_ns",
      any ? json_integer((json_int_t)(s->msg_time_sum_ns / s->messages_completed)) : json_null());
  put(c, o, "message_time_max_ns",
      any ? json_integer((json_int_t)s->msg_time_max_ns) : json_null());
  put_u(c, o, "acks", s->acks);
  put_u(c, o, "nak_seq_err", s->nak_seq_err);
  put_u(c, o, "nak_rnr", s->nak_rnr);
  put_u(c, o, "nak_other", s->nak_other);
  /* The NAKs that made this flow re-send travel on its peer (the text
   * table's NAKs column). */
  put_u(c, o, "naks_received",
        peer ? peer->st.nak_seq_err + peer->st.nak_rnr + peer->st.nak_other : 0);
  put_u(c, o, "retransmitted_packets", s->retransmitted_packets);
  put_u(c, o, "retransmitted_bytes", s->retransmitted_bytes);
  put_u(c, o, "gaps", s->gaps);
  put_u(c, o, "gap_psns", s->gap_psns);
  put_u(c, o, "rewinds", s->rewinds);
  put_u(c, o, "timeouts", s->timeouts);
  put_u(c, o, "recovery_ns", s->recovery_ns);
  put_u(c, o, "cnps", s->cnps);
  put_u(c, o, "ecn_ce", s->ecn_ce);
  put_u(c, o, "bad_icrc", s->bad_icrc);
  put(c, o, "opcodes", opcodes(c, s->opcode_packets));
  return o;
}

static json_t *link_obj(ctx_t *c, const jct_link_t *l) {
  char mac[18];
  const uint8_t *b = l->src_mac;
  snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
  json_t *o = json_object();
  put(c, o, "src_mac", json_string(mac));
  put_u(c, o, "frames", l->frames);
  put(c, o, "pause_802_3x", json_boolean(l->pause_802_3x));
  json_t *arr = json_array();
  for (unsigned p = 0; p < 8; p++) {
    json_t *po = json_object();
    put_u(c, po, "priority", p);
    put_u(c, po, "frames", l->prio[p].frames);
    put_u(c, po, "xoff", l->prio[p].xoff);
    put_u(c, po, "xon", l->prio[p].xon);
    put_u(c, po, "paused_ns", l->prio[p].paused_ns);
    append(c, arr, po);
  }
  put(c, o, "priorities", arr);
  return o;
}

int jct__inspect_json(FILE *out, const jct_inspect_t *ins, const jct__capture_info_t *cap) {
  ctx_t c = {0};
  const jct_totals_t *t = jct_inspect_totals(ins);
  json_t *root = json_object();
  put_u(&c, root, "jctlab_inspect", JSON_VERSION);
  put(&c, root, "capture", capture(&c, cap, t, jct_inspect_link_rate_bps(ins)));
  put(&c, root, "totals", totals(&c, t));
  put(&c, root, "opcodes", opcodes(&c, t->opcode_packets));
  put(&c, root, "other", reasons(&c, t, 1, JCT_REASON_FIRST_MALFORMED));
  put(&c, root, "malformed", reasons(&c, t, JCT_REASON_FIRST_MALFORMED, JCT_REASON__COUNT));
  json_t *flows = json_array();
  for (size_t i = 0, n = jct_inspect_nflows(ins); i < n; i++) {
    const jct_flow_t *f = jct_inspect_flow(ins, i);
    append(&c, flows, flow(&c, f, f->peer >= 0 ? jct_inspect_flow(ins, (size_t)f->peer) : NULL, i));
  }
  put(&c, root, "flows", flows);
  json_t *links = json_array();
  for (size_t i = 0, n = jct_inspect_nlinks(ins); i < n; i++)
    append(&c, links, link_obj(&c, jct_inspect_link(ins, i)));
  put(&c, root, "links", links);
  put(&c, root, "truncated", cap->truncated ? text(cap->truncated) : json_null());
  int rc = 0;
  if (c.failed || !root)
    rc = JCT_ENOMEM;
  else if (json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 || fputc('\n', out) < 0)
    rc = JCT_EIO;
  json_decref(root);
  return rc;
}
