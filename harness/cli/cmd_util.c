/* What every command shares (commands.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* The first four bytes of a capture: pcap in either byte order, with
 * microsecond or nanosecond stamps, and pcapng's section header block. */
static bool is_capture(const char *path) {
  static const uint8_t magic[][4] = {{0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4},
                                     {0x4d, 0x3c, 0xb2, 0xa1}, {0xa1, 0xb2, 0x3c, 0x4d},
                                     {0x0a, 0x0d, 0x0d, 0x0a}};
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  uint8_t b[4];
  bool got = fread(b, 1, sizeof b, f) == sizeof b;
  fclose(f);
  for (size_t i = 0; got && i < sizeof magic / sizeof *magic; i++)
    if (memcmp(b, magic[i], sizeof b) == 0) return true;
  return false;
}

int jct__cmd_output_ok(const char *cmd, const char *opt, const char *path) {
  if (!path || strcmp(path, "-") == 0 || !is_capture(path)) return 0;
  return jct__cmd_bad(cmd, "%s %s: that file is a capture, and jctlab never writes over one", opt,
                      path);
}
