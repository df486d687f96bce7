/* Fuzz target for everything jctlab reads from a capture: the frame decoder,
 * the pcap/pcapng reader and the flow analysis behind `jctlab inspect`.
 *
 * Each input is used twice:
 *  (a) as one frame, decoded under every link type jct_decode() reads, once
 *      whole and once as if the snap length had cut it (wire length larger
 *      than the captured bytes); the decoded packets go into an analysis;
 *  (b) as a whole capture file, read from memory (fmemopen) the way
 *      `jctlab inspect --timeline` reads one: every record decoded and
 *      analysed, every timeline event formatted.
 * Besides the sanitizers' findings, the target aborts when the results break
 * the promises of decode.h and inspect.h (an event naming a flow that does
 * not exist, totals that do not add up), so those are found too.
 *
 * Built with libFuzzer when JCT_FUZZ is on (LLVMFuzzerTestOneInput); without
 * it, replay_main.c replays files through the same function, which is how
 * ctest runs the corpus in fuzz/corpus/decode/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/decode.h"
#include "jctlab/inspect.h"
#include "jctlab/trace.h"

/* Called by libFuzzer, or by replay_main.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int link_types[] = {JCT_LINK_EN10MB, JCT_LINK_RAW,  JCT_LINK_LINUX_SLL,
                                 JCT_LINK_IPV4,   JCT_LINK_IPV6, JCT_LINK_LINUX_SLL2};

typedef struct {
  const jct_inspect_t *ins; /* set once the analysis exists */
  uint64_t events;
  char line[256]; /* the last event, formatted as a timeline line */
} fuzz_ctx_t;

/* A broken promise: stop here so that the fuzzer keeps the input. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_decode: %s\n", what);
  abort();
}

static void check_packet(const jct_packet_t *pkt, jct_pkt_kind_t kind) {
  if (pkt->kind != kind) broken("jct_decode() returned a kind other than pkt->kind");
  switch (kind) {
  case JCT_PKT_ROCE:
    if (!pkt->op || !pkt->op->name) broken("RoCE packet without opcode info");
    if (pkt->reason != JCT_REASON_NONE) broken("RoCE packet with a reason");
    break;
  case JCT_PKT_PFC:
    if (pkt->reason != JCT_REASON_NONE) broken("PFC frame with a reason");
    break;
  case JCT_PKT_OTHER:
    if (pkt->reason == JCT_REASON_NONE || pkt->reason >= JCT_REASON_FIRST_MALFORMED)
      broken("OTHER frame with a malformed (or no) reason");
    break;
  case JCT_PKT_MALFORMED:
    if (pkt->reason < JCT_REASON_FIRST_MALFORMED || pkt->reason >= JCT_REASON__COUNT)
      broken("MALFORMED frame with an OTHER (or no) reason");
    break;
  default:
    broken("unknown packet kind");
  }
  if (!jct_reason_key(pkt->reason) || !jct_reason_text(pkt->reason)) broken("reason without words");
}

/* The timeline callback: format the event as `jctlab inspect --timeline`
 * would, reading the flow or link it names. */
static void on_event(const jct_event_t *ev, void *arg) {
  fuzz_ctx_t *ctx = arg;
  char src[46], dst[46];
  ctx->events++;
  if ((unsigned)ev->type >= JCT_EV__COUNT) broken("event of unknown type");
  const char *name = jct_event_name(ev->type);
  if (!name) broken("event without a name");
  if (!ctx->ins) return;
  if (ev->flow >= 0) {
    if ((size_t)ev->flow >= jct_inspect_nflows(ctx->ins)) broken("event names a missing flow");
    const jct_flow_t *f = jct_inspect_flow(ctx->ins, (size_t)ev->flow);
    jct_addr_str(&f->key.src, src, sizeof src);
    jct_addr_str(&f->key.dst, dst, sizeof dst);
    snprintf(ctx->line, sizeof ctx->line, "%llu %s %s>%s qp %u psn %u value %llu dur %llu",
             (unsigned long long)ev->ts_ns, name, src, dst, f->key.dest_qp, ev->psn,
             (unsigned long long)ev->value, (unsigned long long)ev->dur_ns);
  } else {
    if (ev->link < 0 || (size_t)ev->link >= jct_inspect_nlinks(ctx->ins))
      broken("event names neither a flow nor an existing link");
    const jct_link_t *l = jct_inspect_link(ctx->ins, (size_t)ev->link);
    if (ev->prio > 7) broken("pause event for a priority above 7");
    snprintf(ctx->line, sizeof ctx->line, "%llu %s %02x:%02x prio %u quanta %llu dur %llu",
             (unsigned long long)ev->ts_ns, name, l->src_mac[4], l->src_mac[5], ev->prio,
             (unsigned long long)ev->value, (unsigned long long)ev->dur_ns);
  }
}

