/* A lab VM running a program instead of the agent (agent_exec.h). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_exec.h"

#define WORD "jctlab.exec="

bool jct__agent_exec_wanted(char *path, size_t len) {
  char line[4096];
  FILE *f = fopen("/proc/cmdline", "r");
  if (!f) return false;
  bool ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!ok) return false;
  for (char *w = strtok(line, " \n"); w; w = strtok(NULL, " \n"))
    if (!strncmp(w, WORD, strlen(WORD)) && w[strlen(WORD)]) {
      snprintf(path, len, "%s", w + strlen(WORD));
      return true;
    }
  return false;
}

int jct__agent_exec(const char *control, const char *path) {
  /* Its own, blocking, descriptor of the port: the host reads at its pace. */
  int out = open(control, O_WRONLY | O_CLOEXEC);
  if (out < 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(127);
    execl(path, path, (char *)NULL);
    dprintf(2, "jctlab agent: cannot run %s: %m\n", path);
    _exit(127);
  }
  int st = 0, status = 1;
  if (pid > 0 && waitpid(pid, &st, 0) == pid)
    status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  dprintf(out, "\n" JCT_AGENT_EXEC_STATUS "%d\n", status);
  close(out);
  return status;
}
