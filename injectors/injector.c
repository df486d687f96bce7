/* The injector framework: what every kind shares (injector.h).
 *
 * jct_injector_new parses the spec, finds the kind in the registry, takes
 * the common keys (where=, port=, dir=, at=, until=, seed=), lets the kind
 * take its own, and then refuses the spec if any word is left that nobody
 * took, naming the first such word. Everything is validated before the
 * injector exists, so a bad spec never half-applies (as netem_change()
 * checks a whole configuration before it changes anything).
 *
 * Per frame, jct_injector_process checks the port and side, the time
 * window and the where= filter, calls the kind, tells the packet-keyed
 * draws of a drop (so the PSN's next copy draws anew), turns a duplicate
 * of a frame that is itself a copy into a pass, and updates the counters:
 * the one place where counters change (sch_netem.c keeps its drop counts in
 * one place too). where= is a libpcap filter expression compiled once for
 * Ethernet (pcap_open_dead(DLT_EN10MB) + pcap_compile) and run on each
 * frame by pcap_offline_filter; nothing is allocated per frame.
 *
 * The seed is kept in the injector so reports can record it and a run can
 * be repeated exactly; without seed= it is the run's seed mixed with the
 * injector's position in its chain, so two injectors of one run differ.
 * The draws the kinds make from it are in draw.c.
 *
 * jct_injector_start begins a run or a repetition: the window counts from
 * it, the PRNG restarts from the seed, the counters restart from zero, and
 * the kind's private state goes back to what its init left (a copy is kept
 * at creation), so every repetition sees the same faults on the same frames.
 */
#include <pcap/pcap.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "traces/frame.h"
#include "common/wire.h"
#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"
#include "jctlab/roce.h"

#define JSON_SAFE_MAX ((1ull << 53) - 1)

/* The public struct, plus the copy of the kind's state after init. */
typedef struct {
  jct_injector_t pub;
  void *priv_initial;
  jct_injector_emit_cb emit_cb; /* the caller's, while jct_injector_tick runs */
} injector_box_t;

static void seed_rng(jct_injector_t *inj) {
  jct__rng_seed(inj->rng, inj->seed);
}

/* "<spec>: <word as typed>: <detail>" for the word at arg i. */
static int word_err(const jct_spec_t *spec, uint32_t i, char *err, size_t errlen,
                    const char *detail) {
  const char *w = spec->text + spec->arg[i].offset;
  int n = 0;
  char quote = 0;
  for (; w[n]; n++) {
    if (quote) {
      if (w[n] == '\\' && quote == '"' && w[n + 1])
        n++;
      else if (w[n] == quote)
        quote = 0;
    } else if (w[n] == '"' || w[n] == '\'') {
      quote = w[n];
    } else if (w[n] == ' ' || w[n] == '\t' || w[n] == '\n') {
      break;
    }
  }
  /* The spec and the word cut short enough that the reason always shows. */
  int len = (int)strnlen(spec->text, 61);
  return jct__errf(err, errlen, JCT_EINVAL, "%.*s%s: %.*s%s: %s", len > 60 ? 60 : len, spec->text,
                   len > 60 ? "..." : "", n > 80 ? 80 : n, w, n > 80 ? "..." : "", detail);
}

/* The index of a named key in spec, nargs when absent. */
static uint32_t arg_index(const jct_spec_t *spec, const char *key) {
  uint32_t i = 0;
  while (i < spec->nargs && strcmp(spec->arg[i].key, key) != 0)
    i++;
  return i;
}

static int take_where(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  const char *expr = jct_spec_get(spec, "where");
  if (!expr) return 0;
  pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
  if (!dead) return jct__errf(err, errlen, JCT_ENOMEM, "%s: where: out of memory", spec->text);
  struct bpf_program *prog = calloc(1, sizeof *prog);
  if (!prog) {
    pcap_close(dead);
    return jct__errf(err, errlen, JCT_ENOMEM, "%s: where: out of memory", spec->text);
  }
  if (pcap_compile(dead, prog, expr, 1, PCAP_NETMASK_UNKNOWN) < 0) {
    int rc = jct__errf(err, errlen, JCT_EINVAL, "%s: where: %s", spec->text, pcap_geterr(dead));
    free(prog);
    pcap_close(dead);
    return rc;
  }
  pcap_close(dead);
  inj->filter = prog;
  return 0;
}

