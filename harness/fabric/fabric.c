/* The emulated fabric at run time (include/jctlab/fabric.h). */
#include <errno.h>
#include <stdio.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "chain.h"
#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/fabric.h"
#include "reroute.h"

#define PCAP_BUFFER_BYTES (16u << 20)
#define SNAPLEN 65535
#define XOFF_BYTES (256u << 10)
#define XON_BYTES (128u << 10)
#define SWITCH_BUFFER_BYTES (32u << 20)

/* Poll handles live until libuv has closed them, which may be after the
 * fabric is gone: they sit in a block of their own freed by the last close. */
typedef struct {
  size_t open;
  uv_poll_t h[];
} polls_t;

typedef struct {
  jct_fabric_t *fab;
  uint32_t index;
  pcap_t *pcap;
} port_t;

/* Where a switch port's wire leads: a rank's veth (pcap port), another
 * switch's port (a leaf-spine link), or nowhere (an unused host port). */
typedef enum { END_NONE = 0, END_HOST, END_SWITCH } end_kind_t;
typedef struct {
  end_kind_t kind;
  uint32_t rank;            /* END_HOST */
  uint32_t peer, peer_port; /* END_SWITCH */
  int32_t link;             /* END_SWITCH: the link's index (this port's direction) */
} end_t;

/* One switch of the fabric and the ends of its ports. */
typedef struct {
  jct_fabric_t *fab;
  jct_switch_t *sw;
  end_t end[JCT_SWITCH_MAX_PORTS];
} node_t;

typedef struct {
  uint32_t node, port; /* the sending side */
  char name[24];
  bool uplink;
  jct_fabric_flow_t flows[JCT_FABRIC_LINK_FLOWS];
  uint64_t flow_last_ns[JCT_FABRIC_LINK_FLOWS]; /* when each flow's last frame left */
  uint32_t nflows;
  uint64_t other_flows;
  uint64_t flows_moved; /* flows rerouted off it (fabric.h) */
} link_t;

struct jct_fabric {
  jct_fabric_opts_t opts;
  uv_loop_t *loop;
  jct_clock_t *clock;
  const jct_topo_t *topo;
  jct_topo_t *own_topo; /* the one it built, when not given one */
  jct_switch_t *sw;     /* the star, or node[0]'s */
  node_t *node;
  uint32_t nnodes;
  uint32_t *rank_node, *rank_port, *host_of; /* where each rank's link lands */
  link_t *link;
  uint32_t nlinks;
  uint64_t *deadline; /* leaf-spine: each switch's next deadline, while poll_nodes runs */
  uint64_t touched;   /* the switches a poll handed frames to (bit per node) */
  jct_clos_t clos;
  port_t *ports;
  polls_t *polls;
  jct_timer_t timer;
  pcap_t *dead;
  jct__savefile_t *dump, *drops, *in_dump;
  int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, for the capture */
  jct_fabric_harness_stats_t hs;
  uint64_t now_ns;       /* of the batch being read */
  jct__reroute_t rr;     /* leaf-spine: the cables' states and the routes around them */
  bool watch_links;      /* some injector can take a cable down */
  uint64_t rep_start_ns; /* the repetition's start (jct_fabric_start) */
};

/* Frames whose receivers count them too (clock.h, jct_clock_flight): RoCEv2
 * datagrams (UDP port 4791 over IPv4 or IPv6), which the ranks' sockets read, and MAC
 * Control frames (PFC), which their PFC listeners read. Others (a kernel's
 * ARP) nobody counts. */
static bool counted(const uint8_t *fr, size_t len) {
  size_t l3 = 14;
  if (len < 14) return false;
  uint16_t type = (uint16_t)(fr[12] << 8 | fr[13]);
  if (type == 0x8100 && len >= 18) type = (uint16_t)(fr[16] << 8 | fr[17]), l3 = 18;
  if (type == 0x8808) return true;
  size_t l4;
  if (type == 0x0800 && len >= l3 + 20 && fr[l3 + 9] == 17)
    l4 = l3 + (size_t)(fr[l3] & 15u) * 4;
  else if (type == 0x86dd && len >= l3 + 40 && fr[l3 + 6] == 17)
    l4 = l3 + 40;
  else
    return false;
  return len >= l4 + 4 && (fr[l4 + 2] << 8 | fr[l4 + 3]) == 4791;
}

