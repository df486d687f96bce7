/* Reading a capture: pcap or pcapng through libpcap, streaming, with
 * nanosecond timestamps where the file has them (microsecond files are
 * scaled; libpcap's PCAP_TSTAMP_PRECISION_NANO).
 *
 * A reader holds one record at a time: memory does not grow with the file.
 */
#ifndef JCTLAB_TRACE_H
#define JCTLAB_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct jct_trace jct_trace_t;

typedef struct {
  uint64_t frame_no;   /* 1-based, as Wireshark numbers frames */
  uint64_t ts_ns;      /* capture timestamp, ns since the epoch */
  uint32_t caplen;     /* bytes captured, data[0..caplen) */
  uint32_t wire_len;   /* bytes on the wire */
  const uint8_t *data; /* valid until the next jct_trace_next() or close */
} jct_record_t;

/* Open a capture read from fp (jct_trace_close() closes it); name is used
 * in messages. Errors: JCT_ENOTCAP (not a pcap/pcapng file, or an empty
 * one), JCT_ELINKTYPE (a link type jct_decode() does not read), JCT_ENOMEM;
 * err gets "NAME: what is wrong". On error fp is closed. */
int jct_trace_open_file(jct_trace_t **out, FILE *fp, const char *name, char *err, size_t errlen);

/* Open the capture at path. As above, plus JCT_EIO when it cannot be
 * opened ("NAME: No such file or directory"). */
int jct_trace_open(jct_trace_t **out, const char *path, char *err, size_t errlen);

/* Read the next record. Returns 1 with rec filled, 0 at the end of the
 * capture, or JCT_ETRUNC when the file ends inside a record (err says
 * which record and what libpcap said); what came before stays valid. */
int jct_trace_next(jct_trace_t *t, jct_record_t *rec, char *err, size_t errlen);

/* Read only the records that match expr, a libpcap filter expression
 * (pcap-filter(7): tcpdump's syntax, not Wireshark's display filters),
 * compiled for the capture's link type and snap length and run on each
 * record's captured bytes (pcap_compile + pcap_offline_filter): from now
 * on jct_trace_next() skips the others. Frame numbers still count every
 * record, as Wireshark's do under a display filter. Call it before the
 * first jct_trace_next(). Errors: JCT_EINVAL, err gets "filter 'EXPR':
 * libpcap's words"; JCT_ENOMEM. */
int jct_trace_set_filter(jct_trace_t *t, const char *expr, char *err, size_t errlen);

/* Records read so far, whether the filter matched them or not; and of
 * those, the ones the filter skipped (0 without a filter). */
uint64_t jct_trace_frames_read(const jct_trace_t *t);
uint64_t jct_trace_frames_filtered_out(const jct_trace_t *t);

int jct_trace_linktype(const jct_trace_t *t);
/* "pcap" or "pcapng"; and whether timestamps were nanosecond in the file. */
const char *jct_trace_format(const jct_trace_t *t);
int jct_trace_nanosecond(const jct_trace_t *t);

void jct_trace_close(jct_trace_t *t);

#endif