static jct_inspect_t *new_analysis(fuzz_ctx_t *ctx) {
  jct_inspect_t *ins = NULL;
  jct_inspect_opts_t opts = {.link_rate_bps = 0, .on_event = on_event, .arg = ctx};
  memset(ctx, 0, sizeof *ctx);
  if (jct_inspect_new(&ins, &opts) != 0) return NULL;
  ctx->ins = ins;
  return ins;
}

/* Read everything the analysis offers, and check the totals add up. */
static void finish_analysis(jct_inspect_t *ins, uint64_t frames_added) {
  jct_inspect_finish(ins);
  const jct_totals_t *t = jct_inspect_totals(ins);
  if (t->frames != frames_added) broken("totals.frames differs from the frames added");
  if (t->roce_packets + t->pfc_frames + t->other_frames + t->malformed_frames != t->frames)
    broken("frame kinds do not add up to totals.frames");
  uint64_t roce = 0;
  for (size_t i = 0; i < jct_inspect_nflows(ins); i++) {
    const jct_flow_t *f = jct_inspect_flow(ins, i);
    if (f->peer >= 0 && (size_t)f->peer >= jct_inspect_nflows(ins)) broken("peer out of range");
    roce += f->st.packets;
  }
  if (roce > t->roce_packets) broken("flows hold more packets than totals.roce_packets");
  for (size_t i = 0; i < jct_inspect_nlinks(ins); i++)
    (void)jct_inspect_link(ins, i);
  jct_inspect_free(ins);
}

/* (a) The input as one frame of each link type. */
static void decode_frame(const uint8_t *data, size_t size) {
  fuzz_ctx_t ctx;
  jct_inspect_t *ins = new_analysis(&ctx);
  uint64_t added = 0;
  for (size_t i = 0; i < sizeof link_types / sizeof link_types[0]; i++) {
    if (!jct_link_supported(link_types[i])) broken("a JCT_LINK_* type is not supported");
    for (size_t cut = 0; cut < 2; cut++) {
      jct_packet_t pkt;
      size_t wire_len = cut ? size + 1 + (size > 0 ? data[0] : 0) : size;
      jct_pkt_kind_t kind = jct_decode(link_types[i], data, size, wire_len, &pkt);
      check_packet(&pkt, kind);
      if (ins) { /* a frame is counted even when its flow cannot be stored */
        (void)jct_inspect_add(ins, &pkt, added * 1000, added + 1, (uint32_t)wire_len);
        added++;
      }
    }
  }
  if (ins) finish_analysis(ins, added);
}

/* (b) The input as a capture file. */
static void inspect_capture(const uint8_t *data, size_t size) {
  char err[256] = "";
  if (size == 0) return; /* fmemopen() refuses an empty buffer */
  /* A copy, so that a reader writing to its buffer would be caught. */
  uint8_t *copy = malloc(size);
  if (!copy) return;
  memcpy(copy, data, size);
  FILE *fp = fmemopen(copy, size, "rb");
  if (!fp) {
    free(copy);
    return;
  }
  jct_trace_t *t = NULL;
  if (jct_trace_open_file(&t, fp, "fuzz.pcap", err, sizeof err) != 0) { /* fp is closed */
    if (!err[0]) broken("jct_trace_open_file() failed without a message");
    free(copy);
    return;
  }
  int linktype = jct_trace_linktype(t);
  if (!jct_link_supported(linktype)) broken("trace opened with an unsupported link type");
  (void)jct_trace_format(t);
  (void)jct_trace_nanosecond(t);

  fuzz_ctx_t ctx;
  jct_inspect_t *ins = new_analysis(&ctx);
  uint64_t added = 0, expect_frame = 1;
  jct_record_t rec;
  int rc;
  err[0] = '\0';
  while ((rc = jct_trace_next(t, &rec, err, sizeof err)) == 1) {
    if (rec.frame_no != expect_frame++) broken("frame numbers are not 1, 2, 3...");
    jct_packet_t pkt;
    jct_pkt_kind_t kind = jct_decode(linktype, rec.data, rec.caplen, rec.wire_len, &pkt);
    check_packet(&pkt, kind);
    if (ins) {
      (void)jct_inspect_add(ins, &pkt, rec.ts_ns, rec.frame_no, rec.wire_len);
      added++;
    }
  }
  if (rc < 0 && !err[0]) broken("jct_trace_next() failed without a message");
  if (ins) finish_analysis(ins, added);
  jct_trace_close(t);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  decode_frame(data, size);
  inspect_capture(data, size);
  return 0;
}