static void emit_host(jct_fabric_t *f, uint32_t rank, const uint8_t *frame, size_t len,
                      uint64_t depart_ns) {
  if (jct__chain_host_link_drop(f->opts.chain, rank)) {
    /* its host's link is down (a flap at=host): lost on it, the flap's drop */
  } else if (pcap_inject(f->ports[rank].pcap, frame, len) != (int)len) {
    f->hs.inject_failures++;
  } else if (counted(frame, len)) {
    jct_clock_flight(f->clock, 1);
  }
  f->hs.frames_out++;
  if (f->opts.tap) f->opts.tap(frame, len, depart_ns, f->opts.tap_arg);
  if (f->dump && (!f->opts.pcap_one_port || f->opts.pcap_port == rank)) {
    struct pcap_pkthdr h = {.caplen = (bpf_u_int32)len, .len = (bpf_u_int32)len};
    jct__capture_dump(f->dump, &h, depart_ns, f->realtime_offset_ns, f->opts.pcap_snaplen, frame);
  }
}

/* The star: every port is a rank's. */
static void emit(uint32_t port, const uint8_t *frame, size_t len, uint64_t depart_ns, void *arg) {
  emit_host(arg, port, frame, len, depart_ns);
}

/* A data frame on a leaf-spine link: counted to its flow (ranks by the
 * IPv4 addresses of topo.h, UDP source port). */
static void count_flow(link_t *l, const uint8_t *fr, size_t len, uint64_t t) {
  if (len < 14 + 20 + 8 || fr[12] != 0x08 || fr[13] != 0x00 || fr[14 + 9] != 17) return;
  const uint8_t *ip = fr + 14, *udp = ip + (ip[0] & 15u) * 4;
  if ((size_t)(udp - fr) + 8 > len) return;
  uint32_t s = (uint32_t)ip[14] << 8 | ip[15], d = (uint32_t)ip[18] << 8 | ip[19];
  jct_fabric_flow_t key = {
      .src_rank = s - 1, .dst_rank = d - 1, .udp_sport = (uint16_t)(udp[0] << 8 | udp[1])};
  for (uint32_t i = 0; i < l->nflows; i++) {
    jct_fabric_flow_t *x = &l->flows[i];
    if (x->src_rank == key.src_rank && x->dst_rank == key.dst_rank &&
        x->udp_sport == key.udp_sport) {
      x->frames++, x->bytes += len;
      l->flow_last_ns[i] = t;
      return;
    }
  }
  if (l->nflows == JCT_FABRIC_LINK_FLOWS) {
    l->other_flows++;
    return;
  }
  key.frames = 1, key.bytes = len;
  l->flow_last_ns[l->nflows] = t;
  l->flows[l->nflows++] = key;
}

/* Leaf-spine: a host port's frame leaves by its veth; a link's enters the
 * peer switch at its departure time (its last bit there). */
static void emit_node(uint32_t port, const uint8_t *frame, size_t len, uint64_t depart_ns,
                      void *arg) {
  node_t *n = arg;
  const end_t *e = &n->end[port];
  if (e->kind == END_HOST) {
    emit_host(n->fab, e->rank, frame, len, depart_ns);
  } else if (e->kind == END_SWITCH) {
    jct_fabric_t *f = n->fab;
    count_flow(&f->link[e->link], frame, len, depart_ns);
    if (f->dump && f->opts.pcap_one_port &&
        f->opts.pcap_port == f->opts.nranks + (uint32_t)e->link) {
      struct pcap_pkthdr h = {.caplen = (bpf_u_int32)len, .len = (bpf_u_int32)len};
      jct__capture_dump(f->dump, &h, depart_ns, f->realtime_offset_ns, f->opts.pcap_snaplen, frame);
    }
    f->touched |= 1ull << e->peer;
    jct_switch_rx(f->node[e->peer].sw, e->peer_port, frame, len, depart_ns);
  }
}

/* Every switch's events due by now, in time order across switches, so a
 * frame handed over a link meets the peer in the state of its arrival.
 * Each switch's deadline is asked once, then again only for the switches
 * a poll changed (the one polled and those it handed frames to): per
 * event, a pass over the switches' deadlines, not over all their ports. */
static void poll_nodes(jct_fabric_t *f, uint64_t now_ns) {
  for (uint32_t i = 0; i < f->nnodes; i++)
    f->deadline[i] = jct_switch_next_deadline_ns(f->node[i].sw);
  for (;;) {
    uint32_t k = UINT32_MAX;
    uint64_t d = UINT64_MAX;
    for (uint32_t i = 0; i < f->nnodes; i++)
      if (f->deadline[i] < d) d = f->deadline[i], k = i;
    if (d > now_ns) return;
    f->touched = 1ull << k;
    jct_switch_poll(f->node[k].sw, d, emit_node, &f->node[k]);
    for (uint64_t m = f->touched; m; m &= m - 1) {
      uint32_t j = (uint32_t)__builtin_ctzll(m);
      f->deadline[j] = jct_switch_next_deadline_ns(f->node[j].sw);
    }
  }
}

