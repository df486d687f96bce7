/* The emulated fabric's switch (include/jctlab/switch.h): a pure model
 * driven by the caller's clock, no I/O.
 *
 * Storage. Frames are copied once into a cell store sized at creation (the
 * buffer's cells, plus the cells that frames on the wire can hold: each
 * port's bandwidth-delay product over its propagation delay and 100 us of
 * caller lateness) and referenced by slot index from singly linked FIFOs:
 * 8 queues per egress port, then one "wire" list per port of frames whose
 * serialization has started and which leave at depart_ns. Enqueue, dequeue
 * and emission are O(1); nothing is allocated after jct_switch_new().
 *
 * Time. Each port caches the time of its next internal event (start of a
 * serialization, PFC refresh, watchdog detection or restoration); rx and
 * poll first run every event due by now in time order across ports, so the
 * state a frame meets is the state at its arrival time, whatever the
 * caller's polling pattern. Serialization keeps the sub-nanosecond
 * remainder while the link stays busy, so back-to-back frames are paced
 * exactly at (L + overhead) * 8 / rate.
 *
 * Scheduling: at the moment the link frees (or the first frame becomes
 * eligible), a pending PFC frame goes first (MAC control bypasses the
 * queues), then the highest priority queue whose head is eligible: its
 * ready time has come (arrival, or a hook's hold) and the queue is not
 * paused by a received PFC (IEEE 802.1Qbb clause 36), unless the PFC
 * watchdog declared a storm with action forward.
 *
 * PFC generation (802.1Qbb): per (ingress port, priority) charge; XOFF at
 * >= xoff_bytes with pfc_quanta, sent again at half the quanta's time at
 * the link's rate while the charge stays >= xon_bytes; XON (quanta 0) once
 * it falls below xon_bytes. Frames from a paused sender still in flight are
 * admitted while the pool has room (the headroom is the pool); past it they
 * are dropped as pfc_headroom_overflow. Received PFC is honoured on the
 * priorities with PFC enabled, 802.3x PAUSE (opcode 0x0001) on all.
 *
 * PFC watchdog (as SONiC's pfcwd): a queue paused continuously for
 * wd_detection_ns enters storm; action drop discards its queued frames and
 * every later arrival, action forward ignores the pause; restored (pause
 * cleared) once wd_restoration_ns pass without a pause frame for it.
 *
 * ECN: on egress enqueue of an ECT(0)/ECT(1) IPv4/IPv6 frame of a priority
 * with marking on, with q the queue's depth in frame bytes before it:
 * q <= Kmin no mark, q >= Kmax mark, else mark with probability
 * Pmax (q - Kmin) / (Kmax - Kmin) -- the RED-like profile DCQCN (Zhu et al.,
 * SIGCOMM 2015) configures on switches. Marking sets CE (RFC 3168) and
 * updates the IPv4 header checksum incrementally (RFC 1624, eqn. 3). The
 * RoCEv2 ICRC masks the traffic class, so it stays valid. Random numbers
 * come from xoshiro256** seeded through splitmix64 with cfg->seed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/switch.h"
#include "common/rng.h"
#include "common/wire.h"
#include "switch_int.h"

const char *jct_switch_drop_name(int reason) {
  static const char *const names[] = {"forwarded",
#define JCT__SW_DROP_NAME(name, text) text,
                                      JCT_SWITCH_DROP_MAP(JCT__SW_DROP_NAME)
#undef JCT__SW_DROP_NAME
  };
  if (reason < 0 || reason >= JCT_SW_DROP_NREASONS) return "unknown";
  return names[reason];
}

/* ---- configuration ------------------------------------------------------ */

