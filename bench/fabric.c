/* bench/fabric: how fast jctlab's switch forwards, against the Linux
 * kernel's own bridge between the same namespaces, in one run.
 *
 * One topology (jct_ns_isolate + jct_topo_create: 4 ranks, veths "sw<i>"
 * in the process's private switch namespace, IPv4 only, MTU 9000) serves
 * three forwarding modes, taken in turn for every case and run:
 *   bridge   a Linux bridge made over rtnetlink (RTM_NEWLINK kind "bridge",
 *            IFLA_MASTER on every sw<i>, static FDB entries with
 *            NTF_MASTER/NUD_NOARP for the rank MACs, so it never floods,
 *            as jctlab's switch has static entries), deleted afterwards;
 *   jct      jctlab's switch model (switch.h) with one libpcap port per
 *            sw<i>, driven on the nanosecond clock in a libuv loop exactly
 *            as harness/fabric/fabric.c drives it; PFC and ECN off;
 *   jct+pfc  the same with PFC (XOFF 256 KiB, XON 128 KiB) and ECN
 *            (Kmin 64 KiB, Kmax 256 KiB, Pmax 0.2) on priority 3;
 *   jct-leafspine  jctlab's leaf-spine fabric (clos.h): 2 leaves x 2
 *            spines, 2 hosts per leaf, ranks spread (0 and 2 under leaf 0,
 *            1 and 3 under leaf 1), so the pairs and two of the incast's
 *            senders cross a spine: three switches per frame, the links
 *            between them internal. Its goal: at least half the star's
 *            ("jct") packet rate on the same traffic.
 * The jctlab modes build their switch from jct_switch_config_t here, as
 * fabric.c's build_switch does, because jct_fabric_opts_t has no ECN
 * setting and jct_fabric_new always makes its own topology.
 *
 * Traffic (fabric_traffic.c): UDP datagrams, DSCP 26 + ECT(0), from sender
 * threads in their ranks' namespaces (sendmmsg, as fast as they can) to
 * receiver threads (recvmmsg). Cases: "pairs" (0->1, 2->3) and "incast"
 * (1,2,3->0), each with 64, 1400 and 4096-byte payloads. Each phase warms
 * up, then counts over --seconds: offered = datagrams the senders' sendmmsg
 * accepted, forwarded = datagrams the receivers got. Gbit/s counts
 * Ethernet frames without FCS (payload + 42 bytes).
 *
 * CPUs: the main thread (which runs the jctlab switch) is pinned to the
 * last CPU at nice 0. By default senders run at nice 19 and receivers at
 * nice 0, both on any CPU (--sender-nice N|idle, --receiver-nice N;
 * --pin-traffic and --pin-receivers keep them on CPU 0): the senders cannot
 * starve the switch or the receivers, so losses are the switch's, while
 * the bridge, which forwards in the senders' softirq context, may use every
 * CPU. Receivers at nice 19 starve (socket drops); senders at SCHED_IDLE
 * are preempted at every datagram's wake-up, which halves the bridge.
 * The links run at --rate-gbit (100) so that software, not the emulated
 * link, sets the pace.
 *
 * Nothing outlives the process: the namespaces are its own, the bridge is
 * deleted after each phase, threads are joined, no files are written.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "bridge.h"
#include "runs.h"
#include "fabric_traffic.h"
#include "jctlab/clock.h"
#include "jctlab/fabric.h"
#include "jctlab/error.h"
#include "jctlab/switch.h"
#include "jctlab/topo.h"
#include "harness/base/netlink.h"

#define NRANKS 4
#define MAX_FLOWS 6
#define MAX_SIZES BENCH_MAX_SIZES
#define MAX_RUNS BENCH_MAX_RUNS
#define DATA_PRIO 3

typedef enum { MODE_BRIDGE, MODE_JCT, MODE_JCT_PFC_ECN, MODE_JCT_LS, NMODES } mode_t_;
static const char *const mode_name[NMODES] = {"bridge", "jct", "jct+pfc+ecn", "jct-leafspine"};

typedef struct {
  double seconds, warmup_s;
  unsigned runs;
  uint64_t rate_bps;
  uint64_t spin_ns;
  size_t sizes[MAX_SIZES], nsizes;
  bool pin_traffic, pin_receivers;
  int receiver_nice;
  int sender_nice; /* > 19: SCHED_IDLE */
  bool verbose;
  long ncpu;
} opts_t;

