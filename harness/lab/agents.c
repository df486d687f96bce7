/* The orchestrator's side of the rank agents: JSON lines over one byte
 * stream per agent, phase by phase (agents.h). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents.h"
#include "common/errf.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "schedule/schedule_json.h"

#define LINE_MAX_BYTES (4u << 20) /* a done message of a large schedule */

typedef struct {
  struct jct_agents *set;
  uint32_t index;
  int fd;
  uv_poll_t poll;
  bool polling;
  char *buf; /* bytes read, not yet a whole line */
  size_t len, cap;
  bool answered; /* the current phase's answer came */
  char hello[160];
  char addr[48]; /* its data address, from the hello */
  uint64_t run_sent_ns;
  json_t *done; /* the last done message */
  /* Its host's stalls in the current run (jct__agents_frozen): when its VM
   * stopped and for how long, on the orchestrator's clock, in order. */
  uint64_t frozen_at[JCT_AGENTS_MAX_FROZEN], frozen_len[JCT_AGENTS_MAX_FROZEN];
  uint32_t nfrozen;
} agent_t;

struct jct_agents {
  uv_loop_t *loop;
  uint32_t n;
  const char *expect; /* the answer the current phase waits for */
  uint32_t rep;
  int failed;
  char why[512];
  double tdf; /* the setup's time dilation: agents' times are divided by it */
  agent_t a[];
};

static void fail(jct__agents_t *s, uint32_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(jct__agents_t *s, uint32_t i, const char *fmt, ...) {
  if (s->failed) return;
  s->failed = JCT_EIO;
  int k = snprintf(s->why, sizeof s->why, "rank %u's agent: ", i);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->why + k, sizeof s->why - (size_t)k, fmt, ap);
  va_end(ap);
}

static void on_hello(agent_t *g, json_t *m) {
  json_int_t rank = json_integer_value(json_object_get(m, "rank"));
  if (!json_is_integer(json_object_get(m, "rank")) || rank != g->index) {
    fail(g->set, g->index, "says it is rank %lld", (long long)rank);
    return;
  }
  const char *kernel = json_string_value(json_object_get(m, "kernel"));
  const char *dev = json_string_value(json_object_get(m, "dev"));
  const char *netdev = json_string_value(json_object_get(m, "netdev"));
  const char *addr = json_string_value(json_object_get(m, "addr"));
  snprintf(g->addr, sizeof g->addr, "%s", addr ? addr : "");
  snprintf(g->hello, sizeof g->hello, "kernel %s, %s on %s %s", kernel ? kernel : "?",
           dev ? dev : "?", netdev ? netdev : "?", addr ? addr : "?");
}

static void on_message(agent_t *g, json_t *m) {
  jct__agents_t *s = g->set;
  const char *msg = json_string_value(json_object_get(m, "msg"));
  if (!msg) {
    fail(s, g->index, "sent a line without \"msg\"");
    return;
  }
  if (strcmp(msg, "error") == 0 || strcmp(msg, "failed") == 0) {
    const char *why = json_string_value(json_object_get(m, "why"));
    bool first = !s->failed;
    fail(s, g->index, "%s", why ? why : "failed, without saying why");
    /* A setting the agent's device cannot honour is the user's to fix. */
    if (first && json_is_true(json_object_get(m, "bad_input"))) s->failed = JCT_EINVAL;
    return;
  }
  if (!s->expect || strcmp(msg, s->expect) != 0) {
    fail(s, g->index, "sent \"%s\" while %s%s was expected", msg, s->expect ? "" : "nothing",
         s->expect ? s->expect : "");
    return;
  }
  if (strcmp(msg, "hello") == 0) on_hello(g, m);
  if (strcmp(msg, "done") == 0) {
    if (json_integer_value(json_object_get(m, "rep")) != s->rep) {
      fail(s, g->index, "finished a repetition other than %u", s->rep);
      return;
    }
    json_decref(g->done);
    g->done = json_incref(m);
  }
  g->answered = true;
}

