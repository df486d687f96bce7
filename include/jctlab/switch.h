/* The emulated fabric's switch: a pure model, no I/O (DESIGN.md, "Fabric").
 *
 * Frames go in with jct_switch_rx(port, frame, len, now_ns) and come out
 * of jct_switch_poll(now_ns, emit_cb) at their departure times; the caller
 * owns the clock (a fake one in tests, the timerfd loop in jctlab run) and
 * arms its timer at jct_switch_next_deadline_ns(). now_ns must not go
 * backwards across calls (an earlier value is taken as the latest seen).
 *
 * Model, per port (a port is the switch end of one link):
 *  - Static L2 forwarding from a MAC table the caller fills; group
 *    (broadcast/multicast) and unknown unicast destinations flood to every
 *    port but the ingress. A unicast destination on the ingress port is
 *    filtered (IEEE 802.1D), counted as drop "same_port".
 *  - 8 egress queues per port, priority from the 802.1Q PCP when tagged,
 *    else from the IP DSCP through a 64-entry map (default DSCP >> 3); strict
 *    priority, 7 highest; FIFO within a queue.
 *  - Serialization pacing at the port's rate: a frame of L bytes (as given,
 *    without FCS) holds the link for (L + overhead_bytes) * 8 / rate, with
 *    overhead_bytes = 24 by default: preamble+SFD 8, FCS 4, IFG 12. Its
 *    departure time is when its last bit has crossed the link: start of
 *    serialization + serialization + propagation delay.
 *  - A shared buffer of buffer_bytes accounted in cells of cell_bytes, as
 *    switch MMUs do: a frame of L bytes uses ceil(L / cell_bytes) cells and is
 *    charged that many cells' bytes, to the pool and to its (ingress port,
 *    priority). A frame is admitted when the pool has room; the charge is
 *    released when its serialization starts.
 *  - PFC (IEEE 802.1Qbb) per priority: XOFF toward the sender when the
 *    (ingress port, priority) charge reaches xoff_bytes, refreshed at half
 *    the quanta's time while still above xon_bytes, XON (quanta 0) once below
 *    xon_bytes. Received PFC pauses the egress queue for quanta * 512 bit
 *    times at the port's rate; 802.3x PAUSE pauses all 8. Both are MAC
 *    control: consumed, never forwarded.
 *  - PFC watchdog (off by default; SONiC's defaults): a queue paused
 *    continuously for detection_ns is in storm: action drop discards its
 *    frames, action forward ignores the pause, until restoration_ns pass
 *    without a pause frame for it.
 *  - ECN (RFC 3168) marking on egress enqueue, RED-like as DCQCN configures
 *    it: Kmin, Kmax in bytes of queue depth, Pmax.
 *
 * Accounting (DESIGN.md decision 4): every frame received, and every
 * duplicate an ingress hook made of one, is consumed as MAC control,
 * dropped before forwarding (rx_drops), or forwarded as one copy per egress
 * port (one for unicast, one per other port when flooded); every copy, and
 * every duplicate an egress hook made of one, is transmitted, dropped at
 * admission (tx_drops), or still held (queued or on the wire).
 * jct_switch_check() verifies both identities per port and in total
 * against the queues themselves.
 *
 * Memory: everything is allocated by jct_switch_new(); rx and poll never
 * allocate. Not thread-safe: one caller thread.
 */
#ifndef JCTLAB_SWITCH_H
#define JCTLAB_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define JCT_SWITCH_MAX_PORTS 64
#define JCT_SWITCH_PRIOS 8
#define JCT_SWITCH_MAX_RATE_BPS 1000000000000ull /* 1 Tbit/s */
#define JCT_SWITCH_MAX_ECMP_WAYS 16   /* next hops in one ECMP group */
#define JCT_SWITCH_MAX_ECMP_GROUPS 64 /* distinct groups per switch */

typedef struct jct_switch jct_switch_t;

