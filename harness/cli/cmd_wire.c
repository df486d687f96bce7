/* `jctlab wire`: jctlab's switch as a bump in the wire (issue 14). Two
 * existing network interfaces become the two ports of the switch model
 * (include/jctlab/fabric.h, transparent: no MAC table, so every frame goes
 * out of the other port), with the injector chain of `jctlab run --inject`
 * on its hooks, until --duration passes or SIGINT/SIGTERM; then the
 * counters of each direction, port and injector, as text or JSON.
 *
 *   jctlab wire IF_A IF_B [--inject SPEC ...] [--rate R] [--duration D] [--seed N]
 *               [--fault-log FILE] [--pcap-out FILE] [--pcap-drops FILE] [--json FILE]
 *
 * Exit status: 0 every frame accounted for; 3 the harness lost frames by its
 * own fault (the kernel dropped frames before libpcap read them, pcap_inject
 * failed, a frame longer than the snap length); 2 bad input (an option, a
 * spec, an interface that is missing, down or receives coalesced frames);
 * 1 jctlab failed. An interrupt is the ordinary end, not a failure.
 */
#include <errno.h>
#include <jansson.h>
#include <linux/ethtool.h>
#include <net/if_arp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdbool.h>

#include "commands.h"
#include "harness/base/interrupt.h"
#include "harness/base/units.h"
#include "harness/fabric/chain.h"
#include "harness/orch/loop.h"
#include "harness/report/output.h"
#include "jctlab/error.h"
#include "jctlab/fabric.h"
#include "jctlab/injector.h"
#include "jctlab/switch.h"

#define MAX_INJECT 16
#define DEFAULT_RATE_BPS 100000000000ull /* when the kernel reports no speed */
#define SPIN_NS 100000u                  /* as bench/fabric: busy-poll timers due within 100 us */
#define DATA_PRIO 3

static const char usage_text[] =
    "usage: jctlab wire IF_A IF_B [--inject SPEC ...] [options]\n"
    "\n"
    "Put jctlab's switch between two network interfaces of this machine, as a bump in\n"
    "the wire between a host and its switch: frames read on one (libpcap) leave by the\n"
    "other, through the injectors, both ways, until --duration passes or SIGINT/SIGTERM.\n"
    "Then prints what each direction forwarded and dropped (by which injector), what each\n"
    "port received and sent, and each injector's counters.\n"
    "\n"
    "The two ports are a switch's: serialization at --rate, MAC control frames (PFC,\n"
    "PAUSE) consumed and honoured, not forwarded. Give the interfaces no addresses and\n"
    "turn receive offloads off (ethtool -K IF gro off lro off): coalesced frames are\n"
    "refused.\n"
    "\n"
    "options:\n"
    "  --inject SPEC      an injector, repeatable, in order (as jctlab run --inject):\n"
    "                     'drop psn=4096 qp=0x101', 'drop p=0.001', 'delay 50us port=1', ...\n"
    "                     port=0 is IF_A, port=1 is IF_B; an injector acts where frames\n"
    "                     leave by its port (dir=out, the default) or arrive (dir=in)\n"
    "  --rate RATE        both ports' rate: 10gbit, 100gbit (default: the interfaces'\n"
    "                     speed as the kernel reports it, the lower one; 100gbit if none)\n"
    "  --duration TIME    stop after TIME: 10s, 500ms (default: until SIGINT or SIGTERM)\n"
    "  --seed N           the seed injectors without seed= derive theirs from (default 1)\n"
    "  --fault-log FILE   every injector action as a JSON line\n"
    "  --pcap-out FILE    every frame the wire sent (nanosecond pcap)\n"
    "  --pcap-drops FILE  the frames injectors dropped (nanosecond pcap)\n"
    "  --json FILE        the counters as JSON ('-': standard output, instead of the text)\n"
    "\n"
    "exit status: 0 every frame accounted for, 3 the harness lost frames by its own fault,\n"
    "2 bad input, 1 jctlab failed.\n";

