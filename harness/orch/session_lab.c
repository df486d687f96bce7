/* A session on the verbs transport: the lab's VMs as ranks, their TAPs as
 * the switch's ports, and repetitions asked of the rank agents
 * (session_int.h, agents.h, lab.h). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "session_int.h"

#define LAB_MAX_RANKS 16             /* 512 MiB each: what a 24 GiB, 2-core machine runs */
#define HELLO_KVM_NS 90000000000ull  /* boot to hello, with KVM */
#define HELLO_TCG_NS 300000000000ull /* and without: TCG boots ~10x slower */
#define PHASE_NS 60000000000ull      /* setup, connect */
#define QUIT_NS 3000000000ull
#define RXE_INFLIGHT_PKTS 64u

static uint32_t path_mtu(const jct_run_opts_t *o) {
  return o->path_mtu_bytes ? o->path_mtu_bytes : 4096;
}

/* rxe's path MTU is its active MTU, the largest IB MTU that fits the
 * netdev's MTU less 96 bytes of headers (GRH, UDP, BTH, extensions, ICRC:
 * rxe's eth_mtu_int_to_enum): the VMs' NICs get path MTU + 128 when
 * --path-mtu asks for less than 4096, the links' MTU (9000) otherwise. */
static uint32_t vm_mtu(const jct_run_opts_t *o) {
  if (path_mtu(o) < 4096) return path_mtu(o) + 128;
  return o->mtu ? o->mtu : JCT_TOPO_MTU_DEFAULT;
}

static bool answered(jct__session_t *s) {
  return !jct__agents_waiting(s->agents);
}

/* Wait for the agents' answers to the current phase. */
static int await(jct__session_t *s, const char *phase, uint64_t limit_ns, char *err, size_t errlen) {
  bool ok = jct__session_run_until(s, answered, jct_now_ns() + limit_ns);
  char why[768];
  bool failed = jct__session_failed(s, why, sizeof why);
  if ((failed || !ok) && s->lab)
    for (uint32_t i = 0; i < s->o->schedule->nranks; i++) {
      char tail[400];
      jct__lab_console_tail(s->lab, i, tail, sizeof tail);
      fprintf(stderr, "jctlab: rank %u's VM console ends:\n%s\n", i, tail);
    }
  const char *who = s->lab ? "the lab" : "the agents";
  if (failed) return jct__errf(err, errlen, JCT_EIO, "%s, %s: %s", who, phase, why);
  if (!ok) {
    return jct__errf(err, errlen, JCT_EIO, "%s, %s: no answer from every agent in %.0f s", who,
                     phase, (double)limit_ns / 1e9);
  }
  return 0;
}

int jct__session_lab_up(jct__session_t *s, char *err, size_t errlen) {
  uint32_t n = s->o->schedule->nranks;
  if (!s->o->lab_ranks)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--transport verbs needs --lab N (soft-RoCE VMs) or --agents HOST:PORT,... "
                     "(`jctlab agent --listen` on hosts with RDMA NICs)");
  if (s->o->lab_ranks != n)
    return jct__errf(err, errlen, JCT_EINVAL, "--lab %u: the schedule has %u ranks",
                     s->o->lab_ranks, n);
  if (n > LAB_MAX_RANKS)
    return jct__errf(err, errlen, JCT_EINVAL, "--lab %u: the lab runs at most %u VMs", n,
                     LAB_MAX_RANKS);
  /* rxe hands the kernel up to 64 packets per QP before it waits
   * (RXE_INFLIGHT_SKBS_PER_QP_HIGH), and the VM's NIC drains them at the
   * link rate: when that takes longer than half the QP timeout, rxe's
   * retransmit timer fires on packets still queued in its own NIC and the
   * baseline itself retransmits (seen: 2,492 packets resent and a QP in
   * error at 25 Mbit/s, timeout 14). */
  double queue_ns = RXE_INFLIGHT_PKTS * (path_mtu(s->o) + 82.0) * 8 * 1e9 / (double)s->o->rate_bps;
  double timeout_ns = 4096.0 * (double)(1ull << (s->o->timeout < 31 ? s->o->timeout : 31));
  if (queue_ns > timeout_ns / 2)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--rate %.0f Mbit/s with --timeout %u: rxe queues up to %u packets per QP "
                     "in the VM's NIC (%.0f ms at this rate), more than half the QP timeout "
                     "(%.0f ms), so its retransmit timer would fire on packets still queued: "
                     "raise --rate or --timeout",
                     (double)s->o->rate_bps / 1e6, s->o->timeout, RXE_INFLIGHT_PKTS, queue_ns / 1e6,
                     timeout_ns / 1e6);
  jct__lab_opts_t lo = {.nranks = n, .mtu = vm_mtu(s->o)};
  return jct__lab_up(&s->lab, &lo, err, errlen);
}