/* Why a frame (or one copy of it) was not forwarded. 0 is not a drop. */
#define JCT_SWITCH_DROP_MAP(XX)                                                                    \
  XX(RUNT, "runt")                          /* shorter than an Ethernet header (14 bytes) */       \
  XX(OVERSIZE, "oversize")                  /* longer than max_frame_bytes */                      \
  XX(SAME_PORT, "same_port")                /* destination MAC is on the ingress port */           \
  XX(BUFFER_OVERFLOW, "buffer_overflow")    /* no room in the shared buffer */                     \
  XX(PFC_HEADROOM, "pfc_headroom_overflow") /* no room while XOFF was sent: a bad PFC config */    \
  XX(PFC_WATCHDOG, "pfc_watchdog")          /* queue in PFC storm, watchdog action drop */         \
  XX(INJECTOR, "injector")                  /* a hook returned JCT_SW_DROP */                      \
  XX(HARNESS_POOL, "harness_pool")          /* the model's own storage ran out: run invalid */

typedef enum {
  JCT_SW_FORWARDED = 0,
#define JCT__SW_DROP_ENUM(name, text) JCT_SW_DROP_##name,
  JCT_SWITCH_DROP_MAP(JCT__SW_DROP_ENUM)
#undef JCT__SW_DROP_ENUM
      JCT_SW_DROP_NREASONS
} jct_switch_drop_t;

/* "buffer_overflow", ...; "forwarded" for 0; "unknown" otherwise. */
const char *jct_switch_drop_name(int reason);

typedef enum { JCT_SW_WD_DROP = 0, JCT_SW_WD_FORWARD = 1 } jct_switch_wd_action_t;

/* How a frame picks a member of an ECMP group (jct_switch_add_mac_ecmp):
 * by a hash of its 5-tuple (what switch ASICs do: every packet of a flow
 * takes one path); or, what-ifs, no ASIC's default: per packet, round
 * robin over the members (packet spraying); per flowlet, a flow keeps its
 * member while its packets follow each other within ecmp_flowlet_gap_ns
 * and draws a new one at random after a longer gap (LetFlow, Vanini et
 * al., NSDI 2017; flows are told apart by their hash in a 256-entry
 * table, so two flows may share an entry, as in hardware). */
typedef enum {
  JCT_SW_ECMP_HASH = 0,
  JCT_SW_ECMP_PER_PACKET = 1,
  JCT_SW_ECMP_FLOWLET = 2
} jct_switch_ecmp_mode_t;

typedef struct {
  uint64_t rate_bps;      /* 1 .. JCT_SWITCH_MAX_RATE_BPS */
  uint64_t prop_delay_ns; /* propagation delay of the link, <= 1 s */
  uint8_t mac[6];         /* the port's own MAC: source of the PFC frames it sends */
  bool no_flood;          /* a link between switches of a routed (L3) Clos: group and unknown
                             destinations are never flooded to it (no L2 loops) */
} jct_switch_port_config_t;

