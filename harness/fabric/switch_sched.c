/* The switch model's engine (see switch.c for the model): the cell store
 * and FIFOs, the per-port event times and their processing in time order
 * (serialization starts, PFC generation and refresh, PFC watchdog), received
 * MAC control (802.1Qbb PFC, 802.3x PAUSE), and emission in departure
 * order. */
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/switch.h"
#include "common/wire.h"
#include "switch_int.h"

/* ---- storage and FIFOs -------------------------------------------------- */

static uint32_t slot_get(jct_switch_t *sw) {
  uint32_t s = sw->free_slot;
  if (s == NIL) return NIL;
  sw->free_slot = sw->slots[s].next;
  sw->free_slots--;
  sw->slots[s].next = NIL;
  return s;
}

/* A slot holding a copy of data in ncell cells; NIL when storage is out. */
uint32_t jct__sw_store(jct_switch_t *sw, const uint8_t *data, size_t len, uint32_t ncell) {
  if (sw->free_cells < ncell || sw->free_slot == NIL) return NIL;
  uint32_t s = slot_get(sw), C = sw->cfg.cell_bytes;
  uint32_t first = sw->free_cell, c = first, last = first;
  size_t off = 0;
  for (uint32_t i = 0; i < ncell; i++) {
    size_t n = len - off < C ? len - off : C;
    memcpy(sw->cells + (size_t)c * C, data + off, n);
    off += n;
    last = c;
    c = sw->cell_next[c];
  }
  sw->free_cell = c;
  sw->cell_next[last] = NIL;
  sw->free_cells -= ncell;
  sw->slots[s].cell = first;
  sw->slots[s].len = (uint32_t)len;
  return s;
}

static void release_slot(jct_switch_t *sw, uint32_t s) {
  slot_t *sl = &sw->slots[s];
  if (sl->cell != NIL) {
    uint32_t c = sl->cell, n = 1;
    while (sw->cell_next[c] != NIL) {
      c = sw->cell_next[c];
      n++;
    }
    sw->cell_next[c] = sw->free_cell;
    sw->free_cell = sl->cell;
    sw->free_cells += n;
  }
  sl->next = sw->free_slot;
  sw->free_slot = s;
  sw->free_slots++;
}

void jct__sw_fifo_push(jct_switch_t *sw, fifo_t *f, uint32_t s, uint32_t len) {
  sw->slots[s].next = NIL;
  if (f->tail == NIL)
    f->head = s;
  else
    sw->slots[f->tail].next = s;
  f->tail = s;
  f->frames++;
  f->bytes += len;
}

void jct__sw_fifo_push_head(jct_switch_t *sw, fifo_t *f, uint32_t s, uint32_t len) {
  sw->slots[s].next = f->head;
  f->head = s;
  if (f->tail == NIL) f->tail = s;
  f->frames++;
  f->bytes += len;
}

static uint32_t fifo_pop(jct_switch_t *sw, fifo_t *f) {
  uint32_t s = f->head;
  f->head = sw->slots[s].next;
  if (f->head == NIL) f->tail = NIL;
  f->frames--;
  f->bytes -= sw->slots[s].cell == NIL ? 0 : sw->slots[s].len;
  return s;
}

/* ---- events ------------------------------------------------------------- */

static uint64_t gate_ns(const jct_switch_t *sw, const port_t *pt, int prio) {
  if ((pt->storm >> prio & 1) && sw->cfg.wd_action == JCT_SW_WD_FORWARD) return 0;
  return pt->paused_until_ns[prio];
}

static uint64_t ser_ns_peek(const port_t *pt, uint32_t len, uint32_t overhead) {
  return ((uint64_t)(len + overhead) * 8 * NS_PER_S) / pt->cfg.rate_bps;
}