void jct_switch_config_default(jct_switch_config_t *cfg, uint32_t nports, uint64_t rate_bps) {
  memset(cfg, 0, sizeof *cfg);
  cfg->nports = nports;
  for (uint32_t p = 0; p < JCT_SWITCH_MAX_PORTS; p++) {
    cfg->port[p].rate_bps = rate_bps;
    const uint8_t mac[6] = {0x02, 0x00, 0x00, 0x5e, 0x00, (uint8_t)(p + 1)};
    memcpy(cfg->port[p].mac, mac, 6);
  }
  cfg->buffer_bytes = 1u << 20;
  cfg->cell_bytes = 128;
  cfg->max_frame_bytes = 9216;
  cfg->overhead_bytes = 24;
  cfg->mac_table_size = 1024;
  for (unsigned d = 0; d < 64; d++)
    cfg->dscp_to_prio[d] = (uint8_t)(d >> 3);
  cfg->xoff_bytes = 64 * 1024;
  cfg->xon_bytes = 32 * 1024;
  cfg->pfc_quanta = 0xffff;
  cfg->wd_action = JCT_SW_WD_DROP;
  cfg->wd_detection_ns = 200000000;
  cfg->wd_restoration_ns = 200000000;
  cfg->kmin_bytes = 5 * 1024;
  cfg->kmax_bytes = 200 * 1024;
  cfg->pmax = 0.01;
  cfg->seed = 1;
  cfg->ecmp_flowlet_gap_ns = 500000;
}

static int validate(const jct_switch_config_t *c, char *err, size_t errlen) {
  if (c->nports < 2 || c->nports > JCT_SWITCH_MAX_PORTS)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: nports %u is outside [2, %u]", c->nports,
                     JCT_SWITCH_MAX_PORTS);
  for (uint32_t p = 0; p < c->nports; p++) {
    const jct_switch_port_config_t *pc = &c->port[p];
    if (pc->rate_bps < 1 || pc->rate_bps > JCT_SWITCH_MAX_RATE_BPS)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: port %u: rate_bps %llu is outside [1, 1e12]", p,
                       (unsigned long long)pc->rate_bps);
    if (pc->prop_delay_ns > NS_PER_S)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: port %u: prop_delay_ns %llu exceeds 1 s",
                       p, (unsigned long long)pc->prop_delay_ns);
    double bdp = (double)pc->rate_bps * (double)pc->prop_delay_ns / 8e9;
    if (bdp > (double)MAX_BDP_BYTES)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: port %u: rate_bps x prop_delay_ns is %.0f bytes on the wire, "
                       "more than 256 MiB",
                       p, bdp);
    if (pc->mac[0] & 1)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: port %u: mac is a group address", p);
  }
  if (c->cell_bytes < 64 || c->cell_bytes > 16384)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: cell_bytes %u is outside [64, 16384]",
                     c->cell_bytes);
  if (c->max_frame_bytes < PFC_FRAME_BYTES || c->max_frame_bytes > 65535)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: max_frame_bytes %u is outside [60, 65535]",
                     c->max_frame_bytes);
  if (c->buffer_bytes < c->max_frame_bytes || c->buffer_bytes > (16ull << 30))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "switch: buffer_bytes %llu is outside [max_frame_bytes, 16 GiB]",
                     (unsigned long long)c->buffer_bytes);
  if ((c->buffer_bytes / c->cell_bytes) > (1ull << 30))
    return jct__errf(err, errlen, JCT_EINVAL, "switch: buffer_bytes / cell_bytes exceeds 2^30");
  if (c->overhead_bytes > 64)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: overhead_bytes %u exceeds 64",
                     c->overhead_bytes);
  if (c->mac_table_size < 1 || c->mac_table_size > (1u << 20))
    return jct__errf(err, errlen, JCT_EINVAL, "switch: mac_table_size %u is outside [1, 2^20]",
                     c->mac_table_size);
  for (unsigned d = 0; d < 64; d++)
    if (c->dscp_to_prio[d] >= JCT_SWITCH_PRIOS)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: dscp_to_prio[%u] = %u is not a priority",
                       d, c->dscp_to_prio[d]);
  if (c->default_prio >= JCT_SWITCH_PRIOS)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: default_prio %u is not a priority",
                     c->default_prio);
  if (c->pfc_enable) {
    if (c->xoff_bytes == 0 || c->xoff_bytes > c->buffer_bytes)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: xoff_bytes %llu is outside [1, buffer_bytes]",
                       (unsigned long long)c->xoff_bytes);
    if (c->xon_bytes == 0 || c->xon_bytes > c->xoff_bytes)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: xon_bytes %llu is outside [1, xoff_bytes %llu]",
                       (unsigned long long)c->xon_bytes, (unsigned long long)c->xoff_bytes);
    if (c->pfc_quanta == 0)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: pfc_quanta must be > 0");
  }
  if (c->wd_enable) {
    if (c->wd_action != JCT_SW_WD_DROP && c->wd_action != JCT_SW_WD_FORWARD)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: wd_action %d is not drop or forward",
                       (int)c->wd_action);
    if (c->wd_detection_ns == 0 || c->wd_restoration_ns == 0)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: wd_detection_ns and wd_restoration_ns must be > 0");
  }
  if (c->ecn_enable) {
    if (c->kmin_bytes > c->kmax_bytes)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: kmin_bytes %llu > kmax_bytes %llu",
                       (unsigned long long)c->kmin_bytes, (unsigned long long)c->kmax_bytes);
    if (!(c->pmax >= 0.0 && c->pmax <= 1.0))
      return jct__errf(err, errlen, JCT_EINVAL, "switch: pmax %g is outside [0, 1]", c->pmax);
  }
  if ((unsigned)c->ecmp_mode > JCT_SW_ECMP_FLOWLET)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: ecmp_mode %d is unknown",
                     (int)c->ecmp_mode);
  if (c->ecmp_mode == JCT_SW_ECMP_FLOWLET && !c->ecmp_flowlet_gap_ns)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: ecmp_flowlet_gap_ns is 0");
  return 0;
}

