/* SIGINT and SIGTERM as a run takes them (interrupt.h): a flag, a self-pipe
 * (the classic way to wake a poll loop from a signal handler, as libuv's
 * own uv_signal does), and the default action restored for the second. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "interrupt.h"

static volatile sig_atomic_t got;
static int pipe_fd[2] = {-1, -1};

static void on_signal(int sig) {
  if (got) { /* the second: end now, as the default action would */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  got = sig;
  int saved = errno;
  if (pipe_fd[1] >= 0) (void)!write(pipe_fd[1], "", 1);
  errno = saved;
}

int jct__interrupt_install(void) {
  if (pipe_fd[0] >= 0) return 0;
  if (pipe2(pipe_fd, O_NONBLOCK | O_CLOEXEC)) return -errno;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) return -errno;
  return 0;
}

int jct__interrupt_signal(void) {
  return got;
}

int jct__interrupt_fd(void) {
  return pipe_fd[0];
}

void jct__interrupt_drain(void) {
  char buf[64];
  while (pipe_fd[0] >= 0 && read(pipe_fd[0], buf, sizeof buf) > 0) {
  }
}