/* After poll_nodes (or for the star), the earliest deadline of any switch. */
static uint64_t next_deadline(const jct_fabric_t *f) {
  if (!f->node) return jct_switch_next_deadline_ns(f->sw);
  uint64_t d = UINT64_MAX;
  for (uint32_t i = 0; i < f->nnodes; i++)
    if (f->deadline[i] < d) d = f->deadline[i];
  return d;
}

static void on_timer(jct_timer_t *t, uint64_t now_ns);

/* Cable l*S + s's two directions: link l*S + s (up), L*S + s*L + l (down). */
static uint32_t down_link(const jct_fabric_t *f, uint32_t cable) {
  uint32_t L = f->clos.leaves, S = f->clos.spines;
  return L * S + (cable % S) * L + cable / S;
}

/* A withdrawal moved the flows the cable carried this repetition (with
 * resilient hashing, those and no others); a restore moves them back. */
static void on_reroute(void *arg, uint32_t cable, bool withdrawn) {
  jct_fabric_t *f = arg;
  if (!withdrawn) return;
  link_t *two[2] = {&f->link[cable], &f->link[down_link(f, cable)]};
  for (int d = 0; d < 2; d++)
    for (uint32_t i = 0; i < two[d]->nflows; i++)
      two[d]->flows_moved += two[d]->flow_last_ns[i] >= f->rep_start_ns;
}

/* Each cable's state from the injectors (a flap on either direction), and
 * the withdrawals and restores now due. */
static void links_service(jct_fabric_t *f, uint64_t now_ns) {
  if (f->watch_links)
    for (uint32_t c = 0; c < f->clos.leaves * f->clos.spines; c++) {
      uint32_t n = f->opts.nranks;
      bool down = jct__chain_link_down(f->opts.chain, n + c, now_ns) ||
                  jct__chain_link_down(f->opts.chain, n + down_link(f, c), now_ns);
      jct__reroute_see(&f->rr, c, down, now_ns);
    }
  if (jct__reroute_next_ns(&f->rr) <= now_ns) jct__reroute_tick(&f->rr, now_ns, on_reroute, f);
}

/* Tick the injectors that are due, send what is due, and wake again when
 * the switch or an injector next has work. */
static void service(jct_fabric_t *f, uint64_t now_ns) {
  jct__chain_t *chain = f->opts.chain;
  if (chain && jct__chain_next_deadline_ns(chain) <= now_ns) jct__chain_tick(chain, now_ns);
  if (f->node) links_service(f, now_ns);
  if (f->node)
    poll_nodes(f, now_ns);
  else
    jct_switch_poll(f->sw, now_ns, emit, f);
  uint64_t next = next_deadline(f);
  if (f->node && jct__reroute_next_ns(&f->rr) < next) next = jct__reroute_next_ns(&f->rr);
  if (chain) {
    uint64_t c = jct__chain_next_deadline_ns(chain);
    if (c < next) next = c;
  }
  if (next == UINT64_MAX) {
    jct_timer_stop(f->clock, &f->timer);
  } else if (!jct_timer_active(&f->timer) || f->timer.due_ns != next) {
    jct_timer_start(f->clock, &f->timer, next, on_timer);
  }
}

static void on_timer(jct_timer_t *t, uint64_t now_ns) {
  service(t->data, now_ns);
}

/* Each frame enters the switch at the time the kernel stamped it (in
 * nanoseconds, CLOCK_REALTIME, brought to the monotonic clock), not at the
 * time the batch it came in was read: a batch read at once would otherwise
 * look like a burst at an infinite rate. */
static void on_frame(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes) {
  port_t *p = (port_t *)user;
  jct_fabric_t *f = p->fab;
  f->hs.frames_in++;
  if (counted(bytes, h->caplen)) jct_clock_flight(f->clock, -1);
  if (h->caplen < h->len) { /* cut by the snap length: forwarding it would corrupt it */
    f->hs.truncated++;
    return;
  }
  /* The kernel's stamp is real time: the clock (its dilation and the
   * virtual offset of idle time skipped, clock.h) brings it to
   * jct_now_ns(), and so to the captures, which stamp what the switch does
   * on that clock: a dilated run's capture shows the emulated rate. */
  int64_t rt = (int64_t)h->ts.tv_sec * 1000000000 + (int64_t)h->ts.tv_usec; /* ns: nano handle */
  uint64_t t = jct_clock_virtual_ns((uint64_t)(rt - f->realtime_offset_ns));
  if (t > f->now_ns || t + 1000000000u < f->now_ns) t = f->now_ns; /* clocks stepped: trust now */
  if (f->in_dump) {
    struct pcap_pkthdr d = *h; /* stamped at t, as emit() stamps */
    jct__capture_dump(f->in_dump, &d, t, f->realtime_offset_ns, f->opts.pcap_snaplen, bytes);
  }
  if (f->node)
    jct_switch_rx(f->node[f->rank_node[p->index]].sw, f->rank_port[p->index], bytes, h->caplen, t);
  else
    jct_switch_rx(f->sw, p->index, bytes, h->caplen, t);
}

