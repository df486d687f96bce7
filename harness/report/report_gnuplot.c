/* Running gnuplot for the report (report_int.h): a child process found on
 * PATH, its working directory the report's, its standard input the script
 * (an unlinked temporary file, so nothing is left behind whatever
 * happens), its standard error another one read back for the message when
 * it fails. It is given timeout_s seconds, then killed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/errf.h"
#include "harness/base/layout.h"
#include "jctlab/error.h"
#include "report_int.h"

extern char **environ;

/* gnuplot's most telling line: the first error ("line 12: x range is
 * invalid"; gnuplot reading a script from its standard input goes on after
 * one, and exits 1 at the end), else the last line that is not a warning. */
static void first_error(FILE *f, char *out, size_t len) {
  char line[512];
  out[0] = 0;
  rewind(f);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    const char *p = line + strspn(line, " \t^");
    if (!*p || strncasecmp(p, "warning", 7) == 0) continue;
    const char *at = strstr(p, "line ");
    if (at && isdigit((unsigned char)at[5]) && (at = strstr(at, ": ")) != NULL &&
        strncasecmp(at + 2, "warning", 7) != 0) {
      snprintf(out, len, "%s", p);
      return;
    }
    if (!strstr(p, "warning:")) snprintf(out, len, "%s", p);
  }
}

static int wait_bounded(pid_t pid, int timeout_s, int *status) {
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (long waited_ms = 0;; waited_ms += 5) {
    pid_t w = waitpid(pid, status, WNOHANG);
    if (w == pid) return 0;
    if (w < 0 && errno != EINTR) return -1;
    if (waited_ms >= (long)timeout_s * 1000) {
      kill(pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      return 1;
    }
    nanosleep(&nap, NULL);
  }
}

int jct__gnuplot_run(FILE *script, const char *dir, int timeout_s, char *err, size_t errlen) {
  FILE *errf = tmpfile();
  if (!errf)
    return jct__errf(err, errlen, JCT_EIO, "a temporary file for gnuplot: %s", strerror(errno));
  if (fflush(script) || fseek(script, 0, SEEK_SET)) {
    fclose(errf);
    return jct__errf(err, errlen, JCT_EIO, "the gnuplot script: %s", strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fileno(script), 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fileno(errf), 2);
  posix_spawn_file_actions_addchdir_np(&fa, dir);
  char *argv[] = {(char *)"gnuplot", NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) {
    fclose(errf);
    char deps[PATH_MAX];
    if (rc == ENOENT)
      return jct__errf(err, errlen, JCT_EIO,
                       "--report needs gnuplot, which is not installed (Debian package "
                       "gnuplot-nox; %s installs it)",
                       jct__script_name("setup-deps", deps, sizeof deps));
    return jct__errf(err, errlen, JCT_EIO, "cannot start gnuplot in %s: %s", dir, strerror(rc));
  }
  int status = 0, w = wait_bounded(pid, timeout_s, &status);
  char why[400];
  first_error(errf, why, sizeof why);
  fclose(errf);
  if (w > 0)
    return jct__errf(err, errlen, JCT_EIO, "gnuplot ran for more than %d s and was stopped",
                     timeout_s);
  if (w < 0) return jct__errf(err, errlen, JCT_EIO, "waiting for gnuplot: %s", strerror(errno));
  if (WIFSIGNALED(status))
    return jct__errf(err, errlen, JCT_EIO, "gnuplot was killed by signal %d", WTERMSIG(status));
  if (WEXITSTATUS(status) == 127)
    return jct__errf(err, errlen, JCT_EIO, "cannot run gnuplot in %s%s%s", dir, why[0] ? ": " : "",
                     why);
  if (WEXITSTATUS(status))
    return jct__errf(err, errlen, JCT_EIO, "gnuplot failed (exit status %d)%s%s",
                     WEXITSTATUS(status), why[0] ? ": " : "", why);
  return 0;
}
