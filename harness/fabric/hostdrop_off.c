/* Host-side injectors when jctlab is built without them (JCT_HOSTFAULT
 * off, hostdrop.h): every attach says so. */
#include "common/errf.h"
#include "hostdrop.h"
#include "jctlab/error.h"

int jct__hostdrop_attach(jct__hostdrop_t **out, int ifindex, uint32_t prio, const char *label,
                         char *err, size_t errlen) {
  (void)ifindex, (void)prio;
  *out = NULL;
  return jct__errf(err, errlen, JCT_EINVAL,
                   "%s: injectors at host: not supported in this build (configure with "
                   "-DJCT_HOSTFAULT=ON: libbpf-dev, clang)",
                   label);
}

int jct__hostdrop_configure(jct__hostdrop_t *h, const struct jct_kdrop_cfg *cfg,
                            const uint64_t rng[4]) {
  (void)h, (void)cfg, (void)rng;
  return JCT_EINVAL;
}

int jct__hostdrop_enable(jct__hostdrop_t *h, bool on) {
  (void)h, (void)on;
  return JCT_EINVAL;
}

int jct__hostdrop_counters(jct__hostdrop_t *h, struct jct_kdrop_counters *out) {
  (void)h, (void)out;
  return JCT_EINVAL;
}

int jct__hostdrop_drain(jct__hostdrop_t *h, jct__hostdrop_event_cb cb, void *arg) {
  (void)h, (void)cb, (void)arg;
  return JCT_EINVAL;
}

int jct__hostdrop_test_run(jct__hostdrop_t *h, const uint8_t *frame, size_t len, bool *dropped) {
  (void)h, (void)frame, (void)len, (void)dropped;
  return JCT_EINVAL;
}

void jct__hostdrop_detach(jct__hostdrop_t *h, bool gone_ns) {
  (void)h, (void)gone_ns;
}

int jct__qdisc_available(int ifindex, const char *kind, char *why, size_t whylen) {
  (void)ifindex, (void)kind, (void)why, (void)whylen;
  return JCT_EINVAL;
}

int jct__hostdrop_test_tstamp(jct__hostdrop_t *h, const uint8_t *frame, size_t len,
                              uint64_t *tstamp_ns) {
  (void)h, (void)frame, (void)len, (void)tstamp_ns;
  return JCT_EINVAL;
}

const char *jct__hostdrop_attach_kind(const jct__hostdrop_t *h) {
  (void)h;
  return "none";
}

uint32_t jct__hostdrop_prog_id(const jct__hostdrop_t *h) {
  (void)h;
  return 0;
}

int jct__hostdrop_clear_stale(int ifindex, char *err, size_t errlen) {
  (void)ifindex, (void)err, (void)errlen;
  return 0; /* this build attaches nothing */
}