/* Recompute a port's next internal event and its first visible effect. */
void jct__sw_touch(jct_switch_t *sw, uint32_t p) {
  port_t *pt = &sw->port[p];
  uint64_t next = UINT64_MAX, vis = UINT64_MAX;
  uint64_t elig = UINT64_MAX;
  uint32_t len = 0;
  if (pt->pfc_pending) {
    elig = pt->pfc_pending_ns;
    len = PFC_FRAME_BYTES;
  }
  for (int i = JCT_SWITCH_PRIOS - 1; i >= 0; i--) {
    if (pt->q[i].head == NIL) continue;
    const slot_t *h = &sw->slots[pt->q[i].head];
    uint64_t e = jct__sw_max64(h->ready_ns, gate_ns(sw, pt, i));
    if (e < elig) {
      elig = e;
      len = h->len;
    }
  }
  if (elig != UINT64_MAX) {
    next = jct__sw_max64(pt->busy_until_ns, elig);
    vis = next + ser_ns_peek(pt, len, sw->cfg.overhead_bytes) + pt->cfg.prop_delay_ns;
  }
  for (int i = 0; i < JCT_SWITCH_PRIOS; i++) {
    uint64_t t = UINT64_MAX;
    if (sw->cfg.wd_enable) {
      if (pt->storm >> i & 1) {
        t = jct__sw_max64(pt->last_pause_rx_ns[i], pt->storm_began_ns[i]) +
            sw->cfg.wd_restoration_ns;
      } else if (pt->paused_until_ns[i] > pt->pause_began_ns[i] &&
                 pt->paused_until_ns[i] >= pt->pause_began_ns[i] + sw->cfg.wd_detection_ns) {
        t = pt->pause_began_ns[i] + sw->cfg.wd_detection_ns;
      }
    }
    if ((pt->xoff >> i & 1) && !(pt->pfc_pending >> i & 1) && pt->refresh_ns[i] < t)
      t = pt->refresh_ns[i];
    if (t < next) next = t;
    if (t < vis) vis = t;
  }
  pt->next_ns = next;
  pt->next_visible_ns = vis;
  if (next != UINT64_MAX)
    sw->active |= 1ull << p;
  else
    sw->active &= ~(1ull << p);
}

void jct__sw_pfc_request(port_t *pt, int prio, uint64_t t) {
  if (!pt->pfc_pending) pt->pfc_pending_ns = t;
  pt->pfc_pending |= (uint8_t)(1u << prio);
}

/* Give back a frame's buffer charge; XON toward its sender when due. */
static void uncharge(jct_switch_t *sw, const slot_t *sl, uint64_t t) {
  port_t *in = &sw->port[sl->in_port];
  sw->pool_used -= sl->charged;
  in->in_use[sl->prio] -= sl->charged;
  if ((in->xoff >> sl->prio & 1) && in->in_use[sl->prio] < sw->cfg.xon_bytes) {
    in->xoff &= (uint8_t) ~(1u << sl->prio);
    in->refresh_ns[sl->prio] = UINT64_MAX;
    jct__sw_pfc_request(in, sl->prio, t);
    jct__sw_touch(sw, sl->in_port);
  }
}

static void wire_push(jct_switch_t *sw, uint32_t p, uint32_t s, uint32_t len, uint64_t t) {
  port_t *pt = &sw->port[p];
  if (pt->busy_until_ns < t) pt->ser_rem = 0;
  uint64_t num = (uint64_t)(len + sw->cfg.overhead_bytes) * 8 * NS_PER_S + pt->ser_rem;
  uint64_t ser = num / pt->cfg.rate_bps;
  pt->ser_rem = num % pt->cfg.rate_bps;
  pt->busy_until_ns = t + ser;
  sw->slots[s].depart_ns = t + ser + pt->cfg.prop_delay_ns;
  bool data = sw->slots[s].cell != NIL;
  jct__sw_fifo_push(sw, &pt->wire, s, data ? len : 0);
  if (data) pt->st.wire_frames++;
  sw->on_wire |= 1ull << p;
}

static void send_pfc(jct_switch_t *sw, uint32_t p, uint64_t t) {
  port_t *pt = &sw->port[p];
  uint32_t s = slot_get(sw);
  if (s == NIL) { /* cannot happen: slots are sized for full wires */
    pt->pfc_pending = 0;
    return;
  }
  slot_t *sl = &sw->slots[s];
  sl->cell = NIL;
  sl->len = pt->pfc_pending;
  sl->charged = pt->xoff & pt->pfc_pending;
  sl->in_port = (uint8_t)p;
  if (sl->charged)
    pt->st.tx_pfc_xoff++;
  else
    pt->st.tx_pfc_xon++;
  for (int i = 0; i < JCT_SWITCH_PRIOS; i++)
    if (sl->charged >> i & 1) pt->refresh_ns[i] = t + pt->refresh_interval_ns;
  pt->pfc_pending = 0;
  wire_push(sw, p, s, PFC_FRAME_BYTES, t);
}

static void tx_drop(jct_switch_t *sw, uint32_t p, uint32_t s, int reason) {
  sw->port[p].st.tx_drops[reason]++;
  release_slot(sw, s);
}

static void watchdog_storm(jct_switch_t *sw, uint32_t p, int prio, uint64_t t) {
  port_t *pt = &sw->port[p];
  pt->storm |= (uint8_t)(1u << prio);
  pt->storm_began_ns[prio] = t;
  pt->st.wd_storms++;
  if (sw->cfg.wd_action == JCT_SW_WD_DROP)
    while (pt->q[prio].head != NIL) {
      uint32_t s = fifo_pop(sw, &pt->q[prio]);
      pt->st.queued_frames--;
      uncharge(sw, &sw->slots[s], t);
      tx_drop(sw, p, s, JCT_SW_DROP_PFC_WATCHDOG);
    }
  if (sw->wd_cb) sw->wd_cb(sw, p, prio, true, t, sw->wd_arg);
}

