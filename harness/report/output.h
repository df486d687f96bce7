/* Where a result document goes (internal): the terminal table on standard
 * output, or the JSON ('-': standard output instead of the table; a file:
 * besides it), a JUnit file and a report directory. Shared by `jctlab
 * replay` and `jctlab run SCENARIO`. */
#ifndef JCT_OUTPUT_H
#define JCT_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>

/* Returns 0, or 1 when something could not be written (said on stderr,
 * prefixed "jctlab PROG: "). json, junit, report may be NULL. all_qps: the
 * table's per-QP rows for every connection (--per-qp), not only up to
 * JCT__PER_QP_AUTO_MAX of them (report.h). */
int jct__output_result(const json_t *doc, const char *json, const char *junit, const char *report,
                       const char *prog, bool all_qps);

/* Write doc as indented JSON, keys in their order, to path ('-':
 * standard output, with a final newline). Returns 0, or 1 when it could
 * not be written (said on stderr: "jctlab PROG: PATH: cannot write"). */
int jct__json_write(const json_t *doc, const char *path, const char *prog);

#endif