#define bad(...) jct__cmd_bad("wire", __VA_ARGS__)

typedef struct {
  const char *ifname[2];
  const char *inject[MAX_INJECT];
  size_t ninject;
  uint64_t rate_bps, duration_ns, seed;
  const char *fault_log, *pcap_out, *pcap_drops, *json;
} args_t;

/* ---- the command line ----------------------------------------------------- */

static int parse(int argc, char **argv, args_t *a) {
  size_t nif = 0;
  a->seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i];
    if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (w[0] != '-') {
      if (nif == 2) return bad("a third interface '%s': the wire has two ports", w);
      a->ifname[nif++] = w;
      continue;
    }
    static const char *const valued[] = {"--inject",     "--rate", "--duration", "--seed",
                                         "--fault-log",  "--json", "--pcap-out", "--pcap-drops",
                                         NULL};
    size_t k = 0;
    while (valued[k] && strcmp(valued[k], w))
      k++;
    if (!valued[k]) return bad("unknown option '%s'", w);
    if (i + 1 >= argc || !*argv[i + 1]) return bad("%s needs a value", w);
    const char *v = argv[++i];
    if (!strcmp(w, "--inject")) {
      if (a->ninject == MAX_INJECT) return bad("--inject: at most %d of them (%s)", MAX_INJECT, v);
      a->inject[a->ninject++] = v;
    } else if (!strcmp(w, "--rate")) {
      if (jct__parse_rate_bps(v, &a->rate_bps) || a->rate_bps > JCT_SWITCH_MAX_RATE_BPS)
        return bad("--rate: '%s' is not a rate up to 1tbit (10gbit, 100gbit)", v);
    } else if (!strcmp(w, "--duration")) {
      if (jct__parse_time_ns(v, &a->duration_ns) || !a->duration_ns)
        return bad("--duration: '%s' is not a time above 0 (10s, 500ms)", v);
    } else if (!strcmp(w, "--seed")) {
      if (jct__parse_count(v, UINT64_MAX, &a->seed))
        return bad("--seed: '%s' is not a number", v);
    } else if (!strcmp(w, "--fault-log") || !strcmp(w, "--json")) {
      if (jct__cmd_output_ok("wire", w, v)) return 2;
      if (w[2] == 'f') a->fault_log = v;
      else a->json = v;
    } else {
      if (jct__cmd_writable("wire", w, v)) return 2;
      if (!strcmp(w, "--pcap-out")) a->pcap_out = v;
      else a->pcap_drops = v;
    }
  }
  if (nif < 2) return bad("give two interfaces, IF_A and IF_B");
  if (!strcmp(a->ifname[0], a->ifname[1]))
    return bad("'%s' given twice: the wire's two ports are two interfaces", a->ifname[0]);
  return -1;
}

/* ---- the interfaces --------------------------------------------------------- */

/* What the kernel says of interface name (in this network namespace):
 * its MTU, its speed (bit/s, 0 when it reports none), and whether it can
 * be a port: present, up, no receive offload that would hand libpcap
 * frames longer than the MTU, Ethernet. Returns 0, or 2 after bad(). */
