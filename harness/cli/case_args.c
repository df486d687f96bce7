/* The command line of the commands that run fault cases (commands.h):
 * `jctlab replay` and `jctlab run SCENARIO.yaml` read it in one loop. Both
 * take --help, one input by position, --json, --junit, --report for the
 * result document (report/output.h) and --per-qp for its table; replay
 * adds the fabric options (run_args.c); each has its own options with a
 * value, which the loop hands to the command. */
#include <stdio.h>
#include <string.h>

#include <signal.h>

#include "commands.h"
#include "harness/base/interrupt.h"

/* The input, or where the result goes: 1 taken, 0 not one of them, 2 bad. */
static int shared(jct__case_args_t *o, const jct__case_cmd_t *cmd, const char *w, const char *v,
                  int *i) {
  if (w[0] != '-' || !strcmp(w, "-")) {
    if (o->input)
      return jct__cmd_bad(cmd->prog, "one %s at a time ('%s' and '%s')", cmd->what, o->input, w);
    o->input = w;
    return 1;
  }
  if (!strcmp(w, "--per-qp")) {
    o->per_qp = true;
    return 1;
  }
  /* --json FILE or --json=FILE, as tshark's and tcpdump's long options. */
  const char *eq = strchr(w, '=');
  size_t n = eq ? (size_t)(eq - w) : strlen(w);
  const char **dst = !strncmp(w, "--json", n) && n == 6    ? &o->json
                     : !strncmp(w, "--junit", n) && n == 7  ? &o->junit
                     : !strncmp(w, "--report", n) && n == 8 ? &o->report
                                                            : NULL;
  if (!dst) return 0;
  if (eq) v = eq + 1;
  if (!v || !*v) return jct__cmd_bad(cmd->prog, "%.*s needs a value", (int)n, w);
  if (*dst)
    return jct__cmd_bad(cmd->prog, "%.*s given twice ('%s' and '%s')", (int)n, w, *dst, v);
  *dst = v;
  if (!eq) (*i)++;
  char opt[16];
  snprintf(opt, sizeof opt, "%.*s", (int)n, w);
  int bad = dst == &o->report ? jct__cmd_output_dir_ok(cmd->prog, opt, v)
                              : jct__cmd_output_ok(cmd->prog, opt, v);
  return bad ? 2 : 1;
}

int jct__case_args_read(jct__case_args_t *o, const jct__case_cmd_t *cmd, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
      cmd->usage();
      return 0;
    }
    int got = cmd->fabric ? jct__run_args_parse(cmd->fabric, argc, argv, &i, cmd->prog) : 0;
    if (!got) got = shared(o, cmd, w, v, &i);
    if (!got) {
      if (!v) return jct__cmd_bad(cmd->prog, "%s needs a value", w);
      i++;
      got = cmd->own(cmd->self, w, v);
      if (!got) return jct__cmd_bad(cmd->prog, "unknown option '%s'%s", w, cmd->unknown_hint);
    }
    if (got == 2) return 2;
  }
  return -1;
}

static const char *signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

void jct__cases_mark_interrupted(json_t *doc) {
  int sig = jct__interrupt_signal();
  if (sig && doc) json_object_set_new(doc, "interrupted", json_string(signal_name(sig)));
}

int jct__cases_interrupted(const char *prog, int status) {
  int sig = jct__interrupt_signal();
  if (!sig) return status;
  fprintf(stderr, "jctlab %s: interrupted (%s): the cases finished before it are written\n", prog,
          signal_name(sig));
  return 128 + sig;
}
