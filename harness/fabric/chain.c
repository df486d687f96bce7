/* The injector chain of a run (harness/fabric/chain.h). */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "chain.h"
#include "common/errf.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"

#include "chain_int.h"

int jct__chain_new(jct__chain_t **out, const char *const *specs, size_t n, uint64_t run_seed,
                   char *err, size_t errlen) {
  *out = NULL;
  jct__chain_t *c = calloc(1, sizeof *c);
  if (!c) return JCT_ENOMEM;
  c->inj = calloc(n ? n : 1, sizeof *c->inj);
  if (!c->inj) {
    free(c);
    return JCT_ENOMEM;
  }
  if (jct__chain_hosts_alloc(c, n) < 0) {
    jct__chain_hosts_free(c);
    free(c->inj);
    free(c);
    return JCT_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    int rc = jct_injector_new(&c->inj[i], specs[i], run_seed, (uint32_t)i, err, errlen);
    if (rc) {
      jct__chain_free(c);
      return rc;
    }
    c->inj[i]->data = c; /* for emit_into_switch */
    c->n++;
  }
  *out = c;
  return 0;
}

static const char *action_name(jct_verdict_t v) {
  switch (v) {
  case JCT_PASS:
    return "stall"; /* a pass is logged only when it asked for a stall */
  case JCT_DROP:
    return "drop";
  case JCT_HOLD:
    return "hold";
  case JCT_EXPEDITE:
    return "expedite";
  case JCT_DUPLICATE:
    return "duplicate";
  default:
    return "modify";
  }
}

static void log_action(jct__chain_t *c, const jct_injector_t *inj, const site_t *s, jct_frame_t *f,
                       jct_verdict_t v, uint64_t now_ns) {
  jct_packet_t p;
  char a[64] = "", b[64] = "";
  jct_decode(JCT_LINK_EN10MB, f->data, f->len, f->len, &p);
  fprintf(c->log,
          "{\"rep\":%u,\"t_ns\":%llu,\"port\":%u,\"dir\":\"%s\",\"injector\":%u,"
          "\"kind\":\"%s\",\"action\":\"%s\"",
          c->rep, (unsigned long long)(now_ns - c->start_ns), s->port, s->out ? "out" : "in",
          inj->index, inj->ops->name, action_name(v));
  if (p.src.family)
    fprintf(c->log, ",\"src\":\"%s\",\"dst\":\"%s\"", jct_addr_str(&p.src, a, sizeof a),
            jct_addr_str(&p.dst, b, sizeof b));
  if (p.kind == JCT_PKT_ROCE)
    fprintf(c->log, ",\"qp\":%u,\"psn\":%u,\"opcode\":\"%s\",\"retransmission\":%s",
            p.roce.bth.dest_qp, p.roce.bth.psn, p.op->name,
            jct_frame_retransmission(f) ? "true" : "false");
  if (v == JCT_HOLD)
    fprintf(c->log, ",\"hold_ns\":%llu", (unsigned long long)(f->hold_until_ns - now_ns));
  if (f->stall_ns) fprintf(c->log, ",\"stall_ns\":%llu", (unsigned long long)f->stall_ns);
  if (f->copy) fputs(",\"copy\":true", c->log);
  fputs("}\n", c->log);
}

static void dump_drop(jct__chain_t *c, const jct_frame_t *f, uint64_t now_ns) {
  struct pcap_pkthdr h = {.caplen = (bpf_u_int32)f->len, .len = (bpf_u_int32)f->len};
  jct__capture_dump(c->drops, &h, now_ns, c->realtime_offset_ns, 0, f->data);
}

/* A stall asked for its frame's sender's transmit stall: the sender is
 * the rank whose port the frame entered by (stall acts at ingress), and
 * the host's stall fn stops it (jct__chain_set_stall_fn). */
