/* Inside the scenario loader (scenario.h), shared by its files:
 *   scenario.c        the file and its YAML documents, freeing, a case's run options
 *   scenario_keys.c   the top-level keys: the source (synth, trace, schedule)
 *                     and the fabric's and the run's options
 *   scenario_cases.c  cases: inject specs, sweeps expanded, budgets, overrides
 *   scenario_yaml.c   the document model: errors at a node, values read
 *                     with units.h's parsers, a mapping's keys checked
 * Each reader takes the loader's context, the node, and the key it is the
 * value of (for the message), and returns 0 or JCT_EINVAL with err set to
 * "FILE:LINE:COL: KEY: what is wrong" (jct__sc_at). */
#ifndef JCT_SCENARIO_INT_H
#define JCT_SCENARIO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "scenario.h"

/* What a load carries through the walk. */
typedef struct {
  const char *file, *base_dir; /* the name errors give; where relative paths start */
  yaml_document_t *doc;
  char *err;
  size_t errlen;
  jct__scenario_t *s; /* being filled */
} jct__sc_ctx_t;

static inline yaml_node_t *jct__sc_node(const jct__sc_ctx_t *c, int id) {
  return yaml_document_get_node(c->doc, id);
}

/* "a mapping", "a list" or "a value", for messages. */
static inline const char *jct__sc_kind(const yaml_node_t *n) {
  return n->type == YAML_MAPPING_NODE    ? "a mapping"
         : n->type == YAML_SEQUENCE_NODE ? "a list"
                                         : "a value";
}

/* err = "FILE:LINE:COL: " and the message, at node n. Returns JCT_EINVAL. */
int jct__sc_at(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* err = "FILE: out of memory". Returns JCT_ENOMEM. */
int jct__sc_oom(const jct__sc_ctx_t *c);

/* The values, key k's: a plain value (no NUL inside); a non-empty string
 * (malloc'd, replacing *out); true/yes/on or false/no/off; a whole number
 * in [min, max]; a rate (units.h); a time in [min, max] ns; a finite
 * number; the watchdog (a boolean word, drop or forward). */
int jct__sc_scalar(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, const char **out);
int jct__sc_string(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, char **out);
int jct__sc_bool(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, bool *out);
int jct__sc_count(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, uint64_t min,
                  uint64_t max, uint64_t *out);
int jct__sc_rate(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, uint64_t *out);
int jct__sc_time(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, uint64_t min,
                 uint64_t max, uint64_t *out);
int jct__sc_double(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, double *out);
int jct__sc_watchdog(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k,
                     jct__watchdog_t *out);
/* Congestion control: none or dcqcn. */
int jct__sc_cc(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, jct_cc_t *out);
/* Rerouting's detection time: a time or off (clos.h), into clos. */
int jct__sc_reroute(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, jct_clos_t *clos);
/* The verbs transport's RDMA settings (jct_rdma_opts_t): device, port,
 * gid_index, traffic_class, counters (a list of names, or one string of
 * comma-separated names) into r (scenario_rdma.c). */
int jct__sc_rdma(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, jct_rdma_opts_t *r);

/* The mapping's keys: each a plain value, none twice. what names the
 * mapping in messages ("scenario", "synth", "case"). */
int jct__sc_check_keys(const jct__sc_ctx_t *c, const yaml_node_t *map, const char *what);

/* Every key (kname, its node knode) and value (vnode) of a mapping whose
 * keys jct__sc_check_keys() accepted. The body may return or continue, not
 * break. */
#define JCT_SC_FOR_PAIRS(c, map, kname, knode, vnode)                                              \
  for (yaml_node_pair_t *pp_ = (map)->data.mapping.pairs.start;                                    \
       pp_ < (map)->data.mapping.pairs.top; pp_++)                                                 \
    for (yaml_node_t *knode = jct__sc_node(c, pp_->key), *vnode = jct__sc_node(c, pp_->value);     \
         knode; knode = NULL)                                                                      \
      for (const char *kname = (const char *)knode->data.scalar.value; kname; kname = NULL)

/* The document's root mapping into c->s (scenario_keys.c). */
int jct__sc_parse_top(const jct__sc_ctx_t *c, yaml_node_t *root);

/* The case at index (from 0) of cases:, expanded, validated and appended
 * to c->s->cases (scenario_cases.c). */
int jct__sc_parse_case(const jct__sc_ctx_t *c, yaml_node_t *n, uint32_t index);

/* Free what one case holds (not the case itself). */
void jct__sc_free_case(jct__scenario_case_t *k);

#endif
