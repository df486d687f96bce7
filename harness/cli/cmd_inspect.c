/* `jctlab inspect [TRACE]`: the postmortem view of a RoCEv2 capture.
 *
 * One streaming pass: read (trace.h), decode (decode.h), analyse
 * (inspect.h), with the per-packet listing (--packets) and the timeline
 * (--timeline) written as they go; the summary and the JSON document are
 * written at the end. Only one output can go to standard output; the
 * terminal summary takes it when no other output does.
 *
 * Options follow tcpdump's and tshark's habits: -r FILE reads a capture,
 * "-" is standard input (and so is a pipe or a redirected file when no
 * capture is named, as `tcpdump -w - | jctlab inspect`), -Y/--filter takes
 * a libpcap filter expression choosing the frames analysed, an option's
 * value may be attached with '=' or given as the next word. The FILE after --json or --timeline is
 * optional: the next word is taken as it unless it is an option, names a capture file (by its first
 * bytes, or a .pcap/.pcapng/.cap name), so that `jctlab inspect --json trace.pcap` never overwrites
 * the trace.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "harness/report/inspect_out.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/inspect.h"
#include "jctlab/trace.h"
#include "harness/base/layout.h"
#include "harness/base/units.h"


#define EXIT_BAD_INPUT 2
#define DEFAULT_TOP 10u

static const char usage_text[] =
    "usage: jctlab inspect [TRACE] [options]\n"
    "\n"
    "Read a RoCEv2 capture (pcap or pcapng) and say where packets were lost,\n"
    "retransmitted, paused or ECN-marked, what it cost, and what the captured\n"
    "system was like (its profile: MTU, link rates, loss recovery, go-back depth,\n"
    "retransmit timeout, ACK coalescing). '-' reads standard input. With no\n"
    "TRACE, standard input is read when it is a pipe or a file (tcpdump -w - |\n"
    "jctlab inspect; jctlab inspect < x.pcap), otherwise (a terminal, /dev/null)\n"
    "the shipped trace (traces/rxe-write-send-loss1pct.pcap; installed, its copy).\n"
    "\n"
    "options:\n"
    "  -r TRACE               the capture to read (as tcpdump -r; same as TRACE)\n"
    "  -Y, --filter EXPR      analyse only the frames that match EXPR, a libpcap\n"
    "                         filter expression (tcpdump's syntax, pcap-filter(7),\n"
    "                         not Wireshark's display filters): 'udp port 4791\n"
    "                         and host 198.18.0.1'; the frames read and filtered\n"
    "                         out are reported\n"
    "  --json [FILE]          the full analysis as JSON, to FILE or standard output\n"
    "  --timeline[=FORMAT] [FILE]\n"
    "                         one line per event (message done, gap, NAK, rewind,\n"
    "                         timeout, recovered, hole re-sent, CNP, ECN-CE, bad\n"
    "                         ICRC, pause, resume) as it is found; FORMAT is text\n"
    "                         (default) or json (one object per line); to FILE or\n"
    "                         standard output\n"
    "  --packets              one tab-separated line per RoCE packet on standard\n"
    "                         output, the fields of tshark -T fields -e frame.number\n"
    "                         -e ip.src -e ip.dst -e infiniband.bth.destqp\n"
    "                         -e infiniband.bth.opcode -e infiniband.bth.psn\n"
    "                         -e infiniband.aeth.syndrome\n"
    "  --link-rate RATE       link rate for PFC pause quanta (default 100gbit):\n"
    "                         a number of bit/s with k, m, g or t and optionally\n"
    "                         bit, bps or bit/s: 100gbit, 25Gbit, 400gbps, 10mbit\n"
    "  --top N                worst flows listed in the summary (default 10)\n"
    "  -h, --help             this text\n"
    "\n"
    "FILE may be attached (--json=out.json); '-' is standard output. The word after\n"
    "--json or --timeline is taken as FILE unless it is an option or names a\n"
    "capture. The summary goes to standard output unless another output does.\n"
    "\n"
    "exit status: 0 success; 2 bad input (bad option, bad filter expression, no such\n"
    "file, not a capture or an empty one, unsupported link type, a capture that\n"
    "ends inside a record: what came before\n"
    "it is still reported, with a warning); 1 jctlab failed (out of memory, a write\n"
    "error).\n";

typedef struct {
  const char *trace;
  const char *filter; /* NULL: every frame */
  bool json, timeline, packets;
  const char *json_file, *timeline_file; /* NULL or "-": standard output */
  jct__timeline_format_t timeline_format;
  uint64_t link_rate_bps;
  uint64_t top;
} args_t;

/* One line on stderr for a bad command line; returns the exit status. */
#define bad(...) jct__cmd_bad("inspect", __VA_ARGS__)

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Whether word names a capture: by its name, or by its first four bytes. */
static bool names_capture(const char *word) {
  if (has_suffix(word, ".pcap") || has_suffix(word, ".pcapng") || has_suffix(word, ".cap"))
    return true;
  FILE *f = fopen(word, "rb");
  if (!f) return false;
  uint8_t b[4];
  bool cap = false;
  if (fread(b, 1, 4, f) == 4) {
    uint32_t m = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    cap = m == 0xa1b2c3d4u || m == 0xd4c3b2a1u || m == 0xa1b23c4du || m == 0x4d3cb2a1u ||
          m == 0x0a0d0d0au;
  }
  fclose(f);
  return cap;
}

