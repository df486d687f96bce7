/* Scenario files (scenario.h): the file read whole (at most 1 MiB), one
 * YAML document loaded with libyaml's document API (yaml_parser_load) and
 * walked key by key (scenario_keys.c, scenario_cases.c, with the readers of
 * scenario_yaml.c), a second document refused; and a case's run options,
 * the scenario's with the case's own. Every value is checked with the
 * parsers the command line uses (units.h) and every inject spec with the
 * injector framework's own (jct_injector_new), so a file that loads is one
 * the run accepts. suites/scenarios/README.md is the user's guide. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "run_args.h"
#include "scenario_int.h"

#define SCENARIO_MAX_BYTES (1u << 20)
/* Deeper than any scenario needs (4 is the most the keys use). libyaml's
 * scanner takes time quadratic in the nesting (100,000 levels: 20 s), so
 * depth is checked on the event stream first, which stops at the first
 * level too deep. */
#define SCENARIO_MAX_DEPTH 32

static int yaml_error(const jct__sc_ctx_t *c, const yaml_parser_t *p) {
  if (p->error == YAML_MEMORY_ERROR) return jct__sc_oom(c);
  if (p->error == YAML_READER_ERROR)
    return jct__errf(c->err, c->errlen, JCT_EINVAL, "%s: byte %zu: %s", c->file, p->problem_offset,
                     p->problem ? p->problem : "unreadable");
  return jct__errf(c->err, c->errlen, JCT_EINVAL, "%s:%zu:%zu: %s%s%s", c->file,
                   p->problem_mark.line + 1, p->problem_mark.column + 1,
                   p->problem ? p->problem : "not YAML", p->context ? " " : "",
                   p->context ? p->context : "");
}

/* 0, or JCT_EINVAL at the first collection nested deeper than
 * SCENARIO_MAX_DEPTH. A syntax error is left for the loader to report. */
static int check_depth(const jct__sc_ctx_t *c, const char *text, size_t len) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return jct__sc_oom(c);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int rc = 0, depth = 0;
  for (bool end = false; !end && rc == 0;) {
    yaml_event_t e;
    if (!yaml_parser_parse(&p, &e)) break;
    if (e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT) {
      if (++depth > SCENARIO_MAX_DEPTH)
        rc = jct__errf(c->err, c->errlen, JCT_EINVAL,
                       "%s:%zu:%zu: nested deeper than %d levels: not a scenario", c->file,
                       e.start_mark.line + 1, e.start_mark.column + 1, SCENARIO_MAX_DEPTH);
    } else if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) {
      depth--;
    }
    end = e.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&e);
  }
  yaml_parser_delete(&p);
  return rc;
}

static char *stem(const char *name) {
  const char *b = strrchr(name, '/');
  b = b ? b + 1 : name;
  size_t n = strlen(b);
  if (n > 5 && !strcmp(b + n - 5, ".yaml"))
    n -= 5;
  else if (n > 4 && !strcmp(b + n - 4, ".yml"))
    n -= 4;
  return strndup(b, n);
}

int jct__scenario_load_mem(jct__scenario_t **out, const char *text, size_t len, const char *name,
                           const char *base_dir, char *err, size_t errlen) {
  *out = NULL;
  char cwd[PATH_MAX];
  if (!base_dir) base_dir = getcwd(cwd, sizeof cwd) ? cwd : ".";
  jct__scenario_t *s = calloc(1, sizeof *s);
  jct__sc_ctx_t c = {.file = name, .base_dir = base_dir, .err = err, .errlen = errlen, .s = s};
  if (!s || !(s->path = strdup(name))) {
    free(s);
    return jct__sc_oom(&c);
  }
  jct__run_opts_init(&s->run, 100000000u); /* rate: 100mbit unless the file says */
  jct_clos_default(&s->clos);
  s->qps_per_conn = 1;
  s->scale = 1;
  int depth_rc = check_depth(&c, text, len);
  if (depth_rc) {
    jct__scenario_free(s);
    return depth_rc;
  }
  yaml_parser_t p;
  yaml_document_t doc, doc2;
  if (!yaml_parser_initialize(&p)) {
    jct__scenario_free(s);
    return jct__sc_oom(&c);
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int rc;
  if (!yaml_parser_load(&p, &doc)) {
    rc = yaml_error(&c, &p);
  } else {
    c.doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
      rc = jct__errf(err, errlen, JCT_EINVAL,
                     "%s:1:1: empty: a scenario needs a source (synth:, trace: or schedule:) and "
                     "cases:",
                     name);
    } else if (!(rc = jct__sc_parse_top(&c, root))) {
      /* One scenario per file: a second document is a mistake. */
      if (!yaml_parser_load(&p, &doc2)) {
        rc = yaml_error(&c, &p);
      } else {
        yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
        if (r2) {
          c.doc = &doc2;
          rc = jct__sc_at(&c, r2, "a second document: one scenario per file");
        }
        yaml_document_delete(&doc2);
      }
    }
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&p);
  if (!rc && !s->name && !(s->name = stem(name))) rc = jct__sc_oom(&c);
  if (rc) {
    jct__scenario_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int jct__scenario_load(jct__scenario_t **out, const char *path, char *err, size_t errlen) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  char *buf = malloc(SCENARIO_MAX_BYTES + 1);
  if (!buf) {
    fclose(f);
    return jct__errf(err, errlen, JCT_ENOMEM, "%s: out of memory", path);
  }
  size_t n = fread(buf, 1, SCENARIO_MAX_BYTES + 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad || n > SCENARIO_MAX_BYTES) {
    free(buf);
    return bad ? jct__errf(err, errlen, JCT_EIO, "%s: %s", path, "cannot read (a directory?)")
               : jct__errf(err, errlen, JCT_EINVAL, "%s: larger than %u bytes: not a scenario",
                           path, SCENARIO_MAX_BYTES);
  }
  /* Relative paths inside are the scenario's directory's. */
  char *abs = realpath(path, NULL), *dir = abs ? dirname(abs) : NULL;
  int rc = jct__scenario_load_mem(out, buf, n, path, dir, err, errlen);
  free(abs);
  free(buf);
  return rc;
}

void jct__scenario_free(jct__scenario_t *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->ncases; i++)
    jct__sc_free_case(&s->cases[i]);
  free(s->cases);
  free(s->path);
  free(s->name);
  free(s->description);
  free(s->input);
  free(s);
}

void jct__scenario_case_opts(const jct__scenario_t *s, const jct__scenario_case_t *c,
                             jct_run_opts_t *o) {
  *o = s->run;
  o->pfc = c->pfc;
  o->ecn = c->ecn;
  o->cc = c->cc;
  jct__watchdog_set(o, c->pfc_watchdog);
  o->inject = (const char *const *)c->inject;
  o->ninject = c->ninject;
  if (o->clos) o->clos = &c->clos;
}
