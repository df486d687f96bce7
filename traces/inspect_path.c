/* Inspecting a whole capture file: read (trace.c), decode (decode.c) and
 * analyse (inspect.c) every frame in one streaming pass.
 *
 * The loop does nothing else per frame, so that the whole inspection stays
 * close to the cost of libpcap's own read loop. A capture that ends inside a
 * record is analysed up to it (JCT_ETRUNC with the analysis still returned).
 */
#include <stddef.h>

#include "common/errf.h"
#include "inspect_int.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/inspect.h"
#include "jctlab/trace.h"

int jct_inspect_trace(jct_inspect_t *ins, jct_trace_t *t, char *err, size_t errlen) {
  const jct_inspect_opts_t *opts = jct__inspect_opts(ins);
  const int linktype = jct_trace_linktype(t);
  jct_record_t rec;
  jct_packet_t pkt;
  int rc;
  while ((rc = jct_trace_next(t, &rec, err, errlen)) == 1) {
    jct_decode(linktype, rec.data, rec.caplen, rec.wire_len, &pkt);
    if (jct_inspect_add(ins, &pkt, rec.ts_ns, rec.frame_no, rec.wire_len) < 0)
      return jct__errf(err, errlen, JCT_ENOMEM, "out of memory at frame %llu",
                       (unsigned long long)rec.frame_no);
    if (opts->on_packet) opts->on_packet(&pkt, rec.frame_no, rec.ts_ns, opts->packet_arg);
  }
  jct_inspect_finish(ins);
  return rc; /* 0, or JCT_ETRUNC */
}

int jct_inspect_path(const char *path, const jct_inspect_opts_t *opts, jct_inspect_t **out,
                     char *err, size_t errlen) {
  *out = NULL;
  jct_trace_t *t;
  int rc = jct_trace_open(&t, path, err, errlen);
  if (rc < 0) return rc;
  jct_inspect_t *ins;
  rc = jct_inspect_new(&ins, opts);
  if (rc < 0) {
    jct_trace_close(t);
    return jct__errf(err, errlen, rc, "%s: %s", path, jct_strerror(rc));
  }
  char inner[256];
  rc = jct_inspect_trace(ins, t, inner, sizeof inner);
  jct_trace_close(t);
  if (rc == JCT_ENOMEM) {
    jct_inspect_free(ins);
    return jct__errf(err, errlen, rc, "%s: %s", path, inner);
  }
  if (rc == JCT_ETRUNC) jct__errf(err, errlen, rc, "%s", inner);
  *out = ins;
  return rc; /* 0, or JCT_ETRUNC */
}