/* One phase's figures. */
typedef struct {
  double offered_pps, fwd_pps, fwd_gbps;
  uint64_t sock_drops, send_errors;
  /* jctlab modes only */
  uint64_t pcap_drops, inject_failures, sw_drops, ecn_marked, pfc_xoff;
  uint64_t late_p99_ns;
} result_t;

/* ---- jctlab's switch ------------------------------------------------------ */

typedef struct swrun swrun_t;

/* jctlab's switch for one phase: the fabric (fabric.h) on the shared
 * topology, in a loop of its own. */
struct swrun {
  uv_loop_t loop;
  jct_clock_t clock;
  jct_fabric_t *fab;
  jct_timer_t wake;
};

static void on_wake(jct_timer_t *t, uint64_t now_ns) {
  (void)t, (void)now_ns;
}

static void swrun_close(swrun_t *s) {
  jct_fabric_free(s->fab);
  jct_clock_close(&s->clock, NULL);
  while (uv_loop_close(&s->loop) == UV_EBUSY)
    uv_run(&s->loop, UV_RUN_NOWAIT);
}

static int swrun_open(swrun_t *s, const jct_topo_t *t, const opts_t *o, bool pfc_ecn,
                      const jct_clos_t *clos, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (uv_loop_init(&s->loop) != 0) {
    snprintf(err, errlen, "uv_loop_init failed");
    return JCT_EIO;
  }
  int rc = jct_clock_init(&s->clock, &s->loop);
  if (rc) {
    snprintf(err, errlen, "cannot set up the clock");
    uv_loop_close(&s->loop);
    return rc;
  }
  jct_clock_set_spin_ns(&s->clock, o->spin_ns);
  jct_fabric_opts_t fo = {.nranks = NRANKS,
                          .rate_bps = o->rate_bps,
                          .mtu = JCT_TOPO_MTU_DEFAULT,
                          .data_prio = DATA_PRIO,
                          .pfc = pfc_ecn,
                          .ecn = pfc_ecn,
                          .topo = t,
                          .clos = clos};
  rc = jct_fabric_new(&s->fab, &s->loop, &s->clock, &fo, err, errlen);
  if (rc) {
    jct_clock_close(&s->clock, NULL);
    while (uv_loop_close(&s->loop) == UV_EBUSY)
      uv_run(&s->loop, UV_RUN_NOWAIT);
  }
  return rc;
}

static void swrun_until(swrun_t *s, uint64_t deadline_ns) {
  jct_timer_start(&s->clock, &s->wake, deadline_ns, on_wake);
  while (jct_now_ns() < deadline_ns)
    uv_run(&s->loop, UV_RUN_ONCE);
  jct_timer_stop(&s->clock, &s->wake);
}

/* ---- one phase ----------------------------------------------------------- */

typedef struct {
  const char *name;
  size_t payload_bytes;
  bool incast;
} case_t;

typedef struct {
  uint64_t t_ns, sent, rcvd, rcvd_bytes;
} snap_t;

static void take_snap(const jct__flow_t *fl, size_t n, snap_t *s) {
  *s = (snap_t){jct_now_ns(), 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    uint64_t p = atomic_load_explicit(&fl[i].packets, memory_order_relaxed);
    if (fl[i].sender) {
      s->sent += p;
    } else {
      s->rcvd += p;
      s->rcvd_bytes += atomic_load_explicit(&fl[i].bytes, memory_order_relaxed);
    }
  }
}

static size_t make_flows(jct__flow_t *fl, const jct_topo_t *t, const case_t *c, const opts_t *o) {
  /* pairs: 0 -> 1, 2 -> 3; incast: 1, 2, 3 -> 0. Receivers first. */
  static const size_t pair_src[] = {0, 2}, pair_dst[] = {1, 3};
  static const size_t inc_src[] = {1, 2, 3};
  size_t n = 0;
  if (c->incast) {
    fl[n++] = (jct__flow_t){.rank = 0};
    for (size_t i = 0; i < 3; i++)
      fl[n++] = (jct__flow_t){.rank = inc_src[i], .peer = 0};
  } else {
    for (size_t i = 0; i < 2; i++)
      fl[n++] = (jct__flow_t){.rank = pair_dst[i]};
    for (size_t i = 0; i < 2; i++)
      fl[n++] = (jct__flow_t){.rank = pair_src[i], .peer = pair_dst[i]};
  }
  for (size_t i = 0; i < n; i++) {
    fl[i].topo = t;
    fl[i].sender = i >= (c->incast ? 1u : 2u);
    fl[i].payload_bytes = c->payload_bytes;
    fl[i].cpu = 0;
    if (fl[i].sender) {
      fl[i].pin = o->pin_traffic;
      fl[i].sched_idle = o->sender_nice > 19;
      fl[i].nice = o->sender_nice;
    } else {
      fl[i].pin = o->pin_receivers;
      fl[i].nice = o->receiver_nice;
    }
  }
  return n;
}