/* Frames one port's wire can hold, and the cells for them. */
static void wire_capacity(const jct_switch_config_t *c, uint32_t p, uint64_t *frames,
                          uint64_t *cells) {
  const jct_switch_port_config_t *pc = &c->port[p];
  double ns = (double)(pc->prop_delay_ns + WIRE_SLACK_NS);
  uint64_t bytes = (uint64_t)((double)pc->rate_bps * ns / 8e9) + 2ull * c->max_frame_bytes;
  *frames = bytes / (14 + c->overhead_bytes) + 4;
  *cells = bytes / c->cell_bytes + *frames;
}

void jct_switch_free(jct_switch_t *sw) {
  if (!sw) return;
  free(sw->cells);
  free(sw->cell_next);
  free(sw->slots);
  free(sw->rx_buf);
  free(sw->hook_buf);
  free(sw->out_buf);
  free(sw->mac_key);
  free(sw->mac_port);
  free(sw);
}

int jct_switch_new(jct_switch_t **out, const jct_switch_config_t *cfg, char *err, size_t errlen) {
  *out = NULL;
  int rc = validate(cfg, err, errlen);
  if (rc) return rc;
  jct_switch_t *sw = calloc(1, sizeof *sw);
  if (!sw) return jct__errf(err, errlen, JCT_ENOMEM, "switch: out of memory");
  sw->cfg = *cfg;
  sw->nports = cfg->nports;
  uint64_t ncells = cfg->buffer_bytes / cfg->cell_bytes, nslots = 0;
  for (uint32_t p = 0; p < sw->nports; p++) {
    uint64_t wf, wc;
    wire_capacity(cfg, p, &wf, &wc);
    ncells += wc;
    nslots += wf;
    port_t *pt = &sw->port[p];
    pt->cfg = cfg->port[p];
    for (int i = 0; i < JCT_SWITCH_PRIOS; i++) {
      pt->q[i].head = pt->q[i].tail = NIL;
      pt->refresh_ns[i] = UINT64_MAX;
    }
    pt->wire.head = pt->wire.tail = NIL;
    pt->next_ns = pt->next_visible_ns = UINT64_MAX;
    /* 802.1Qbb: a quantum is 512 bit times; refresh at half the pause. */
    pt->refresh_interval_ns = (uint64_t)cfg->pfc_quanta * 512 * NS_PER_S / pt->cfg.rate_bps / 2;
    if (pt->refresh_interval_ns == 0) pt->refresh_interval_ns = 1;
  }
  nslots += ncells;
  uint32_t tab = 1;
  while (tab < 2 * cfg->mac_table_size)
    tab <<= 1;
  if (ncells >= NIL || nslots >= NIL) {
    jct_switch_free(sw);
    return jct__errf(err, errlen, JCT_EINVAL, "switch: buffer and wires need too many cells");
  }
  sw->ncells = (uint32_t)ncells;
  sw->nslots = (uint32_t)nslots;
  sw->cells = malloc((size_t)ncells * cfg->cell_bytes);
  sw->cell_next = malloc((size_t)ncells * sizeof *sw->cell_next);
  sw->slots = malloc((size_t)nslots * sizeof *sw->slots);
  sw->rx_buf = malloc(cfg->max_frame_bytes);
  sw->hook_buf = malloc(cfg->max_frame_bytes);
  sw->out_buf = malloc(cfg->max_frame_bytes);
  sw->mac_key = calloc(tab, sizeof *sw->mac_key);
  sw->mac_port = calloc(tab, 1);
  if (!sw->cells || !sw->cell_next || !sw->slots || !sw->rx_buf || !sw->hook_buf || !sw->out_buf ||
      !sw->mac_key || !sw->mac_port) {
    jct_switch_free(sw);
    return jct__errf(err, errlen, JCT_ENOMEM, "switch: out of memory for %llu cells",
                     (unsigned long long)ncells);
  }
  sw->mac_mask = tab - 1;
  for (uint32_t i = 0; i < sw->ncells; i++)
    sw->cell_next[i] = i + 1 < sw->ncells ? i + 1 : NIL;
  sw->free_cell = 0;
  sw->free_cells = sw->ncells;
  for (uint32_t i = 0; i < sw->nslots; i++)
    sw->slots[i].next = i + 1 < sw->nslots ? i + 1 : NIL;
  sw->free_slot = 0;
  sw->free_slots = sw->nslots;
  jct__rng_seed(sw->rng, cfg->seed);
  *out = sw;
  return 0;
}

