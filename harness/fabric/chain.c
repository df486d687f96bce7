/* The injector chain of a run (harness/fabric/chain.h). */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_packet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <unistd.h>
#include <sys/socket.h>
#include <time.h>

#include "capture.h"
#include "chain.h"
#include "common/rng.h"
#include "harness/base/netlink.h"
#include "hostdrop.h"
#include "topo_link.h"
#include "jctlab/roce.h"
#include "common/errf.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"

/* What a hook is called with: which port and side it sits on, the
 * injectors that act there (in chain order) and the site's flow history,
 * shared by them so that a frame's packet identity is found once. */
typedef struct {
  jct__chain_t *c;
  uint32_t port;
  bool out;
  jct_injector_t **inj;
  size_t n;
  void *flows;
} site_t;

struct jct__chain {
  jct_injector_t **inj;
  size_t n;
  jct_switch_t *sw;
  site_t *sites; /* 2 per port: ingress at 2p, egress at 2p + 1 */
  FILE *log;
  jct__savefile_t *drops;
  int64_t realtime_offset_ns;
  uint64_t start_ns;
  uint32_t rep; /* the repetition the fault log names */
  uint32_t nports;
  bool disabled;
  /* at=host: per injector, its kernel program (NULL on the switch), on
   * which topology's ranks, and the repetition's start on the kernel's
   * clock (CLOCK_MONOTONIC, bpf_ktime_get_ns). */
  jct__hostdrop_t **host;
  int *host_fd;        /* per injector: the AF_PACKET socket its frames leave by (pause), or -1 */
  jct__nl_t **host_nl; /* per injector: netlink in its host's namespace (flap), or NULL */
  uint64_t *host_down_ns; /* per injector: when its host's link went down (flap), 0: up */
  const jct_topo_t *topo;
  uint64_t start_mono_ns;
  uint64_t last_ns; /* the latest tick's time */
};

