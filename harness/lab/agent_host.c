/* An agent's drop injectors at its own host (agent_host.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_host.h"
#include "agent_link.h"
#include "agent_qdisc.h"
#include "common/errf.h"
#include "common/rng.h"
#include "harness/base/netlink.h"
#include "harness/fabric/hostdrop.h"
#include "harness/transport/verbs/agent_nic.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"

#define MAX_HOST_DROPS 16
/* A storm's frames logged per repetition (link=40gbit sends 2,384 a
 * second; 16,384 of them keep the done message near 400 KB, under the
 * control channel's 4 MiB lines); past this they are counted in
 * frames_lost instead. */
#define MAX_STORM_FRAMES 16384

typedef struct {
  uint32_t index; /* the orchestrator's injector index */
  jct_injector_t *inj;
  jct__hostdrop_t *prog; /* drop, delay: its program; pause: NULL */
  json_t *frames;        /* pause: [[t_ns, bytes, sent], ...] this repetition */
  uint64_t frames_lost;  /* pause: frames past MAX_STORM_FRAMES, not in frames */
  jct__agent_link_t *link; /* flap: the netdev's link, and its guard */
  json_t *links;           /* flap: [[t_ns, up], ...] this repetition */
  uint64_t down_since_ns;  /* flap: when the link went down (emulated), 0: up */
  /* The setup's dilation: a drop's or a delay's times go x tdf to the
   * kernel; a storm or a flap runs in emulated time (emu_of, wall_of). */
  double tdf;
} host_drop_t;

struct jct__agent_host {
  host_drop_t d[MAX_HOST_DROPS];
  uint32_t n;
  uint64_t start_ns;       /* the repetition's, CLOCK_MONOTONIC */
  uint64_t clock_start_ns; /* the same on the agent's clock, the storms' */
  int ifindex;
  jct__agent_qdisc_t fq_saved; /* a delay's: the root before its fq (key 0: none) */
  /* pause: its storm timed here, on the agent's clock, its frames sent
   * from the interface on a packet socket. */
  jct_clock_t *clock;
  jct_timer_t timer;
  char netdev[IF_NAMESIZE]; /* a copy: the caller's may not outlive h */
  int pkt_fd; /* -1 until the first frame */
  bool storming;
};

static int send_frame(int *fd, const char *netdev, const uint8_t *frame, size_t len, char *err,
                      size_t errlen);

/* A storm's or a flap's emulated time at wall_ns of the agent's clock
 * (undilated): from the repetition's start at a tdf-th of the pace, as the
 * orchestrator's clock runs under --tdf F. tdf 1: wall_ns itself. */
static uint64_t emu_of(const jct__agent_host_t *h, const host_drop_t *d, uint64_t wall_ns) {
  if (d->tdf <= 1 || wall_ns <= h->clock_start_ns) return wall_ns;
  return h->clock_start_ns + (uint64_t)((double)(wall_ns - h->clock_start_ns) / d->tdf);
}

/* The agent's clock's instant at which emulated emu_ns comes (rounded up,
 * so emu_of it is not short of emu_ns); UINT64_MAX stays so. */
static uint64_t wall_of(const jct__agent_host_t *h, const host_drop_t *d, uint64_t emu_ns) {
  if (d->tdf <= 1 || emu_ns == UINT64_MAX || emu_ns <= h->clock_start_ns) return emu_ns;
  double w = ceil((double)(emu_ns - h->clock_start_ns) * d->tdf);
  return w >= (double)(UINT64_MAX - h->clock_start_ns) ? UINT64_MAX
                                                       : h->clock_start_ns + (uint64_t)w;
}

/* Before a delay's fq: the root as it is (the shaper's tbf, or what the
 * host had), kept by the agent's guard; then fq, under the shaper's tbf
 * (its class 1:1) or as the root. A kernel without fq: JCT_EINVAL. */
