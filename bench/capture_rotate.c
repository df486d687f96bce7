/* What rotating a capture costs the fabric's loop (harness/fabric/capture.h):
 * the time to write one record, median of REPS runs of RECORDS records of
 * a full RoCE frame (PMTU 4096: 4,154 bytes on the wire), into a folder.
 *
 *   plain      libpcap's pcap_dump into one file with the fabric's 256 KiB
 *              stdio buffer: what --pcap-out cost before rotation (the peer)
 *   ftell      the same, asking pcap_dump_ftell64 before every record, as
 *              tcpdump -C does (an lseek(2) each time)
 *   one file   jctlab's capture without -C
 *   -C 10      jctlab's capture rotated every 10,000,000 bytes
 *   -C 10 -W 3 the same, a ring of three files
 *
 * Each line gives the median time per record and the median of each
 * run's longest single record: a stall the fabric's loop would feel.
 *
 * Usage: capture_rotate [DIR] (default: $TMPDIR or /tmp); the files are
 * removed after each run.
 */
#include <dirent.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/fabric/capture.h"

#define RECORDS 50000u
#define FRAME_BYTES 4154u
#define REPS 5
#define LIMIT_BYTES 10000000u

enum { PLAIN, FTELL, ONE, ROTATE, RING, NKINDS };
static const char *const names[NKINDS] = {"plain pcap_dump (peer)", "pcap_dump_ftell64 per record",
                                          "jctlab, one file", "jctlab, -C 10",
                                          "jctlab, -C 10 -W 3"};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void empty(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char p[800];
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  if (d) closedir(d);
}

static uint64_t worst_ns; /* of the run under way: its longest record */

/* Time one write into worst_ns. */
#define TIMED(stmt)                                                                                \
  do {                                                                                             \
    uint64_t t_ = now_ns();                                                                        \
    stmt;                                                                                          \
    t_ = now_ns() - t_;                                                                            \
    if (t_ > worst_ns) worst_ns = t_;                                                              \
  } while (0)

/* One run of kind into dir: nanoseconds per record, with the files closed. */
static double run(int kind, pcap_t *dead, const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/bench.pcap", dir);
  static uint8_t frame[FRAME_BYTES];
  struct pcap_pkthdr h = {.caplen = FRAME_BYTES, .len = FRAME_BYTES};
  uint64_t t0 = now_ns(), sink = 0;
  worst_ns = 0;
  if (kind == PLAIN || kind == FTELL) {
    FILE *fp = fopen(path, "wb");
    if (!fp) exit(1);
    setvbuf(fp, NULL, _IOFBF, 256u << 10);
    pcap_dumper_t *d = pcap_dump_fopen(dead, fp);
    for (uint32_t i = 0; i < RECORDS; i++) {
      h.ts.tv_usec = (suseconds_t)i;
      TIMED(if (kind == FTELL) sink += (uint64_t)pcap_dump_ftell64(d);
            pcap_dump((u_char *)d, &h, frame));
    }
    pcap_dump_close(d);
  } else {
    jct__savefile_t *s;
    char err[300];
    uint64_t limit = kind == ONE ? 0 : LIMIT_BYTES;
    if (jct__savefile_open(&s, dead, path, limit, kind == RING ? 3 : 0, err, sizeof err)) {
      fprintf(stderr, "capture_rotate: %s\n", err);
      exit(1);
    }
    for (uint32_t i = 0; i < RECORDS; i++) {
      h.ts.tv_usec = (suseconds_t)i;
      TIMED(jct__savefile_dump(s, &h, frame));
    }
    jct__savefile_close(s);
  }
  double per = (double)(now_ns() - t0) / RECORDS + (double)(sink & 0u);
  empty(dir);
  return per;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *base = argc > 1 ? argv[1] : getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/capture-rotate-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror("capture_rotate: mkdtemp");
    return 1;
  }
  pcap_t *dead =
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  double t[NKINDS][REPS], worst[NKINDS][REPS];
  for (int r = 0; r < REPS; r++) /* interleaved, so that each kind sees the same machine */
    for (int k = 0; k < NKINDS; k++) {
      t[k][r] = run(k, dead, dir);
      worst[k][r] = (double)worst_ns;
    }
  printf("capture_rotate: %u records of %u bytes (%.0f MB) per run, median of %d runs\n", RECORDS,
         FRAME_BYTES, (double)RECORDS * (FRAME_BYTES + 16) / 1e6, REPS);
  for (int k = 0; k < NKINDS; k++) {
    qsort(t[k], REPS, sizeof t[k][0], cmp);
    qsort(worst[k], REPS, sizeof worst[k][0], cmp);
    double med = t[k][REPS / 2];
    printf("  %-30s %7.0f ns/record  %6.0f MB/s  longest record %6.2f ms\n", names[k], med,
           (FRAME_BYTES + 16) / med * 1e3, worst[k][REPS / 2] / 1e6);
  }
  pcap_close(dead);
  rmdir(dir);
  return 0;
}