int jct__chain_new(jct__chain_t **out, const char *const *specs, size_t n, uint64_t run_seed,
                   char *err, size_t errlen) {
  *out = NULL;
  jct__chain_t *c = calloc(1, sizeof *c);
  if (!c) return JCT_ENOMEM;
  c->inj = calloc(n ? n : 1, sizeof *c->inj);
  if (!c->inj) {
    free(c);
    return JCT_ENOMEM;
  }
  c->host = calloc(n ? n : 1, sizeof *c->host);
  c->host_fd = malloc((n ? n : 1) * sizeof *c->host_fd);
  c->host_nl = calloc(n ? n : 1, sizeof *c->host_nl);
  c->host_down_ns = calloc(n ? n : 1, sizeof *c->host_down_ns);
  if (!c->host || !c->host_fd || !c->host_nl || !c->host_down_ns) {
    free(c->host);
    free(c->host_fd);
    free(c->host_nl);
    free(c->host_down_ns);
    free(c->inj);
    free(c);
    return JCT_ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    c->host_fd[i] = -1;
  for (size_t i = 0; i < n; i++) {
    int rc = jct_injector_new(&c->inj[i], specs[i], run_seed, (uint32_t)i, err, errlen);
    if (rc) {
      jct__chain_free(c);
      return rc;
    }
    c->inj[i]->data = c; /* for emit_into_switch */
    c->n++;
  }
  *out = c;
  return 0;
}

static const char *action_name(jct_verdict_t v) {
  switch (v) {
  case JCT_DROP:
    return "drop";
  case JCT_HOLD:
    return "hold";
  case JCT_EXPEDITE:
    return "expedite";
  case JCT_DUPLICATE:
    return "duplicate";
  default:
    return "modify";
  }
}

static void log_action(jct__chain_t *c, const jct_injector_t *inj, const site_t *s, jct_frame_t *f,
                       jct_verdict_t v, uint64_t now_ns) {
  jct_packet_t p;
  char a[64] = "", b[64] = "";
  jct_decode(JCT_LINK_EN10MB, f->data, f->len, f->len, &p);
  fprintf(c->log,
          "{\"rep\":%u,\"t_ns\":%llu,\"port\":%u,\"dir\":\"%s\",\"injector\":%u,"
          "\"kind\":\"%s\",\"action\":\"%s\"",
          c->rep, (unsigned long long)(now_ns - c->start_ns), s->port, s->out ? "out" : "in",
          inj->index, inj->ops->name, action_name(v));
  if (p.src.family)
    fprintf(c->log, ",\"src\":\"%s\",\"dst\":\"%s\"", jct_addr_str(&p.src, a, sizeof a),
            jct_addr_str(&p.dst, b, sizeof b));
  if (p.kind == JCT_PKT_ROCE)
    fprintf(c->log, ",\"qp\":%u,\"psn\":%u,\"opcode\":\"%s\",\"retransmission\":%s",
            p.roce.bth.dest_qp, p.roce.bth.psn, p.op->name,
            jct_frame_retransmission(f) ? "true" : "false");
  if (v == JCT_HOLD)
    fprintf(c->log, ",\"hold_ns\":%llu", (unsigned long long)(f->hold_until_ns - now_ns));
  if (f->copy) fputs(",\"copy\":true", c->log);
  fputs("}\n", c->log);
}

static void dump_drop(jct__chain_t *c, const jct_frame_t *f, uint64_t now_ns) {
  struct pcap_pkthdr h = {.caplen = (bpf_u_int32)f->len, .len = (bpf_u_int32)f->len};
  jct__capture_dump(c->drops, &h, now_ns, c->realtime_offset_ns, 0, f->data);
}

static jct_switch_verdict_t on_frame(jct_switch_frame_t *sf, uint64_t now_ns,
                                     uint64_t *hold_until_ns, void *arg) {
  site_t *s = arg;
  jct__chain_t *c = s->c;
  jct_frame_t f = {.data = sf->data,
                   .len = sf->len,
                   .cap = sf->cap,
                   .port = s->port,
                   .out = s->out,
                   .scratch = sf->scratch,
                   .site_flows = s->flows,
                   .copy = sf->copy};
  uint64_t hold = 0;
  bool modified = false, expedite = false;
  /* The log tells retransmissions by the site's history, which must then
   * see every frame, not only those an injector draws for. */
  if (c->log) jct_frame_retransmission(&f);
  for (size_t i = 0; i < s->n; i++) {
    f.hold_until_ns = hold; /* the chain's so far: rate counts from it */
    jct_verdict_t v = jct_injector_process(s->inj[i], &f, now_ns);
    if (v == JCT_PASS) continue;
    if (c->log) log_action(c, s->inj[i], s, &f, v, now_ns);
    if (v == JCT_DROP) {
      if (c->drops) dump_drop(c, &f, now_ns);
      return JCT_SW_DROP;
    }
    if (v == JCT_HOLD && f.hold_until_ns > hold) hold = f.hold_until_ns;
    if (v == JCT_MODIFIED) modified = true;
    if (v == JCT_EXPEDITE) expedite = true;
    if (v == JCT_DUPLICATE) sf->duplicate = true; /* the switch brings the copy back */
  }
  sf->data = f.data; /* the scratch copy, when an injector changed it */
  sf->len = f.len;
  if (hold > now_ns) {
    *hold_until_ns = hold;
    return JCT_SW_HOLD;
  }
  if (expedite) return JCT_SW_HEAD;
  return modified ? JCT_SW_MODIFIED : JCT_SW_PASS;
}

static void free_sites(jct__chain_t *c) {
  if (!c->sites) return;
  for (uint32_t i = 0; i < 2 * c->nports; i++) {
    free(c->sites[i].inj);
    jct_flows_free(c->sites[i].flows);
  }
  free(c->sites);
  c->sites = NULL;
}

int jct__chain_attach(jct__chain_t *c, jct_switch_t *sw, uint32_t nports, FILE *log,
                      struct jct__savefile *drops, int64_t realtime_offset_ns) {
  free_sites(c); /* of an earlier attach: c->nports is still its */
  c->sw = sw;
  c->log = log;
  c->drops = drops;
  c->realtime_offset_ns = realtime_offset_ns;
  c->nports = nports;
  if (!c->n) return 0;
  c->sites = calloc(2 * (size_t)nports, sizeof *c->sites);
  if (!c->sites) return JCT_ENOMEM;
  /* A hook only where some injector acts: a hook costs the switch a call
   * and the injectors a look at every frame. */
  for (uint32_t p = 0; p < nports; p++)
    for (int out = 0; out <= 1; out++) {
      site_t *s = &c->sites[2 * p + (uint32_t)out];
      for (size_t i = 0; i < c->n; i++) {
        if (c->inj[i]->out != (bool)out || !(c->inj[i]->all_ports || c->inj[i]->port == p) ||
            c->inj[i]->host >= 0)
          continue;
        if (!s->inj && !(s->inj = calloc(c->n, sizeof *s->inj))) return JCT_ENOMEM;
        s->inj[s->n++] = c->inj[i];
      }
      if (!s->n) continue;
      if (!(s->flows = jct_flows_new())) return JCT_ENOMEM;
      s->c = c;
      s->port = p;
      s->out = out;
      int rc = jct_switch_set_hook(sw, p, out ? JCT_SW_EGRESS : JCT_SW_INGRESS, on_frame, s);
      if (rc) return rc;
    }
  return 0;
}

void jct__chain_set_rep(jct__chain_t *c, uint32_t rep) {
  c->rep = rep;
}

static void hosts_links_up(jct__chain_t *c, uint64_t now_ns);

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void jct__chain_start(jct__chain_t *c, uint64_t now_ns) {
  hosts_links_up(c, now_ns);
  c->start_ns = c->last_ns = now_ns;
  c->start_mono_ns = mono_ns();
  for (uint32_t i = 0; c->sites && i < 2 * c->nports; i++)
    jct_flows_clear(c->sites[i].flows);
  for (size_t i = 0; i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    jct_injector_start(inj, now_ns);
    if (!c->host[i]) continue;
    /* The kernel program restarts as the injector does: same seed, same
     * window, zero counters. */
    struct jct_kdrop_cfg cfg;
    char ignored[8];
    if (inj->ops->kernel(inj, &cfg, ignored, sizeof ignored) < 0) continue; /* checked at new */
    cfg.enabled = !c->disabled;
    cfg.start_ns = c->start_mono_ns;
    cfg.seed = inj->seed;
    cfg.at_ns = inj->at_ns;
    cfg.until_ns = inj->until_ns;
    uint64_t rng[4];
    jct__rng_seed(rng, inj->seed);
    if (jct__hostdrop_configure(c->host[i], &cfg, rng) < 0)
      fprintf(stderr, "jctlab: injector #%zu at host:%d: cannot restart its kernel program\n",
              i + 1, inj->host);
  }
}

/* ---- at=host ------------------------------------------------------------ */

typedef struct {
  jct__chain_t *c;
  size_t i;
  char *err;
  size_t errlen;
} host_arg_t;

/* In the rank's namespace: refuse delay where the kernel has no fq (its
 * earliest-departure-time stamps need it), else load and attach. */
static int attach_host(void *arg) {
  host_arg_t *a = arg;
  jct__chain_t *c = a->c;
  jct_injector_t *inj = c->inj[a->i];
  int ifindex = jct_topo_rank_ifindex(c->topo, (size_t)inj->host);
  char label[96];
  snprintf(label, sizeof label, "%s at=host:%d (%s)", inj->ops->name, inj->host,
           jct_topo_rank_ifname(c->topo, (size_t)inj->host));
  if (strcmp(inj->ops->name, "delay") == 0) {
    char why[256];
    int have = jct__qdisc_available(ifindex, "fq", why, sizeof why);
    if (have == 1)
      return jct__errf(a->err, a->errlen, JCT_EINVAL,
                       "%s: delay at a host is not implemented yet (this kernel has fq: "
                       "earliest-departure-time stamps would do it); run it on the switch",
                       inj->spec);
    return jct__errf(a->err, a->errlen, JCT_EINVAL,
                     "%s: delay at a host needs the fq qdisc for earliest-departure-time "
                     "(CONFIG_NET_SCH_FQ), which this kernel lacks (%s); run it on the switch",
                     inj->spec, have < 0 ? "cannot ask" : why);
  }
  return jct__hostdrop_attach(&c->host[a->i], ifindex, (uint32_t)a->i + 1, label, a->err,
                              a->errlen);
}

/* A pause storm's frames leave from the rank's own interface: a raw
 * AF_PACKET socket (packet(7)) bound to it, opened in its namespace. */
static int open_host_socket(jct__chain_t *c, size_t i, char *err, size_t errlen) {
  const jct_injector_t *inj = c->inj[i];
  size_t rank = (size_t)inj->host;
  int fd = jct_topo_socket(c->topo, rank, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0, err, errlen);
  if (fd < 0) return fd;
  struct sockaddr_ll sll = {.sll_family = AF_PACKET,
                            .sll_ifindex = jct_topo_rank_ifindex(c->topo, rank)};
  if (bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0) {
    char et[96];
    int rc = jct__errf(err, errlen, JCT_EIO, "%s: cannot bind a packet socket to %s: %s", inj->spec,
                       jct_topo_rank_ifname(c->topo, rank), jct__errno_text(errno, et, sizeof et));
    close(fd);
    return rc;
  }
  c->host_fd[i] = fd;
  return 0;
}

typedef struct {
  jct__nl_t **nl;
  char *err;
  size_t errlen;
} nl_arg_t;

static int open_nl(void *arg) {
  nl_arg_t *a = arg;
  return jct__nl_open(a->nl, a->err, a->errlen);
}

/* A flap's netlink socket, opened in its host's namespace (a socket stays
 * in the namespace it was made in). */
static int open_host_netlink(jct__chain_t *c, size_t i, char *err, size_t errlen) {
  nl_arg_t a = {.nl = &c->host_nl[i], .err = err, .errlen = errlen};
  char nserr[160] = "";
  int rc = jct_topo_in_rank(c->topo, (size_t)c->inj[i]->host, open_nl, &a, nserr, sizeof nserr);
  if (rc < 0 && nserr[0]) jct__errf(err, errlen, rc, "%s", nserr);
  return rc < 0 ? rc : 0;
}

/* Set the flap's host interface up or down (RTM_NEWLINK, IFF_UP), keeping
 * its down time. */
static int set_host_link(jct__chain_t *c, size_t i, bool up, uint64_t now_ns) {
  jct_injector_t *inj = c->inj[i];
  if (!c->host_nl[i] || up == !c->host_down_ns[i]) return 0;
  size_t rank = (size_t)inj->host;
  char err[256];
  struct nlmsghdr *nlh;
  int rc =
      jct__nl_begin(c->host_nl[i], &nlh, RTM_NEWLINK, 0, err, sizeof err, "host:%zu: set %s %s",
                    rank, jct_topo_rank_ifname(c->topo, rank), up ? "up" : "down");
  if (rc < 0) return rc;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = jct_topo_rank_ifindex(c->topo, rank);
  ifi->ifi_flags = up ? IFF_UP : 0;
  ifi->ifi_change = IFF_UP;
  /* Down flushed the rank's permanent neighbours (neigh_ifdown): put them
   * back, so no ARP crosses the fabric (topo.h). */
  if (up &&
      (rc = jct__link_rank_neighs(c->host_nl[i], rank, ifi->ifi_index, jct_topo_nranks(c->topo),
                                  jct_topo_ipv6(c->topo), err, sizeof err)) < 0)
    return rc;
  if ((rc = jct__nl_flush(c->host_nl[i], err, sizeof err)) < 0) {
    fprintf(stderr, "jctlab: injector #%zu: %s\n", i + 1, err);
    return rc;
  }
  if (up) {
    inj->stats.link_down_ns += now_ns > c->host_down_ns[i] ? now_ns - c->host_down_ns[i] : 0;
    c->host_down_ns[i] = 0;
  } else {
    c->host_down_ns[i] = now_ns ? now_ns : 1;
  }
  if (c->log)
    fprintf(c->log,
            "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"injector\":%u,\"kind\":\"%s\","
            "\"action\":\"%s\"}\n",
            c->rep, (unsigned long long)(now_ns - c->start_ns), inj->host, inj->index,
            inj->ops->name, up ? "link-up" : "link-down");
  return 0;
}

/* Every host link a flap left down comes up (a repetition's end, a
 * baseline, the end of the run). */
static void hosts_links_up(jct__chain_t *c, uint64_t now_ns) {
  for (size_t i = 0; c->host_nl && i < c->n; i++)
    if (c->host_down_ns[i]) set_host_link(c, i, true, now_ns);
}

bool jct__chain_host_link_drop(jct__chain_t *c, uint32_t port) {
  for (size_t i = 0; c && c->host_nl && i < c->n; i++)
    if (c->host_down_ns[i] && (uint32_t)c->inj[i]->host == port) {
      c->inj[i]->stats.dropped++;
      return true;
    }
  return false;
}

int jct__chain_attach_hosts(jct__chain_t *c, const jct_topo_t *topo, char *err, size_t errlen) {
  c->topo = topo;
  for (size_t i = 0; i < c->n; i++) {
    const jct_injector_t *inj = c->inj[i];
    if (inj->host < 0) continue;
    if (!topo)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "%s: at=host: this run has no host jctlab can reach (ranks in namespaces "
                       "only: transport uroce, not the lab's VMs or jctlab wire)",
                       inj->spec);
    if ((size_t)inj->host >= jct_topo_nranks(topo))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "%s: host:%d does not exist: the ranks are 0 to %zu", inj->spec, inj->host,
                       jct_topo_nranks(topo) - 1);
    if (inj->ops->host_frames || inj->ops->host_link) {
      int rc = inj->ops->host_frames ? open_host_socket(c, i, err, errlen)
                                     : open_host_netlink(c, i, err, errlen);
      if (rc < 0) return rc;
      continue;
    }
    host_arg_t a = {.c = c, .i = i, .err = err, .errlen = errlen};
    char nserr[160];
    int rc = jct_topo_in_rank(topo, (size_t)inj->host, attach_host, &a, nserr, sizeof nserr);
    if (rc < 0) {
      if (!c->host[i] && !err[0]) jct__errf(err, errlen, rc, "%s", nserr);
      return rc;
    }
  }
  return 0;
}

