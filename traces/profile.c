/* The profile collector (profile_int.h; figures defined in profile.h).
 *
 * inspect.c calls it as it classifies each packet: data packets (path MTU,
 * back-to-back spacing per link), ACKs (ACK coalescing), timeout episodes
 * and each hole's retransmission (holes.h). Per link (address pair) it
 * keeps 4 bytes, and a record (the time of its last data packet, its
 * spacing samples) for a link that carries messages of more than one
 * packet; per flow nothing (the inspector keeps what is needed in its
 * records).
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"
#include "profile_int.h"

#define WIRE_OVERHEAD_BYTES 24u /* preamble 8, FCS 4, inter-frame gap 12 */

/* How far PSN a is past b; 0 when it is not (a go-back's PSNs are within
 * a window, far less than half the PSN space). */
static inline uint32_t psn_past(uint32_t a, uint32_t b) {
  int32_t d = jct_psn_diff(a, b);
  return d > 0 ? (uint32_t)d : 0;
}

static void keep(jct__prof_t *p, jct__samples_t *s, uint64_t v) {
  if (jct__samples_add(s, v)) p->oom = true;
}

/* The record of link number i, made when make is set; NULL when there is
 * none (or no memory: then p->oom). */
static jct__prof_link_t *link_of(jct__prof_t *p, uint32_t i, bool make, const jct_packet_t *pkt,
                                 uint64_t ts_ns) {
  while (p->nlink1 <= i) {
    if (jct__grow((void **)&p->link1, &p->caplink1, p->nlink1, sizeof *p->link1)) goto oom;
    p->link1[p->nlink1++] = 0;
  }
  if (p->link1[i]) return &p->links[p->link1[i] - 1];
  if (!make) return NULL;
  if (jct__grow((void **)&p->links, &p->caplinks, p->nlinks, sizeof *p->links)) goto oom;
  jct__prof_link_t *l = &p->links[p->nlinks++];
  memset(l, 0, sizeof *l);
  l->src = pkt->src;
  l->dst = pkt->dst;
  l->prev_ns = ts_ns;
  p->link1[i] = (uint32_t)p->nlinks;
  return NULL; /* made: the packet is its first */
oom:
  p->oom = true;
  return NULL;
}

void jct__prof_data(jct__prof_t *p, uint32_t link, const jct_packet_t *pkt, uint64_t ts_ns,
                    uint32_t wire_len, bool continues) {
  uint8_t pos = pkt->op->pos;
  if (!(pos & JCT_POS_LAST) && pkt->payload_bytes && /* FIRST or MIDDLE: full */
      jct__vhist_add(&p->mtu, pkt->payload_bytes))
    p->oom = true;
  /* A link gets a record with its first packet of a message of more than
   * one (most links of many flows carry none: no cost for them). */
  jct__prof_link_t *l = link_of(p, link, pos != JCT_POS_ONLY, pkt, ts_ns);
  if (!l) return;
  if (continues && ts_ns > l->prev_ns &&
      jct__ratehist_add(&l->h, (uint64_t)wire_len + WIRE_OVERHEAD_BYTES, ts_ns - l->prev_ns))
    p->oom = true;
  if (ts_ns > l->prev_ns) l->prev_ns = ts_ns;
}

void jct__prof_acked(jct__prof_t *p, uint64_t psns) {
  if (jct__vhist_add(&p->per_ack, psns)) p->oom = true;
}

void jct__prof_timeout(jct__prof_t *p, uint64_t idle_ns) {
  keep(p, &p->timeout_idle, idle_ns);
}

void jct__prof_resent(jct__prof_t *p, const jct__hole_t *h, uint64_t ts_ns, uint32_t reach,
                      bool by_timeout) {
  if (ts_ns >= h->seen_ns) keep(p, &p->recovery, ts_ns - h->seen_ns);
  if (!h->has_nak) return;
  if (!h->from_nak && h->nak_ns >= h->seen_ns) keep(p, &p->hole_to_nak, h->nak_ns - h->seen_ns);
  if (by_timeout || ts_ns < h->nak_ns) return;
  keep(p, &p->nak_to_resend, ts_ns - h->nak_ns);
  keep(p, &p->go_back, psn_past(reach, h->psn));
  keep(p, &p->after_nak, psn_past(reach, h->hi_at_nak));
}

/* The links with back-to-back samples, with their figures. */
static int links(const jct__prof_t *p, jct_profile_t *out) {
  out->links = calloc(p->nlinks ? p->nlinks : 1, sizeof *out->links);
  if (!out->links) return JCT_ENOMEM;
  for (size_t i = 0; i < p->nlinks; i++) {
    const jct__prof_link_t *l = &p->links[i];
    if (!l->h.total) continue;
    jct_profile_link_t *o = &out->links[out->nlinks++];
    jct_addr_str(&l->src, o->src, sizeof o->src);
    jct_addr_str(&l->dst, o->dst, sizeof o->dst);
    o->src_rank = o->dst_rank = -1;
    jct__ratehist_figure(&l->h, &o->rate_bps, &o->rate_mode_n);
    jct__ratehist_sums(&l->h, &o->sample_bytes, &o->sample_ns);
  }
  return 0;
}

int jct__prof_result(const jct__prof_t *p, jct_profile_t **out) {
  *out = NULL;
  if (p->oom) return JCT_ENOMEM; /* a figure would be short of samples */
  jct_profile_t *r = calloc(1, sizeof *r);
  if (!r) return JCT_ENOMEM;
  jct__vhist_figure(&p->mtu, &r->mtu_bytes);
  jct__vhist_figure(&p->per_ack, &r->packets_per_ack);
  int rc = 0;
  if ((rc = jct__samples_figure(&p->hole_to_nak, &r->hole_to_nak_ns)) ||
      (rc = jct__samples_figure(&p->nak_to_resend, &r->nak_to_resend_ns)) ||
      (rc = jct__samples_figure(&p->recovery, &r->loss_recovery_ns)) ||
      (rc = jct__samples_figure(&p->go_back, &r->go_back_psns)) ||
      (rc = jct__samples_figure(&p->after_nak, &r->go_back_after_nak_psns)) ||
      (rc = jct__samples_figure(&p->timeout_idle, &r->timeout_ns)) || (rc = links(p, r))) {
    jct_profile_free(r);
    return rc;
  }
  r->timeout_exp = -1;
  if (r->timeout_ns.set) {
    r->timeout_exp = jct_profile_timeout_exp(r->timeout_ns.median);
    r->timeout_ns.value = jct_profile_timeout_ns(r->timeout_exp);
    r->timeout_ns.set = r->timeout_exp >= 0;
  }
  *out = r;
  return 0;
}

void jct__prof_free(jct__prof_t *p) {
  for (size_t i = 0; i < p->nlinks; i++)
    jct__ratehist_free(&p->links[i].h);
  free(p->links);
  free(p->link1);
  jct__vhist_free(&p->mtu);
  jct__vhist_free(&p->per_ack);
  jct__samples_free(&p->hole_to_nak);
  jct__samples_free(&p->nak_to_resend);
  jct__samples_free(&p->recovery);
  jct__samples_free(&p->go_back);
  jct__samples_free(&p->after_nak);
  jct__samples_free(&p->timeout_idle);
  memset(p, 0, sizeof *p);
}
