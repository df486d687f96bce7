/* A host's link cut by two tcx links (hostcut.h). The program is loaded
 * from its instructions with bpf_prog_load (no object file: it has no
 * maps), the links made with the raw bpf_link_create, as hostdrop.c does
 * (Debian 12's libbpf 1.1 and linux/bpf.h 6.1 know no tcx). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "common/errf.h"
#include "harness/base/netlink.h"
#include "hostcut.h"
#include "jctlab/error.h"

/* linux/bpf.h's enum bpf_attach_type from 6.6 on. */
#define ATTACH_TCX_INGRESS 46
#define ATTACH_TCX_EGRESS 47

struct jct__hostcut {
  int ifindex;
  int prog_fd;
  int link_fd[2]; /* ingress, egress; -1: not cut */
};

int jct__hostcut_new(jct__hostcut_t **out, int ifindex, const char *label, char *err,
                     size_t errlen) {
  *out = NULL;
  /* return bpf_redirect(0, 0): every frame to no device. */
  static const struct bpf_insn prog[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 0},
      {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect},
      {.code = BPF_JMP | BPF_EXIT},
  };
  jct__hostcut_t *c = calloc(1, sizeof *c);
  if (!c) return JCT_ENOMEM;
  c->ifindex = ifindex;
  c->link_fd[0] = c->link_fd[1] = -1;
  c->prog_fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "jct_hostcut", "GPL", prog,
                             sizeof prog / sizeof prog[0], NULL);
  if (c->prog_fd < 0) {
    char et[96];
    int e = errno;
    free(c);
    return jct__errf(err, errlen, JCT_EIO,
                     "%s: the kernel refused the link-cut program: %s (needs root: CAP_BPF and "
                     "CAP_NET_ADMIN)",
                     label, jct__errno_text(e, et, sizeof et));
  }
  *out = c;
  return 0;
}

int jct__hostcut_set(jct__hostcut_t *c, bool cut, char *err, size_t errlen) {
  static const int hook[2] = {ATTACH_TCX_INGRESS, ATTACH_TCX_EGRESS};
  for (int i = 0; i < 2; i++) {
    if (!cut && c->link_fd[i] >= 0) close(c->link_fd[i]), c->link_fd[i] = -1;
    if (!cut || c->link_fd[i] >= 0) continue;
    int fd = bpf_link_create(c->prog_fd, c->ifindex, (enum bpf_attach_type)hook[i], NULL);
    if (fd < 0) {
      char et[96];
      int e = errno;
      jct__hostcut_set(c, false, NULL, 0);
      return jct__errf(err, errlen, JCT_EIO,
                       "cut the link of ifindex %d: a tcx link on its %s: %s (Linux 6.6 and "
                       "later)",
                       c->ifindex, i ? "egress" : "ingress", jct__errno_text(e, et, sizeof et));
    }
    c->link_fd[i] = fd;
  }
  return 0;
}

void jct__hostcut_free(jct__hostcut_t *c) {
  if (!c) return;
  jct__hostcut_set(c, false, NULL, 0);
  close(c->prog_fd);
  free(c);
}