/* ---- MAC table ---------------------------------------------------------- */

static uint32_t mac_hash(const jct_switch_t *sw, uint64_t key) {
  return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & sw->mac_mask;
}

/* Store value (a port, or ECMP_BASE + a group) for mac. */
static int mac_put(jct_switch_t *sw, const uint8_t mac[6], uint8_t value) {
  uint64_t key = jct__sw_mac48(mac) | 1ull << 63;
  for (uint32_t i = mac_hash(sw, key);; i = (i + 1) & sw->mac_mask) {
    if (sw->mac_key[i] == key) {
      sw->mac_port[i] = value;
      return 0;
    }
    if (sw->mac_key[i] == 0) {
      if (sw->mac_count >= sw->cfg.mac_table_size) return JCT_ENOMEM;
      sw->mac_key[i] = key;
      sw->mac_port[i] = value;
      sw->mac_count++;
      return 0;
    }
  }
}

int jct_switch_add_mac(jct_switch_t *sw, const uint8_t mac[6], uint32_t port) {
  if (!sw || !mac || port >= sw->nports || (mac[0] & 1)) return JCT_EINVAL;
  return mac_put(sw, mac, (uint8_t)port);
}

int jct_switch_add_mac_ecmp(jct_switch_t *sw, const uint8_t mac[6], const uint32_t *ports,
                            uint32_t n) {
  if (!sw || !mac || !ports || n < 1 || n > JCT_SWITCH_MAX_ECMP_WAYS || (mac[0] & 1))
    return JCT_EINVAL;
  for (uint32_t k = 0; k < n; k++)
    if (ports[k] >= sw->nports) return JCT_EINVAL;
  if (n == 1) return mac_put(sw, mac, (uint8_t)ports[0]);
  uint32_t g = 0; /* an equal group already made, or a new one */
  for (; g < sw->ngroups; g++)
    if (!sw->group[g].own && sw->group[g].n == n &&
        !memcmp(sw->group[g].port, ports, n * sizeof *ports))
      break;
  if (g == sw->ngroups) {
    if (g == JCT_SWITCH_MAX_ECMP_GROUPS) return JCT_ENOMEM;
    sw->group[g].n = n;
    memcpy(sw->group[g].port, ports, n * sizeof *ports);
    sw->ngroups++;
  }
  return mac_put(sw, mac, (uint8_t)(ECMP_BASE + g));
}

