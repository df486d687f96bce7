/* The verbs backend (backend.h): rdma-core ranks driven by agents
 * (harness/lab/agents.h), either the lab's soft-RoCE VMs, one per rank,
 * whose TAPs are the emulated switch's ports (harness/lab/lab.h, --lab N),
 * or agents on hosts with RDMA NICs, reached over TCP, whose traffic
 * crosses the hosts' own fabric (--agents HOST:PORT,...). Each repetition
 * is asked of the agents; their timings and the devices' own counters come
 * back in their answers. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errf.h"
#include "harness/base/interrupt.h"
#include "harness/fabric/chain.h"
#include "harness/lab/agents.h"
#include "harness/lab/lab.h"
#include "harness/transport/rdma_sysfs.h"
#include "jctlab/error.h"
#include "jctlab/run.h"
#include "backend.h"
#include "host_faults.h"
#include "vm_stalls.h"

#define LAB_MAX_RANKS 16             /* 512 MiB each: what a 24 GiB, 2-core machine runs */
#define HELLO_KVM_NS 90000000000ull  /* boot to hello, with KVM */
#define HELLO_TCG_NS 300000000000ull /* and without: TCG boots ~10x slower */
#define PHASE_NS 60000000000ull      /* setup, connect */
#define QUIT_NS 3000000000ull
#define RXE_INFLIGHT_PKTS 64u

typedef struct {
  jct__loop_t *loop;
  const jct_run_opts_t *o;
  const jct_run_dilation_t *dil; /* the session's (backend.h): what the agents are given */
  jct_fabric_t *fab;             /* the lab's switch; NULL with --agents */
  jct__lab_t *lab;               /* --lab: one VM per rank */
  jct__agents_t *agents;         /* the ranks' agents */
  uint32_t runs;                 /* runs asked of the agents so far */
  int fds[JCT_SWITCH_MAX_PORTS]; /* --agents: the TCP connections */
  uint32_t nfds;
  jct_transport_stats_t total; /* the devices' counters, over every repetition */
  jct__chain_t *chain;         /* the run's injectors: the at=host ones run in the agents */
  const jct__loss_watch_t *watch; /* the lab switch's wire: the re-sent packets; NULL with
                                     --agents */
  bool kept;                      /* the lab was kept from an earlier run (jct_run_lab_keep) */
  jct__vm_stalls_t *stalls;       /* the lab's: its VMs stopped for a stall injector's stalls */
} verbs_t;

/* The lab between runs while jct_run_lab_keep(true) holds: its VMs up,
 * their agents reset to before setup; for the next run with as many ranks
 * and the same NIC MTU (the VMs' kernel command line). One thread's. */
static struct {
  bool keep;
  jct__lab_t *lab;
  uint32_t nranks, mtu;
} kept_lab;

void jct_run_lab_keep(bool keep) {
  kept_lab.keep = keep;
  if (keep) return;
  jct__lab_down(kept_lab.lab);
  kept_lab.lab = NULL;
}

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

/* Nonzero once an agent failed or a VM stopped; why says which. */
static int failed(void *b, char *why, size_t len) {
  verbs_t *v = b;
  if (v->agents && jct__agents_failed(v->agents, why, len)) return 1;
  for (uint32_t i = 0; v->lab && i < v->o->schedule->nranks; i++)
    if (!jct__lab_alive(v->lab, i)) {
      char tail[400];
      jct__lab_console_tail(v->lab, i, tail, sizeof tail);
      if (why) snprintf(why, len, "rank %u's VM stopped; its console ends:\n%s", i, tail);
      return 1;
    }
  return 0;
}

static bool answered_or_failed(void *arg) {
  verbs_t *v = arg;
  return !jct__agents_waiting(v->agents) || failed(v, NULL, 0);
}

