/* Words for jctlab's error codes (include/jctlab/error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "errf.h"
#include "jctlab/error.h"

const char *jct_strerror(int err) {
  switch (err) {
  case JCT_OK:
    return "success";
#define JCT__ERR_CASE(name, value, text)                                                           \
  case JCT_##name:                                                                                 \
    return text;
    JCT_ERRNO_MAP(JCT__ERR_CASE)
#undef JCT__ERR_CASE
  }
  return "unknown error";
}

int jct__errf(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}
