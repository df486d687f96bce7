/* `jctlab lab-exec [--vms 2] PATH`: one soft-RoCE lab VM (harness/lab/lab.h) that
 * runs PATH instead of a rank's agent, once it is rank 0's host (eth0
 * 198.18.0.1/15 up, rxe0 on it and active): PATH's output comes back on
 * the VM's control channel and is copied to stdout, and its exit status is
 * jctlab's. For what needs a real RDMA device where this machine's kernel
 * has none: `mpirun -np 2 jctlab rank --transport verbs` on rxe
 * (suites/check_lab_rank.c). The VM's NIC is a TAP in jctlab's private
 * namespace with nothing behind it: traffic stays in the VM.
 *
 * --vms 2: two VMs, rank 0's host and rank 1's (eth0 198.18.0.2, its own
 * rxe0), their TAPs on one bridge (lab.h, bridge): one L2 segment, so that
 * rxe runs between two kernels. Both run PATH (it tells which it is by its
 * address); VM 1's lines come prefixed "vm1: ", and jctlab exits with VM
 * 0's status once it has it (VM 1's PATH may serve until then: both VMs
 * are stopped together).
 *
 * Exit status: PATH's; 2 bad input (PATH not an absolute path to an
 * executable); 1 the lab failed (no lab here, the VM stopped without a
 * status, the limit passed: the console's end on stderr). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_exec.h"
#include "commands.h"
#include "harness/base/interrupt.h"
#include "harness/lab/lab.h"
#include "jctlab/clock.h"
#include "jctlab/topo.h"

#define LIMIT_S_DEFAULT 900

static const char usage_text[] =
    "usage: jctlab lab-exec [--vms 1|2] [--mtu M] [--limit SECONDS] PATH\n"
    "\n"
    "Boot one soft-RoCE lab VM (Debian's kernel, rxe; the host's root read-only\n"
    "under a tmpfs overlay), make it rank 0's host (eth0 198.18.0.1, rxe0 active),\n"
    "and run PATH there (an executable of the host's root, no arguments) instead of\n"
    "the agent. Its output goes to stdout; jctlab exits with its status (--limit:\n"
    "900 s from boot by default; the lab lock is yours to take: flock\n"
    "/tmp/jctlab-lab.lock jctlab lab-exec ...). --vms 2: also rank 1's host (eth0\n"
    "198.18.0.2, its own rxe0) on one L2 segment with it; both run PATH, VM 1's\n"
    "lines prefixed \"vm1: \"; the status is VM 0's.\n"
    "\n"
    "exit status: PATH's; 2 bad input; 1 the lab failed.\n";

/* Copy what came on a control channel to stdout (prefix before each
 * line), holding back the last partial line; the status line ends it.
 * Returns the status, or -1. */
static int relay(const char *prefix, char *buf, size_t *len) {
  char *nl;
  while ((nl = memchr(buf, '\n', *len))) {
    size_t line = (size_t)(nl - buf) + 1;
    if (!strncmp(buf, JCT_AGENT_EXEC_STATUS, strlen(JCT_AGENT_EXEC_STATUS)))
      return atoi(buf + strlen(JCT_AGENT_EXEC_STATUS));
    fputs(prefix, stdout);
    fwrite(buf, 1, line, stdout);
    memmove(buf, buf + line, *len - line);
    *len -= line;
  }
  fflush(stdout);
  return -1;
}

static int run(jct__lab_t *l, uint32_t nvms, uint64_t limit_ns) {
  static char buf[2][1 << 16];
  size_t len[2] = {0, 0};
  uint64_t until = jct_now_ns() + limit_ns;
  while (!jct__interrupt_signal() && jct_now_ns() < until) {
    struct pollfd p[2];
    for (uint32_t i = 0; i < nvms; i++)
      p[i] = (struct pollfd){.fd = jct__lab_control_fd(l, i), .events = POLLIN};
    poll(p, nvms, 500);
    bool gone = false;
    for (uint32_t i = 0; i < nvms; i++) {
      ssize_t n = read(p[i].fd, buf[i] + len[i], sizeof buf[i] - 1 - len[i]);
      if (n > 0) {
        len[i] += (size_t)n;
        int st = relay(i ? "vm1: " : "", buf[i], &len[i]);
        if (st >= 0 && i == 0) return st;
        if (st >= 0) printf("vm1: %s%d\n", JCT_AGENT_EXEC_STATUS, st);
        if (len[i] == sizeof buf[i] - 1) { /* a line longer than the buffer: let it out */
          fwrite(buf[i], 1, len[i], stdout);
          len[i] = 0;
        }
      } else if (i == 0 && !jct__lab_alive(l, 0)) {
        gone = true;
      }
    }
    if (gone) break;
  }
  char tail[1200];
  jct__lab_console_tail(l, 0, tail, sizeof tail);
  fprintf(stderr, "jctlab lab-exec: %s; the VM's console ends:\n%s\n",
          jct__interrupt_signal() ? "interrupted"
          : jct_now_ns() >= until ? "the limit passed"
                                  : "the VM stopped without an exit status",
          tail);
  return 1;
}

int jct__cmd_lab_exec(int argc, char **argv) {
  const char *path = NULL;
  unsigned long mtu = 0, limit_s = LIMIT_S_DEFAULT, vms = 1;
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i];
    if (!strcmp(w, "--help") || !strcmp(w, "-h")) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (!strcmp(w, "--vms")) {
      const char *v = i + 1 < argc ? argv[i + 1] : "";
      if (strcmp(v, "1") && strcmp(v, "2")) {
        fprintf(stderr, "jctlab lab-exec: --vms '%s': 1 or 2\n", v);
        return 2;
      }
      vms = (unsigned long)atoi(v);
      i++;
    } else if (!strcmp(w, "--mtu") || !strcmp(w, "--limit")) {
      char *end = NULL;
      unsigned long v = i + 1 < argc ? strtoul(argv[i + 1], &end, 10) : 0;
      if (!end || *end || !v || v > 65535) {
        fprintf(stderr, "jctlab lab-exec: %s '%s': not a number from 1 to 65535\n", w,
                i + 1 < argc ? argv[i + 1] : "");
        return 2;
      }
      *(w[2] == 'm' ? &mtu : &limit_s) = v;
      i++;
    } else if (w[0] == '-' || path) {
      fprintf(stderr, "jctlab lab-exec: '%s' is not an option this command takes\n", w);
      return 2;
    } else {
      path = w;
    }
  }
  if (!path || path[0] != '/' || access(path, X_OK)) {
    fprintf(stderr, "jctlab lab-exec: '%s': give the absolute path of an executable\n",
            path ? path : "");
    return 2;
  }
  char err[512];
  jct__lab_t *l = NULL;
  jct__lab_opts_t o = {
      .nranks = (uint32_t)vms, .mtu = (uint32_t)mtu, .exec_path = path, .bridge = vms > 1};
  if (jct__interrupt_install() || jct_ns_isolate(err, sizeof err) ||
      jct__lab_up(&l, &o, err, sizeof err)) {
    fprintf(stderr, "jctlab lab-exec: %s\n", err);
    return 1;
  }
  int status = run(l, (uint32_t)vms, (uint64_t)limit_s * 1000000000ull);
  jct__lab_down(l);
  return status;
}
