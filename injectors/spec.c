/* Injector specs: "KIND [key=value ...]" as a person types it on the
 * command line (--inject SPEC) or in a scenario file (injector.h).
 *
 * Words are separated by blanks. A word is key=value, or a bare word (a
 * positional value, stored with an empty key: "delay 50us"). A value may be
 * quoted with "..." (where \" and \\ stand for " and \) or '...' (taken
 * literally) to hold blanks: where="udp dst port 4791 and src host
 * 198.18.0.3". A named key may appear once.
 *
 * jct_spec_get(spec, "") returns the first positional value not yet taken,
 * so a kind reads its positional words in order.
 *
 * Every error names the whole spec and then the word it is about, so a
 * person sees which word to fix: "drop p=1.5: p=1.5 is outside [0, 1]".
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/rate.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "spec_int.h"

/* At most this much of a spec heads a message ("..." after a cut), so the
 * reason that follows is never what the caller's buffer cuts. */
#define QUOTE_MAX 60

/* Format "<spec>: <detail>" into err; return JCT_EINVAL. */
__attribute__((format(printf, 4, 5))) static int spec_err(const char *text, char *err,
                                                          size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    char detail[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (!text) text = "";
    int n = (int)strnlen(text, QUOTE_MAX + 1);
    snprintf(err, errlen, "%.*s%s: %s", n > QUOTE_MAX ? QUOTE_MAX : n, text,
             n > QUOTE_MAX ? "..." : "", detail);
  }
  return JCT_EINVAL;
}