/* Wait for the agents' answers to the current phase. */
static int await(verbs_t *v, const char *phase, uint64_t limit_ns, char *err, size_t errlen) {
  bool ok = jct__loop_run_until(v->loop, answered_or_failed, NULL, v, jct_now_ns() + limit_ns);
  char why[768];
  bool f = failed(v, why, sizeof why);
  /* A setting a device cannot honour (rdma_sysfs.h): one line, exit 2. */
  if (v->agents && jct__agents_failed(v->agents, NULL, 0) == JCT_EINVAL)
    return jct__errf(err, errlen, JCT_EINVAL, "%s", why);
  if ((f || !ok) && v->lab)
    for (uint32_t i = 0; i < v->o->schedule->nranks; i++) {
      char tail[400];
      jct__lab_console_tail(v->lab, i, tail, sizeof tail);
      fprintf(stderr, "jctlab: rank %u's VM console ends:\n%s\n", i, tail);
    }
  const char *who = v->lab ? "the lab" : "the agents";
  if (f) return jct__errf(err, errlen, JCT_EIO, "%s, %s: %s", who, phase, why);
  if (!ok) {
    return jct__errf(err, errlen, JCT_EIO, "%s, %s: no answer from every agent in %.0f s", who,
                     phase, (double)limit_ns / 1e9);
  }
  return 0;
}

static int lab_up(verbs_t *v, char *err, size_t errlen) {
  const jct_run_opts_t *o = v->o;
  uint32_t n = o->schedule->nranks;
  if (!o->lab_ranks)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--transport verbs needs --lab N (soft-RoCE VMs) or --agents HOST:PORT,... "
                     "(`jctlab agent --listen` on hosts with RDMA NICs)");
  if (o->lab_ranks != n)
    return jct__errf(err, errlen, JCT_EINVAL, "--lab %u: the schedule has %u ranks", o->lab_ranks,
                     n);
  if (n > LAB_MAX_RANKS)
    return jct__errf(err, errlen, JCT_EINVAL, "--lab %u: the lab runs at most %u VMs", n,
                     LAB_MAX_RANKS);
  /* rxe hands the kernel up to 64 packets per QP before it waits
   * (RXE_INFLIGHT_SKBS_PER_QP_HIGH), and the VM's NIC drains them at the
   * link rate: when that takes longer than half the QP timeout, rxe's
   * retransmit timer fires on packets still queued in its own NIC and the
   * baseline itself retransmits (seen: 2,492 packets resent and a QP in
   * error at 25 Mbit/s, timeout 14). */
  double queue_ns = RXE_INFLIGHT_PKTS * (path_mtu(o) + 82.0) * 8 * 1e9 / (double)o->rate_bps;
  double timeout_ns = 4096.0 * (double)(1ull << (o->timeout < 31 ? o->timeout : 31));
  /* A capture's timer (replay_profile.h) is what the captured rxe ran,
   * its spurious go-backs included: refused only when the queue outlasts
   * it (replay_profile has already raised it then). */
  if (queue_ns > (o->timeout_captured ? timeout_ns : timeout_ns / 2))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--rate %.0f Mbit/s with --timeout %u: rxe queues up to %u packets per QP "
                     "in the VM's NIC (%.0f ms at this rate), more than %sthe QP timeout "
                     "(%.0f ms), so its retransmit timer would fire on packets still queued: "
                     "raise --rate or --timeout",
                     (double)o->rate_bps / 1e6, o->timeout, RXE_INFLIGHT_PKTS, queue_ns / 1e6,
                     o->timeout_captured ? "" : "half ", timeout_ns / 1e6);
  if (kept_lab.lab) {
    bool fits = kept_lab.nranks == n && kept_lab.mtu == vm_mtu(o);
    for (uint32_t i = 0; fits && i < n; i++)
      fits = jct__lab_alive(kept_lab.lab, i);
    if (fits) {
      v->lab = kept_lab.lab;
      v->kept = true;
      kept_lab.lab = NULL;
      return 0;
    }
    jct__lab_down(kept_lab.lab);
    kept_lab.lab = NULL;
  }
  jct__lab_opts_t lo = {.nranks = n, .mtu = vm_mtu(o)};
  return jct__lab_up(&v->lab, &lo, err, errlen);
}