/* --agents HOST:PORT,...: one TCP connection per agent, in rank order. */
static int dial_agents(jct__session_t *s, int *fds, char *err, size_t errlen) {
  uint32_t n = s->o->schedule->nranks, i = 0, listed = 1;
  const char *p = s->o->agents;
  for (const char *c = p; *c; c++)
    listed += *c == ',';
  if (listed != n)
    return jct__errf(err, errlen, JCT_EINVAL, "--agents: %u agents for %u ranks", listed, n);
  while (*p && i < n) {
    size_t len = strcspn(p, ",");
    char spec[256], *colon;
    snprintf(spec, sizeof spec, "%.*s", (int)len, p);
    p += len + (p[len] == ',');
    if (!(colon = strrchr(spec, ':')))
      return jct__errf(err, errlen, JCT_EINVAL, "--agents: '%s' is not HOST:PORT", spec);
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int g = getaddrinfo(spec, colon + 1, &hints, &ai);
    if (g)
      return jct__errf(err, errlen, JCT_EINVAL, "--agents: %s:%s: %s", spec, colon + 1,
                       gai_strerror(g));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
      int e = errno;
      if (fd >= 0) close(fd);
      freeaddrinfo(ai);
      return jct__errf(err, errlen, JCT_EIO, "--agents: rank %u's agent at %s:%s: %s", i, spec,
                       colon + 1, strerror(e));
    }
    freeaddrinfo(ai);
    fds[i] = s->agent_fds[i] = fd;
    s->nagent_fds = ++i;
  }
  if (i != n || *p)
    return jct__errf(err, errlen, JCT_EINVAL, "--agents: %s agents for %u ranks",
                     *p ? "more" : "fewer", n);
  return 0;
}

int jct__session_agents_up(jct__session_t *s, char *err, size_t errlen) {
  const jct_run_opts_t *o = s->o;
  uint32_t n = o->schedule->nranks;
  int fds[JCT_SWITCH_MAX_PORTS];
  if (n > JCT_SWITCH_MAX_PORTS)
    return jct__errf(err, errlen, JCT_EINVAL, "at most %u agents", JCT_SWITCH_MAX_PORTS);
  int rc;
  if (o->agents) {
    if ((rc = dial_agents(s, fds, err, errlen))) return rc;
  } else {
    for (uint32_t i = 0; i < n; i++)
      fds[i] = jct__lab_control_fd(s->lab, i);
  }
  if ((rc = jct__agents_new(&s->agents, &s->loop, n, fds)))
    return jct__errf(err, errlen, rc, "cannot watch the agents' control channels");
  jct__agents_expect_hello(s->agents);
  bool kvm = s->lab && strcmp(jct__lab_accel(s->lab), "kvm") == 0;
  uint64_t t0 = jct_now_ns();
  if ((rc = await(s, s->lab ? "booting" : "waiting for the agents' hellos",
                  kvm || !s->lab ? HELLO_KVM_NS : HELLO_TCG_NS, err, errlen)))
    return rc;
  if (getenv("JCT_LAB_VERBOSE") && s->lab)
    for (uint32_t i = 0; i < n; i++)
      fprintf(stderr, "jctlab: rank %u up after %.1f s (%s): %s\n", i,
              (double)(jct_now_ns() - t0) / 1e9, jct__lab_accel(s->lab),
              jct__agents_hello(s->agents, i));
  jct__agents_setup_t so = {.timeout = o->timeout,
                           .retry_cnt = o->retry_cnt,
                           .tos = DATA_DSCP << 2,
                           .slots = JCT_EXEC_DEFAULT_SLOTS,
                           .rate_bps = o->rate_bps,
                           .mtu = vm_mtu(o)};
  if ((rc = jct__agents_setup(s->agents, o->schedule, &so)) ||
      (rc = await(s, "setting up the QPs", PHASE_NS, err, errlen)))
    return rc ? rc : JCT_EIO;
  if ((rc = jct__agents_connect(s->agents)) ||
      (rc = await(s, "connecting the QPs", PHASE_NS, err, errlen)))
    return rc;
  return 0;
}