static int probe_ifname(int sock, const char *name, uint32_t *mtu, uint64_t *speed_bps) {
  struct ifreq ifr;
  if (strlen(name) >= IFNAMSIZ || !if_nametoindex(name))
    return bad("no interface '%s' in this network namespace", name);
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, name);
  if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
    return bad("interface '%s': %s", name, strerror(errno));
  if (!(ifr.ifr_flags & IFF_UP)) return bad("interface '%s' is down (ip link set %s up)", name, name);
  if (ifr.ifr_flags & IFF_LOOPBACK) return bad("interface '%s' is a loopback", name);
  if (ioctl(sock, SIOCGIFHWADDR, &ifr) < 0)
    return bad("interface '%s': %s", name, strerror(errno));
  if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
    return bad("interface '%s' is not Ethernet (ARPHRD %u): the switch's ports carry Ethernet "
               "frames",
               name, (unsigned)ifr.ifr_hwaddr.sa_family);
  if (ioctl(sock, SIOCGIFMTU, &ifr) < 0) return bad("interface '%s': %s", name, strerror(errno));
  *mtu = (uint32_t)ifr.ifr_mtu;
  /* GRO and LRO coalesce received frames (Documentation/networking/
   * segmentation-offloads.rst): libpcap would see one long frame where the
   * wire carried several, and the other port could not send it. */
  struct ethtool_value ev = {.cmd = ETHTOOL_GGRO};
  ifr.ifr_data = (void *)&ev;
  if (ioctl(sock, SIOCETHTOOL, &ifr) == 0 && ev.data)
    return bad("interface '%s' has generic-receive-offload on: frames would reach jctlab "
               "coalesced (ethtool -K %s gro off)",
               name, name);
  ev = (struct ethtool_value){.cmd = ETHTOOL_GFLAGS};
  if (ioctl(sock, SIOCETHTOOL, &ifr) == 0 && (ev.data & ETH_FLAG_LRO))
    return bad("interface '%s' has large-receive-offload on: frames would reach jctlab "
               "coalesced (ethtool -K %s lro off)",
               name, name);
  struct ethtool_cmd ec = {.cmd = ETHTOOL_GSET};
  ifr.ifr_data = (void *)&ec;
  *speed_bps = 0;
  if (ioctl(sock, SIOCETHTOOL, &ifr) == 0) {
    uint32_t mbit = ethtool_cmd_speed(&ec);
    if (mbit != 0 && mbit != (uint32_t)SPEED_UNKNOWN && mbit != 0xffff)
      *speed_bps = (uint64_t)mbit * 1000000u;
  }
  return 0;
}

/* ---- the run ------------------------------------------------------------------ */

typedef struct {
  jct_switch_port_stats_t port[2];
  jct_fabric_harness_stats_t hs;
  uint64_t elapsed_ns, lateness_p99_ns;
  int signal; /* 0: --duration ended it */
  int check_rc;
  char check_err[256];
} outcome_t;

static bool never(void *arg) {
  (void)arg;
  return false;
}

static int forward(const args_t *a, jct__chain_t *chain, FILE *log, uint32_t mtu, outcome_t *out,
                   char *err, size_t errlen) {
  jct__loop_t loop = {0};
  int rc = jct__loop_open(&loop, SPIN_NS, err, errlen);
  jct_fabric_t *fab = NULL;
  jct_fabric_opts_t fo = {.nranks = 2,
                          .rate_bps = a->rate_bps,
                          .mtu = mtu,
                          .data_prio = DATA_PRIO,
                          .port_ifnames = a->ifname,
                          .transparent = true,
                          .pcap_out = a->pcap_out,
                          .pcap_drops = a->pcap_drops,
                          .fault_log = log,
                          .chain = chain};
  if (!rc) rc = jct_fabric_new(&fab, &loop.uv, &loop.clock, &fo, err, errlen);
  if (rc) {
    jct__loop_close(&loop);
    return rc;
  }
  char rb[32];
  fprintf(stderr, "jctlab wire: forwarding %s <-> %s at %s, %zu injector(s), until %s\n",
          a->ifname[0], a->ifname[1], jct__fmt_rate(a->rate_bps, rb, sizeof rb), a->ninject,
          a->duration_ns ? "--duration passes or SIGINT/SIGTERM" : "SIGINT or SIGTERM");
  uint64_t start = jct_now_ns();
  jct_fabric_start(fab, start);
  jct__loop_run_until(&loop, never, NULL, NULL,
                      a->duration_ns ? start + a->duration_ns : UINT64_MAX);
  uint64_t end = jct_now_ns();
  out->elapsed_ns = end - start;
  out->signal = jct__interrupt_signal();
  jct_switch_t *sw = jct_fabric_switch(fab);
  for (uint32_t p = 0; p < 2; p++)
    jct_switch_port_stats(sw, p, end, &out->port[p]);
  jct_fabric_harness_stats(fab, &out->hs);
  out->lateness_p99_ns = jct_lateness_quantile_ns(&loop.clock.lateness, 0.99);
  out->check_rc = jct_switch_check(sw, out->check_err, sizeof out->check_err);
  jct_fabric_free(fab); /* flushes and closes the captures */
  jct__loop_close(&loop);
  return 0;
}

