/* `jctlab agent`: a rank on the verbs transport, driven by the orchestrator
 * over a control channel (the protocol is in agents.h).
 *
 *   jctlab agent --control PATH --rank R --nranks N [--mtu M] [--netdev IF]
 *   jctlab agent --listen [ADDR:]PORT --rank R --nranks N --no-net [--addr IPV4]
 *
 * In a lab VM (lab.h; scripts/lab-init starts it) it first makes the VM a
 * rank: NETDEV (eth0) gets rank R's address and neighbours (topo.h) and an
 * rxe device "rxe0" on top of it (the RDMA netlink request `rdma link add
 * rxe0 type rxe netdev eth0` sends); then says hello and serves setup,
 * connect, run, reset (back to before setup, for the next run of a kept
 * lab), hello (said again) and quit. `--no-net` skips the network part,
 * for hosts whose RDMA NIC is already set up; there `--listen` takes the
 * orchestrator's TCP connection instead of a device (`jctlab run
 * --agents`), and `--addr` is the RDMA NIC's IPv4 address (default: rank
 * R's lab address, 198.18.0.R+1).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "harness/transport/verbs/agent_nic.h"
#include "agent_exec.h"
#include "harness/lab/agent_guard.h"
#include "harness/lab/agent_host.h"
#include "harness/lab/agent_link.h"
#include "harness/lab/agent_qdisc.h"
#include "harness/lab/agents.h"
#include "commands.h"
#include "common/errf.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "jctlab/schedule.h"
#include "jctlab/topo.h"
#include "harness/fabric/hostdrop.h"
#include "harness/fabric/topo_link.h"
#include "harness/base/units.h"
#include "harness/transport/rdma_sysfs.h"
#include "harness/transport/verbs/verbs.h"

#define bad(...) jct__cmd_bad("agent", __VA_ARGS__)
#define RXE_NAME "rxe0"

typedef struct {
  const char *control, *netdev, *listen, *addr;
  uint64_t rank, nranks, mtu;
  bool no_net;
} args_t;

typedef struct {
  args_t a;
  uv_loop_t loop;
  jct_clock_t clock;
  jct_timer_t exec_timer;
  int fd;
  uv_poll_t poll;
  char *buf;
  size_t len, cap;
  jct_schedule_t *sched;
  jct__verbs_t *verbs;
  jct__agent_pfc_t *pfc; /* honours PFC on the data priority (lab VMs) */
  jct__agent_host_t *host; /* injectors at=host:RANK on this rank (agent_host.h) */
  bool want_connected;
  jct_exec_t *exec;
  uint64_t run_ns;
  json_int_t rep;
  jct_rdma_opts_t rdma; /* the setup's RDMA settings (run.h) */
  jct_dev_counters_t before;
  uint64_t paused_before_ns;
  bool quit;
  int status;
} agent_t;

/* ---- the control channel ----------------------------------------------- */

