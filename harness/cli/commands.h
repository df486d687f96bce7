/* The subcommands of `jctlab` (harness/main.c dispatches to them).
 *
 * Each takes the arguments from its own name on (argv[0] is "inspect"),
 * prints its usage for --help, and returns the process's exit status:
 * 0 success, 1 failure of jctlab itself (out of memory, a write that
 * failed), 2 bad input (bad option, missing or unreadable file). */
#ifndef JCT_COMMANDS_H
#define JCT_COMMANDS_H

#include <stdbool.h>

#include "harness/plan/run_args.h"

/* Bad input on the command line of `jctlab CMD`: one line on stderr,
 * "jctlab CMD: <what> (try 'jctlab CMD --help')"; returns 2, the exit
 * status for bad input (cmd_util.c). */
int jct__cmd_bad(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The fabric options `jctlab run` and `jctlab replay` share (run_args.c):
 * try argv[*i] (and its value) as one of them. Returns 1 consumed (*i
 * moved past the value), 0 not a shared option, 2 bad (the message is on
 * stderr, prefixed "jctlab PROG: "). */
int jct__run_args_parse(jct__run_args_t *a, int argc, char **argv, int *i, const char *prog);

/* The lines of help text for the shared options. */
extern const char jct__run_args_help[];

int jct__cmd_inspect(int argc, char **argv);
int jct__cmd_synth(int argc, char **argv);
int jct__cmd_run(int argc, char **argv);
int jct__cmd_schedule(int argc, char **argv);
int jct__cmd_replay(int argc, char **argv);
/* `jctlab agent`: a verbs rank driven over a control channel (cmd_agent.c). */
int jct__cmd_agent(int argc, char **argv);
/* `jctlab run SCENARIO.yaml` (cmd_scenario.c); jct__cmd_run hands over to it
 * when its first argument names a .yaml or .yml file. */
int jct__cmd_run_scenario(int argc, char **argv);
bool jct__is_scenario_arg(const char *arg);

#endif