/* ---- the counters --------------------------------------------------------------- */

static uint64_t sum_drops(const uint64_t *d) {
  uint64_t s = 0;
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
    s += d[k];
  return s;
}

/* One direction, frames in on port `in`, out of the other. */
typedef struct {
  uint64_t in, control, out, held, dropped;
  uint64_t drops[JCT_SW_DROP_NREASONS];
} dir_t;

static dir_t direction(const outcome_t *o, uint32_t in) {
  const jct_switch_port_stats_t *i = &o->port[in], *e = &o->port[1 - in];
  dir_t d = {.in = i->rx_frames + i->rx_duplicates,
             .control = i->rx_control,
             .out = e->tx_frames,
             .held = e->queued_frames + e->wire_frames};
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
    d.drops[k] = i->rx_drops[k] + e->tx_drops[k];
  d.dropped = sum_drops(d.drops);
  return d;
}

static uint64_t harness_losses(const outcome_t *o) {
  return o->hs.pcap_drops + o->hs.inject_failures + o->hs.truncated;
}

static const char *ended_by(const outcome_t *o) {
  return o->signal == SIGINT ? "SIGINT" : o->signal == SIGTERM ? "SIGTERM" : "duration";
}

static void print_text(const args_t *a, const outcome_t *o, const jct__chain_t *chain) {
  char rb[32], tb[32];
  printf("jctlab wire: %s <-> %s at %s, %s (ended by %s)\n", a->ifname[0], a->ifname[1],
         jct__fmt_rate(a->rate_bps, rb, sizeof rb), jct__fmt_ns(o->elapsed_ns, tb, sizeof tb),
         ended_by(o));
  for (uint32_t p = 0; p < 2; p++) {
    dir_t d = direction(o, p);
    printf("%s -> %s  %llu in, %llu forwarded, %llu dropped", a->ifname[p], a->ifname[1 - p],
           (unsigned long long)d.in, (unsigned long long)d.out, (unsigned long long)d.dropped);
    for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
      if (d.drops[k])
        printf(" (%s %llu)", jct_switch_drop_name(k), (unsigned long long)d.drops[k]);
    printf(", %llu MAC control, %llu held at the end\n", (unsigned long long)d.control,
           (unsigned long long)d.held);
  }
  for (uint32_t p = 0; p < 2; p++) {
    const jct_switch_port_stats_t *s = &o->port[p];
    uint64_t paused = 0;
    for (int q = 0; q < JCT_SWITCH_PRIOS; q++)
      paused += s->paused_ns[q];
    printf("port %u %-8s rx %llu frames %llu bytes, tx %llu frames %llu bytes, PFC received "
           "%llu XOFF / %llu XON, egress paused %s\n",
           p, a->ifname[p], (unsigned long long)s->rx_frames, (unsigned long long)s->rx_bytes,
           (unsigned long long)s->tx_frames, (unsigned long long)s->tx_bytes,
           (unsigned long long)s->rx_pfc_xoff, (unsigned long long)s->rx_pfc_xon,
           jct__fmt_ns(paused, tb, sizeof tb));
  }
  for (size_t i = 0; i < jct__chain_len(chain); i++) {
    const jct_injector_t *in = jct__chain_get(chain, i);
    jct__cmd_print_injector("injector ", i, in->spec, in->seed, &in->stats);
  }
  uint64_t lost = harness_losses(o);
  printf("harness %llu frames lost by jctlab (kernel drops before libpcap %llu, pcap_inject "
         "failures %llu, longer than the snap length %llu), loop lateness p99 %s: %s\n",
         (unsigned long long)lost, (unsigned long long)o->hs.pcap_drops,
         (unsigned long long)o->hs.inject_failures, (unsigned long long)o->hs.truncated,
         jct__fmt_ns(o->lateness_p99_ns, tb, sizeof tb),
         lost ? "INVALID, counters incomplete" : "every frame accounted for");
}

