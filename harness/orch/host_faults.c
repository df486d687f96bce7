/* Injectors at the ranks' hosts, the orchestrator's side (host_faults.h). */
#include <arpa/inet.h>
#include <stdio.h>

#include "host_faults.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"

int jct__host_faults_check(const char *const *specs, size_t n, uint64_t run_seed, uint32_t nranks,
                           char *err, size_t errlen) {
  if (!n) return 0;
  jct__chain_t *c;
  int rc = jct__chain_new(&c, specs, n, run_seed, err, errlen);
  if (rc) return rc;
  rc = jct__chain_attach_remote(c, nranks, NULL, err, errlen);
  jct__chain_free(c);
  return rc;
}

json_t *jct__host_faults_of(const jct__chain_t *c, uint32_t rank, uint64_t run_seed) {
  json_t *list = json_array();
  for (size_t i = 0; list && c && i < jct__chain_len(c); i++) {
    const jct_injector_t *inj = jct__chain_get(c, i);
    if (inj->host < 0 || (uint32_t)inj->host != rank) continue;
    if (json_array_append_new(list, json_pack("{s:I,s:s,s:I,s:I}", "index", (json_int_t)i, "spec",
                                              inj->spec, "run_seed", (json_int_t)run_seed, "seed",
                                              (json_int_t)inj->seed))) {
      json_decref(list);
      return NULL;
    }
  }
  return list;
}

static uint64_t u64_of(const json_t *o, const char *key) {
  json_int_t v = json_integer_value(json_object_get(o, key));
  return v > 0 ? (uint64_t)v : 0;
}

/* A drop's loss: [t_ns, qp, psn, opcode, retransmission, family, "src", "dst"]. */
static void one_drop(jct__chain_t *c, size_t i, const json_t *d) {
  struct jct_kdrop_event ev = {.qp = (uint32_t)json_integer_value(json_array_get(d, 1)),
                               .psn = (uint32_t)json_integer_value(json_array_get(d, 2)),
                               .opcode = (uint8_t)json_integer_value(json_array_get(d, 3)),
                               .retransmission = json_is_true(json_array_get(d, 4)),
                               .family = (uint8_t)json_integer_value(json_array_get(d, 5))};
  int af = ev.family == 6 ? AF_INET6 : AF_INET;
  const char *src = json_string_value(json_array_get(d, 6)),
             *dst = json_string_value(json_array_get(d, 7));
  if (!src || !dst || inet_pton(af, src, ev.src) != 1 || inet_pton(af, dst, ev.dst) != 1) return;
  json_int_t t = json_integer_value(json_array_get(d, 0));
  jct__chain_host_event(c, i, &ev, t > 0 ? (uint64_t)t : 0);
}

void jct__host_faults_results(jct__chain_t *c, uint32_t rank, const json_t *list) {
  size_t k, j;
  const json_t *e, *d;
  json_array_foreach(list, k, e) {
    json_int_t ix = json_integer_value(json_object_get(e, "index"));
    if (!c || ix < 0 || (size_t)ix >= jct__chain_len(c)) continue;
    size_t i = (size_t)ix;
    const jct_injector_t *inj = jct__chain_get(c, i);
    if (inj->host < 0 || (uint32_t)inj->host != rank) continue;
    jct_injector_stats_t st = {.seen = u64_of(e, "seen"),
                               .dropped = u64_of(e, "dropped"),
                               .held = u64_of(e, "held"),
                               .generated = u64_of(e, "generated"),
                               .link_down_ns = u64_of(e, "link_down_ns")};
    st.matched = st.seen;
    jct__chain_host_result(c, i, &st);
    json_array_foreach(json_object_get(e, "drops"), j, d) one_drop(c, i, d);
    json_array_foreach(json_object_get(e, "frames"), j, d) {
      json_int_t t = json_integer_value(json_array_get(d, 0)),
                 len = json_integer_value(json_array_get(d, 1));
      jct__chain_host_frame(c, i, t > 0 ? (uint64_t)t : 0, len > 0 ? (size_t)len : 0,
                            json_is_true(json_array_get(d, 2)));
    }
    json_array_foreach(json_object_get(e, "links"), j, d) {
      json_int_t t = json_integer_value(json_array_get(d, 0));
      jct__chain_host_link(c, i, t > 0 ? (uint64_t)t : 0, json_is_true(json_array_get(d, 1)));
    }
    json_int_t lost = json_integer_value(json_object_get(e, "frames_lost"));
    if (lost > 0)
      fprintf(stderr, "jctlab: injector #%zu at host:%u: %lld storm frames not logged\n", i + 1,
              rank, (long long)lost);
  }
}
