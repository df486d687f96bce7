/* A replay's look at the switch's wire: its re-sent packets and losses,
 * NAKs and timeouts, as `jctlab inspect` counts them (loss_watch.h). */
#include <pcap/dlt.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/inspect.h"
#include "traces/frame.h"
#include "traces/inspect_int.h"
#include "traces/profile_int.h"
#include "loss_watch.h"

/* A figure's samples, as `jctlab inspect` keeps a capture's (profile_int.h). */
typedef struct {
  jct__samples_t s;
  bool lost; /* a sample or a repetition could not be kept */
} samples_t;

/* A side's samples: each loss's hole → retransmission, and each NAK's
 * go-back's depth. */
typedef struct {
  samples_t recovery_ns, go_back_psns;
} side_t;

struct jct__loss_watch {
  jct_inspect_t *ins; /* the repetition's; NULL between them */
  side_t side[2];     /* baseline, faulted */
  side_t *cur;        /* the repetition's side; NULL between them */
  uint64_t frame_no;
  /* Per flow of the repetition's inspector (its numbering): the re-sent
   * packets it had counted, so that the one a frame adds is seen. */
  uint64_t *flow_resent;
  size_t nflows, capflows;
  uint64_t resent_packets, resent_bytes; /* over every repetition watched */
  uint64_t naks, timeouts;               /* likewise, added as each repetition ends */
  bool unwatched; /* a frame of the repetition could not be followed */
};

static void keep(samples_t *s, uint64_t v) {
  if (jct__samples_add(&s->s, v)) s->lost = true;
}

static void on_event(const jct_event_t *ev, void *arg) {
  jct__loss_watch_t *w = arg;
  if (ev->type == JCT_EV_HOLE_RESENT && w->cur) keep(&w->cur->recovery_ns, ev->dur_ns);
}

int jct__loss_watch_new(jct__loss_watch_t **out) {
  return (*out = calloc(1, sizeof **out)) ? 0 : JCT_ENOMEM;
}

int jct__loss_watch_begin(jct__loss_watch_t *w, bool faulted) {
  (void)jct__loss_watch_end(w);
  w->cur = &w->side[faulted];
  w->nflows = 0;
  w->unwatched = false;
  jct_inspect_opts_t io = {.on_event = on_event, .arg = w};
  if (jct_inspect_new(&w->ins, &io)) {
    w->ins = NULL;
    w->cur->recovery_ns.lost = w->cur->go_back_psns.lost = true;
    w->cur = NULL;
    return JCT_ENOMEM;
  }
  return 0;
}

int jct__loss_watch_end(jct__loss_watch_t *w) {
  bool unwatched = w->ins && w->unwatched;
  for (size_t i = 0; w->ins && i < jct_inspect_nflows(w->ins); i++) {
    const jct_flow_stats_t *st = &jct_inspect_flow(w->ins, i)->st;
    w->naks += st->nak_seq_err;
    w->timeouts += st->timeouts;
  }
  size_t n = 0; /* the go-backs the inspector profiled (profile.h) */
  const uint64_t *depth = w->ins ? jct__inspect_go_backs(w->ins, &n) : NULL;
  for (size_t i = 0; w->cur && i < n; i++)
    keep(&w->cur->go_back_psns, depth[i]);
  if (unwatched) w->cur->go_back_psns.lost = true;
  jct_inspect_free(w->ins);
  w->ins = NULL;
  w->cur = NULL;
  w->unwatched = false;
  return unwatched ? JCT_ENOMEM : 0;
}

static void unwatched(jct__loss_watch_t *w) {
  w->unwatched = true;
  w->cur->recovery_ns.lost = true;
}

/* The frame just added, a RoCE packet, counted when the inspector took it
 * for a re-sent one (its flow's count moved), with its UDP payload. */
static void count_resent(jct__loss_watch_t *w, const uint8_t *frame, size_t len) {
  long fi = jct__inspect_last_flow(w->ins);
  size_t udp, udp_len;
  if (fi < 0) {
    unwatched(w);
    return;
  }
  while ((size_t)fi >= w->nflows) { /* flows are numbered as first seen */
    if (jct__grow((void **)&w->flow_resent, &w->capflows, w->nflows, sizeof *w->flow_resent)) {
      unwatched(w);
      return;
    }
    w->flow_resent[w->nflows++] = 0;
  }
  uint64_t n = jct_inspect_flow(w->ins, (size_t)fi)->st.retransmitted_packets;
  if (n == w->flow_resent[fi]) return;
  w->flow_resent[fi] = n;
  if (!jct__frame_roce(frame, len, &udp, &udp_len)) { /* agrees with jct_decode: never */
    unwatched(w);
    return;
  }
  w->resent_packets++;
  w->resent_bytes += udp_len - 8;
}

void jct__loss_watch_frame(const uint8_t *frame, size_t len, uint64_t t_ns, void *arg) {
  jct__loss_watch_t *w = arg;
  if (!w->ins) return;
  jct_packet_t pkt;
  if (jct_decode(DLT_EN10MB, frame, len, len, &pkt) != JCT_PKT_ROCE) return;
  if (jct_inspect_add(w->ins, &pkt, t_ns, ++w->frame_no, (uint32_t)len))
    unwatched(w);
  else
    count_resent(w, frame, len);
}

void jct__loss_watch_resent(const jct__loss_watch_t *w, uint64_t *packets, uint64_t *bytes) {
  *packets = w->resent_packets;
  *bytes = w->resent_bytes;
}

void jct__loss_watch_go_backs(const jct__loss_watch_t *w, uint64_t *naks, uint64_t *timeouts) {
  *naks = w->naks;
  *timeouts = w->timeouts;
}

static void forget(samples_t *s) {
  s->s.n = 0;
  s->lost = false;
}

void jct__loss_watch_reset(jct__loss_watch_t *w) {
  for (int i = 0; i < 2; i++) {
    forget(&w->side[i].recovery_ns);
    forget(&w->side[i].go_back_psns);
  }
}

/* The median (lower middle) and, when spread is not NULL, the samples'
 * bins, as the capture's figure is made (jct__samples_figure); false when
 * empty or lost. */
static bool median(const samples_t *s, uint64_t *m, uint64_t *n, uint64_t *spread) {
  *m = 0, *n = s->s.n;
  if (spread) memset(spread, 0, JCT_FIGURE_BINS * sizeof *spread);
  jct_figure_t f;
  if (!s->s.n || s->lost || jct__samples_figure(&s->s, &f)) return false;
  *m = f.median;
  if (spread) memcpy(spread, f.spread, sizeof f.spread);
  return true;
}

bool jct__loss_watch_median(jct__loss_watch_t *w, bool faulted, uint64_t *median_ns, uint64_t *n,
                            uint64_t *spread) {
  return median(&w->side[faulted].recovery_ns, median_ns, n, spread);
}

bool jct__loss_watch_go_back(jct__loss_watch_t *w, bool faulted, uint64_t *median_psns, uint64_t *n,
                             uint64_t *spread) {
  return median(&w->side[faulted].go_back_psns, median_psns, n, spread);
}

void jct__loss_watch_free(jct__loss_watch_t *w) {
  if (!w) return;
  jct__loss_watch_end(w);
  free(w->flow_resent);
  for (int i = 0; i < 2; i++)
    jct__samples_free(&w->side[i].recovery_ns.s), jct__samples_free(&w->side[i].go_back_psns.s);
  free(w);
}
