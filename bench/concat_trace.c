/* Make a long capture out of a short one: COPIES copies of IN, one after
 * the other, each shifted in time so that timestamps keep increasing (copy
 * k starts one mean packet gap after copy k-1 ends). The output keeps the
 * input's link type, snap length and timestamp precision. bench/inspect
 * uses it to build its ~100 MB file from the shipped trace.
 *
 * Usage: concat_trace COPIES IN OUT
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Timestamps in the file's own unit (µs or ns) as one integer. */
static uint64_t ts_units(const struct timeval *tv, uint64_t per_s) {
  return (uint64_t)tv->tv_sec * per_s + (uint64_t)tv->tv_usec;
}

/* Microsecond pcap files stay microsecond; anything else (nanosecond
 * pcap, pcapng) is written with nanosecond timestamps. */
static int read_is_nano(const char *path, int *nano) {
  FILE *fp = fopen(path, "rb");
  uint32_t magic = 0;
  int ok = fp && fread(&magic, sizeof magic, 1, fp) == 1;
  if (fp) fclose(fp);
  if (!ok) {
    fprintf(stderr, "%s: cannot read\n", path);
    return -1;
  }
  *nano = !(magic == 0xa1b2c3d4u || magic == 0xd4c3b2a1u);
  return 0;
}

int main(int argc, char **argv) {
  char errbuf[PCAP_ERRBUF_SIZE];
  if (argc != 4 || atol(argv[1]) < 1) {
    fprintf(stderr, "usage: %s COPIES IN OUT\n", argv[0]);
    return 2;
  }
  long copies = atol(argv[1]);
  const char *in = argv[2], *out = argv[3];
  int nano;
  if (read_is_nano(in, &nano) != 0) return 2;
  int prec = nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO;
  uint64_t per_s = nano ? 1000000000u : 1000000u;

  /* First pass: the input's time span (in the file's unit) and length. */
  pcap_t *p = pcap_open_offline_with_tstamp_precision(in, (u_int)prec, errbuf);
  if (!p) {
    fprintf(stderr, "%s: %s\n", in, errbuf);
    return 2;
  }
  struct pcap_pkthdr *hdr;
  const u_char *data;
  uint64_t first = 0, last = 0, n = 0;
  while (pcap_next_ex(p, &hdr, &data) == 1) {
    uint64_t t = ts_units(&hdr->ts, per_s);
    if (n++ == 0) first = t;
    last = t;
  }
  int linktype = pcap_datalink(p), snaplen = pcap_snapshot(p);
  pcap_close(p);
  if (n == 0) {
    fprintf(stderr, "%s: no packets\n", in);
    return 2;
  }
  /* One copy's span plus one mean gap, at least one unit. */
  uint64_t span = last - first + (n > 1 ? (last - first) / (n - 1) : 0) + 1;

  pcap_t *dead = pcap_open_dead_with_tstamp_precision(linktype, snaplen, (u_int)prec);
  pcap_dumper_t *d = dead ? pcap_dump_open(dead, out) : NULL;
  if (!d) {
    fprintf(stderr, "%s: %s\n", out, dead ? pcap_geterr(dead) : "cannot open");
    if (dead) pcap_close(dead);
    return 2;
  }
  uint64_t written = 0;
  for (long k = 0; k < copies; k++) {
    p = pcap_open_offline_with_tstamp_precision(in, (u_int)prec, errbuf);
    if (!p) {
      fprintf(stderr, "%s: %s\n", in, errbuf);
      return 2;
    }
    uint64_t shift = (uint64_t)k * span;
    while (pcap_next_ex(p, &hdr, &data) == 1) {
      struct pcap_pkthdr h = *hdr;
      uint64_t t = ts_units(&hdr->ts, per_s) + shift;
      h.ts.tv_sec = (time_t)(t / per_s);
      h.ts.tv_usec = (suseconds_t)(t % per_s);
      pcap_dump((u_char *)d, &h, data);
      written++;
    }
    pcap_close(p);
  }
  int bad = pcap_dump_flush(d) != 0;
  pcap_dump_close(d);
  pcap_close(dead);
  if (bad) {
    fprintf(stderr, "%s: write failed\n", out);
    return 2;
  }
  printf("%llu packets in %ld copies\n", (unsigned long long)written, copies);
  return 0;
}