static void send_msg(agent_t *g, json_t *m) {
  char *t = m ? json_dumps(m, JSON_COMPACT) : NULL;
  json_decref(m);
  if (!t) return;
  size_t len = strlen(t);
  t[len] = '\n'; /* json_dumps leaves room for its NUL: overwrite it */
  const char *p = t;
  size_t left = len + 1;
  while (left) {
    ssize_t w = write(g->fd, p, left);
    if (w > 0) {
      p += w;
      left -= (size_t)w;
    } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      g->quit = true;
      g->status = 1;
      break;
    } else {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  free(t);
}

static void send_error(agent_t *g, const char *msg, const char *why) {
  fprintf(stderr, "jctlab agent: %s\n", why);
  send_msg(g, json_pack("{s:s,s:s}", "msg", msg, "why", why));
}

/* A setting this host's device cannot honour: the user's input. */
static void send_bad_input(agent_t *g, const char *why) {
  fprintf(stderr, "jctlab agent: %s\n", why);
  send_msg(g, json_pack("{s:s,s:s,s:b}", "msg", "error", "why", why, "bad_input", 1));
}

/* The setup's RDMA settings (agents.h) into g->rdma, their form checked. */
static int read_rdma(agent_t *g, json_t *m, char *err, size_t errlen) {
  jct_rdma_opts_t *r = &g->rdma;
  memset(r, 0, sizeof *r);
  json_t *d = json_object_get(m, "device"), *p = json_object_get(m, "port"),
         *gi = json_object_get(m, "gid_index"), *c = json_object_get(m, "counters");
  int rc = 0;
  if (json_is_string(d)) rc = jct__rdma_set_device(r, json_string_value(d), err, errlen);
  if (!rc && json_is_integer(p)) {
    if (json_integer_value(p) < 1 || json_integer_value(p) > 254)
      return jct__errf(err, errlen, JCT_EINVAL, "port %lld is not 1 to 254",
                       (long long)json_integer_value(p));
    r->port = (uint8_t)json_integer_value(p);
  }
  if (!rc && json_is_integer(gi)) {
    if (json_integer_value(gi) < 0 || json_integer_value(gi) > 65535)
      return jct__errf(err, errlen, JCT_EINVAL, "gid_index %lld is out of range",
                       (long long)json_integer_value(gi));
    r->gid_index = (uint16_t)json_integer_value(gi);
    r->has_gid_index = true;
  }
  size_t i;
  json_t *name;
  json_array_foreach(c, i, name) {
    if (rc) break;
    rc = json_is_string(name) ? jct__rdma_add_counters(r, json_string_value(name), err, errlen)
                              : jct__errf(err, errlen, JCT_EINVAL, "counters: not a name");
  }
  return rc;
}

/* ---- the messages ------------------------------------------------------- */

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns);

static void arm(agent_t *g) {
  if (!g->exec) return;
  uint64_t d = jct_exec_next_deadline_ns(g->exec);
  if (d == UINT64_MAX)
    jct_timer_stop(&g->clock, &g->exec_timer);
  else if (!jct_timer_active(&g->exec_timer) || g->exec_timer.due_ns != d)
    jct_timer_start(&g->clock, &g->exec_timer, d, on_exec_timer);
}

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns) {
  agent_t *g = t->data;
  if (g->exec) jct_exec_on_timer(g->exec, now_ns);
}

/* Free what setups made: the connections, the PFC responder, the host
 * programs (off the device, as found) and the schedule. */
static void setup_free(agent_t *g) {
  jct__verbs_free(g->verbs);
  g->verbs = NULL;
  jct__agent_pfc_free(g->pfc);
  g->pfc = NULL;
  jct__agent_host_free(g->host);
  g->host = NULL;
  jct_schedule_free(g->sched);
  g->sched = NULL;
}

/* The ranks' data addresses, when the setup gives them ("addrs": one IPv4
 * address per rank), into *out (NULL: none given). Returns NULL, or why
 * they cannot be read. */
static const char *read_addrs(json_t *m, uint32_t nranks, uint32_t **out) {
  *out = NULL;
  json_t *aj = json_object_get(m, "addrs");
  if (!json_is_array(aj)) return NULL;
  uint32_t *addrs;
  if (json_array_size(aj) != nranks || !(addrs = calloc(nranks, sizeof *addrs)))
    return "setup: addrs is not one IPv4 address per rank";
  for (size_t i = 0; i < nranks; i++) {
    const char *a = json_string_value(json_array_get(aj, i));
    struct in_addr in;
    if (!a || inet_pton(AF_INET, a, &in) != 1) {
      free(addrs);
      return "setup: addrs holds something that is not an IPv4 address";
    }
    addrs[i] = in.s_addr;
  }
  *out = addrs;
  return NULL;
}