/* at=host:RANK or at=switch (the placement), told from at=TIME (the
 * window) by its value: taken here, its key renamed so the time getter
 * skips it. Then what does not go with a host: where=, port=, dir=. */
static int take_placement(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  inj->host = -1;
  uint32_t where = spec->nargs;
  for (uint32_t i = 0; i < spec->nargs; i++) {
    const char *v = spec->arg[i].value;
    if (strcmp(spec->arg[i].key, "at") != 0) continue;
    if (strcmp(v, "switch") != 0 && strncmp(v, "host:", 5) != 0 && strncmp(v, "host", 5) != 0)
      continue;
    if (where < spec->nargs) return word_err(spec, i, err, errlen, "a second placement");
    where = i;
    spec->arg[i].used = true;
    snprintf(spec->arg[i].key, sizeof spec->arg[i].key, "at=place");
    if (strcmp(v, "switch") == 0) continue;
    char *end;
    unsigned long r = v[4] == ':' && v[5] >= '0' && v[5] <= '9' ? strtoul(v + 5, &end, 10) : 0;
    if (v[4] != ':' || v[5] < '0' || v[5] > '9' || *end || r > 65534)
      return word_err(spec, i, err, errlen, "is host:RANK (a rank's index from 0) or switch");
    inj->host = (int32_t)r;
  }
  if (inj->host < 0) return 0;
  static const char *const not_at_host[] = {"where", "port", "dir"};
  static const char *const why[] = {
      "is a libpcap filter the kernel program does not run (at a host it sees the host's "
      "RoCEv2 packets, UDP/4791)",
      "names a switch port: at=host:RANK runs on the host's own interface",
      "at a host the injector sits on the interface's egress only"};
  for (size_t k = 0; k < 3; k++) {
    uint32_t i = arg_index(spec, not_at_host[k]);
    if (i < spec->nargs) return word_err(spec, i, err, errlen, why[k]);
  }
  return 0;
}

static int take_common(jct_injector_t *inj, jct_spec_t *spec, uint64_t run_seed, char *err,
                       size_t errlen) {
  int rc;
  if ((rc = take_placement(inj, spec, err, errlen)) < 0) return rc;
  uint64_t port = UINT64_MAX;
  if ((rc = jct_spec_u64(spec, "port", UINT32_MAX, &port, err, errlen)) < 0) return rc;
  if (port != UINT64_MAX) {
    inj->all_ports = false;
    inj->port = (uint32_t)port;
  }
  const char *dir = jct_spec_get(spec, "dir");
  if (dir) {
    if (strcmp(dir, "in") == 0)
      inj->out = false;
    else if (strcmp(dir, "out") == 0)
      inj->out = true;
    else
      return word_err(spec, arg_index(spec, "dir"), err, errlen, "dir is in or out");
  }
  if ((rc = jct_spec_time_ns(spec, "at", &inj->at_ns, err, errlen)) < 0) return rc;
  if ((rc = jct_spec_time_ns(spec, "until", &inj->until_ns, err, errlen)) < 0) return rc;
  if (arg_index(spec, "until") < spec->nargs && inj->until_ns <= inj->at_ns)
    return word_err(spec, arg_index(spec, "until"), err, errlen,
                    "the window ends before it starts (until <= at)");

  uint64_t x = run_seed + 0x9e3779b97f4a7c15u * ((uint64_t)inj->index + 1);
  /* Seeds stay below 2^53, so JSON reports carry them exactly. */
  inj->seed = jct__splitmix64(&x) & JSON_SAFE_MAX;
  if ((rc = jct_spec_u64(spec, "seed", JSON_SAFE_MAX, &inj->seed, err, errlen)) < 0) return rc;
  return take_where(inj, spec, err, errlen);
}

