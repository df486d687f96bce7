/* Schedules as JSON (shape in include/jctlab/schedule.h), with jansson.
 * Loading checks every field's type and range and names the one at fault;
 * the loaded schedule is then validated as a whole. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"
#include "profile_json.h"
#include "schedule_json.h"

#define SCHEMA_VERSION 1

static int get_u64(json_t *obj, const char *key, uint64_t max, bool required, uint64_t *out,
                   const char *what, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v) {
    if (!required) return 0;
    return jct__errf(err, errlen, JCT_EINVAL, "%s: \"%s\" is missing", what, key);
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: \"%s\" must be an integer in [0, %llu]", what,
                     key, (unsigned long long)max);
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

static int load_conns(jct_schedule_t *s, json_t *arr, char *err, size_t errlen) {
  if (!json_is_array(arr))
    return jct__errf(err, errlen, JCT_EINVAL, "\"connections\" must be an array");
  if (json_array_size(arr) > JCT_SCHEDULE_MAX_CONNS)
    return jct__errf(err, errlen, JCT_EINVAL, "%zu connections: a schedule has at most %u",
                     json_array_size(arr), JCT_SCHEDULE_MAX_CONNS);
  s->nconns = (uint32_t)json_array_size(arr);
  s->conns = calloc(s->nconns ? s->nconns : 1, sizeof *s->conns);
  if (!s->conns) return JCT_ENOMEM;
  for (uint32_t i = 0; i < s->nconns; i++) {
    json_t *c = json_array_get(arr, i);
    char what[48];
    snprintf(what, sizeof what, "connection %u", i);
    if (!json_is_object(c)) return jct__errf(err, errlen, JCT_EINVAL, "%s: not an object", what);
    uint64_t src = 0, dst = 0, ch = 0;
    int rc;
    if ((rc = get_u64(c, "src", UINT32_MAX, true, &src, what, err, errlen)) ||
        (rc = get_u64(c, "dst", UINT32_MAX, true, &dst, what, err, errlen)) ||
        (rc = get_u64(c, "channel", UINT32_MAX, false, &ch, what, err, errlen)))
      return rc;
    s->conns[i] = (jct_conn_t){(uint32_t)src, (uint32_t)dst, (uint32_t)ch};
  }
  return 0;
}

static int load_op(jct_op_t *o, json_t *j, uint32_t i, char *err, size_t errlen) {
  char what[32];
  snprintf(what, sizeof what, "op %u", i);
  if (!json_is_object(j)) return jct__errf(err, errlen, JCT_EINVAL, "%s: not an object", what);
  uint64_t c = 0, gap = 0;
  int rc;
  if ((rc = get_u64(j, "conn", UINT32_MAX, true, &c, what, err, errlen)) ||
      (rc = get_u64(j, "bytes", UINT64_MAX >> 1, true, &o->bytes, what, err, errlen)) ||
      (rc = get_u64(j, "gap_ns", UINT64_MAX >> 1, false, &gap, what, err, errlen)))
    return rc;
  o->conn = (uint32_t)c;
  o->gap_ns = gap;
  json_t *step = json_object_get(j, "step");
  o->step = json_is_integer(step) ? (int32_t)json_integer_value(step) : -1;
  json_t *deps = json_object_get(j, "deps");
  if (!deps) return 0;
  if (!json_is_array(deps))
    return jct__errf(err, errlen, JCT_EINVAL, "%s: \"deps\" must be an array", what);
  o->ndeps = (uint32_t)json_array_size(deps);
  if (!o->ndeps) return 0;
  o->deps = calloc(o->ndeps, sizeof *o->deps);
  if (!o->deps) return JCT_ENOMEM;
  for (uint32_t d = 0; d < o->ndeps; d++) {
    json_t *v = json_array_get(deps, d);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
      return jct__errf(err, errlen, JCT_EINVAL, "%s: deps[%u] is not an op id", what, d);
    o->deps[d] = (uint32_t)json_integer_value(v);
  }
  return 0;
}

static int from_json(jct_schedule_t *s, json_t *root, char *err, size_t errlen) {
  if (!json_is_object(root)) return jct__errf(err, errlen, JCT_EINVAL, "not a JSON object");
  json_t *ver = json_object_get(root, "jctlab_schedule");
  if (!json_is_integer(ver) || json_integer_value(ver) != SCHEMA_VERSION)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "not a jctlab schedule (\"jctlab_schedule\": %d is missing)", SCHEMA_VERSION);
  uint64_t nranks = 0, bytes = 0;
  int rc;
  if ((rc = get_u64(root, "ranks", UINT32_MAX, true, &nranks, "schedule", err, errlen)) ||
      (rc = get_u64(root, "bytes", UINT64_MAX >> 1, false, &bytes, "schedule", err, errlen)))
    return rc;
  s->nranks = (uint32_t)nranks;
  s->bytes = bytes;
  const char *alg = json_string_value(json_object_get(root, "algorithm"));
  snprintf(s->algorithm, sizeof s->algorithm, "%s", alg ? alg : "");
  if ((rc = load_conns(s, json_object_get(root, "connections"), err, errlen))) return rc;
  json_t *ops = json_object_get(root, "ops");
  if (!json_is_array(ops)) return jct__errf(err, errlen, JCT_EINVAL, "\"ops\" must be an array");
  if (json_array_size(ops) > JCT_SCHEDULE_MAX_OPS)
    return jct__errf(err, errlen, JCT_EINVAL, "%zu ops: a schedule has at most %u",
                     json_array_size(ops), JCT_SCHEDULE_MAX_OPS);
  uint32_t n = (uint32_t)json_array_size(ops);
  s->ops = calloc(n ? n : 1, sizeof *s->ops);
  if (!s->ops) return JCT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    s->nops = i + 1; /* so that free() sees what was filled in */
    if ((rc = load_op(&s->ops[i], json_array_get(ops, i), i, err, errlen))) return rc;
  }
  if ((rc = jct_schedule_validate(s, err, errlen))) return rc;
  json_t *prof = json_object_get(root, "profile");
  if (prof && !json_is_null(prof))
    return jct__profile_from_json(prof, s->nranks, &s->profile, err, errlen);
  return 0;
}

