/* Filling a caller's err/errlen buffer (internal to jctlab). */
#ifndef JCT_ERRF_H
#define JCT_ERRF_H

#include <stddef.h>

/* Format the detail into err (when err and errlen are set) and return code,
 * so that a failing path reads: return jct__errf(err, errlen, JCT_EINVAL, ...). */
int jct__errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
