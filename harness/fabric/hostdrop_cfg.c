/* A host program's configuration in the kernel's wall time (hostdrop.h):
 * one conversion for the namespaces' chains (chain_host.c) and the lab's
 * and real hosts' agents (harness/lab/agent_host.c), so they cannot drift. */
#include <string.h>

#include "common/errf.h"
#include "hostdrop.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"

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

int jct__hostdrop_cfg_of(const jct_injector_t *inj, double tdf, struct jct_kdrop_cfg *cfg,
                         char *err, size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  if (!inj->ops->kernel)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: not a kind a host's kernel runs", inj->spec);
  int rc = inj->ops->kernel(inj, cfg, err, errlen);
  if (rc < 0) return rc;
  jct__hostdrop_cfg_wall(cfg, tdf);
  bool dilated = tdf > 1;
  cfg->seed = inj->seed;
  cfg->at_ns = dilated ? wall(inj->at_ns, tdf) : inj->at_ns;
  cfg->until_ns = dilated && inj->until_ns ? wall(inj->until_ns, tdf) : inj->until_ns;
  return 0;
}
