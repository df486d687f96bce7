/* bench/wire_rate (run by bench/wire): how many packets per second `jctlab wire` forwards between
 * two interfaces, against the Linux kernel's bridge between the same
 * interfaces, in one run.
 *
 * One topology (jct_ns_isolate + jct_topo_create: 2 ranks, their veths'
 * switch ends sw0 and sw1 in the process's private namespace, IPv4 only,
 * MTU 9000) serves both forwarders, taken in turn for every size and run:
 *   bridge   a Linux bridge over sw0 and sw1 (bridge.c: rtnetlink, static
 *            FDB entries, no flooding), deleted afterwards;
 *   wire     the command itself, `jctlab wire sw0 sw1 --rate 100gbit --json
 *            FILE`, started as a user starts it (a child process, in this
 *            namespace), ended with SIGINT; its JSON says what it forwarded
 *            and whether it lost frames by its own fault. No injector (the
 *            per-frame cost of a chain is bench/injectors').
 * Traffic (fabric_traffic.c): UDP datagrams, DSCP 26 + ECT(0), from a sender
 * thread in rank 0's namespace (sendmmsg, as fast as it can, nice 19) to a
 * receiver thread in rank 1's (recvmmsg, nice 0), one direction. Each phase
 * warms up, then counts over --seconds: offered = datagrams sendmmsg
 * accepted, forwarded = datagrams the receiver got. The wire's process is
 * pinned to the last CPU, as bench/fabric pins its switch thread; the
 * bridge forwards in the sender's softirq context, on any CPU.
 *
 * Figures: medians over --runs of forwarded packets/s per size and
 * forwarder, and the median over runs of the wire's rate over the bridge's
 * in the same run (the machine's speed drifts between runs more than
 * between two adjacent phases).
 *
 * Nothing outlives the process: the namespaces are its own, the bridge is
 * deleted after each phase, the wire is ended and waited for, its JSON
 * file removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "runs.h"
#include "fabric_traffic.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"

#define MAX_SIZES BENCH_MAX_SIZES
#define MAX_RUNS BENCH_MAX_RUNS

typedef enum { MODE_BRIDGE, MODE_WIRE, NMODES } mode_t_;
static const char *const mode_name[NMODES] = {"bridge", "jctlab wire"};

typedef struct {
  double seconds, warmup_s;
  unsigned runs;
  size_t sizes[MAX_SIZES], nsizes;
  bool verbose;
  const char *jctlab;
} opts_t;

typedef struct {
  double offered_pps, fwd_pps, fwd_gbps;
  uint64_t sock_drops;
  long long wire_lost, wire_forwarded; /* the wire's JSON: harness.lost, directions.0.forwarded */
} result_t;

