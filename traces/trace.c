/* Reading a capture, pcap or pcapng, through libpcap (include/jctlab/trace.h).
 *
 * libpcap reads both formats from a FILE * and scales every timestamp to
 * nanoseconds when opened with PCAP_TSTAMP_PRECISION_NANO. What it does not
 * say is what the file itself holds, so the reader looks at the head of the
 * file first: the pcap magic 0xa1b23c4d (either byte order) marks nanosecond
 * timestamps, 0xa1b2c3d4 microsecond ones; a pcapng file starts with a
 * Section Header Block (type 0x0a0d0d0a) and its first Interface Description
 * Block's if_tsresol option (code 9; 10^-6 when absent) gives the resolution
 * (pcapng, draft-ietf-opsawg-pcapng sections 4.1, 4.2).
 *
 * The head is read, then the stream is put back where it was; a stream that
 * cannot seek (a pipe) is handed to libpcap behind a small cookie stream
 * that replays the head first.
 *
 * Frames are numbered from 1 in file order, as Wireshark numbers them.
 * A filter (jct_trace_set_filter) is libpcap's own BPF program, compiled
 * on the capture's pcap_t and run on each record as it is read; the
 * records it rejects are counted and skipped, numbers and all.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/trace.h"

#define HEAD_BYTES 4096u /* enough for a Section Header and the first IDB */
#define NAME_BYTES 256u
#define READ_BUFFER_BYTES (1u << 20)

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAPNG_SHB 0x0a0d0d0au
#define PCAPNG_BOM 0x1a2b3c4du
#define PCAPNG_IDB 0x00000001u
#define PCAPNG_OPT_END 0
#define PCAPNG_OPT_TSRESOL 9

struct jct_trace {
  pcap_t *pcap;
  int linktype;
  bool pcapng;
  bool nanosecond;
  bool filtered;
  struct bpf_program filter;
  uint64_t frame_no;
  uint64_t filtered_out;
  char *iobuf; /* the stdio buffer of a file jct_trace_open opened; NULL: stdio's own */
  char name[NAME_BYTES];
};

/* The head of the file, for streams that cannot seek back. */
typedef struct {
  FILE *fp;
  uint8_t head[HEAD_BYTES];
  size_t head_len, head_pos;
} replay_t;

static uint32_t rd32(const uint8_t *p, bool swap) {
  uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  return swap ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const uint8_t *p, bool swap) {
  uint16_t v = (uint16_t)(p[0] | p[1] << 8);
  return swap ? __builtin_bswap16(v) : v;
}

/* Whether the first IDB of a pcapng head declares a resolution finer than a
 * microsecond. A head too short to hold it gives the default, microseconds. */
static bool pcapng_nanosecond(const uint8_t *h, size_t n) {
  if (n < 12) return false;
  bool swap = rd32(h + 8, false) != PCAPNG_BOM;
  size_t off = 0;
  while (off + 12 <= n) {
    uint32_t type = rd32(h + off, swap), blen = rd32(h + off + 4, swap);
    if (blen < 12 || blen % 4 || blen > n - off) return false;
    if (type == PCAPNG_IDB) {
      size_t o = off + 16, end = off + blen - 4;
      while (o + 4 <= end) {
        uint16_t code = rd16(h + o, swap), len = rd16(h + o + 2, swap);
        if (code == PCAPNG_OPT_END || o + 4 + len > end) break;
        if (code == PCAPNG_OPT_TSRESOL && len >= 1) {
          uint8_t r = h[o + 4];
          /* 10^-r, or 2^-r with the top bit set; finer than 1 µs = nanosecond class. */
          return (r & 0x80) ? (r & 0x7f) >= 20 : r > 6;
        }
        o += 4 + ((len + 3u) & ~3u);
      }
      return false;
    }
    off += blen;
  }
  return false;
}

static ssize_t replay_read(void *cookie, char *buf, size_t size) {
  replay_t *r = cookie;
  if (r->head_pos < r->head_len) {
    size_t n = r->head_len - r->head_pos;
    if (n > size) n = size;
    memcpy(buf, r->head + r->head_pos, n);
    r->head_pos += n;
    return (ssize_t)n;
  }
  size_t n = fread(buf, 1, size, r->fp);
  return n == 0 && ferror(r->fp) ? -1 : (ssize_t)n;
}

static int replay_close(void *cookie) {
  replay_t *r = cookie;
  int rc = fclose(r->fp);
  free(r);
  return rc;
}

static int fail(jct_trace_t *t, FILE *fp, int code) {
  if (fp) fclose(fp);
  free(t);
  return code;
}