static int fq_for_delay(jct__agent_host_t *h, bool shaped, char *err, size_t errlen) {
  uint32_t parent = shaped ? TC_H_MAKE(1u << 16, 1) : TC_H_ROOT;
  int rc = jct__agent_qdisc_save(&h->fq_saved, h->netdev, parent, JCT__GUARD_FQ, err, errlen);
  if (rc) return rc;
  char why[200];
  if (jct__agent_put_fq(h->ifindex, parent, JCT__AGENT_FQ_HANDLE, "add qdisc fq", why, sizeof why))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "delay at a host needs the fq qdisc for earliest-departure-time, which this "
                     "kernel refused on %s (%s)",
                     h->netdev, why);
  return 0;
}

void jct__agent_host_free(jct__agent_host_t *h) {
  if (!h) return;
  jct_timer_stop(h->clock, &h->timer);
  if (h->pkt_fd >= 0) close(h->pkt_fd);
  char err[256]; /* the root as before the delay's fq, and the guard told so */
  if (jct__agent_qdisc_restore(&h->fq_saved, err, sizeof err))
    fprintf(stderr, "jctlab agent: %s\n", err);
  for (uint32_t i = 0; i < h->n; i++) {
    jct__agent_link_free(h->d[i].link); /* up again, its guard gone */
    json_decref(h->d[i].links);
    jct__hostdrop_detach(h->d[i].prog, false);
    jct_injector_free(h->d[i].inj);
    json_decref(h->d[i].frames);
  }
  free(h);
}

static int add_one(jct__agent_host_t *h, const json_t *e, int ifindex, const char *netdev,
                   const char *control_if, char *err, size_t errlen) {
  const char *spec = json_string_value(json_object_get(e, "spec"));
  json_t *idx = json_object_get(e, "index"), *rs = json_object_get(e, "run_seed"),
         *seed = json_object_get(e, "seed");
  if (!spec || !json_is_integer(idx) || !json_is_integer(rs) || !json_is_integer(seed))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "setup: a host_drops entry without spec, index, run_seed and seed");
  if (h->n == MAX_HOST_DROPS)
    return jct__errf(err, errlen, JCT_EINVAL, "setup: more than %d injectors at one host",
                     MAX_HOST_DROPS);
  host_drop_t *d = &h->d[h->n];
  d->index = (uint32_t)json_integer_value(idx);
  json_t *tdf = json_object_get(e, "tdf"); /* absent: undilated */
  d->tdf = json_is_number(tdf) ? json_number_value(tdf) : 1;
  int rc = jct_injector_new(&d->inj, spec, (uint64_t)json_integer_value(rs), d->index, err, errlen);
  if (rc) return rc;
  h->n++; /* freed with h from here on */
  if (d->inj->seed != (uint64_t)json_integer_value(seed))
    return jct__errf(err, errlen, JCT_EINVAL, "%s: the agent drew seed %llu, not the run's %llu",
                     spec, (unsigned long long)d->inj->seed,
                     (unsigned long long)json_integer_value(seed));
  if (d->inj->ops->host_frames) return 0; /* pause: frames, no program */
  if (d->inj->ops->host_link) {           /* flap: the netdev's link, from here */
    if (control_if && !strcmp(control_if, netdev))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "%s: %s carries this agent's control connection, which a flap would "
                       "cut: give the agent its RoCE netdev (--netdev) and reach it over "
                       "another interface",
                       spec, netdev);
    return jct__agent_link_new(&d->link, netdev, err, errlen);
  }
  struct jct_kdrop_cfg cfg;
  if (!d->inj->ops->kernel || (rc = d->inj->ops->kernel(d->inj, &cfg, err, errlen)) < 0)
    return rc < 0 ? rc
                  : jct__errf(err, errlen, JCT_EINVAL, "%s: not a kind a host's kernel runs", spec);
  char label[160];
  snprintf(label, sizeof label, "%s (%s)", spec, netdev);
  if ((rc = jct__hostdrop_attach(&d->prog, ifindex, d->index + 1, label, err, errlen)) < 0)
    return rc;
  /* The log says what a kill would leave (hostdrop.h). */
  if (!strcmp(jct__hostdrop_attach_kind(d->prog), "tcx"))
    fprintf(stderr, "jctlab agent: %s on %s's egress by a tcx link (gone with this agent)\n",
            spec, netdev);
  else
    fprintf(stderr,
            "jctlab agent: %s on %s's egress by a tc filter (no tcx in this kernel): "
            "inert within its lease if this agent is killed\n",
            spec, netdev);
  return 0;
}

