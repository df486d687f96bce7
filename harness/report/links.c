/* A leaf-spine fabric's links in every report (`jctlab run`, `jctlab
 * replay`, scenario cases): the "fabric_links" JSON built from the links'
 * counters, and the table printed from that JSON, so that the terminal,
 * the JSON and report.md/report.html say the same. Each link's load, peak
 * queue, pause time, drops and marks, the flows each carried, the ECMP
 * imbalance, and the collisions named: uplinks that carried more data
 * flows (two or more) than an even spread over their leaf's uplinks
 * would put on one. A data
 * flow has at least a tenth of the largest flow's bytes (the ACKs of a
 * flow the other way are not one). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/base/units.h"
#include "report.h"
#include "report_int.h"
#include "result.h"

/* A flow carries data when it has at least a tenth of the bytes of the
 * largest flow on any link: ACKs and CNPs going the other way do not. */
static uint64_t elephant_bytes(const jct_fabric_link_stats_t *l, uint32_t n) {
  uint64_t max = 0;
  for (uint32_t k = 0; k < n; k++)
    for (uint32_t i = 0; i < l[k].nflows; i++)
      if (l[k].flows[i].bytes > max) max = l[k].flows[i].bytes;
  return max / 10 ? max / 10 : 1;
}

static uint32_t elephants(const jct_fabric_link_stats_t *l, uint64_t min) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < l->nflows; i++)
    n += l->flows[i].bytes >= min;
  return n;
}

/* The leaf whose uplink l is, or -1. */
static int leaf_of(const jct_fabric_link_stats_t *l) {
  unsigned a, b;
  if (l->uplink && sscanf(l->name, "leaf%u:spine%u", &a, &b) == 2) return (int)a;
  return -1;
}

/* A collision: uplink k carried two data flows or more, and more than an
 * even spread of its leaf's data flows over its uplinks would put on one
 * (ceil(flows / uplinks)): 2 flows on one of 2 uplinks, 7 and 1 of 8. */
static bool collision(const jct_fabric_link_stats_t *l, uint32_t n, uint32_t k, uint64_t min) {
  int leaf = leaf_of(&l[k]);
  uint32_t here = leaf < 0 ? 0 : elephants(&l[k], min);
  if (here < 2) return false;
  uint32_t flows = 0, uplinks = 0;
  for (uint32_t j = 0; j < n; j++)
    if (leaf_of(&l[j]) == leaf) flows += elephants(&l[j], min), uplinks++;
  return here > (flows + uplinks - 1) / uplinks;
}

json_t *jct__links_json(const jct_fabric_link_stats_t *l, uint32_t n, double imbalance) {
  if (!l || !n) return json_null();
  json_t *links = json_array(), *coll = json_array();
  uint64_t min = elephant_bytes(l, n);
  for (uint32_t k = 0; k < n; k++) {
    json_t *flows = json_array();
    for (uint32_t i = 0; i < l[k].nflows; i++) {
      const jct_fabric_flow_t *f = &l[k].flows[i];
      json_array_append_new(
          flows,
          json_pack("{s:I,s:I,s:i,s:I,s:I,s:b}", "src_rank", (json_int_t)f->src_rank, "dst_rank",
                    (json_int_t)f->dst_rank, "udp_sport", (int)f->udp_sport, "frames",
                    (json_int_t)f->frames, "bytes", (json_int_t)f->bytes, "data", f->bytes >= min));
    }
    json_array_append_new(
        links,
        json_pack("{s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:b}", "link", l[k].name, "uplink",
                  l[k].uplink, "bytes", (json_int_t)l[k].tx_bytes, "frames",
                  (json_int_t)l[k].tx_frames, "peak_queue_bytes", (json_int_t)l[k].peak_queue_bytes,
                  "paused_ns", (json_int_t)l[k].paused_ns, "drops", (json_int_t)l[k].drops,
                  "ecn_marked", (json_int_t)l[k].ecn_marked, "flows", flows, "other_flow_frames",
                  (json_int_t)l[k].other_flows, "collision", collision(l, n, k, min)));
    json_t *lo = json_array_get(links, k);
    json_object_set_new(lo, "down_ns", json_integer((json_int_t)l[k].down_ns));
    json_object_set_new(lo, "reroutes", json_integer((json_int_t)l[k].reroutes));
    json_object_set_new(lo, "restores", json_integer((json_int_t)l[k].restores));
    json_object_set_new(lo, "flows_moved", json_integer((json_int_t)l[k].flows_moved));
    if (collision(l, n, k, min)) json_array_append_new(coll, json_string(l[k].name));
  }
  return json_pack("{s:o,s:o,s:o}", "links", links, "ecmp_imbalance",
                   isfinite(imbalance) ? json_real(imbalance) : json_null(), "collisions", coll);
}

