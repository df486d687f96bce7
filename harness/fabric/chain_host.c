/* The injector chain's injectors placed at=host:RANK (chain.h): drop as a
 * tc-eBPF program in the rank's kernel (hostdrop.h), pause's frames sent
 * from the rank's interface on an AF_PACKET socket (packet(7)), flap as
 * the rank's interface set down and up over rtnetlink (RTM_NEWLINK,
 * IFF_UP). Everything that touches a host is here; chain.c calls in. */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_packet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chain_int.h"
#include "common/errf.h"
#include "common/rng.h"
#include "harness/base/netlink.h"
#include "hostdrop.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"
#include "topo_link.h"

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
    /* delay nak= holds one flow: the switch cannot (delay.c) */
    const char *instead = strstr(inj->spec, "nak=") ? "" : "; run it on the switch";
    if (have == 1)
      return jct__errf(a->err, a->errlen, JCT_EINVAL,
                       "%s: delay at a host runs in the lab's VMs (--transport verbs --lab N); "
                       "in namespaces not yet, though this kernel has fq%s",
                       inj->spec, instead);
    return jct__errf(a->err, a->errlen, JCT_EINVAL,
                     "%s: delay at a host needs the fq qdisc for earliest-departure-time "
                     "(CONFIG_NET_SCH_FQ), which this kernel lacks (%s)%s",
                     inj->spec, have < 0 ? "cannot ask" : why, instead);
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

/* Packets the namespace's IP and IPv6 refused for want of a route (Ip:
 * OutNoRoutes in snmp, Ip6OutNoRoutes in snmp6: what udp_sendmsg and
 * udpv6_sendmsg count when they return ENETUNREACH), read in the rank's
 * namespace. */
static void add_counter(const char *path, const char *row, const char *name, uint64_t *total) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char names[1024], values[1024];
  if (row) { /* snmp: a row of names, then a row of values */
    while (fgets(names, sizeof names, f) && fgets(values, sizeof values, f)) {
      if (strncmp(names, row, strlen(row)) != 0) continue;
      char *sn, *sv, *n = strtok_r(names, " \n", &sn), *v = strtok_r(values, " \n", &sv);
      for (; n && v; n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv))
        if (strcmp(n, name) == 0) *total += strtoull(v, NULL, 10);
    }
  } else { /* snmp6: NAME VALUE lines */
    size_t len = strlen(name);
    while (fgets(names, sizeof names, f))
      if (strncmp(names, name, len) == 0 && (names[len] == ' ' || names[len] == '\t'))
        *total += strtoull(names + len, NULL, 10);
  }
  fclose(f);
}

static int read_noroutes(void *arg) {
  add_counter("/proc/thread-self/net/snmp", "Ip:", "OutNoRoutes", arg);
  add_counter("/proc/thread-self/net/snmp6", NULL, "Ip6OutNoRoutes", arg);
  return 0;
}

static uint64_t host_noroutes(const jct__chain_t *c, size_t rank) {
  uint64_t n = 0;
  jct_topo_in_rank(c->topo, rank, read_noroutes, &n, NULL, 0);
  return n;
}

/* A flap's transition: its down time, and its fault-log line (extra: more
 * members, or ""). */
static void link_changed(jct__chain_t *c, size_t i, bool up, uint64_t now_ns, const char *extra) {
  jct_injector_t *inj = c->inj[i];
  if (up) {
    inj->stats.link_down_ns += now_ns > c->host_down_ns[i] ? now_ns - c->host_down_ns[i] : 0;
    c->host_down_ns[i] = 0;
    c->links_down--;
  } else {
    c->host_down_ns[i] = now_ns ? now_ns : 1;
    c->links_down++;
  }
  if (c->log)
    fprintf(c->log,
            "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"injector\":%u,\"kind\":\"%s\","
            "\"action\":\"%s\"%s}\n",
            c->rep, (unsigned long long)(now_ns - c->start_ns), inj->host, inj->index,
            inj->ops->name, up ? "link-up" : "link-down", extra);
}

/* A lab VM's flap: its carrier, through the lab (jct__chain_set_link_fn). */
static int set_remote_link(jct__chain_t *c, size_t i, bool up, uint64_t now_ns) {
  if (!c->link_fn || up == !c->host_down_ns[i]) return 0;
  int rc = c->link_fn(c->link_arg, (uint32_t)c->inj[i]->host, up);
  if (rc < 0) {
    fprintf(stderr, "jctlab: injector #%zu: cannot set host:%d's carrier %s\n", i + 1,
            c->inj[i]->host, up ? "on" : "off");
    return rc;
  }
  link_changed(c, i, up, now_ns, "");
  return 0;
}