int jct__agent_host_new(jct__agent_host_t **out, const json_t *list, const char *netdev,
                        const char *control_if, bool shaped, jct_clock_t *clock, char *err,
                        size_t errlen) {
  *out = NULL;
  if (!json_is_array(list) || json_array_size(list) == 0) return 0;
  int ifindex = (int)if_nametoindex(netdev);
  if (!ifindex)
    return jct__errf(err, errlen, JCT_EINVAL, "at=host: no network device %s here", netdev);
  jct__agent_host_t *h = calloc(1, sizeof *h);
  if (!h) return JCT_ENOMEM;
  h->ifindex = ifindex;
  h->clock = clock;
  snprintf(h->netdev, sizeof h->netdev, "%s", netdev);
  h->pkt_fd = -1;
  h->timer.data = h;
  size_t k;
  const json_t *e;
  bool delay = false;
  json_array_foreach(list, k, e) {
    int rc = add_one(h, e, ifindex, netdev, control_if, err, errlen);
    if (rc) {
      jct__agent_host_free(h);
      return rc;
    }
    delay |= strcmp(h->d[h->n - 1].inj->ops->name, "delay") == 0;
  }
  int rc = delay ? fq_for_delay(h, shaped, err, errlen) : 0; /* a delay's stamps need fq */
  if (rc) {
    jct__agent_host_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

/* A storm frame, from this host's interface; kept for the done message,
 * whose frames become the orchestrator's fault-log lines. Its time is
 * when it left (the storm's timer fires late in a loaded TCG VM), not
 * when it was due (now_ns), in emulated time. */
static void emit(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                 uint64_t now_ns) {
  (void)port, (void)now_ns;
  jct__agent_host_t *h = inj->data;
  char err[160];
  bool sent = send_frame(&h->pkt_fd, h->netdev, frame, len, err, sizeof err) == 0;
  if (!sent) {
    inj->stats.dropped++; /* generated, but this kernel refused to send it */
    fprintf(stderr, "jctlab agent: %s\n", err);
  }
  for (uint32_t i = 0; i < h->n; i++) {
    host_drop_t *d = &h->d[i];
    if (d->inj != inj) continue;
    uint64_t left = emu_of(h, d, jct_now_ns());
    json_int_t t = left > h->clock_start_ns ? (json_int_t)(left - h->clock_start_ns) : 0;
    if (json_array_size(d->frames) < MAX_STORM_FRAMES)
      json_array_append_new(d->frames, json_pack("[I,I,b]", t, (json_int_t)len, sent));
    else
      d->frames_lost++;
  }
}

/* A flap's link set up or down at now_ns (emulated: emu_of the agent's
 * clock), the change kept for the done message. */
static void set_link(jct__agent_host_t *h, host_drop_t *d, bool up, uint64_t now_ns) {
  if (up == !d->down_since_ns) return;
  char err[200];
  if (jct__agent_link_set(d->link, up, err, sizeof err)) {
    fprintf(stderr, "jctlab agent: %s\n", err);
    return;
  }
  if (up) {
    d->inj->stats.link_down_ns += now_ns - d->down_since_ns;
    d->down_since_ns = 0;
  } else {
    d->down_since_ns = now_ns ? now_ns : 1;
  }
  json_int_t t = now_ns > h->clock_start_ns ? (json_int_t)(now_ns - h->clock_start_ns) : 0;
  json_array_append_new(d->links, json_pack("[I,b]", t, up));
}

static void on_storm_timer(jct_timer_t *t, uint64_t now_ns) {
  jct__agent_host_t *h = t->data;
  uint64_t next = UINT64_MAX;
  for (uint32_t i = 0; i < h->n; i++) {
    host_drop_t *d = &h->d[i];
    jct_injector_t *inj = d->inj;
    if (!inj->ops->host_frames && !inj->ops->host_link) continue;
    uint64_t emu = emu_of(h, d, now_ns); /* the injector's time, as on the switch */
    if (inj->ops->host_link && inj->ops->next_deadline_ns(inj) <= emu) {
      uint8_t none[1] = {0}; /* the state due now (flap.c) */
      jct_frame_t f = {.data = none, .len = 0, .out = true};
      set_link(h, d, inj->ops->process(inj, &f, emu) != JCT_DROP, emu);
    } else if (inj->ops->next_deadline_ns(inj) <= emu) {
      jct_injector_tick(inj, emu, emit);
    }
    uint64_t due = wall_of(h, d, inj->ops->next_deadline_ns(inj)); /* on the agent's clock */
    if (due < next) next = due;
  }
  if (h->storming && next != UINT64_MAX) jct_timer_start(h->clock, &h->timer, next, on_storm_timer);
}

int jct__agent_host_start(jct__agent_host_t *h, bool faulted, uint64_t now_ns, uint64_t clock_ns) {
  if (!h) return 0;
  h->start_ns = now_ns;
  h->clock_start_ns = clock_ns;
  jct_timer_stop(h->clock, &h->timer);
  h->storming = false;
  for (uint32_t i = 0; i < h->n; i++) {
    host_drop_t *d = &h->d[i];
    if (d->inj->ops->host_link) { /* flap: restarts as on the switch, the link up */
      set_link(h, d, true, clock_ns);
      jct_injector_start(d->inj, clock_ns);
      json_decref(d->links);
      if (!(d->links = json_array())) return JCT_ENOMEM;
      h->storming |= faulted;
      continue;
    }
    if (d->inj->ops->host_frames) { /* pause: restarts as on the switch */
      jct_injector_start(d->inj, clock_ns);
      d->inj->data = h;
      json_decref(d->frames);
      if (!(d->frames = json_array())) return JCT_ENOMEM;
      d->frames_lost = 0;
      h->storming |= faulted;
      continue;
    }
    /* As chain_host.c restarts a namespace's program: its delay's TIME
     * and its window x F, the kernel keeping wall time. */
    struct jct_kdrop_cfg cfg;
    char ignored[8];
    if (jct__hostdrop_cfg_of(d->inj, d->tdf, &cfg, ignored, sizeof ignored) < 0) return JCT_EIO;
    cfg.enabled = faulted;
    cfg.start_ns = now_ns;
    uint64_t rng[4];
    jct__rng_seed(rng, d->inj->seed);
    if (jct__hostdrop_configure(d->prog, &cfg, rng) < 0) return JCT_EIO;
  }
  if (h->storming) on_storm_timer(&h->timer, clock_ns);
  return 0;
}

/* One injector's drops being drained: where they go, and what turns
 * their kernel times into the done message's (from the repetition's
 * start, emulated). */
typedef struct {
  json_t *drops;
  uint64_t start_ns; /* the repetition's, CLOCK_MONOTONIC */
  double tdf;        /* the injector's dilation */
} drain_t;

static void on_drop(const struct jct_kdrop_event *ev, void *arg) {
  drain_t *dr = arg;
  char src[INET6_ADDRSTRLEN] = "", dst[INET6_ADDRSTRLEN] = "";
  int af = ev->family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, ev->src, src, sizeof src);
  inet_ntop(af, ev->dst, dst, sizeof dst);
  json_int_t t = ev->t_ns > dr->start_ns ? (json_int_t)(ev->t_ns - dr->start_ns) : 0;
  if (dr->tdf > 1) t = (json_int_t)((double)t / dr->tdf); /* emulated */
  json_array_append_new(dr->drops,
                        json_pack("[I,I,I,i,b,i,s,s]", t, (json_int_t)ev->qp, (json_int_t)ev->psn,
                                  ev->opcode, ev->retransmission, ev->family, src, dst));
}

json_t *jct__agent_host_done(jct__agent_host_t *h) {
  json_t *all = json_array();
  if (h) {
    jct_timer_stop(h->clock, &h->timer);
    h->storming = false;
  }
  for (uint32_t i = 0; h && i < h->n; i++) {
    if (h->d[i].link) { /* flap: up again; how long it was down, and when */
      host_drop_t *d = &h->d[i];
      set_link(h, d, true, emu_of(h, d, jct_now_ns()));
      json_t *links = d->links ? d->links : json_array();
      d->links = NULL;
      json_array_append_new(
          all, json_pack("{s:I,s:I,s:I,s:I,s:[],s:o}", "index", (json_int_t)d->index, "seen",
                         (json_int_t)0, "dropped", (json_int_t)0, "link_down_ns",
                         (json_int_t)d->inj->stats.link_down_ns, "drops", "links", links));
      d->inj->stats.link_down_ns = 0;
      continue;
    }
    if (!h->d[i].prog) { /* pause: what it generated and what left, frame by frame */
      const jct_injector_stats_t *st = &h->d[i].inj->stats;
      json_t *frames = h->d[i].frames ? h->d[i].frames : json_array();
      h->d[i].frames = NULL;
      json_array_append_new(
          all, json_pack("{s:I,s:I,s:I,s:I,s:[],s:o,s:I}", "index", (json_int_t)h->d[i].index,
                         "generated", (json_int_t)st->generated, "dropped", (json_int_t)st->dropped,
                         "seen", (json_int_t)0, "drops", "frames", frames, "frames_lost",
                         (json_int_t)h->d[i].frames_lost));
      continue;
    }
    struct jct_kdrop_counters k = {0};
    jct__hostdrop_counters(h->d[i].prog, &k);
    drain_t dr = {.drops = json_array(), .start_ns = h->start_ns, .tdf = h->d[i].tdf};
    jct__hostdrop_drain(h->d[i].prog, on_drop, &dr);
    json_array_append_new(all, json_pack("{s:I,s:s,s:I,s:I,s:I,s:I,s:o}", "index",
                                         (json_int_t)h->d[i].index, "attach",
                                         jct__hostdrop_attach_kind(h->d[i].prog), "seen",
                                         (json_int_t)k.seen, "dropped", (json_int_t)k.dropped,
                                         "held", (json_int_t)k.held, "events_lost",
                                         (json_int_t)k.events_lost, "drops", dr.drops));
  }
  return all;
}

static int send_frame(int *fd, const char *netdev, const uint8_t *frame, size_t len, char *err,
                      size_t errlen) {
  if (*fd < 0) {
    int ifindex = (int)if_nametoindex(netdev);
    if (!ifindex) return jct__errf(err, errlen, JCT_EINVAL, "pause: no network device %s", netdev);
    int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = ifindex};
    /* Past the qdiscs (packet(7), PACKET_QDISC_BYPASS), as a NIC's MAC
     * sends its pause frames ahead of its queues: through the agent's tbf
     * shaper they waited behind rxe's data and left in a bunch (seen: 4
     * frames, 51.3 ms paused for 128). */
    if (s < 0 || setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0 ||
        bind(s, (struct sockaddr *)&sll, sizeof sll) != 0) {
      int e = errno;
      if (s >= 0) close(s);
      return jct__errf(err, errlen, JCT_EIO, "pause: a packet socket on %s: %s", netdev,
                       strerror(e));
    }
    *fd = s;
  }
  if (send(*fd, frame, len, 0) != (ssize_t)len)
    return jct__errf(err, errlen, JCT_EIO, "pause: send on %s: %s", netdev, strerror(errno));
  return 0;
}
