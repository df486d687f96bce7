/* The spec's readers that the kinds share beyond include/jctlab/injector.h
 * (internal to injectors/, spec.c): for values that hold more than one
 * item (delay's nak=K@TIME,..., stall's for=TIME,...), and for the kinds'
 * own checks of words they take themselves. */
#ifndef JCT_INJ_SPEC_INT_H
#define JCT_INJ_SPEC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "jctlab/injector.h"

/* The len bytes at s as a time, read as jct_spec_time_ns reads a value
 * (500ns, 10us, 5ms, 1s; ns when bare; .5ms), into *out_ns, rounded to
 * the nearest ns. 0; -1 when they are not a time; -2 when it is UINT64_MAX
 * ns or more. *out_ns is untouched on error. */
int jct__spec_time_text_ns(const char *s, size_t len, uint64_t *out_ns);

#endif
