/* A scenario's top-level keys (scenario_int.h): the job's source (one of
 * synth:, trace:, schedule:; a file relative to the scenario's directory,
 * returned absolute; a generated collective checked by generating it
 * once), and every fabric and run option into the scenario's run options
 * (jct_run_opts_t, with jctlab's defaults from run_args.h where a key is
 * absent), checked together where they constrain each other (mtu against
 * path_mtu). Then each item of cases: (scenario_cases.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/units.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"
#include "scenario_int.h"

#define UROCE_HEADROOM_BYTES 64 /* BTH 12 RETH 16 ImmDt 4 ICRC 4 UDP 8 IPv4 20 */

static int resolve(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, const char *p,
                   char **out) {
  char buf[PATH_MAX];
  int len = p[0] == '/' ? snprintf(buf, sizeof buf, "%s", p)
                        : snprintf(buf, sizeof buf, "%s/%s", c->base_dir, p);
  if (len < 0 || (size_t)len >= sizeof buf) return jct__sc_at(c, n, "%s: the path is too long", k);
  char *r = realpath(buf, NULL);
  if (!r) return jct__sc_at(c, n, "%s: '%s' (%s): %s", k, p, buf, strerror(errno));
  struct stat st;
  const char *why = stat(r, &st)           ? strerror(errno)
                    : !S_ISREG(st.st_mode) ? "not a file"
                    : access(r, R_OK)      ? strerror(errno)
                                           : NULL;
  if (why) {
    free(r);
    return jct__sc_at(c, n, "%s: '%s' (%s): %s", k, p, buf, why);
  }
  free(*out);
  *out = r;
  return 0;
}

static int parse_synth(const jct__sc_ctx_t *c, yaml_node_t *n) {
  jct__scenario_t *s = c->s;
  if (n->type != YAML_MAPPING_NODE)
    return jct__sc_at(c, n, "synth: expected a mapping {algorithm, ranks, bytes, channels}, not %s",
                      jct__sc_kind(n));
  int rc = jct__sc_check_keys(c, n, "synth");
  if (rc) return rc;
  uint64_t ranks = 0, bytes = 0, channels = 1;
  bool have_algo = false;
  JCT_SC_FOR_PAIRS(c, n, k, kn, v) {
    if (!strcmp(k, "algorithm")) {
      const char *a;
      if ((rc = jct__sc_scalar(c, v, "synth: algorithm", &a))) return rc;
      size_t i = 0;
      while (jct_synth_algorithms[i] && strcmp(jct_synth_algorithms[i], a))
        i++;
      if (!jct_synth_algorithms[i]) {
        char known[128] = "";
        for (size_t j = 0; jct_synth_algorithms[j]; j++)
          snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", j ? ", " : "",
                   jct_synth_algorithms[j]);
        return jct__sc_at(c, v, "synth: algorithm: '%s' is not one of %s", a, known);
      }
      snprintf(s->synth.algorithm, sizeof s->synth.algorithm, "%s", a);
      have_algo = true;
    } else if (!strcmp(k, "ranks")) {
      rc = jct__sc_count(c, v, "synth: ranks", 2, 64, &ranks);
    } else if (!strcmp(k, "bytes")) {
      const char *b;
      if ((rc = jct__sc_scalar(c, v, "synth: bytes", &b))) return rc;
      if (jct__parse_size_bytes(b, &bytes) || !bytes)
        return jct__sc_at(c, v, "synth: bytes: '%s' is not a size (8MiB, 64M, 1GiB, 4096)", b);
    } else if (!strcmp(k, "channels")) {
      rc = jct__sc_count(c, v, "synth: channels", 1, 64, &channels);
    } else {
      return jct__sc_at(c, kn, "synth: unknown key '%s' (algorithm, ranks, bytes, channels)", k);
    }
    if (rc) return rc;
  }
  if (!have_algo || !ranks || !bytes)
    return jct__sc_at(c, n, "synth: needs %s",
                      !have_algo ? "algorithm: (ring, tree, ...)"
                      : !ranks   ? "ranks: (2 to 64)"
                                 : "bytes: (a size: 8MiB)");
  s->synth.ranks = (uint32_t)ranks;
  s->synth.bytes = bytes;
  s->synth.channels = (uint32_t)channels;
  /* What only the generator knows (halving-doubling's power of two, a
   * chunk of at least one byte) is found by generating it once. */
  jct_schedule_t *sched;
  char e[256];
  rc = jct_schedule_synth(&sched, s->synth.algorithm, s->synth.ranks, bytes, s->synth.channels, e,
                          sizeof e);
  if (rc == JCT_ENOMEM) return jct__sc_oom(c);
  if (rc) return jct__sc_at(c, n, "synth: %s", e);
  jct_schedule_free(sched);
  return 0;
}