static int detach_host(void *arg) {
  host_arg_t *a = arg;
  jct__hostdrop_detach(a->c->host[a->i], false);
  return 0;
}

void jct__chain_detach_hosts(jct__chain_t *c) {
  hosts_links_up(c, mono_ns());
  for (size_t i = 0; c->host_nl && i < c->n; i++) {
    jct__nl_close(c->host_nl[i]);
    c->host_nl[i] = NULL;
  }
  for (size_t i = 0; c->host_fd && i < c->n; i++) {
    if (c->host_fd[i] >= 0) close(c->host_fd[i]);
    c->host_fd[i] = -1;
  }
  for (size_t i = 0; c->host && i < c->n; i++) {
    if (!c->host[i]) continue;
    host_arg_t a = {.c = c, .i = i};
    char ignored[160];
    if (jct_topo_in_rank(c->topo, (size_t)c->inj[i]->host, detach_host, &a, ignored,
                         sizeof ignored) < 0)
      jct__hostdrop_detach(c->host[i], true); /* its namespace is gone: only free */
    c->host[i] = NULL;
  }
  c->topo = NULL;
}

typedef struct {
  jct__chain_t *c;
  const jct_injector_t *inj;
} event_arg_t;

static void log_host_event(const struct jct_kdrop_event *ev, void *arg) {
  event_arg_t *a = arg;
  jct__chain_t *c = a->c;
  char src[INET6_ADDRSTRLEN] = "", dst[INET6_ADDRSTRLEN] = "";
  int af = ev->family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, ev->src, src, sizeof src);
  inet_ntop(af, ev->dst, dst, sizeof dst);
  uint64_t t = ev->t_ns > c->start_mono_ns ? ev->t_ns - c->start_mono_ns : 0;
  fprintf(c->log,
          "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"dir\":\"out\",\"injector\":%u,"
          "\"kind\":\"%s\",\"action\":\"drop\",\"src\":\"%s\",\"dst\":\"%s\",\"qp\":%u,"
          "\"psn\":%u,\"opcode\":\"%s\",\"retransmission\":%s}\n",
          c->rep, (unsigned long long)t, a->inj->host, a->inj->index, a->inj->ops->name, src, dst,
          ev->qp, ev->psn, jct_opcode_info(ev->opcode)->name,
          ev->retransmission ? "true" : "false");
}

