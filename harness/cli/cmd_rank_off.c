/* `jctlab rank` in a build without MPI (JCT_MPI off, or Open MPI's
 * development files missing when it was configured). */
#include <stdio.h>

#include "commands.h"

int jct__cmd_rank(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "jctlab rank: not supported in this build: it needs MPI (Debian: apt-get "
                  "install openmpi-bin libopenmpi-dev, then rebuild)\n");
  return 2;
}
