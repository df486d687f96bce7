/* What inspect.c shares with the rest of traces/ (internal to jctlab). */
#ifndef JCT_INSPECT_INT_H
#define JCT_INSPECT_INT_H

#include "jctlab/inspect.h"

/* The options an analysis was made with. */
const jct_inspect_opts_t *jct__inspect_opts(const jct_inspect_t *ins);

/* The flow of the last RoCE packet added, or -1. */
long jct__inspect_last_flow(const jct_inspect_t *ins);

#endif