static void stall_sender(jct__chain_t *c, const site_t *s, const jct_injector_t *inj,
                         const jct_frame_t *f, uint64_t now_ns) {
  if (!c->started) return; /* the QPs' setup (rdma_cm's MADs): no repetition yet */
  if (c->log) log_action(c, inj, s, (jct_frame_t *)f, JCT_PASS, now_ns);
  if (s->out || !c->stall_fn) return;
  int rc = c->stall_fn(c->stall_arg, s->port, f->stall_ns, now_ns);
  if (rc < 0)
    fprintf(stderr, "jctlab: injector #%u: cannot stall rank %u's host: %s\n", inj->index + 1,
            s->port, jct_strerror(rc));
}

void jct__chain_set_stall_fn(jct__chain_t *c, jct__chain_stall_fn fn, void *arg) {
  c->stall_fn = fn;
  c->stall_arg = arg;
}

static jct_switch_verdict_t on_frame(jct_switch_frame_t *sf, uint64_t now_ns,
                                     uint64_t *hold_until_ns, void *arg) {
  site_t *s = arg;
  jct__chain_t *c = s->c;
  jct_frame_t f = {.data = sf->data,
                   .len = sf->len,
                   .cap = sf->cap,
                   .port = s->port,
                   .out = s->out,
                   .scratch = sf->scratch,
                   .site_flows = s->flows,
                   .copy = sf->copy};
  uint64_t hold = 0;
  bool modified = false, expedite = false;
  /* The log tells retransmissions by the site's history, which must then
   * see every frame, not only those an injector draws for. */
  if (c->log) jct_frame_retransmission(&f);
  for (size_t i = 0; i < s->n; i++) {
    if (c->disabled && !s->inj[i]->baseline) continue; /* a baseline: its own kinds only */
    f.hold_until_ns = hold; /* the chain's so far: rate counts from it */
    jct_verdict_t v = jct_injector_process(s->inj[i], &f, now_ns);
    if (f.stall_ns) stall_sender(c, s, s->inj[i], &f, now_ns);
    if (v == JCT_PASS) continue;
    if (c->log) log_action(c, s->inj[i], s, &f, v, now_ns);
    if (v == JCT_DROP) {
      if (c->drops) dump_drop(c, &f, now_ns);
      return JCT_SW_DROP;
    }
    if (v == JCT_HOLD && f.hold_until_ns > hold) hold = f.hold_until_ns;
    if (v == JCT_MODIFIED) modified = true;
    if (v == JCT_EXPEDITE) expedite = true;
    if (v == JCT_DUPLICATE) sf->duplicate = true; /* the switch brings the copy back */
  }
  sf->data = f.data; /* the scratch copy, when an injector changed it */
  sf->len = f.len;
  if (hold > now_ns) {
    *hold_until_ns = hold;
    return JCT_SW_HOLD;
  }
  if (expedite) return JCT_SW_HEAD;
  return modified ? JCT_SW_MODIFIED : JCT_SW_PASS;
}

static void free_sites(jct__chain_t *c) {
  if (!c->sites) return;
  for (uint32_t i = 0; i < 2 * c->nports; i++) {
    free(c->sites[i].inj);
    jct_flows_free(c->sites[i].flows);
  }
  free(c->sites);
  c->sites = NULL;
}

/* The switch's PFC watchdog on a port the injectors name: a fault-log
 * line, so that a storm and what the watchdog made of it read in one log
 * (port in the injectors' numbering; its egress queue toward the link). */
static void on_watchdog(jct_switch_t *sw, uint32_t port, int prio, bool storm, uint64_t now_ns,
                        void *arg) {
  jct__chain_t *c = arg;
  for (uint32_t p = 0; c->log && p < c->nports; p++)
    if (c->ports[p].sw == sw && c->ports[p].port == port) {
      fprintf(c->log,
              "{\"rep\":%u,\"t_ns\":%llu,\"port\":%u,\"dir\":\"out\",\"kind\":\"pfc-watchdog\","
              "\"action\":\"%s\",\"prio\":%d}\n",
              c->rep, (unsigned long long)(now_ns > c->start_ns ? now_ns - c->start_ns : 0), p,
              storm ? "storm" : "restore", prio);
      return;
    }
}

