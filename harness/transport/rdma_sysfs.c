/* An RDMA device's settings and counters from sysfs (rdma_sysfs.h). */
#include <arpa/inet.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "rdma_sysfs.h"

#define ROOT(r) ((r) ? (r) : "/sys/class/infiniband")

/* The first line of file path into buf (newline cut); false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fgets(buf, (int)len, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = 0;
  return ok;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The entries of dir, comma-separated, into buf (for an error's "there:"). */
static void list_dir(const char *dir, char *buf, size_t len) {
  buf[0] = 0;
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(buf, len, "none");
    return;
  }
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < len;) {
    if (e->d_name[0] == '.') continue;
    int w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "", e->d_name);
    if (w < 0) break;
    n += (size_t)w;
  }
  closedir(d);
  if (!buf[0]) snprintf(buf, len, "none");
}

/* A GID as sysfs writes it: eight groups of four hex digits. */
static bool parse_gid(const char *s, uint8_t gid[16]) {
  unsigned g[8];
  if (sscanf(s, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
             &g[6], &g[7]) != 8)
    return false;
  for (int i = 0; i < 8; i++)
    gid[2 * i] = (uint8_t)(g[i] >> 8), gid[2 * i + 1] = (uint8_t)g[i];
  return true;
}

static int check_gid(const char *pdir, const jct_rdma_opts_t *w, uint32_t addr_be, char *err,
                     size_t errlen) {
  char path[600], line[128];
  snprintf(path, sizeof path, "%s/gids/%u", pdir, w->gid_index);
  uint8_t gid[16], want[16] = {[10] = 0xff, [11] = 0xff};
  memcpy(want + 12, &addr_be, 4);
  static const uint8_t zero[16];
  if (!read_line(path, line, sizeof line) || !parse_gid(line, gid))
    return jct__errf(err, errlen, JCT_EINVAL, "gid_index %u: the port has no GID entry %u",
                     w->gid_index, w->gid_index);
  char a[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &addr_be, a, sizeof a);
  if (!memcmp(gid, zero, 16))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "gid_index %u: no GID there (empty entry); the rank's address %s needs "
                     "::ffff:%s",
                     w->gid_index, a, a);
  if (memcmp(gid, want, 16))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "gid_index %u: holds %s, not the rank's address ::ffff:%s (rdma_cm takes "
                     "the GID of the address)",
                     w->gid_index, line, a);
  snprintf(path, sizeof path, "%s/gid_attrs/types/%u", pdir, w->gid_index);
  if (read_line(path, line, sizeof line) && strcmp(line, "RoCE v2"))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "gid_index %u: a %s GID, not RoCE v2 (jctlab's wire format)", w->gid_index,
                     line);
  return 0;
}

#define GID_TABLE_MAX 256 /* rxe: 32 entries; mlx5: 255 */

/* Entry i of the port's GID table: false when there is none; its type
 * ("RoCE v2"; "" when the kernel gives none) into type. */
static bool gid_entry(const char *pdir, uint32_t i, uint8_t gid[16], char *text, size_t tlen,
                      char *type, size_t typelen) {
  char path[600];
  snprintf(path, sizeof path, "%s/gids/%u", pdir, i);
  if (!read_line(path, text, tlen) || !parse_gid(text, gid)) return false;
  snprintf(path, sizeof path, "%s/gid_attrs/types/%u", pdir, i);
  if (!read_line(path, type, typelen)) type[0] = 0;
  return true;
}

int jct__rdma_pick_gid(const char *root, const jct_rdma_opts_t *w, const char *dev, uint32_t port,
                       uint32_t *index, char *gid_text, size_t gid_len, char *err,
                       size_t errlen) {
  char pdir[400], text[128], type[64];
  uint8_t gid[16];
  static const uint8_t zero[16], v4mapped[12] = {[10] = 0xff, [11] = 0xff};
  snprintf(pdir, sizeof pdir, "%s/%s/ports/%u", ROOT(root), dev, port ? port : 1);
  if (w->has_gid_index) {
    uint32_t i = w->gid_index;
    if (!gid_entry(pdir, i, gid, text, sizeof text, type, sizeof type))
      return jct__errf(err, errlen, JCT_EINVAL, "gid_index %u: %s port %u has no GID entry %u", i,
                       dev, port ? port : 1, i);
    if (!memcmp(gid, zero, 16))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "gid_index %u: no GID there on %s port %u (empty entry)", i, dev,
                       port ? port : 1);
    if (type[0] && strcmp(type, "RoCE v2"))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "gid_index %u: %s on %s port %u is a %s GID, not RoCE v2 (jctlab's wire "
                       "format)",
                       i, text, dev, port ? port : 1, type);
    *index = i;
    snprintf(gid_text, gid_len, "%s", text);
    return 0;
  }
  for (uint32_t i = 0; i < GID_TABLE_MAX; i++) {
    if (!gid_entry(pdir, i, gid, text, sizeof text, type, sizeof type)) break;
    if (!memcmp(gid, v4mapped, 12) && !strcmp(type, "RoCE v2")) {
      *index = i;
      snprintf(gid_text, gid_len, "%s", text);
      return 0;
    }
  }
  return jct__errf(err, errlen, JCT_EINVAL,
                   "gid_index: %s port %u has no RoCE v2 GID of an IPv4 address: give one "
                   "(scenario key gid_index, --gid-index)",
                   dev, port ? port : 1);
}

