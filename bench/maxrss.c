/* Run a command and report its wall time and peak resident memory, the way
 * bench/inspect measures each contender (GNU time is not on every Debian
 * machine; getrusage(RUSAGE_CHILDREN) is).
 *
 * Usage: maxrss STATFILE COMMAND [ARG...]
 * The command's stdin, stdout and stderr are left as they are; one line
 * "WALL_NS MAXRSS_KB" is written to STATFILE. Exit status: the command's,
 * or 127 when it cannot be run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s STATFILE COMMAND [ARG...]\n", argv[0]);
    return 127;
  }
  uint64_t start = now_ns();
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 127;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      perror("waitpid");
      return 127;
    }
  }
  uint64_t wall_ns = now_ns() - start;
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  FILE *fp = fopen(argv[1], "w");
  if (!fp) {
    perror(argv[1]);
    return 127;
  }
  fprintf(fp, "%llu %ld\n", (unsigned long long)wall_ns, ru.ru_maxrss);
  fclose(fp);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
