/* Writing a frame into one of the fabric's captures: fabric.c's (what
 * crossed the switch, what arrived at its ports) and chain.c's (what the
 * injectors dropped). They are nanosecond pcap files (pcap-savefile(5),
 * PCAP_TSTAMP_PRECISION_NANO: the header's tv_usec holds nanoseconds),
 * stamped on CLOCK_REALTIME, while the fabric runs on CLOCK_MONOTONIC
 * (include/jctlab/clock.h). Not a public interface.
 */
#ifndef JCT_CAPTURE_H
#define JCT_CAPTURE_H

#include <pcap/pcap.h>
#include <stdint.h>
#include <time.h>

/* Dump frame into d, stamped at t_ns (monotonic; realtime_offset_ns:
 * CLOCK_REALTIME - CLOCK_MONOTONIC) and cut to snaplen bytes (0: whole).
 * h holds the frame's caplen and len; its time is set here. */
static inline void jct__capture_dump(pcap_dumper_t *d, struct pcap_pkthdr *h, uint64_t t_ns,
                                     int64_t realtime_offset_ns, uint32_t snaplen,
                                     const uint8_t *frame) {
  uint64_t ts = (uint64_t)((int64_t)t_ns + realtime_offset_ns);
  h->ts.tv_sec = (time_t)(ts / 1000000000u);
  h->ts.tv_usec = (suseconds_t)(ts % 1000000000u); /* nanoseconds: the dumper is nano */
  if (snaplen && h->caplen > snaplen) h->caplen = snaplen;
  pcap_dump((u_char *)d, h, frame);
}

#endif