static void watchdog_restore(jct_switch_t *sw, uint32_t p, int prio, uint64_t t) {
  port_t *pt = &sw->port[p];
  pt->storm &= (uint8_t) ~(1u << prio);
  pt->st.wd_restores++;
  if (sw->wd_cb) sw->wd_cb(sw, p, prio, false, t, sw->wd_arg);
  pt->pause_began_ns[prio] = t;
  if (pt->paused_until_ns[prio] > t) {
    pt->paused_ns[prio] -= pt->paused_until_ns[prio] - t;
    pt->paused_until_ns[prio] = t;
  }
}

/* Run port p's event at t. */
static void port_event(jct_switch_t *sw, uint32_t p, uint64_t t) {
  port_t *pt = &sw->port[p];
  for (int i = 0; i < JCT_SWITCH_PRIOS; i++) {
    if (sw->cfg.wd_enable) {
      if (pt->storm >> i & 1) {
        if (jct__sw_max64(pt->last_pause_rx_ns[i], pt->storm_began_ns[i]) +
                sw->cfg.wd_restoration_ns <=
            t)
          watchdog_restore(sw, p, i, t);
      } else if (pt->paused_until_ns[i] > pt->pause_began_ns[i] &&
                 pt->paused_until_ns[i] >= pt->pause_began_ns[i] + sw->cfg.wd_detection_ns &&
                 pt->pause_began_ns[i] + sw->cfg.wd_detection_ns <= t) {
        watchdog_storm(sw, p, i, t);
      }
    }
    if ((pt->xoff >> i & 1) && pt->refresh_ns[i] <= t) {
      pt->refresh_ns[i] = UINT64_MAX;
      jct__sw_pfc_request(pt, i, t);
    }
  }
  if (pt->busy_until_ns <= t) {
    if (pt->pfc_pending && pt->pfc_pending_ns <= t) {
      send_pfc(sw, p, t);
    } else {
      for (int i = JCT_SWITCH_PRIOS - 1; i >= 0; i--) {
        if (pt->q[i].head == NIL) continue;
        const slot_t *h = &sw->slots[pt->q[i].head];
        if (jct__sw_max64(h->ready_ns, gate_ns(sw, pt, i)) > t) continue;
        uint32_t s = fifo_pop(sw, &pt->q[i]);
        pt->st.queued_frames--;
        uncharge(sw, &sw->slots[s], t);
        wire_push(sw, p, s, sw->slots[s].len, t);
        break;
      }
    }
  }
  jct__sw_touch(sw, p);
}

/* The port of mask whose key(sw, port) is earliest, the lowest port among
 * equals; the time in *t (UINT64_MAX for an empty mask). */
static inline uint32_t earliest_port(const jct_switch_t *sw, uint64_t mask,
                                     uint64_t (*key)(const jct_switch_t *, uint32_t), uint64_t *t) {
  uint64_t best_t = UINT64_MAX;
  uint32_t best = 0;
  while (mask) {
    uint32_t p = (uint32_t)__builtin_ctzll(mask);
    mask &= mask - 1;
    uint64_t k = key(sw, p);
    if (k < best_t) {
      best_t = k;
      best = p;
    }
  }
  *t = best_t;
  return best;
}

static uint64_t next_event_ns(const jct_switch_t *sw, uint32_t p) {
  return sw->port[p].next_ns;
}

/* Run every event due by now, in time order across ports. */
void jct__sw_advance(jct_switch_t *sw, uint64_t now) {
  while (sw->active) {
    uint64_t best_t;
    uint32_t best = earliest_port(sw, sw->active, next_event_ns, &best_t);
    if (best_t > now) return;
    port_event(sw, best, best_t);
  }
}

/* ---- received MAC control (PFC, PAUSE) ---------------------------------- */

static void apply_pause(jct_switch_t *sw, uint32_t p, int prio, uint16_t quanta, uint64_t now) {
  port_t *pt = &sw->port[p];
  pt->last_pause_rx_ns[prio] = now;
  if (pt->paused_until_ns[prio] > now) {
    pt->paused_ns[prio] -= pt->paused_until_ns[prio] - now;
    pt->paused_until_ns[prio] = now;
  } else if (quanta) {
    pt->pause_began_ns[prio] = now;
  }
  if (!quanta) return;
  uint64_t dur = (uint64_t)quanta * 512 * NS_PER_S / pt->cfg.rate_bps;
  pt->paused_ns[prio] += dur;
  pt->paused_until_ns[prio] = now + dur;
}