typedef struct {
  uint32_t nports; /* 2 .. JCT_SWITCH_MAX_PORTS */
  jct_switch_port_config_t port[JCT_SWITCH_MAX_PORTS];
  uint64_t buffer_bytes;    /* shared pool, >= max_frame_bytes, <= 16 GiB */
  uint32_t cell_bytes;      /* accounting unit, 64 .. 16384 (default 128) */
  uint32_t max_frame_bytes; /* largest frame accepted, 60 .. 65535 (default 9216) */
  uint32_t overhead_bytes;  /* per frame on the wire, <= 64 (default 24) */
  uint32_t mac_table_size;  /* entries, 1 .. 1 << 20 (default 1024) */
  uint8_t dscp_to_prio[64]; /* each < 8 (default DSCP >> 3) */
  uint8_t default_prio;     /* untagged non-IP frames (default 0) */

  uint8_t pfc_enable;  /* bit i: PFC on priority i (default none) */
  uint64_t xoff_bytes; /* per (ingress port, priority); 0 < xoff <= buffer */
  uint64_t xon_bytes;  /* <= xoff_bytes */
  uint16_t pfc_quanta; /* sent in XOFF, > 0 (default 0xffff) */

  bool wd_enable;                              /* PFC watchdog (default off) */
  jct_switch_wd_action_t wd_action;            /* default drop */
  uint64_t wd_detection_ns, wd_restoration_ns; /* > 0 (default 200 ms each) */

  uint8_t ecn_enable;              /* bit i: ECN marking on priority i (default none) */
  uint64_t kmin_bytes, kmax_bytes; /* kmin <= kmax */
  double pmax;                     /* [0, 1] */
  uint64_t seed;                   /* for the marking PRNG; same seed, same marks */

  jct_switch_ecmp_mode_t ecmp_mode; /* default hash */
  uint32_t ecmp_seed;               /* the hash's seed (jct_switch_ecmp_hash) */
  uint64_t ecmp_flowlet_gap_ns;     /* flowlet mode: the gap that starts a flowlet, > 0
                                       (default 500 us, CONGA's and LetFlow's) */
} jct_switch_config_t;

/* Defaults for nports ports at rate_bps, no propagation delay, port MACs
 * 02:00:00:5e:00:<port+1>, buffer 1 MiB, PFC/ECN/watchdog off. */
void jct_switch_config_default(jct_switch_config_t *cfg, uint32_t nports, uint64_t rate_bps);

/* Validate cfg completely, then build the switch. Errors: JCT_EINVAL with
 * err naming the field ("port 2: rate_bps 0 is outside [1, 1e12]"),
 * JCT_ENOMEM. On error *out is NULL. */
int jct_switch_new(jct_switch_t **out, const jct_switch_config_t *cfg, char *err, size_t errlen);
void jct_switch_free(jct_switch_t *sw);

/* Static forwarding entry: frames to mac leave by port. Re-adding a MAC
 * moves it. Errors: JCT_EINVAL (port out of range, group MAC), JCT_ENOMEM
 * (table full). */
int jct_switch_add_mac(jct_switch_t *sw, const uint8_t mac[6], uint32_t port);

/* Frames to mac leave by one of n ports (an ECMP group, equal-cost next
 * hops, n <= JCT_SWITCH_MAX_ECMP_WAYS), chosen per frame by cfg.ecmp_mode:
 * member jct_switch_ecmp_hash(ecmp_seed, frame) % n; frames without an IP
 * header hash their MAC addresses. n == 1 is jct_switch_add_mac().
 * Errors: JCT_EINVAL (a port out of range, n, group MAC), JCT_ENOMEM (table
 * full, or more than JCT_SWITCH_MAX_ECMP_GROUPS distinct groups). */
int jct_switch_add_mac_ecmp(jct_switch_t *sw, const uint8_t mac[6], const uint32_t *ports,
                            uint32_t n);

/* ---- Routes whose members can be withdrawn (rerouting around a link) ----
 *
 * jct_switch_add_mac_ecmp shares one group between every MAC with the same
 * ports; a route that must lose a member on its own (the route to one leaf
 * through one spine, withdrawn when that spine's link to the leaf is down)
 * needs a group of its own: jct_switch_ecmp_group_new, then
 * jct_switch_add_mac_group for each destination it serves.
 *
 * A member taken down with jct_switch_ecmp_member_up(.., false) gets no
 * frame. The rehash is resilient (as the "resilient hashing" of Broadcom's
 * Trident/Tomahawk and NVIDIA Spectrum ECMP groups, RFC 2992's concern
 * about disrupting flows): a flow whose member is up keeps it; only the
 * flows of a down member move, each to live member fmix32(hash ^
 * 0x5bd1e995) mod (members up), in member order -- so the same flows move
 * to the same places for the same seed. Bringing the member up again moves
 * exactly those flows back. With every member down the flows keep their
 * own (the frames are lost on the link, as before any withdrawal).
 * Per-packet spraying skips down members; a flowlet's draw maps as a
 * hash does. */

