/* Batched rtnetlink requests over libmnl: the topology's links
 * (harness/fabric/topo_link.c), the verbs agent's qdisc, bench/fabric's
 * bridge.
 *
 * A jct__nl_t is one NETLINK_ROUTE socket, bound to the network namespace
 * the calling thread was in when it was opened (a socket stays in the
 * namespace it was created in, whatever setns() does later), and a batch
 * buffer. Requests are built in the buffer with libmnl and sent together;
 * every request carries NLM_F_ACK and flush waits for every
 * acknowledgement, so no failure goes unseen. The first failure is reported
 * with the label its request was given, the kernel's errno text and the
 * kernel's extended-ACK message when it sends one ("rank 3: add address
 * 198.18.0.4/15 on eth0: File exists (EEXIST)").
 *
 * A batch holds at most JCT__NL_BATCH_MSGS requests: each ACK costs the
 * receiver about a kilobyte of socket buffer, and the default
 * net.core.rmem_max (212992 bytes) must hold a whole batch of them.
 */
#ifndef JCT_HARNESS_NETLINK_H
#define JCT_HARNESS_NETLINK_H

#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define JCT__NL_BATCH_MSGS 128
#define JCT__NL_MSG_MAX 512 /* room every request may use in the batch buffer */
#define JCT__NL_LABEL_MAX 96

typedef struct jct__nl jct__nl_t;

/* Open a NETLINK_ROUTE socket in the calling thread's network namespace.
 * Errors: JCT_EIO (socket, bind), JCT_ENOMEM. */
int jct__nl_open(jct__nl_t **nl, char *err, size_t errlen);

/* Close the socket and drop any requests not yet flushed. NULL is fine. */
void jct__nl_close(jct__nl_t *nl);

/* Start a request of the given type (RTM_*) and flags (NLM_F_REQUEST and
 * NLM_F_ACK are added) in the batch; *nlh is where to add the family header
 * and attributes, within JCT__NL_MSG_MAX bytes. label (printf format) names
 * the request in error messages. Flushes the batch first when it is full,
 * so it can fail as jct__nl_flush does. */
int jct__nl_begin(jct__nl_t *nl, struct nlmsghdr **nlh, uint16_t type, uint16_t flags, char *err,
                  size_t errlen, const char *label, ...) __attribute__((format(printf, 7, 8)));

/* Send every request in the batch and wait for all their ACKs. Returns 0,
 * or JCT_EIO with the first failed request's label and the kernel's reason
 * in err. The batch is empty afterwards either way. */
int jct__nl_flush(jct__nl_t *nl, char *err, size_t errlen);

/* One traffic-control dump: a request of type (RTM_GETQDISC,
 * RTM_GETTFILTER, ...) with NLM_F_DUMP and tcm as its family header, on a
 * socket of its own in the calling thread's network namespace; cb (libmnl's
 * mnl_cb_t) is called with data on each message of the reply until the
 * kernel's NLMSG_DONE or cb stops it (MNL_CB_STOP). Returns 0, or a
 * negative errno: the socket's, the kernel's (-EINVAL or -ENOENT: no such
 * device or hook), -ENOMEM, or the one cb set when it returned MNL_CB_ERROR.
 * Source: rtnetlink(7), "Dumping". */
int jct__nl_dump_tc(uint16_t type, const struct tcmsg *tcm,
                    int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);

/* "Operation not permitted (EPERM)" for errno e, in buf. Returns buf. */
const char *jct__errno_text(int e, char *buf, size_t buflen);

#endif