/* --agents HOST:PORT,...: one TCP connection per agent, in rank order. */
static int dial_agents(verbs_t *v, int *fds, char *err, size_t errlen) {
  uint32_t n = v->o->schedule->nranks, i = 0, listed = 1;
  const char *p = v->o->agents;
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
    fds[i] = v->fds[i] = fd;
    v->nfds = ++i;
  }
  if (i != n || *p)
    return jct__errf(err, errlen, JCT_EINVAL, "--agents: %s agents for %u ranks",
                     *p ? "more" : "fewer", n);
  return 0;
}

/* Reach the agents (the lab's control channels, or TCP), wait for their
 * hellos, and let them set up and connect their QPs. */
static int agents_up(verbs_t *v, char *err, size_t errlen) {
  const jct_run_opts_t *o = v->o;
  uint32_t n = o->schedule->nranks;
  int fds[JCT_SWITCH_MAX_PORTS];
  if (n > JCT_SWITCH_MAX_PORTS)
    return jct__errf(err, errlen, JCT_EINVAL, "at most %u agents", JCT_SWITCH_MAX_PORTS);
  int rc;
  if (o->agents) {
    if ((rc = dial_agents(v, fds, err, errlen))) return rc;
  } else {
    for (uint32_t i = 0; i < n; i++)
      fds[i] = jct__lab_control_fd(v->lab, i);
  }
  if ((rc = jct__agents_new(&v->agents, &v->loop->uv, n, fds)))
    return jct__errf(err, errlen, rc, "cannot watch the agents' control channels");
  bool kvm = v->lab && strcmp(jct__lab_accel(v->lab), "kvm") == 0;
  uint64_t t0 = jct_now_ns();
  if (v->kept) { /* booted for an earlier run: its agents say hello again */
    if ((rc = jct__agents_ask_hello(v->agents)) ||
        (rc = await(v, "asking the kept lab's agents", PHASE_NS, err, errlen)))
      return rc ? rc : JCT_EIO;
  } else {
    jct__agents_expect_hello(v->agents);
    if ((rc = await(v, v->lab ? "booting" : "waiting for the agents' hellos",
                    kvm || !v->lab ? HELLO_KVM_NS : HELLO_TCG_NS, err, errlen)))
      return rc;
  }
  if (getenv("JCT_LAB_VERBOSE") && v->lab)
    for (uint32_t i = 0; i < n; i++)
      fprintf(stderr, "jctlab: rank %u up after %.1f s (%s%s): %s\n", i,
              (double)(jct_now_ns() - t0) / 1e9, jct__lab_accel(v->lab),
              v->kept ? ", kept" : "", jct__agents_hello(v->agents, i));
  /* Time dilation (run.h): what the agents do in real time, dilated; the
   * session's, as its report gives it (backend.h). */
  const jct_run_dilation_t *dil = v->dil;
  /* The chain's injectors at=host:RANK go to their ranks' agents. */
  jct__agents_host_drop_t hd[JCT_RUN_MAX_INJECTORS];
  uint32_t nhd = 0;
  for (size_t i = 0; v->chain && i < jct__chain_len(v->chain) && nhd < JCT_RUN_MAX_INJECTORS; i++) {
    const jct_injector_t *inj = jct__chain_get(v->chain, i);
    /* In the lab a flap is the VM's carrier, set from here; on real hosts
     * the agent sets its own netdev's link. */
    if (inj->host >= 0 && (!inj->ops->host_link || !v->lab))
      hd[nhd++] = (jct__agents_host_drop_t){.rank = (uint32_t)inj->host,
                                            .index = (uint32_t)i,
                                            .spec = inj->spec,
                                            .run_seed = o->seed,
                                            .seed = inj->seed};
  }
  jct__agents_setup_t so = {.host_drops = hd,
                            .nhost_drops = nhd,
                            .timeout = dil->verbs_timeout_exp ? dil->verbs_timeout_exp : o->timeout,
                            .cts_timeout = dil->verbs_cts_timeout_exp,
                            .retry_cnt = o->retry_cnt,
                            .tos = o->rdma.has_traffic_class ? o->rdma.traffic_class
                                                             : JCT_RDMA_DEFAULT_TRAFFIC_CLASS,
                            .rdma = &o->rdma,
                            .slots = JCT_EXEC_DEFAULT_SLOTS,
                            .rate_bps = (uint64_t)dil->wall_rate_bps,
                            .mtu = vm_mtu(o),
                            .tdf = dil->tdf};
  if ((rc = jct__agents_setup(v->agents, o->schedule, &so)) ||
      (rc = await(v, "setting up the QPs", PHASE_NS, err, errlen)))
    return rc ? rc : JCT_EIO;
  if ((rc = jct__agents_connect(v->agents)) ||
      (rc = await(v, "connecting the QPs", PHASE_NS, err, errlen)))
    return rc;
  return 0;
}