static void on_readable(uv_poll_t *h, int status, int events) {
  (void)events;
  port_t *p = h->data;
  jct_fabric_t *f = p->fab;
  if (status < 0) return;
  f->now_ns = jct_now_ns();
  if (f->node) poll_nodes(f, f->now_ns); /* the links' arrivals before the hosts' */
  pcap_dispatch(p->pcap, -1, on_frame, (u_char *)p);
  service(f, jct_now_ns());
}

static int open_port(jct_fabric_t *f, uint32_t i, char *err, size_t errlen) {
  char eb[PCAP_ERRBUF_SIZE] = "";
  const char *ifname =
      f->opts.port_ifnames ? f->opts.port_ifnames[i] : jct_topo_switch_ifname(f->topo, i);
  pcap_t *p = pcap_create(ifname, eb);
  if (!p) return jct__errf(err, errlen, JCT_EIO, "port %s: %s", ifname, eb);
  f->ports[i] = (port_t){f, i, p};
  /* The snap length sizes the ring's slots: the links' MTU plus headers,
   * not 64 KiB, or the ring holds only a hundred frames. */
  int snaplen = (int)(f->opts.mtu ? f->opts.mtu : JCT_TOPO_MTU_DEFAULT) + 64;
  if (pcap_set_snaplen(p, snaplen) || pcap_set_promisc(p, 1) || pcap_set_immediate_mode(p, 1) ||
      pcap_set_buffer_size(p, PCAP_BUFFER_BYTES) ||
      pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO) || pcap_activate(p) < 0 ||
      pcap_setnonblock(p, 1, eb) < 0 || pcap_setdirection(p, PCAP_D_IN) < 0)
    return jct__errf(err, errlen, JCT_EIO, "port %s: %s", ifname, *eb ? eb : pcap_geterr(p));
  int fd = pcap_get_selectable_fd(p);
  uv_poll_t *h = &f->polls->h[i];
  if (fd < 0 || uv_poll_init(f->loop, h, fd))
    return jct__errf(err, errlen, JCT_EIO, "port %s: cannot poll its descriptor", ifname);
  f->polls->open++;
  h->data = &f->ports[i];
  uv_poll_start(h, UV_READABLE, on_readable);
  return 0;
}

/* The captures (what crossed the switch, what injectors dropped, what
 * arrived at the ports): nanosecond pcap, timestamps on CLOCK_REALTIME. */
static void measure_realtime_offset(jct_fabric_t *f) {
  struct timespec rt, mono;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  f->realtime_offset_ns = ((int64_t)rt.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
                          ((int64_t)rt.tv_nsec - (int64_t)mono.tv_nsec);
}

static int open_captures(jct_fabric_t *f, char *err, size_t errlen) {
  const jct_fabric_opts_t *o = &f->opts;
  if (!o->pcap_out && !o->pcap_drops && !o->pcap_in) return 0;
  f->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, SNAPLEN, PCAP_TSTAMP_PRECISION_NANO);
  if (!f->dead) return JCT_ENOMEM;
  int rc = 0;
  /* -C/-W rotate the two captures -s cuts; the drops are few and whole. */
  if (o->pcap_out)
    rc = jct__savefile_open(&f->dump, f->dead, o->pcap_out, o->pcap_file_bytes, o->pcap_files, err,
                            errlen);
  if (!rc && o->pcap_in)
    rc = jct__savefile_open(&f->in_dump, f->dead, o->pcap_in, o->pcap_file_bytes, o->pcap_files,
                            err, errlen);
  if (!rc && o->pcap_drops)
    rc = jct__savefile_open(&f->drops, f->dead, o->pcap_drops, 0, 0, err, errlen);
  return rc;
}

/* What every switch of the fabric shares: buffer, PFC, ECN, watchdog. */
static void base_config(const jct_fabric_t *f, jct_switch_config_t *cfg, uint32_t nports,
                        uint64_t seed) {
  jct_switch_config_default(cfg, nports, f->opts.rate_bps);
  for (uint32_t i = 0; i < nports; i++)
    cfg->port[i].prop_delay_ns = f->opts.prop_delay_ns;
  cfg->buffer_bytes = SWITCH_BUFFER_BYTES;
  cfg->wd_enable = f->opts.pfc_watchdog;
  cfg->wd_action = f->opts.watchdog_forward ? JCT_SW_WD_FORWARD : JCT_SW_WD_DROP;
  if (f->opts.pfc) {
    cfg->pfc_enable = (uint8_t)(1u << f->opts.data_prio);
    cfg->xoff_bytes = XOFF_BYTES;
    cfg->xon_bytes = XON_BYTES;
  }
  if (f->opts.ecn) {
    cfg->ecn_enable = (uint8_t)(1u << f->opts.data_prio);
    cfg->kmin_bytes = f->opts.ecn_kmin_bytes ? f->opts.ecn_kmin_bytes : JCT_FABRIC_ECN_KMIN_BYTES;
    cfg->kmax_bytes = f->opts.ecn_kmax_bytes ? f->opts.ecn_kmax_bytes : JCT_FABRIC_ECN_KMAX_BYTES;
    cfg->pmax = f->opts.ecn_pmax > 0 ? f->opts.ecn_pmax : JCT_FABRIC_ECN_PMAX;
    cfg->seed = seed;
  }
  cfg->ecmp_seed = f->clos.ecmp_seed;
  cfg->ecmp_mode = f->clos.ecmp_mode;
  if (f->clos.ecmp_flowlet_gap_ns) cfg->ecmp_flowlet_gap_ns = f->clos.ecmp_flowlet_gap_ns;
}

