/* A figure's spread in words (internal): the profile's 1-2-5 bins that
 * hold samples (include/jctlab/profile.h, jct_figure_t.spread), for
 * `jctlab inspect`'s summary and a postmortem's fidelity section. */
#ifndef JCT_SPREAD_TEXT_H
#define JCT_SPREAD_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "4 at 0, 7 in 500 µs-1 ms, 9 in 1-2 ms, ..." into buf (each range
 * includes its start, not its end; the last bin "and above"), bins of
 * spread (JCT_FIGURE_BINS counts) in order; time: the unit is ns, printed
 * as ns, µs, ms or s, else a count with no unit. Cut short, never beyond
 * len. Returns buf; the number of bins that hold samples in *bins (NULL:
 * not wanted). */
char *jct__fmt_spread(const uint64_t *spread, bool time, char *buf, size_t len, unsigned *bins);

#endif