static void do_setup(agent_t *g, json_t *m) {
  char err[512];
  if (g->verbs) {
    send_error(g, "error", "setup twice: this agent's connections are set up already");
    return;
  }
  setup_free(g); /* what a setup that failed left: the agent serves on after bad input */
  json_t *sj = json_object_get(m, "schedule");
  char *text = sj ? json_dumps(sj, JSON_COMPACT) : NULL;
  int rc = text ? jct_schedule_loads(&g->sched, text, strlen(text), err, sizeof err) : JCT_EINVAL;
  free(text);
  if (rc) {
    send_error(g, "error", sj ? err : "setup without a schedule");
    return;
  }
  if (json_integer_value(json_object_get(m, "rank")) != (json_int_t)g->a.rank ||
      g->sched->nranks != g->a.nranks) {
    send_error(g, "error", "setup for another rank or another number of ranks");
    return;
  }
  uint32_t *addrs;
  const char *why = read_addrs(m, g->sched->nranks, &addrs);
  if (why) {
    send_error(g, "error", why);
    return;
  }
  /* The settings' form, and a device that is not here at all, before
   * anything is made (rdma_cm would only say it found no device). */
  jct_rdma_opts_t dev_only = {0};
  if (!(rc = read_rdma(g, m, err, sizeof err)) && g->rdma.device[0]) {
    memcpy(dev_only.device, g->rdma.device, sizeof dev_only.device);
    rc = jct__rdma_check(NULL, &dev_only, dev_only.device, 0, 0, err, sizeof err);
  }
  if (rc) {
    send_bad_input(g, err); /* the orchestrator names the rank's agent */
    goto out;
  }
  /* The rank's own address: the GID gid_index must hold (rdma_sysfs.h). */
  uint32_t my_addr_be;
  if (addrs) {
    my_addr_be = addrs[g->a.rank];
  } else {
    jct_addr_t ra = jct_rank_ipv4((uint32_t)g->a.rank);
    memcpy(&my_addr_be, ra.bytes, sizeof my_addr_be);
  }
  uint64_t rate = (uint64_t)json_integer_value(json_object_get(m, "rate_bps"));
  if (!g->a.no_net && rate &&
      ((rc = jct__agent_shape(g->a.netdev, rate, (uint32_t)g->a.mtu, false, err, sizeof err)) ||
       (rc = jct__agent_shape_per_qp(g->a.netdev, err, sizeof err)) ||
       (rc = jct__agent_pfc_new(&g->pfc, &g->loop, &g->clock, g->a.netdev,
                                (uint8_t)(json_integer_value(json_object_get(m, "tos")) >> 5), rate,
                                (uint32_t)g->a.mtu, err, sizeof err)))) {
    send_error(g, "error", err);
    goto out;
  }
  /* Injectors at this host: their programs on the device rxe sends by. */
  char control_if[IF_NAMESIZE];
  bool on_if = jct__agent_link_socket_if(g->fd, control_if, sizeof control_if);
  if ((rc = jct__agent_host_new(&g->host, json_object_get(m, "host_drops"), g->a.netdev,
                                on_if ? control_if : NULL, !g->a.no_net && rate, &g->clock, err,
                                sizeof err))) {
    if (rc == JCT_EINVAL) /* a spec this host cannot honour (delay without fq): the user's */
      send_bad_input(g, err);
    else
      send_error(g, "error", err);
    goto out;
  }
  jct__verbs_opts_t vo = {.timeout = (uint8_t)json_integer_value(json_object_get(m, "timeout")),
                         .cts_timeout =
                             (uint8_t)json_integer_value(json_object_get(m, "cts_timeout")),
                         .retry_cnt = (uint8_t)json_integer_value(json_object_get(m, "retry_cnt")),
                         .tos = (uint8_t)json_integer_value(json_object_get(m, "tos")),
                         .slots = (uint32_t)json_integer_value(json_object_get(m, "slots")),
                         .port = JCT_AGENT_PORT,
                         .addrs_be = addrs};
  if ((rc = jct__verbs_new(&g->verbs, &g->loop, g->sched, (uint32_t)g->a.rank, &vo, err,
                           sizeof err))) {
    send_error(g, "error", err);
    goto out;
  }
  /* The device and port rdma_cm bound the address to, against the settings. */
  if (jct__rdma_check(NULL, &g->rdma, jct__verbs_device(g->verbs), jct__verbs_port(g->verbs),
                      my_addr_be, err, sizeof err)) {
    jct__verbs_free(g->verbs); /* not listening for a setup that failed */
    g->verbs = NULL;
    send_bad_input(g, err);
    goto out;
  }
  send_msg(g, json_pack("{s:s,s:s}", "msg", "listening", "dev", jct__verbs_device(g->verbs)));
out:
  free(addrs);
}