static int build_switch(jct_fabric_t *f, char *err, size_t errlen) {
  jct_switch_config_t cfg;
  base_config(f, &cfg, f->opts.nranks, 1);
  for (uint32_t i = 0; i < f->opts.nranks; i++)
    jct_switch_port_mac(i, cfg.port[i].mac);
  int rc = jct_switch_new(&f->sw, &cfg, err, errlen);
  for (uint32_t i = 0; !rc && !f->opts.transparent && i < f->opts.nranks; i++) {
    uint8_t mac[6];
    jct_rank_mac(i, mac);
    rc = jct_switch_add_mac(f->sw, mac, i);
  }
  return rc;
}

/* Leaf-spine (clos.h): leaves are nodes 0..L-1 (host ports 0..H-1, the
 * uplink to spine s at port H + s), spines L..L+S-1 (port l to leaf l).
 * Link l*S + s is leaf l's uplink to spine s, L*S + s*L + l the downlink. */
static void wire_link(jct_fabric_t *f, uint32_t k, uint32_t a, uint32_t ap, uint32_t b, uint32_t bp,
                      bool up) {
  const jct_clos_t *c = &f->clos;
  link_t *l = &f->link[k];
  l->node = a, l->port = ap, l->uplink = up;
  snprintf(l->name, sizeof l->name, up ? "leaf%u:spine%u" : "spine%u:leaf%u",
           up ? a : a - c->leaves, up ? b - c->leaves : b);
  f->node[a].end[ap] = (end_t){.kind = END_SWITCH, .peer = b, .peer_port = bp, .link = (int32_t)k};
}

/* Leaf i's route to a host under leaf j: its own ECMP group per leaf j
 * over every spine (reroute.h withdraws one spine from it alone). */
static int remote(jct_fabric_t *f, uint32_t i, uint32_t j, const uint8_t mac[6],
                  const uint32_t *ups) {
  uint32_t L = f->clos.leaves, S = f->clos.spines;
  if (S == 1) return jct_switch_add_mac(f->node[i].sw, mac, ups[0]);
  int32_t *g = &f->rr.group[i * L + j];
  if (*g < 0) {
    int rc = jct_switch_ecmp_group_new(f->node[i].sw, ups, S);
    if (rc < 0) return rc;
    *g = rc;
  }
  return jct_switch_add_mac_group(f->node[i].sw, mac, (uint32_t)*g);
}