int jct__rdma_gid_netdev(const char *root, const char *dev, uint32_t port, uint32_t index,
                         char *netdev, size_t len, char *err, size_t errlen) {
  char path[400];
  snprintf(path, sizeof path, "%s/%s/ports/%u/gid_attrs/ndevs/%u", ROOT(root), dev,
           port ? port : 1, index);
  if (!read_line(path, netdev, len) || !netdev[0])
    return jct__errf(err, errlen, JCT_EINVAL, "%s port %u GID %u has no network device (%s)", dev,
                     port ? port : 1, index, path);
  return 0;
}

bool jct__rdma_soft_on(const char *root, const char *netdev, char *dev, size_t len) {
  DIR *d = opendir(ROOT(root));
  bool found = false;
  for (struct dirent *e; d && !found && (e = readdir(d));) {
    char path[400], parent[64];
    struct stat st;
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s/device", ROOT(root), e->d_name);
    if (stat(path, &st) == 0) continue; /* a bus device: a NIC of its own */
    snprintf(path, sizeof path, "%s/%s/parent", ROOT(root), e->d_name);
    if (!read_line(path, parent, sizeof parent) || strcmp(parent, netdev)) continue;
    snprintf(dev, len, "%s", e->d_name);
    found = true;
  }
  if (d) closedir(d);
  return found;
}

int jct__rdma_check(const char *root, const jct_rdma_opts_t *w, const char *dev, uint32_t port,
                    uint32_t addr_be, char *err, size_t errlen) {
  char path[600], there[256];
  if (w->device[0]) {
    snprintf(path, sizeof path, "%s/%s", ROOT(root), w->device);
    if (!is_dir(path)) {
      list_dir(ROOT(root), there, sizeof there);
      return jct__errf(err, errlen, JCT_EINVAL, "device '%s': no such RDMA device here (there: %s)",
                       w->device, there);
    }
    if (strcmp(w->device, dev))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "device '%s': the rank's address is on %s (rdma_cm binds by address)",
                       w->device, dev);
  }
  if (w->port) {
    snprintf(path, sizeof path, "%s/%s/ports/%u", ROOT(root), dev, w->port);
    if (!is_dir(path)) {
      snprintf(path, sizeof path, "%s/%s/ports", ROOT(root), dev);
      list_dir(path, there, sizeof there);
      return jct__errf(err, errlen, JCT_EINVAL, "port %u: %s has no such port (its ports: %s)",
                       w->port, dev, there);
    }
    if (w->port != port)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "port %u: the rank's address is on %s port %u (rdma_cm binds by address)",
                       w->port, dev, port);
  }
  char pdir[400];
  snprintf(pdir, sizeof pdir, "%s/%s/ports/%u", ROOT(root), dev, w->port ? w->port : port);
  int rc;
  if (w->has_gid_index && (rc = check_gid(pdir, w, addr_be, err, errlen))) return rc;
  for (uint32_t i = 0; i < w->ncounters; i++) {
    char hw[600], pc[600];
    snprintf(hw, sizeof hw, "%s/hw_counters/%s", pdir, w->counters[i]);
    snprintf(pc, sizeof pc, "%s/counters/%s", pdir, w->counters[i]);
    unsigned long long x;
    char line[64];
    bool ok = (read_line(hw, line, sizeof line) || read_line(pc, line, sizeof line)) &&
              sscanf(line, "%llu", &x) == 1;
    if (!ok)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "counters: %s port %u has no counter '%s' (in hw_counters/ or counters/)",
                       dev, w->port ? w->port : port, w->counters[i]);
  }
  return 0;
}

static void read_dir(const char *dir, jct_dev_counters_t *out) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char p[1024], line[64];
    unsigned long long x;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (read_line(p, line, sizeof line) && sscanf(line, "%llu", &x) == 1)
      jct_dev_counters_add(out, e->d_name, x);
  }
  closedir(d);
}