int jct_switch_add_mac_group(jct_switch_t *sw, const uint8_t mac[6], uint32_t group) {
  if (!sw || !mac || group >= sw->ngroups || (mac[0] & 1)) return JCT_EINVAL;
  return mac_put(sw, mac, (uint8_t)(ECMP_BASE + group));
}

/* The port (or ECMP_BASE + group) for a unicast MAC, or -1 when unknown. */
int jct__sw_mac_lookup(const jct_switch_t *sw, const uint8_t *mac) {
  uint64_t key = jct__sw_mac48(mac) | 1ull << 63;
  for (uint32_t i = mac_hash(sw, key);; i = (i + 1) & sw->mac_mask) {
    if (sw->mac_key[i] == key) return sw->mac_port[i];
    if (sw->mac_key[i] == 0) return -1;
  }
}

int jct_switch_set_hook(jct_switch_t *sw, uint32_t port, jct_switch_stage_t stage,
                        jct_switch_hook_cb cb, void *arg) {
  if (!sw || port >= sw->nports || (stage != JCT_SW_INGRESS && stage != JCT_SW_EGRESS))
    return JCT_EINVAL;
  sw->port[port].hook[stage] = cb;
  sw->port[port].hook_arg[stage] = cb ? arg : NULL;
  return 0;
}

int jct_switch_set_wd_cb(jct_switch_t *sw, jct_switch_wd_cb cb, void *arg) {
  if (!sw) return JCT_EINVAL;
  sw->wd_cb = cb;
  sw->wd_arg = cb ? arg : NULL;
  return 0;
}

/* ---- counters and the accounting identities ---------------------------- */

int jct_switch_port_stats(const jct_switch_t *sw, uint32_t port, uint64_t now_ns,
                          jct_switch_port_stats_t *out) {
  if (!sw || port >= sw->nports || !out) return JCT_EINVAL;
  const port_t *pt = &sw->port[port];
  *out = pt->st;
  for (int i = 0; i < JCT_SWITCH_PRIOS; i++) {
    out->in_use_bytes[i] = pt->in_use[i];
    uint64_t ahead = pt->paused_until_ns[i] > now_ns ? pt->paused_until_ns[i] - now_ns : 0;
    out->paused_ns[i] = pt->paused_ns[i] - ahead;
    out->queue_bytes += pt->q[i].bytes;
  }
  return 0;
}

int jct_switch_reset_peak(jct_switch_t *sw, uint32_t port) {
  if (!sw || port >= sw->nports) return JCT_EINVAL;
  port_t *pt = &sw->port[port];
  pt->st.peak_queue_bytes = 0;
  for (int i = 0; i < JCT_SWITCH_PRIOS; i++)
    if (pt->q[i].bytes > pt->st.peak_queue_bytes) pt->st.peak_queue_bytes = pt->q[i].bytes;
  return 0;
}

static uint64_t sum_drops(const uint64_t *d) {
  uint64_t s = 0;
  for (int r = 1; r < JCT_SW_DROP_NREASONS; r++)
    s += d[r];
  return s;
}