static void do_run(agent_t *g, json_t *m) {
  if (!g->verbs || !jct__verbs_connected(g->verbs)) {
    send_error(g, "failed", "run before the connections are up");
    return;
  }
  g->rep = json_integer_value(json_object_get(m, "rep"));
  jct__rdma_counters(NULL, jct__verbs_device(g->verbs), jct__verbs_port(g->verbs), &g->rdma,
                     &g->before);
  g->paused_before_ns = jct__agent_pfc_paused_ns(g->pfc);
  jct_exec_hooks_t hooks = jct__verbs_hooks(g->verbs);
  if (jct_exec_new(&g->exec, g->sched, 0, &hooks)) {
    send_error(g, "failed", "out of memory");
    return;
  }
  g->run_ns = jct_now_ns();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* the programs' clock (bpf_ktime_get_ns) */
  if (jct__agent_host_start(g->host, json_is_true(json_object_get(m, "faulted")),
                            (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                            g->run_ns)) {
    send_error(g, "failed", "cannot restart the injectors' programs at this host");
    return;
  }
  jct__verbs_attach(g->verbs, g->exec);
  if (jct_exec_start(g->exec, g->run_ns)) send_error(g, "failed", "the first sends failed");
  arm(g);
}

/* Every op this rank receives is done and every send it posted completed. */
static bool run_done(agent_t *g) {
  if (jct__verbs_outstanding(g->verbs)) return false;
  for (uint32_t i = 0; i < g->sched->nops; i++) {
    const jct_conn_t *c = &g->sched->conns[g->sched->ops[i].conn];
    const jct_op_timing_t *t = jct_exec_timing(g->exec, i);
    if (c->dst == g->a.rank && !t->done_ns) return false;
    if (c->src == g->a.rank && !t->start_ns) return false;
  }
  return true;
}

/* t from the run's start; -1: it did not happen. 0 is a time: an op whose
 * clear-to-send came before this agent's run message (the control
 * channels of loaded TCG VMs are tens of ms apart) starts at the run's
 * very start, and a 0 that meant "not reported" made such a repetition
 * invalid ("op 0 was not reported sent and received"). */
static json_int_t rel(uint64_t t, uint64_t base) {
  if (!t) return -1;
  return t > base ? (json_int_t)(t - base) : 0;
}

static void finish_run(agent_t *g) {
  json_t *ops = json_array();
  for (uint32_t i = 0; i < g->sched->nops; i++) {
    const jct_conn_t *c = &g->sched->conns[g->sched->ops[i].conn];
    const jct_op_timing_t *t = jct_exec_timing(g->exec, i);
    bool src = c->src == g->a.rank, dst = c->dst == g->a.rank;
    if (!src && !dst) continue;
    json_array_append_new(ops, json_pack("[I,I,I,I]", (json_int_t)i,
                                         src ? rel(t->ready_ns, g->run_ns) : -1,
                                         src ? rel(t->start_ns, g->run_ns) : -1,
                                         dst ? rel(t->done_ns, g->run_ns) : -1));
  }
  jct_dev_counters_t after, moved;
  jct__rdma_counters(NULL, jct__verbs_device(g->verbs), jct__verbs_port(g->verbs), &g->rdma,
                     &after);
  jct__rdma_counters_delta(&g->before, &after, &moved);
  json_t *counters = json_object();
  for (uint32_t i = 0; i < moved.n; i++)
    json_object_set_new(counters, moved.c[i].name, json_integer((json_int_t)moved.c[i].value));
  /* Not rxe's: how long this agent's NIC honoured PFC pauses. */
  if (g->pfc)
    json_object_set_new(
        counters, "nic_paused_ns",
        json_integer((json_int_t)(jct__agent_pfc_paused_ns(g->pfc) - g->paused_before_ns)));
  jct__verbs_attach(g->verbs, NULL);
  jct_exec_free(g->exec);
  g->exec = NULL;
  jct_timer_stop(&g->clock, &g->exec_timer);
  json_t *done = json_pack("{s:s,s:I,s:o,s:o}", "msg", "done", "rep", g->rep, "ops", ops,
                           "counters", counters);
  if (done && g->host) json_object_set_new(done, "host_drops", jct__agent_host_done(g->host));
  send_msg(g, done);
}

/* Who this agent is: once up, and again when asked (a kept lab, agents.h). */
static void send_hello(agent_t *g) {
  struct utsname u;
  uname(&u);
  char addr[32];
  jct_addr_t a4 = jct_rank_ipv4(g->a.rank);
  jct_addr_str(&a4, addr, sizeof addr);
  if (g->a.addr) snprintf(addr, sizeof addr, "%s", g->a.addr);
  send_msg(g, json_pack("{s:s,s:I,s:s,s:s,s:s,s:s}", "msg", "hello", "rank", (json_int_t)g->a.rank,
                        "kernel", u.release, "dev", g->a.no_net ? "" : RXE_NAME, "netdev",
                        g->a.netdev, "addr", addr));
}

static void on_message(agent_t *g, json_t *m) {
  const char *msg = json_string_value(json_object_get(m, "msg"));
  if (!msg) {
    send_error(g, "error", "a line without \"msg\"");
  } else if (!strcmp(msg, "setup")) {
    do_setup(g, m);
  } else if (!strcmp(msg, "connect")) {
    if (!g->verbs || jct__verbs_connect(g->verbs))
      send_error(g, "error", "connect before setup, or it failed");
    else
      g->want_connected = true;
  } else if (!strcmp(msg, "run")) {
    do_run(g, m);

  } else if (!strcmp(msg, "reset")) {
    /* Back to before setup, for the next run on this VM (agents.h): what
     * the setup made is freed (the host programs off the device), and a
     * repetition still running is abandoned with it. */
    if (g->exec) {
      jct__verbs_attach(g->verbs, NULL);
      jct_exec_free(g->exec);
      g->exec = NULL;
      jct_timer_stop(&g->clock, &g->exec_timer);
    }
    g->want_connected = false;
    setup_free(g);
    send_msg(g, json_pack("{s:s}", "msg", "reset"));
  } else if (!strcmp(msg, "hello")) {
    send_hello(g);
  } else if (!strcmp(msg, "quit")) {
    send_msg(g, json_pack("{s:s}", "msg", "bye"));
    g->quit = true;
  } else {
    char why[96];
    snprintf(why, sizeof why, "unknown message \"%.40s\"", msg);
    send_error(g, "error", why);
  }
}

static void on_control(uv_poll_t *h, int status, int events) {
  (void)status, (void)events;
  agent_t *g = h->data;
  for (;;) {
    if (g->cap - g->len < 4096) {
      char *b = realloc(g->buf, g->cap ? g->cap * 2 : 65536);
      if (!b) {
        g->quit = true;
        g->status = 1;
        return;
      }
      g->buf = b;
      g->cap = g->cap ? g->cap * 2 : 65536;
    }
    ssize_t r = read(g->fd, g->buf + g->len, g->cap - g->len);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      g->quit = true; /* the orchestrator is gone */
      return;
    }
    if (r < 0) break;
    g->len += (size_t)r;
  }
  size_t start = 0;
  for (size_t i = 0; i < g->len; i++) {
    if (g->buf[i] != '\n') continue;
    json_error_t je;
    json_t *m = json_loadb(g->buf + start, i - start, 0, &je);
    if (m && json_is_object(m))
      on_message(g, m);
    else
      send_error(g, "error", "a line that is not a JSON object");
    json_decref(m);
    start = i + 1;
  }
  memmove(g->buf, g->buf + start, g->len - start);
  g->len -= start;
}

