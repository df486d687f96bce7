/* The agent's soft-RoCE device: `rdma link add NAME type rxe netdev IF`
 * as the RDMA netlink request it is (libmnl), and waiting for its port to
 * come up (agent_nic.h). */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_nic.h"
#include "common/errf.h"
#include "jctlab/error.h"

int jct__agent_rxe_add(const char *name, const char *netdev, char *err, size_t errlen) {
  char path[128];
  snprintf(path, sizeof path, "/sys/class/infiniband/%s", name);
  if (access(path, F_OK) == 0) return 0;
  struct mnl_socket *nl = mnl_socket_open(NETLINK_RDMA);
  if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    if (nl) mnl_socket_close(nl);
    return jct__errf(err, errlen, JCT_EIO, "RDMA netlink: %s (is ib_core loaded?)",
                     strerror(errno));
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_NEWLINK);
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = (uint32_t)time(NULL);
  mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name);
  mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_LINK_TYPE, "rxe");
  mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
  int rc = 0;
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
    rc = jct__errf(err, errlen, JCT_EIO, "rdma link add: %s", strerror(errno));
  } else {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0 ||
        mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(nl), NULL, NULL) < 0)
      rc = jct__errf(err, errlen, JCT_EIO, "rdma link add %s type rxe netdev %s: %s", name, netdev,
                     strerror(errno));
  }
  mnl_socket_close(nl);
  return rc;
}

int jct__agent_rxe_wait_active(const char *name, char *err, size_t errlen) {
  char path[128], state[64] = "";
  snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/state", name);
  for (int i = 0; i < 500; i++) {
    FILE *f = fopen(path, "r");
    if (f) {
      if (!fgets(state, sizeof state, f)) state[0] = '\0';
      fclose(f);
      if (strstr(state, "ACTIVE")) return 0;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  return jct__errf(err, errlen, JCT_EIO, "%s did not become ACTIVE (state: %s)", name, state);
}