static void take_lines(agent_t *g) {
  size_t start = 0;
  for (size_t i = 0; i < g->len; i++) {
    if (g->buf[i] != '\n') continue;
    json_error_t je;
    json_t *m = json_loadb(g->buf + start, i - start, 0, &je);
    if (!m || !json_is_object(m))
      fail(g->set, g->index, "sent a line that is not a JSON object (%s)", je.text);
    else
      on_message(g, m);
    json_decref(m);
    start = i + 1;
  }
  memmove(g->buf, g->buf + start, g->len - start);
  g->len -= start;
}

static void on_readable(uv_poll_t *h, int status, int events) {
  (void)events;
  agent_t *g = h->data;
  if (status < 0) {
    fail(g->set, g->index, "control channel: %s", uv_strerror(status));
    return;
  }
  for (;;) {
    if (g->cap - g->len < 4096) {
      size_t cap = g->cap ? g->cap * 2 : 65536;
      char *b = cap <= LINE_MAX_BYTES ? realloc(g->buf, cap) : NULL;
      if (!b) {
        fail(g->set, g->index, "sent a line longer than %u bytes", LINE_MAX_BYTES);
        uv_poll_stop(h);
        return;
      }
      g->buf = b;
      g->cap = cap;
    }
    ssize_t r = read(g->fd, g->buf + g->len, g->cap - g->len);
    if (r > 0) {
      g->len += (size_t)r;
      take_lines(g);
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    fail(g->set, g->index, "closed its control channel%s%s", r < 0 ? ": " : "",
         r < 0 ? strerror(errno) : "");
    uv_poll_stop(h);
    return;
  }
}

/* Write all of buf; the channel is nonblocking, so wait for room when the
 * peer is slow (messages are small and agents read them at once). */
static int write_all(int fd, const char *buf, size_t len) {
  while (len) {
    ssize_t w = write(fd, buf, len);
    if (w > 0) {
      buf += w;
      len -= (size_t)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      usleep(100);
    } else {
      return -1;
    }
  }
  return 0;
}

static int send_msg(jct__agents_t *s, uint32_t i, json_t *m) {
  char *text = json_dumps(m, JSON_COMPACT);
  if (!text) return JCT_ENOMEM;
  size_t len = strlen(text);
  text[len] = '\0';
  int rc = write_all(s->a[i].fd, text, len) || write_all(s->a[i].fd, "\n", 1) ? JCT_EIO : 0;
  free(text);
  if (rc) fail(s, i, "cannot write to its control channel: %s", strerror(errno));
  return rc;
}

static void begin(jct__agents_t *s, const char *expect) {
  s->expect = expect;
  for (uint32_t i = 0; i < s->n; i++)
    s->a[i].answered = false;
}

/* Send m (one reference, consumed) to every agent and expect answer. */
static int broadcast(jct__agents_t *s, json_t *m, const char *answer) {
  if (!m) return JCT_ENOMEM;
  begin(s, answer);
  int rc = 0;
  for (uint32_t i = 0; i < s->n && !rc; i++) {
    if (s->a[i].done) {
      json_decref(s->a[i].done);
      s->a[i].done = NULL;
    }
    s->a[i].run_sent_ns = jct_now_ns();
    rc = send_msg(s, i, m);
  }
  json_decref(m);
  return rc;
}

int jct__agents_new(jct__agents_t **out, uv_loop_t *loop, uint32_t n, const int *fds) {
  jct__agents_t *s = calloc(1, sizeof *s + n * sizeof(agent_t));
  if (!s) return JCT_ENOMEM;
  s->loop = loop;
  s->n = n;
  for (uint32_t i = 0; i < n; i++) {
    agent_t *g = &s->a[i];
    g->set = s;
    g->index = i;
    g->fd = fds[i];
    fcntl(g->fd, F_SETFL, fcntl(g->fd, F_GETFL) | O_NONBLOCK);
    if (uv_poll_init(loop, &g->poll, g->fd)) {
      jct__agents_free(s);
      return JCT_EIO;
    }
    g->polling = true;
    g->poll.data = g;
    uv_poll_start(&g->poll, UV_READABLE, on_readable);
  }
  *out = s;
  return 0;
}

void jct__agents_expect_hello(jct__agents_t *a) {
  begin(a, "hello");
}

int jct__agents_ask_hello(jct__agents_t *a) {
  return broadcast(a, json_pack("{s:s}", "msg", "hello"), "hello");
}

/* The schedule's compute gaps in the agents' real time: times tdf. */
static void dilate_gaps(json_t *sched, double tdf) {
  size_t k;
  json_t *op;
  json_array_foreach(json_object_get(sched, "ops"), k, op) {
    json_t *gap = json_object_get(op, "gap_ns");
    if (json_is_integer(gap))
      json_integer_set(gap, (json_int_t)((double)json_integer_value(gap) * tdf));
  }
}

/* The RDMA settings the user gave (run.h), each absent when not given. */
static void set_rdma(json_t *m, const jct_rdma_opts_t *r) {
  if (r->device[0]) json_object_set_new(m, "device", json_string(r->device));
  if (r->port) json_object_set_new(m, "port", json_integer(r->port));
  if (r->has_gid_index) json_object_set_new(m, "gid_index", json_integer(r->gid_index));
  if (!r->ncounters) return;
  json_t *c = json_array();
  for (uint32_t i = 0; i < r->ncounters; i++)
    json_array_append_new(c, json_string(r->counters[i]));
  json_object_set_new(m, "counters", c);
}

int jct__agents_setup(jct__agents_t *a, const jct_schedule_t *s, const jct__agents_setup_t *o) {
  json_t *sched = jct__schedule_json(s), *addrs = json_array();
  if (!sched || !addrs) return JCT_ENOMEM;
  a->tdf = o->tdf > 1 ? o->tdf : 1;
  if (a->tdf > 1) dilate_gaps(sched, a->tdf);
  for (uint32_t i = 0; i < a->n; i++)
    json_array_append_new(addrs, json_string(a->a[i].addr));
  begin(a, "listening");
  int rc = 0;
  for (uint32_t i = 0; i < a->n && !rc; i++) {
    json_t *m = json_pack("{s:s,s:I,s:O,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:O}", "msg", "setup", "rank",
                          (json_int_t)i, "schedule", sched, "timeout", o->timeout, "cts_timeout",
                          o->cts_timeout ? o->cts_timeout : o->timeout, "retry_cnt", o->retry_cnt,
                          "tos", o->tos, "slots", (json_int_t)o->slots, "rate_bps",
                          (json_int_t)o->rate_bps, "mtu", (json_int_t)o->mtu, "addrs", addrs);
    if (m && o->rdma) set_rdma(m, o->rdma);
    json_t *hd = NULL;
    for (uint32_t k = 0; m && k < o->nhost_drops; k++) {
      const jct__agents_host_drop_t *d = &o->host_drops[k];
      if (d->rank != i) continue;
      if (!hd) json_object_set_new(m, "host_drops", hd = json_array());
      json_array_append_new(hd, json_pack("{s:I,s:s,s:I,s:I,s:f}", "index", (json_int_t)d->index,
                                          "spec", d->spec, "run_seed", (json_int_t)d->run_seed,
                                          "seed", (json_int_t)d->seed, "tdf", a->tdf));
    }
    rc = m ? send_msg(a, i, m) : JCT_ENOMEM;
    json_decref(m);
  }
  json_decref(sched);
  json_decref(addrs);
  return rc;
}

int jct__agents_connect(jct__agents_t *a) {
  return broadcast(a, json_pack("{s:s}", "msg", "connect"), "connected");
}

int jct__agents_run(jct__agents_t *a, uint32_t rep, bool faulted) {
  a->rep = rep;
  for (uint32_t i = 0; i < a->n; i++)
    a->a[i].nfrozen = 0;
  return broadcast(
      a, json_pack("{s:s,s:I,s:b}", "msg", "run", "rep", (json_int_t)rep, "faulted", faulted),
      "done");
}

int jct__agents_reset(jct__agents_t *a) {
  return broadcast(a, json_pack("{s:s}", "msg", "reset"), "reset");
}

int jct__agents_quit(jct__agents_t *a) {
  return broadcast(a, json_pack("{s:s}", "msg", "quit"), "bye");
}

bool jct__agents_waiting(const jct__agents_t *a) {
  for (uint32_t i = 0; i < a->n; i++)
    if (!a->a[i].answered) return true;
  return false;
}

int jct__agents_failed(const jct__agents_t *a, char *err, size_t errlen) {
  if (a->failed && err) snprintf(err, errlen, "%s", a->why);
  return a->failed;
}

const char *jct__agents_hello(const jct__agents_t *a, uint32_t i) {
  return i < a->n ? a->a[i].hello : "";
}

int jct__agents_frozen(jct__agents_t *a, uint32_t i, uint64_t at_ns, uint64_t len_ns) {
  if (i >= a->n || a->a[i].nfrozen == JCT_AGENTS_MAX_FROZEN) return JCT_EINVAL;
  agent_t *g = &a->a[i];
  g->frozen_at[g->nfrozen] = at_ns;
  g->frozen_len[g->nfrozen++] = len_ns;
  return 0;
}

/* An agent's time (agents.h: from its run, real time; -1 not reported) on
 * the orchestrator's clock (emulated time: divided by the dilation); 0:
 * not reported. Its host's clock stood still while it was stopped
 * (jct__agents_frozen): a time after a stall, which the host's clock read
 * that much short, is moved past it. */
static uint64_t place(const jct__agents_t *a, const agent_t *g, json_t *t) {
  json_int_t v = json_integer_value(t);
  if (!json_is_integer(t) || v < 0) return 0;
  uint64_t e = a->tdf > 1 ? (uint64_t)((double)v / a->tdf) : (uint64_t)v, out = e, lost = 0;
  for (uint32_t k = 0; k < g->nfrozen; k++) {
    if (g->frozen_at[k] < g->run_sent_ns) continue;
    uint64_t since = g->frozen_at[k] - g->run_sent_ns; /* the stall's start, by the host's clock: */
    if (e < (since > lost ? since - lost : 0)) break;  /* ... the time came before it */
    out += g->frozen_len[k];
    lost += g->frozen_len[k];
  }
  return g->run_sent_ns + out;
}

/* Each agent's times start when it received run, which the orchestrator
 * takes for when it sent it: an agent that read its run late (a loaded TCG
 * VM reads its virtio-serial port tens of ms late) has every time placed
 * too early by that lag, and an op's receipt can come out before its post
 * at another agent (seen: 42 ms before), which moves the JCT's end and
 * makes completion times negative. An op is never received before it was
 * posted, so each agent's lag is at least what makes every receipt follow
 * its post: the least such lags (a difference-constraint system, relaxed
 * as Bellman-Ford does, n rounds) are added to each agent's times.
 * src[op], dst[op]: the agents that reported its post and its receipt. */
static int add_least_lags(const jct__agents_t *a, jct_op_timing_t *t, uint32_t nops,
                          const uint32_t *src, const uint32_t *dst) {
  uint64_t *lag = calloc(a->n ? a->n : 1, sizeof *lag);
  if (!lag) return JCT_ENOMEM;
  bool moved = true;
  for (uint32_t round = 0; round < a->n && moved; round++) {
    moved = false;
    for (uint32_t i = 0; i < nops; i++) {
      if (!t[i].start_ns || !t[i].done_ns || src[i] >= a->n || dst[i] >= a->n) continue;
      uint64_t posted = t[i].start_ns + lag[src[i]], received = t[i].done_ns + lag[dst[i]];
      if (received < posted) {
        lag[dst[i]] += posted - received;
        moved = true;
      }
    }
  }
  for (uint32_t i = 0; i < nops; i++) {
    if (src[i] < a->n) {
      if (t[i].ready_ns) t[i].ready_ns += lag[src[i]];
      if (t[i].start_ns) t[i].start_ns += lag[src[i]];
    }
    if (dst[i] < a->n && t[i].done_ns) t[i].done_ns += lag[dst[i]];
  }
  free(lag);
  return 0;
}

int jct__agents_timing(const jct__agents_t *a, jct_op_timing_t *t, uint32_t nops) {
  memset(t, 0, nops * sizeof *t);
  uint32_t *src = malloc((nops ? nops : 1) * sizeof *src),
           *dst = malloc((nops ? nops : 1) * sizeof *dst);
  if (!src || !dst) {
    free(src);
    free(dst);
    return JCT_ENOMEM;
  }
  for (uint32_t i = 0; i < nops; i++)
    src[i] = dst[i] = UINT32_MAX;
  for (uint32_t i = 0; i < a->n; i++) {
    const agent_t *g = &a->a[i];
    json_t *ops = json_object_get(g->done, "ops");
    size_t k;
    json_t *op;
    json_array_foreach(ops, k, op) {
      json_int_t id = json_integer_value(json_array_get(op, 0));
      if (!json_is_array(op) || json_array_size(op) != 4 || id < 0 || id >= nops) {
        free(src);
        free(dst);
        return JCT_EINVAL;
      }
      uint64_t ready = place(a, g, json_array_get(op, 1)),
               start = place(a, g, json_array_get(op, 2)),
               done = place(a, g, json_array_get(op, 3));
      if (ready) t[id].ready_ns = ready;
      if (start) {
        t[id].start_ns = start;
        src[id] = i;
      }
      if (done) {
        t[id].done_ns = done;
        dst[id] = i;
      }
    }
  }
  int rc = add_least_lags(a, t, nops, src, dst);
  free(src);
  free(dst);
  return rc;
}

/* A device counter as reported: a time (a name ending in _ns, the agent's
 * nic_paused_ns: its NIC honours a pause for the wall time the wall rate
 * gives) divided by the dilation, as every time an agent reports; counts
 * as they are. */
static uint64_t counter_value(const jct__agents_t *a, const char *name, const json_t *v) {
  uint64_t n = (uint64_t)json_integer_value(v);
  size_t len = strlen(name);
  bool time = len > 3 && !strcmp(name + len - 3, "_ns");
  return time && a->tdf > 1 ? (uint64_t)((double)n / a->tdf) : n;
}

void jct__agents_counters(const jct__agents_t *a, jct_dev_counters_t *sum) {
  memset(sum, 0, sizeof *sum);
  for (uint32_t i = 0; i < a->n; i++) {
    json_t *c = json_object_get(a->a[i].done, "counters");
    const char *name;
    json_t *v;
    json_object_foreach(c, name, v) {
      if (json_is_integer(v) && json_integer_value(v) >= 0)
        jct_dev_counters_add(sum, name, counter_value(a, name, v));
    }
  }
}

void jct__agents_rank_counters(const jct__agents_t *a, uint32_t i, jct_dev_counters_t *out) {
  memset(out, 0, sizeof *out);
  json_t *c = i < a->n ? json_object_get(a->a[i].done, "counters") : NULL;
  const char *name;
  json_t *v;
  json_object_foreach(c, name, v) {
    if (json_is_integer(v) && json_integer_value(v) >= 0)
      jct_dev_counters_add(out, name, counter_value(a, name, v));
  }
}

const json_t *jct__agents_host_drops(const jct__agents_t *a, uint32_t i) {
  return i < a->n ? json_object_get(a->a[i].done, "host_drops") : NULL;
}

static void on_closed(uv_handle_t *h) {
  agent_t *g = h->data;
  jct__agents_t *s = g->set;
  g->polling = false;
  for (uint32_t i = 0; i < s->n; i++)
    if (s->a[i].polling) return;
  free(s);
}

void jct__agents_free(jct__agents_t *a) {
  if (!a) return;
  bool any = false;
  for (uint32_t i = 0; i < a->n; i++) {
    agent_t *g = &a->a[i];
    free(g->buf);
    g->buf = NULL;
    json_decref(g->done);
    g->done = NULL;
    if (g->polling) {
      any = true;
      uv_close((uv_handle_t *)&g->poll, on_closed);
    }
  }
  if (!any) free(a);
}