/* After every loop turn: answer what became true. */
static void check(agent_t *g) {
  char why[300];
  if (g->verbs && jct__verbs_failed(g->verbs, why, sizeof why)) {
    send_error(g, g->exec ? "failed" : "error", why);
    g->quit = true;
    g->status = 1;
    return;
  }
  if (g->want_connected && jct__verbs_connected(g->verbs)) {
    g->want_connected = false;
    uint32_t qps = 0;
    for (uint32_t c = 0; c < g->sched->nconns; c++)
      qps += g->sched->conns[c].src == g->a.rank || g->sched->conns[c].dst == g->a.rank;
    send_msg(g, json_pack("{s:s,s:I}", "msg", "connected", "qps", (json_int_t)qps));
  }
  if (g->exec && run_done(g)) finish_run(g);
  arm(g);
}

/* --listen [ADDR:]PORT: wait for the orchestrator's one TCP connection.
 * Returns the connected fd (nonblocking), or -1 with the reason on stderr. */
static int accept_orchestrator(const char *spec) {
  char host[64] = "0.0.0.0";
  const char *colon = strrchr(spec, ':'), *port = colon ? colon + 1 : spec;
  if (colon) snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  char *end;
  unsigned long p = strtoul(port, &end, 10);
  if (*end || !p || p > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
    fprintf(stderr, "jctlab agent: --listen %s: not [IPV4:]PORT\n", spec);
    return -1;
  }
  sa.sin_port = htons((uint16_t)p);
  int one = 1, ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 1)) {
    fprintf(stderr, "jctlab agent: --listen %s: %s\n", spec, strerror(errno));
    if (ls >= 0) close(ls);
    return -1;
  }
  fprintf(stderr, "jctlab agent: waiting for the orchestrator on %s\n", spec);
  int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) fprintf(stderr, "jctlab agent: accept: %s\n", strerror(errno));
  close(ls);
  return fd;
}

