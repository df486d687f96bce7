/* A profile (include/jctlab/profile.h) as JSON, with jansson (internal):
 * the "profile" object of a schedule and of `jctlab inspect --json`. */
#ifndef JCT_PROFILE_JSON_H
#define JCT_PROFILE_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/profile.h"

/* A new reference, or NULL when out of memory. Every key is present; a
 * figure that is not set has "value": null, and its statistics are null
 * when it has no samples. */
json_t *jct__profile_json(const jct_profile_t *p);

/* A figure's spread (JCT_FIGURE_BINS counts, profile.h) as its JSON: the
 * bins that hold samples, in order, each {"from", "to" (null for the
 * last), "n"}; [] for none. A new reference, or NULL when out of memory. */
json_t *jct__spread_json(const uint64_t *spread);

/* Read the "profile" object v of a schedule of nranks ranks (ranks named
 * in it must exist). Keys left out or null are figures not set; unknown
 * keys are ignored. On success *out is a new profile (jct_profile_free).
 * Errors: JCT_EINVAL (err names the key and what is wrong with it),
 * JCT_ENOMEM. */
int jct__profile_from_json(json_t *v, uint32_t nranks, jct_profile_t **out, char *err,
                           size_t errlen);

#endif
