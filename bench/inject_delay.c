/* bench/inject_delay: how exactly the delay injector delays, measured from
 * captures on both sides of jctlab's switch and at the receiver, against
 * the same fabric with no injector, in one run (bench/injectors runs it).
 *
 * Two ranks on jctlab's fabric (fabric.h: veths in namespaces of the
 * process's own, the switch model on libpcap ports, the nanosecond clock
 * spinning within 100 us as `jctlab run` sets it), links at --rate
 * (1 Gbit/s) with 1 us of propagation, PFC on priority 3. Rank 0 sends
 * RoCEv2-shaped UDP datagrams to rank 1's port 4791 (a BTH: RDMA WRITE
 * MIDDLE to QP 0x101 with the PSN counting up, --payload bytes, a zero
 * ICRC), DSCP 26 + ECT(0), paced at --load of the link rate by a timer on
 * the same clock, in the same libuv loop as the switch (as `jctlab run`'s
 * ranks are). Rank 1 reads them with the kernel's receive stamp
 * (SO_TIMESTAMPNS).
 *
 * Phases alternate, --runs times: baseline (no injector), then
 * 'delay 100us port=1' (the --delay asked for, on the switch's egress to
 * rank 1). Each phase writes the fabric's pcap_in (every frame as it
 * arrived at a switch port, before the injectors) and pcap_out (every frame
 * at its departure from the switch model), both on one clock. Frames are
 * paired across in, out and the receiver by PSN (first occurrence). Per
 * frame, with hold = the delay asked for (0 in the baseline), ser = the
 * frame's wire time ((bytes + 24) x 8 / rate) and prop = 1 us, a FIFO link
 * gives when the frame should reach rank 1:
 *     start = max(in + hold, the previous frame's end), end = start + ser,
 *     due = end + prop
 * (so queueing behind earlier frames is counted as the link would count
 * it, and a frame's own serialization is not error). Then
 *     model error    = out - due: how exactly the switch model applies the
 *                      hold (the capture of departures is the model's own
 *                      time, not the moment the frame left);
 *     receiver error = rx - due: how much later than asked rank 1's kernel
 *                      received it: the loop's lateness in sending it, plus
 *                      the veth and the kernel's delivery (about the same
 *                      in both phases: the baseline shows it).
 * The figures are the medians over runs of each phase's p50 and p99 (ns
 * precision, quoted in us), the loop's own lateness (the clock's
 * histogram) beside them, and how long the ranks' system calls took (each
 * runs the kernel's veth and UDP or packet-socket path in the loop's own
 * thread: while one runs, a departure that falls due waits). Goal: receiver error p99 under 20 us
 * with the delay on.
 *
 * Usage: inject_delay [--runs N] [--frames N] [--payload BYTES]
 *                     [--rate BPS] [--load F] [--delay NS] [--spin-ns NS]
 *                     [--snaplen 0|64-65535]
 * --snaplen: bytes of each frame the captures keep (default 96, the
 * headers; 0: whole frames, which costs the loop more).
 * Exit 0 (figures printed), 1 (the fabric could not run: err says why),
 * 2 (bad arguments). Nothing outlives it: namespaces are its own, the
 * captures are in a temporary directory it removes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "harness/fabric/chain.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/fabric.h"
#include "jctlab/roce.h"
#include "jctlab/topo.h"

#define NRANKS 2
#define DATA_PRIO 3
#define PROP_NS 1000u
#define OVERHEAD_BYTES 24 /* preamble, FCS, gap: the switch's default */
#define ETH_IP_UDP_BYTES 42
#define ROCE_PORT 4791
#define TOS 0x6a /* DSCP 26, ECT(0) */
#define QPN 0x101
#define MAX_RUNS 51
#define MAX_PAYLOAD 8000
#define DRAIN_NS 300000000u /* after the last send: time for stragglers */
#define CATCH_UP 4          /* a late timer sends at most this many at once */
#define SNAPLEN 96          /* of the captures: headers are all the pairing reads */

typedef struct {
  unsigned runs;
  uint32_t frames, payload, snaplen;
  uint64_t rate_bps, delay_ns, spin_ns;
  double load;
} opts_t;