static void sleep_until(uint64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static jct_clos_t leaf_spine;

static int run_phase(const jct_topo_t *t, jct__nl_t *nl, const opts_t *o, const case_t *c,
                     mode_t_ mode, result_t *r, char *err, size_t errlen) {
  jct__flow_t fl[MAX_FLOWS];
  jct__traffic_t tr;
  swrun_t s;
  int br = 0, rc;
  memset(fl, 0, sizeof fl);
  memset(r, 0, sizeof *r);
  size_t n = make_flows(fl, t, c, o);
  if (mode == MODE_BRIDGE)
    rc = jct__bridge_up(nl, t, &br, err, errlen);
  else
    rc = swrun_open(&s, t, o, mode == MODE_JCT_PFC_ECN, mode == MODE_JCT_LS ? &leaf_spine : NULL,
                    err, errlen);
  if (rc) {
    if (br > 0) (void)jct__bridge_down(nl, br, err + strlen(err), 0);
    return rc;
  }
  rc = jct__traffic_start(&tr, fl, n, err, errlen);
  snap_t a, b;
  if (!rc) {
    uint64_t t0 = jct_now_ns(), warm = t0 + (uint64_t)(o->warmup_s * 1e9);
    uint64_t end = warm + (uint64_t)(o->seconds * 1e9);
    if (mode == MODE_BRIDGE) {
      sleep_until(warm);
      take_snap(fl, n, &a);
      sleep_until(end);
      take_snap(fl, n, &b);
    } else {
      swrun_until(&s, warm);
      take_snap(fl, n, &a);
      swrun_until(&s, end);
      take_snap(fl, n, &b);
    }
    jct__traffic_stop(&tr);
    double dt = (double)(b.t_ns - a.t_ns) / 1e9;
    uint64_t pk = b.rcvd - a.rcvd;
    r->offered_pps = (double)(b.sent - a.sent) / dt;
    r->fwd_pps = (double)pk / dt;
    r->fwd_gbps =
        (double)(b.rcvd_bytes - a.rcvd_bytes + pk * JCT__TRAFFIC_ETH_IP_UDP_BYTES) * 8 / dt / 1e9;
    for (size_t i = 0; i < n; i++) {
      r->sock_drops += fl[i].sock_drops;
      r->send_errors += atomic_load(&fl[i].errors);
    }
  }
  if (mode == MODE_BRIDGE) {
    char e2[256];
    int rc2 = jct__bridge_down(nl, br, e2, sizeof e2);
    if (!rc && rc2) {
      snprintf(err, errlen, "%s", e2);
      rc = rc2;
    }
    return rc;
  }
  if (!rc) {
    jct_switch_t *sw = jct_fabric_switch(s.fab);
    jct_switch_totals_t tot;
    jct_fabric_totals(s.fab, &tot);
    r->sw_drops = tot.rx_drops + tot.tx_drops;
    r->ecn_marked = tot.ecn_marked;
    r->pfc_xoff = tot.tx_pfc_xoff;
    jct_fabric_harness_stats_t hs;
    jct_fabric_harness_stats(s.fab, &hs);
    r->inject_failures = hs.inject_failures;
    r->pcap_drops = hs.pcap_drops;
    r->late_p99_ns = jct_lateness_quantile_ns(&s.clock.lateness, 0.99);
    rc = jct_switch_check(sw, err, errlen);
  }
  swrun_close(&s);
  return rc;
}

/* ---- report -------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: fabric [--seconds S] [--warmup S] [--runs N] [--rate-gbit G] [--sizes "
             "64,1400,4096]\n"
             "              [--spin-us U] [--pin-traffic] [--sender-nice N|idle] [-v]\n");
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  static const struct option lo[] = {{"seconds", required_argument, NULL, 's'},
                                     {"warmup", required_argument, NULL, 'w'},
                                     {"runs", required_argument, NULL, 'r'},
                                     {"rate-gbit", required_argument, NULL, 'g'},
                                     {"sizes", required_argument, NULL, 'z'},
                                     {"spin-us", required_argument, NULL, 'u'},
                                     {"pin-traffic", no_argument, NULL, 'p'},
                                     {"sender-nice", required_argument, NULL, 'n'},
                                     {"receiver-nice", required_argument, NULL, 'R'},
                                     {"pin-receivers", no_argument, NULL, 'P'},
                                     {"verbose", no_argument, NULL, 'v'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  *o = (opts_t){.seconds = 3,
                .warmup_s = 0.5,
                .runs = 3,
                .rate_bps = 100000000000ull,
                .spin_ns = 100000,
                .sizes = {64, 1400, 4096},
                .nsizes = 3,
                .sender_nice = 19,
                .receiver_nice = 0};
  int ch;
  while ((ch = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
    char *end = NULL;
    switch (ch) {
    case 's':
      o->seconds = strtod(optarg, &end);
      if (*end || o->seconds <= 0 || o->seconds > 3600) return -1;
      break;
    case 'w':
      o->warmup_s = strtod(optarg, &end);
      if (*end || o->warmup_s < 0 || o->warmup_s > 60) return -1;
      break;
    case 'r':
      o->runs = (unsigned)strtoul(optarg, &end, 10);
      if (*end || o->runs < 1 || o->runs > MAX_RUNS) return -1;
      break;
    case 'g': {
      double g = strtod(optarg, &end);
      if (*end || g <= 0 || g * 1e9 > (double)JCT_SWITCH_MAX_RATE_BPS) return -1;
      o->rate_bps = (uint64_t)(g * 1e9);
      break;
    }
    case 'z':
      if (bench_parse_sizes(optarg, o->sizes, &o->nsizes)) return -1;
      break;
    case 'u':
      o->spin_ns = (uint64_t)(strtod(optarg, &end) * 1e3);
      if (*end) return -1;
      break;
    case 'p':
      o->pin_traffic = true;
      break;
    case 'n':
      o->sender_nice = strcmp(optarg, "idle") == 0 ? 20 : (int)strtol(optarg, &end, 10);
      if ((end && *end) || o->sender_nice < -20 || o->sender_nice > 20) return -1;
      break;
    case 'R':
      o->receiver_nice = (int)strtol(optarg, &end, 10);
      if (*end || o->receiver_nice < -20 || o->receiver_nice > 19) return -1;
      break;
    case 'P':
      o->pin_receivers = true;
      break;
    case 'v':
      o->verbose = true;
      break;
    case 'h':
      usage(stdout);
      exit(0);
    default:
      return -1;
    }
  }
  return optind == argc ? 0 : -1;
}

int main(int argc, char **argv) {
  opts_t o;
  char err[512] = "";
  if (parse_opts(argc, argv, &o)) {
    usage(stderr);
    return 2;
  }
  if (jct_ns_isolate(err, sizeof err)) {
    fprintf(stderr, "fabric: %s\n", err);
    return 1;
  }
  long ncpu = o.ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int switch_cpu = (int)(ncpu > 1 ? ncpu - 1 : 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((size_t)switch_cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    fprintf(stderr, "fabric: cannot pin the switch thread to CPU %d: %s\n", switch_cpu,
            strerror(errno));

  jct_clos_default(&leaf_spine);
  if (jct_clos_parse(&leaf_spine, "leaf-spine:leaves=2,spines=2,hosts-per-leaf=2", err,
                     sizeof err) ||
      jct_placement_parse(&leaf_spine.placement, "spread", err, sizeof err)) {
    fprintf(stderr, "fabric: %s\n", err);
    return 1;
  }
  jct_topo_t *topo = NULL;
  jct__nl_t *nl = NULL;
  jct_topo_opts_t to = {.mtu = JCT_TOPO_MTU_DEFAULT, .ipv6 = false};
  int rc = jct_topo_create(&topo, NRANKS, &to, err, sizeof err);
  if (!rc) rc = jct__nl_open(&nl, err, sizeof err);
  if (rc) {
    fprintf(stderr, "fabric: %s\n", err);
    jct_topo_destroy(topo);
    return 1;
  }

  char nicebuf[16];
  snprintf(nicebuf, sizeof nicebuf, "%d", o.sender_nice);
  case_t cases[2 * MAX_SIZES];
  size_t ncases = 0;
  for (int inc = 0; inc < 2; inc++)
    for (size_t i = 0; i < o.nsizes; i++)
      cases[ncases++] = (case_t){inc ? "incast 3->1" : "pairs 2x1->1", o.sizes[i], inc != 0};
  static result_t res[2 * MAX_SIZES][NMODES][MAX_RUNS];

  printf("bench/fabric: %d ranks, links %.0f Gbit/s, MTU %u, %u run(s) of %.1f s (+%.1f s "
         "warm-up), %ld CPUs: switch thread on CPU %d, receivers nice %d%s, senders %s%s%s\n",
         NRANKS, (double)o.rate_bps / 1e9, JCT_TOPO_MTU_DEFAULT, o.runs, o.seconds, o.warmup_s,
         ncpu, switch_cpu, o.receiver_nice, o.pin_receivers ? " on CPU 0" : "",
         o.sender_nice > 19 ? "SCHED_IDLE" : "nice ", o.sender_nice > 19 ? "" : nicebuf,
         o.pin_traffic ? " pinned to CPU 0" : " on any CPU");
  fflush(stdout);
  /* Runs outermost and modes innermost, so drift in the machine's speed
   * touches every mode alike. */
  for (unsigned run = 0; run < o.runs && !rc; run++)
    for (size_t c = 0; c < ncases && !rc; c++)
      for (int m = 0; m < NMODES && !rc; m++) {
        result_t *r = &res[c][m][run];
        rc = run_phase(topo, nl, &o, &cases[c], (mode_t_)m, r, err, sizeof err);
        if (rc) {
          fprintf(stderr, "fabric: %s, %zu B, %s: %s\n", cases[c].name, cases[c].payload_bytes,
                  mode_name[m], err);
          break;
        }
        if (o.verbose)
          fprintf(stderr,
                  "run %u %-13s %4zu B %-12s offered %9.0f fwd %9.0f pps %6.2f Gbit/s | sock "
                  "drops %" PRIu64 " pcap drops %" PRIu64 " sw drops %" PRIu64
                  " inject fail %" PRIu64 " ecn %" PRIu64 " xoff %" PRIu64 " late p99 %" PRIu64
                  " ns\n",
                  run + 1, cases[c].name, cases[c].payload_bytes, mode_name[m], r->offered_pps,
                  r->fwd_pps, r->fwd_gbps, r->sock_drops, r->pcap_drops, r->sw_drops,
                  r->inject_failures, r->ecn_marked, r->pfc_xoff, r->late_p99_ns);
      }
  jct__nl_close(nl);
  jct_topo_destroy(topo);
  if (rc) return 1;

  printf("%-13s %6s %-13s %12s %12s %8s %9s %8s\n", "case", "bytes", "mode", "offered pps",
         "fwd pps", "Gbit/s", "vs bridge", "spread");
  bool goal = true, ls_goal = true;
  for (size_t c = 0; c < ncases; c++) {
    double bridge_pps = 0, star_pps = 0;
    for (int m = 0; m < NMODES; m++) {
      double off[MAX_RUNS], fwd[MAX_RUNS], gb[MAX_RUNS], sp, sp2;
      for (unsigned run = 0; run < o.runs; run++) {
        off[run] = res[c][m][run].offered_pps;
        fwd[run] = res[c][m][run].fwd_pps;
        gb[run] = res[c][m][run].fwd_gbps;
      }
      double mo = bench_median(off, o.runs, &sp2), mf = bench_median(fwd, o.runs, &sp),
             mg = bench_median(gb, o.runs, &sp2);
      if (m == MODE_BRIDGE) bridge_pps = mf;
      if (m == MODE_JCT) star_pps = mf;
      double ratio = bridge_pps > 0 ? mf / bridge_pps : 0;
      if (m == MODE_JCT && ratio < 0.5) goal = false;
      if (m == MODE_JCT_LS && !(star_pps > 0 && mf >= 0.5 * star_pps)) ls_goal = false;
      printf("%-13s %6zu %-13s %12.0f %12.0f %8.2f %9.2f %7.0f%%", cases[c].name,
             cases[c].payload_bytes, mode_name[m], mo, mf, mg, ratio, sp * 100);
      if (m == MODE_JCT_LS) printf("  %.2f x star", star_pps > 0 ? mf / star_pps : 0);
      printf("\n");
    }
  }
  printf("medians over %u run(s); spread = (max - min) / median of fwd pps; goal (jct >= 0.5 x "
         "bridge pps in every case): %s\n",
         o.runs, goal ? "met" : "NOT met");
  printf("leaf-spine goal (jct-leafspine >= 0.5 x jct pps in every case): %s\n",
         ls_goal ? "met" : "NOT met");
  return 0;
}
