/* Sweeps in a scenario's inject specs (scenario.h): finding the one list
 * `key=[v1, v2, ...]` (or a positional `[v1, v2]`) among a case's specs,
 * splitting it into values, and reading a value as a number for plots.
 *
 * A '[' opens a list only at the start of a value: right after '=' or at
 * the start of a word (not the kind's). Quoted text ("..." or '...', as the
 * spec parser reads it) is skipped, and a '[' inside a word, as in a
 * libpcap filter's "udp[8]", is not a list. The list must end its word. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "scenario.h"

static void free_values(char **v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* Split "[a, b, c]" (s .. e, brackets included) into trimmed values. */
static int split(const char *s, const char *e, char ***out, uint32_t *nout, char *err,
                 size_t errlen) {
  char **v = NULL;
  uint32_t n = 0;
  const char *p = s + 1, *stop = e - 1; /* inside the brackets */
  for (;;) {
    const char *comma = memchr(p, ',', (size_t)(stop - p));
    const char *q = comma ? comma : stop;
    const char *a = p, *b = q;
    while (a < b && isspace((unsigned char)*a))
      a++;
    while (b > a && isspace((unsigned char)b[-1]))
      b--;
    if (a == b) {
      free_values(v, n);
      return jct__errf(err, errlen, JCT_EINVAL, "'%.*s': an empty value in the list", (int)(e - s),
                       s);
    }
    char **nv = realloc(v, (n + 1) * sizeof *v);
    char *val = nv ? strndup(a, (size_t)(b - a)) : NULL;
    if (!val) {
      free_values(nv ? nv : v, n);
      return JCT_ENOMEM;
    }
    v = nv;
    v[n++] = val;
    if (!comma) break;
    p = comma + 1;
  }
  *out = v;
  *nout = n;
  return 0;
}

/* Look for a list in one spec. Returns 0 (found: *ls and *le set; not:
 * *ls NULL) or JCT_EINVAL. */
static int find_in(const char *spec, const char **ls, const char **le, char *err, size_t errlen) {
  *ls = NULL;
  const char *p = spec;
  while (isspace((unsigned char)*p))
    p++;
  while (*p && !isspace((unsigned char)*p))
    p++; /* the kind */
  char quote = 0;
  for (; *p; p++) {
    if (quote) {
      if (*p == quote) quote = 0;
      continue;
    }
    if (*p == '"' || *p == '\'') {
      quote = *p;
      continue;
    }
    if (*p != '[' || !(p[-1] == '=' || isspace((unsigned char)p[-1]))) continue;
    const char *close = strchr(p, ']');
    if (!close) return jct__errf(err, errlen, JCT_EINVAL, "'%s': '[' without ']'", spec);
    const char *open2 = memchr(p + 1, '[', (size_t)(close - p - 1));
    if (open2) return jct__errf(err, errlen, JCT_EINVAL, "'%s': a list inside a list", spec);
    if (close[1] && !isspace((unsigned char)close[1]))
      return jct__errf(err, errlen, JCT_EINVAL, "'%s': the list '%.*s' must end its word", spec,
                       (int)(close - p + 1), p);
    if (*ls)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "'%s': two lists in one case (a sweep has one axis: write two cases)", spec);
    *ls = p;
    *le = close + 1;
    p = close;
  }
  return 0; /* an unterminated quote: the spec parser reports it */
}

int jct__sweep_find(const char *const *specs, uint32_t n, uint32_t *which, char *key, size_t keylen,
                    size_t *start, size_t *end, char ***values, uint32_t *nvalues, char *err,
                    size_t errlen) {
  *nvalues = 0;
  *values = NULL;
  const char *found = NULL, *fe = NULL;
  uint32_t at = 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *ls = NULL, *le = NULL;
    int rc = find_in(specs[i], &ls, &le, err, errlen);
    if (rc) return rc;
    if (!ls) continue;
    if (found)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "'%s' and '%s': two lists in one case (a sweep has one axis: write two "
                       "cases)",
                       specs[at], specs[i]);
    found = ls, fe = le, at = i;
  }
  if (!found) return 0;
  const char *spec = specs[at];
  /* The key: the word before '=', or the kind for a positional list. */
  const char *ks, *ke;
  if (found[-1] == '=') {
    ke = found - 1;
    ks = ke;
    while (ks > spec && !isspace((unsigned char)ks[-1]))
      ks--;
  } else {
    ks = spec;
    while (isspace((unsigned char)*ks))
      ks++;
    ke = ks;
    while (*ke && !isspace((unsigned char)*ke))
      ke++;
  }
  if (ks == ke) return jct__errf(err, errlen, JCT_EINVAL, "'%s': a list without a key", spec);
  if ((size_t)(ke - ks) >= keylen)
    return jct__errf(err, errlen, JCT_EINVAL, "'%s': the key '%.*s' is too long", spec,
                     (int)(ke - ks), ks);
  int rc = split(found, fe, values, nvalues, err, errlen);
  if (rc) return rc;
  memcpy(key, ks, (size_t)(ke - ks));
  key[ke - ks] = 0;
  *which = at;
  *start = (size_t)(found - spec);
  *end = (size_t)(fe - spec);
  return 0;
}

double jct__sweep_number(const char *text) {
  static const struct {
    const char *unit;
    double mult;
  } units[] = {{"", 1}, {"%", 0.01}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"/s", 1}};
  if (!text || !(isdigit((unsigned char)*text) || *text == '.' || *text == '-' || *text == '+'))
    return NAN;
  char *end;
  double v = strtod(text, &end);
  if (end == text || !isfinite(v)) return NAN;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcmp(end, units[i].unit) == 0) return v * units[i].mult;
  return v; /* another unit (a rate, a size): its number as written */
}
