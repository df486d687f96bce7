/* Link rates as text (internal to jctlab): one reader for `--rate`,
 * scenario files and the rate injector, so that a rate reads the same
 * wherever it is typed. */
#ifndef JCT_RATE_H
#define JCT_RATE_H

#include <stdint.h>

/* Parse a rate: a number (decimals allowed) and an optional unit, case-
 * insensitive, always in bits per second and powers of 1000 as link rates
 * are counted: k, m, g, t alone or followed by "bit", "bps" or "bit/s"
 * ("100gbit", "25Gbit/s", "400gbps", "10m"); "bit", "bps" or no unit mean
 * bits per second. ("bps" is bits here, as iperf3 and vendors write it, not
 * tc's bytes.) Returns 0, or JCT_EINVAL when the text is not a rate of at
 * least 1 bit/s (or is above 1e18). */
int jct__parse_rate_bps(const char *s, uint64_t *out_bps);

#endif
