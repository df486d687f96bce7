/* The agent's guard process (agent_guard.h). */
#include <errno.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_guard.h"
#include "common/errf.h"
#include "jctlab/error.h"

/* One record on the socket, always whole. len 0: forget key. */
typedef struct {
  uint64_t key;
  uint32_t len;
  char label[JCT__GUARD_LABEL_MAX];
  char req[JCT__GUARD_REQ_MAX];
} record_t;

/* This process's guard; owner tells a fork's inherited copy from its own. */
static struct {
  pid_t owner;
  pid_t pid;
  int pipe_w;
} g = {0, 0, -1};

static bool read_whole(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, (char *)buf + got, len - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += (size_t)r;
  }
  return true;
}

static void say(const char *s) {
  if (write(2, s, strlen(s)) < 0) _exit(1);
}

/* Send one record's requests (one or more rtnetlink messages, each asking
 * for an ACK; the kernel handles them in turn) and read an ACK for each;
 * false when the kernel refused any. */
static bool undo(int nl, const record_t *r) {
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(nl, r->req, r->len, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)r->len)
    return false;
  size_t msgs = 0;
  for (size_t at = 0; at + NLMSG_HDRLEN <= r->len; msgs++)
    at += NLMSG_ALIGN(((const struct nlmsghdr *)(r->req + at))->nlmsg_len);
  bool ok = true;
  char ack[1024];
  for (size_t acked = 0; acked < msgs;) {
    ssize_t n = recv(nl, ack, sizeof ack, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < (ssize_t)NLMSG_HDRLEN) return false;
    for (const struct nlmsghdr *h = (const struct nlmsghdr *)ack; NLMSG_OK(h, (size_t)n);
         h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      ok &= ((const struct nlmsgerr *)NLMSG_DATA(h))->error == 0;
      acked++;
    }
  }
  return ok;
}

/* The guard: keep what the agent sends until its end of the pipe closes,
 * then undo it, the last kept first. Allocates nothing. Never returns. */
static void guard(int fd) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  if (fd != 3) {
    dup2(fd, 3);
    fd = 3;
  }
  syscall(SYS_close_range, 4u, ~0u, 0u); /* the agent's control socket among them */
  record_t held[JCT__GUARD_KEYS], r;
  size_t n = 0;
  while (read_whole(fd, &r, sizeof r)) {
    for (size_t i = 0; i < n; i++)
      if (held[i].key == r.key) {
        memmove(&held[i], &held[i + 1], (n - i - 1) * sizeof r);
        n--;
        break;
      }
    if (r.len && r.len <= sizeof r.req && n < JCT__GUARD_KEYS) held[n++] = r;
  }
  int nl = n ? socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE) : -1;
  for (size_t i = n; i-- > 0;)
    if (nl < 0 || !undo(nl, &held[i])) {
      say("jctlab agent: guard: the kernel refused to ");
      say(held[i].label);
      say("\n");
    }
  _exit(0);
}

static int start(char *err, size_t errlen) {
  if (g.pipe_w >= 0 && g.owner == getpid()) return 0;
  if (g.pipe_w >= 0) close(g.pipe_w); /* a fork's copy of its parent's: the parent's guard */
  g.pipe_w = -1;
  g.pid = 0;
  /* A socket pair, not a pipe: a guard killed itself makes a send fail
   * (MSG_NOSIGNAL), where a pipe's write would raise SIGPIPE in the agent. */
  int p[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
    return jct__errf(err, errlen, JCT_EIO, "guard: socketpair: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[1]);
    guard(p[0]);
  }
  close(p[0]);
  if (pid < 0) {
    close(p[1]);
    return jct__errf(err, errlen, JCT_EIO, "guard: fork: %s", strerror(errno));
  }
  g.owner = getpid();
  g.pid = pid;
  g.pipe_w = p[1];
  return 0;
}

static int send_record(const record_t *r, char *err, size_t errlen) {
  ssize_t w;
  do
    w = send(g.pipe_w, r, sizeof *r, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  if (w != (ssize_t)sizeof *r)
    return jct__errf(err, errlen, JCT_EIO, "guard: send: %s",
                     w < 0 ? strerror(errno) : "short write");
  return 0;
}

int jct__agent_guard_keep(uint64_t key, const void *req, size_t len, const char *label, char *err,
                          size_t errlen) {
  if (len == 0 || len > JCT__GUARD_REQ_MAX)
    return jct__errf(err, errlen, JCT_EINVAL, "guard: a request of %zu bytes (%s)", len, label);
  int rc = start(err, errlen);
  if (rc) return rc;
  record_t r;
  memset(&r, 0, sizeof r);
  r.key = key;
  r.len = (uint32_t)len;
  snprintf(r.label, sizeof r.label, "%s", label);
  memcpy(r.req, req, len);
  return send_record(&r, err, errlen);
}

void jct__agent_guard_forget(uint64_t key) {
  if (g.pipe_w < 0 || g.owner != getpid()) return;
  record_t r;
  memset(&r, 0, sizeof r);
  r.key = key;
  char ignored[80];
  (void)send_record(&r, ignored, sizeof ignored);
}

pid_t jct__agent_guard_pid(void) {
  return g.pipe_w >= 0 && g.owner == getpid() ? g.pid : 0;
}

void jct__agent_guard_stop(void) {
  if (g.pipe_w < 0 || g.owner != getpid()) return;
  close(g.pipe_w);
  g.pipe_w = -1;
  while (waitpid(g.pid, NULL, 0) < 0 && errno == EINTR)
    ;
  g.pid = 0;
}
