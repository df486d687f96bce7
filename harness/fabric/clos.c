/* The fabric's shape and placement (include/jctlab/clos.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/rate.h"
#include "common/rng.h"
#include "harness/base/units.h"
#include "jctlab/clos.h"
#include "jctlab/error.h"

int jct_clos_reroute_parse(jct_clos_t *c, const char *text, char *err, size_t errlen) {
  uint64_t t = 0;
  if (text && !strcmp(text, "off")) {
    c->reroute_detect_ns = JCT_CLOS_REROUTE_OFF;
    return 0;
  }
  if (!text || jct__parse_time_ns(text, &t) || t == 0 || t > JCT_CLOS_REROUTE_DETECT_MAX_NS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "reroute detection '%s': not a time from 1ns to 10s, or off",
                     text ? text : "");
  c->reroute_detect_ns = t;
  return 0;
}

uint64_t jct_clos_reroute_detect_ns(const jct_clos_t *c) {
  return c->reroute_detect_ns ? c->reroute_detect_ns : JCT_CLOS_REROUTE_DETECT_DEFAULT_NS;
}

void jct_clos_default(jct_clos_t *c) {
  memset(c, 0, sizeof *c);
  c->uplink_delay_ns = UINT64_MAX;
}

uint32_t jct_clos_hosts(const jct_clos_t *c) {
  return c->leaves * c->hosts_per_leaf;
}

static int count_key(const char *k, const char *v, uint32_t lo, uint32_t hi, uint32_t *out,
                     char *err, size_t errlen, const char *what) {
  uint64_t n;
  if (jct__parse_count(v, hi, &n) || n < lo)
    return jct__errf(err, errlen, JCT_EINVAL, "%s=%s: a leaf-spine fabric has %u to %u %s", k, v,
                     lo, hi, what);
  *out = (uint32_t)n;
  return 0;
}

int jct_clos_parse(jct_clos_t *c, const char *text, char *err, size_t errlen) {
  if (!strcmp(text, "star")) {
    c->leaves = c->spines = c->hosts_per_leaf = 0;
    return 0;
  }
  const char *pre = "leaf-spine:";
  if (strncmp(text, pre, strlen(pre)))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "topology '%s': not star or leaf-spine:leaves=L,spines=S,hosts-per-leaf=H",
                     text);
  char buf[256];
  if (strlen(text) >= sizeof buf)
    return jct__errf(err, errlen, JCT_EINVAL, "topology: '%.40s...' is too long", text);
  strcpy(buf, text + strlen(pre));
  jct_clos_t n = *c;
  n.leaves = n.spines = n.hosts_per_leaf = 0;
  int rc = 0;
  char *save = NULL;
  for (char *kv = strtok_r(buf, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
    char *v = strchr(kv, '=');
    if (!v) return jct__errf(err, errlen, JCT_EINVAL, "topology: '%s' is not KEY=VALUE", kv);
    *v++ = 0;
    if (!strcmp(kv, "leaves"))
      rc = count_key(kv, v, 2, JCT_CLOS_MAX_LEAVES, &n.leaves, err, errlen, "leaves");
    else if (!strcmp(kv, "spines"))
      rc = count_key(kv, v, 1, JCT_CLOS_MAX_SPINES, &n.spines, err, errlen, "spines");
    else if (!strcmp(kv, "hosts-per-leaf"))
      rc = count_key(kv, v, 1, 32, &n.hosts_per_leaf, err, errlen, "hosts per leaf");
    else if (!strcmp(kv, "uplink-rate")) {
      if (jct__parse_rate_bps(v, &n.uplink_rate_bps) || !n.uplink_rate_bps)
        return jct__errf(err, errlen, JCT_EINVAL,
                         "topology: uplink-rate=%s is not a rate (100mbit, 1gbit)", v);
    } else if (!strcmp(kv, "uplink-delay")) {
      if (jct__parse_time_ns(v, &n.uplink_delay_ns) || n.uplink_delay_ns > 1000000000u)
        return jct__errf(err, errlen, JCT_EINVAL,
                         "topology: uplink-delay=%s is not a time up to 1 s (1us, 500ns)", v);
    } else {
      return jct__errf(err, errlen, JCT_EINVAL,
                       "topology: unknown key '%s' (leaves, spines, hosts-per-leaf, uplink-rate, "
                       "uplink-delay)",
                       kv);
    }
  }
  if (rc) return rc;
  if (!n.leaves || !n.spines || !n.hosts_per_leaf)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "topology '%s': leaf-spine needs leaves=, spines= and hosts-per-leaf=", text);
  if (n.hosts_per_leaf + n.spines > JCT_SWITCH_MAX_PORTS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "topology '%s': a leaf of %u host ports and %u uplinks exceeds %u ports", text,
                     n.hosts_per_leaf, n.spines, JCT_SWITCH_MAX_PORTS);
  *c = n;
  return 0;
}

int jct_clos_ecmp_parse(jct_clos_t *c, const char *text, char *err, size_t errlen) {
  uint64_t gap = 0;
  jct_switch_ecmp_mode_t m;
  if (!strcmp(text, "hash"))
    m = JCT_SW_ECMP_HASH;
  else if (!strcmp(text, "per-packet"))
    m = JCT_SW_ECMP_PER_PACKET;
  else if (!strcmp(text, "flowlet"))
    m = JCT_SW_ECMP_FLOWLET;
  else if (!strncmp(text, "flowlet:", 8) && !jct__parse_time_ns(text + 8, &gap) && gap > 0 &&
           gap <= 1000000000u)
    m = JCT_SW_ECMP_FLOWLET;
  else
    return jct__errf(err, errlen, JCT_EINVAL,
                     "ecmp '%s': not hash, per-packet, flowlet or flowlet:GAP (a time up to 1 s)",
                     text);
  c->ecmp_mode = m;
  c->ecmp_flowlet_gap_ns = gap;
  return 0;
}

int jct_placement_parse(jct_placement_t *p, const char *text, char *err, size_t errlen) {
  jct_placement_t n = {.kind = JCT_PLACE_PACKED};
  if (!strcmp(text, "packed")) {
  } else if (!strcmp(text, "spread")) {
    n.kind = JCT_PLACE_SPREAD;
  } else if (!strncmp(text, "random:", 7)) {
    n.kind = JCT_PLACE_RANDOM;
    if (jct__parse_count(text + 7, UINT64_MAX, &n.seed))
      return jct__errf(err, errlen, JCT_EINVAL, "placement '%s': the seed is not a number", text);
  } else if (*text && strspn(text, "0123456789,") == strlen(text)) {
    n.kind = JCT_PLACE_LIST;
    n.list = text;
  } else {
    return jct__errf(err, errlen, JCT_EINVAL,
                     "placement '%s': not packed, spread, random:SEED or a list of hosts (0,2,4)",
                     text);
  }
  *p = n;
  return 0;
}

static int place_list(const char *list, uint32_t nranks, uint32_t hosts, uint32_t *host_of,
                      char *err, size_t errlen) {
  uint32_t i = 0;
  const char *s = list;
  while (*s) {
    char *end;
    unsigned long h = strtoul(s, &end, 10);
    if (end == s || h >= hosts)
      return jct__errf(err, errlen, JCT_EINVAL, "placement %s: host '%.*s' is not 0 to %u", list,
                       (int)strcspn(s, ","), s, hosts - 1);
    if (i == nranks)
      return jct__errf(err, errlen, JCT_EINVAL, "placement %s: more hosts than the %u ranks",
                       list, nranks);
    for (uint32_t j = 0; j < i; j++)
      if (host_of[j] == h)
        return jct__errf(err, errlen, JCT_EINVAL, "placement %s: host %lu holds two ranks", list,
                         h);
    host_of[i++] = (uint32_t)h;
    s = *end == ',' ? end + 1 : end;
  }
  if (i != nranks)
    return jct__errf(err, errlen, JCT_EINVAL, "placement %s: %u hosts for %u ranks", list, i,
                     nranks);
  return 0;
}

int jct_clos_place(const jct_clos_t *c, uint32_t nranks, uint32_t *host_of, char *err,
                   size_t errlen) {
  uint32_t hosts = jct_clos_hosts(c);
  if (!c->leaves) { /* the star: a port per rank */
    for (uint32_t i = 0; i < nranks; i++)
      host_of[i] = i;
    return 0;
  }
  if (nranks > hosts)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%u ranks: the leaf-spine fabric has %u hosts (%u leaves x %u hosts-per-leaf)",
                     nranks, hosts, c->leaves, c->hosts_per_leaf);
  switch (c->placement.kind) {
  case JCT_PLACE_PACKED:
    for (uint32_t i = 0; i < nranks; i++)
      host_of[i] = i;
    return 0;
  case JCT_PLACE_SPREAD:
    /* round robin over the leaves; a leaf's slots fill in turn */
    for (uint32_t i = 0; i < nranks; i++)
      host_of[i] = (i % c->leaves) * c->hosts_per_leaf + i / c->leaves;
    return 0;
  case JCT_PLACE_RANDOM: {
    uint32_t *perm = malloc(hosts * sizeof *perm);
    if (!perm) return JCT_ENOMEM;
    uint64_t rng[4];
    jct__rng_seed(rng, c->placement.seed);
    for (uint32_t h = 0; h < hosts; h++)
      perm[h] = h;
    for (uint32_t h = hosts - 1; h > 0; h--) { /* Fisher-Yates */
      uint32_t j = (uint32_t)(jct__rng_next(rng) % (h + 1));
      uint32_t t = perm[h];
      perm[h] = perm[j];
      perm[j] = t;
    }
    memcpy(host_of, perm, nranks * sizeof *perm);
    free(perm);
    return 0;
  }
  case JCT_PLACE_LIST:
    return place_list(c->placement.list, nranks, hosts, host_of, err, errlen);
  }
  return JCT_EINVAL;
}

