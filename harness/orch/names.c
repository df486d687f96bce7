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

const char *jct__transport_words(const jct_run_opts_t *o) {
  return o->transport != JCT_TRANSPORT_VERBS ? "uroce"
         : jct_run_in_lab(o)                 ? "verbs (rxe lab)"
                                             : "verbs (agents)";
}

int jct__transport_parse(const char *word, jct_transport_t *out) {
  for (size_t i = 0; i < sizeof transports / sizeof *transports; i++)
    if (!strcmp(word, transports[i])) {
      *out = (jct_transport_t)i;
      return 0;
    }
  return JCT_EINVAL;
}

static const char *const ccs[] = {
    [JCT_CC_AUTO] = "auto",
    [JCT_CC_NONE] = "none",
    [JCT_CC_DCQCN] = "dcqcn",
};

const char *jct__cc_name(jct_cc_t cc) {
  return (size_t)cc < sizeof ccs / sizeof *ccs ? ccs[cc] : "none";
}

int jct__cc_parse(const char *word, jct_cc_t *out) {
  for (size_t i = JCT_CC_NONE; i < sizeof ccs / sizeof *ccs; i++)
    if (!strcmp(word, ccs[i])) {
      *out = (jct_cc_t)i;
      return 0;
    }
  return JCT_EINVAL;
}

jct_cc_t jct_run_cc(const jct_run_opts_t *o) {
  if (o->cc != JCT_CC_AUTO) return o->cc;
  return o->ecn && o->transport == JCT_TRANSPORT_UROCE ? JCT_CC_DCQCN : JCT_CC_NONE;
}

double jct_run_cc_dilation(const jct_run_opts_t *o) {
  if (o->cc_dilation > 0) return o->cc_dilation;
  double f = o->rate_bps ? (double)jct_dcqcn_profile_rate_bps(o->cc_profile) / (double)o->rate_bps : 1;
  return f > 1 ? f : 1;
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
