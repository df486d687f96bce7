/* A scenario's RDMA settings for the verbs transport (scenario_int.h,
 * include/jctlab/run.h's jct_rdma_opts_t): their form here; each agent
 * checks them against its device (harness/transport/rdma_sysfs.h). */
#include <string.h>

#include "harness/transport/rdma_sysfs.h"
#include "scenario_int.h"

#define MAX_PORT 254      /* IB port numbers are 8 bits; 255 is reserved */
#define MAX_GID_INDEX 4095 /* rxe's table has 1024 entries, mlx5's 256 */

static int counters(const jct__sc_ctx_t *c, const yaml_node_t *n, jct_rdma_opts_t *r) {
  char e[256];
  const char *w;
  int rc;
  if (n->type == YAML_SEQUENCE_NODE) {
    if (n->data.sequence.items.start == n->data.sequence.items.top)
      return jct__sc_at(c, n, "counters: an empty list");
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
      const yaml_node_t *item = jct__sc_node(c, *it);
      if ((rc = jct__sc_scalar(c, item, "counters", &w))) return rc;
      if (strchr(w, ',') || jct__rdma_add_counters(r, w, e, sizeof e))
        return jct__sc_at(c, item, "%s", strchr(w, ',') ? "counters: one name per item" : e);
    }
    return 0;
  }
  if ((rc = jct__sc_scalar(c, n, "counters", &w))) return rc;
  if (jct__rdma_add_counters(r, w, e, sizeof e)) return jct__sc_at(c, n, "%s", e);
  return 0;
}

int jct__sc_rdma(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, jct_rdma_opts_t *r) {
  uint64_t u;
  int rc;
  char e[256];
  if (!strcmp(k, "device")) {
    const char *w;
    if (!(rc = jct__sc_scalar(c, n, k, &w)) && jct__rdma_set_device(r, w, e, sizeof e))
      rc = jct__sc_at(c, n, "%s", e);
  } else if (!strcmp(k, "port")) {
    if (!(rc = jct__sc_count(c, n, k, 1, MAX_PORT, &u))) r->port = (uint8_t)u;
  } else if (!strcmp(k, "gid_index")) {
    if (!(rc = jct__sc_count(c, n, k, 0, MAX_GID_INDEX, &u))) {
      r->gid_index = (uint16_t)u;
      r->has_gid_index = true;
    }
  } else if (!strcmp(k, "traffic_class")) {
    if (!(rc = jct__sc_count(c, n, k, 0, 255, &u))) {
      r->traffic_class = (uint8_t)u;
      r->has_traffic_class = true;
    }
  } else {
    rc = counters(c, n, r);
  }
  return rc;
}