static int build_clos(jct_fabric_t *f, char *err, size_t errlen) {
  const jct_clos_t *c = &f->clos;
  uint32_t L = c->leaves, S = c->spines, H = c->hosts_per_leaf, n = f->opts.nranks;
  f->nnodes = L + S;
  f->nlinks = 2 * L * S;
  f->node = calloc(f->nnodes, sizeof *f->node);
  f->deadline = calloc(f->nnodes, sizeof *f->deadline);
  f->link = calloc(f->nlinks, sizeof *f->link);
  f->rank_node = calloc(n, sizeof *f->rank_node);
  f->rank_port = calloc(n, sizeof *f->rank_port);
  if (!f->node || !f->deadline || !f->link || !f->rank_node || !f->rank_port) return JCT_ENOMEM;
  _Static_assert(JCT_CLOS_MAX_LEAVES + JCT_CLOS_MAX_SPINES <= 64, "a bit per switch in touched");
  int rc = jct__reroute_init(&f->rr, L, S, H, jct_clos_reroute_detect_ns(c));
  if (rc) return rc;
  for (uint32_t r = 0; r < n; r++) {
    f->rank_node[r] = f->host_of[r] / H, f->rank_port[r] = f->host_of[r] % H;
    f->node[f->rank_node[r]].end[f->rank_port[r]] = (end_t){.kind = END_HOST, .rank = r};
  }
  for (uint32_t l = 0; l < L; l++)
    for (uint32_t s = 0; s < S; s++) {
      wire_link(f, l * S + s, l, H + s, L + s, l, true);
      wire_link(f, L * S + s * L + l, L + s, l, l, H + s, false);
    }
  uint64_t up_rate = c->uplink_rate_bps ? c->uplink_rate_bps : f->opts.rate_bps;
  uint64_t up_delay = c->uplink_delay_ns != UINT64_MAX ? c->uplink_delay_ns : f->opts.prop_delay_ns;
  for (uint32_t i = 0; i < f->nnodes; i++) {
    node_t *nd = &f->node[i];
    uint32_t nports = i < L ? H + S : L;
    jct_switch_config_t cfg;
    base_config(f, &cfg, nports, 1 + i);
    for (uint32_t p = 0; p < nports; p++) {
      jct_switch_port_config_t *pc = &cfg.port[p];
      if (nd->end[p].kind == END_HOST) {
        jct_switch_port_mac(nd->end[p].rank, pc->mac);
      } else {
        const uint8_t mac[6] = {0x02, 0x00, 0xc6, 0x14, (uint8_t)i, (uint8_t)p};
        memcpy(pc->mac, mac, 6);
        pc->no_flood = true; /* links, and host ports no rank sits on */
      }
      if (nd->end[p].kind == END_SWITCH) pc->rate_bps = up_rate, pc->prop_delay_ns = up_delay;
    }
    nd->fab = f;
    if ((rc = jct_switch_new(&nd->sw, &cfg, err, errlen))) return rc;
    if (i < L) f->rr.leaf[i] = nd->sw;
    uint32_t ups[JCT_CLOS_MAX_SPINES];
    for (uint32_t s = 0; s < S; s++)
      ups[s] = H + s;
    for (uint32_t r = 0; r < n && !rc; r++) {
      uint8_t mac[6];
      jct_rank_mac(r, mac);
      if (i >= L)
        rc = jct_switch_add_mac(nd->sw, mac, f->rank_node[r]);
      else if (f->rank_node[r] == i)
        rc = jct_switch_add_mac(nd->sw, mac, f->rank_port[r]);
      else
        rc = remote(f, i, f->rank_node[r], mac, ups);
    }
    if (rc) return jct__errf(err, errlen, rc, "switch %u: cannot fill its forwarding table", i);
  }
  f->sw = f->node[0].sw;
  return 0;
}

/* The injectors' ports: 0..nranks-1 the ranks' links, then nranks + k
 * link k of a leaf-spine fabric, at its sending switch's port (dir=out:
 * toward the peer; dir=in: what arrives from it). */
static int attach_chain(jct_fabric_t *f) {
  if (!f->node)
    return jct__chain_attach(f->opts.chain, f->sw, f->opts.nranks, f->opts.fault_log, f->drops,
                             f->realtime_offset_ns);
  uint32_t n = f->opts.nranks + f->nlinks;
  jct__chain_port_t *ports = malloc(n * sizeof *ports);
  if (!ports) return JCT_ENOMEM;
  for (uint32_t r = 0; r < f->opts.nranks; r++)
    ports[r] = (jct__chain_port_t){f->node[f->rank_node[r]].sw, f->rank_port[r]};
  for (uint32_t k = 0; k < f->nlinks; k++)
    ports[f->opts.nranks + k] = (jct__chain_port_t){f->node[f->link[k].node].sw, f->link[k].port};
  int rc = jct__chain_attach_ports(f->opts.chain, ports, n, f->opts.fault_log, f->drops,
                                   f->realtime_offset_ns);
  free(ports);
  return rc;
}

/* Idle-time skipping waits while a frame is queued, held by an injector
 * (a held frame sits in its queue) or on a wire. */
static bool busy(void *arg) {
  return !jct_fabric_idle(arg);
}

static void on_closed(uv_handle_t *h) {
  polls_t *b = h->data;
  if (--b->open == 0) free(b);
}

