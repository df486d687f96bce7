/* The floor for reading a capture: a bare libpcap loop (pcap_next_ex) that
 * touches one byte of each packet and does nothing else. bench/inspect
 * compares `jctlab inspect` against it, since no reader of the file can be
 * faster than libpcap handing over its records.
 *
 * It opens the file as jctlab does (nanosecond timestamps requested) and
 * prints the packet count and the sum of the first byte of each packet, so
 * the compiler cannot drop the loop.
 *
 * Usage: bare_read FILE
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
  char errbuf[PCAP_ERRBUF_SIZE];
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  pcap_t *p = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!p) {
    fprintf(stderr, "%s: %s\n", argv[1], errbuf);
    return 2;
  }
  struct pcap_pkthdr *hdr;
  const u_char *data;
  uint64_t packets = 0, sum = 0;
  int rc;
  while ((rc = pcap_next_ex(p, &hdr, &data)) == 1) {
    packets++;
    if (hdr->caplen > 0) sum += data[0];
  }
  if (rc == PCAP_ERROR) {
    fprintf(stderr, "%s: %s\n", argv[1], pcap_geterr(p));
    pcap_close(p);
    return 2;
  }
  pcap_close(p);
  printf("%llu packets, byte sum %llu\n", (unsigned long long)packets, (unsigned long long)sum);
  return 0;
}
