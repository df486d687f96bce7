/* The injector kinds, listed explicitly (STYLE.md: constructor
 * self-registration silently vanishes when linked from a static library). */
#include "jctlab/injector.h"

extern const struct jct_injector_ops jct_drop_ops, jct_delay_ops, jct_reorder_ops, jct_pause_ops,
    jct_ecn_ops, jct_corrupt_ops, jct_flap_ops;

const struct jct_injector_ops *const jct_injector_kinds[] = {
    &jct_drop_ops, &jct_delay_ops,   &jct_reorder_ops, &jct_pause_ops,
    &jct_ecn_ops,  &jct_corrupt_ops, &jct_flap_ops,    NULL,
};
