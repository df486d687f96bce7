/* Growable arrays (grow.h): amortised O(1) appends by doubling. */
#include <stdlib.h>

#include "grow.h"
#include "jctlab/error.h"

int jct__grow(void **arr, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 0;
  size_t ncap = *cap ? 2 * *cap : 16;
  void *p = realloc(*arr, ncap * size);
  if (!p) return JCT_ENOMEM;
  *arr = p;
  *cap = ncap;
  return 0;
}