/* The word starting at offset, as typed (quotes included), for errors. */
static int word_len(const char *text, uint32_t offset) {
  const char *p = text + offset;
  char quote = 0;
  int n = 0;
  for (; p[n]; n++) {
    char c = p[n];
    if (quote) {
      if (c == '\\' && quote == '"' && p[n + 1])
        n++;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (isspace((unsigned char)c)) {
      break;
    }
  }
  return n;
}

/* at= twice is a place (host:RANK, switch) and a time, one of each. */
static bool is_place(const char *v) {
  return strcmp(v, "switch") == 0 || strncmp(v, "host", 4) == 0;
}
static bool place_and_time(const char *key, const char *a, const char *b) {
  return strcmp(key, "at") == 0 && is_place(a) != is_place(b);
}

int jct_spec_parse(const char *text, jct_spec_t *spec, char *err, size_t errlen) {
  memset(spec, 0, sizeof *spec);
  spec->text = text;
  if (!text) return spec_err("", err, errlen, "empty injector spec");
  const char *p = text;
  while (isspace((unsigned char)*p))
    p++;
  const char *kind = p;
  while (*p && !isspace((unsigned char)*p))
    p++;
  size_t kind_len = (size_t)(p - kind);
  if (kind_len == 0) return spec_err(text, err, errlen, "empty injector spec");
  for (size_t i = 0; i < kind_len; i++) {
    unsigned char c = (unsigned char)kind[i];
    if (!islower(c) && !isdigit(c) && c != '_' && c != '-')
      return spec_err(text, err, errlen, "%.*s: the spec must start with the injector's kind",
                      (int)kind_len, kind);
  }
  if (kind_len >= sizeof spec->kind)
    return spec_err(text, err, errlen, "%.*s: unknown injector kind", (int)kind_len, kind);
  memcpy(spec->kind, kind, kind_len);

  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (!*p) break;
    uint32_t offset = (uint32_t)(p - text);
    int wlen = word_len(text, offset);
    if (spec->nargs == JCT_SPEC_MAX_ARGS)
      return spec_err(text, err, errlen, "%.*s: too many words (at most %d)", wlen, p,
                      JCT_SPEC_MAX_ARGS);
    __typeof__(spec->arg[0]) *a = &spec->arg[spec->nargs];
    a->offset = offset;

    /* The key: up to '=' when the word has one before any quote or blank. */
    const char *k = p;
    while (*k && *k != '=' && *k != '"' && *k != '\'' && !isspace((unsigned char)*k))
      k++;
    if (*k == '=') {
      size_t klen = (size_t)(k - p);
      if (klen == 0) return spec_err(text, err, errlen, "%.*s: a key is missing", wlen, p);
      if (klen >= sizeof a->key)
        return spec_err(text, err, errlen, "%.*s: unknown key", (int)klen, p);
      memcpy(a->key, p, klen);
      p = k + 1;
    }

    /* The value: quoted or up to the next blank. */
    size_t n = 0;
    bool quoted = false;
    while (*p && !isspace((unsigned char)*p)) {
      char c = *p;
      if (c == '"' || c == '\'') {
        char quote = c;
        quoted = true;
        p++;
        while (*p && *p != quote) {
          if (quote == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
          if (n + 1 >= sizeof a->value)
            return spec_err(text, err, errlen, "%s: value longer than %zu bytes",
                            a->key[0] ? a->key : "word", sizeof a->value - 1);
          a->value[n++] = *p++;
        }
        if (!*p)
          return spec_err(text, err, errlen, "%.*s: unterminated quote", wlen, text + offset);
        p++;
        continue;
      }
      if (n + 1 >= sizeof a->value)
        return spec_err(text, err, errlen, "%s: value longer than %zu bytes",
                        a->key[0] ? a->key : "word", sizeof a->value - 1);
      a->value[n++] = c;
      p++;
    }
    a->value[n] = '\0';
    if (n == 0 && !quoted)
      return spec_err(text, err, errlen, "%s: %s has no value", a->key, a->key);
    for (uint32_t i = 0; a->key[0] && i < spec->nargs; i++)
      if (strcmp(spec->arg[i].key, a->key) == 0 &&
          !place_and_time(a->key, spec->arg[i].value, a->value))
        return spec_err(text, err, errlen, "%.*s: %s is given twice", wlen, text + offset, a->key);
    spec->nargs++;
  }
  return 0;
}

/* The index of key (first untaken positional for ""), marking it used; -1. */
static int spec_take(jct_spec_t *spec, const char *key) {
  for (uint32_t i = 0; i < spec->nargs; i++) {
    if (strcmp(spec->arg[i].key, key) != 0) continue;
    if (!key[0] && spec->arg[i].used) continue;
    spec->arg[i].used = true;
    return (int)i;
  }
  return -1;
}

const char *jct_spec_get(jct_spec_t *spec, const char *key) {
  int i = spec_take(spec, key);
  return i < 0 ? NULL : spec->arg[i].value;
}

/* "<spec>: <word as typed> <detail>". */
__attribute__((format(printf, 5, 6))) static int arg_err(const jct_spec_t *spec, int i, char *err,
                                                         size_t errlen, const char *fmt, ...) {
  char detail[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  uint32_t off = spec->arg[i].offset;
  return spec_err(spec->text, err, errlen, "%.*s %s", word_len(spec->text, off), spec->text + off,
                  detail);
}

/* A decimal number (no sign, no hex, no inf/nan) at the start of s. */
static bool parse_decimal(const char *s, double *v, const char **end) {
  if (!isdigit((unsigned char)s[0]) && !(s[0] == '.' && isdigit((unsigned char)s[1]))) return false;
  char *e;
  *v = strtod(s, &e);
  *end = e;
  return e != s && isfinite(*v);
}

int jct_spec_prob(jct_spec_t *spec, const char *key, double *out, char *err, size_t errlen) {
  int i = spec_take(spec, key);
  if (i < 0) return 0;
  const char *s = spec->arg[i].value, *end;
  double v;
  if (!parse_decimal(s, &v, &end))
    return arg_err(spec, i, err, errlen, "is not a probability (0.01 or 1%%)");
  if (*end == '%') {
    v /= 100.0;
    end++;
  }
  if (*end) return arg_err(spec, i, err, errlen, "is not a probability (0.01 or 1%%)");
  if (v < 0.0 || v > 1.0) return arg_err(spec, i, err, errlen, "is outside [0, 1]");
  *out = v;
  return 0;
}

int jct__spec_time_text_ns(const char *s, size_t len, uint64_t *out_ns) {
  char word[sizeof((jct_spec_t *)0)->arg[0].value]; /* as long as a value */
  if (len >= sizeof word) return -1;
  memcpy(word, s, len);
  word[len] = '\0';
  const char *end;
  double v, mult;
  if (!parse_decimal(word, &v, &end)) return -1;
  if (!*end || strcmp(end, "ns") == 0)
    mult = 1.0;
  else if (strcmp(end, "us") == 0)
    mult = 1e3;
  else if (strcmp(end, "ms") == 0)
    mult = 1e6;
  else if (strcmp(end, "s") == 0)
    mult = 1e9;
  else
    return -1;
  double ns = floor(v * mult + 0.5);
  if (ns >= 18446744073709551615.0) return -2;
  *out_ns = (uint64_t)ns;
  return 0;
}

int jct_spec_time_ns(jct_spec_t *spec, const char *key, uint64_t *out, char *err, size_t errlen) {
  int i = spec_take(spec, key);
  if (i < 0) return 0;
  const char *s = spec->arg[i].value;
  int rc = jct__spec_time_text_ns(s, strlen(s), out);
  if (rc == -2) return arg_err(spec, i, err, errlen, "is too long");
  if (rc < 0) return arg_err(spec, i, err, errlen, "is not a time (500ns, 10us, 5ms, 1s)");
  return 0;
}

int jct_spec_u64(jct_spec_t *spec, const char *key, uint64_t max, uint64_t *out, char *err,
                 size_t errlen) {
  int i = spec_take(spec, key);
  if (i < 0) return 0;
  const char *s = spec->arg[i].value;
  int base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  if (!(base == 16 ? isxdigit((unsigned char)s[0]) : isdigit((unsigned char)s[0])))
    return arg_err(spec, i, err, errlen, "is not a whole number");
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (*end) return arg_err(spec, i, err, errlen, "is not a whole number");
  if (errno == ERANGE || v > max)
    return arg_err(spec, i, err, errlen, "is larger than %llu", (unsigned long long)max);
  *out = (uint64_t)v;
  return 0;
}

int jct_spec_rate_per_s(jct_spec_t *spec, const char *key, double *out, char *err, size_t errlen) {
  int i = spec_take(spec, key);
  if (i < 0) return 0;
  const char *s = spec->arg[i].value, *end;
  double v;
  if (!parse_decimal(s, &v, &end)) return arg_err(spec, i, err, errlen, "is not a rate (1000/s)");
  if (!*end || strcmp(end, "/s") == 0)
    *out = v;
  else if (strcmp(end, "/ms") == 0)
    *out = v * 1e3;
  else if (strcmp(end, "/us") == 0)
    *out = v * 1e6;
  else
    return arg_err(spec, i, err, errlen, "is not a rate (1000/s)");
  return 0;
}

int jct_spec_rate_bps(jct_spec_t *spec, const char *key, uint64_t *out, char *err, size_t errlen) {
  int i = spec_take(spec, key);
  if (i < 0) return 0;
  if (jct__parse_rate_bps(spec->arg[i].value, out) < 0)
    return arg_err(spec, i, err, errlen,
                   "is not a rate of at least 1 bit/s (10mbit, 1.5gbit, 100m: bits per second)");
  return 0;
}

int jct__spec_find(const jct_spec_t *spec, const char *key) {
  for (uint32_t i = 0; i < spec->nargs; i++)
    if (strcmp(spec->arg[i].key, key) == 0) return (int)i;
  return -1;
}

int jct__spec_word_err(const jct_spec_t *spec, int i, char *err, size_t errlen,
                       const char *detail) {
  if (i < 0 || (uint32_t)i >= spec->nargs)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: %s", spec->text, detail);
  return jct__errf(err, errlen, JCT_EINVAL, "%s: %s=%s: %s", spec->text, spec->arg[i].key,
                   spec->arg[i].value, detail);
}

bool jct__spec_msg_pkt(const char **p, uint32_t *msg, uint32_t *pkt) {
  const char *s = *p;
  char *end, *end2;
  if (*s < '0' || *s > '9') return false;
  unsigned long long m = strtoull(s, &end, 10);
  if (*end != ':' || end[1] < '0' || end[1] > '9') return false;
  unsigned long long k = strtoull(end + 1, &end2, 10);
  if (m > UINT32_MAX || k > UINT32_MAX) return false;
  *msg = (uint32_t)m;
  *pkt = (uint32_t)k;
  *p = end2;
  return true;
}

int jct__spec_pkts(const jct_spec_t *spec, const char *key, uint32_t max, uint32_t *msg,
                   uint32_t *pkt, uint32_t *n, char *err, size_t errlen) {
  int i = jct__spec_find(spec, key);
  *n = 0;
  for (const char *p = i < 0 ? "" : spec->arg[i].value; *n < max;) {
    if (!jct__spec_msg_pkt(&p, &msg[*n], &pkt[*n])) break;
    ++*n;
    if (*p == 0) return 0;
    if (*p != ',') break;
    p++;
  }
  char detail[96];
  snprintf(detail, sizeof detail,
           "is MESSAGE:PACKET (from 0), or up to %u of them separated by commas", max);
  return jct__spec_word_err(spec, i, err, errlen, detail);
}

int jct__spec_yes_no(jct_spec_t *spec, const char *key, bool *out, char *err, size_t errlen) {
  const char *v = jct_spec_get(spec, key);
  *out = false;
  if (!v) return 0;
  if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
    return jct__spec_word_err(spec, jct__spec_find(spec, key), err, errlen, "is yes or no");
  *out = strcmp(v, "yes") == 0;
  return 0;
}