int jct_fabric_new(jct_fabric_t **out, uv_loop_t *loop, jct_clock_t *clock,
                   const jct_fabric_opts_t *opts, char *err, size_t errlen) {
  *out = NULL;
  bool clos = opts->clos && opts->clos->leaves;
  if (opts->nranks < 2 || (!clos && opts->nranks > JCT_SWITCH_MAX_PORTS))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--ranks %u: the switch has 2 to %u ports, one per rank", opts->nranks,
                     JCT_SWITCH_MAX_PORTS);
  if (opts->pcap_one_port &&
      opts->pcap_port >= opts->nranks + (clos ? 2 * opts->clos->leaves * opts->clos->spines : 0))
    return jct__errf(err, errlen, JCT_EINVAL, "pcap port %u: the fabric has no such link",
                     opts->pcap_port);
  if (clos && (opts->port_ifnames || opts->transparent))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "a leaf-spine fabric has jctlab's ranks on its hosts, not outside ports");
  jct_fabric_t *f = calloc(1, sizeof *f);
  if (!f) return JCT_ENOMEM;
  f->opts = *opts;
  jct_clos_default(&f->clos);
  if (opts->clos) f->clos = *opts->clos;
  f->opts.clos = &f->clos;
  int prc;
  if (!(f->host_of = calloc(opts->nranks, sizeof *f->host_of))) {
    free(f);
    return JCT_ENOMEM;
  }
  if ((prc = jct_clos_place(&f->clos, opts->nranks, f->host_of, err, errlen))) {
    free(f->host_of);
    free(f);
    return prc;
  }
  f->loop = loop;
  f->clock = clock;
  f->timer.data = f;
  f->ports = calloc(opts->nranks, sizeof *f->ports);
  f->polls = calloc(1, sizeof *f->polls + opts->nranks * sizeof(uv_poll_t));
  int rc = JCT_ENOMEM;
  if (!f->ports || !f->polls || (rc = jct_clock_add_busy(clock, busy, f)))
    goto fail;
  jct_topo_opts_t to = {.mtu = opts->mtu, .ipv6 = false};
  measure_realtime_offset(f);
  if ((rc = clos ? build_clos(f, err, errlen) : build_switch(f, err, errlen))) goto fail;
  if (opts->port_ifnames) {
    f->topo = NULL; /* the caller's interfaces: nothing to build */
  } else if (opts->topo) {
    f->topo = opts->topo;
    if (jct_topo_nranks(f->topo) != opts->nranks) {
      rc = jct__errf(err, errlen, JCT_EINVAL, "the topology has %zu ranks, not %u",
                     jct_topo_nranks(f->topo), opts->nranks);
      goto fail;
    }
  } else {
    if ((rc = jct_topo_create(&f->own_topo, opts->nranks, &to, err, errlen))) goto fail;
    f->topo = f->own_topo;
  }
  for (uint32_t i = 0; i < opts->nranks; i++)
    if ((rc = open_port(f, i, err, errlen))) goto fail;
  if ((rc = open_captures(f, err, errlen))) goto fail;
  if (opts->chain && (rc = attach_chain(f))) {
    jct__errf(err, errlen, rc, "cannot put the injectors on the switch");
    goto fail;
  }
  if (opts->chain && (rc = jct__chain_attach_hosts(opts->chain, opts->remote_hosts ? NULL : f->topo,
                                                   opts->remote_hosts, err, errlen)))
    goto fail;
  f->watch_links = clos && jct__chain_has_link_state(opts->chain);
  *out = f;
  return 0;
fail:
  jct_fabric_free(f);
  return rc;
}

void jct_fabric_start(jct_fabric_t *f, uint64_t now_ns) {
  f->rep_start_ns = now_ns;
  if (f->node) jct__reroute_reset(&f->rr, now_ns);
  if (!f->opts.chain) return;
  jct__chain_start(f->opts.chain, now_ns);
  service(f, now_ns);
}

const jct_topo_t *jct_fabric_topo(const jct_fabric_t *f) {
  return f->topo;
}

jct_switch_t *jct_fabric_switch(jct_fabric_t *f) {
  return f->sw;
}

void jct_fabric_totals(const jct_fabric_t *f, jct_switch_totals_t *out) {
  jct_switch_totals(f->sw, out);
  for (uint32_t i = 1; i < f->nnodes; i++) {
    jct_switch_totals_t t;
    jct_switch_totals(f->node[i].sw, &t);
    const uint64_t *a = (const uint64_t *)&t;
    uint64_t *b = (uint64_t *)out;
    for (size_t k = 0; k < sizeof t / sizeof *a; k++)
      b[k] += a[k];
  }
}

bool jct_fabric_wd_storming(const jct_fabric_t *f) {
  jct_switch_totals_t t;
  jct_fabric_totals(f, &t);
  return t.wd_storms > t.wd_restores;
}

uint64_t jct_fabric_host_paused_ns(const jct_fabric_t *f, uint64_t now_ns) {
  uint64_t sum = 0;
  for (uint32_t r = 0; r < f->opts.nranks; r++) {
    jct_switch_port_stats_t ps;
    jct_switch_t *sw = f->node ? f->node[f->rank_node[r]].sw : f->sw;
    if (jct_switch_port_stats(sw, f->node ? f->rank_port[r] : r, now_ns, &ps) == 0)
      for (int q = 0; q < JCT_SWITCH_PRIOS; q++)
        sum += ps.paused_ns[q];
  }
  return sum;
}

uint32_t jct_fabric_nlinks(const jct_fabric_t *f) {
  return f->nlinks;
}