static json_t *u64(uint64_t v) {
  return json_integer((json_int_t)v);
}

static json_t *drops_json(const uint64_t *d) {
  json_t *o = json_object();
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
    if (d[k]) json_object_set_new(o, jct_switch_drop_name(k), u64(d[k]));
  return o;
}

static json_t *to_json(const args_t *a, const outcome_t *o, const jct__chain_t *chain) {
  json_t *dirs = json_array(), *ports = json_array(), *inj = json_array();
  for (uint32_t p = 0; p < 2; p++) {
    dir_t d = direction(o, p);
    json_array_append_new(
        dirs, json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "from", a->ifname[p], "to",
                        a->ifname[1 - p], "in", u64(d.in), "forwarded", u64(d.out), "dropped",
                        u64(d.dropped), "drops", drops_json(d.drops), "mac_control",
                        u64(d.control), "held", u64(d.held)));
    const jct_switch_port_stats_t *s = &o->port[p];
    uint64_t paused = 0;
    for (int q = 0; q < JCT_SWITCH_PRIOS; q++)
      paused += s->paused_ns[q];
    json_array_append_new(
        ports,
        json_pack("{s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "ifname", a->ifname[p],
                  "port", (int)p, "rx_frames", u64(s->rx_frames), "rx_bytes", u64(s->rx_bytes),
                  "rx_control", u64(s->rx_control), "rx_drops", drops_json(s->rx_drops),
                  "tx_frames", u64(s->tx_frames), "tx_bytes", u64(s->tx_bytes), "tx_drops",
                  drops_json(s->tx_drops), "held", u64(s->queued_frames + s->wire_frames),
                  "rx_pfc_xoff", u64(s->rx_pfc_xoff), "rx_pfc_xon", u64(s->rx_pfc_xon),
                  "paused_ns", u64(paused)));
  }
  for (size_t i = 0; i < jct__chain_len(chain); i++) {
    const jct_injector_t *in = jct__chain_get(chain, i);
    const jct_injector_stats_t *st = &in->stats;
    json_array_append_new(
        inj, json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "spec", in->spec, "kind",
                       in->ops->name, "seed", u64(in->seed), "seen", u64(st->seen), "matched",
                       u64(st->matched), "dropped", u64(st->dropped), "held", u64(st->held),
                       "modified", u64(st->modified + st->expedited), "generated",
                       u64(st->generated), "duplicated", u64(st->duplicated)));
  }
  json_t *h = json_pack("{s:o,s:o,s:o,s:o,s:o}", "lost", u64(harness_losses(o)), "pcap_drops",
                        u64(o->hs.pcap_drops), "inject_failures", u64(o->hs.inject_failures),
                        "truncated", u64(o->hs.truncated), "lateness_p99_ns",
                        u64(o->lateness_p99_ns));
  return json_pack("{s:{s:[s,s],s:o,s:o,s:o,s:s},s:o,s:o,s:o,s:o,s:b}", "wire", "ports",
                   a->ifname[0], a->ifname[1], "rate_bps", u64(a->rate_bps), "seed", u64(a->seed),
                   "elapsed_ns", u64(o->elapsed_ns), "ended_by", ended_by(o), "directions", dirs,
                   "ports", ports, "injectors", inj, "harness", h, "valid",
                   harness_losses(o) == 0);
}

/* ---- the command ----------------------------------------------------------------- */