int jct_trace_open_file(jct_trace_t **out, FILE *fp, const char *name, char *err, size_t errlen) {
  *out = NULL;
  if (!name) name = "(capture)";
  jct_trace_t *t = calloc(1, sizeof *t);
  replay_t *r = malloc(sizeof *r);
  if (!t || !r) {
    free(r);
    return fail(t, fp, jct__errf(err, errlen, JCT_ENOMEM, "%s: out of memory", name));
  }
  snprintf(t->name, sizeof t->name, "%s", name);

  long start = ftell(fp);
  r->fp = fp;
  r->head_pos = 0;
  r->head_len = fread(r->head, 1, sizeof r->head, fp);
  if (r->head_len == 0) {
    int e = ferror(fp) ? errno : 0;
    free(r);
    if (e) return fail(t, fp, jct__errf(err, errlen, JCT_EIO, "%s: %s", name, strerror(e)));
    return fail(t, fp, jct__errf(err, errlen, JCT_ENOTCAP, "%s: not a capture file (empty)", name));
  }
  uint32_t magic = rd32(r->head, false);
  if (r->head_len >= 4) {
    if (magic == PCAP_MAGIC_NS || magic == __builtin_bswap32(PCAP_MAGIC_NS)) t->nanosecond = true;
    if (magic == PCAPNG_SHB) t->nanosecond = pcapng_nanosecond(r->head, r->head_len);
  }

  FILE *src = fp;
  if (start >= 0 && fseek(fp, start, SEEK_SET) == 0) {
    free(r);
  } else {
    clearerr(fp);
    src = fopencookie(r, "rb", (cookie_io_functions_t){.read = replay_read, .close = replay_close});
    if (!src) {
      free(r);
      return fail(t, fp, jct__errf(err, errlen, JCT_ENOMEM, "%s: out of memory", name));
    }
  }

  char pe[PCAP_ERRBUF_SIZE] = "";
  t->pcap = pcap_fopen_offline_with_tstamp_precision(src, PCAP_TSTAMP_PRECISION_NANO, pe);
  if (!t->pcap) {
    /* libpcap's words: "unknown file format", "truncated dump file; ...". */
    return fail(t, src,
                jct__errf(err, errlen, JCT_ENOTCAP, "%s: not a capture file (%s)", name, pe));
  }
  /* pcapng sections report their own major version, 1; pcap files 2. */
  t->pcapng = pcap_major_version(t->pcap) == 1;
  /* libpcap hands back DLT_* values; the file's LINKTYPE_RAW (101) comes
   * back as DLT_RAW (12 on Linux), the one value that differs among those
   * the decoder reads. */
  int dlt = pcap_datalink(t->pcap);
  t->linktype = dlt == DLT_RAW ? JCT_LINK_RAW : dlt;
  if (!jct_link_supported(t->linktype)) {
    const char *ln = pcap_datalink_val_to_name(dlt);
    int rc = jct__errf(err, errlen, JCT_ELINKTYPE, "%s: unsupported link type %d (%s)", name,
                       t->linktype, ln ? ln : "unknown");
    pcap_close(t->pcap); /* closes src */
    return fail(t, NULL, rc);
  }
  *out = t;
  return 0;
}

int jct_trace_open(jct_trace_t **out, const char *path, char *err, size_t errlen) {
  *out = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  /* libpcap reads record by record through stdio: a large buffer turns
   * 4 KiB read(2) calls into few large ones. It is ours: glibc's setvbuf
   * ignores the size when given no buffer and keeps st_blksize (4 KiB),
   * and a read(2) per 4 KiB cost as much as decoding every frame. */
  char *buf = malloc(READ_BUFFER_BYTES);
  if (buf) setvbuf(fp, buf, _IOFBF, READ_BUFFER_BYTES);
  int rc = jct_trace_open_file(out, fp, path, err, errlen);
  if (rc < 0)
    free(buf); /* fp is closed */
  else
    (*out)->iobuf = buf;
  return rc;
}

int jct_trace_set_filter(jct_trace_t *t, const char *expr, char *err, size_t errlen) {
  struct bpf_program prog;
  if (pcap_compile(t->pcap, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) != 0) {
    const char *why = pcap_geterr(t->pcap);
    /* libpcap says "can't ... (out of memory)" only when that is why. */
    int code = strstr(why, "out of memory") ? JCT_ENOMEM : JCT_EINVAL;
    return jct__errf(err, errlen, code, "filter '%.200s': %s", expr, why);
  }
  if (t->filtered) pcap_freecode(&t->filter);
  t->filter = prog;
  t->filtered = true;
  return 0;
}

uint64_t jct_trace_frames_read(const jct_trace_t *t) {
  return t->frame_no;
}

uint64_t jct_trace_frames_filtered_out(const jct_trace_t *t) {
  return t->filtered_out;
}

int jct_trace_next(jct_trace_t *t, jct_record_t *rec, char *err, size_t errlen) {
  struct pcap_pkthdr *h;
  const u_char *data;
  int rc;
  while ((rc = pcap_next_ex(t->pcap, &h, &data)) == 1 && t->filtered &&
         !pcap_offline_filter(&t->filter, h, data)) {
    t->frame_no++;
    t->filtered_out++;
  }
  if (rc == 1) {
    rec->frame_no = ++t->frame_no;
    rec->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
    rec->caplen = h->caplen;
    rec->wire_len = h->len;
    rec->data = data;
    return 1;
  }
  if (rc == PCAP_ERROR_BREAK) return 0; /* end of the file */
  /* PCAP_ERROR: the file ends inside a record, or its header is nonsense. */
  const char *why = pcap_geterr(t->pcap);
  const char *what = strstr(why, "truncated") ? "truncated" : "bad";
  return jct__errf(err, errlen, JCT_ETRUNC, "%s: %s record %llu: %s", t->name, what,
                   (unsigned long long)(t->frame_no + 1), why);
}

int jct_trace_linktype(const jct_trace_t *t) {
  return t->linktype;
}

const char *jct_trace_format(const jct_trace_t *t) {
  return t->pcapng ? "pcapng" : "pcap";
}

int jct_trace_nanosecond(const jct_trace_t *t) {
  return t->nanosecond;
}

void jct_trace_close(jct_trace_t *t) {
  if (!t) return;
  if (t->filtered) pcap_freecode(&t->filter);
  pcap_close(t->pcap); /* closes the file: its buffer is free now */
  free(t->iobuf);
  free(t);
}