void jct__chain_set_link_fn(jct__chain_t *c, jct__chain_link_fn fn, void *arg) {
  c->link_fn = fn;
  c->link_arg = arg;
}

/* Set the flap's host interface up or down (RTM_NEWLINK, IFF_UP), keeping
 * its down time and what the host's kernel refused to send meanwhile. */
static int set_host_link(jct__chain_t *c, size_t i, bool up, uint64_t now_ns) {
  jct_injector_t *inj = c->inj[i];
  if (c->remote) return set_remote_link(c, i, up, now_ns);
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
  /* Refused while down: counted up to the moment the link comes up. */
  uint64_t refused = 0, noroutes = host_noroutes(c, rank);
  if (up) refused = noroutes > c->host_noroutes[i] ? noroutes - c->host_noroutes[i] : 0;
  if ((rc = jct__nl_flush(c->host_nl[i], err, sizeof err)) < 0) {
    fprintf(stderr, "jctlab: injector #%zu: %s\n", i + 1, err);
    return rc;
  }
  if (up)
    inj->stats.refused += refused;
  else
    c->host_noroutes[i] = noroutes;
  char extra[48] = "";
  if (up) snprintf(extra, sizeof extra, ",\"refused\":%llu", (unsigned long long)refused);
  link_changed(c, i, up, now_ns, extra);
  return 0;
}

/* Every host link a flap left down comes up (a repetition's end, a
 * baseline, the end of the run). */
void jct__chain_hosts_links_up(jct__chain_t *c, uint64_t now_ns) {
  for (size_t i = 0; c->host_down_ns && i < c->n; i++)
    if (c->host_down_ns[i]) set_host_link(c, i, true, now_ns);
}

bool jct__chain_host_link_drop(jct__chain_t *c, uint32_t port) {
  if (!c || !c->links_down) return false; /* the switch's every frame asks */
  for (size_t i = 0; c->host_down_ns && i < c->n; i++)
    if (c->host_down_ns[i] && (uint32_t)c->inj[i]->host == port) {
      c->inj[i]->stats.dropped++;
      return true;
    }
  return false;
}

/* An injector at a remote host (a lab VM, whose agent runs it): drop (its
 * tc-eBPF program) or pause (its frames), on a rank that exists. */
static int check_remote(const jct__chain_t *c, const jct_injector_t *inj, char *err,
                        size_t errlen) {
  /* Not eth0 set down from inside: that takes its routes with it, rxe's
   * next send is refused by the VM's kernel, and rxe puts a QP whose send
   * was refused in the error state (seen with TC_ACT_SHOT), where a pulled
   * cable only loses frames. The VM's carrier, from outside, keeps them. */
  if (inj->ops->host_link && !c->link_fn && !c->agents_link)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s: flap at a host needs the host's carrier, which only the lab's VMs "
                     "(qemu's set_link) give here",
                     inj->spec);
  if (!inj->ops->kernel && !inj->ops->host_frames && !inj->ops->host_link)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s: a host's agent runs drop and delay (its tc-eBPF program), pause (its "
                     "frames) and flap only; run %s on the switch",
                     inj->spec, inj->ops->name);
  if ((uint32_t)inj->host >= c->nports)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: host:%d does not exist: the ranks are 0 to %u",
                     inj->spec, inj->host, c->nports - 1);
  return 0;
}