/* The optional FILE after --json / --timeline: consumes argv[*i + 1] when
 * it is one. */
static const char *optional_file(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) return NULL;
  const char *w = argv[*i + 1];
  if ((w[0] == '-' && w[1] != '\0') || names_capture(w)) return NULL;
  ++*i;
  return w;
}

/* The value of --name VALUE or --name=VALUE; NULL when missing. */
static const char *value(int argc, char **argv, int *i, const char *eq) {
  if (eq) return eq + 1;
  if (*i + 1 >= argc) return NULL;
  return argv[++*i];
}

/* Returns -1 to go on, or an exit status. */
static int parse(int argc, char **argv, args_t *a) {
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i];
    if (options_done || w[0] != '-' || strcmp(w, "-") == 0) {
      if (a->trace) return bad("more than one capture given: '%s'", w);
      a->trace = w;
      continue;
    }
    if (strcmp(w, "--") == 0) {
      options_done = true;
      continue;
    }
    const char *eq = strncmp(w, "--", 2) == 0 ? strchr(w, '=') : NULL;
    size_t nlen = eq ? (size_t)(eq - w) : strlen(w);
#define IS(name) (nlen == strlen(name) && strncmp(w, name, nlen) == 0)
    if (IS("-h") || IS("--help")) {
      fputs(usage_text, stdout);
      return 0;
    } else if (IS("-r")) {
      const char *v = value(argc, argv, &i, NULL);
      if (!v) return bad("%s needs a capture file", w);
      if (a->trace) return bad("more than one capture given: '%s'", v);
      a->trace = v;
    } else if (IS("-Y") || IS("--filter")) {
      const char *v = value(argc, argv, &i, eq);
      if (!v || !*v) return bad("%.*s needs a filter expression ('udp port 4791')", (int)nlen, w);
      if (a->filter) return bad("more than one filter given: '%s' (join them with 'and')", v);
      a->filter = v;
    } else if (IS("--json")) {
      a->json = true;
      a->json_file = eq ? eq + 1 : optional_file(argc, argv, &i);
      if (eq && !eq[1]) return bad("--json= needs a file ('-' for standard output)");
    } else if (IS("--timeline")) {
      a->timeline = true;
      if (eq && strcmp(eq + 1, "json") == 0)
        a->timeline_format = JCT__TIMELINE_JSON;
      else if (eq && strcmp(eq + 1, "text") != 0)
        return bad("--timeline: format '%s' is not text or json", eq + 1);
      a->timeline_file = optional_file(argc, argv, &i);
    } else if (IS("--packets")) {
      if (eq) return bad("%s takes no value", w);
      a->packets = true;
    } else if (IS("--link-rate")) {
      const char *v = value(argc, argv, &i, eq);
      if (!v) return bad("--link-rate needs a rate (100gbit, 25Gbit, 400gbps)");
      if (jct__parse_rate_bps(v, &a->link_rate_bps) < 0)
        return bad("--link-rate: '%s' is not a rate (100gbit, 25Gbit, 400gbps, 10mbit)", v);
    } else if (IS("--top")) {
      const char *v = value(argc, argv, &i, eq);
      if (!v) return bad("--top needs a number");
      if (jct__parse_count(v, 1000000, &a->top) < 0)
        return bad("--top: '%s' is not a number from 0 to 1000000", v);
    } else {
      return bad("unknown option '%s'", w);
    }
#undef IS
  }
  int on_stdout = a->packets;
  if (a->json && (!a->json_file || strcmp(a->json_file, "-") == 0)) on_stdout++;
  if (a->timeline && (!a->timeline_file || strcmp(a->timeline_file, "-") == 0)) on_stdout++;
  if (on_stdout > 1)
    return bad("only one of --json, --timeline and --packets can write to standard output; "
               "give the others a FILE");
  if ((a->json && jct__cmd_output_ok("inspect", "--json", a->json_file)) ||
      (a->timeline && jct__cmd_output_ok("inspect", "--timeline", a->timeline_file)))
    return 2;
  return -1;
}

/* The output stream for FILE (NULL or "-": standard output). */
static FILE *open_out(const char *file) {
  if (!file || strcmp(file, "-") == 0) return stdout;
  FILE *f = fopen(file, "w");
  if (!f) fprintf(stderr, "jctlab inspect: %s: %s\n", file, strerror(errno));
  return f;
}

static int close_out(FILE *f, const char *file) {
  if (!f) return 0;
  int failed = (f == stdout ? fflush(f) : fclose(f)) != 0;
  if (failed) fprintf(stderr, "jctlab inspect: %s: write error\n", file ? file : "stdout");
  return failed ? 1 : 0;
}

typedef struct {
  FILE *json, *timeline, *packets;
} outs_t;

