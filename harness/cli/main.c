/* `jctlab <command> [args]`: finds the command in the table and runs it.
 * A new command is one line in `commands` plus its declaration in
 * commands.h. Exit status: the command's (see commands.h); 2 for an
 * unknown command or none. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef JCT_VERSION
#define JCT_VERSION "0.1.0"
#endif

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} commands[] = {
    {"inspect", jct__cmd_inspect, "postmortem view of a RoCEv2 capture (pcap, pcapng)"},
    {"run", jct__cmd_run, "run a collective on the emulated fabric and measure its JCT"},
    {"synth", jct__cmd_synth, "generate a collective's schedule (ring, tree, ...) as JSON"},
    {"schedule", jct__cmd_schedule, "infer a capture's schedule (ranks, connections, deps) as JSON"},
    {"replay", jct__cmd_replay, "replay a job with and without faults: what the faults cost"},
    {"wire", jct__cmd_wire, "jctlab's switch and injectors between two interfaces (bump in the wire)"},
    {"agent", jct__cmd_agent, "a rank on the verbs transport (jctlab starts it in its lab VMs)"},
    {"rank", jct__cmd_rank, "one rank per MPI task (mpirun, srun): a scenario launched by MPI"},
    {"lab-exec", jct__cmd_lab_exec, "one soft-RoCE lab VM runs a program (rxe0 up) in place of an agent"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *o) {
  fprintf(o, "usage: jctlab <command> [options]\n\n"
             "jctlab measures how much longer an AI-training job takes when the RoCEv2\n"
             "fabric misbehaves.\n\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(o, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(o, "  %-10s %s\n", "help", "this text, or `jctlab help COMMAND` for a command's");
  fprintf(o, "\n  -h, --help     this text\n  -V, --version  print the version\n");
}

static int find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return (int)i;
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
    printf("jctlab %s\n", JCT_VERSION);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    if (argc < 3 || cmd[0] == '-') {
      usage(stdout);
      return 0;
    }
    int i = find(argv[2]);
    if (i < 0) {
      fprintf(stderr, "jctlab: no command '%s' (try 'jctlab help')\n", argv[2]);
      return 2;
    }
    static char help_flag[] = "--help";
    char *hargv[] = {argv[2], help_flag, NULL};
    return commands[i].run(2, hargv);
  }
  int i = find(cmd);
  if (i < 0) {
    fprintf(stderr, "jctlab: unknown command '%s' (try 'jctlab help')\n", cmd);
    return 2;
  }
  return commands[i].run(argc - 1, argv + 1);
}