static int load_root(jct_schedule_t **out, json_t *root, char *err, size_t errlen) {
  jct_schedule_t *s = calloc(1, sizeof *s);
  if (!s) {
    json_decref(root);
    return JCT_ENOMEM;
  }
  int rc = from_json(s, root, err, errlen);
  json_decref(root);
  if (rc) {
    jct_schedule_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int jct_schedule_loads(jct_schedule_t **out, const char *json, size_t len, char *err,
                       size_t errlen) {
  json_error_t je;
  *out = NULL;
  json_t *root = json_loadb(json, len, 0, &je);
  if (!root)
    return jct__errf(err, errlen, JCT_EINVAL, "line %d column %d: %s", je.line, je.column, je.text);
  return load_root(out, root, err, errlen);
}

int jct_schedule_load(jct_schedule_t **out, const char *path, char *err, size_t errlen) {
  json_error_t je;
  *out = NULL;
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (!f) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  json_t *root = json_loadf(f, 0, &je);
  if (f != stdin) fclose(f);
  if (!root)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: line %d column %d: %s", path, je.line, je.column,
                     je.text);
  char inner[256];
  int rc = load_root(out, root, inner, sizeof inner);
  if (rc) jct__errf(err, errlen, rc, "%s: %s", path, inner);
  return rc;
}

/* "dep_kinds", only on an op with a program-order dep: a schedule without
 * any reads as before. */
static void add_dep_kinds(const jct_schedule_t *s, uint32_t i, json_t *op) {
  const jct_op_t *o = &s->ops[i];
  bool order = false;
  for (uint32_t d = 0; d < o->ndeps; d++) {
    if (o->deps[d] >= s->nops || o->conn >= s->nconns || s->ops[o->deps[d]].conn >= s->nconns)
      return; /* not a valid schedule: its kinds mean nothing */
    order |= jct_schedule_dep_kind(s, i, o->deps[d]) == JCT_DEP_ORDER;
  }
  if (!order) return;
  json_t *kinds = json_array();
  for (uint32_t d = 0; d < o->ndeps; d++)
    json_array_append_new(kinds,
                          json_string(jct_dep_kind_name(jct_schedule_dep_kind(s, i, o->deps[d]))));
  json_object_set_new(op, "dep_kinds", kinds);
}

json_t *jct__schedule_json(const jct_schedule_t *s) {
  json_t *conns = json_array(), *ops = json_array();
  for (uint32_t i = 0; i < s->nconns; i++)
    json_array_append_new(conns, json_pack("{s:I,s:I,s:I}", "src", (json_int_t)s->conns[i].src,
                                           "dst", (json_int_t)s->conns[i].dst, "channel",
                                           (json_int_t)s->conns[i].channel));
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    json_t *deps = json_array();
    for (uint32_t d = 0; d < o->ndeps; d++)
      json_array_append_new(deps, json_integer(o->deps[d]));
    json_t *op = json_pack("{s:I,s:I,s:o,s:I,s:i}", "conn", (json_int_t)o->conn, "bytes",
                           (json_int_t)o->bytes, "deps", deps, "gap_ns", (json_int_t)o->gap_ns,
                           "step", (int)o->step);
    if (op) add_dep_kinds(s, i, op);
    json_array_append_new(ops, op);
  }
  /* The profile before the connections and ops, where a person editing
   * the file finds it. */
  json_t *root =
      json_pack("{s:i,s:s,s:I,s:I}", "jctlab_schedule", SCHEMA_VERSION, "algorithm", s->algorithm,
                "ranks", (json_int_t)s->nranks, "bytes", (json_int_t)s->bytes);
  int failed = !root;
  if (!failed && s->profile)
    failed = json_object_set_new(root, "profile", jct__profile_json(s->profile));
  if (!failed)
    failed = json_object_set_new(root, "connections", conns);
  else
    json_decref(conns);
  if (!failed)
    failed = json_object_set_new(root, "ops", ops);
  else
    json_decref(ops);
  if (failed) {
    json_decref(root);
    return NULL;
  }
  return root;
}

int jct_schedule_save(const jct_schedule_t *s, const char *path, char *err, size_t errlen) {
  json_t *root = jct__schedule_json(s);
  if (!root) return JCT_ENOMEM;
  size_t flags = JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_COMPACT;
  int rc =
      strcmp(path, "-") == 0 ? json_dumpf(root, stdout, flags) : json_dump_file(root, path, flags);
  json_decref(root);
  if (rc) return jct__errf(err, errlen, JCT_EIO, "%s: cannot write", path);
  if (strcmp(path, "-") == 0) putchar('\n');
  return 0;
}
