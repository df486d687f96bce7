/* --report DIR (report.h): the directory, the plots drawn by gnuplot,
 * then report.md and report.html around them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "report.h"
#include "report_int.h"

#define GNUPLOT_TIMEOUT_S 60

/* mkdir -p. */
static int make_dir(const char *dir, char *err, size_t errlen) {
  char path[4096];
  if (!*dir || strlen(dir) >= sizeof path)
    return jct__errf(err, errlen, JCT_EINVAL, "--report: the directory name is empty or too long");
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p) continue;
    char saved = *p;
    *p = 0;
    if (mkdir(path, 0777) && errno != EEXIST)
      return jct__errf(err, errlen, JCT_EIO, "--report %s: cannot create %s: %s", dir, path,
                       strerror(errno));
    *p = saved;
    if (!saved) break;
  }
  struct stat st;
  if (stat(dir, &st) || !S_ISDIR(st.st_mode))
    return jct__errf(err, errlen, JCT_EIO, "--report %s: not a directory", dir);
  return 0;
}

static int draw(const json_t *result, const jct__plots_t *plots, const char *dir, char *err,
                size_t errlen) {
  if (!plots->n) return 0;
  FILE *script = tmpfile();
  if (!script)
    return jct__errf(err, errlen, JCT_EIO, "a temporary file for the plots' script: %s",
                     strerror(errno));
  int rc = jct__plots_script(result, plots, script);
  if (rc)
    jct__errf(err, errlen, rc, "writing the plots' script failed");
  else
    rc = jct__gnuplot_run(script, dir, GNUPLOT_TIMEOUT_S, err, errlen);
  fclose(script);
  for (size_t i = 0; i < plots->n && !rc; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, plots->v[i].file);
    if (stat(path, &st) || st.st_size == 0)
      rc = jct__errf(err, errlen, JCT_EIO, "gnuplot did not draw %s", path);
  }
  return rc;
}

static int write_one(const jct__doc_ops_t *ops, const json_t *result, const jct__plots_t *plots,
                     const char *dir, char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, ops->name);
  FILE *f = fopen(path, "w");
  if (!f) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  int rc = jct__report_doc(ops, f, result, plots, dir, err, errlen);
  bool bad = ferror(f);
  if (fclose(f) || bad)
    if (!rc) rc = jct__errf(err, errlen, JCT_EIO, "%s: write failed", path);
  return rc;
}

int jct__report_write(const json_t *result, const char *dir, char *err, size_t errlen) {
  if (!json_is_object(result) ||
      json_integer_value(json_object_get(result, "jctlab_result")) != 1 ||
      !json_is_array(json_object_get(result, "cases")))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--report: not a result document of version 1 (\"jctlab_result\": 1 with "
                     "\"cases\")");
  int rc = make_dir(dir, err, errlen);
  if (rc) return rc;
  jct__plots_t plots;
  if ((rc = jct__plots_plan(result, &plots))) {
    jct__plots_free(&plots);
    return jct__errf(err, errlen, rc, "--report: out of memory");
  }
  rc = draw(result, &plots, dir, err, errlen);
  if (!rc) rc = write_one(&jct__md_ops, result, &plots, dir, err, errlen);
  if (!rc) rc = write_one(&jct__html_ops, result, &plots, dir, err, errlen);
  jct__plots_free(&plots);
  return rc;
}
