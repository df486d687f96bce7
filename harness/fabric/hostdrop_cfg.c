/* A host program's configuration in the kernel's wall time (hostdrop.h). */
#include "hostdrop.h"

static uint64_t wall(uint64_t emulated_ns, double tdf) {
  double w = (double)emulated_ns * tdf;
  return w >= 18e18 ? UINT64_MAX : (uint64_t)w;
}

void jct__hostdrop_cfg_wall(struct jct_kdrop_cfg *cfg, double tdf) {
  if (!(tdf > 1) || cfg->mode != JCT_KDROP_DELAY) return;
  cfg->delay_ns = wall(cfg->delay_ns, tdf);
  for (uint32_t k = 0; k < cfg->nnaks && k < JCT_KDROP_MAX_NAKS; k++)
    cfg->nak_hold_ns[k] = wall(cfg->nak_hold_ns[k], tdf);
}