typedef struct {
  uint64_t in, out, rx; /* realtime ns; 0: not seen */
  uint32_t len;         /* frame bytes */
} frame_t;

/* One phase: the fabric, the sender and the receiver in one loop. */
typedef struct {
  const opts_t *o;
  uv_loop_t loop;
  jct_clock_t clock;
  jct_fabric_t *fab;
  jct__chain_t *chain;
  int tx, rx;
  uv_poll_t rx_poll;
  bool loop_open, clock_open, rx_poll_open;
  jct_timer_t tx_timer;
  uint64_t next_tx_ns, interval_ns;
  uint32_t sent, received, unknown;
  uint8_t dgram[MAX_PAYLOAD + 64];
  size_t dgram_len;
  frame_t *fr;
  double *send_ns, *recv_ns; /* how long each send(2) / recvmsg(2) of a frame took */
  uint32_t nsend, nrecv;
} phase_t;

typedef struct {
  double model50, model99, rx50, rx99, late50, late99, send50, send99, recv50, recv99;
  uint32_t paired, lost;
} result_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile(double *v, size_t n, double q) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* ---- traffic ---------------------------------------------------------------- */

static void send_due(jct_timer_t *t, uint64_t now_ns);

static void arm_sender(phase_t *p) {
  if (p->sent < p->o->frames) jct_timer_start(&p->clock, &p->tx_timer, p->next_tx_ns, send_due);
}

static void send_due(jct_timer_t *t, uint64_t now_ns) {
  phase_t *p = t->data;
  for (int n = 0; n < CATCH_UP && p->sent < p->o->frames && p->next_tx_ns <= now_ns; n++) {
    uint32_t psn = p->sent & 0xffffff;
    p->dgram[9] = (uint8_t)(psn >> 16);
    p->dgram[10] = (uint8_t)(psn >> 8);
    p->dgram[11] = (uint8_t)psn;
    uint64_t t0 = jct_now_ns();
    if (send(p->tx, p->dgram, p->dgram_len, 0) != (ssize_t)p->dgram_len) break; /* retry later */
    p->send_ns[p->nsend++] = (double)(jct_now_ns() - t0);
    p->sent++;
    p->next_tx_ns += p->interval_ns;
  }
  if (p->next_tx_ns + CATCH_UP * p->interval_ns < now_ns) p->next_tx_ns = now_ns; /* no burst */
  arm_sender(p);
}

static void on_rx(uv_poll_t *h, int status, int events) {
  (void)events;
  phase_t *p = h->data;
  if (status < 0) return;
  for (;;) {
    uint8_t buf[MAX_PAYLOAD + 64];
    char ctl[CMSG_SPACE(sizeof(struct timespec))];
    struct iovec iov = {buf, sizeof buf};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    uint64_t t0 = jct_now_ns();
    ssize_t n = recvmsg(p->rx, &m, MSG_DONTWAIT);
    if (n < 0) break;
    if (p->nrecv < p->o->frames) p->recv_ns[p->nrecv++] = (double)(jct_now_ns() - t0);
    uint64_t ts = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        struct timespec tv;
        memcpy(&tv, CMSG_DATA(c), sizeof tv);
        ts = (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_nsec;
      }
    if (n < JCT_BTH_BYTES || !ts) {
      p->unknown++;
      continue;
    }
    uint32_t psn = (uint32_t)buf[9] << 16 | (uint32_t)buf[10] << 8 | buf[11];
    if (psn >= p->o->frames) {
      p->unknown++;
      continue;
    }
    if (!p->fr[psn].rx) {
      p->fr[psn].rx = ts;
      p->received++;
    }
  }
}

