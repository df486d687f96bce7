/* The fabric's captures (not a public interface): fabric.c's (what crossed
 * the switch, what arrived at its ports) and chain.c's (what the injectors
 * dropped). They are nanosecond pcap files (pcap-savefile(5),
 * PCAP_TSTAMP_PRECISION_NANO: the header's tv_usec holds nanoseconds),
 * stamped on CLOCK_REALTIME, while the fabric runs on CLOCK_MONOTONIC
 * (include/jctlab/clock.h).
 *
 * A capture may rotate as tcpdump -w does with -C and -W (tcpdump(1)):
 * before a record is written, when the file holds more than file_bytes
 * (libpcap's pcap_dump_ftell64 says how much), it is closed and the next
 * one opened, so every file ends on a whole record and is a capture of its
 * own. The files are named as tcpdump names them: without a limit on their
 * number, FILE, FILE1, FILE2, ...; with at most `files` of them, FILE0 to
 * FILE<files-1>, the number zero-padded to the width of files-1 (FILE for
 * files = 1), and after the last one the first is written again (a ring:
 * the newest `files` are kept). The number goes after the whole name, as
 * tcpdump appends it (out.pcap1).
 */
#ifndef JCT_CAPTURE_H
#define JCT_CAPTURE_H

#include <pcap/pcap.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct jct__savefile jct__savefile_t;

/* Open path ("-": standard output, never rotated) for frames of dead's
 * link type and precision. file_bytes: rotate past this size (0: never);
 * files: with file_bytes, at most this many (0: no limit). Errors:
 * JCT_EINVAL (rotation asked of standard output), JCT_EIO (the first file
 * cannot be opened: err says why), JCT_ENOMEM. */
int jct__savefile_open(jct__savefile_t **out, pcap_t *dead, const char *path, uint64_t file_bytes,
                       uint32_t files, char *err, size_t errlen);

/* Write one record (rotating first when due). When the next file cannot
 * be opened, or a write failed, the capture stops there, whole, and the
 * reason is printed on stderr once. */
void jct__savefile_dump(jct__savefile_t *s, const struct pcap_pkthdr *h, const uint8_t *frame);

/* Flush and close. NULL is fine. */
void jct__savefile_close(jct__savefile_t *s);

/* The name of file k (0: the first written) of a capture at path rotated
 * with at most `files` files (0: no limit), into buf; k wraps at files.
 * Returns buf, or NULL when len is too small. */
char *jct__savefile_name(const char *path, uint32_t files, uint64_t k, char *buf, size_t len);

/* Stamp h at t_ns (monotonic; realtime_offset_ns: CLOCK_REALTIME -
 * CLOCK_MONOTONIC), cut it to snaplen bytes (0: whole) and write it with
 * frame into s. h holds the frame's caplen and len; its time is set here. */
static inline void jct__capture_dump(jct__savefile_t *s, struct pcap_pkthdr *h, uint64_t t_ns,
                                     int64_t realtime_offset_ns, uint32_t snaplen,
                                     const uint8_t *frame) {
  uint64_t ts = (uint64_t)((int64_t)t_ns + realtime_offset_ns);
  h->ts.tv_sec = (time_t)(ts / 1000000000u);
  h->ts.tv_usec = (suseconds_t)(ts % 1000000000u); /* nanoseconds: the dumper is nano */
  if (snaplen && h->caplen > snaplen) h->caplen = snaplen;
  jct__savefile_dump(s, h, frame);
}

#endif
