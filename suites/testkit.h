/* What the integration suites share (test code only): running a program
 * with its output captured and a time limit, and reading JSON by path. */
#ifndef JCT_TESTKIT_H
#define JCT_TESTKIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
  bool as_nobody;         /* drop to uid/gid 65534 before exec */
  const char *tmpdir;     /* TMPDIR for the child; NULL: inherited */
  const char *stdin_path; /* the child's standard input; NULL: /dev/null, so that
                             no child reads whatever runs the tests (ctest, a CI pipe) */
} spawn_opts_t;

typedef struct {
  pid_t pid;
  char out[256], err[256]; /* files holding its stdout and stderr */
} child_t;

typedef struct {
  int status;     /* exit status, or -1 when it did not exit */
  int signal;     /* the signal that killed it, or 0 */
  long maxrss_kb; /* its peak resident memory (getrusage's ru_maxrss), when finish() waited */
  char *out, *err;
  size_t out_len;
} result_t;

#define TK_EXIT_SETUID_FAILED 126 /* the child could not become nobody */

double now_s(void);
void sleep_ms(long ms);
/* A whole file as a string; *len (may be NULL) its length. */
char *slurp(const char *path, size_t *len);

/* Start argv (argv[0] a path, or a name found on PATH) with stdout and
 * stderr to temporary files and stdin from o->stdin_path (/dev/null). The
 * child dies with the test process (PR_SET_PDEATHSIG), so a failed test
 * leaves nothing running. */
child_t spawn(char *const argv[], const spawn_opts_t *o);
/* Read back a child that ended with wait status ws; its files are removed. */
result_t collect(child_t *c, int ws);
/* Wait at most limit_s seconds; past that, kill it and fail the test. */
result_t finish(child_t *c, double limit_s);
/* spawn, then finish. o may be NULL. */
result_t run_cmd(char *const argv[], const spawn_opts_t *o, double limit_s);
/* run_cmd, run again (up to 3 times in all) while it exits 3 because the
 * event loop fell behind (stderr says "lateness"): on a loaded 2-core
 * machine another process can take the core for milliseconds, and jctlab
 * rightly refuses to report such a run. The retries are dilated x4, then
 * x16, and limit_s with them. */
result_t run_jctlab(char *const argv[], const spawn_opts_t *o, double limit_s);
void result_free(result_t *r);
/* Bad input as jctlab answers it: run argv (run_jctlab, 20 s at most) and
 * require exit 2, nothing on stdout and one line on stderr containing
 * word1 and word2 (when not NULL). */
void expect_bad_input(char *const argv[], const char *word1, const char *word2);
size_t count_lines(const char *s);

/* A member by dotted path ("transport.naks", "injectors.0.dropped"); fails
 * the test when it is missing or of the wrong type. */
json_t *jget(json_t *doc, const char *path);
double jnum(json_t *doc, const char *path);
json_int_t jint(json_t *doc, const char *path);
bool jbool(json_t *doc, const char *path);
/* The link named ("leaf1:spine0") in a `jctlab run` document's
 * fabric_links.links; fails the test when there is none. */
json_t *jlink(json_t *doc, const char *name);
json_t *parse_json(const char *text, const char *what);

/* The built jctlab (JCT_BINARY) with args (NULL-ended, at most 36) and
 * --json FILE, within 120 s: its exit status, its stderr (malloc'd) when
 * err_text is not NULL, and its document (NULL when it wrote none). */
json_t *jctlab_json(const char *const args[], int *status, char **err_text);
/* The same, run again (up to 3 times in all) while the run was invalid
 * because the event loop fell behind (another process had the core):
 * dilated x4, then x16, as run_jctlab's retries, with the time limit F
 * times longer; a case that gives its own --tdf, or a scenario file, is
 * run again as it is. err_text must not be NULL: it is set (malloc'd). */
json_t *jctlab_json_retry(const char *const args[], int *status, char **err_text);
/* The same for a case whose figures do not depend on the dilation factor
 * (uroce's, DESIGN.md decision 8; suite dilation checks it), which may give
 * its own --tdf G: its retries run at --tdf 4G, then 16G (F x4 -> x16 ->
 * x64 for a case given --tdf 4), 4 and 16 times slower, rather than as it
 * was. Not for a case whose checks name its factor, nor for the soft-RoCE
 * lab's (the VMs' timeout exponent grows with F; a lab run's limit is not
 * this one's): check_lab_replay's run_retrying escalates from the factor
 * a lab run reports, with tk_tdf_argv below. */
json_t *jctlab_json_retry_dilated(const char *const args[], int *status, char **err_text);
/* argv (NULL-terminated, at most 61 entries) run at time dilation tdf:
 * its --tdf's value replaced by tdf, or `--tdf tdf` added at its end when
 * it gives none, into slow (64 entries; value holds the number). False
 * when tdf is not a factor jctlab takes (1 to 2^20) or argv is longer. */
bool tk_tdf_argv(char *const argv[], double tdf, char **slow, char value[32]);
/* The two above with binary for JCT_BINARY (escalate: the second), so
 * that a test of the retry can give a stand-in. */
json_t *tk_json_retry(const char *binary, const char *const args[], int *status, char **err_text,
                      bool escalate);

#endif
