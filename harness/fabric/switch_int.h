/* Internals of the switch model shared by harness/fabric/switch.c
 * (configuration, tables, counters), harness/fabric/switch_sched.c
 * (storage, queues, the event engine, PFC and the watchdog, emission) and
 * harness/fabric/switch_rx.c (classification, ECN, the forwarding path).
 * Not a public interface. */
#ifndef JCT_SWITCH_INT_H
#define JCT_SWITCH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/switch.h"
#include "common/wire.h"

#define NIL UINT32_MAX
#define NS_PER_S 1000000000ull
#define WIRE_SLACK_NS 100000ull /* caller lateness the wire storage absorbs */
#define PFC_FRAME_BYTES 60
#define MAX_BDP_BYTES (256ull << 20)
#define ECMP_BASE JCT_SWITCH_MAX_PORTS /* MAC table values from here name an ECMP group */
#define FLOWLET_ENTRIES 256

/* Flowlet mode: a flow hash's last packet and its current draw. */
typedef struct {
  uint64_t last_ns;
  uint32_t draw;
} flowlet_t;

typedef struct {
  uint32_t n;
  uint32_t port[JCT_SWITCH_MAX_ECMP_WAYS];
  uint64_t next; /* per-packet spraying: the next member */
  bool own;      /* made by jct_switch_ecmp_group_new: never shared */
  uint32_t down; /* bit k: member k withdrawn (jct_switch_ecmp_member_up) */
} ecmp_group_t;

typedef struct {
  uint32_t next;     /* in a queue or a wire list */
  uint32_t cell;     /* first cell; NIL for a PFC frame */
  uint32_t len;      /* frame bytes; for PFC: class-enable vector */
  uint32_t charged;  /* bytes charged to the buffer; for PFC: XOFF mask */
  uint64_t ready_ns; /* may not start serialization before */
  uint64_t depart_ns;
  uint8_t in_port, prio;
} slot_t;

typedef struct {
  uint32_t head, tail, frames;
  uint64_t bytes; /* frame bytes, for ECN */
} fifo_t;

typedef struct {
  jct_switch_port_config_t cfg;
  fifo_t q[JCT_SWITCH_PRIOS];
  fifo_t wire;
  uint64_t busy_until_ns, ser_rem;
  /* pause received on this port (its egress queues) */
  uint64_t paused_until_ns[JCT_SWITCH_PRIOS], pause_began_ns[JCT_SWITCH_PRIOS];
  uint64_t last_pause_rx_ns[JCT_SWITCH_PRIOS], storm_began_ns[JCT_SWITCH_PRIOS];
  uint64_t paused_ns[JCT_SWITCH_PRIOS]; /* granted, including any part still ahead */
  uint8_t storm;
  /* pause sent from this port (as ingress) */
  uint8_t xoff, pfc_pending;
  uint64_t pfc_pending_ns;
  uint64_t refresh_ns[JCT_SWITCH_PRIOS];
  uint64_t refresh_interval_ns;
  uint64_t in_use[JCT_SWITCH_PRIOS];
  jct_switch_hook_cb hook[2];
  void *hook_arg[2];
  /* cached next event */
  uint64_t next_ns, next_visible_ns;
  jct_switch_port_stats_t st;
} port_t;

typedef struct {
  uint8_t prio;
  uint8_t ipver; /* 4, 6 or 0 */
  uint16_t l3;   /* offset of the IP header */
  uint8_t ecn;
} cls_t;

struct jct_switch {
  jct_switch_config_t cfg;
  uint32_t nports;
  port_t port[JCT_SWITCH_MAX_PORTS];
  uint64_t active;  /* ports with next_ns != UINT64_MAX */
  uint64_t on_wire; /* ports with a nonempty wire list */
  uint64_t last_now_ns;
  uint64_t pool_used;
  jct_switch_wd_cb wd_cb; /* the watchdog's transitions (NULL: none) */
  void *wd_arg;
  /* storage */
  uint8_t *cells;
  uint32_t *cell_next;
  uint32_t ncells, free_cell, free_cells;
  slot_t *slots;
  uint32_t nslots, free_slot, free_slots;
  uint8_t *rx_buf, *hook_buf, *out_buf;
  /* MAC table: open addressing, key = MAC | 1 << 63 */
  uint64_t *mac_key;
  uint8_t *mac_port;
  uint32_t mac_mask, mac_count;
  uint64_t rng[4];
  ecmp_group_t group[JCT_SWITCH_MAX_ECMP_GROUPS];
  uint32_t ngroups;
  flowlet_t flowlet[FLOWLET_ENTRIES]; /* flowlet mode, by flow hash */
};

static inline uint64_t jct__sw_max64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

static inline uint64_t jct__sw_mac48(const uint8_t *m) {
  return (uint64_t)jct__be16(m) << 32 | jct__be32(m + 2);
}

/* switch.c */
int jct__sw_mac_lookup(const jct_switch_t *sw, const uint8_t *mac);
/* switch_ecmp.c */
uint32_t jct__sw_ecmp_pick(jct_switch_t *sw, uint32_t group, const uint8_t *frame, size_t len,
                           uint64_t now_ns);
/* switch_sched.c */
uint32_t jct__sw_store(jct_switch_t *sw, const uint8_t *data, size_t len, uint32_t ncell);
void jct__sw_fifo_push(jct_switch_t *sw, fifo_t *f, uint32_t s, uint32_t len);
void jct__sw_fifo_push_head(jct_switch_t *sw, fifo_t *f, uint32_t s, uint32_t len);
void jct__sw_touch(jct_switch_t *sw, uint32_t p);
void jct__sw_pfc_request(port_t *pt, int prio, uint64_t t);
void jct__sw_advance(jct_switch_t *sw, uint64_t now);
void jct__sw_mac_control(jct_switch_t *sw, uint32_t p, const uint8_t *f, size_t len, uint64_t now);

#endif
