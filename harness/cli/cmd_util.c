/* What every command shares (commands.h). */
#include <stdarg.h>
#include <stdio.h>

#include "commands.h"

int jct__cmd_bad(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "jctlab %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (try 'jctlab %s --help')\n", cmd);
  va_end(ap);
  return 2;
}