/* A new group of n ports, 2 <= n <= JCT_SWITCH_MAX_ECMP_WAYS, every member
 * up. Returns its number (>= 0), or JCT_EINVAL (a port out of range, n),
 * JCT_ENOMEM (JCT_SWITCH_MAX_ECMP_GROUPS groups already). */
int jct_switch_ecmp_group_new(jct_switch_t *sw, const uint32_t *ports, uint32_t n);

/* Frames to mac take group (one of jct_switch_ecmp_group_new's). Errors:
 * JCT_EINVAL (no such group, group MAC), JCT_ENOMEM (table full). */
int jct_switch_add_mac_group(jct_switch_t *sw, const uint8_t mac[6], uint32_t group);

/* Take port out of group (up false) or put it back. Returns how many
 * members are up afterwards, or JCT_EINVAL (no such group, port not in
 * it). */
int jct_switch_ecmp_member_up(jct_switch_t *sw, uint32_t group, uint32_t port, bool up);

/* The ECMP hash of a frame: CRC-32 (the IEEE 802.3 polynomial, reflected,
 * as zlib's crc32(0, ...)) over the 5-tuple in network order -- source
 * address, destination address (4 or 16 bytes each), IP protocol, and for
 * UDP/TCP the source and destination ports (0 otherwise) -- then mixed with
 * the seed: fmix32(crc ^ fmix32(seed + 0x9e3779b9)), fmix32 MurmurHash3's
 * finalizer. CRC-32 over the 5-tuple is what switch ASICs offer (Broadcom's
 * CRC32_LO/HI); the seed is what an operator changes to draw other paths,
 * and it goes in after the CRC because CRC is linear: as the CRC's initial
 * value it would only XOR one constant into every flow's hash (relabel the
 * members, never regroup the flows). Frames without IPv4/IPv6 hash their
 * destination and source MACs instead. Pure: the same seed and frame give
 * the same value. */
uint32_t jct_switch_ecmp_hash(uint32_t seed, const uint8_t *frame, size_t len);

/* A frame arrived on port at now_ns (its last bit received). The switch
 * copies it. Returns 0 (consumed as MAC control, or at least one copy
 * queued), a positive jct_switch_drop_t (unicast dropped, or every copy of
 * a flood dropped: the last reason), or JCT_EINVAL (port out of range,
 * frame NULL). */
int jct_switch_rx(jct_switch_t *sw, uint32_t port, const uint8_t *frame, size_t len,
                  uint64_t now_ns);

/* Called once per departing frame, data and PFC alike, with the arg given
 * to jct_switch_poll(); frame is valid only during the call. */
typedef void (*jct_switch_emit_cb)(uint32_t port, const uint8_t *frame, size_t len,
                                   uint64_t depart_ns, void *arg);

/* Emit every frame whose departure time is <= now_ns, in departure order
 * (ties: lower port first). Returns how many were emitted. */
size_t jct_switch_poll(jct_switch_t *sw, uint64_t now_ns, jct_switch_emit_cb cb, void *arg);

/* When poll next has something to do; UINT64_MAX when idle. */
uint64_t jct_switch_next_deadline_ns(const jct_switch_t *sw);

