/* Growable arrays (internal to jctlab): an array, its element count n and
 * its capacity cap, grown by doubling when one more element is needed. */
#ifndef JCT_GROW_H
#define JCT_GROW_H

#include <stddef.h>

/* Make room in *arr (capacity *cap elements of size bytes) for element n,
 * the one after the last: when n < *cap, nothing; else the capacity
 * doubles (16 when it was 0) and *arr and *cap are updated. Returns 0, or
 * JCT_ENOMEM leaving *arr and *cap as they were. */
int jct__grow(void **arr, size_t *cap, size_t n, size_t size);

#endif