static const struct jct_injector_ops *find_kind(const char *name) {
  for (size_t i = 0; jct_injector_kinds[i]; i++)
    if (jct_injector_kinds[i]->name && strcmp(jct_injector_kinds[i]->name, name) == 0)
      return jct_injector_kinds[i];
  return NULL;
}

static int unknown_kind(const jct_spec_t *spec, char *err, size_t errlen) {
  char names[160] = "";
  size_t used = 0;
  for (size_t i = 0; jct_injector_kinds[i] && used < sizeof names; i++) {
    int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                     jct_injector_kinds[i]->name);
    if (n < 0) break;
    used += (size_t)n;
  }
  return jct__errf(err, errlen, JCT_EINVAL, "%s: %s: unknown injector kind (%s)", spec->text,
                   spec->kind, names);
}

static void injector_destroy(injector_box_t *box) {
  jct_injector_t *inj = &box->pub;
  jct_flows_free(inj->flows);
  if (inj->ops && inj->ops->destroy && inj->priv) inj->ops->destroy(inj);
  if (inj->filter) {
    pcap_freecode(inj->filter);
    free(inj->filter);
  }
  free(box);
}

/* at=host: the kind must have a kernel program, and that program must do
 * what the spec asks (delay without jitter=), or send its frames from the
 * host (pause), or set its link (flap). Whether the host's kernel has fq,
 * which delay needs, the harness asks it. */
static int check_host(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  if (inj->ops->host_frames || inj->ops->host_link) return 0;
  if (!inj->ops->kernel)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s: %s cannot run at a host: drop runs in a host's kernel (tc-eBPF), "
                     "pause sends from its interface, flap sets its link down; run it on the "
                     "switch (at=switch) or with `jctlab wire`",
                     spec->text, inj->ops->name);
  struct jct_kdrop_cfg cfg;
  return inj->ops->kernel(inj, &cfg, err, errlen);
}

int jct_injector_new(jct_injector_t **out, const char *text, uint64_t run_seed, uint32_t index,
                     char *err, size_t errlen) {
  *out = NULL;
  jct_spec_t *spec = malloc(sizeof *spec); /* about 7 KB: not on the stack */
  if (!spec) return jct__errf(err, errlen, JCT_ENOMEM, "out of memory");
  int rc = jct_spec_parse(text, spec, err, errlen);
  if (rc < 0) {
    free(spec);
    return rc;
  }
  const struct jct_injector_ops *ops = find_kind(spec->kind);
  if (!ops) {
    rc = unknown_kind(spec, err, errlen);
    free(spec);
    return rc;
  }

  /* One block: the box, then the kind's state, then its copy. */
  size_t align = alignof(max_align_t);
  size_t head = (sizeof(injector_box_t) + align - 1) / align * align;
  size_t priv = (ops->priv_size + align - 1) / align * align;
  injector_box_t *box = calloc(1, head + 2 * priv);
  if (!box) {
    free(spec);
    return jct__errf(err, errlen, JCT_ENOMEM, "out of memory");
  }
  jct_injector_t *inj = &box->pub;
  inj->ops = ops;
  snprintf(inj->spec, sizeof inj->spec, "%s", text);
  inj->index = index;
  inj->all_ports = true;
  inj->out = true;
  if (priv) {
    inj->priv = (char *)box + head;
    box->priv_initial = (char *)box + head + priv;
  }
  inj->flows = jct_flows_new();
  if (!inj->flows) {
    free(spec);
    free(box);
    return jct__errf(err, errlen, JCT_ENOMEM, "out of memory");
  }

  rc = take_common(inj, spec, run_seed, err, errlen);
  seed_rng(inj);
  if (rc == 0 && ops->init) rc = ops->init(inj, spec, err, errlen);
  if (rc == 0 && inj->host >= 0) rc = check_host(inj, spec, err, errlen);
  if (rc < 0) {
    if (ops->destroy) inj->ops = NULL; /* init failed: it cleaned up after itself */
    injector_destroy(box);
    free(spec);
    return rc;
  }
  for (uint32_t i = 0; i < spec->nargs; i++) {
    if (spec->arg[i].used) continue;
    char detail[320];
    if (spec->arg[i].key[0])
      snprintf(detail, sizeof detail, "unknown key for %s (%s)", ops->name,
               ops->usage ? ops->usage : ops->name);
    else
      snprintf(detail, sizeof detail, "unexpected word for %s (%s)", ops->name,
               ops->usage ? ops->usage : ops->name);
    rc = word_err(spec, i, err, errlen, detail);
    injector_destroy(box);
    free(spec);
    return rc;
  }
  free(spec);
  if (priv) memcpy(box->priv_initial, inj->priv, ops->priv_size);
  seed_rng(inj); /* init may have drawn numbers: start every run from the seed */
  *out = inj;
  return 0;
}