/* "<a><n>:<b><m>" with n and m plain decimal numbers (digits only: no
 * sign, space or second spelling such as "leaf-0" or "leaf+1", which
 * sscanf's %u would take for leaf 0 and 1). */
static bool link_name(const char *name, const char *a, const char *b, unsigned *n, unsigned *m) {
  size_t la = strlen(a), lb = strlen(b);
  if (strncmp(name, a, la)) return false;
  const char *p = name + la;
  size_t dn = strspn(p, "0123456789");
  if (!dn || dn > 5 || p[dn] != ':' || strncmp(p + dn + 1, b, lb)) return false;
  const char *q = p + dn + 1 + lb;
  size_t dm = strspn(q, "0123456789");
  if (!dm || dm > 5 || q[dm]) return false;
  *n = (unsigned)strtoul(p, NULL, 10);
  *m = (unsigned)strtoul(q, NULL, 10);
  return true;
}

int64_t jct_clos_port_number(const jct_clos_t *c, uint32_t nranks, const char *name) {
  unsigned a, b;
  uint32_t L = c->leaves, S = c->spines;
  if (!L) return -1;
  if (link_name(name, "leaf", "spine", &a, &b) && a < L && b < S)
    return (int64_t)nranks + a * S + b;
  if (link_name(name, "spine", "leaf", &a, &b) && a < S && b < L)
    return (int64_t)nranks + L * S + a * L + b;
  return -1;
}

int jct_clos_spec_ports(const jct_clos_t *c, uint32_t nranks, const char *spec, char *out,
                        size_t outlen, char *err, size_t errlen) {
  const char *p = spec;
  while ((p = strstr(p, "port=")) && p != spec && p[-1] != ' ')
    p += 5;
  size_t vlen = p ? strcspn(p + 5, " ") : 0;
  if (!p || (vlen && strspn(p + 5, "0123456789") == vlen)) {
    if (strlen(spec) >= outlen) return JCT_ENOMEM;
    strcpy(out, spec);
    return 0;
  }
  char name[32];
  snprintf(name, sizeof name, "%.*s", (int)(vlen < 31 ? vlen : 31), p + 5);
  int64_t n = jct_clos_port_number(c, nranks, name);
  if (n < 0)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "port=%s: no such link (%u leaves, %u spines: leaf<l>:spine<s> or "
                     "spine<s>:leaf<l>)",
                     name, c->leaves, c->spines);
  int w = snprintf(out, outlen, "%.*sport=%lld%s", (int)(p - spec), spec, (long long)n,
                   p + 5 + vlen);
  return w < 0 || (size_t)w >= outlen ? JCT_ENOMEM : 0;
}
