/* jctlab error codes.
 *
 * Every fallible function returns 0 on success or one of the negative
 * JCT_E* codes below. jct_strerror() gives the words; the detail ("drop:
 * p=1.5 is outside [0, 1]", "trace.pcap: truncated record 2890") goes into
 * the caller's err/errlen buffer where a function takes one. There is no
 * global error variable.
 */
#ifndef JCTLAB_ERROR_H
#define JCTLAB_ERROR_H

#define JCT_ERRNO_MAP(XX)                                                                          \
  XX(EINVAL, -1, "invalid argument")                                                               \
  XX(ENOMEM, -2, "out of memory")                                                                  \
  XX(EIO, -3, "input/output error")                                                                \
  XX(ENOTCAP, -4, "not a capture file")                                                            \
  XX(ELINKTYPE, -5, "unsupported link type")                                                       \
  XX(ETRUNC, -6, "truncated record")                                                               \
  XX(ENOTSUP, -7, "not supported in this build")

enum {
  JCT_OK = 0,
#define JCT__ERR_ENUM(name, value, text) JCT_##name = (value),
  JCT_ERRNO_MAP(JCT__ERR_ENUM)
#undef JCT__ERR_ENUM
};

/* The words for a JCT_E* code (or "success" for 0); never NULL. Unknown
 * codes give "unknown error". */
const char *jct_strerror(int err);

#endif