int jct__chain_attach_ports(jct__chain_t *c, const jct__chain_port_t *ports, uint32_t nports,
                            FILE *log, struct jct__savefile *drops, int64_t realtime_offset_ns) {
  free_sites(c); /* of an earlier attach: c->nports is still its */
  free(c->ports);
  c->log = log;
  c->drops = drops;
  c->realtime_offset_ns = realtime_offset_ns;
  c->nports = nports;
  if (!(c->ports = malloc((nports ? nports : 1) * sizeof *c->ports))) return JCT_ENOMEM;
  memcpy(c->ports, ports, nports * sizeof *ports);
  for (uint32_t p = 0; log && p < nports; p++) {
    int rc = jct_switch_set_wd_cb(ports[p].sw, on_watchdog, c);
    if (rc) return rc;
  }
  if (!c->n) return 0;
  c->sites = calloc(2 * (size_t)nports, sizeof *c->sites);
  if (!c->sites) return JCT_ENOMEM;
  /* A hook only where some injector acts: a hook costs the switch a call
   * and the injectors a look at every frame. */
  for (uint32_t p = 0; p < nports; p++)
    for (int out = 0; out <= 1; out++) {
      site_t *s = &c->sites[2 * p + (uint32_t)out];
      for (size_t i = 0; i < c->n; i++) {
        if (c->inj[i]->out != (bool)out || !(c->inj[i]->all_ports || c->inj[i]->port == p) ||
            c->inj[i]->host >= 0)
          continue;
        if (!s->inj && !(s->inj = calloc(c->n, sizeof *s->inj))) return JCT_ENOMEM;
        s->inj[s->n++] = c->inj[i];
      }
      if (!s->n) continue;
      if (!(s->flows = jct_flows_new())) return JCT_ENOMEM;
      s->c = c;
      s->port = p;
      s->at = ports[p];
      s->out = out;
      int rc = jct_switch_set_hook(s->at.sw, s->at.port, out ? JCT_SW_EGRESS : JCT_SW_INGRESS,
                                   on_frame, s);
      if (rc) return rc;
    }
  return 0;
}

int jct__chain_attach(jct__chain_t *c, jct_switch_t *sw, uint32_t nports, FILE *log,
                      struct jct__savefile *drops, int64_t realtime_offset_ns) {
  jct__chain_port_t *ports = malloc((nports ? nports : 1) * sizeof *ports);
  if (!ports) return JCT_ENOMEM;
  for (uint32_t p = 0; p < nports; p++)
    ports[p] = (jct__chain_port_t){sw, p};
  int rc = jct__chain_attach_ports(c, ports, nports, log, drops, realtime_offset_ns);
  free(ports);
  return rc;
}

void jct__chain_set_rep(jct__chain_t *c, uint32_t rep) {
  c->rep = rep;
}

void jct__chain_start(jct__chain_t *c, uint64_t now_ns) {
  jct__chain_hosts_links_up(c, now_ns);
  c->start_ns = c->last_ns = now_ns;
  c->started = true;
  for (uint32_t i = 0; c->sites && i < 2 * c->nports; i++)
    jct_flows_clear(c->sites[i].flows);
  for (size_t i = 0; i < c->n; i++)
    jct_injector_start(c->inj[i], now_ns);
  jct__chain_hosts_start(c); /* their kernel programs restart as they do */
}

/* Whether site s has an injector that acts in baselines too (baseline). */
static bool site_baseline(const site_t *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->inj[i]->baseline) return true;
  return false;
}

int jct__chain_set_enabled(jct__chain_t *c, bool on) {
  if (jct__chain_hosts_enable(c, on) < 0) return JCT_EIO;
  if (!c->sites || c->disabled == !on) {
    c->disabled = !on;
    return 0;
  }
  c->disabled = !on;
  for (uint32_t i = 0; i < 2 * c->nports; i++) {
    site_t *s = &c->sites[i];
    if (!s->c || site_baseline(s)) continue; /* no hook was needed here, or it stays */
    jct_switch_stage_t stage = s->out ? JCT_SW_EGRESS : JCT_SW_INGRESS;
    int rc = jct_switch_set_hook(s->at.sw, s->at.port, stage, on ? on_frame : NULL, on ? s : NULL);
    if (rc) return rc;
  }
  return 0;
}