/* ---- Hooks: where injector chains (issue 4) see frames -------------------
 *
 * One hook per port and stage. JCT_SW_INGRESS runs on every non-control
 * frame received on the port, before forwarding; JCT_SW_EGRESS runs on each
 * copy offered to the port, before buffer admission. The hook may read
 * f->data and change a copy of it (jct_switch_frame_writable(), then up to
 * f->cap bytes; set f->len), and returns:
 *   JCT_SW_PASS      forward unchanged,
 *   JCT_SW_DROP      drop, counted as reason "injector" at this stage,
 *   JCT_SW_HOLD      forward, but the frame may not start serialization
 *                    before *hold_until_ns (its queue keeps its order: a held
 *                    head holds the frames behind it, as netem without
 *                    reorder); a held frame occupies the buffer meanwhile,
 *   JCT_SW_MODIFIED  forward f->data as changed,
 *   JCT_SW_HEAD      forward f->data (changed or not) at the head of its
 *                    queue, ahead of frames held there (netem's reorder).
 * With any verdict the hook may also set f->duplicate: once the frame has
 * gone its way, the switch calls the same hook again with a copy of the
 * frame as the hook first received it and f->copy set, and forwards that
 * copy by its own verdict, queued behind the first (netem's duplicate:
 * net/sched/sch_netem.c re-enqueues a clone at the root of the qdisc tree,
 * marked so that no netem duplicates it again). A copy is never
 * duplicated: f->duplicate is ignored on it, and an ingress copy reaches
 * the egress hook with f->copy set. Copies are counted (rx_duplicates,
 * tx_duplicates) and accounted as frames of their own.
 * Hooks are called with the switch in a consistent state but must not call
 * back into the switch. A pause-storm injector sends PFC frames with
 * jct_switch_rx(), as a rank would. */
typedef enum {
  JCT_SW_PASS = 0,
  JCT_SW_DROP,
  JCT_SW_HOLD,
  JCT_SW_MODIFIED,
  JCT_SW_HEAD
} jct_switch_verdict_t;
typedef enum { JCT_SW_INGRESS = 0, JCT_SW_EGRESS = 1 } jct_switch_stage_t;

/* The frame a hook sees. data is read-only: a hook that changes the frame
 * first takes a writable copy with jct_switch_frame_writable() (copy on
 * write: hooks that only look cost no copy). */
typedef struct {
  uint8_t *data;     /* the frame, read-only unless it is scratch */
  size_t len, cap;   /* cap: bytes of scratch */
  uint32_t in_port;  /* where it was received */
  uint32_t out_port; /* egress stage: where it goes; ingress: UINT32_MAX */
  uint8_t prio;      /* the classified priority */
  uint8_t *scratch;  /* the switch's buffer for a changed copy */
  bool copy;         /* a duplicate a hook asked for (below), not a frame a port sent */
  bool duplicate;    /* set by the hook: forward one copy more (not on a copy) */
} jct_switch_frame_t;

/* The frame, copied into scratch first if it is not there yet. */
static inline uint8_t *jct_switch_frame_writable(jct_switch_frame_t *f) {
  if (f->data != f->scratch) {
    memcpy(f->scratch, f->data, f->len);
    f->data = f->scratch;
  }
  return f->data;
}

/* A hook: the frame first, the arg given to jct_switch_set_hook() last (as
 * jct_switch_emit_cb, and libuv's uv_walk_cb). */
typedef jct_switch_verdict_t (*jct_switch_hook_cb)(jct_switch_frame_t *f, uint64_t now_ns,
                                                   uint64_t *hold_until_ns, void *arg);

/* Set (cb non-NULL) or clear a port's hook. Errors: JCT_EINVAL. */
int jct_switch_set_hook(jct_switch_t *sw, uint32_t port, jct_switch_stage_t stage,
                        jct_switch_hook_cb cb, void *arg);

/* The PFC watchdog's transitions: egress queue (port, prio) entered storm
 * (storm true: paused continuously for wd_detection_ns; with action drop
 * its queued frames were just discarded) or was restored (storm false:
 * wd_restoration_ns without a pause frame for it), at now_ns. As SONiC's
 * pfcwd logs "PFC Watchdog storm detected/restored" per queue. */
typedef void (*jct_switch_wd_cb)(jct_switch_t *sw, uint32_t port, int prio, bool storm,
                                 uint64_t now_ns, void *arg);

/* Set (cb non-NULL) or clear the watchdog's callback. Errors: JCT_EINVAL. */
int jct_switch_set_wd_cb(jct_switch_t *sw, jct_switch_wd_cb cb, void *arg);