/* The agents' host injectors after a repetition: counters into the
 * chain's injectors, drops and a storm's frames into the fault log
 * (host_faults.h). */
static void host_results(verbs_t *v) {
  for (uint32_t r = 0; v->chain && r < v->o->schedule->nranks; r++)
    jct__host_faults_results(v->chain, r, jct__agents_host_drops(v->agents, r));
}

/* A repetition ended, however: every VM a stall stopped goes on, and each
 * VM's stalls go to its agent, whose clock stood still through them. */
static void stalls_end(verbs_t *v) {
  if (!v->stalls) return;
  jct__vm_stalls_thaw_all(v->stalls, jct_now_ns());
  for (uint32_t r = 0; r < v->o->schedule->nranks; r++) {
    const uint64_t *at, *len;
    uint32_t n;
    jct__vm_stalls_of(v->stalls, r, &at, &len, &n);
    for (uint32_t k = 0; k < n; k++)
      jct__agents_frozen(v->agents, r, at[k], len[k]);
  }
}

static int run_rep(void *b, uint32_t index, uint64_t limit_ns, jct_rep_t *rep) {
  verbs_t *v = b;
  const jct_schedule_t *sch = v->o->schedule;
  jct__vm_stalls_begin(v->stalls);
  if (v->fab) jct_fabric_start(v->fab, jct_now_ns());
  else if (v->chain)
    jct__chain_start(v->chain, jct_now_ns()); /* --agents: the fault log's rep */
  uint64_t sent = jct_now_ns();
  char why[768];
  if (jct__agents_run(v->agents, ++v->runs, jct__chain_enabled(v->chain))) {
    stalls_end(v);
    jct__agents_failed(v->agents, why, sizeof why);
    jct__rep_fail(rep, why);
    return 0;
  }
  bool done = jct__loop_run_until(v->loop, answered_or_failed, NULL, v, sent + limit_ns);
  stalls_end(v);
  if (failed(v, why, sizeof why)) {
    jct__rep_fail(rep, why);
    return 0;
  }
  if (!done) {
    snprintf(why, sizeof why, "repetition %u did not finish in %.1f s", index + 1,
             (double)limit_ns / 1e9);
    jct__rep_fail(rep, why);
    return 0;
  }
  if (jct__agents_timing(v->agents, rep->timing, sch->nops)) {
    jct__rep_fail(rep, "an agent reported an op outside the schedule");
    return 0;
  }
  /* JCT (DESIGN.md decision 5): the first send to the last receive. */
  uint64_t first = UINT64_MAX, last = 0;
  for (uint32_t i = 0; i < sch->nops; i++) {
    const jct_op_timing_t *t = &rep->timing[i];
    if (!t->start_ns || !t->done_ns) {
      snprintf(why, sizeof why, "op %u was not reported sent and received", i);
      jct__rep_fail(rep, why);
      return 0;
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
  host_results(v);
  jct__agents_counters(v->agents, &rep->dev);
  if ((rep->dev_rank = calloc(sch->nranks, sizeof *rep->dev_rank)))
    for (uint32_t r = 0; r < sch->nranks; r++) {
      jct__agents_rank_counters(v->agents, r, &rep->dev_rank[r]);
      jct__rdma_counters_pick(&rep->dev_rank[r], &v->o->rdma, &rep->dev_rank[r]);
    }
  jct_transport_stats_t moved;
  jct__verbs_tstats(&rep->dev, &moved);
  jct_transport_stats_add(&v->total, &moved);
  return 0;
}

static jct_fabric_t *fabric(const void *b) {
  return ((const verbs_t *)b)->fab;
}

/* The ranks' own queues are the agents' business: nothing to wait for. */
static bool quiet(const void *b) {
  (void)b;
  return true;
}

/* rxe counts no re-sent packets: in the lab they are the ones `jctlab
 * inspect` counts on the switch's wire toward the VMs (where --pcap-out
 * records it), watched by the session every repetition, faulted and
 * baseline alike (loss_watch.h); in a capture's replay so are the NAKs
 * and timeouts, which rxe's counters mistake where a NAK acknowledges
 * nothing new (loss_watch.h), rxe's own counters staying in the report's
 * device counters. */
static uint32_t counted_of(const void *b) {
  return ((const verbs_t *)b)->watch
             ? JCT__VERBS_COUNTED | JCT_TSTAT_RETX_PACKETS | JCT_TSTAT_RETX_BYTES
             : JCT__VERBS_COUNTED;
}

static void stats(const void *b, jct_transport_stats_t *total) {
  const verbs_t *v = b;
  *total = v->total;
  total->counted = counted_of(b);
  if (v->watch) jct__loss_watch_resent(v->watch, &total->retx_packets, &total->retx_bytes);
  /* A capture's replay (watch_losses) sets its NAKs and timeouts beside the
   * capture's, which inspect counted, so the wire's count them here too.
   * Elsewhere rxe's stay: a fault at a host (at=host:R) loses packets
   * before the switch, and their go-backs would not show on its wire. */
  if (v->watch && v->o->watch_losses) {
    jct__loss_watch_go_backs(v->watch, &total->naks, &total->timeouts);
    total->timeouts_after_nak = 0; /* inspect's timeouts: none follows a NAK */
  }
}

/* The agents' sockets are theirs: what they lose is the device's to count. */
static uint64_t harness_losses(const void *b) {
  (void)b;
  return 0;
}

/* Keep the lab for the next run (jct_run_lab_keep): every VM up, its link
 * up (a flap may have ended the run with it down), its agent reset. False
 * when it cannot be: the caller stops it. */
static bool keep_lab(verbs_t *v) {
  if (!kept_lab.keep || !v->lab || jct__interrupt_signal() || failed(v, NULL, 0)) return false;
  uint32_t n = v->o->schedule->nranks;
  for (uint32_t i = 0; i < n; i++)
    if (jct__lab_set_link(v->lab, i, true)) return false;
  if (jct__agents_reset(v->agents) ||
      !jct__loop_run_until(v->loop, answered_or_failed, NULL, v, jct_now_ns() + QUIT_NS) ||
      failed(v, NULL, 0))
    return false;
  jct__lab_down(kept_lab.lab); /* none: lab_up took it */
  kept_lab.lab = v->lab;
  kept_lab.nranks = n;
  kept_lab.mtu = vm_mtu(v->o);
  v->lab = NULL;
  return true;
}

static void down(void *b) {
  verbs_t *v = b;
  jct__vm_stalls_free(v->stalls); /* never a VM left stopped */
  v->stalls = NULL;
  if (v->agents) {
    if (!keep_lab(v) && !jct__agents_failed(v->agents, NULL, 0) && jct__agents_quit(v->agents) == 0)
      jct__loop_run_until(v->loop, answered_or_failed, NULL, v, jct_now_ns() + QUIT_NS);
    jct__agents_free(v->agents);
  }
  jct__lab_down(v->lab);
  for (uint32_t i = 0; i < v->nfds; i++)
    close(v->fds[i]);
  jct_fabric_free(v->fab);
  free(v);
}

/* A stall in the lab: VM R stopped or continued (lab.h). */
static int freeze_vm(void *arg, uint32_t rank, bool frozen) {
  verbs_t *v = arg;
  return v->lab ? jct__lab_freeze(v->lab, rank, frozen) : JCT_EINVAL;
}

/* A flap at=host:R in the lab: VM R's carrier (lab.h). */
static int set_vm_link(void *arg, uint32_t rank, bool up) {
  verbs_t *v = arg;
  return v->lab ? jct__lab_set_link(v->lab, rank, up) : JCT_EINVAL;
}

/* --agents: every injector at a host (at=host:RANK), which that rank's
 * agent runs; one at the switch has nowhere to run. The chain then logs
 * the agents' drops and frames to the fault log, with no switch. */
static int agents_chain(const jct__backend_env_t *env, char *err, size_t errlen) {
  jct__chain_t *c = env->fabric->chain;
  for (size_t i = 0; c && i < jct__chain_len(c); i++) {
    const jct_injector_t *inj = jct__chain_get(c, i);
    if (inj->host < 0)
      return jct__errf(
          err, errlen, JCT_EINVAL,
          "injector #%zu '%s': with --agents the ranks' traffic crosses your fabric, where "
          "jctlab has no switch for it to run on: place it at a rank's host "
          "(at=host:RANK), or put jctlab in the wire (jctlab wire)",
          i + 1, inj->spec);
  }
  return c ? jct__chain_attach_remote(c, env->o->schedule->nranks, env->fabric->fault_log, err,
                                      errlen)
           : 0;
}

static int up(void **out, const jct__backend_env_t *env, char *err, size_t errlen) {
  *out = NULL;
  const jct_run_opts_t *o = env->o;
  /* Agents on hosts: their traffic crosses the hosts' own fabric, not a
   * jctlab switch, so there is no fabric here: an injector runs at a host,
   * in that rank's agent, or nowhere. Checked before any agent is dialled. */
  int rc = 0;
  if (o->agents && (rc = agents_chain(env, err, errlen))) return rc;
  verbs_t *v = calloc(1, sizeof *v);
  if (!v) return JCT_ENOMEM;
  v->loop = env->loop;
  v->o = o;
  v->dil = env->dilation;
  v->chain = env->fabric->chain;
  if (!o->agents) {
    /* The ranks are VMs; the switch's ports are their TAPs. */
    const char *ports[JCT_SWITCH_MAX_PORTS];
    jct_fabric_opts_t fo = *env->fabric;
    if (!(rc = lab_up(v, err, errlen))) {
      if (v->chain) jct__chain_set_link_fn(v->chain, set_vm_link, v);
      if (v->chain && !(rc = jct__vm_stalls_new(&v->stalls, &v->loop->clock, o->schedule->nranks,
                                                freeze_vm, v)))
        jct__chain_set_stall_fn(v->chain, jct__vm_stalls_stall, v->stalls);
      for (uint32_t i = 0; i < o->schedule->nranks && i < JCT_SWITCH_MAX_PORTS; i++)
        ports[i] = jct__lab_port_ifname(v->lab, i);
      fo.port_ifnames = ports;
      fo.remote_hosts = true; /* the VMs' agents run the injectors at=host */
      if (!rc) rc = jct_fabric_new(&v->fab, &v->loop->uv, &v->loop->clock, &fo, err, errlen);
      if (!rc) v->watch = env->watch; /* fed by fo.tap: rxe counts no re-sent packets */
    }
  }
  if (rc || (rc = agents_up(v, err, errlen))) {
    down(v);
    return rc;
  }
  *out = v;
  return 0;
}

const struct jct__backend_ops jct__backend_verbs = {
    .name = "verbs",
    .counted = JCT__VERBS_COUNTED,
    .resent_on_wire = true,
    .up = up,
    .fabric = fabric,
    .rep = run_rep,
    .failed = failed,
    .quiet = quiet,
    .stats = stats,
    .conn_counts = NULL, /* rxe counts per port, not per QP */
    .counted_of = counted_of,
    .harness_losses = harness_losses,
    .down = down,
};
