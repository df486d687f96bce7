/* A flap's link at an agent's own host (internal to the harness: `jctlab agent`'s,
 * and `jctlab rank`'s tasks'): the
 * agent's RoCE netdev set down and up over netlink (RTM_NEWLINK, IFF_UP
 * cleared and set, as `ip link set IF down|up` does), the host's side of
 * `flap down=T every=T at=host:RANK` on real hosts (--agents).
 *
 * A link an agent took down must not stay down when the agent dies, however
 * it dies (SIGKILL included): making one hands the agent's guard
 * (agent_guard.h, one process per agent) the request that sets it up, and
 * freeing it has the guard forget it. What setting a link down takes with
 * it stays the kernel's: IPv4 prefix routes come back with the link, routes
 * added by hand through it do not, neighbours are learnt again.
 *
 * Where a soft RoCE device sits on the netdev (rxe, siw: rdma_sysfs.h's
 * jct__rdma_soft_on), the link is cut under it instead (hostcut.h: every
 * frame lost both ways, the netdev left up with its routes), as a pulled
 * cable: set down, its routes would go, and rxe takes a send it cannot
 * route for a local error and puts the QP in error (measured under
 * `jctlab rank` on two lab VMs: the first flap ended the job). The cut's
 * tcx links go with the process, so no guard is needed for it.
 */
#ifndef JCT_AGENT_LINK_H
#define JCT_AGENT_LINK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct jct__agent_link jct__agent_link_t;

/* netdev, found, and the guard told to set it up if the agent dies (or,
 * a soft RoCE device's netdev, the cut's program loaded; a line on stderr
 * says so). Errors: JCT_EINVAL (no such device), JCT_EIO (no guard: pipe,
 * fork; the kernel refused the cut's program), JCT_ENOMEM; err says which. */
int jct__agent_link_new(jct__agent_link_t **out, const char *netdev, char *err, size_t errlen);

/* Set the link up or down (cut or mended) now. Returns 0 or JCT_EIO
 * (err: the kernel's answer). */
int jct__agent_link_set(jct__agent_link_t *l, bool up, char *err, size_t errlen);

/* Whether the kernel says the link is administratively up (IFF_UP). */
bool jct__agent_link_is_up(const char *netdev);

/* The interface whose address the connected socket fd's local end has
 * (the agent's control connection), into ifname; false when fd is not an
 * IP socket or no interface holds the address. */
bool jct__agent_link_socket_if(int fd, char *ifname, size_t len);

/* The link up, and the guard told to forget it. NULL is fine. */
void jct__agent_link_free(jct__agent_link_t *l);

#endif
