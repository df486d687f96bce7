/* What the integration suites share (testkit.h). */
#include "testkit.h"
#include "common/rate.h"

#include <check.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "craft.h"
#include "jctlab/clock.h"

#define NOBODY_ID 65534

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      cap *= 2;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
  }
  fclose(f);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

child_t spawn(char *const argv[], const spawn_opts_t *o) {
  child_t c;
  craft_tmpname(c.out, sizeof c.out, ".out");
  craft_tmpname(c.err, sizeof c.err, ".err");
  pid_t parent = getpid();
  fflush(stdout);
  fflush(stderr);
  c.pid = fork();
  ck_assert_int_ge(c.pid, 0);
  if (c.pid == 0) {
    const char *in = o && o->stdin_path ? o->stdin_path : "/dev/null";
    if (!freopen(in, "r", stdin) || !freopen(c.out, "w", stdout) || !freopen(c.err, "w", stderr))
      _exit(127);
    if (o && o->as_nobody && (setgroups(0, NULL) || setgid(NOBODY_ID) || setuid(NOBODY_ID)))
      _exit(TK_EXIT_SETUID_FAILED);
    /* After setuid, which clears the death signal. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(127);
    if (o && o->tmpdir && setenv("TMPDIR", o->tmpdir, 1)) _exit(127);
    execvp(argv[0], argv);
    _exit(127);
  }
  return c;
}

result_t collect(child_t *c, int ws) {
  result_t r = {.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
                .signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0};
  r.out = slurp(c->out, &r.out_len);
  r.err = slurp(c->err, NULL);
  unlink(c->out);
  unlink(c->err);
  return r;
}

result_t finish(child_t *c, double limit_s) {
  double t0 = now_s();
  int ws;
  pid_t got;
  struct rusage ru = {0};
  while ((got = wait4(c->pid, &ws, WNOHANG, &ru)) == 0 && now_s() - t0 < limit_s)
    sleep_ms(5);
  if (got == 0) {
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &ws, 0);
    unlink(c->out);
    unlink(c->err);
    ck_abort_msg("%s did not finish in %.0f s", "the command", limit_s);
  }
  ck_assert_int_eq(got, c->pid);
  result_t r = collect(c, ws);
  r.maxrss_kb = ru.ru_maxrss;
  return r;
}

result_t run_cmd(char *const argv[], const spawn_opts_t *o, double limit_s) {
  child_t c = spawn(argv, o);
  return finish(&c, limit_s);
}

/* Whether argv is a run or replay given on the command line (not a
 * scenario file, whose options are its own) that does not choose its own
 * dilation: one a --rate-ceiling may be added to. */
static bool takes_ceiling(char *const argv[]) {
  if (!argv[1] || (strcmp(argv[1], "run") && strcmp(argv[1], "replay"))) return false;
  size_t n = 0;
  for (; argv[n]; n++) {
    size_t len = strlen(argv[n]);
    if (!strcmp(argv[n], "--tdf") || !strcmp(argv[n], "--rate-ceiling")) return false;
    if ((len > 5 && !strcmp(argv[n] + len - 5, ".yaml")) ||
        (len > 4 && !strcmp(argv[n] + len - 4, ".yml")))
      return false;
  }
  return n + 3 <= 64;
}

/* argv slowed for a retry (takes_ceiling) by a factor F (4, then 16): a
 * --rate-ceiling of 100/F Mbit/s, or below 100 Mbit/s the run's rate / F
 * (a 5 Mbit/s run slowed to 1.25 at F 4: 25 Mbit/s would not dilate it at
 * all), in slow (64 entries; ceiling holds the value). A ceiling below
 * 1 Mbit/s is none jctlab takes (--rate-ceiling's floor): such a run is
 * slowed by --tdf F instead. False when argv chooses its own dilation. */
static bool slowed(char *const argv[], unsigned factor, char **slow, char ceiling[32]) {
  if (!takes_ceiling(argv)) return false;
  snprintf(ceiling, 32, "%u", 100000000u / factor);
  const char *how = "--rate-ceiling";
  size_t n = 0;
  for (; argv[n]; n++) {
    slow[n] = argv[n];
    uint64_t bps;
    if (!strcmp(argv[n], "--rate") && argv[n + 1] && !jct__parse_rate_bps(argv[n + 1], &bps) &&
        bps < 100000000u) {
      snprintf(ceiling, 32, "%llu", (unsigned long long)(bps / factor));
      if (bps / factor < 1000000u) how = "--tdf", snprintf(ceiling, 32, "%u", factor);
    }
  }
  slow[n++] = (char *)how;
  slow[n++] = ceiling;
  slow[n] = NULL;
  return true;
}

bool tk_tdf_argv(char *const argv[], double tdf, char **slow, char value[32]) {
  if (!(tdf >= 1 && tdf <= JCT_CLOCK_MAX_TDF)) return false;
  snprintf(value, 32, "%.17g", tdf);
  size_t n = 0;
  bool given = false;
  for (; n < 61 && argv[n]; n++) {
    slow[n] = argv[n];
    if (!strcmp(argv[n], "--tdf") && argv[n + 1]) {
      slow[++n] = value;
      given = true;
    }
  }
  if (argv[n]) return false; /* longer than slow holds */
  if (!given) slow[n++] = "--tdf", slow[n++] = value;
  slow[n] = NULL;
  return true;
}

/* argv slowed for a retry by a factor F (4, then 16) when it gives its own
 * --tdf G: the same argv with --tdf G * F, in slow (64 entries; tdf holds
 * the value). False when argv gives no --tdf, or G * F would pass
 * jctlab's largest factor (JCT_CLOCK_MAX_TDF, 2^20). */
static bool tdf_slowed(char *const argv[], unsigned factor, char **slow, char tdf[32]) {
  for (size_t n = 0; argv[n]; n++)
    if (!strcmp(argv[n], "--tdf") && argv[n + 1]) {
      char *end;
      double g = strtod(argv[n + 1], &end);
      return !*end && g >= 1 && tk_tdf_argv(argv, g * factor, slow, tdf);
    }
  return false;
}

/* The argv of a retry slowed by factor: slowed()'s, or with escalate
 * tdf_slowed()'s; argv itself when it cannot be slowed. */
static char *const *retry_argv(char *const argv[], unsigned factor, bool escalate, char **slow,
                               char value[32]) {
  if (slowed(argv, factor, slow, value)) return slow;
  if (escalate && tdf_slowed(argv, factor, slow, value)) return slow;
  return argv;
}

/* One line on stderr: argv is run again, as it is or as again (slowed by
 * factor: the option it was given). */
static void say_retry(char *const argv[], char *const again[], unsigned factor) {
  fprintf(stderr, "testkit: %s %s: loop-bound on a busy machine, run again", argv[0],
          argv[1] ? argv[1] : "");
  size_t n = 0;
  while (argv[n] && again[n] && !strcmp(argv[n], again[n]))
    n++;
  /* slowed() adds an option at the end, tdf_slowed() changes a value */
  if (again != argv && argv[n] && n > 0)
    fprintf(stderr, " %u times slower (%s %s)", factor, again[n - 1], again[n]);
  else if (again != argv && again[n] && again[n + 1])
    fprintf(stderr, " %u times slower (%s %s)", factor, again[n], again[n + 1]);
  fputc('\n', stderr);
}

result_t run_jctlab(char *const argv[], const spawn_opts_t *o, double limit_s) {
  result_t r = run_cmd(argv, o, limit_s);
  /* A loaded machine (CI under ASan, two suites at once) can leave the
   * loop behind a 100 Mbit/s link. The retries run the same job in slow
   * motion: time dilation (DESIGN.md decision 8) below a 25 Mbit/s
   * ceiling (F = 4 at 100 Mbit/s), then 16 times slower (a machine busy
   * for a while: CI saw two such runs fail dilated x4), which changes no emulated figure (suite
   * dilation tests that invariance); a run that chooses its own dilation
   * is run again as it is. Dilated F times, a run takes about F times its
   * wall time: so does its limit (CI saw a x16 retry of a 10 Mbit/s ring
   * cut at the 20 s meant for it undilated). */
  for (int attempt = 1; attempt < 3 && r.status == 3 && r.err && strstr(r.err, "lateness");
       attempt++) {
    char *slow[64], ceiling[32];
    unsigned f = attempt == 1 ? 4 : 16; /* slower each time: a machine busy for a while */
    char *const *again = retry_argv(argv, f, false, slow, ceiling);
    say_retry(argv, again, f);
    result_free(&r);
    sleep_ms(200);
    r = run_cmd(again, o, again != argv ? limit_s * f : limit_s);
  }
  return r;
}

void result_free(result_t *r) {
  free(r->out);
  free(r->err);
}

void expect_bad_input(char *const argv[], const char *word1, const char *word2) {
  result_t r = run_jctlab(argv, NULL, 20);
  ck_assert_msg(r.status == 2, "exit %d (stderr: %s)", r.status, r.err);
  ck_assert_str_eq(r.out, "");
  ck_assert_msg(count_lines(r.err) == 1, "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, word1) != NULL, "stderr: %s (wanted %s)", r.err, word1);
  if (word2) ck_assert_msg(strstr(r.err, word2) != NULL, "stderr: %s (wanted %s)", r.err, word2);
  result_free(&r);
}

size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

json_t *jget(json_t *doc, const char *path) {
  char key[128];
  json_t *v = doc;
  for (const char *p = path; v && *p;) {
    size_t n = strcspn(p, ".");
    ck_assert_uint_lt(n, sizeof key);
    memcpy(key, p, n);
    key[n] = '\0';
    v = json_is_array(v) ? json_array_get(v, strtoul(key, NULL, 10)) : json_object_get(v, key);
    p += n + (p[n] == '.');
  }
  ck_assert_msg(v != NULL, "JSON has no %s", path);
  return v;
}

double jnum(json_t *doc, const char *path) {
  json_t *v = jget(doc, path);
  ck_assert_msg(json_is_number(v), "%s is not a number", path);
  return json_number_value(v);
}

json_int_t jint(json_t *doc, const char *path) {
  json_t *v = jget(doc, path);
  ck_assert_msg(json_is_integer(v), "%s is not an integer", path);
  return json_integer_value(v);
}

bool jbool(json_t *doc, const char *path) {
  json_t *v = jget(doc, path);
  ck_assert_msg(json_is_boolean(v), "%s is not a boolean", path);
  return json_is_true(v);
}

json_t *parse_json(const char *text, const char *what) {
  json_error_t je;
  json_t *doc = json_loads(text, 0, &je);
  ck_assert_msg(doc != NULL, "%s: JSON: %s at line %d", what, je.text, je.line);
  return doc;
}

#define JCTLAB_LIMIT_S 120.0
#define JCTLAB_MAX_ARGS 40

/* jctlab ARGS... --json FILE within limit_s: its exit status and document
 * (NULL when it wrote none). */
static json_t *json_within(const char *binary, const char *const args[], int *status,
                           char **err_text, double limit_s) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[JCTLAB_MAX_ARGS];
  size_t n = 0;
  argv[n++] = (char *)binary;
  for (size_t i = 0; args[i]; i++) {
    ck_assert_uint_lt(n, JCTLAB_MAX_ARGS - 3);
    argv[n++] = (char *)args[i];
  }
  argv[n++] = "--json";
  argv[n++] = js;
  argv[n] = NULL;
  result_t r = run_cmd(argv, NULL, limit_s);
  *status = r.status;
  if (err_text) *err_text = strdup(r.err ? r.err : "");
  json_error_t je;
  json_t *doc = access(js, F_OK) == 0 ? json_load_file(js, 0, &je) : NULL;
  unlink(js);
  result_free(&r);
  return doc;
}

json_t *jctlab_json(const char *const args[], int *status, char **err_text) {
  return json_within(JCT_BINARY, args, status, err_text, JCTLAB_LIMIT_S);
}

/* Run again (up to 3 times in all) while the replay was invalid because
 * the event loop fell behind: on a loaded 2-core machine another process
 * can take the core for milliseconds, and jctlab rightly refuses to
 * report such a run. Anything else is the test's to judge. The retries in
 * slow motion, as run_jctlab's (no emulated figure changes), with the
 * limit F times longer; with escalate, a case that gives its own --tdf G
 * too, at 4G then 16G: CI saw a 10 Mbit/s incast of suite dcqcn given
 * --tdf 4 loop-bound in all three of its attempts when each was run again
 * as it was (p99 lateness 4.2 ms against a 3.3 ms packet). */
json_t *tk_json_retry(const char *binary, const char *const args[], int *status, char **err_text,
                      bool escalate) {
  json_t *doc = NULL;
  char *full[64], *slow[64], value[32];
  size_t n = 0;
  full[n++] = (char *)binary;
  for (size_t i = 0; args[i] && n < 60; i++)
    full[n++] = (char *)args[i];
  full[n] = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    if (doc) json_decref(doc);
    unsigned f = attempt == 2 ? 16 : 4;
    char *const *again = attempt ? retry_argv(full, f, escalate, slow, value) : full;
    if (attempt) {
      free(*err_text);
      say_retry(full, again, f);
      sleep_ms(200);
    }
    doc = json_within(binary, (const char *const *)again + 1, status, err_text,
                      again != full ? JCTLAB_LIMIT_S * f : JCTLAB_LIMIT_S);
    if (*status != 3 || !strstr(*err_text, "lateness")) break;
  }
  return doc;
}

json_t *jctlab_json_retry(const char *const args[], int *status, char **err_text) {
  return tk_json_retry(JCT_BINARY, args, status, err_text, false);
}

json_t *jctlab_json_retry_dilated(const char *const args[], int *status, char **err_text) {
  return tk_json_retry(JCT_BINARY, args, status, err_text, true);
}

json_t *jlink(json_t *doc, const char *name) {
  json_t *links = jget(doc, "fabric_links.links");
  for (size_t i = 0; i < json_array_size(links); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(links, i), "link")), name))
      return json_array_get(links, i);
  ck_abort_msg("no link %s", name);
  return NULL;
}
