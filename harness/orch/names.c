/* The words for a run's options (names.h): one table a concept, read both
 * ways where a word is parsed. */
#include "names.h"

#include <string.h>

#include "jctlab/error.h"

static const char *const transports[] = {
    [JCT_TRANSPORT_UROCE] = "uroce",
    [JCT_TRANSPORT_VERBS] = "verbs",
};

const char *jct__transport_name(jct_transport_t t) {
  return (size_t)t < sizeof transports / sizeof *transports ? transports[t] : "uroce";
}

int jct__transport_parse(const char *word, jct_transport_t *out) {
  for (size_t i = 0; i < sizeof transports / sizeof *transports; i++)
    if (!strcmp(word, transports[i])) {
      *out = (jct_transport_t)i;
      return 0;
    }
  return JCT_EINVAL;
}

const char *jct__watchdog_name(jct__watchdog_t w) {
  return w == JCT_WATCHDOG_DROP ? "drop" : w == JCT_WATCHDOG_FORWARD ? "forward" : "off";
}

jct__watchdog_t jct__watchdog_of(const jct_run_opts_t *o) {
  return !o->pfc_watchdog      ? JCT_WATCHDOG_OFF
         : o->watchdog_forward ? JCT_WATCHDOG_FORWARD
                               : JCT_WATCHDOG_DROP;
}

void jct__watchdog_set(jct_run_opts_t *o, jct__watchdog_t w) {
  o->pfc_watchdog = w != JCT_WATCHDOG_OFF;
  o->watchdog_forward = w == JCT_WATCHDOG_FORWARD;
}
