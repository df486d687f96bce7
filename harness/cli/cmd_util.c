/* What every command shares (commands.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Whether something can be made in folder d, found by making it: a folder
 * created and removed at once. access() is not enough: it says yes to root
 * for every folder, and procfs or sysfs then refuse the create. 0, or
 * errno. */
static int probe_folder(const char *d) {
  char *t = malloc(strlen(d) + sizeof "/.jctlab-probe-XXXXXX");
  if (!t) return ENOMEM;
  sprintf(t, "%s/.jctlab-probe-XXXXXX", d);
  int e = mkdtemp(t) ? (rmdir(t), 0) : errno;
  free(t);
  return e;
}

/* The nearest folder of path that exists (path itself, or a parent) can
 * be written in: 0, or errno. */
static int writable_folder(const char *path) {
  char *copy = strdup(path);
  if (!copy) return ENOMEM;
  char *d = copy;
  struct stat st;
  while (stat(d, &st) != 0) {
    if (errno != ENOENT) break;
    d = dirname(d);
  }
  int rc = stat(d, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : probe_folder(d);
  free(copy);
  return rc;
}

/* Whether the file path can be written, found by trying: an existing
 * regular file opened for writing (not truncated), a new one created and
 * removed at once; a device or FIFO (/dev/stdout) by its mode. 0, or
 * errno. */
static int probe_file(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode)) return access(path, W_OK) ? errno : 0;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    return fd < 0 ? errno : (close(fd), 0);
  }
  if (errno != ENOENT) return errno;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  close(fd);
  unlink(path);
  return 0;
}

int jct__cmd_output_ok(const char *cmd, const char *opt, const char *path) {
  if (!path || strcmp(path, "-") == 0) return 0;
  if (is_capture(path))
    return jct__cmd_bad(cmd, "%s %s: that file is a capture, and jctlab never writes over one",
                        opt, path);
  return jct__cmd_writable(cmd, opt, path);
}

int jct__cmd_writable(const char *cmd, const char *opt, const char *path) {
  if (!path || strcmp(path, "-") == 0) return 0;
  /* Found now, not after the run. */
  int e = probe_file(path);
  if (e) return jct__cmd_bad(cmd, "%s %s: cannot be written: %s", opt, path, strerror(e));
  return 0;
}

int jct__cmd_output_dir_ok(const char *cmd, const char *opt, const char *path) {
  if (!path) return 0;
  int e = writable_folder(path);
  if (e) return jct__cmd_bad(cmd, "%s %s: cannot be written: %s", opt, path, strerror(e));
  return 0;
}

void jct__cmd_print_injector(const char *lead, size_t index, const char *spec, uint64_t seed,
                             const jct_injector_stats_t *st) {
  printf("%s#%zu '%s' (seed %llu): %llu seen, %llu matched, %llu dropped, %llu held, "
         "%llu modified, %llu generated, %llu duplicated\n",
         lead, index, spec, (unsigned long long)seed, (unsigned long long)st->seen,
         (unsigned long long)st->matched, (unsigned long long)st->dropped,
         (unsigned long long)st->held, (unsigned long long)(st->modified + st->expedited),
         (unsigned long long)st->generated, (unsigned long long)st->duplicated);
}
