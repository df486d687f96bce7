/* The subcommands of `jctlab` (cli/main.c dispatches to them).
 *
 * Each takes the arguments from its own name on (argv[0] is "inspect"),
 * prints its usage for --help, and returns the process's exit status:
 * 0 success, 1 failure of jctlab itself (out of memory, a write that
 * failed), 2 bad input (bad option, missing or unreadable file). */
#ifndef JCT_COMMANDS_H
#define JCT_COMMANDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "harness/plan/run_args.h"

/* Bad input on the command line of `jctlab CMD`: one line on stderr,
 * "jctlab CMD: <what> (try 'jctlab CMD --help')"; returns 2, the exit
 * status for bad input (cmd_util.c). */
int jct__cmd_bad(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Refuse to write an output (a report, a schedule, JSON) over a capture, as
 * tshark refuses to overwrite its input: 0 when path is "-", NULL, new, or
 * any file but a pcap or pcapng capture; else 2 after jct__cmd_bad() names
 * the option and the file. (--pcap-out writes captures, as tcpdump -w.) */
int jct__cmd_output_ok(const char *cmd, const char *opt, const char *path);
/* Outputs are checked before anything runs, as tcpdump opens -w at once:
 * jct__cmd_output_ok also refuses a file that cannot be written (a folder
 * that does not exist, no permission); jct__cmd_output_dir_ok refuses a
 * report folder whose nearest existing ancestor is not a writable folder.
 * Both return 0, or 2 after jct__cmd_bad(). */
int jct__cmd_output_dir_ok(const char *cmd, const char *opt, const char *path);
/* Only the writability part of jct__cmd_output_ok (for --pcap-out, which
 * may replace a capture, as tcpdump -w). */
int jct__cmd_writable(const char *cmd, const char *opt, const char *path);

/* One injector's counters as run and wire print them: lead, then
 * "#index 'spec' (seed N): N seen, N matched, ..." and a newline. */
void jct__cmd_print_injector(const char *lead, size_t index, const char *spec, uint64_t seed,
                             const jct_injector_stats_t *st);

/* After a run of cases: when SIGINT or SIGTERM came (base/interrupt.h),
 * say so on stderr and return 128 + the signal (as a shell reports a
 * command a signal ended); else status. Mark the document first
 * (jct__cases_mark_interrupted), before it is written. */
int jct__cases_interrupted(const char *prog, int status);
/* Set doc's "interrupted" to the signal's name when one came. */
void jct__cases_mark_interrupted(json_t *doc);

/* The fabric options `jctlab run` and `jctlab replay` share (run_args.c):
 * try argv[*i] (and its value) as one of them. Returns 1 consumed (*i
 * moved past the value), 0 not a shared option, 2 bad (the message is on
 * stderr, prefixed "jctlab PROG: "). */
int jct__run_args_parse(jct__run_args_t *a, int argc, char **argv, int *i, const char *prog);

/* The capture options (capture_args.c), as tcpdump reads them: -s N
 * (--snaplen), -C SIZE (a bare number is millions of bytes, as tcpdump;
 * or a size with its unit, units.h) and -W N, into r. Returns 1 taken, 0
 * not one of them, 2 bad (after jct__cmd_bad). */
int jct__capture_opt_parse(jct_run_opts_t *r, const char *w, const char *v, const char *prog);
/* Once the command line is read: -W without -C, -C without --pcap-out or
 * --pcap-in, or with one of them "-" (standard output cannot rotate) is
 * bad input. Returns 0, or 2 after jct__cmd_bad(). */
int jct__capture_opts_check(const jct_run_opts_t *r, const char *prog);
/* Before anything runs, with -C: for each of ncases cases' --pcap-out and
 * --pcap-in (their per-case names, jct__case_path), no file may exist
 * already under a rotated name (the name and digits): a rotation writes
 * over its own files only, never over an earlier run's, which would
 * otherwise lie beside the new ones as if one capture. (The first file,
 * FILE itself, may replace a capture, as --pcap-out always may.) With
 * several cases the name needs an extension, or case 1's files would take
 * case 11's name. Returns 0, or 2 after jct__cmd_bad(). */
int jct__capture_names_ok(const jct_run_opts_t *r, uint32_t ncases, const char *prog);

/* The lines of help text for the shared options. */
extern const char jct__run_args_help[];

/* `jctlab run`'s size sweep and warm-up (cmd_run_sweep.c), as nccl-tests'
 * -b, -e, -f and -w: --bytes-min/-b, --bytes-max/-e, --bytes-factor/-f
 * (default 2), a list --bytes SIZE,SIZE,... and --warmup N (default 1
 * with a sweep, as nccl-tests; 0 with one size, as before; no -w, which
 * is tcpdump's "write" beside the capture options' -s, -C and -W). */
typedef struct {
  uint64_t min, max;
  double factor;
  bool have_min, have_max, have_factor;
  const char *list; /* --bytes with a comma */
  int64_t warmup;   /* -1: not given */
  uint64_t sizes[64];
  uint32_t nsizes; /* 0: not a sweep */
} jct__sweep_args_t;

/* Try argv[*i] (and its value) as one of the sweep's options. Returns 1
 * consumed (*i moved past the value), 0 not one of them, 2 bad (said). */
int jct__sweep_args_parse(jct__sweep_args_t *s, int argc, char **argv, int *i);

/* After the whole command line: check the options against each other and
 * --synth/--bytes, expand the sizes into s->sizes (nsizes 0: one size,
 * no sweep) and put the warm-up into r->run. Returns -1 fine, 2 bad
 * (said). */
int jct__sweep_args_finish(jct__sweep_args_t *s, jct__run_args_t *r);

/* Run the sweep and print its table (json NULL or a file) or only its
 * JSON (json "-"). Returns the exit status: 0 every size valid, 3 a size
 * invalid, 2 bad input, 1 jctlab failed, 128 + a signal that ended it. */
int jct__run_sweep(const jct__sweep_args_t *s, jct__run_args_t *r, const char *json);

/* The command line of the commands that run fault cases (`jctlab replay`,
 * `jctlab run SCENARIO.yaml`), read in one loop (case_args.c): --help
 * prints the usage; a word not starting with '-', or "-", is the input (a
 * second one is bad input); --json, --junit, --report FILE say where the
 * result document goes; --per-qp (no value) shows every connection's row;
 * with fabric set, the fabric options (jct__run_args_parse); any other
 * word takes the next as its value and goes to own(self, word, value),
 * which returns 1 taken, 0 unknown (the loop says so), 2 bad (after
 * jct__cmd_bad). */
typedef struct {
  const char *input;
  const char *json, *junit, *report;
  bool per_qp; /* --per-qp: the per-QP table for any number of connections */
} jct__case_args_t;

typedef struct {
  const char *prog;         /* "replay", "run" */
  const char *what;         /* the input, in messages: "input", "scenario" */
  void (*usage)(void);      /* prints the command's help on stdout */
  const char *unknown_hint; /* after "unknown option 'X'": "" or " for a scenario" */
  jct__run_args_t *fabric;  /* NULL: no fabric options */
  int (*own)(void *self, const char *word, const char *value);
  void *self;
} jct__case_cmd_t;

/* Returns -1 when argv is read, else the exit status: 0 after --help, 2
 * bad input (the message is on stderr). */
int jct__case_args_read(jct__case_args_t *o, const jct__case_cmd_t *cmd, int argc, char **argv);

int jct__cmd_inspect(int argc, char **argv);
int jct__cmd_synth(int argc, char **argv);
int jct__cmd_run(int argc, char **argv);

/* The "series" object of a run's JSON (run_series.c; null without --series). */
json_t *jct__series_json(const jct_run_result_t *r, const jct_schedule_t *s);
int jct__cmd_schedule(int argc, char **argv);
int jct__cmd_replay(int argc, char **argv);
/* `jctlab wire IF_A IF_B`: the switch and its injectors between two
 * interfaces, a bump in the wire (cmd_wire.c). */
int jct__cmd_wire(int argc, char **argv);
/* The verbs RDMA settings' options into r (run_args.c): --device NAME,
 * --device-port N, --gid-index N, --traffic-class N, --counters LIST.
 * Returns 1 taken, 0 not one of them, 2 bad (said on stderr). */
int jct__rdma_opt_parse(jct_rdma_opts_t *r, const char *prog, const char *w, const char *v);

/* `jctlab lab-exec PATH`: one lab VM runs PATH (cmd_lab_exec.c). */
int jct__cmd_lab_exec(int argc, char **argv);

/* `jctlab agent`: a verbs rank driven over a control channel (cmd_agent.c). */
int jct__cmd_agent(int argc, char **argv);
/* `jctlab run SCENARIO.yaml` (cmd_scenario.c); jct__cmd_run hands over to it
 * when its first argument names a .yaml or .yml file. */
int jct__cmd_run_scenario(int argc, char **argv);
/* A scenario file run by `jctlab run` or `jctlab rank` (cmd_rank.c):
 * prog names the command in messages; world, when set, goes to every
 * case's options (jct_run_opts_t.world); ready, when set, is asked once
 * the file, its job and the command line are read and checked, before
 * anything is built (lab: the file's 'lab: N'): -1 to go on, else the exit
 * status to stop with (after its own line on stderr); on_doc sees the
 * result document before it is written. */
typedef struct {
  const char *prog;
  void *world;
  void *ctx;
  int (*ready)(void *ctx, const char *path, uint32_t lab, const jct_run_opts_t *cases,
               uint32_t ncases);
  void (*on_doc)(void *ctx, json_t *doc);
} jct__scenario_hooks_t;
int jct__scenario_cmd(int argc, char **argv, const jct__scenario_hooks_t *h);
int jct__cmd_rank(int argc, char **argv);
bool jct__is_scenario_arg(const char *arg);

#endif
