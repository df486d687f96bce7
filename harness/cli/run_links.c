/* A leaf-spine run's links in `jctlab run`'s report (text and JSON): each
 * link's load, peak queue, pause time, drops and marks, the flows each
 * uplink carried, the ECMP imbalance, and the collisions named: uplinks
 * that carried more than one flow while another uplink of the same leaf
 * carried none. A data flow has at least a tenth of the largest flow's
 * bytes (the ACKs of a flow the other way are not one). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "harness/base/units.h"

/* A flow carries data when it has at least a tenth of the bytes of the
 * largest flow on any uplink: ACKs and CNPs going the other way do not. */
static uint64_t elephant_bytes(const jct_run_result_t *r) {
  uint64_t max = 0;
  for (uint32_t k = 0; k < r->nlinks; k++)
    for (uint32_t i = 0; i < r->links[k].nflows; i++)
      if (r->links[k].flows[i].bytes > max) max = r->links[k].flows[i].bytes;
  return max / 10 ? max / 10 : 1;
}

static uint32_t elephants(const jct_fabric_link_stats_t *l, uint64_t min) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < l->nflows; i++)
    n += l->flows[i].bytes >= min;
  return n;
}

/* The leaf a link name starts or ends at, and whether it is leaf's uplink. */
static int leaf_of(const jct_fabric_link_stats_t *l) {
  unsigned a, b;
  if (l->uplink && sscanf(l->name, "leaf%u:spine%u", &a, &b) == 2) return (int)a;
  return -1;
}

/* A collision: uplink k carried two data flows or more while another
 * uplink of its leaf carried none. */
static bool collision(const jct_run_result_t *r, uint32_t k, uint64_t min) {
  int leaf = leaf_of(&r->links[k]);
  if (leaf < 0 || elephants(&r->links[k], min) < 2) return false;
  for (uint32_t j = 0; j < r->nlinks; j++)
    if (j != k && leaf_of(&r->links[j]) == leaf && elephants(&r->links[j], min) == 0) return true;
  return false;
}

static void print_flows(const jct_fabric_link_stats_t *l, uint64_t min) {
  uint32_t shown = 0;
  for (uint32_t i = 0; i < l->nflows; i++)
    if (l->flows[i].bytes >= min)
      printf("%s%u->%u:%u", shown++ ? ", " : "", l->flows[i].src_rank, l->flows[i].dst_rank,
             l->flows[i].udp_sport);
  if (shown < l->nflows) printf("%s+%u small", shown ? " " : "", l->nflows - shown);
}

void jct__links_print(const jct_run_result_t *r) {
  if (!r->links) return;
  char b1[32], b2[32], b3[32];
  uint64_t min = elephant_bytes(r);
  printf("\n  %-14s %12s %12s %10s %6s %6s  flows (src->dst:udp sport)\n", "link", "bytes",
         "peak queue", "paused", "drops", "marks");
  for (uint32_t k = 0; k < r->nlinks; k++) {
    const jct_fabric_link_stats_t *l = &r->links[k];
    printf("  %-14s %12s %12s %10s %6llu %6llu  ", l->name, jct__fmt_bytes(l->tx_bytes, b1, 32),
           jct__fmt_bytes(l->peak_queue_bytes, b2, 32), jct__fmt_ns(l->paused_ns, b3, 32),
           (unsigned long long)l->drops, (unsigned long long)l->ecn_marked);
    print_flows(l, min);
    printf("\n");
  }
  if (isfinite(r->ecmp_imbalance))
    printf("ECMP       uplink load max/mean %.2f (1.00: even)\n", r->ecmp_imbalance);
  for (uint32_t k = 0; k < r->nlinks; k++) {
    const jct_fabric_link_stats_t *l = &r->links[k];
    if (!l->down_ns && !l->reroutes) continue;
    printf("link down  %s: down %s, %llu reroute%s, %llu restore%s, %llu flow%s moved off it, "
           "%llu frames lost\n",
           l->name, jct__fmt_ns(l->down_ns, b1, 32), (unsigned long long)l->reroutes,
           l->reroutes == 1 ? "" : "s", (unsigned long long)l->restores,
           l->restores == 1 ? "" : "s", (unsigned long long)l->flows_moved,
           l->flows_moved == 1 ? "" : "s", (unsigned long long)l->drops);
  }
  for (uint32_t k = 0; k < r->nlinks; k++) {
    const jct_fabric_link_stats_t *l = &r->links[k];
    if (!collision(r, k, min)) continue;
    printf("collision  %s carried %u data flows (", l->name, elephants(l, min));
    print_flows(l, min);
    printf(") while an uplink of its leaf was idle\n");
  }
}

json_t *jct__links_json(const jct_run_result_t *r) {
  if (!r->links) return json_null();
  json_t *links = json_array(), *coll = json_array();
  uint64_t min = elephant_bytes(r);
  for (uint32_t k = 0; k < r->nlinks; k++) {
    const jct_fabric_link_stats_t *l = &r->links[k];
    json_t *flows = json_array();
    for (uint32_t i = 0; i < l->nflows; i++)
      json_array_append_new(
          flows, json_pack("{s:I,s:I,s:i,s:I,s:I}", "src_rank", (json_int_t)l->flows[i].src_rank,
                           "dst_rank", (json_int_t)l->flows[i].dst_rank, "udp_sport",
                           (int)l->flows[i].udp_sport, "frames", (json_int_t)l->flows[i].frames,
                           "bytes", (json_int_t)l->flows[i].bytes));
    json_array_append_new(
        links, json_pack("{s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I}", "link", l->name, "uplink",
                         l->uplink, "bytes", (json_int_t)l->tx_bytes, "frames",
                         (json_int_t)l->tx_frames, "peak_queue_bytes",
                         (json_int_t)l->peak_queue_bytes, "paused_ns", (json_int_t)l->paused_ns,
                         "drops", (json_int_t)l->drops, "ecn_marked", (json_int_t)l->ecn_marked,
                         "flows", flows, "other_flow_frames", (json_int_t)l->other_flows));
    json_t *lo = json_array_get(links, json_array_size(links) - 1);
    json_object_set_new(lo, "down_ns", json_integer((json_int_t)l->down_ns));
    json_object_set_new(lo, "reroutes", json_integer((json_int_t)l->reroutes));
    json_object_set_new(lo, "restores", json_integer((json_int_t)l->restores));
    json_object_set_new(lo, "flows_moved", json_integer((json_int_t)l->flows_moved));
    if (collision(r, k, min))
      json_array_append_new(coll, json_string(l->name));
  }
  return json_pack("{s:o,s:o,s:o}", "links", links, "ecmp_imbalance",
                   isfinite(r->ecmp_imbalance) ? json_real(r->ecmp_imbalance) : json_null(),
                   "collisions", coll);
}
