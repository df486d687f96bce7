/* Pause accounting for jct_inspect: links keyed by the source MAC of their
 * PFC (IEEE 802.1Qbb) and PAUSE (802.3 Annex 31B) frames, and per priority
 * the union of the paused intervals. Internal to traces/.
 */
#ifndef JCT_PAUSE_H
#define JCT_PAUSE_H

#include <stddef.h>
#include <stdint.h>

#include "flowtab.h"
#include "jctlab/inspect.h"

struct jct__link;

typedef struct {
  uint64_t rate_bps; /* never 0 */
  struct jct__link *links;
  size_t n, cap;
  jct__ftab_t tab;
} jct__links_t;

/* Account for one PFC/PAUSE frame seen at ts_ns; events go to cb (may be
 * NULL). Errors: JCT_ENOMEM (a new link could not be stored). */
int jct__links_add(jct__links_t *ls, const jct_packet_t *pkt, uint64_t ts_ns, uint64_t frame_no,
                   jct_event_cb cb, void *arg);

/* Close the pauses still open, at their expiry, and add the links' figures
 * to t (paused_ns, pause_frames_xoff, pause_frames_xon). */
void jct__links_finish(jct__links_t *ls, jct_totals_t *t);

const jct_link_t *jct__links_get(const jct__links_t *ls, size_t i);

void jct__links_free(jct__links_t *ls);

#endif