void jct__sw_mac_control(jct_switch_t *sw, uint32_t p, const uint8_t *f, size_t len, uint64_t now) {
  port_t *pt = &sw->port[p];
  pt->st.rx_control++;
  if (len < 18) return;
  uint16_t op = jct__be16(f + 14);
  bool any = false, seen = false;
  if (op == 0x0101 && len >= 34) {
    uint16_t vec = jct__be16(f + 16);
    for (int i = 0; i < JCT_SWITCH_PRIOS; i++) {
      if (!(vec >> i & 1)) continue;
      uint16_t q = jct__be16(f + 18 + 2 * i);
      any |= q != 0;
      seen = true;
      if (sw->cfg.pfc_enable >> i & 1) apply_pause(sw, p, i, q, now);
    }
  } else if (op == 0x0001) {
    uint16_t q = jct__be16(f + 16);
    any = q != 0;
    seen = true;
    for (int i = 0; i < JCT_SWITCH_PRIOS; i++)
      apply_pause(sw, p, i, q, now);
  }
  if (seen) {
    if (any)
      pt->st.rx_pfc_xoff++;
    else
      pt->st.rx_pfc_xon++;
  }
  jct__sw_touch(sw, p);
}

/* ---- emission ------------------------------------------------------------ */

static const uint8_t *frame_bytes(jct_switch_t *sw, uint32_t p, const slot_t *sl, size_t *len) {
  uint8_t *o = sw->out_buf;
  if (sl->cell == NIL) {
    /* 802.1Qbb PFC: MAC control to 01:80:c2:00:00:01, opcode 0x0101. */
    static const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
    memset(o, 0, PFC_FRAME_BYTES);
    memcpy(o, dst, 6);
    memcpy(o + 6, sw->port[p].cfg.mac, 6);
    jct__put16(o + 12, 0x8808);
    jct__put16(o + 14, 0x0101);
    jct__put16(o + 16, (uint16_t)sl->len);
    for (int i = 0; i < JCT_SWITCH_PRIOS; i++)
      if (sl->charged >> i & 1) jct__put16(o + 18 + 2 * i, sw->cfg.pfc_quanta);
    *len = PFC_FRAME_BYTES;
    return o;
  }
  uint32_t C = sw->cfg.cell_bytes;
  *len = sl->len;
  if (sl->len <= C) return sw->cells + (size_t)sl->cell * C;
  size_t off = 0;
  for (uint32_t c = sl->cell; c != NIL; c = sw->cell_next[c]) {
    size_t n = sl->len - off < C ? sl->len - off : C;
    memcpy(o + off, sw->cells + (size_t)c * C, n);
    off += n;
  }
  return o;
}

static uint64_t next_depart_ns(const jct_switch_t *sw, uint32_t p) {
  return sw->slots[sw->port[p].wire.head].depart_ns;
}

size_t jct_switch_poll(jct_switch_t *sw, uint64_t now_ns, jct_switch_emit_cb cb, void *arg) {
  if (!sw) return 0;
  if (now_ns < sw->last_now_ns) now_ns = sw->last_now_ns;
  sw->last_now_ns = now_ns;
  jct__sw_advance(sw, now_ns);
  size_t n = 0;
  while (sw->on_wire) {
    uint64_t best_t;
    uint32_t best = earliest_port(sw, sw->on_wire, next_depart_ns, &best_t);
    if (best_t > now_ns) break;
    port_t *pt = &sw->port[best];
    uint32_t s = fifo_pop(sw, &pt->wire);
    if (pt->wire.head == NIL) sw->on_wire &= ~(1ull << best);
    const slot_t *sl = &sw->slots[s];
    if (sl->cell != NIL) pt->st.wire_frames--;
    size_t len;
    const uint8_t *f = frame_bytes(sw, best, sl, &len);
    if (sl->cell != NIL) {
      pt->st.tx_frames++;
      pt->st.tx_bytes += len;
    }
    if (cb) cb(best, f, len, best_t, arg);
    release_slot(sw, s);
    n++;
  }
  return n;
}

uint64_t jct_switch_next_deadline_ns(const jct_switch_t *sw) {
  uint64_t t = UINT64_MAX;
  if (!sw) return t;
  /* Only ports with an event (active: next_visible_ns is UINT64_MAX on the
   * others) or a frame on the wire: a leaf-spine fabric asks every switch
   * this after every emission, and most of a switch's ports are idle. */
  for (uint64_t mask = sw->active | sw->on_wire; mask; mask &= mask - 1) {
    const port_t *pt = &sw->port[__builtin_ctzll(mask)];
    if (pt->next_visible_ns < t) t = pt->next_visible_ns;
    if (pt->wire.head != NIL && sw->slots[pt->wire.head].depart_ns < t)
      t = sw->slots[pt->wire.head].depart_ns;
  }
  return t;
}