static int set_source(const jct__sc_ctx_t *c, yaml_node_t *kn, const yaml_node_t **src,
                      jct__scenario_source_t t) {
  if (*src)
    return jct__sc_at(c, kn,
                      "%s: a second source (%s: at line %zu): give one of synth, trace, schedule",
                      (const char *)kn->data.scalar.value, (const char *)(*src)->data.scalar.value,
                      (*src)->start_mark.line + 1);
  *src = kn;
  c->s->source = t;
  return 0;
}

int jct__sc_parse_top(const jct__sc_ctx_t *c, yaml_node_t *root) {
  jct__scenario_t *s = c->s;
  if (root->type != YAML_MAPPING_NODE)
    return jct__sc_at(
        c, root, "expected a mapping (name:, synth:|trace:|schedule:, rate:, cases:, ...), not %s",
        jct__sc_kind(root));
  int rc = jct__sc_check_keys(c, root, "scenario");
  if (rc) return rc;
  const yaml_node_t *src = NULL, *mtu_node = NULL, *transport_node = NULL, *lab_node = NULL;
  yaml_node_t *cases = NULL;
  uint64_t u;
  JCT_SC_FOR_PAIRS(c, root, k, kn, v) {
    if (!strcmp(k, "name")) {
      rc = jct__sc_string(c, v, k, &s->name);
    } else if (!strcmp(k, "description")) {
      rc = jct__sc_string(c, v, k, &s->description);
    } else if (!strcmp(k, "synth")) {
      if (!(rc = set_source(c, kn, &src, JCT_SCEN_SYNTH))) rc = parse_synth(c, v);
    } else if (!strcmp(k, "trace") || !strcmp(k, "schedule")) {
      const char *p;
      if (!(rc = set_source(c, kn, &src, k[0] == 't' ? JCT_SCEN_TRACE : JCT_SCEN_SCHEDULE)) &&
          !(rc = jct__sc_scalar(c, v, k, &p)))
        rc = *p ? resolve(c, v, k, p, &s->input) : jct__sc_at(c, v, "%s: empty", k);
    } else if (!strcmp(k, "transport")) {
      transport_node = v;
      const char *t;
      if (!(rc = jct__sc_scalar(c, v, k, &t)) && jct__transport_parse(t, &s->run.transport))
        rc = jct__sc_at(c, v, "transport: '%s' is not uroce or verbs", t);
    } else if (!strcmp(k, "rate")) {
      rc = jct__sc_rate(c, v, k, &s->run.rate_bps);
      s->user_set |= JCT__SET_RATE;
    } else if (!strcmp(k, "captured_rate")) {
      rc = jct__sc_rate(c, v, k, &s->captured_rate_bps);
    } else if (!strcmp(k, "delay")) {
      rc = jct__sc_time(c, v, k, 0, 1000000000u, &s->run.prop_delay_ns);
      s->user_set |= JCT__SET_DELAY;
    } else if (!strcmp(k, "mtu")) {
      mtu_node = v;
      if (!(rc = jct__sc_count(c, v, k, 576, 65535, &u))) s->run.mtu = (uint32_t)u;
    } else if (!strcmp(k, "path_mtu")) {
      const char *m;
      if (!(rc = jct__sc_scalar(c, v, k, &m)) && jct__parse_path_mtu(m, &s->run.path_mtu_bytes))
        rc = jct__sc_at(c, v, "path_mtu: %s is not 256, 512, 1024, 2048 or 4096", m);
      s->user_set |= JCT__SET_PATH_MTU;
    } else if (!strcmp(k, "pfc")) {
      rc = jct__sc_bool(c, v, k, &s->run.pfc);
    } else if (!strcmp(k, "ecn")) {
      rc = jct__sc_bool(c, v, k, &s->run.ecn);
    } else if (!strcmp(k, "ecn_thresholds")) {
      const char *t;
      if (!(rc = jct__sc_scalar(c, v, k, &t)) &&
          jct__parse_ecn_thresholds(t, &s->run.ecn_kmin_bytes, &s->run.ecn_kmax_bytes,
                                    &s->run.ecn_pmax))
        rc = jct__sc_at(c, v,
                        "ecn_thresholds: '%s' is not KMIN,KMAX,PMAX (sizes with KMIN <= KMAX, "
                        "0 < PMAX <= 1)",
                        t);
    } else if (!strcmp(k, "topology")) {
      const char *w;
      char e[256];
      if (!(rc = jct__sc_scalar(c, v, k, &w)) && jct_clos_parse(&s->clos, w, e, sizeof e))
        rc = jct__sc_at(c, v, "topology: %s", e);
    } else if (!strcmp(k, "placement")) {
      const char *w;
      char e[256];
      if (!(rc = jct__sc_scalar(c, v, k, &w))) {
        snprintf(s->placement, sizeof s->placement, "%s", w);
        if (jct_placement_parse(&s->clos.placement, s->placement, e, sizeof e))
          rc = jct__sc_at(c, v, "placement: %s", e);
      }
    } else if (!strcmp(k, "ecmp_seed")) {
      if (!(rc = jct__sc_count(c, v, k, 0, UINT32_MAX, &u))) s->clos.ecmp_seed = (uint32_t)u;
    } else if (!strcmp(k, "ecmp")) {
      const char *w;
      char e[256];
      if (!(rc = jct__sc_scalar(c, v, k, &w)) && jct_clos_ecmp_parse(&s->clos, w, e, sizeof e))
        rc = jct__sc_at(c, v, "ecmp: %s", e);
    } else if (!strcmp(k, "reroute_detection")) {
      rc = jct__sc_reroute(c, v, k, &s->clos);
    } else if (!strcmp(k, "qps_per_connection")) {
      if (!(rc = jct__sc_count(c, v, k, 1, JCT_SCHEDULE_MAX_QPS_PER_CONN, &u)))
        s->qps_per_conn = (uint32_t)u;
    } else if (!strcmp(k, "cc")) {
      rc = jct__sc_cc(c, v, k, &s->run.cc);
    } else if (!strcmp(k, "cc_profile")) {
      const char *w;
      if (!(rc = jct__sc_scalar(c, v, k, &w)) && jct_dcqcn_profile_parse(w, &s->run.cc_profile))
        rc = jct__sc_at(c, v, "cc_profile: '%s' is not connectx or paper", w);
    } else if (!strcmp(k, "cc_dilation")) {
      const char *w;
      if (!(rc = jct__sc_scalar(c, v, k, &w)) && strcmp(w, "auto")) {
        if (!(rc = jct__sc_double(c, v, k, &s->run.cc_dilation)) &&
            !(s->run.cc_dilation >= 1 && s->run.cc_dilation <= 1e9))
          rc = jct__sc_at(c, v, "cc_dilation: %g is not auto or a factor from 1 to 1e9",
                          s->run.cc_dilation);
      }
    } else if (!strcmp(k, "tdf")) {
      if (!(rc = jct__sc_double(c, v, k, &s->run.tdf)) &&
          !(s->run.tdf >= 1 && s->run.tdf <= JCT_CLOCK_MAX_TDF))
        rc = jct__sc_at(c, v, "tdf: %g is not a factor from 1 to 1048576", s->run.tdf);
    } else if (!strcmp(k, "rate_ceiling")) {
      if (!(rc = jct__sc_rate(c, v, k, &s->run.rate_ceiling_bps)) &&
          s->run.rate_ceiling_bps < 1000000)
        rc = jct__sc_at(c, v, "rate_ceiling: below 1 Mbit/s");
    } else if (!strcmp(k, "wall_budget")) {
      rc = jct__sc_time(c, v, k, 1, UINT64_MAX, &s->run.wall_budget_ns);
    } else if (!strcmp(k, "silent_after")) {
      rc = jct__sc_time(c, v, k, JCT_RUN_SILENT_AFTER_MIN_NS, 3600000000000ull,
                        &s->run.silent_after_ns);
    } else if (!strcmp(k, "pfc_watchdog")) {
      jct__watchdog_t w;
      if (!(rc = jct__sc_watchdog(c, v, k, &w))) jct__watchdog_set(&s->run, w);
    } else if (!strcmp(k, "nak_delay") || !strcmp(k, "nak_react")) {
      bool react = k[4] == 'r';
      rc = jct__sc_time(c, v, k, 0, 10000000000ull,
                        react ? &s->run.nak_react_ns : &s->run.nak_delay_ns);
      s->user_set |= react ? JCT__SET_NAK_REACT : JCT__SET_NAK_DELAY;
    } else if (!strcmp(k, "timeout")) {
      if (!(rc = jct__sc_count(c, v, k, 0, 31, &u))) s->run.timeout = (uint8_t)u;
      s->user_set |= JCT__SET_TIMEOUT;
    } else if (!strcmp(k, "retry")) {
      if (!(rc = jct__sc_count(c, v, k, 0, 7, &u))) s->run.retry_cnt = (uint8_t)u;
      s->user_set |= JCT__SET_RETRY;
    } else if (!strcmp(k, "reps")) {
      if (!(rc = jct__sc_count(c, v, k, 1, JCT_RUN_MAX_REPS, &u))) s->run.reps = (uint32_t)u;
    } else if (!strcmp(k, "lab")) {
      if (!(rc = jct__sc_count(c, v, k, 2, 64, &u))) s->run.lab_ranks = (uint32_t)u;
      lab_node = v;
    } else if (!strcmp(k, "seed")) {
      rc = jct__sc_count(c, v, k, 0, UINT64_MAX, &s->run.seed);
    } else if (!strcmp(k, "scale")) {
      if (!(rc = jct__sc_double(c, v, k, &s->scale)) && !(s->scale > 0 && s->scale <= 1000))
        rc = jct__sc_at(c, v, "scale: %g is not above 0 and at most 1000", s->scale);
    } else if (!strcmp(k, "device") || !strcmp(k, "port") || !strcmp(k, "gid_index") ||
               !strcmp(k, "traffic_class") || !strcmp(k, "counters")) {
      rc = jct__sc_rdma(c, v, k, &s->run.rdma);
    } else if (!strcmp(k, "cases")) {
      cases = v;
    } else {
      rc = jct__sc_at(
          c, kn,
          "unknown key '%s' (name, description, synth, trace, schedule, transport, rate, "
          "captured_rate, delay, mtu, path_mtu, pfc, ecn, ecn_thresholds, cc, cc_profile, "
          "cc_dilation, tdf, rate_ceiling, wall_budget, silent_after, pfc_watchdog, nak_delay, "
          "nak_react, timeout, retry, reps, lab, seed, scale, topology, placement, ecmp_seed, "
          "ecmp, reroute_detection, qps_per_connection, device, port, gid_index, traffic_class, "
          "counters, cases)",
          k);
    }
    if (rc) return rc;
  }
  if (!src)
    return jct__sc_at(
        c, root, "no source: give synth: {algorithm, ranks, bytes}, trace: FILE or schedule: FILE");
  /* lab: N means soft-RoCE VMs, whose ranks run verbs (as --lab). */
  if (lab_node && transport_node && s->run.transport != JCT_TRANSPORT_VERBS)
    return jct__sc_at(c, transport_node,
                      "transport: the lab's ranks (lab: %u) run verbs, not uroce",
                      s->run.lab_ranks);
  if (lab_node) s->run.transport = JCT_TRANSPORT_VERBS;
  if (s->clos.leaves) {
    s->run.clos = &s->clos;
    uint32_t host_of[JCT_SWITCH_MAX_PORTS * JCT_CLOS_MAX_LEAVES];
    char e[256] = "more ranks than a leaf-spine fabric holds";
    if (s->source == JCT_SCEN_SYNTH &&
        (s->synth.ranks > JCT_SWITCH_MAX_PORTS * JCT_CLOS_MAX_LEAVES ||
         jct_clos_place(&s->clos, s->synth.ranks, host_of, e, sizeof e)))
      return jct__sc_at(c, root, "topology: %s", e);
  }
  uint32_t pmtu = s->run.path_mtu_bytes ? s->run.path_mtu_bytes : 4096;
  if (mtu_node && s->run.mtu < pmtu + UROCE_HEADROOM_BYTES)
    return jct__sc_at(c, mtu_node,
                      "mtu: %u is too small for path_mtu %u (needs %u): lower path_mtu", s->run.mtu,
                      pmtu, pmtu + UROCE_HEADROOM_BYTES);
  if (!cases)
    return jct__sc_at(c, root,
                      "no cases: give cases: [{name:, inject: [SPEC], max_degradation:}, ...]");
  if (cases->type != YAML_SEQUENCE_NODE)
    return jct__sc_at(c, cases, "cases: expected a list of cases, not %s", jct__sc_kind(cases));
  if (cases->data.sequence.items.start == cases->data.sequence.items.top)
    return jct__sc_at(c, cases, "cases: an empty list");
  uint32_t i = 0;
  for (yaml_node_item_t *it = cases->data.sequence.items.start; it < cases->data.sequence.items.top;
       it++, i++)
    if ((rc = jct__sc_parse_case(c, jct__sc_node(c, *it), i))) return rc;
  return 0;
}