/* ---- Counters ------------------------------------------------------------ */

typedef struct {
  /* ingress side: frames received on this port */
  uint64_t rx_frames, rx_bytes;
  uint64_t rx_control;                     /* MAC control consumed (PFC, PAUSE, other) */
  uint64_t rx_pfc_xoff, rx_pfc_xon;        /* PFC/PAUSE frames with some / no nonzero quanta */
  uint64_t rx_drops[JCT_SW_DROP_NREASONS]; /* dropped before forwarding */
  uint64_t rx_duplicates;                  /* made by the ingress hook (below) */
  uint64_t rx_forwarded;                   /* frames forwarded (>= 1 copy offered) */
  uint64_t floods;                         /* of which flooded */
  uint64_t copies;                         /* copies offered to egress ports */
  uint64_t in_use_bytes[JCT_SWITCH_PRIOS]; /* buffer charged to (this port, prio), now */
  /* egress side: copies offered to this port, the egress hook's duplicates included */
  uint64_t offered;
  uint64_t tx_duplicates;                  /* duplicates the egress hook made */
  uint64_t tx_frames, tx_bytes;            /* data frames emitted */
  uint64_t tx_drops[JCT_SW_DROP_NREASONS]; /* copies dropped at admission */
  uint64_t queued_frames;                  /* in the queues now */
  uint64_t wire_frames;                    /* serialized or serializing, not yet emitted */
  uint64_t tx_pfc_xoff, tx_pfc_xon;        /* PFC frames sent (xoff: some quanta nonzero) */
  uint64_t ecn_marked;
  uint64_t peak_queue_bytes;            /* deepest one egress queue has been, frame bytes */
  uint64_t queue_bytes;                 /* frame bytes in its egress queues now, all priorities */
  uint64_t paused_ns[JCT_SWITCH_PRIOS]; /* egress time paused by received PFC, up to now */
  uint64_t wd_storms, wd_restores;
} jct_switch_port_stats_t;

typedef struct {
  uint64_t rx_frames, rx_control, rx_drops, rx_forwarded, floods, copies;
  uint64_t offered, tx_frames, tx_drops, queued_frames, wire_frames;
  uint64_t duplicates;                  /* hooks' duplicates, ingress and egress */
  uint64_t drops[JCT_SW_DROP_NREASONS]; /* rx and tx drops by reason */
  uint64_t tx_pfc_xoff, tx_pfc_xon, rx_pfc_xoff, rx_pfc_xon, ecn_marked;
  uint64_t pool_used_bytes, pool_bytes;
  uint64_t wd_storms, wd_restores; /* PFC watchdog: queues that entered storm, were restored */
} jct_switch_totals_t;

/* Port counters as of now_ns (paused_ns counts only time already elapsed).
 * Errors: JCT_EINVAL (port out of range). */
int jct_switch_port_stats(const jct_switch_t *sw, uint32_t port, uint64_t now_ns,
                          jct_switch_port_stats_t *out);
/* Start a new peak: the port's peak_queue_bytes becomes its deepest queue
 * now, so a caller reading it per repetition gets that repetition's peak
 * (a level, not a counter: it cannot be differenced). Errors: JCT_EINVAL. */
int jct_switch_reset_peak(jct_switch_t *sw, uint32_t port);
void jct_switch_totals(const jct_switch_t *sw, jct_switch_totals_t *out);

/* The accounting identities, per port and in total, with frames in the
 * queues and on the wire counted by walking them:
 *   rx_frames + rx_duplicates == rx_control + sum(rx_drops) + rx_forwarded
 *   offered   == tx_frames + sum(tx_drops) + queued + on the wire
 *   sum(copies) + sum(tx_duplicates) == sum(offered);
 *   pool use == sum of per-port charges.
 * Returns 0 or JCT_EINVAL with err saying which identity failed where. */
int jct_switch_check(const jct_switch_t *sw, char *err, size_t errlen);

#endif
