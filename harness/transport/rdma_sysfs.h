/* An RDMA device as Linux shows it in sysfs (internal to the harness):
 * what the verbs agents check a scenario's RDMA settings against
 * (jct_rdma_opts_t, include/jctlab/run.h) and where they read the device's
 * counters. No rdma-core here: it builds and is tested without it.
 *
 * Source: Linux's ib_core sysfs (Documentation/ABI/stable/sysfs-class-
 * infiniband): /sys/class/infiniband/DEV/ports/PORT/ holds gids/N (the GID
 * table, "0000:...:0000" where empty), gid_attrs/types/N ("RoCE v2",
 * "IB/RoCE v1"), counters/ (the port's PMA counters, mlx5's and others')
 * and hw_counters/ (the driver's: rxe's rxe_hw_counters.c, mlx5's
 * mlx5_ib counters such as out_of_sequence, np_cnp_sent). A RoCE v2 GID of
 * an IPv4 address is the IPv4-mapped IPv6 address ::ffff:a.b.c.d (IBA vol.
 * 1 annex A17.4.5.1).
 *
 * root: NULL is /sys/class/infiniband; tests give a directory of their own
 * laid out the same way (a fake device).
 */
#ifndef JCT_RDMA_SYSFS_H
#define JCT_RDMA_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/dev_counters.h"
#include "jctlab/rdma.h"

/* Check want against the device dev and port (1..) rdma_cm bound the
 * rank's address addr_be (IPv4, network order) to: device (it exists, and
 * is dev), port (one of the device's, and is port), gid_index (the entry
 * exists, holds addr_be's RoCE v2 GID), counters (each a file of the
 * port's hw_counters/ or counters/). Returns 0 or JCT_EINVAL with err
 * naming the setting and the bad word, one line. */
int jct__rdma_check(const char *root, const jct_rdma_opts_t *want, const char *dev, uint32_t port,
                    uint32_t addr_be, char *err, size_t errlen);

/* By hand (`jctlab rank`, no rdma_cm): the source GID index the QPs of
 * dev's port (1..) use. With want->gid_index, that entry, which must hold
 * a GID (not the empty one) of type RoCE v2; without, the first entry
 * holding a RoCE v2 GID of an IPv4 address (::ffff:a.b.c.d, IBA vol. 1
 * annex A17.4.5.1), as rdma_cm would bind an IPv4 address. The GID's
 * text (as sysfs writes it) into gid_text[gid_len]. Returns 0 or
 * JCT_EINVAL with err naming gid_index and the bad entry, one line. */
int jct__rdma_pick_gid(const char *root, const jct_rdma_opts_t *want, const char *dev,
                       uint32_t port, uint32_t *index, char *gid_text, size_t gid_len, char *err,
                       size_t errlen);

/* The network device whose traffic GID entry index of dev's port (1..)
 * goes out by (gid_attrs/ndevs/INDEX: rxe's netdev, a RoCE NIC's own
 * interface), into netdev[len]: where the host's injectors of `jctlab
 * rank` act. Returns 0 or JCT_EINVAL (err: the entry has no netdev). */
int jct__rdma_gid_netdev(const char *root, const char *dev, uint32_t port, uint32_t index,
                         char *netdev, size_t len, char *err, size_t errlen);

/* Whether a soft RDMA device (rxe, siw: a virtual device, no DEV/device
 * entry, its RoCE packets crossing the kernel's network stack) sits on
 * netdev (its DEV/parent, as Linux rxe writes it); its name into
 * dev[len]. */
bool jct__rdma_soft_on(const char *root, const char *netdev, char *dev, size_t len);

/* The port's counters now: every file of hw_counters/, and each of
 * want's counters that is not there from counters/ (want NULL: none).
 * Returns how many were read (0: none there). */
uint32_t jct__rdma_counters(const char *root, const char *dev, uint32_t port,
                            const jct_rdma_opts_t *want, jct_dev_counters_t *out);

/* The port's hw_counters/lifespan (ms): ib_core serves hw_counters from a
 * copy it refreshes only when older than that (drivers/infiniband/core/
 * sysfs.c, update_hw_stats; rxe and mlx5: RDMA_HW_STATS_DEFAULT_LIFESPAN,
 * 10 ms), shared by every reader of the port: a read may give the port's
 * counts as they were up to lifespan earlier. 0 when the file is absent. */
uint32_t jct__rdma_counters_lifespan_ms(const char *root, const char *dev, uint32_t port);

/* after - before, counter by counter, for every counter of after (one
 * that went back, as a device reset does: 0). */
void jct__rdma_counters_delta(const jct_dev_counters_t *before, const jct_dev_counters_t *after,
                              jct_dev_counters_t *out);
/* in's counters that want names, in want's order (want without counters:
 * all of in); a named counter in lacks is left out. */
void jct__rdma_counters_pick(const jct_dev_counters_t *in, const jct_rdma_opts_t *want,
                             jct_dev_counters_t *out);

/* Settings as words (a scenario's keys, run's options), checked for form
 * only (a device's name, a counter's: letters, digits, '_', '-', '.', no
 * path): jct__rdma_set_device(r, "mlx5_0"), jct__rdma_add_counters(r,
 * "np_cnp_sent,rp_cnp_handled") (comma-separated, appended; at most
 * JCT_RDMA_MAX_COUNTERS). Return 0 or JCT_EINVAL, err naming the word. */
int jct__rdma_set_device(jct_rdma_opts_t *r, const char *name, char *err, size_t errlen);
int jct__rdma_add_counters(jct_rdma_opts_t *r, const char *list, char *err, size_t errlen);

#endif