static int parse(int argc, char **argv, args_t *a) {
  a->netdev = "eth0";
  a->mtu = JCT_TOPO_MTU_DEFAULT;
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(w, "--help") || !strcmp(w, "-h")) {
      printf("usage: jctlab agent --control PATH --rank R --nranks N [--mtu M] [--netdev IF]\n"
             "       jctlab agent --listen [ADDR:]PORT --rank R --nranks N --no-net [--addr IPV4]\n"
             "\nA rank on the verbs transport, driven by the orchestrator over PATH (a lab VM's\n"
             "virtio-serial port: jctlab starts it itself in the lab's VMs) or over the one TCP\n"
             "connection it accepts on PORT (a host with rxe or an RDMA NIC already set up, its\n"
             "data address --addr: `jctlab run --transport verbs --agents HOST:PORT,...`).\n");
      return 0;
    }
    if (!strcmp(w, "--no-net")) {
      a->no_net = true;
      continue;
    }
    if (!v) return bad("%s needs a value", w);
    i++;
    if (!strcmp(w, "--control"))
      a->control = v;
    else if (!strcmp(w, "--listen"))
      a->listen = v;
    else if (!strcmp(w, "--addr"))
      a->addr = v;
    else if (!strcmp(w, "--netdev"))
      a->netdev = v;
    else if (!strcmp(w, "--rank") && !jct__parse_count(v, 65534, &a->rank))
      ;
    else if (!strcmp(w, "--nranks") && !jct__parse_count(v, 65535, &a->nranks))
      ;
    else if (!strcmp(w, "--mtu") && !jct__parse_count(v, 65535, &a->mtu))
      ;
    else
      return bad("'%s %s' is not an option this command takes", w, v);
  }
  if (!a->control == !a->listen) return bad("give one of --control PATH and --listen [ADDR:]PORT");
  if (a->listen && !a->no_net) return bad("--listen goes with --no-net (a host's NIC is set up)");
  struct in_addr in;
  if (a->addr && inet_pton(AF_INET, a->addr, &in) != 1)
    return bad("--addr %s: not an IPv4 address", a->addr);
  if (a->nranks < 2 || a->rank >= a->nranks) return bad("--rank must be below --nranks (>= 2)");
  return -1;
}

