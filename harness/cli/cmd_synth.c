/* `jctlab synth ALGO --ranks N --bytes S [--channels C] [-o FILE]`: write a
 * generated collective's schedule as JSON (include/jctlab/schedule.h), for
 * `jctlab run` to execute or for a person to read and edit. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"
#include "harness/base/units.h"

static const char usage_text[] =
    "usage: jctlab synth ALGO --ranks N --bytes SIZE [--channels C] [-o FILE]\n"
    "\n"
    "Generate the schedule of a collective for N ranks and SIZE bytes, as JSON.\n"
    "\n"
    "ALGO:\n"
    "  ring              NCCL's ring AllReduce: reduce-scatter then all-gather,\n"
    "                    2(N-1) steps of SIZE/N bytes\n"
    "  tree              double binary tree AllReduce (two trees, half the data each)\n"
    "  halving-doubling  Rabenseifner's AllReduce (N a power of two)\n"
    "  all-to-all        every rank sends SIZE/N bytes to every other rank\n"
    "  all-gather        NCCL's ring all-gather of SIZE in all: N-1 steps of SIZE/N\n"
    "  reduce-scatter    NCCL's ring reduce-scatter of SIZE per rank: N-1 steps of SIZE/N\n"
    "  broadcast         NCCL's ring broadcast from rank 0, pipelined in 512 KiB chunks\n"
    "  incast            ranks 1..N-1 each send SIZE to rank 0 at once\n"
    "                    (nccl-tests' allgather, reducescatter, alltoall are taken too)\n"
    "\n"
    "options:\n"
    "  --ranks N         ranks, 2 to 4096\n"
    "  --bytes SIZE      the collective's size: 8MiB, 64M (= MiB, as nccl-tests),\n"
    "                    1GiB, 500MB (powers of 1000), 4096\n"
    "  --channels C      split the data over C channels, each with its own QPs (default 1)\n"
    "  -o FILE           write to FILE (default: standard output)\n"
    "\n"
    "exit status: 0 success, 2 bad input, 1 write error.\n";

#define bad(...) jct__cmd_bad("synth", __VA_ARGS__)

int jct__cmd_synth(int argc, char **argv) {
  const char *alg = NULL, *out = "-";
  uint64_t ranks = 0, bytes = 0, channels = 1;
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    } else if (strcmp(w, "--ranks") == 0) {
      if (!v || jct__parse_count(v, 4096, &ranks)) return bad("--ranks needs a number of ranks");
      i++;
    } else if (strcmp(w, "--bytes") == 0) {
      if (!v || jct__parse_size_bytes(v, &bytes))
        return bad("--bytes: '%s' is not a size (8MiB, 64M, 1GiB, 4096)", v ? v : "");
      i++;
    } else if (strcmp(w, "--channels") == 0) {
      if (!v || jct__parse_count(v, 64, &channels)) return bad("--channels needs 1 to 64");
      i++;
    } else if (strcmp(w, "-o") == 0 || strcmp(w, "--output") == 0) {
      if (!v) return bad("%s needs a file", w);
      out = v;
      i++;
    } else if (w[0] == '-') {
      return bad("unknown option '%s'", w);
    } else if (alg) {
      return bad("one algorithm only: '%s'", w);
    } else {
      alg = w;
    }
  }
  if (!alg)
    return bad("which algorithm? ring, tree, halving-doubling, all-to-all, all-gather, "
               "reduce-scatter, broadcast or incast");
  if (!ranks) return bad("--ranks is missing");
  if (!bytes) return bad("--bytes is missing");
  if (jct__cmd_output_ok("synth", "-o", out)) return 2;

  char err[256];
  jct_schedule_t *s;
  int rc = jct_schedule_synth(&s, alg, (uint32_t)ranks, bytes, (uint32_t)channels, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab synth: %s\n", err[0] ? err : jct_strerror(rc));
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  rc = jct_schedule_save(s, out, err, sizeof err);
  jct_schedule_free(s);
  if (rc) {
    fprintf(stderr, "jctlab synth: %s\n", err);
    return 1;
  }
  return 0;
}