char *jct__links_flows_text(const json_t *link, char *buf, size_t len) {
  size_t used = 0, shown = 0, i;
  const json_t *f, *flows = jct__rget(link, "flows");
  buf[0] = 0;
  json_array_foreach(flows, i, f) {
    if (!json_is_true(json_object_get(f, "data")) || used >= len) continue;
    double s = 0, d = 0, p = 0;
    jct__rnum(f, "src_rank", &s), jct__rnum(f, "dst_rank", &d), jct__rnum(f, "udp_sport", &p);
    used +=
        (size_t)snprintf(buf + used, len - used, "%s%.0f->%.0f:%.0f", shown++ ? ", " : "", s, d, p);
  }
  size_t small = json_array_size(flows) - shown;
  if (small && used < len)
    snprintf(buf + used, len - used, "%s+%zu small", shown ? " " : "", small);
  return buf;
}

void jct__links_text(FILE *out, const json_t *fl, const char *indent) {
  const json_t *links = jct__rget(fl, "links"), *l;
  if (!json_is_array(links)) return;
  char b[3][32], flows[2048];
  size_t i;
  fprintf(out, "%s%-14s %12s %12s %10s %6s %6s  flows (src->dst:udp sport)\n", indent, "link",
          "bytes", "peak queue", "paused", "drops", "marks");
  json_array_foreach(links, i, l) {
    double drops = 0, marks = 0;
    jct__rnum(l, "drops", &drops), jct__rnum(l, "ecn_marked", &marks);
    fprintf(out, "%s%-14s %12s %12s %10s %6.0f %6.0f  %s\n", indent, jct__rstr(l, "link"),
            jct__rfmt_bytes(l, "bytes", b[0], 32), jct__rfmt_bytes(l, "peak_queue_bytes", b[1], 32),
            jct__rfmt_ns(l, "paused_ns", b[2], 32), drops, marks,
            jct__links_flows_text(l, flows, sizeof flows));
  }
  double im;
  if (jct__rnum(fl, "ecmp_imbalance", &im))
    fprintf(out, "%sECMP       uplink load max/mean %.2f (1.00: even)\n", indent, im);
  json_array_foreach(links, i, l) {
    double down = 0, rr = 0, rs = 0, moved = 0, drops = 0;
    jct__rnum(l, "down_ns", &down), jct__rnum(l, "reroutes", &rr), jct__rnum(l, "restores", &rs);
    jct__rnum(l, "flows_moved", &moved), jct__rnum(l, "drops", &drops);
    if (!down && !rr) continue;
    fprintf(out,
            "%slink down  %s: down %s, %.0f reroute%s, %.0f restore%s, %.0f flow%s moved off it, "
            "%.0f frames lost\n",
            indent, jct__rstr(l, "link"), jct__rfmt_ns(l, "down_ns", b[0], 32), rr,
            rr == 1 ? "" : "s", rs, rs == 1 ? "" : "s", moved, moved == 1 ? "" : "s", drops);
  }
  json_array_foreach(links, i, l) {
    if (!json_is_true(json_object_get(l, "collision"))) continue;
    size_t data = 0, j;
    const json_t *f;
    json_array_foreach(jct__rget(l, "flows"), j, f) data +=
        json_is_true(json_object_get(f, "data"));
    fprintf(out, "%scollision  %s carried %zu data flows (%s), more than an even spread over its "
            "leaf's uplinks\n",
            indent, jct__rstr(l, "link"), data, jct__links_flows_text(l, flows, sizeof flows));
  }
}