int jct__chain_attach_hosts(jct__chain_t *c, const jct_topo_t *topo, bool remote, char *err,
                            size_t errlen) {
  c->topo = topo;
  for (size_t i = 0; i < c->n; i++) {
    const jct_injector_t *inj = c->inj[i];
    if (inj->host < 0) continue;
    if (remote) {
      int rc = check_remote(c, inj, err, errlen);
      if (rc < 0) return rc;
      c->remote = true;
      continue;
    }
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

int jct__chain_attach_remote(jct__chain_t *c, uint32_t nranks, FILE *log, char *err,
                             size_t errlen) {
  c->log = log;
  c->nports = nranks;
  c->agents_link = true;
  for (size_t i = 0; i < c->n; i++)
    if (c->inj[i]->host < 0)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "%s: not at a host (at=host:RANK), and this run has no switch",
                       c->inj[i]->spec);
  return jct__chain_attach_hosts(c, NULL, true, err, errlen);
}

static int detach_host(void *arg) {
  host_arg_t *a = arg;
  jct__hostdrop_detach(a->c->host[a->i], false);
  return 0;
}

void jct__chain_detach_hosts(jct__chain_t *c) {
  jct__chain_hosts_links_up(c, c->last_ns);
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

/* One drop's fault-log line, t from the repetition's start. */
static void log_event(jct__chain_t *c, const jct_injector_t *inj, const struct jct_kdrop_event *ev,
                      uint64_t t) {
  char src[INET6_ADDRSTRLEN] = "", dst[INET6_ADDRSTRLEN] = "";
  int af = ev->family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, ev->src, src, sizeof src);
  inet_ntop(af, ev->dst, dst, sizeof dst);
  event_arg_t ea = {.c = c, .inj = inj}, *a = &ea;
  fprintf(c->log,
          "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"dir\":\"out\",\"injector\":%u,"
          "\"kind\":\"%s\",\"action\":\"drop\",\"src\":\"%s\",\"dst\":\"%s\",\"qp\":%u,"
          "\"psn\":%u,\"opcode\":\"%s\",\"retransmission\":%s}\n",
          c->rep, (unsigned long long)t, a->inj->host, a->inj->index, a->inj->ops->name, src, dst,
          ev->qp, ev->psn, jct_opcode_info(ev->opcode)->name,
          ev->retransmission ? "true" : "false");
}

static void log_host_event(const struct jct_kdrop_event *ev, void *arg) {
  event_arg_t *a = arg;
  /* The kernel stamps wall time; the log is in emulated time, as the
   * switch's entries. */
  uint64_t v = jct_clock_virtual_ns(ev->t_ns);
  log_event(a->c, a->inj, ev, v > a->c->start_ns ? v - a->c->start_ns : 0);
}

static void host_stats(jct_injector_t *inj, const struct jct_kdrop_counters *k) {
  memset(&inj->stats, 0, sizeof inj->stats);
  inj->stats.seen = inj->stats.matched = k->seen;
  inj->stats.dropped = k->dropped;
  inj->stats.held = k->held;
}

void jct__chain_host_result(jct__chain_t *c, size_t i, const jct_injector_stats_t *st) {
  if (i < c->n) c->inj[i]->stats = *st;
}

void jct__chain_host_link(jct__chain_t *c, size_t i, uint64_t t_ns, bool up) {
  if (i >= c->n || !c->log) return;
  const jct_injector_t *inj = c->inj[i];
  fprintf(c->log,
          "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"injector\":%u,\"kind\":\"%s\","
          "\"action\":\"%s\"}\n",
          c->rep, (unsigned long long)t_ns, inj->host, inj->index, inj->ops->name,
          up ? "link-up" : "link-down");
}

void jct__chain_host_event(jct__chain_t *c, size_t i, const struct jct_kdrop_event *ev,
                           uint64_t t_ns) {
  if (i < c->n && c->log) log_event(c, c->inj[i], ev, t_ns);
}

void jct__chain_collect(jct__chain_t *c) {
  jct__chain_hosts_links_up(c, c->last_ns); /* the link is up when a repetition ends */
  for (size_t i = 0; c->host && i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    if (!c->host[i]) continue; /* a pause's counters are its own (generated) */
    struct jct_kdrop_counters k;
    if (jct__hostdrop_counters(c->host[i], &k) == 0) host_stats(inj, &k);
    event_arg_t a = {.c = c, .inj = inj};
    if (c->log) jct__hostdrop_drain(c->host[i], log_host_event, &a);
  }
}

/* A frame a host's injector generated: its fault-log line, t from the
 * repetition's start. */
static void log_frame(jct__chain_t *c, const jct_injector_t *inj, uint64_t t, size_t len,
                      bool sent) {
  fprintf(c->log,
          "{\"rep\":%u,\"t_ns\":%llu,\"at\":\"host:%d\",\"dir\":\"out\",\"injector\":%u,"
          "\"kind\":\"%s\",\"action\":\"%s\",\"bytes\":%zu}\n",
          c->rep, (unsigned long long)t, inj->host, inj->index, inj->ops->name,
          sent ? "generate" : "send-failed", len);
}

/* A frame an injector at a host makes: sent from the host's interface,
 * it reaches the switch on that link as the host's own frames do. */
void jct__chain_emit_from_host(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                               uint64_t now_ns) {
  (void)port;
  jct__chain_t *c = inj->data;
  int fd = c->host_fd[inj->index];
  bool sent = fd >= 0 && send(fd, frame, len, 0) == (ssize_t)len;
  if (!sent) inj->stats.dropped++; /* generated, but the host's kernel refused to send it */
  if (c->log) log_frame(c, inj, now_ns - c->start_ns, len, sent);
}

void jct__chain_host_frame(jct__chain_t *c, size_t i, uint64_t t_ns, size_t len, bool sent) {
  if (i < c->n && c->log) log_frame(c, c->inj[i], t_ns, len, sent);
}

uint64_t jct__chain_host_hold_ns(const jct__chain_t *c) {
  uint64_t hold = 0;
  for (size_t i = 0; c && i < c->n; i++) {
    const jct_injector_t *inj = c->inj[i];
    struct jct_kdrop_cfg cfg;
    char ignored[8];
    if (inj->host < 0 || !inj->ops->kernel ||
        jct__hostdrop_cfg_of(inj, jct_clock_tdf(), &cfg, ignored, sizeof ignored) < 0 ||
        cfg.mode != JCT_KDROP_DELAY) /* as the kernel holds them */
      continue;
    uint64_t d = cfg.delay_ns;
    for (uint32_t k = 0; k < cfg.nnaks && k < JCT_KDROP_MAX_NAKS; k++) /* delay by NAK */
      if (cfg.nak_hold_ns[k] > d) d = cfg.nak_hold_ns[k];
    if (2 * d > hold) hold = 2 * d;
  }
  return hold;
}

void jct__chain_hosts_start(jct__chain_t *c) {
  /* The kernel keeps wall time: it is given the repetition's start and
   * the window in it x F. An idle-time jump (clock.h) before the window
   * opens is not seen by the kernel, so it opens that much later in
   * emulated time: a window after a skipped timeout is approximate. */
  c->start_mono_ns = jct_clock_wall_at_ns(c->start_ns);
  for (size_t i = 0; i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    if (!c->host[i]) continue;
    /* The kernel program restarts as the injector does: same seed, same
     * window, zero counters. */
    struct jct_kdrop_cfg cfg; /* delay at=host: TIME x F, and the window x F */
    char ignored[8];
    if (jct__hostdrop_cfg_of(inj, jct_clock_tdf(), &cfg, ignored, sizeof ignored) < 0)
      continue; /* checked at new */
    cfg.enabled = !c->disabled;
    cfg.start_ns = c->start_mono_ns;
    uint64_t rng[4];
    jct__rng_seed(rng, inj->seed);
    if (jct__hostdrop_configure(c->host[i], &cfg, rng) < 0)
      fprintf(stderr, "jctlab: injector #%zu at host:%d: cannot restart its kernel program\n",
              i + 1, inj->host);
  }
}

int jct__chain_hosts_enable(jct__chain_t *c, bool on) {
  if (!on) jct__chain_hosts_links_up(c, c->last_ns);
  for (size_t i = 0; c->host && i < c->n; i++)
    if (c->host[i] && jct__hostdrop_enable(c->host[i], on) < 0) return JCT_EIO;
  return 0;
}

void jct__chain_host_tick(jct__chain_t *c, size_t i, uint64_t now_ns) {
  jct_injector_t *inj = c->inj[i];
  if (!inj->ops->host_link) return;
  uint8_t none[1] = {0}; /* the state due now, on the host's link */
  jct_frame_t f = {.data = none, .len = 0, .out = true};
  set_host_link(c, i, inj->ops->process(inj, &f, now_ns) != JCT_DROP, now_ns);
}

int jct__chain_hosts_alloc(jct__chain_t *c, size_t n) {
  c->host = calloc(n ? n : 1, sizeof *c->host);
  c->host_fd = malloc((n ? n : 1) * sizeof *c->host_fd);
  c->host_nl = calloc(n ? n : 1, sizeof *c->host_nl);
  c->host_down_ns = calloc(n ? n : 1, sizeof *c->host_down_ns);
  c->host_noroutes = calloc(n ? n : 1, sizeof *c->host_noroutes);
  if (!c->host || !c->host_fd || !c->host_nl || !c->host_down_ns || !c->host_noroutes)
    return JCT_ENOMEM;
  for (size_t i = 0; i < n; i++)
    c->host_fd[i] = -1;
  return 0;
}

void jct__chain_hosts_free(jct__chain_t *c) {
  free(c->host);
  free(c->host_fd);
  free(c->host_nl);
  free(c->host_down_ns);
  free(c->host_noroutes);
  c->host = NULL, c->host_fd = NULL, c->host_nl = NULL, c->host_down_ns = NULL;
  c->host_noroutes = NULL;
}
