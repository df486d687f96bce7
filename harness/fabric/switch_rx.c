/* The switch model's forwarding path (see switch.c for the model):
 * classification (802.1Q PCP, IP DSCP), ECN CE marking (RFC 3168, RED-like
 * as DCQCN, checksum by RFC 1624), hooks, admission to the shared buffer
 * and PFC XOFF on the ingress charge. */
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/switch.h"
#include "traces/frame.h"
#include "common/rng.h"
#include "common/wire.h"
#include "switch_int.h"

/* ---- classification and ECN --------------------------------------------- */

/* Priority and IP position: only the ethertype, one 802.1Q tag and the
 * IP traffic class are read. */
static cls_t classify(const jct_switch_t *sw, const uint8_t *f, size_t len) {
  cls_t c = {sw->cfg.default_prio, 0, 0, 0};
  size_t l3;
  uint16_t et;
  int pcp;
  if (!jct__frame_l3(f, len, &l3, &et, &pcp)) return c;
  if (pcp >= 0) c.prio = (uint8_t)pcp;
  uint8_t tos;
  if (et == 0x0800 && len >= l3 + 20 && (f[l3] >> 4) == 4) {
    c.ipver = 4;
    tos = f[l3 + 1];
  } else if (et == 0x86dd && len >= l3 + 40 && (f[l3] >> 4) == 6) {
    c.ipver = 6;
    tos = (uint8_t)((f[l3] & 0x0f) << 4 | f[l3 + 1] >> 4);
  } else {
    return c;
  }
  c.l3 = (uint16_t)l3;
  c.ecn = tos & 3;
  if (pcp < 0) c.prio = sw->cfg.dscp_to_prio[tos >> 2];
  return c;
}

static bool ecn_decide(jct_switch_t *sw, uint64_t q) {
  const jct_switch_config_t *c = &sw->cfg;
  if (q <= c->kmin_bytes) return false;
  if (q >= c->kmax_bytes) return true;
  double p = c->pmax * (double)(q - c->kmin_bytes) / (double)(c->kmax_bytes - c->kmin_bytes);
  return jct__rng_unit(sw->rng) < p;
}

/* ---- the forwarding path ------------------------------------------------ */

/* One frame into egress port e: its hook, then admission. copy: a
 * duplicate (the second pass of a frame a hook duplicated); *dup is set
 * when the hook asks for one of a frame that is not. Returns 0 or the drop
 * reason. */
static int admit(jct_switch_t *sw, uint32_t e, uint32_t in, const uint8_t *data, size_t len,
                 cls_t cls, uint64_t ready, bool head, uint64_t now, bool copy, bool *dup) {
  port_t *ep = &sw->port[e], *ip = &sw->port[in];
  if (ep->hook[JCT_SW_EGRESS]) {
    /* Egress hook call site: each copy, before admission (issue 4). */
    jct_switch_frame_t fr = {.data = (uint8_t *)data,
                             .len = len,
                             .cap = sw->cfg.max_frame_bytes,
                             .in_port = in,
                             .out_port = e,
                             .prio = cls.prio,
                             .scratch = sw->hook_buf,
                             .copy = copy};
    uint64_t hold = 0;
    jct_switch_verdict_t v = ep->hook[JCT_SW_EGRESS](&fr, now, &hold, ep->hook_arg[JCT_SW_EGRESS]);
    if (fr.duplicate && !copy) *dup = true;
    if (v == JCT_SW_DROP) {
      ep->st.tx_drops[JCT_SW_DROP_INJECTOR]++;
      return JCT_SW_DROP_INJECTOR;
    }
    if (v == JCT_SW_HOLD) ready = jct__sw_max64(ready, hold);
    if (v == JCT_SW_HEAD) head = true;
    data = fr.data;
    if (fr.len > fr.cap) fr.len = fr.cap;
    if ((v == JCT_SW_MODIFIED || v == JCT_SW_HEAD) && fr.len >= 14) {
      len = fr.len;
      cls = classify(sw, data, len);
    }
    cls.prio = fr.prio & 7;
  }
  uint8_t bit = (uint8_t)(1u << cls.prio);
  if ((ep->storm & bit) && sw->cfg.wd_action == JCT_SW_WD_DROP) {
    ep->st.tx_drops[JCT_SW_DROP_PFC_WATCHDOG]++;
    return JCT_SW_DROP_PFC_WATCHDOG;
  }
  uint32_t C = sw->cfg.cell_bytes, ncell = (uint32_t)((len + C - 1) / C);
  uint64_t charged = (uint64_t)ncell * C;
  if (sw->pool_used + charged > sw->cfg.buffer_bytes) {
    int r = (sw->cfg.pfc_enable & bit) && (ip->xoff & bit) ? JCT_SW_DROP_PFC_HEADROOM
                                                           : JCT_SW_DROP_BUFFER_OVERFLOW;
    ep->st.tx_drops[r]++;
    return r;
  }
  uint32_t s = jct__sw_store(sw, data, len, ncell);
  if (s == NIL) {
    ep->st.tx_drops[JCT_SW_DROP_HARNESS_POOL]++;
    return JCT_SW_DROP_HARNESS_POOL;
  }
  slot_t *sl = &sw->slots[s];
  sl->charged = (uint32_t)charged;
  sl->ready_ns = ready;
  sl->in_port = (uint8_t)in;
  sl->prio = cls.prio;
  fifo_t *q = &ep->q[cls.prio];
  if ((sw->cfg.ecn_enable & bit) && cls.ipver && cls.ecn != 0 && cls.ecn != 3 &&
      ecn_decide(sw, q->bytes)) {
    jct__ip_set_ce(sw->cells + (size_t)sl->cell * C + cls.l3);
    ep->st.ecn_marked++;
  }
  if (head)
    jct__sw_fifo_push_head(sw, q, s, (uint32_t)len);
  else
    jct__sw_fifo_push(sw, q, s, (uint32_t)len);
  ep->st.queued_frames++;
  if (q->bytes > ep->st.peak_queue_bytes) ep->st.peak_queue_bytes = q->bytes;
  sw->pool_used += charged;
  ip->in_use[cls.prio] += charged;
  if ((sw->cfg.pfc_enable & bit) && !(ip->xoff & bit) &&
      ip->in_use[cls.prio] >= sw->cfg.xoff_bytes) {
    ip->xoff |= bit;
    jct__sw_pfc_request(ip, cls.prio, now);
    if (in != e) jct__sw_touch(sw, in);
  }
  jct__sw_touch(sw, e);
  return 0;
}

