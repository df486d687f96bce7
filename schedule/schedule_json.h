/* A schedule as a jansson object (internal): the shape jct_schedule_save
 * writes (include/jctlab/schedule.h), for messages that carry a schedule
 * (the agents' setup, harness/lab/agents.h). */
#ifndef JCT_SCHEDULE_JSON_H
#define JCT_SCHEDULE_JSON_H

#include <jansson.h>

#include "jctlab/schedule.h"

/* A new reference, or NULL when out of memory. */
json_t *jct__schedule_json(const jct_schedule_t *s);

#endif