void jct_switch_totals(const jct_switch_t *sw, jct_switch_totals_t *o) {
  memset(o, 0, sizeof *o);
  for (uint32_t p = 0; p < sw->nports; p++) {
    const jct_switch_port_stats_t *s = &sw->port[p].st;
    o->rx_frames += s->rx_frames;
    o->rx_control += s->rx_control;
    o->rx_drops += sum_drops(s->rx_drops);
    o->rx_forwarded += s->rx_forwarded;
    o->floods += s->floods;
    o->copies += s->copies;
    o->offered += s->offered;
    o->duplicates += s->rx_duplicates + s->tx_duplicates;
    o->tx_frames += s->tx_frames;
    o->tx_drops += sum_drops(s->tx_drops);
    o->queued_frames += s->queued_frames;
    o->wire_frames += s->wire_frames;
    for (int r = 1; r < JCT_SW_DROP_NREASONS; r++)
      o->drops[r] += s->rx_drops[r] + s->tx_drops[r];
    o->tx_pfc_xoff += s->tx_pfc_xoff;
    o->tx_pfc_xon += s->tx_pfc_xon;
    o->rx_pfc_xoff += s->rx_pfc_xoff;
    o->rx_pfc_xon += s->rx_pfc_xon;
    o->ecn_marked += s->ecn_marked;
    o->wd_storms += s->wd_storms;
    o->wd_restores += s->wd_restores;
  }
  o->pool_used_bytes = sw->pool_used;
  o->pool_bytes = sw->cfg.buffer_bytes;
}

int jct_switch_check(const jct_switch_t *sw, char *err, size_t errlen) {
  uint64_t copies = 0, offered = 0, charged = 0, in_use = 0;
  for (uint32_t p = 0; p < sw->nports; p++) {
    const port_t *pt = &sw->port[p];
    const jct_switch_port_stats_t *s = &pt->st;
    uint64_t rx = s->rx_control + sum_drops(s->rx_drops) + s->rx_forwarded;
    if (s->rx_frames + s->rx_duplicates != rx)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: port %u: rx_frames %llu + duplicates %llu != control + drops + "
                       "forwarded %llu",
                       p, (unsigned long long)s->rx_frames, (unsigned long long)s->rx_duplicates,
                       (unsigned long long)rx);
    uint64_t queued = 0, wire = 0;
    for (int i = 0; i < JCT_SWITCH_PRIOS; i++) {
      for (uint32_t x = pt->q[i].head; x != NIL; x = sw->slots[x].next) {
        queued++;
        charged += sw->slots[x].charged;
      }
      in_use += pt->in_use[i];
    }
    for (uint32_t x = pt->wire.head; x != NIL; x = sw->slots[x].next)
      if (sw->slots[x].cell != NIL) wire++;
    uint64_t tx = s->tx_frames + sum_drops(s->tx_drops) + queued + wire;
    if (s->offered != tx)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "switch: port %u: offered %llu != tx + drops + queued %llu + wire %llu "
                       "= %llu",
                       p, (unsigned long long)s->offered, (unsigned long long)queued,
                       (unsigned long long)wire, (unsigned long long)tx);
    if (queued != s->queued_frames)
      return jct__errf(err, errlen, JCT_EINVAL, "switch: port %u: %llu frames queued, counter %llu",
                       p, (unsigned long long)queued, (unsigned long long)s->queued_frames);
    copies += s->copies + s->tx_duplicates;
    offered += s->offered;
  }
  if (copies != offered)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "switch: copies %llu (egress duplicates included) != offered %llu",
                     (unsigned long long)copies, (unsigned long long)offered);
  if (charged != sw->pool_used || in_use != sw->pool_used)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "switch: pool use %llu, queued frames' charge %llu, ingress charges %llu",
                     (unsigned long long)sw->pool_used, (unsigned long long)charged,
                     (unsigned long long)in_use);
  if (sw->pool_used > sw->cfg.buffer_bytes)
    return jct__errf(err, errlen, JCT_EINVAL, "switch: pool use %llu beyond buffer_bytes",
                     (unsigned long long)sw->pool_used);
  return 0;
}
