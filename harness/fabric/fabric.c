/* The emulated fabric at run time (include/jctlab/fabric.h). */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "chain.h"
#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/fabric.h"

#define PCAP_BUFFER_BYTES (16u << 20)
#define SNAPLEN 65535
#define XOFF_BYTES (256u << 10)
#define XON_BYTES (128u << 10)
#define SWITCH_BUFFER_BYTES (32u << 20)
#define KMIN_BYTES (64u << 10)
#define KMAX_BYTES (256u << 10)
#define PMAX 0.2

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

struct jct_fabric {
  jct_fabric_opts_t opts;
  uv_loop_t *loop;
  jct_clock_t *clock;
  const jct_topo_t *topo;
  jct_topo_t *own_topo; /* the one it built, when not given one */
  jct_switch_t *sw;
  port_t *ports;
  polls_t *polls;
  jct_timer_t timer;
  pcap_t *dead;
  jct__savefile_t *dump, *drops, *in_dump;
  int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, for the capture */
  jct_fabric_harness_stats_t hs;
  uint64_t now_ns; /* of the batch being read */
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

static void emit(uint32_t port, const uint8_t *frame, size_t len, uint64_t depart_ns, void *arg) {
  jct_fabric_t *f = arg;
  if (pcap_inject(f->ports[port].pcap, frame, len) != (int)len)
    f->hs.inject_failures++;
  else if (counted(frame, len))
    jct_clock_flight(f->clock, 1);
  f->hs.frames_out++;
  if (f->dump) {
    struct pcap_pkthdr h = {.caplen = (bpf_u_int32)len, .len = (bpf_u_int32)len};
    jct__capture_dump(f->dump, &h, depart_ns, f->realtime_offset_ns, f->opts.pcap_snaplen, frame);
  }
}

static void on_timer(jct_timer_t *t, uint64_t now_ns);

/* Tick the injectors that are due, send what is due, and wake again when
 * the switch or an injector next has work. */
static void service(jct_fabric_t *f, uint64_t now_ns) {
  jct__chain_t *chain = f->opts.chain;
  if (chain && jct__chain_next_deadline_ns(chain) <= now_ns) jct__chain_tick(chain, now_ns);
  jct_switch_poll(f->sw, now_ns, emit, f);
  uint64_t next = jct_switch_next_deadline_ns(f->sw);
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
  jct_switch_rx(f->sw, p->index, bytes, h->caplen, t);
}

static void on_readable(uv_poll_t *h, int status, int events) {
  (void)events;
  port_t *p = h->data;
  jct_fabric_t *f = p->fab;
  if (status < 0) return;
  f->now_ns = jct_now_ns();
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

static int build_switch(jct_fabric_t *f, char *err, size_t errlen) {
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, f->opts.nranks, f->opts.rate_bps);
  for (uint32_t i = 0; i < f->opts.nranks; i++) {
    cfg.port[i].prop_delay_ns = f->opts.prop_delay_ns;
    jct_switch_port_mac(i, cfg.port[i].mac);
  }
  cfg.buffer_bytes = SWITCH_BUFFER_BYTES;
  cfg.wd_enable = f->opts.pfc_watchdog;
  cfg.wd_action = f->opts.watchdog_forward ? JCT_SW_WD_FORWARD : JCT_SW_WD_DROP;
  if (f->opts.pfc) {
    cfg.pfc_enable = (uint8_t)(1u << f->opts.data_prio);
    cfg.xoff_bytes = XOFF_BYTES;
    cfg.xon_bytes = XON_BYTES;
  }
  if (f->opts.ecn) {
    cfg.ecn_enable = (uint8_t)(1u << f->opts.data_prio);
    cfg.kmin_bytes = KMIN_BYTES;
    cfg.kmax_bytes = KMAX_BYTES;
    cfg.pmax = PMAX;
    cfg.seed = 1;
  }
  int rc = jct_switch_new(&f->sw, &cfg, err, errlen);
  for (uint32_t i = 0; !rc && !f->opts.transparent && i < f->opts.nranks; i++) {
    uint8_t mac[6];
    jct_rank_mac(i, mac);
    rc = jct_switch_add_mac(f->sw, mac, i);
  }
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
  if (opts->nranks < 2 || opts->nranks > JCT_SWITCH_MAX_PORTS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--ranks %u: the switch has 2 to %u ports, one per rank", opts->nranks,
                     JCT_SWITCH_MAX_PORTS);
  jct_fabric_t *f = calloc(1, sizeof *f);
  if (!f) return JCT_ENOMEM;
  f->opts = *opts;
  f->loop = loop;
  f->clock = clock;
  f->timer.data = f;
  f->ports = calloc(opts->nranks, sizeof *f->ports);
  f->polls = calloc(1, sizeof *f->polls + opts->nranks * sizeof(uv_poll_t));
  int rc = JCT_ENOMEM;
  if (!f->ports || !f->polls || (rc = jct_clock_add_busy(clock, busy, f))) goto fail;
  jct_topo_opts_t to = {.mtu = opts->mtu, .ipv6 = false};
  measure_realtime_offset(f);
  if ((rc = build_switch(f, err, errlen))) goto fail;
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
  if (opts->chain && (rc = jct__chain_attach(opts->chain, f->sw, opts->nranks, opts->fault_log,
                                             f->drops, f->realtime_offset_ns))) {
    jct__errf(err, errlen, rc, "cannot put the injectors on the switch");
    goto fail;
  }
  *out = f;
  return 0;
fail:
  jct_fabric_free(f);
  return rc;
}

void jct_fabric_start(jct_fabric_t *f, uint64_t now_ns) {
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

bool jct_fabric_idle(const jct_fabric_t *f) {
  jct_switch_totals_t t;
  jct_switch_totals(f->sw, &t);
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
  jct_switch_free(f->sw);
  jct_topo_destroy(f->own_topo);
  free(f->ports);
  free(f);
}
