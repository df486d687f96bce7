/* Network namespaces held by file descriptors (include/jctlab/topo.h,
 * DESIGN.md decision 2): the process's own isolation, and moving the
 * calling thread into a rank's namespace and back to run code there.
 *
 * jct_ns_isolate() is unshare(CLONE_NEWNET), or, when that is not allowed,
 * unshare(CLONE_NEWUSER | CLONE_NEWNET) followed by the uid and gid maps
 * that make the caller root inside (writing "deny" to setgroups first, as
 * an unprivileged process must). A namespace is entered with setns(2) on
 * the fd the topology holds for it; the way back is an fd opened on
 * /proc/thread-self/ns/net before leaving. setns() moves the calling thread
 * only, so none of this touches the process's other threads.
 *
 * Sources: namespaces(7), network_namespaces(7), user_namespaces(7) (uid_map,
 * gid_map and setgroups), unshare(2), setns(2); PROC_NET_INIT_INO in the
 * kernel's include/linux/proc_ns.h for the initial namespace's inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/stat.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "topo_int.h"

/* ---- Isolation --------------------------------------------------------- */

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int e = n < 0 ? errno : (size_t)n == len ? 0 : EIO;
  close(fd);
  return e;
}

static const char *userns_hint(int e) {
  switch (e) {
  case EPERM:
    return " (user namespaces disabled or restricted: kernel.unprivileged_userns_clone=0, "
           "kernel.apparmor_restrict_unprivileged_userns=1, or a seccomp profile?)";
  case ENOSPC:
    return " (user.max_user_namespaces reached, or 0)";
  case EINVAL:
    return " (the process has threads: call jct_ns_isolate before starting any)";
  case EUSERS:
    return " (too deeply nested user namespaces)";
  default:
    return "";
  }
}

/* Map the caller's id (uid or gid, by file) to 0 in the new user namespace. */
static int write_map(const char *file, unsigned id, char *err, size_t errlen) {
  char path[32], map[64], et[96];
  snprintf(path, sizeof path, "/proc/self/%s", file);
  snprintf(map, sizeof map, "0 %u 1", id);
  int e = write_text(path, map);
  if (e != 0)
    return jct__errf(err, errlen, JCT_EIO, "user namespace: cannot write %s \"%s\": %s", file, map,
                     jct__errno_text(e, et, sizeof et));
  return 0;
}

int jct_ns_isolate(char *err, size_t errlen) {
  char et[96];
  if (geteuid() == 0) {
    if (unshare(CLONE_NEWNET) == 0) return 0;
    if (errno != EPERM)
      return jct__errf(err, errlen, JCT_EIO, "cannot create a network namespace: %s",
                       jct__errno_text(errno, et, sizeof et));
    /* root without CAP_SYS_ADMIN (a container): a user namespace may do. */
  }
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    int e = errno;
    return jct__errf(err, errlen, JCT_EIO, "cannot create a user namespace: %s%s",
                     jct__errno_text(e, et, sizeof et), userns_hint(e));
  }
  int e = write_text("/proc/self/setgroups", "deny");
  if (e != 0 && e != ENOENT) /* ENOENT: kernels before 3.19 have no such file */
    return jct__errf(err, errlen, JCT_EIO, "user namespace: cannot write /proc/self/setgroups: %s",
                     jct__errno_text(e, et, sizeof et));
  int rc = write_map("uid_map", (unsigned)uid, err, errlen);
  if (rc == 0) rc = write_map("gid_map", (unsigned)gid, err, errlen);
  return rc;
}

/* The inode number of the initial network namespace's nsfs file: fixed by
 * the kernel (PROC_NET_INIT_INO in include/linux/proc_ns.h). */
#define INIT_NETNS_INO 0xeffffff9u

/* The initial namespace, or pid 1's (a container's). Unprivileged callers
 * cannot look at pid 1's, nor create anything in either. */
bool jct__ns_is_host(void) {
  struct stat self, host;
  if (stat(JCT__NS_SELF, &self) != 0) return false;
  if (self.st_ino == INIT_NETNS_INO) return true;
  if (stat("/proc/1/ns/net", &host) != 0) return false;
  return self.st_dev == host.st_dev && self.st_ino == host.st_ino;
}

/* ---- Entering a rank's namespace ----------------------------------------- */

static int enter(int nsfd, const char *what, char *err, size_t errlen) {
  char et[96];
  if (setns(nsfd, CLONE_NEWNET) != 0)
    return jct__errf(err, errlen, JCT_EIO, "cannot enter %s: %s", what,
                     jct__errno_text(errno, et, sizeof et));
  return 0;
}

static int check_rank(const jct_topo_t *t, size_t i, char *err, size_t errlen) {
  if (i < t->n) return 0;
  return jct__errf(err, errlen, JCT_EINVAL, "rank %zu: the topology has %zu ranks", i, t->n);
}

int jct_topo_enter_rank(const jct_topo_t *t, size_t i, char *err, size_t errlen) {
  int rc = check_rank(t, i, err, errlen);
  if (rc < 0) return rc;
  char what[48];
  snprintf(what, sizeof what, "rank %zu's namespace", i);
  return enter(t->rank[i].nsfd, what, err, errlen);
}

int jct_topo_enter_switch(const jct_topo_t *t, char *err, size_t errlen) {
  return enter(t->switch_nsfd, "the switch namespace", err, errlen);
}

int jct_topo_in_rank(const jct_topo_t *t, size_t i, jct_topo_in_rank_cb cb, void *arg, char *err,
                     size_t errlen) {
  char et[96];
  int rc = check_rank(t, i, err, errlen);
  if (rc < 0) return rc;
  int back = open(JCT__NS_SELF, O_RDONLY | O_CLOEXEC);
  if (back < 0)
    return jct__errf(err, errlen, JCT_EIO, "cannot open " JCT__NS_SELF ": %s",
                     jct__errno_text(errno, et, sizeof et));
  rc = jct_topo_enter_rank(t, i, err, errlen);
  if (rc == 0) {
    rc = cb(arg);
    if (setns(back, CLONE_NEWNET) != 0)
      rc = jct__errf(err, errlen, JCT_EIO, "rank %zu: cannot return from its namespace: %s", i,
                     jct__errno_text(errno, et, sizeof et));
  }
  close(back);
  return rc;
}

struct socket_args {
  int domain, type, protocol;
  int fd, err;
};

static int socket_cb(void *arg) {
  struct socket_args *a = arg;
  a->fd = socket(a->domain, a->type, a->protocol);
  a->err = a->fd < 0 ? errno : 0;
  return 0;
}

int jct_topo_socket(const jct_topo_t *t, size_t i, int domain, int type, int protocol, char *err,
                    size_t errlen) {
  char et[96];
  struct socket_args a = {domain, type, protocol, -1, 0};
  int rc = jct_topo_in_rank(t, i, socket_cb, &a, err, errlen);
  if (rc < 0) {
    if (a.fd >= 0) close(a.fd);
    return rc;
  }
  if (a.fd < 0)
    return jct__errf(err, errlen, JCT_EIO, "rank %zu: socket: %s", i,
                     jct__errno_text(a.err, et, sizeof et));
  return a.fd;
}
