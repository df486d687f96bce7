/* The injector kinds, listed explicitly (STYLE.md: constructor
 * self-registration silently vanishes when linked from a static library).
 * Each table is declared in injector.h; a new kind adds its line there and
 * its entry here. */
#include "jctlab/injector.h"

const struct jct_injector_ops *const jct_injector_kinds[] = {
    &jct_drop_ops, &jct_delay_ops,   &jct_reorder_ops, &jct_pause_ops,
    &jct_ecn_ops,  &jct_corrupt_ops, &jct_flap_ops,    &jct_duplicate_ops,
    &jct_rate_ops, &jct_stall_ops,   &jct_timeout_ops, NULL,
};
