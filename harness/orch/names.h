/* The words for a run's options (internal to the harness): the transport
 * (jct_transport_t, include/jctlab/run.h) and the PFC watchdog's three
 * states, which jct_run_opts_t holds as two flags (pfc_watchdog and
 * watchdog_forward). One spelling for the command line, the scenario files
 * and the result document: "uroce", "verbs"; "off", "drop", "forward". */
#ifndef JCT_NAMES_H
#define JCT_NAMES_H

#include "jctlab/run.h"

/* The switch's PFC watchdog: off; on, dropping the frames of a queue in a
 * pause storm; or on, forwarding them regardless of the pause (switch.h). */
typedef enum { JCT_WATCHDOG_OFF, JCT_WATCHDOG_DROP, JCT_WATCHDOG_FORWARD } jct__watchdog_t;

/* "uroce", "verbs". */
const char *jct__transport_name(jct_transport_t t);

/* Where o's ranks run, for the reports' headers: "uroce", "verbs (rxe
 * lab)" (its VMs, jct_run_in_lab), "verbs (agents)" (hosts elsewhere). */
const char *jct__transport_words(const jct_run_opts_t *o);

/* The transport a word names, exactly "uroce" or "verbs". Returns 0, or
 * JCT_EINVAL (*out unchanged). */
int jct__transport_parse(const char *word, jct_transport_t *out);

/* "none", "dcqcn" (auto: "auto"). */
const char *jct__cc_name(jct_cc_t cc);
/* Exactly "none" or "dcqcn". Returns 0, or JCT_EINVAL (*out unchanged). */
int jct__cc_parse(const char *word, jct_cc_t *out);

/* "off", "drop", "forward". */
const char *jct__watchdog_name(jct__watchdog_t w);

/* The watchdog o's two flags say, and the flags for w. */
jct__watchdog_t jct__watchdog_of(const jct_run_opts_t *o);
void jct__watchdog_set(jct_run_opts_t *o, jct__watchdog_t w);

#endif
