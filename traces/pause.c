/* Pause accounting (pause.h).
 *
 * A PFC frame (IEEE 802.1Qbb clause 36, 802.3 Annex 31D) names, per
 * priority whose class-enable bit is set, a pause time in quanta of 512 bit
 * times; 0 is XON. An 802.3x PAUSE (Annex 31B) pauses everything, which
 * the decoder gives as all eight priorities with the same quanta. A new
 * XOFF while paused extends the pause to the later of the two ends; an XON
 * ends it at once; a pause not renewed expires. paused_ns is the union of
 * these intervals, closed lazily when the next frame for the priority
 * comes or at finish. Time per quantum: 512 bits at the link rate,
 * rounded down to whole nanoseconds.
 */
#include "pause.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "jctlab/error.h"

#define LINK_QP 0xfffffffeu /* dest_qp of a link's table key */

struct pause_state {
  bool on;
  uint64_t start_ns, end_ns;
};

struct jct__link {
  jct_flow_key_t key; /* first, for flowtab.h: the MAC in src.bytes */
  jct_link_t pub;
  struct pause_state p[8];
};

static long link_of(jct__links_t *ls, const uint8_t mac[6]) {
  jct_flow_key_t k;
  memset(&k, 0, sizeof k);
  memcpy(k.src.bytes, mac, 6);
  k.dest_qp = LINK_QP;
  uint32_t h = jct__ftab_hash(&k);
  long li = jct__ftab_find(&ls->tab, &k, h, ls->links, sizeof *ls->links);
  if (li >= 0) return li;
  if (jct__grow((void **)&ls->links, &ls->cap, ls->n, sizeof *ls->links) ||
      jct__ftab_insert(&ls->tab, h, ls->n))
    return -1;
  struct jct__link *l = &ls->links[ls->n];
  memset(l, 0, sizeof *l);
  l->key = k;
  memcpy(l->pub.src_mac, mac, 6);
  return (long)ls->n++;
}

int jct__links_add(jct__links_t *ls, const jct_packet_t *pkt, uint64_t ts_ns, uint64_t frame_no,
                   jct_event_cb cb, void *arg) {
  const jct_pfc_t *pf = &pkt->pfc;
  long li = link_of(ls, pkt->src_mac);
  if (li < 0) return JCT_ENOMEM;
  struct jct__link *l = &ls->links[li];
  l->pub.frames++;
  if (pf->is_pause) l->pub.pause_802_3x = true;
  for (unsigned p = 0; p < 8; p++) {
    if (!(pf->class_enable & (1u << p))) continue;
    jct_pause_prio_t *pp = &l->pub.prio[p];
    struct pause_state *st = &l->p[p];
    pp->frames++;
    if (st->on && ts_ns >= st->end_ns) { /* expired before this frame */
      pp->paused_ns += st->end_ns - st->start_ns;
      st->on = false;
    }
    jct_event_t ev = {.ts_ns = ts_ns,
                      .frame_no = frame_no,
                      .flow = -1,
                      .link = li,
                      .prio = (uint8_t)p,
                      .value = pf->quanta[p]};
    if (pf->quanta[p]) {
      /* at most 2^16 * 512 * 10^9: well inside 64 bits */
      uint64_t dur = (uint64_t)pf->quanta[p] * 512u * 1000000000u / ls->rate_bps;
      pp->xoff++;
      if (!st->on) {
        st->on = true;
        st->start_ns = ts_ns;
        st->end_ns = ts_ns + dur;
      } else if (ts_ns + dur > st->end_ns) {
        st->end_ns = ts_ns + dur;
      }
      ev.type = JCT_EV_PAUSE;
      ev.dur_ns = dur;
    } else {
      pp->xon++;
      if (st->on) {
        ev.dur_ns = ts_ns > st->start_ns ? ts_ns - st->start_ns : 0;
        pp->paused_ns += ev.dur_ns;
        st->on = false;
      }
      ev.type = JCT_EV_RESUME;
    }
    if (cb) cb(&ev, arg);
  }
  return 0;
}

void jct__links_finish(jct__links_t *ls, jct_totals_t *t) {
  for (size_t i = 0; i < ls->n; i++) {
    struct jct__link *l = &ls->links[i];
    for (int p = 0; p < 8; p++) {
      if (l->p[p].on) { /* still paused: counts up to its expiry */
        l->pub.prio[p].paused_ns += l->p[p].end_ns - l->p[p].start_ns;
        l->p[p].on = false;
      }
      t->paused_ns += l->pub.prio[p].paused_ns;
      t->pause_frames_xoff += l->pub.prio[p].xoff;
      t->pause_frames_xon += l->pub.prio[p].xon;
    }
  }
}

const jct_link_t *jct__links_get(const jct__links_t *ls, size_t i) {
  return i < ls->n ? &ls->links[i].pub : NULL;
}

void jct__links_free(jct__links_t *ls) {
  free(ls->links);
  ls->links = NULL;
  ls->n = ls->cap = 0;
  jct__ftab_free(&ls->tab);
}
