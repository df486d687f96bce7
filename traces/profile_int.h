/* The profile of a captured system (include/jctlab/profile.h) as the
 * inspector gathers it (internal to traces/): profile.c keeps the samples,
 * fed by inspect.c as it classifies each packet; profile_stats.c turns
 * samples into figures.
 *
 * Memory grows with links, distinct sample values and losses, never with
 * the number of packets: packet-level samples (payloads, spacings, PSNs per
 * ACK) go into histograms, per-loss and per-timeout ones into arrays. Per
 * flow, the inspector keeps what the profile needs in its own records.
 */
#ifndef JCT_PROFILE_INT_H
#define JCT_PROFILE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "holes.h"
#include "jctlab/decode.h"
#include "jctlab/profile.h"

/* ---- samples into figures (profile_stats.c) ---- */

/* Distinct values and how often each was seen, sorted by value; exact up to
 * JCT__VHIST_MAX distinct values, beyond which a new value is counted with
 * its nearest neighbour. */
#define JCT__VHIST_MAX 4096
typedef struct {
  uint64_t *v, *c;
  size_t n, cap;
  uint64_t total;
} jct__vhist_t;

int jct__vhist_add(jct__vhist_t *h, uint64_t v);                /* JCT_ENOMEM: not counted */
void jct__vhist_figure(const jct__vhist_t *h, jct_figure_t *f); /* value: the median */
void jct__vhist_free(jct__vhist_t *h);

/* Every sample, for figures over losses and timeouts. */
typedef struct {
  uint64_t *v;
  size_t n, cap;
} jct__samples_t;

int jct__samples_add(jct__samples_t *s, uint64_t v); /* JCT_ENOMEM: not kept */
/* value: the median. Errors: JCT_ENOMEM (f left unset). */
int jct__samples_figure(const jct__samples_t *s, jct_figure_t *f);
void jct__samples_free(jct__samples_t *s);

/* Back-to-back rates: occupied bins of 1/8 octave of bit/s (sorted), each
 * with its count and the bytes and time of its samples. */
#define JCT__RATE_BINS_PER_OCTAVE 8
typedef struct {
  uint64_t n, bytes, ns;
  uint32_t bin;
} jct__rbin_t;

typedef struct {
  jct__rbin_t *b;
  size_t n, cap;
  uint64_t total, min_bps, max_bps;
} jct__ratehist_t;

int jct__ratehist_add(jct__ratehist_t *h, uint64_t bytes, uint64_t dt_ns); /* JCT_ENOMEM */
/* value: the mode (the densest three adjacent bins, their bytes over their
 * time; *mode_n samples in them); median, p10, p90 to the bin. */
void jct__ratehist_figure(const jct__ratehist_t *h, jct_figure_t *f, uint64_t *mode_n);
/* Every sample's bytes over every sample's time, bit/s (0: none). */
uint64_t jct__ratehist_mean_bps(const jct__ratehist_t *h);
/* The samples' bytes and time (the mean's). */
void jct__ratehist_sums(const jct__ratehist_t *h, uint64_t *bytes, uint64_t *ns);
void jct__ratehist_free(jct__ratehist_t *h);

/* ---- the collector (profile.c) ---- */

/* A link (the inspector's source -> destination address pair) that
 * carries messages of more than one packet: its last data packet and its
 * spacing samples. */
typedef struct {
  jct_addr_t src, dst;
  uint64_t prev_ns;
  jct__ratehist_t h;
} jct__prof_link_t;

typedef struct {
  uint32_t *link1; /* by link number: 1 + its record in links; 0: none */
  size_t nlink1, caplink1;
  jct__prof_link_t *links; /* first-seen order */
  size_t nlinks, caplinks;
  jct__vhist_t mtu, per_ack;
  jct__samples_t hole_to_nak, nak_to_resend, recovery, go_back, after_nak, timeout_idle;
  bool oom; /* a sample could not be kept */
} jct__prof_t;

/* A data packet on link (the number the inspector gave its address pair)
 * at ts_ns, wire_len bytes as captured; continues: it is the next PSN of
 * its flow in the middle or at the end of a message. */
void jct__prof_data(jct__prof_t *p, uint32_t link, const jct_packet_t *pkt, uint64_t ts_ns,
                    uint32_t wire_len, bool continues);

/* An ACK that acknowledged psns PSNs no ACK or NAK before it had. */
void jct__prof_acked(jct__prof_t *p, uint64_t psns);

/* A timeout episode, after the flow had been idle for idle_ns. */
void jct__prof_timeout(jct__prof_t *p, uint64_t idle_ns);

/* The retransmission of hole h seen at ts_ns, in a go-back started by a
 * timeout (by_timeout) or a NAK when the last PSN the requester had sent
 * was reach (the flow's highest, or where the go-back it cut short had
 * got to: inspect.h, rewind). */
void jct__prof_resent(jct__prof_t *p, const jct__hole_t *h, uint64_t ts_ns, uint32_t reach,
                      bool by_timeout);

/* The figures. Errors: JCT_ENOMEM (also when a sample could not be kept:
 * no figure is given short of some). */
int jct__prof_result(const jct__prof_t *p, jct_profile_t **out);

void jct__prof_free(jct__prof_t *p);

#endif