void jct__chain_collect(jct__chain_t *c) {
  hosts_links_up(c, c->last_ns); /* the link is up when a repetition ends */
  for (size_t i = 0; c->host && i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    if (!c->host[i]) continue; /* a pause's counters are its own (generated) */
    struct jct_kdrop_counters k;
    if (jct__hostdrop_counters(c->host[i], &k) == 0) {
      memset(&inj->stats, 0, sizeof inj->stats);
      inj->stats.seen = inj->stats.matched = k.seen;
      inj->stats.dropped = k.dropped;
    }
    event_arg_t a = {.c = c, .inj = inj};
    if (c->log) jct__hostdrop_drain(c->host[i], log_host_event, &a);
  }
}

int jct__chain_set_enabled(jct__chain_t *c, bool on) {
  if (!on) hosts_links_up(c, c->last_ns);
  for (size_t i = 0; c->host && i < c->n; i++)
    if (c->host[i] && jct__hostdrop_enable(c->host[i], on) < 0) return JCT_EIO;
  if (!c->sites || c->disabled == !on) {
    c->disabled = !on;
    return 0;
  }
  c->disabled = !on;
  for (uint32_t i = 0; i < 2 * c->nports; i++) {
    site_t *s = &c->sites[i];
    if (!s->c) continue; /* no hook was needed here */
    jct_switch_stage_t stage = s->out ? JCT_SW_EGRESS : JCT_SW_INGRESS;
    int rc = jct_switch_set_hook(c->sw, s->port, stage, on ? on_frame : NULL, on ? s : NULL);
    if (rc) return rc;
  }
  return 0;
}