/* The device counters as the transport's: what rxe counts that uroce does
 * too (rxe's names, drivers/infiniband/sw/rxe/rxe_hw_counters.h). rxe's
 * completer counts every restart of the send stream in
 * completer_retry_err, a NAK-sequence-error's (also in rcvd_seq_err) as
 * well as a retransmit timer's: timeouts are the difference. Measured: 14
 * drops of first transmissions gave rcvd_seq_err 13 and
 * completer_retry_err 14, the 14th loss a message's last packet. */
static void map_counters(const jct_dev_counters_t *d, jct_uroce_stats_t *t) {
  memset(t, 0, sizeof *t);
  t->tx_pkts = jct_dev_counters_get(d, "sent_pkts");
  t->rx_pkts = jct_dev_counters_get(d, "rcvd_pkts");
  t->rx_naks = jct_dev_counters_get(d, "rcvd_seq_err");
  t->out_of_seq_pkts = jct_dev_counters_get(d, "out_of_seq_request");
  t->dup_pkts = jct_dev_counters_get(d, "duplicate_request");
  t->go_back_n = jct_dev_counters_get(d, "completer_retry_err");
  t->timeouts = t->go_back_n > t->rx_naks ? t->go_back_n - t->rx_naks : 0;
}

void jct__session_verbs_rep(jct__session_t *s, uint32_t index, uint64_t limit_ns, jct_rep_t *rep) {
  const jct_schedule_t *sch = s->o->schedule;
  uint64_t sent = jct_now_ns();
  char why[768];
  if (jct__agents_run(s->agents, ++s->agent_runs)) {
    jct__agents_failed(s->agents, why, sizeof why);
    jct__session_fail_rep(s, rep, why);
    return;
  }
  bool done = jct__session_run_until(s, answered, sent + limit_ns);
  if (jct__session_failed(s, why, sizeof why)) {
    jct__session_fail_rep(s, rep, why);
    return;
  }
  if (!done) {
    snprintf(why, sizeof why, "repetition %u did not finish in %.1f s", index + 1,
             (double)limit_ns / 1e9);
    jct__session_fail_rep(s, rep, why);
    return;
  }
  if (jct__agents_timing(s->agents, rep->timing, sch->nops)) {
    jct__session_fail_rep(s, rep, "an agent reported an op outside the schedule");
    return;
  }
  /* JCT (DESIGN.md decision 5): the first send to the last receive. */
  uint64_t first = UINT64_MAX, last = 0;
  for (uint32_t i = 0; i < sch->nops; i++) {
    const jct_op_timing_t *t = &rep->timing[i];
    if (!t->start_ns || !t->done_ns) {
      snprintf(why, sizeof why, "op %u was not reported sent and received", i);
      jct__session_fail_rep(s, rep, why);
      return;
    }
    if (t->start_ns < first) first = t->start_ns;
    if (t->done_ns > last) last = t->done_ns;
  }
  rep->jct_ns = last > first ? last - first : 0;
  for (uint32_t i = 0; i < sch->nops; i++) {
    jct_op_timing_t *t = &rep->timing[i];
    t->ready_ns = t->ready_ns > first ? t->ready_ns - first : 0;
    t->start_ns -= first;
    t->done_ns -= first;
  }
  jct__agents_counters(s->agents, &rep->dev);
  map_counters(&rep->dev, &rep->transport);
}

void jct__session_lab_down(jct__session_t *s) {
  if (s->agents) {
    if (!jct__agents_failed(s->agents, NULL, 0) && jct__agents_quit(s->agents) == 0)
      jct__session_run_until(s, answered, jct_now_ns() + QUIT_NS);
    jct__agents_free(s->agents);
    s->agents = NULL;
  }
  jct__lab_down(s->lab);
  s->lab = NULL;
  for (uint32_t i = 0; i < s->nagent_fds; i++)
    close(s->agent_fds[i]);
  s->nagent_fds = 0;
}