static int open_sockets(phase_t *p, const jct_topo_t *topo, char *err, size_t errlen) {
  struct sockaddr_storage ss;
  int one = 1, tos = TOS, buf = 8 << 20;
  p->tx =
      jct_topo_socket(topo, 0, AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, err, errlen);
  if (p->tx < 0) return p->tx;
  p->rx =
      jct_topo_socket(topo, 1, AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, err, errlen);
  if (p->rx < 0) return p->rx;
  socklen_t sl = jct_rank_sockaddr(1, AF_INET, ROCE_PORT, &ss);
  if (setsockopt(p->rx, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) ||
      setsockopt(p->rx, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf) ||
      bind(p->rx, (struct sockaddr *)&ss, sl) ||
      setsockopt(p->tx, IPPROTO_IP, IP_TOS, &tos, sizeof tos) ||
      setsockopt(p->tx, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf) ||
      connect(p->tx, (struct sockaddr *)&ss, sl)) {
    snprintf(err, errlen, "sockets: %s", strerror(errno));
    return JCT_EIO;
  }
  if (uv_poll_init(&p->loop, &p->rx_poll, p->rx)) {
    snprintf(err, errlen, "cannot poll the receiver");
    return JCT_EIO;
  }
  p->rx_poll_open = true;
  p->rx_poll.data = p;
  uv_poll_start(&p->rx_poll, UV_READABLE, on_rx);
  return 0;
}

/* ---- captures --------------------------------------------------------------- */

/* Put each capture frame of rank 0 -> 1's flow at its PSN (first
 * occurrence): in or out. */
static int read_capture(const char *path, phase_t *p, bool out, char *err, size_t errlen) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
  if (!pc) {
    snprintf(err, errlen, "%s: %s", path, eb);
    return JCT_EIO;
  }
  struct pcap_pkthdr *h;
  const u_char *d;
  while (pcap_next_ex(pc, &h, &d) == 1) {
    if (h->caplen < ETH_IP_UDP_BYTES + JCT_BTH_BYTES || d[12] != 0x08 || d[13] != 0 ||
        d[23] != 17 || d[33] != 2 || (d[36] << 8 | d[37]) != ROCE_PORT)
      continue; /* not IPv4 UDP to 198.18.0.2:4791 */
    const u_char *bth = d + ETH_IP_UDP_BYTES;
    uint32_t psn = (uint32_t)bth[9] << 16 | (uint32_t)bth[10] << 8 | bth[11];
    if (psn >= p->o->frames) continue;
    uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
    frame_t *f = &p->fr[psn];
    if (out && !f->out) f->out = ts;
    if (!out && !f->in) f->in = ts, f->len = h->len;
  }
  pcap_close(pc);
  return 0;
}

static void analyse(phase_t *p, uint64_t hold_ns, result_t *r) {
  uint32_t n = p->o->frames;
  double *model = malloc(n * sizeof *model), *rx = malloc(n * sizeof *rx);
  size_t k = 0;
  double free_at = 0;
  memset(r, 0, sizeof *r);
  for (uint32_t i = 0; model && rx && i < n; i++) {
    const frame_t *f = &p->fr[i];
    if (!f->in || !f->out || !f->rx) {
      r->lost++;
      continue;
    }
    /* Relative to the first frame's arrival, in doubles (exact to well
     * below a nanosecond over seconds). */
    double in = (double)(f->in - p->fr[0].in), out = (double)(f->out - p->fr[0].in);
    double got = (double)(f->rx - p->fr[0].in);
    double ser = (double)(f->len + OVERHEAD_BYTES) * 8e9 / (double)p->o->rate_bps;
    double start = in + (double)hold_ns > free_at ? in + (double)hold_ns : free_at;
    free_at = start + ser;
    double due = free_at + PROP_NS;
    model[k] = out - due;
    rx[k] = got - due;
    k++;
  }
  r->paired = (uint32_t)k;
  if (k) {
    for (size_t i = 0; i < k; i++)
      model[i] = model[i] < 0 ? -model[i] : model[i];
    r->model50 = quantile(model, k, 0.5);
    r->model99 = quantile(model, k, 0.99);
    r->rx50 = quantile(rx, k, 0.5);
    r->rx99 = quantile(rx, k, 0.99);
  }
  r->send50 = quantile(p->send_ns, p->nsend, 0.5);
  r->send99 = quantile(p->send_ns, p->nsend, 0.99);
  r->recv50 = quantile(p->recv_ns, p->nrecv, 0.5);
  r->recv99 = quantile(p->recv_ns, p->nrecv, 0.99);
  r->late50 = (double)jct_lateness_quantile_ns(&p->clock.lateness, 0.5);
  r->late99 = (double)jct_lateness_quantile_ns(&p->clock.lateness, 0.99);
  free(model);
  free(rx);
}

