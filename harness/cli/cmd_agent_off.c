/* `jctlab agent` in a build without rdma-core (-DJCT_VERBS=OFF): says so.
 * The orchestrator's side (--lab, --agents) is built either way; it then
 * reports this agent's refusal. */
#include <stdio.h>

#include "commands.h"

int jct__cmd_agent(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "jctlab agent: the verbs transport is not supported in this build (configure "
                  "with -DJCT_VERBS=ON, with libibverbs-dev and librdmacm-dev installed)\n");
  return 2;
}