uint64_t jct__chain_next_deadline_ns(const jct__chain_t *c) {
  uint64_t d = UINT64_MAX;
  if (c->disabled) return d;
  for (size_t i = 0; i < c->n; i++) {
    const jct_injector_t *inj = c->inj[i];
    if (!inj->ops->next_deadline_ns) continue;
    uint64_t x = inj->ops->next_deadline_ns(inj);
    if (x < d) d = x;
  }
  return d;
}

static void emit_into_switch(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                             uint64_t now_ns) {
  jct__chain_t *c = inj->data;
  if (c->log)
    fprintf(c->log,
            "{\"rep\":%u,\"t_ns\":%llu,\"port\":%u,\"dir\":\"in\",\"injector\":%u,"
            "\"kind\":\"%s\",\"action\":\"generate\",\"bytes\":%zu}\n",
            c->rep, (unsigned long long)(now_ns - c->start_ns), port, inj->index, inj->ops->name,
            len);
  jct_switch_rx(c->sw, port, frame, len, now_ns);
}

/* A frame an injector at a host makes: sent from the host's interface,
 * it reaches the switch on that link as the host's own frames do. */
static void emit_from_host(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                           uint64_t now_ns) {
  (void)port;
  jct__chain_t *c = inj->data;
  int fd = c->host_fd[inj->index];
  bool sent = fd >= 0 && send(fd, frame, len, 0) == (ssize_t)len;
  if (!sent) inj->stats.dropped++; /* generated, but the host's kernel refused to send it */
  if (c->log)
    fprintf(c->log,
            "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"dir\":\"out\",\"injector\":%u,"
            "\"kind\":\"%s\",\"action\":\"%s\",\"bytes\":%zu}\n",
            c->rep, (unsigned long long)(now_ns - c->start_ns), inj->host, inj->index,
            inj->ops->name, sent ? "generate" : "send-failed", len);
}