/* Offer one copy to egress port e, and the hook's duplicate of it after
 * it (the frame as the hook received it). copy: the frame is already a
 * duplicate (of the ingress hook's), never duplicated again. Returns 0
 * when one of them was queued, else the first's drop reason. */
static int offer(jct_switch_t *sw, uint32_t e, uint32_t in, const uint8_t *data, size_t len,
                 cls_t cls, uint64_t ready, bool head, uint64_t now, bool copy) {
  port_t *ep = &sw->port[e];
  ep->st.offered++;
  sw->port[in].st.copies++;
  bool dup = false;
  int rc = admit(sw, e, in, data, len, cls, ready, head, now, copy, &dup);
  if (dup) {
    ep->st.offered++;
    ep->st.tx_duplicates++;
    if (admit(sw, e, in, data, len, cls, ready, head, now, true, &dup) == 0) rc = 0;
  }
  return rc;
}

static int rx_drop(port_t *pt, int reason) {
  pt->st.rx_drops[reason]++;
  return reason;
}

/* A data frame received on port: its ingress hook, then forwarding.
 * copy and *dup as admit()'s. */
static int ingress(jct_switch_t *sw, uint32_t port, const uint8_t *frame, size_t len,
                   uint64_t now_ns, bool copy, bool *dup) {
  port_t *ip = &sw->port[port];
  const uint8_t *data = frame;
  uint64_t ready = now_ns;
  bool head = false;
  if (ip->hook[JCT_SW_INGRESS]) {
    /* Ingress hook call site: every data frame of the port, before forwarding. */
    jct_switch_frame_t fr = {.data = (uint8_t *)frame,
                             .len = len,
                             .cap = sw->cfg.max_frame_bytes,
                             .in_port = port,
                             .out_port = UINT32_MAX,
                             .prio = classify(sw, frame, len).prio,
                             .scratch = sw->rx_buf,
                             .copy = copy};
    uint64_t hold = 0;
    jct_switch_verdict_t v =
        ip->hook[JCT_SW_INGRESS](&fr, now_ns, &hold, ip->hook_arg[JCT_SW_INGRESS]);
    if (fr.duplicate && !copy) *dup = true;
    if (v == JCT_SW_DROP) return rx_drop(ip, JCT_SW_DROP_INJECTOR);
    if (v == JCT_SW_HOLD) ready = jct__sw_max64(ready, hold);
    if (v == JCT_SW_HEAD) head = true;
    if (fr.len > fr.cap) fr.len = fr.cap;
    if (fr.len < 14) return rx_drop(ip, JCT_SW_DROP_RUNT);
    data = fr.data;
    len = fr.len;
  }
  cls_t cls = classify(sw, data, len);
  int e = (data[0] & 1) ? -1 : jct__sw_mac_lookup(sw, data);
  if (e >= ECMP_BASE) e = (int)jct__sw_ecmp_pick(sw, (uint32_t)e - ECMP_BASE, data, len, now_ns);
  if (e == (int)port) return rx_drop(ip, JCT_SW_DROP_SAME_PORT);
  ip->st.rx_forwarded++;
  if (e >= 0) return offer(sw, (uint32_t)e, port, data, len, cls, ready, head, now_ns, copy);
  ip->st.floods++;
  int rc = 0, ok = 0;
  for (uint32_t p = 0; p < sw->nports; p++) {
    if (p == port || sw->port[p].cfg.no_flood) continue;
    int r = offer(sw, p, port, data, len, cls, ready, head, now_ns, copy);
    if (r == 0)
      ok = 1;
    else
      rc = r;
  }
  return ok ? 0 : rc;
}

int jct_switch_rx(jct_switch_t *sw, uint32_t port, const uint8_t *frame, size_t len,
                  uint64_t now_ns) {
  if (!sw || port >= sw->nports || (!frame && len)) return JCT_EINVAL;
  if (now_ns < sw->last_now_ns) now_ns = sw->last_now_ns;
  sw->last_now_ns = now_ns;
  jct__sw_advance(sw, now_ns);
  port_t *ip = &sw->port[port];
  ip->st.rx_frames++;
  ip->st.rx_bytes += len;
  if (len < 14) return rx_drop(ip, JCT_SW_DROP_RUNT);
  if (len > sw->cfg.max_frame_bytes) return rx_drop(ip, JCT_SW_DROP_OVERSIZE);
  if (jct__be16(frame + 12) == 0x8808) {
    jct__sw_mac_control(sw, port, frame, len, now_ns);
    return 0;
  }
  bool dup = false;
  int rc = ingress(sw, port, frame, len, now_ns, false, &dup);
  if (dup) { /* the frame as received, after the first has gone its way */
    ip->st.rx_duplicates++;
    if (ingress(sw, port, frame, len, now_ns, true, &dup) == 0) rc = 0;
  }
  return rc;
}