/* What a killed agent left on this host's device: its drop programs'
 * fallback filters (hostdrop.h; a tcx link goes with its process), and
 * its fq when its guard died too (agent_qdisc.h). One agent serves a
 * device, so every jctlab filter or fq on it is a dead one's. */
static void clear_stale(const char *netdev) {
  int ifindex = (int)if_nametoindex(netdev);
  char err[256];
  int n = ifindex ? jct__hostdrop_clear_stale(ifindex, err, sizeof err) : 0;
  if (n < 0)
    fprintf(stderr, "jctlab agent: %s: %s\n", netdev, err);
  else if (n > 0)
    fprintf(stderr, "jctlab agent: removed %d tc filter%s a killed agent left on %s's egress\n", n,
            n == 1 ? "" : "s", netdev);
  if (!ifindex) return;
  if ((n = jct__agent_qdisc_clear_stale(netdev, err, sizeof err)) < 0)
    fprintf(stderr, "jctlab agent: %s\n", err);
  else if (n > 0)
    fprintf(stderr, "jctlab agent: removed the fq qdisc a killed agent left on %s\n", netdev);
}

int jct__cmd_agent(int argc, char **argv) {
  agent_t *g = calloc(1, sizeof *g);
  if (!g) return 1;
  int st = parse(argc, argv, &g->a);
  if (st >= 0) {
    free(g);
    return st;
  }
  char lerr[512];
  if (jct__verbs_load(lerr, sizeof lerr)) {
    fprintf(stderr, "jctlab agent: %s\n", lerr);
    free(g);
    return 2;
  }
  clear_stale(g->a.netdev); /* before waiting: a stale filter drops meanwhile */
  g->fd = g->a.listen ? accept_orchestrator(g->a.listen)
                      : open(g->a.control, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (g->fd < 0) {
    if (g->a.control) fprintf(stderr, "jctlab agent: %s: %s\n", g->a.control, strerror(errno));
    free(g);
    return 2;
  }
  char err[512] = "";
  int rc = 0;
  if (!g->a.no_net && ((rc = jct__topo_configure_iface(g->a.rank, g->a.nranks, g->a.netdev,
                                                       (uint32_t)g->a.mtu, err, sizeof err)) ||
                       (rc = jct__agent_rxe_add(RXE_NAME, g->a.netdev, err, sizeof err)) ||
                       (rc = jct__agent_rxe_wait_active(RXE_NAME, err, sizeof err)))) {
    send_error(g, "error", err);
    close(g->fd);
    free(g);
    return 1;
  }
  /* `jctlab lab-exec`: this VM runs a program in the agent's place. */
  char exec_path[1024];
  if (g->a.control && jct__agent_exec_wanted(exec_path, sizeof exec_path)) {
    const char *control = g->a.control; /* argv's */
    close(g->fd);
    free(g);
    return jct__agent_exec(control, exec_path);
  }
  uv_loop_init(&g->loop);
  jct_clock_init(&g->clock, &g->loop);
  g->exec_timer.data = g;
  uv_poll_init(&g->loop, &g->poll, g->fd);
  g->poll.data = g;
  uv_poll_start(&g->poll, UV_READABLE, on_control);
  send_hello(g);
  while (!g->quit) {
    uv_run(&g->loop, UV_RUN_ONCE);
    check(g);
  }
  int status = g->status;
  setup_free(g);
  jct__agent_guard_stop(); /* holding nothing now */
  uv_close((uv_handle_t *)&g->poll, NULL);
  jct_clock_close(&g->clock, NULL);
  uv_run(&g->loop, UV_RUN_NOWAIT);
  uv_loop_close(&g->loop);
  close(g->fd);
  free(g->buf);
  free(g);
  return status;
}