/* --packets: one line per RoCE packet, in tshark's -T fields formatting. */
static void packet_line(const jct_packet_t *p, uint64_t frame_no, uint64_t ts_ns, void *arg) {
  (void)ts_ns;
  FILE *out = arg;
  if (p->kind != JCT_PKT_ROCE) return;
  char a[64], b[64], syn[8] = "";
  if (p->op->ext & JCT_EXT_AETH) snprintf(syn, sizeof syn, "%u", p->roce.aeth.syndrome);
  fprintf(out, "%llu\t%s\t%s\t0x%06x\t%u\t%u\t%s\n", (unsigned long long)frame_no,
          jct_addr_str(&p->src, a, sizeof a), jct_addr_str(&p->dst, b, sizeof b),
          p->roce.bth.dest_qp, p->roce.bth.opcode, p->roce.bth.psn, syn);
}

/* With no TRACE: whether standard input brings a capture, as tcpdump -r -
 * would read it: a pipe or a regular file redirected in. A terminal,
 * /dev/null, a socket or a closed descriptor do not. */
static bool stdin_brings_capture(void) {
  struct stat st;
  if (fstat(STDIN_FILENO, &st) != 0) return false;
  return S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode);
}

int jct__cmd_inspect(int argc, char **argv) {
  args_t a = {.top = DEFAULT_TOP};
  int status = parse(argc, argv, &a);
  if (status >= 0) return status;
  bool implicit_stdin = false;
  if (!a.trace) {
    implicit_stdin = stdin_brings_capture();
    a.trace = implicit_stdin ? "-" : jct__default_trace();
  }

  char err[512];
  jct_trace_t *t;
  int rc = strcmp(a.trace, "-") == 0
               ? jct_trace_open_file(&t, stdin, "(standard input)", err, sizeof err)
               : jct_trace_open(&t, a.trace, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "jctlab inspect: %s%s\n", err,
            implicit_stdin ? "; with no TRACE, inspect reads standard input when it is a pipe or "
                             "a file: name a TRACE, or give </dev/null for the shipped one"
                           : "");
    return rc == JCT_ENOMEM ? 1 : EXIT_BAD_INPUT;
  }
  if (a.filter && (rc = jct_trace_set_filter(t, a.filter, err, sizeof err)) < 0) {
    fprintf(stderr, "jctlab inspect: %s\n", err);
    jct_trace_close(t);
    return rc == JCT_ENOMEM ? 1 : EXIT_BAD_INPUT;
  }

  outs_t o = {0};
  if (a.json && !(o.json = open_out(a.json_file))) status = EXIT_BAD_INPUT;
  if (a.timeline && !(o.timeline = open_out(a.timeline_file))) status = EXIT_BAD_INPUT;
  if (a.packets) o.packets = stdout;

  jct__timeline_t tl = {.out = o.timeline, .format = a.timeline_format};
  jct_inspect_opts_t opts = {.link_rate_bps = a.link_rate_bps};
  if (o.timeline) {
    opts.on_event = jct__timeline_event;
    opts.arg = &tl;
  }
  if (o.packets) {
    opts.on_packet = packet_line;
    opts.packet_arg = o.packets;
  }
  jct_inspect_t *ins = NULL;
  if (status < 0 && jct_inspect_new(&ins, &opts) < 0) {
    fprintf(stderr, "jctlab inspect: out of memory\n");
    status = 1;
  }
  if (status < 0) {
    tl.ins = ins;
    rc = jct_inspect_trace(ins, t, err, sizeof err);
    if (rc == JCT_ENOMEM) {
      fprintf(stderr, "jctlab inspect: %s: %s\n", a.trace, err);
      status = 1;
    }
  }
  if (status < 0) {
    jct__capture_info_t cap = {.file = a.trace,
                               .format = jct_trace_format(t),
                               .linktype = jct_trace_linktype(t),
                               .nanosecond = jct_trace_nanosecond(t),
                               .truncated = rc == JCT_ETRUNC ? err : NULL,
                               .filter = a.filter,
                               .frames_read = jct_trace_frames_read(t),
                               .frames_filtered_out = jct_trace_frames_filtered_out(t)};
    int wrc = 0;
    if (o.json) wrc = jct__inspect_json(o.json, ins, &cap);
    bool stdout_free = !(o.json == stdout || o.timeline == stdout || o.packets);
    if (wrc == 0 && stdout_free) wrc = jct__inspect_text(stdout, ins, &cap, (size_t)a.top);
    if (wrc < 0) {
      fprintf(stderr, "jctlab inspect: writing the report: %s\n", jct_strerror(wrc));
      status = 1;
    } else if (rc == JCT_ETRUNC) {
      fprintf(stderr, "jctlab inspect: warning: %s; the frames before it were inspected\n", err);
      status = EXIT_BAD_INPUT;
    } else {
      status = 0;
    }
  }
  if (close_out(o.json, a.json_file) || close_out(o.timeline, a.timeline_file)) status = 1;
  if (!o.json && !o.timeline && fflush(stdout) != 0) status = 1;
  if (ins) jct_inspect_free(ins);
  jct_trace_close(t);
  return status;
}
