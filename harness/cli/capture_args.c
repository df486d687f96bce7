/* The capture options `jctlab run`, `jctlab replay` and `jctlab run
 * SCENARIO.yaml` share (commands.h): -s, -C and -W as tcpdump reads them
 * (tcpdump(1)), and the checks made before anything runs. The rotation
 * itself, and the files' names, are the fabric's (harness/fabric/capture.h). */
#include <dirent.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "harness/base/units.h"
#include "harness/plan/cases.h"

#define MAX_FILES 1000000u

/* -C's value: a bare number is millions of bytes, as tcpdump -C; with a
 * unit it is a size as everywhere in jctlab (units.h: 10MB = 10^7 bytes,
 * 10M and 10MiB = 10 * 2^20, as tcpdump's own k/m/g suffixes). */
static int parse_file_bytes(const char *v, uint64_t *out) {
  uint64_t n;
  if (jct__parse_count(v, UINT64_MAX / 1000000u, &n) == 0) {
    *out = n * 1000000u;
    return 0;
  }
  return jct__parse_size_bytes(v, out);
}

int jct__capture_opt_parse(jct_run_opts_t *r, const char *w, const char *v, const char *prog) {
  uint64_t n;
  if (!strcmp(w, "-s") || !strcmp(w, "--snaplen")) {
    if (jct__parse_count(v, 262144, &n) || (n && n < 14))
      return jct__cmd_bad(prog, "%s %s: not a snap length (14 to 262144 bytes, 0: whole frames)", w,
                          v);
    r->pcap_snaplen_bytes = (uint32_t)n;
  } else if (!strcmp(w, "-C")) {
    if (parse_file_bytes(v, &n) || !n)
      return jct__cmd_bad(prog,
                          "-C %s: not a file size (millions of bytes as tcpdump -C, or a size "
                          "with its unit: 500KB, 10MiB; at least 1 byte)",
                          v);
    r->pcap_file_bytes = n;
  } else if (!strcmp(w, "-W")) {
    if (jct__parse_count(v, MAX_FILES, &n) || !n)
      return jct__cmd_bad(prog, "-W %s: not a number of files (1 to %u)", v, MAX_FILES);
    r->pcap_files = (uint32_t)n;
  } else {
    return 0;
  }
  return 1;
}

int jct__capture_opts_check(const jct_run_opts_t *r, const char *prog) {
  if (r->pcap_port && !r->pcap_out)
    return jct__cmd_bad(prog, "--pcap-port %s needs --pcap-out FILE: it picks that capture's link",
                        r->pcap_port);
  if (r->pcap_files && !r->pcap_file_bytes)
    return jct__cmd_bad(prog, "-W %u needs -C SIZE: it caps the number of files -C makes",
                        r->pcap_files);
  if (!r->pcap_file_bytes) return 0;
  if (!r->pcap_out && !r->pcap_in) return jct__cmd_bad(prog, "-C needs --pcap-out or --pcap-in");
  const char *dash = r->pcap_out && !strcmp(r->pcap_out, "-") ? "--pcap-out"
                     : r->pcap_in && !strcmp(r->pcap_in, "-") ? "--pcap-in"
                                                              : NULL;
  if (dash) return jct__cmd_bad(prog, "-C: %s - is standard output, which cannot rotate", dash);
  return 0;
}

/* The first file in path's folder named path and digits (a rotated
 * capture's name, capture.h), into found: true when there is one. */
static bool numbered_file_exists(const char *path, char *found, size_t len) {
  char *d = strdup(path), *b = strdup(path);
  DIR *dir = d && b ? opendir(dirname(d)) : NULL;
  bool got = false;
  if (dir) {
    const char *base = basename(b);
    size_t n = strlen(base);
    struct dirent *e;
    while (!got && (e = readdir(dir))) {
      const char *digits = e->d_name + n;
      got =
          !strncmp(e->d_name, base, n) && *digits && strspn(digits, "0123456789") == strlen(digits);
      if (got) snprintf(found, len, "%s%s", path, digits);
    }
    closedir(dir);
  }
  free(d);
  free(b);
  return got;
}

/* One capture option's files for each case. */
static int names_ok(const char *opt, const char *path, uint32_t ncases, const char *prog) {
  char buf[4096], found[4200];
  for (uint32_t k = 1; k <= ncases; k++) {
    const char *p = jct__case_path(path, k, ncases, buf, sizeof buf);
    size_t len = strlen(p);
    if (ncases > 1 && len >= 6 && !strcmp(p + len - 6, "-case1"))
      return jct__cmd_bad(prog,
                          "%s %s: with -C and %u cases, give it an extension (.pcap): "
                          "%s's files would take case 11's name",
                          opt, path, ncases, p);
    if (numbered_file_exists(p, found, sizeof found))
      return jct__cmd_bad(prog,
                          "%s %s: %s exists, and -C never writes over a file that this run did "
                          "not make: remove it or choose another name",
                          opt, path, found);
  }
  return 0;
}

int jct__capture_names_ok(const jct_run_opts_t *r, uint32_t ncases, const char *prog) {
  if (!r->pcap_file_bytes) return 0;
  if (r->pcap_out && names_ok("--pcap-out", r->pcap_out, ncases, prog)) return 2;
  if (r->pcap_in && names_ok("--pcap-in", r->pcap_in, ncases, prog)) return 2;
  return 0;
}
