/* The verbs transport as jctlab calls it (verbs.h): each function forwards
 * to jctlab-verbs.so's table, loaded on first need (harness/base/module.h),
 * so that jctlab links no rdma-core library of its own. Only new and open
 * make a jct__verbs_t; every other call has one, so the module is loaded. */
#include <stddef.h>

#include "common/errf.h"
#include "harness/base/module.h"
#include "jctlab/error.h"
#include "verbs.h"

static const struct jct__verbs_ops *ops;

int jct__verbs_load(char *err, size_t errlen) {
  const void *t = ops;
  int rc = jct__module_load(JCT__VERBS_MODULE, JCT__VERBS_OPS, &t, err, errlen);
  ops = t;
  return rc;
}

int jct__verbs_new(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                   const jct__verbs_opts_t *o, char *err, size_t errlen) {
  int rc = jct__verbs_load(err, errlen);
  return rc ? rc : ops->new_(out, loop, s, rank, o, err, errlen);
}

int jct__verbs_open(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                    const jct__verbs_opts_t *o, const char *device, uint32_t port, char *err,
                    size_t errlen) {
  int rc = jct__verbs_load(err, errlen);
  return rc ? rc : ops->open(out, loop, s, rank, o, device, port, err, errlen);
}

int jct__verbs_make_qps(jct__verbs_t *v, uint32_t gid_index, jct__verbs_end_t *ends, char *err,
                        size_t errlen) {
  return ops->make_qps(v, gid_index, ends, err, errlen);
}

int jct__verbs_connect_ends(jct__verbs_t *v, const jct__verbs_end_t *all, uint32_t max_mtu_bytes,
                            char *err, size_t errlen) {
  return ops->connect_ends(v, all, max_mtu_bytes, err, errlen);
}

int jct__verbs_connect(jct__verbs_t *v) {
  return ops->connect(v);
}

bool jct__verbs_connected(const jct__verbs_t *v) {
  return ops->connected(v);
}

const char *jct__verbs_device(const jct__verbs_t *v) {
  return ops->device(v);
}

uint32_t jct__verbs_port(const jct__verbs_t *v) {
  return ops->port(v);
}

jct_exec_hooks_t jct__verbs_hooks(jct__verbs_t *v) {
  return ops->hooks(v);
}

void jct__verbs_attach(jct__verbs_t *v, jct_exec_t *e) {
  ops->attach(v, e);
}

uint32_t jct__verbs_outstanding(const jct__verbs_t *v) {
  return ops->outstanding(v);
}

int jct__verbs_failed(const jct__verbs_t *v, char *err, size_t errlen) {
  return ops->failed(v, err, errlen);
}

/* NULL is freed as the module frees it: not at all (and the module may
 * never have been loaded). */
void jct__verbs_free(jct__verbs_t *v) {
  if (v) ops->free(v);
}
