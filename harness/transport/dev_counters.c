/* An RDMA device's counters by name (include/jctlab/dev_counters.h): look
 * one up, add to one. A linear search: a device has a few dozen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/dev_counters.h"
#include "jctlab/error.h"

uint64_t jct_dev_counters_get(const jct_dev_counters_t *h, const char *name) {
  for (uint32_t i = 0; i < h->n; i++)
    if (strcmp(h->c[i].name, name) == 0) return h->c[i].value;
  return 0;
}

void jct_dev_counters_add(jct_dev_counters_t *h, const char *name, uint64_t value) {
  for (uint32_t i = 0; i < h->n; i++)
    if (strcmp(h->c[i].name, name) == 0) {
      h->c[i].value += value;
      return;
    }
  if (h->n == JCT_DEV_COUNTERS_MAX) return;
  snprintf(h->c[h->n].name, sizeof h->c[h->n].name, "%s", name);
  h->c[h->n++].value = value;
}

int jct_dev_counters_sum(jct_dev_counters_t **sum, const jct_dev_counters_t *x, uint32_t n) {
  if (!x || !n) return 0;
  if (!*sum && !(*sum = calloc(n, sizeof **sum))) return JCT_ENOMEM;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t i = 0; i < x[r].n; i++)
      jct_dev_counters_add(&(*sum)[r], x[r].c[i].name, x[r].c[i].value);
  return 0;
}