int jct__cmd_wire(int argc, char **argv) {
  args_t a = {0};
  int rc = parse(argc, argv, &a);
  if (rc != -1) return rc;
  char err[512] = "";
  /* The specs first: they need no interface (a bad one is found at once). */
  jct__chain_t *chain = NULL;
  rc = jct__chain_new(&chain, a.inject, a.ninject, a.seed, err, sizeof err);
  if (rc == JCT_EINVAL) return bad("--inject: %s", err);
  if (rc) {
    fprintf(stderr, "jctlab wire: %s\n", jct_strerror(rc));
    return 1;
  }
  for (size_t i = 0; i < a.ninject; i++) {
    const jct_injector_t *in = jct__chain_get(chain, i);
    if (in->ops->stalls_host) {
      bad("--inject '%s': a stall stops its sender's host, and the wire's hosts are not jctlab's "
          "(the lab's VMs only: --transport verbs --lab N)",
          a.inject[i]);
      jct__chain_free(chain);
      return 2;
    }
    if (!in->all_ports && in->port > 1) {
      bad("--inject '%s': port=%u, and the wire has ports 0 (%s) and 1 (%s)", a.inject[i],
          in->port, a.ifname[0], a.ifname[1]);
      jct__chain_free(chain); /* after: the message reads the injector */
      return 2;
    }
  }
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  uint32_t mtu[2] = {0, 0};
  uint64_t speed[2] = {0, 0};
  rc = sock < 0 ? (fprintf(stderr, "jctlab wire: socket: %s\n", strerror(errno)), 1) : 0;
  for (int p = 0; !rc && p < 2; p++)
    rc = probe_ifname(sock, a.ifname[p], &mtu[p], &speed[p]);
  if (sock >= 0) close(sock);
  if (rc) {
    jct__chain_free(chain);
    return rc;
  }
  if (!a.rate_bps) {
    uint64_t s = speed[0] && speed[1] ? (speed[0] < speed[1] ? speed[0] : speed[1])
                                      : speed[0] | speed[1];
    a.rate_bps = s ? s : DEFAULT_RATE_BPS;
  }
  if (jct__interrupt_install()) {
    fprintf(stderr, "jctlab wire: cannot take SIGINT and SIGTERM: %s\n", strerror(errno));
    jct__chain_free(chain);
    return 1;
  }
  FILE *log = NULL;
  if (a.fault_log && !(log = !strcmp(a.fault_log, "-") ? stdout : fopen(a.fault_log, "w"))) {
    jct__chain_free(chain);
    return bad("--fault-log %s: cannot be written: %s", a.fault_log, strerror(errno));
  }
  /* The captures jct_fabric_new may make before a later step fails. */
  bool existed[2] = {a.pcap_out && access(a.pcap_out, F_OK) == 0,
                     a.pcap_drops && access(a.pcap_drops, F_OK) == 0};
  outcome_t o = {0};
  rc = forward(&a, chain, log, mtu[0] > mtu[1] ? mtu[0] : mtu[1], &o, err, sizeof err);
  if (log && log != stdout) fclose(log);
  if (rc) {
    /* Nothing ran: what was made for the run goes (jct_fabric_new removed its own). */
    if (log && log != stdout) unlink(a.fault_log);
    if (a.pcap_out && !existed[0] && strcmp(a.pcap_out, "-")) unlink(a.pcap_out);
    if (a.pcap_drops && !existed[1] && strcmp(a.pcap_drops, "-")) unlink(a.pcap_drops);
    jct__chain_free(chain);
    /* The ports (permissions, libpcap) and the capture files are the user's to fix. */
    return rc == JCT_ENOMEM ? (fprintf(stderr, "jctlab wire: %s\n", jct_strerror(rc)), 1)
                            : bad("%s", err);
  }
  int status = 0;
  if (a.json) {
    json_t *doc = to_json(&a, &o, chain);
    status = doc ? jct__json_write(doc, a.json, "wire") : 1;
    json_decref(doc);
  }
  if (!a.json || strcmp(a.json, "-")) print_text(&a, &o, chain);
  jct__chain_free(chain);
  if (o.check_rc) {
    fprintf(stderr, "jctlab wire: the switch's accounting does not add up: %s\n", o.check_err);
    return 1;
  }
  if (status) return status;
  return harness_losses(&o) ? 3 : 0;
}