uint64_t jct__chain_next_deadline_ns(const jct__chain_t *c) {
  uint64_t d = UINT64_MAX;
  if (c->disabled) return d;
  for (size_t i = 0; i < c->n; i++) {
    const jct_injector_t *inj = c->inj[i];
    if (!inj->ops->next_deadline_ns || (c->remote && inj->host >= 0 && !inj->ops->host_link))
      continue;
    uint64_t x = inj->ops->next_deadline_ns(inj);
    if (x < d) d = x;
  }
  return d;
}

static void emit_into_switch(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                             uint64_t now_ns) {
  jct__chain_t *c = inj->data;
  if (c->log)
    fprintf(c->log,
            "{\"rep\":%u,\"t_ns\":%llu,\"port\":%u,\"dir\":\"in\",\"injector\":%u,"
            "\"kind\":\"%s\",\"action\":\"generate\",\"bytes\":%zu}\n",
            c->rep, (unsigned long long)(now_ns - c->start_ns), port, inj->index, inj->ops->name,
            len);
  if (port < c->nports) jct_switch_rx(c->ports[port].sw, c->ports[port].port, frame, len, now_ns);
}

void jct__chain_tick(jct__chain_t *c, uint64_t now_ns) {
  c->last_ns = now_ns;
  if (c->disabled) return;
  for (size_t i = 0; i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    /* Its agent times it; a flap's carrier is set from here. */
    if (c->remote && inj->host >= 0 && !inj->ops->host_link) continue;
    if (!(inj->ops->tick && inj->ops->next_deadline_ns &&
          inj->ops->next_deadline_ns(inj) <= now_ns))
      continue;
    jct_injector_tick(inj, now_ns, inj->host >= 0 ? jct__chain_emit_from_host : emit_into_switch);
    if (inj->host >= 0) jct__chain_host_tick(c, i, now_ns);
  }
}

static bool link_state_kind(const jct_injector_t *inj) {
  return inj->ops->host_link && inj->host < 0 && inj->ops->process;
}

bool jct__chain_has_link_state(const jct__chain_t *c) {
  for (size_t i = 0; c && i < c->n; i++)
    if (link_state_kind(c->inj[i])) return true;
  return false;
}

bool jct__chain_link_down(jct__chain_t *c, uint32_t port, uint64_t now_ns) {
  if (!c || c->disabled) return false;
  for (size_t i = 0; i < c->n; i++) {
    jct_injector_t *inj = c->inj[i];
    if (!link_state_kind(inj) || !(inj->all_ports || inj->port == port)) continue;
    uint64_t t = now_ns > inj->start_ns ? now_ns - inj->start_ns : 0;
    if (t < inj->at_ns || (inj->until_ns && t >= inj->until_ns)) continue;
    jct_frame_t f = {.port = port, .out = inj->out};
    if (inj->ops->process(inj, &f, now_ns) == JCT_DROP) return true;
  }
  return false;
}

bool jct__chain_enabled(const jct__chain_t *c) {
  return c && !c->disabled;
}

size_t jct__chain_len(const jct__chain_t *c) {
  return c->n;
}

const jct_injector_t *jct__chain_get(const jct__chain_t *c, size_t i) {
  return i < c->n ? c->inj[i] : NULL;
}

void jct__chain_free(jct__chain_t *c) {
  if (!c) return;
  jct__chain_detach_hosts(c); /* normally done already, by the fabric */
  jct__chain_hosts_free(c);
  for (size_t i = 0; i < c->n; i++)
    jct_injector_free(c->inj[i]);
  free(c->inj);
  free_sites(c);
  free(c->ports);
  free(c);
}
