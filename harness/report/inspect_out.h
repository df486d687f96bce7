/* The outputs of `jctlab inspect` (internal to the harness): the terminal
 * summary (inspect_text.c), the JSON document (inspect_json.c), the
 * profile of the captured system in both (inspect_profile.c) and the
 * timeline of events as they are found (timeline.c). */
#ifndef JCT_INSPECT_OUT_H
#define JCT_INSPECT_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jctlab/inspect.h"

/* What the reports say about the capture itself. */
typedef struct {
  const char *file;   /* the name the user gave */
  const char *format; /* "pcap" or "pcapng" */
  int linktype;
  bool nanosecond;              /* the file's timestamps were nanosecond */
  const char *truncated;        /* NULL, or the message naming the record the file ends in */
  const char *filter;           /* NULL, or the libpcap expression that chose the frames analysed */
  uint64_t frames_read;         /* records read from the file, matched by the filter or not */
  uint64_t frames_filtered_out; /* of those, the ones the filter did not match */
} jct__capture_info_t;

/* The summary a person reads. top_n: how many of the worst flows to list.
 * Returns 0, or JCT_EIO when out could not be written. */
int jct__inspect_text(FILE *out, const jct_inspect_t *ins, const jct__capture_info_t *cap,
                      size_t top_n);

/* The JSON document {"jctlab_inspect": 1, ...} (shape in the README),
 * indented, ending with a newline, written flow by flow as it is built
 * (memory does not grow with the number of flows). Returns 0, JCT_ENOMEM
 * or JCT_EIO (what was written before the error stays written). */
int jct__inspect_json(FILE *out, const jct_inspect_t *ins, const jct__capture_info_t *cap);

/* The profile section of the summary (p from jct_inspect_profile()). */
void jct__inspect_profile_text(FILE *out, const jct_profile_t *p);

/* The profile as the JSON document's "profile" object (every key present,
 * null where there is no sample); NULL when out of memory. */
json_t *jct__inspect_profile_json(const jct_inspect_t *ins);

/* Timeline of events, one line each, streamed as jct_inspect_add() finds
 * them. Pass jct__timeline_event as opts.on_event and the jct__timeline_t
 * as opts.arg, and set ins as soon as the analysis exists. Times are from
 * the capture's first frame. */
typedef enum { JCT__TIMELINE_TEXT, JCT__TIMELINE_JSON } jct__timeline_format_t;

typedef struct {
  FILE *out;
  jct__timeline_format_t format;
  const jct_inspect_t *ins;
} jct__timeline_t;

void jct__timeline_event(const jct_event_t *ev, void *arg);

#endif