void jct__chain_tick(jct__chain_t *c, uint64_t now_ns) {
  c->last_ns = now_ns;
  if (c->disabled) return;
  for (size_t i = 0; i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    if (!(inj->ops->tick && inj->ops->next_deadline_ns &&
          inj->ops->next_deadline_ns(inj) <= now_ns))
      continue;
    jct_injector_tick(inj, now_ns, inj->host >= 0 ? emit_from_host : emit_into_switch);
    if (inj->host >= 0 && inj->ops->host_link) { /* the state due now, on the host's link */
      uint8_t none[1] = {0};
      jct_frame_t f = {.data = none, .len = 0, .out = true};
      set_host_link(c, i, inj->ops->process(inj, &f, now_ns) != JCT_DROP, now_ns);
    }
  }
}

size_t jct__chain_len(const jct__chain_t *c) {
  return c->n;
}

const jct_injector_t *jct__chain_get(const jct__chain_t *c, size_t i) {
  return i < c->n ? c->inj[i] : NULL;
}

void jct__chain_free(jct__chain_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++)
    jct_injector_free(c->inj[i]);
  free(c->inj);
  jct__chain_detach_hosts(c); /* normally done already, by the fabric */
  free(c->host);
  free(c->host_fd);
  free(c->host_nl);
  free(c->host_down_ns);
  free_sites(c);
  free(c);
}