void jct_injector_free(jct_injector_t *inj) {
  if (inj) injector_destroy((injector_box_t *)(void *)inj);
}

void jct_injector_start(jct_injector_t *inj, uint64_t start_ns) {
  injector_box_t *box = (injector_box_t *)(void *)inj;
  inj->start_ns = start_ns;
  seed_rng(inj);
  memset(&inj->stats, 0, sizeof inj->stats);
  if (inj->priv) memcpy(inj->priv, box->priv_initial, inj->ops->priv_size);
  jct_flows_clear(inj->flows);
}

/* where= on one frame: true when it selects it. */
static bool where_selects(const jct_injector_t *inj, const jct_frame_t *f) {
  struct pcap_pkthdr h = {.caplen = (bpf_u_int32)f->len, .len = (bpf_u_int32)f->len};
  return pcap_offline_filter(inj->filter, &h, f->data) != 0;
}

/* The counters of a verdict other than PASS. */
static void count_verdict(jct_injector_stats_t *st, jct_verdict_t v, const jct_frame_t *f,
                          uint64_t ready_ns) {
  switch (v) {
  case JCT_DROP:
    st->dropped++;
    break;
  case JCT_HOLD:
    st->held++;
    if (f->hold_until_ns > ready_ns) st->hold_ns_total += f->hold_until_ns - ready_ns;
    break;
  case JCT_MODIFIED:
    st->modified++;
    break;
  case JCT_EXPEDITE:
    st->expedited++;
    break;
  case JCT_DUPLICATE:
    st->duplicated++;
    break;
  case JCT_PASS:
    break;
  }
}

jct_verdict_t jct_injector_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  f->stall_ns = 0; /* this injector's request, if any */
  if (f->out != inj->out || (!inj->all_ports && f->port != inj->port)) return JCT_PASS;
  if (inj->at_ns | inj->until_ns) {
    uint64_t t = now_ns > inj->start_ns ? now_ns - inj->start_ns : 0;
    if (t < inj->at_ns || (inj->until_ns && t >= inj->until_ns)) return JCT_PASS;
  }
  jct_injector_stats_t *st = &inj->stats;
  st->seen++;
  if (inj->filter && !where_selects(inj, f)) return JCT_PASS;
  st->matched++;
  if (!inj->ops->process) return JCT_PASS;
  /* When the frame would have been ready without this injector: its hold
   * counts from there. */
  uint64_t ready_ns = f->hold_until_ns > now_ns ? f->hold_until_ns : now_ns;
  jct_verdict_t v = inj->ops->process(inj, f, now_ns);
  if (f->stall_ns) st->stalls++, st->stall_ns += f->stall_ns;
  if (v == JCT_DUPLICATE && f->copy) v = JCT_PASS; /* never a copy of a copy */
  if (v == JCT_DROP) jct_injector_packet_lost(inj, f);
  if (v != JCT_PASS) count_verdict(st, v, f, ready_ns);
  return v;
}

/* The kind's frames pass through here on their way out, to be counted. */
static void count_and_emit(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                           uint64_t now_ns) {
  inj->stats.generated++;
  ((injector_box_t *)(void *)inj)->emit_cb(inj, port, frame, len, now_ns);
}

void jct_injector_tick(jct_injector_t *inj, uint64_t now_ns, jct_injector_emit_cb emit_cb) {
  if (!inj->ops->tick) return;
  ((injector_box_t *)(void *)inj)->emit_cb = emit_cb;
  inj->ops->tick(inj, now_ns, count_and_emit);
}