int jct_fabric_link_stats(const jct_fabric_t *f, uint32_t k, uint64_t now_ns,
                          jct_fabric_link_stats_t *out) {
  if (k >= f->nlinks) return JCT_EINVAL;
  const link_t *l = &f->link[k];
  jct_switch_port_stats_t ps;
  int rc = jct_switch_port_stats(f->node[l->node].sw, l->port, now_ns, &ps);
  if (rc) return rc;
  memset(out, 0, sizeof *out);
  memcpy(out->name, l->name, sizeof out->name);
  out->uplink = l->uplink;
  out->tx_frames = ps.tx_frames, out->tx_bytes = ps.tx_bytes, out->ecn_marked = ps.ecn_marked;
  for (int r = 0; r < JCT_SW_DROP_NREASONS; r++)
    out->drops += ps.tx_drops[r];
  out->peak_queue_bytes = ps.peak_queue_bytes;
  for (int q = 0; q < JCT_SWITCH_PRIOS; q++)
    out->paused_ns += ps.paused_ns[q];
  out->rx_pfc_xoff = ps.rx_pfc_xoff;
  memcpy(out->flows, l->flows, sizeof out->flows);
  out->nflows = l->nflows;
  out->other_flows = l->other_flows;
  uint32_t cable = l->uplink ? k
                             : (k - f->nlinks / 2) % f->clos.leaves * f->clos.spines +
                                   (k - f->nlinks / 2) / f->clos.leaves;
  const jct__cable_t *c = &f->rr.cable[cable];
  out->down_ns = jct__reroute_down_ns(&f->rr, cable, now_ns);
  out->reroutes = c->reroutes, out->restores = c->restores;
  out->flows_moved = l->flows_moved;
  return 0;
}

void jct_fabric_links_reset_peaks(jct_fabric_t *f) {
  for (uint32_t k = 0; k < f->nlinks; k++)
    jct_switch_reset_peak(f->node[f->link[k].node].sw, f->link[k].port);
}

int jct_fabric_link_find(const jct_fabric_t *f, const char *name) {
  for (uint32_t k = 0; k < f->nlinks; k++)
    if (!strcmp(f->link[k].name, name)) return (int)k;
  return -1;
}

uint64_t jct_fabric_queue_bytes(const jct_fabric_t *f, uint32_t rank) {
  jct_switch_port_stats_t ps;
  if (rank >= f->opts.nranks) return 0;
  jct_switch_t *sw = f->node ? f->node[f->rank_node[rank]].sw : f->sw;
  if (jct_switch_port_stats(sw, f->node ? f->rank_port[rank] : rank, 0, &ps)) return 0;
  return ps.queue_bytes;
}

uint32_t jct_fabric_host_of(const jct_fabric_t *f, uint32_t rank) {
  return rank < f->opts.nranks ? f->host_of[rank] : UINT32_MAX;
}

bool jct_fabric_idle(const jct_fabric_t *f) {
  jct_switch_totals_t t;
  jct_fabric_totals(f, &t);
  return t.queued_frames == 0 && t.wire_frames == 0;
}

void jct_fabric_harness_stats(jct_fabric_t *f, jct_fabric_harness_stats_t *out) {
  *out = f->hs;
  out->pcap_drops = 0;
  for (uint32_t i = 0; i < f->opts.nranks; i++) {
    struct pcap_stat st;
    if (f->ports[i].pcap && pcap_stats(f->ports[i].pcap, &st) == 0) out->pcap_drops += st.ps_drop;
  }
}

void jct_fabric_free(jct_fabric_t *f) {
  if (!f) return;
  if (f->clock) {
    jct_timer_stop(f->clock, &f->timer);
    jct_clock_remove_busy(f->clock, busy, f);
  }
  if (f->polls) {
    size_t open = f->polls->open;
    for (size_t i = 0; i < open; i++) {
      f->polls->h[i].data = f->polls;
      uv_close((uv_handle_t *)&f->polls->h[i], on_closed);
    }
    if (!open) free(f->polls);
  }
  for (uint32_t i = 0; f->ports && i < f->opts.nranks; i++)
    if (f->ports[i].pcap) pcap_close(f->ports[i].pcap);
  jct__savefile_close(f->dump);
  jct__savefile_close(f->drops);
  jct__savefile_close(f->in_dump);
  if (f->dead) pcap_close(f->dead);
  if (f->opts.chain) jct__chain_detach_hosts(f->opts.chain); /* while the ranks exist */
  if (f->node)
    for (uint32_t i = 0; i < f->nnodes; i++)
      jct_switch_free(f->node[i].sw);
  else
    jct_switch_free(f->sw);
  jct__reroute_free(&f->rr);
  free(f->node);
  free(f->deadline);
  free(f->link);
  free(f->rank_node);
  free(f->rank_port);
  free(f->host_of);
  jct_topo_destroy(f->own_topo);
  free(f->ports);
  free(f);
}
