/* The fabric's captures, rotated as tcpdump -C/-W (capture.h).
 *
 * In a ring (-W), a file written over is not truncated by the loop's
 * thread: truncating 10 MB just written took the kernel 7 ms on average
 * and up to 40 ms here (freeing its pages and blocks), a stall the
 * emulated links would see. Instead the old file is opened, its name
 * unlinked and a new file made under the name (each cheap), and the
 * descriptor handed to a thread of the capture's own whose close(2) frees
 * the old file's space. If the process dies first, the kernel frees it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "common/errf.h"
#include "jctlab/error.h"

/* stdio's 4 KiB made a write(2) per frame: a system call per 256 KiB. */
#define DUMP_BUFFER_BYTES (256u << 10)
/* A record's header in the file (pcap-savefile(5)): seconds, fraction,
 * caplen, len, 32 bits each. */
#define RECORD_HEADER_BYTES 16u

struct jct__savefile {
  pcap_t *dead;
  pcap_dumper_t *d; /* NULL once the capture stopped */
  uint64_t file_bytes;
  uint32_t files;
  uint64_t index; /* of the file being written, counted over the run */
  /* What the file holds, counted here so that pcap_dump_ftell64 (an
   * lseek(2) each time) is asked only when a rotation looks due. */
  uint64_t bytes;
  char *path;
  char *name; /* of the file being written: strlen(path) + 21, room for any number */
  size_t name_len;
  int discard_fd; /* a ring's: write end of the pipe to the discarding thread; -1: none */
  pthread_t discarder;
};

/* The discarding thread: close each descriptor that comes down the pipe,
 * until it is closed. */
static void *discard_main(void *arg) {
  int rfd = (int)(intptr_t)arg, fd;
  while (read(rfd, &fd, sizeof fd) == (ssize_t)sizeof fd)
    close(fd);
  close(rfd);
  return NULL;
}

/* Start it, every signal blocked in it (they are the loop thread's). On
 * failure the ring truncates in place, as a plain fopen would. */
static void start_discarder(jct__savefile_t *s) {
  int p[2];
  if (pipe2(p, O_CLOEXEC)) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&s->discarder, NULL, discard_main, (void *)(intptr_t)p[0]);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) {
    close(p[0]);
    close(p[1]);
    return;
  }
  s->discard_fd = p[1];
}

/* A ring comes back to a file it wrote: let the discarder free it. */
static void discard(jct__savefile_t *s, const char *name) {
  if (s->discard_fd < 0) return;
  int old = open(name, O_RDONLY | O_CLOEXEC);
  if (old < 0) return;
  if (unlink(name) || write(s->discard_fd, &old, sizeof old) != (ssize_t)sizeof old) close(old);
}

char *jct__savefile_name(const char *path, uint32_t files, uint64_t k, char *buf, size_t len) {
  int width = 0; /* tcpdump's: the digits of files - 1 */
  for (uint32_t x = files ? files - 1 : 0; x; x /= 10)
    width++;
  if (files) k %= files;
  int n = k == 0 && width == 0 ? snprintf(buf, len, "%s", path)
                               : snprintf(buf, len, "%s%0*" PRIu64, path, width, k);
  return n >= 0 && (size_t)n < len ? buf : NULL;
}

/* Open file s->index, with a large stdio buffer. */
static int open_file(jct__savefile_t *s, char *err, size_t errlen) {
  if (!strcmp(s->path, "-")) { /* never rotated */
    s->d = pcap_dump_open(s->dead, "-");
    if (!s->d) return jct__errf(err, errlen, JCT_EIO, "-: %s", pcap_geterr(s->dead));
  } else {
    jct__savefile_name(s->path, s->files, s->index, s->name, s->name_len);
    if (s->files && s->index >= s->files) discard(s, s->name);
    FILE *fp = fopen(s->name, "wb");
    if (!fp) return jct__errf(err, errlen, JCT_EIO, "%s: %s", s->name, strerror(errno));
    setvbuf(fp, NULL, _IOFBF, DUMP_BUFFER_BYTES);
    s->d = pcap_dump_fopen(s->dead, fp); /* pcap_dump_close closes fp */
    if (!s->d) {
      fclose(fp);
      return jct__errf(err, errlen, JCT_EIO, "%s: %s", s->name, pcap_geterr(s->dead));
    }
  }
  int64_t at = pcap_dump_ftell64(s->d);
  s->bytes = at > 0 ? (uint64_t)at : 0; /* the file header */
  return 0;
}

/* Flush and close the file being written: false when a write failed. */
static bool close_file(jct__savefile_t *s) {
  bool ok = pcap_dump_flush(s->d) == 0;
  pcap_dump_close(s->d);
  s->d = NULL;
  return ok;
}

int jct__savefile_open(jct__savefile_t **out, pcap_t *dead, const char *path, uint64_t file_bytes,
                       uint32_t files, char *err, size_t errlen) {
  *out = NULL;
  if (file_bytes && !strcmp(path, "-"))
    return jct__errf(err, errlen, JCT_EINVAL, "-: standard output cannot rotate");
  jct__savefile_t *s = calloc(1, sizeof *s);
  if (!s) return JCT_ENOMEM;
  *s = (jct__savefile_t){.dead = dead,
                         .file_bytes = file_bytes,
                         .files = file_bytes ? files : 0,
                         .name_len = strlen(path) + 21,
                         .discard_fd = -1};
  s->path = strdup(path);
  s->name = malloc(s->name_len);
  if (!s->path || !s->name) {
    jct__savefile_close(s);
    return JCT_ENOMEM;
  }
  snprintf(s->name, s->name_len, "%s", path);
  if (s->files) start_discarder(s);
  int rc = open_file(s, err, errlen);
  if (rc) {
    jct__savefile_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* The next file: 0, or the capture stops (said on stderr). */
static int rotate(jct__savefile_t *s) {
  char err[300];
  if (!close_file(s)) {
    fprintf(stderr, "jctlab: capture %s: a write failed; nothing more is written\n", s->name);
    return -1;
  }
  s->index++;
  if (open_file(s, err, sizeof err)) {
    fprintf(stderr, "jctlab: capture: %s; nothing more is written\n", err);
    return -1;
  }
  return 0;
}

void jct__savefile_dump(jct__savefile_t *s, const struct pcap_pkthdr *h, const uint8_t *frame) {
  if (!s->d) return;
  if (s->file_bytes && s->bytes > s->file_bytes) {
    int64_t at = pcap_dump_ftell64(s->d); /* libpcap's word, once per file */
    if (at >= 0) s->bytes = (uint64_t)at;
    if (s->bytes > s->file_bytes && rotate(s)) return;
  }
  pcap_dump((u_char *)s->d, h, frame);
  s->bytes += RECORD_HEADER_BYTES + h->caplen;
}

void jct__savefile_close(jct__savefile_t *s) {
  if (!s) return;
  if (s->d && !close_file(s)) fprintf(stderr, "jctlab: capture %s: a write failed\n", s->name);
  if (s->discard_fd >= 0) { /* the thread closes what is left, then ends */
    close(s->discard_fd);
    pthread_join(s->discarder, NULL);
  }
  free(s->path);
  free(s->name);
  free(s);
}