uint32_t jct__rdma_counters(const char *root, const char *dev, uint32_t port,
                            const jct_rdma_opts_t *want, jct_dev_counters_t *out) {
  memset(out, 0, sizeof *out);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/%s/ports/%u/hw_counters", ROOT(root), dev, port ? port : 1);
  read_dir(dir, out);
  for (uint32_t i = 0; want && i < want->ncounters; i++) {
    const char *name = want->counters[i];
    bool have = false;
    for (uint32_t k = 0; k < out->n && !have; k++)
      have = strcmp(out->c[k].name, name) == 0;
    char p[700], line[64];
    unsigned long long x;
    snprintf(p, sizeof p, "%s/%s/ports/%u/counters/%s", ROOT(root), dev, port ? port : 1, name);
    if (!have && read_line(p, line, sizeof line) && sscanf(line, "%llu", &x) == 1)
      jct_dev_counters_add(out, name, x);
  }
  return out->n;
}

uint32_t jct__rdma_counters_lifespan_ms(const char *root, const char *dev, uint32_t port) {
  char p[600], line[64];
  unsigned long ms = 0;
  snprintf(p, sizeof p, "%s/%s/ports/%u/hw_counters/lifespan", ROOT(root), dev, port ? port : 1);
  if (!read_line(p, line, sizeof line) || sscanf(line, "%lu", &ms) != 1 || ms > 60000) return 0;
  return (uint32_t)ms;
}

void jct__rdma_counters_delta(const jct_dev_counters_t *before, const jct_dev_counters_t *after,
                              jct_dev_counters_t *out) {
  memset(out, 0, sizeof *out);
  for (uint32_t i = 0; i < after->n; i++) {
    uint64_t b = jct_dev_counters_get(before, after->c[i].name);
    jct_dev_counters_add(out, after->c[i].name, after->c[i].value > b ? after->c[i].value - b : 0);
  }
}

void jct__rdma_counters_pick(const jct_dev_counters_t *in, const jct_rdma_opts_t *want,
                             jct_dev_counters_t *out) {
  if (!want || !want->ncounters) {
    if (out != in) *out = *in;
    return;
  }
  jct_dev_counters_t o = {0};
  for (uint32_t i = 0; i < want->ncounters; i++)
    for (uint32_t k = 0; k < in->n; k++)
      if (!strcmp(in->c[k].name, want->counters[i])) jct_dev_counters_add(&o, want->counters[i], in->c[k].value);
  *out = o;
}

const char *jct_rdma_opts_first(const jct_rdma_opts_t *r) {
  if (r->device[0]) return "device";
  if (r->port) return "port";
  if (r->has_gid_index) return "gid_index";
  if (r->has_traffic_class) return "traffic_class";
  if (r->ncounters) return "counters";
  return NULL;
}

/* A name sysfs could hold, and no path: [A-Za-z0-9_.-], not "." or "..". */
static bool good_name(const char *s, size_t len) {
  if (!len || (len <= 2 && s[0] == '.' && s[len - 1] == '.')) return false;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '_' || ch == '-' || ch == '.'))
      return false;
  }
  return true;
}

int jct__rdma_set_device(jct_rdma_opts_t *r, const char *name, char *err, size_t errlen) {
  size_t len = strlen(name);
  if (len >= sizeof r->device || !good_name(name, len))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "device '%.80s' is not an RDMA device's name (rxe0, mlx5_0)", name);
  memcpy(r->device, name, len + 1);
  return 0;
}

int jct__rdma_add_counters(jct_rdma_opts_t *r, const char *list, char *err, size_t errlen) {
  if (!*list) return jct__errf(err, errlen, JCT_EINVAL, "counters: an empty list");
  for (const char *p = list;;) {
    size_t len = strcspn(p, ",");
    if (len >= sizeof r->counters[0] || !good_name(p, len))
      return jct__errf(err, errlen, JCT_EINVAL,
                       "counters: '%.*s' is not a counter's name (np_cnp_sent, rcvd_seq_err)",
                       (int)(len > 80 ? 80 : len), p);
    if (r->ncounters == JCT_RDMA_MAX_COUNTERS)
      return jct__errf(err, errlen, JCT_EINVAL, "counters: '%.*s': at most %u counters",
                       (int)(len > 80 ? 80 : len), p, JCT_RDMA_MAX_COUNTERS);
    memcpy(r->counters[r->ncounters], p, len);
    r->counters[r->ncounters++][len] = 0;
    if (!p[len]) break;
    p += len + 1;
  }
  return 0;
}