static void sleep_until(uint64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* ---- the wire, as a child process ------------------------------------------- */

typedef struct {
  pid_t pid;
  int err_fd; /* its stderr, read until it says it forwards */
} wire_t;

static int wire_start(wire_t *w, const opts_t *o, const char *json, char *err, size_t errlen) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC)) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return JCT_EIO;
  }
  pid_t parent = getpid();
  w->pid = fork();
  if (w->pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(pfd[0]);
    close(pfd[1]);
    return JCT_EIO;
  }
  if (w->pid == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)(n > 1 ? n - 1 : 0), &set);
    (void)sched_setaffinity(0, sizeof set, &set);
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(pfd[1], 2) < 0) _exit(127);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(127);
    execl(o->jctlab, o->jctlab, "wire", "sw0", "sw1", "--rate", "100gbit", "--json", json,
          (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  w->err_fd = pfd[0];
  /* Wait for "jctlab wire: forwarding ..." (or its end). */
  char buf[1024];
  size_t len = 0;
  for (;;) {
    ssize_t r = read(w->err_fd, buf + len, sizeof buf - 1 - len);
    if (r <= 0) break;
    len += (size_t)r;
    buf[len] = '\0';
    if (strstr(buf, "jctlab wire: forwarding") && strchr(strstr(buf, "forwarding"), '\n'))
      return 0;
    if (len == sizeof buf - 1) break;
  }
  buf[len] = '\0';
  snprintf(err, errlen, "jctlab wire did not start: %.400s", buf);
  kill(w->pid, SIGKILL);
  waitpid(w->pid, NULL, 0);
  close(w->err_fd);
  return JCT_EIO;
}

static int wire_stop(wire_t *w, const char *json, result_t *r, char *err, size_t errlen) {
  kill(w->pid, SIGINT);
  int ws = 0;
  waitpid(w->pid, &ws, 0);
  close(w->err_fd);
  json_error_t je;
  json_t *doc = json_load_file(json, 0, &je);
  unlink(json);
  /* 0, or 3: it lost frames by its own fault (counted, in its JSON). */
  if (!WIFEXITED(ws) || (WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 3) || !doc) {
    snprintf(err, errlen, "jctlab wire ended with status %d%s", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
             doc ? "" : ", no JSON");
    json_decref(doc);
    return JCT_EIO;
  }
  json_t *lost = json_object_get(json_object_get(doc, "harness"), "lost");
  json_t *fwd = json_object_get(json_array_get(json_object_get(doc, "directions"), 0), "forwarded");
  r->wire_lost = lost ? json_integer_value(lost) : -1;
  r->wire_forwarded = fwd ? json_integer_value(fwd) : -1;
  json_decref(doc);
  return 0;
}

/* ---- one phase ------------------------------------------------------------- */

typedef struct {
  uint64_t t_ns, sent, rcvd, rcvd_bytes;
} snap_t;

static void take_snap(const jct__flow_t *fl, snap_t *s) {
  *s = (snap_t){jct_now_ns(), atomic_load(&fl[1].packets), atomic_load(&fl[0].packets),
                atomic_load(&fl[0].bytes)};
}

static int run_phase(const jct_topo_t *t, jct__nl_t *nl, const opts_t *o, size_t payload,
                     mode_t_ mode, result_t *r, char *err, size_t errlen) {
  jct__flow_t fl[2];
  memset(fl, 0, sizeof fl);
  memset(r, 0, sizeof *r);
  /* The receiver first (bound before anything is sent), then the sender. */
  fl[0] = (jct__flow_t){.topo = t, .rank = 1, .payload_bytes = payload, .nice = 0};
  fl[1] = (jct__flow_t){
      .topo = t, .rank = 0, .peer = 1, .payload_bytes = payload, .sender = true, .nice = 19};
  char json[64];
  snprintf(json, sizeof json, "/tmp/bench-wire-%d.json", (int)getpid());
  wire_t w = {0};
  int br = 0;
  int rc = mode == MODE_BRIDGE ? jct__bridge_up(nl, t, &br, err, errlen)
                               : wire_start(&w, o, json, err, errlen);
  if (rc) {
    if (br > 0) (void)jct__bridge_down(nl, br, err + strlen(err), 0);
    return rc;
  }
  jct__traffic_t tr;
  rc = jct__traffic_start(&tr, fl, 2, err, errlen);
  if (!rc) {
    uint64_t warm = jct_now_ns() + (uint64_t)(o->warmup_s * 1e9);
    uint64_t end = warm + (uint64_t)(o->seconds * 1e9);
    snap_t a, b;
    sleep_until(warm);
    take_snap(fl, &a);
    sleep_until(end);
    take_snap(fl, &b);
    jct__traffic_stop(&tr);
    double dt = (double)(b.t_ns - a.t_ns) / 1e9;
    uint64_t pk = b.rcvd - a.rcvd;
    r->offered_pps = (double)(b.sent - a.sent) / dt;
    r->fwd_pps = (double)pk / dt;
    r->fwd_gbps =
        (double)(b.rcvd_bytes - a.rcvd_bytes + pk * JCT__TRAFFIC_ETH_IP_UDP_BYTES) * 8 / dt / 1e9;
    r->sock_drops = fl[0].sock_drops;
  }
  int rc2;
  char e2[256] = "";
  if (mode == MODE_BRIDGE)
    rc2 = jct__bridge_down(nl, br, e2, sizeof e2);
  else
    rc2 = wire_stop(&w, json, r, e2, sizeof e2);
  if (!rc && rc2) {
    snprintf(err, errlen, "%s", e2);
    rc = rc2;
  }
  return rc;
}

/* ---- report ------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: bench/wire [--runs N] [--seconds S] [--warmup S] [--sizes 64,1400] [--quick] [-v]\n"
             "  --quick   1 run of 1 s, 64-byte datagrams (for CI)\n");
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  static const struct option lo[] = {{"seconds", required_argument, NULL, 's'},
                                     {"warmup", required_argument, NULL, 'w'},
                                     {"runs", required_argument, NULL, 'r'},
                                     {"sizes", required_argument, NULL, 'z'},
                                     {"quick", no_argument, NULL, 'q'},
                                     {"verbose", no_argument, NULL, 'v'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  *o = (opts_t){.seconds = 3, .warmup_s = 0.5, .runs = 5, .sizes = {64, 1400}, .nsizes = 2,
                .jctlab = JCT_BINARY};
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
    case 'z':
      if (bench_parse_sizes(optarg, o->sizes, &o->nsizes)) return -1;
      break;
    case 'q':
      o->runs = 1;
      o->seconds = 1;
      o->sizes[0] = 64;
      o->nsizes = 1;
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
  if (access(o.jctlab, X_OK)) {
    fprintf(stderr, "bench/wire: %s: %s (build jctlab first)\n", o.jctlab, strerror(errno));
    return 1;
  }
  if (jct_ns_isolate(err, sizeof err)) {
    fprintf(stderr, "bench/wire: %s\n", err);
    return 1;
  }
  jct_topo_t *topo = NULL;
  jct__nl_t *nl = NULL;
  jct_topo_opts_t to = {.mtu = JCT_TOPO_MTU_DEFAULT, .ipv6 = false};
  int rc = jct_topo_create(&topo, 2, &to, err, sizeof err);
  if (!rc) rc = jct__nl_open(&nl, err, sizeof err);
  if (rc) {
    fprintf(stderr, "bench/wire: %s\n", err);
    jct_topo_destroy(topo);
    return 1;
  }
  static result_t res[MAX_SIZES][NMODES][MAX_RUNS];
  printf("bench/wire: rank 0 -> sw0 -> [forwarder] -> sw1 -> rank 1 (veths, MTU %u), UDP, "
         "%u run(s) of %.1f s (+%.1f s warm-up), %ld CPUs\n",
         JCT_TOPO_MTU_DEFAULT, o.runs, o.seconds, o.warmup_s, sysconf(_SC_NPROCESSORS_ONLN));
  fflush(stdout);
  /* Runs outermost, forwarders innermost: drift touches both alike. */
  for (unsigned run = 0; run < o.runs && !rc; run++)
    for (size_t z = 0; z < o.nsizes && !rc; z++)
      for (int m = 0; m < NMODES && !rc; m++) {
        result_t *r = &res[z][m][run];
        rc = run_phase(topo, nl, &o, o.sizes[z], (mode_t_)m, r, err, sizeof err);
        if (rc) {
          fprintf(stderr, "bench/wire: %zu B, %s: %s\n", o.sizes[z], mode_name[m], err);
          break;
        }
        if (o.verbose)
          fprintf(stderr,
                  "run %u %4zu B %-12s offered %9.0f fwd %9.0f pps %6.2f Gbit/s, socket drops "
                  "%llu, wire forwarded %lld lost %lld\n",
                  run + 1, o.sizes[z], mode_name[m], r->offered_pps, r->fwd_pps, r->fwd_gbps,
                  (unsigned long long)r->sock_drops, r->wire_lost < 0 ? 0 : r->wire_forwarded,
                  r->wire_lost);
      }
  jct__nl_close(nl);
  jct_topo_destroy(topo);
  if (rc) return 1;
  printf("%6s %-12s %12s %12s %8s %9s %8s %s\n", "bytes", "forwarder", "offered pps", "fwd pps",
         "Gbit/s", "vs bridge", "spread", "wire lost (its own fault)");
  for (size_t z = 0; z < o.nsizes; z++) {
    for (int m = 0; m < NMODES; m++) {
      double off[MAX_RUNS], fwd[MAX_RUNS], gb[MAX_RUNS], ratio[MAX_RUNS], sp, sp2;
      long long lost = 0;
      for (unsigned run = 0; run < o.runs; run++) {
        off[run] = res[z][m][run].offered_pps;
        fwd[run] = res[z][m][run].fwd_pps;
        gb[run] = res[z][m][run].fwd_gbps;
        /* Against the bridge of the same run, measured just before. */
        double b = res[z][MODE_BRIDGE][run].fwd_pps;
        ratio[run] = b > 0 ? fwd[run] / b : 0;
        lost += res[z][m][run].wire_lost;
      }
      double mo = bench_median(off, o.runs, &sp2), mf = bench_median(fwd, o.runs, &sp),
             mg = bench_median(gb, o.runs, &sp2), mr = bench_median(ratio, o.runs, &sp2);
      char l[32] = "-";
      if (m == MODE_WIRE) snprintf(l, sizeof l, "%lld", lost);
      printf("%6zu %-12s %12.0f %12.0f %8.2f %9.2f %7.0f%% %s\n", o.sizes[z], mode_name[m], mo,
             mf, mg, mr, sp * 100, l);
    }
  }
  printf("medians over %u run(s); vs bridge: median of each run's ratio to the bridge of the "
         "same run; spread = (max - min) / median of fwd pps; wire lost: frames the kernel "
         "dropped before libpcap read them, summed over runs\n",
         o.runs);
  return 0;
}