/* ---- one phase ---------------------------------------------------------------- */

static void close_phase(phase_t *p) {
  if (p->clock_open) jct_timer_stop(&p->clock, &p->tx_timer);
  if (p->rx_poll_open) uv_close((uv_handle_t *)&p->rx_poll, NULL);
  jct_fabric_free(p->fab);
  if (p->clock_open) jct_clock_close(&p->clock, NULL);
  while (p->loop_open && uv_loop_close(&p->loop) == UV_EBUSY)
    uv_run(&p->loop, UV_RUN_NOWAIT);
  if (p->tx >= 0) close(p->tx);
  if (p->rx >= 0) close(p->rx);
  jct__chain_free(p->chain);
  free(p->fr);
  free(p->send_ns);
  free(p->recv_ns);
}

static int run_phase(const opts_t *o, const jct_topo_t *topo, const char *dir, bool delay,
                     result_t *r, char *err, size_t errlen) {
  phase_t *p = calloc(1, sizeof *p);
  if (!p) return JCT_ENOMEM;
  p->o = o;
  p->tx = p->rx = -1;
  p->tx_timer.data = p;
  char in_path[600], out_path[600];
  snprintf(in_path, sizeof in_path, "%s/in.pcap", dir);
  snprintf(out_path, sizeof out_path, "%s/out.pcap", dir);
  int rc = JCT_ENOMEM;
  p->send_ns = malloc(o->frames * sizeof *p->send_ns);
  p->recv_ns = malloc(o->frames * sizeof *p->recv_ns);
  if (!(p->fr = calloc(o->frames, sizeof *p->fr)) || !p->send_ns || !p->recv_ns) goto done;
  if (uv_loop_init(&p->loop)) {
    rc = JCT_EIO;
    snprintf(err, errlen, "uv_loop_init failed");
    goto done;
  }
  p->loop_open = true;
  if ((rc = jct_clock_init(&p->clock, &p->loop))) {
    snprintf(err, errlen, "cannot set up the clock");
    goto done;
  }
  p->clock_open = true;
  jct_clock_set_spin_ns(&p->clock, o->spin_ns);
  if (delay) {
    char spec[64];
    snprintf(spec, sizeof spec, "delay %lluns port=1", (unsigned long long)o->delay_ns);
    const char *specs[1] = {spec};
    if ((rc = jct__chain_new(&p->chain, specs, 1, 1, err, errlen))) goto done;
  }
  jct_fabric_opts_t fo = {.nranks = NRANKS,
                          .rate_bps = o->rate_bps,
                          .prop_delay_ns = PROP_NS,
                          .data_prio = DATA_PRIO,
                          .pfc = true,
                          .topo = topo,
                          .pcap_in = in_path,
                          .pcap_out = out_path,
                          .pcap_snaplen = o->snaplen,
                          .chain = p->chain};
  if ((rc = jct_fabric_new(&p->fab, &p->loop, &p->clock, &fo, err, errlen))) goto done;
  if ((rc = open_sockets(p, topo, err, errlen))) goto done;

  /* The datagram: a BTH (RDMA WRITE MIDDLE to QPN), payload, zero ICRC. */
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  h.bth.opcode = 0x07;
  h.bth.pkey = 0xffff;
  h.bth.dest_qp = QPN;
  p->dgram_len = JCT_BTH_BYTES + o->payload + JCT_ICRC_BYTES;
  if (jct_roce_write(p->dgram, sizeof p->dgram, &h) != JCT_BTH_BYTES) {
    rc = JCT_EINVAL;
    snprintf(err, errlen, "cannot write a BTH");
    goto done;
  }
  double wire_ns =
      (double)(p->dgram_len + ETH_IP_UDP_BYTES + OVERHEAD_BYTES) * 8e9 / (double)o->rate_bps;
  p->interval_ns = (uint64_t)(wire_ns / o->load + 0.5);

  uint64_t t0 = jct_now_ns() + 1000000u;
  jct_fabric_start(p->fab, t0);
  p->next_tx_ns = t0;
  arm_sender(p);
  uint64_t deadline = 0;
  for (;;) {
    uv_run(&p->loop, UV_RUN_ONCE);
    if (p->sent < o->frames) continue;
    uint64_t now = jct_now_ns();
    if (!deadline) deadline = now + DRAIN_NS;
    if ((p->received == o->frames && jct_fabric_idle(p->fab)) || now > deadline) break;
    if (!jct_timer_active(&p->tx_timer)) { /* keep the loop turning while draining */
      p->next_tx_ns = now + 100000u;
      jct_timer_start(&p->clock, &p->tx_timer, p->next_tx_ns, send_due);
    }
  }
  jct_fabric_harness_stats_t hs;
  jct_fabric_harness_stats(p->fab, &hs);
  jct_fabric_free(p->fab); /* flushes and closes the captures */
  p->fab = NULL;
  if (hs.inject_failures || hs.pcap_drops)
    fprintf(stderr, "inject_delay: harness lost frames (%llu inject failures, %llu pcap drops)\n",
            (unsigned long long)hs.inject_failures, (unsigned long long)hs.pcap_drops);
  if ((rc = read_capture(in_path, p, false, err, errlen)) ||
      (rc = read_capture(out_path, p, true, err, errlen)))
    goto done;
  analyse(p, delay ? o->delay_ns : 0, r);
done:
  close_phase(p);
  unlink(in_path);
  unlink(out_path);
  free(p);
  return rc;
}

