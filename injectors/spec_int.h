/* The spec's readers that the kinds share beyond include/jctlab/injector.h
 * (internal to injectors/, spec.c): for values that hold more than one
 * item (delay's nak=K@TIME,..., the pkt=M:K,... targets of drop, stall and
 * timeout), and for the kinds' own checks of words, with errors that name
 * the word ("stall pkt=1 for=5ms: pkt=1: is MESSAGE:PACKET ..."). */
#ifndef JCT_INJ_SPEC_INT_H
#define JCT_INJ_SPEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/injector.h"

/* The len bytes at s as a time, read as jct_spec_time_ns reads a value
 * (500ns, 10us, 5ms, 1s; ns when bare; .5ms), into *out_ns, rounded to
 * the nearest ns. 0; -1 when they are not a time; -2 when it is UINT64_MAX
 * ns or more. *out_ns is untouched on error. */
int jct__spec_time_text_ns(const char *s, size_t len, uint64_t *out_ns);

/* The index of key's word in spec, -1 when absent; without taking it. */
int jct__spec_find(const jct_spec_t *spec, const char *key);

/* "<spec>: key=value: detail" for word i (-1: "<spec>: detail");
 * returns JCT_EINVAL. */
int jct__spec_word_err(const jct_spec_t *spec, int i, char *err, size_t errlen, const char *detail);

/* key=yes|no into *out (absent: false). 0, or JCT_EINVAL naming the word. */
int jct__spec_yes_no(jct_spec_t *spec, const char *key, bool *out, char *err, size_t errlen);

/* MESSAGE:PACKET (decimal, each below 2^32) at *p, moving *p past it;
 * false (*p untouched) when *p holds none. */
bool jct__spec_msg_pkt(const char **p, uint32_t *msg, uint32_t *pkt);

/* key=M:K[,M:K...] (stall's and timeout's pkt=): up to max targets into
 * msg[] and pkt[], *n of them. 0, or JCT_EINVAL naming the word. */
int jct__spec_pkts(const jct_spec_t *spec, const char *key, uint32_t max, uint32_t *msg,
                   uint32_t *pkt, uint32_t *n, char *err, size_t errlen);

#endif
