/* A leaf-spine fabric's links over repetitions (internal to orch/): each
 * repetition's counters as the difference of two snapshots (session.c),
 * and the sums over a run's repetitions or a replay's side (run.c,
 * replay.c), so that `jctlab run`, `jctlab replay` and every scenario case
 * count their links alike (include/jctlab/fabric.h says what a link's
 * figures are).
 *
 * Counters add; the peak queue is a level, so a sum keeps the deepest of
 * its repetitions' peaks (each repetition's own: the session starts the
 * peaks again before it, jct_fabric_links_reset_peaks). Flows are matched
 * by (source rank, destination rank, UDP source port); a link holds at
 * most JCT_FABRIC_LINK_FLOWS of them, and the frames of any beyond go to
 * other_flows.
 */
#ifndef JCT_ORCH_LINKS_H
#define JCT_ORCH_LINKS_H

#include <stdint.h>

#include "jctlab/fabric.h"

/* Every link's counters now into a new array of jct_fabric_nlinks(f)
 * (*out NULL and *n 0 for the star). Errors: JCT_ENOMEM. */
int jct__linkstats_snap(jct_fabric_t *f, jct_fabric_link_stats_t **out, uint32_t *n);

/* after -= before, link by link (the same fabric's n links): what moved in
 * between; flows that did not move are dropped. The peak stays after's. */
void jct__linkstats_diff(jct_fabric_link_stats_t *after, const jct_fabric_link_stats_t *before,
                         uint32_t n);

/* Add x (n links) into *sum (*nsum links; a NULL *sum takes a copy of x).
 * Errors: JCT_ENOMEM (*sum unchanged). */
int jct__linkstats_add(jct_fabric_link_stats_t **sum, uint32_t *nsum,
                       const jct_fabric_link_stats_t *x, uint32_t n);

/* ECMP imbalance: max / mean of the uplinks' bytes (1: even); NaN without
 * uplinks or bytes. */
double jct__linkstats_imbalance(const jct_fabric_link_stats_t *l, uint32_t n);

#endif