/* ---- main ------------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.runs = 3,
                .frames = 3000,
                .payload = 4096,
                .snaplen = SNAPLEN,
                .rate_bps = 1000000000u,
                .delay_ns = 100000u,
                .spin_ns = 100000u,
                .load = 0.9};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    uint64_t x;
    char *end;
    if (!strcmp(a, "--runs") && parse_u64(v, 1, MAX_RUNS, &x))
      o->runs = (unsigned)x;
    else if (!strcmp(a, "--frames") && parse_u64(v, 10, 1000000, &x))
      o->frames = (uint32_t)x;
    else if (!strcmp(a, "--payload") && parse_u64(v, 0, MAX_PAYLOAD - 16, &x))
      o->payload = (uint32_t)x;
    else if (!strcmp(a, "--rate") && parse_u64(v, 1000000, 400000000000ull, &x))
      o->rate_bps = x;
    else if (!strcmp(a, "--delay") && parse_u64(v, 0, 1000000000u, &x))
      o->delay_ns = x;
    else if (!strcmp(a, "--snaplen") && parse_u64(v, 0, 65535, &x) && (x == 0 || x >= 64))
      o->snaplen = (uint32_t)x;
    else if (!strcmp(a, "--spin-ns") && parse_u64(v, 0, 1000000000u, &x))
      o->spin_ns = x;
    else if (!strcmp(a, "--load") && (o->load = strtod(v, &end), end != v && !*end) &&
             o->load > 0 && o->load <= 1)
      ;
    else
      return -1;
    i++;
  }
  return 0;
}

static double med(const result_t *r, unsigned n, size_t off, double *lo, double *hi) {
  double v[MAX_RUNS];
  for (unsigned i = 0; i < n; i++)
    v[i] = *(const double *)((const char *)&r[i] + off);
  qsort(v, n, sizeof *v, cmp_double);
  *lo = v[0];
  *hi = v[n - 1];
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void row(const char *name, const result_t *base, const result_t *del, unsigned n,
                size_t off) {
  double lo0, hi0, lo1, hi1;
  double m0 = med(base, n, off, &lo0, &hi0), m1 = med(del, n, off, &lo1, &hi1);
  printf("  %-26s %8.2f [%7.2f, %7.2f]  %8.2f [%7.2f, %7.2f]\n", name, m0 / 1e3, lo0 / 1e3,
         hi0 / 1e3, m1 / 1e3, lo1 / 1e3, hi1 / 1e3);
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse_opts(argc, argv, &o)) {
    fprintf(stderr,
            "usage: inject_delay [--runs 1-%d] [--frames N] [--payload BYTES] "
            "[--rate BPS] [--load (0,1]] [--delay NS] [--spin-ns NS] "
            "[--snaplen 0|64-65535]\n",
            MAX_RUNS);
    return 2;
  }
  char err[512] = "";
  if (jct_ns_isolate(err, sizeof err)) {
    fprintf(stderr, "inject_delay: %s\n", err);
    return 1;
  }
  jct_topo_t *topo = NULL;
  jct_topo_opts_t to = {.mtu = JCT_TOPO_MTU_DEFAULT, .ipv6 = false};
  if (jct_topo_create(&topo, NRANKS, &to, err, sizeof err)) {
    fprintf(stderr, "inject_delay: %s\n", err);
    return 1;
  }
  const char *tmp = getenv("TMPDIR");
  char dirbuf[512];
  snprintf(dirbuf, sizeof dirbuf, "%s/jct-delay.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dirbuf)) {
    fprintf(stderr, "inject_delay: mkdtemp %s: %s\n", dirbuf, strerror(errno));
    jct_topo_destroy(topo);
    return 1;
  }
  static result_t res[2][MAX_RUNS];
  int rc = 0;
  for (unsigned r = 0; r < o.runs && !rc; r++)
    for (int d = 0; d <= 1 && !rc; d++)
      if ((rc = run_phase(&o, topo, dirbuf, d, &res[d][r], err, sizeof err)))
        fprintf(stderr, "inject_delay: %s phase: %s\n", d ? "delay" : "baseline", err);
  rmdir(dirbuf);
  jct_topo_destroy(topo);
  if (rc) return 1;

  uint32_t frame_bytes = o.payload + JCT_BTH_BYTES + JCT_ICRC_BYTES + ETH_IP_UDP_BYTES;
  printf("fabric, 2 ranks, %.3g Gbit/s links, 1 us propagation; rank 0 -> 1, %u frames of %u "
         "bytes per phase at %.0f%% of the link rate; %u run(s), phases alternating\n",
         (double)o.rate_bps / 1e9, o.frames, frame_bytes, o.load * 100, o.runs);
  printf("  due = when a FIFO link delivers it: max(in + hold, previous end) + wire time + "
         "propagation\n");
  printf("  (us, median over runs [min, max])   baseline (no injector)      delay %lluus port=1\n",
         (unsigned long long)(o.delay_ns / 1000));
  row("model error p50 |out-due|", res[0], res[1], o.runs, offsetof(result_t, model50));
  row("model error p99", res[0], res[1], o.runs, offsetof(result_t, model99));
  row("receiver error p50 rx-due", res[0], res[1], o.runs, offsetof(result_t, rx50));
  row("receiver error p99", res[0], res[1], o.runs, offsetof(result_t, rx99));
  row("loop lateness p50", res[0], res[1], o.runs, offsetof(result_t, late50));
  row("loop lateness p99", res[0], res[1], o.runs, offsetof(result_t, late99));
  row("rank 0's send(2) p50", res[0], res[1], o.runs, offsetof(result_t, send50));
  row("rank 0's send(2) p99", res[0], res[1], o.runs, offsetof(result_t, send99));
  row("rank 1's recvmsg(2) p50", res[0], res[1], o.runs, offsetof(result_t, recv50));
  row("rank 1's recvmsg(2) p99", res[0], res[1], o.runs, offsetof(result_t, recv99));
  uint32_t lost = 0, paired = 0;
  for (unsigned r = 0; r < o.runs; r++)
    for (int d = 0; d <= 1; d++)
      lost += res[d][r].lost, paired += res[d][r].paired;
  double lo, hi, rx99 = med(res[1], o.runs, offsetof(result_t, rx99), &lo, &hi);
  double base99 = med(res[0], o.runs, offsetof(result_t, rx99), &lo, &hi);
  printf("  frames paired in, out and at the receiver: %u; unpaired (lost or unseen): %u\n", paired,
         lost);
  printf("  receiver error p99 with the delay: %.1f us (baseline %.1f us); goal: under 20 us: "
         "%s\n",
         rx99 / 1e3, base99 / 1e3, rx99 < 20000 ? "met" : "NOT met");
  return 0;
}
