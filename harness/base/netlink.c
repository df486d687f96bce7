/* Batched rtnetlink requests with one ACK each (see netlink.h).
 *
 * Sources: netlink(7) and rtnetlink(7) for the message and ACK formats;
 * linux/netlink.h for extended ACKs (NETLINK_EXT_ACK: the kernel appends
 * an NLMSGERR_ATTR_MSG string to a failure; NETLINK_CAP_ACK: it does not
 * echo the failed request's payload back). The kernel handles the messages
 * of one sendmsg() in order and ACKs each, including after a failure.
 */
#include "netlink.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include "jctlab/error.h"

struct jct__nl {
  struct mnl_socket *sock;
  uint32_t portid;
  uint32_t seq;       /* sequence number of the next request */
  uint32_t first_seq; /* of the first request in the batch */
  size_t count;       /* requests in the batch, request i at buf + i * JCT__NL_MSG_MAX */
  char buf[JCT__NL_BATCH_MSGS * JCT__NL_MSG_MAX];
  char label[JCT__NL_BATCH_MSGS][JCT__NL_LABEL_MAX];
};

int jct__nl_dump_tc(uint16_t type, const struct tcmsg *tcm,
                    int (*cb)(const struct nlmsghdr *nlh, void *data), void *data) {
  struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    int e = errno;
    if (nl) mnl_socket_close(nl);
    return -e;
  }
  char *buf = malloc((size_t)MNL_SOCKET_BUFFER_SIZE);
  if (!buf) {
    mnl_socket_close(nl);
    return -ENOMEM;
  }
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = (uint32_t)time(NULL);
  memcpy(mnl_nlmsg_put_extra_header(nlh, sizeof *tcm), tcm, sizeof *tcm);
  unsigned portid = mnl_socket_get_portid(nl), seq = nlh->nlmsg_seq;
  int rc = 0;
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
    rc = -errno;
  } else {
    ssize_t n;
    while ((n = mnl_socket_recvfrom(nl, buf, (size_t)MNL_SOCKET_BUFFER_SIZE)) > 0) {
      int r = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
      if (r <= MNL_CB_STOP) {
        rc = r < 0 ? -errno : 0;
        break;
      }
    }
    if (n < 0) rc = -errno;
  }
  free(buf);
  mnl_socket_close(nl);
  return rc;
}

const char *jct__errno_text(int e, char *buf, size_t buflen) {
  const char *name = strerrorname_np(e);
  snprintf(buf, buflen, "%s (%s)", strerror(e), name ? name : "?");
  return buf;
}

int jct__nl_open(jct__nl_t **out, char *err, size_t errlen) {
  char et[96];
  *out = NULL;
  jct__nl_t *nl = calloc(1, sizeof *nl);
  if (!nl) {
    snprintf(err, errlen, "netlink: out of memory");
    return JCT_ENOMEM;
  }
  nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!nl->sock) {
    snprintf(err, errlen, "netlink: cannot open a NETLINK_ROUTE socket: %s",
             jct__errno_text(errno, et, sizeof et));
    free(nl);
    return JCT_EIO;
  }
  int one = 1;
  /* Both are best effort: kernels without them still ACK, more tersely. */
  (void)mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof one);
  (void)mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof one);
  int rcvbuf_bytes = 1 << 20; /* capped by net.core.rmem_max; a batch needs less */
  (void)setsockopt(mnl_socket_get_fd(nl->sock), SOL_SOCKET, SO_RCVBUF, &rcvbuf_bytes,
                   sizeof rcvbuf_bytes);
  if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
    snprintf(err, errlen, "netlink: cannot bind: %s", jct__errno_text(errno, et, sizeof et));
    mnl_socket_close(nl->sock);
    free(nl);
    return JCT_EIO;
  }
  nl->portid = mnl_socket_get_portid(nl->sock);
  nl->seq = 1;
  *out = nl;
  return 0;
}

void jct__nl_close(jct__nl_t *nl) {
  if (!nl) return;
  mnl_socket_close(nl->sock);
  free(nl);
}

int jct__nl_begin(jct__nl_t *nl, struct nlmsghdr **out, uint16_t type, uint16_t flags, char *err,
                  size_t errlen, const char *label, ...) {
  if (nl->count == JCT__NL_BATCH_MSGS) {
    int rc = jct__nl_flush(nl, err, errlen);
    if (rc < 0) return rc;
  }
  if (nl->count == 0) nl->first_seq = nl->seq;
  va_list ap;
  va_start(ap, label);
  vsnprintf(nl->label[nl->count], JCT__NL_LABEL_MAX, label, ap);
  va_end(ap);

  /* Every slot is JCT__NL_MSG_MAX bytes from the previous end, so a
   * request never overruns the buffer whatever its predecessors used. */
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->buf + nl->count * JCT__NL_MSG_MAX);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
  nlh->nlmsg_seq = nl->seq++;
  nl->count++;
  *out = nlh;
  return 0;
}

/* The extended ACK's message string, if the kernel sent one. */
static int extack_cb(const struct nlattr *attr, void *data) {
  if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
      mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
    *(const char **)data = mnl_attr_get_str(attr);
  return MNL_CB_OK;
}

static const char *extack_msg(const struct nlmsghdr *nlh) {
  if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS)) return NULL;
  const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
  size_t off = sizeof *e;
  if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
  if (mnl_nlmsg_get_payload_len(nlh) < off) return NULL;
  const char *msg = NULL;
  mnl_attr_parse(nlh, (unsigned)off, extack_cb, &msg);
  return msg;
}

int jct__nl_flush(jct__nl_t *nl, char *err, size_t errlen) {
  char et[96];
  if (nl->count == 0) return 0;
  /* Close up the slots: requests go out back to back. */
  size_t out = 0;
  for (size_t i = 0; i < nl->count; i++) {
    struct nlmsghdr *nlh = (struct nlmsghdr *)(void *)(nl->buf + i * JCT__NL_MSG_MAX);
    size_t n = NLMSG_ALIGN(nlh->nlmsg_len);
    if (n > JCT__NL_MSG_MAX) abort(); /* a request overran its slot: a bug in the caller */
    if (out != i * JCT__NL_MSG_MAX) memmove(nl->buf + out, nlh, n);
    out += n;
  }
  size_t count = nl->count;
  uint32_t first = nl->first_seq;
  nl->count = 0;

  if (mnl_socket_sendto(nl->sock, nl->buf, out) < 0) {
    snprintf(err, errlen, "%s: netlink send failed: %s", nl->label[0],
             jct__errno_text(errno, et, sizeof et));
    return JCT_EIO;
  }
  int rc = 0;
  size_t acked = 0;
  char rbuf[16384] __attribute__((aligned(8)));
  while (acked < count) {
    ssize_t n = mnl_socket_recvfrom(nl->sock, rbuf, sizeof rbuf);
    if (n < 0) {
      if (errno == EINTR) continue;
      snprintf(err, errlen, "netlink: waiting for %zu ACKs after \"%s\": %s", count - acked,
               nl->label[0], jct__errno_text(errno, et, sizeof et));
      return JCT_EIO;
    }
    int len = (int)n;
    for (const struct nlmsghdr *h = (const struct nlmsghdr *)(void *)rbuf; mnl_nlmsg_ok(h, len);
         h = mnl_nlmsg_next(h, &len)) {
      if (h->nlmsg_pid != nl->portid || h->nlmsg_type != NLMSG_ERROR) continue;
      uint32_t idx = h->nlmsg_seq - first;
      if (idx >= count) continue;
      acked++;
      const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
      if (e->error == 0 || rc < 0) continue;
      const char *msg = extack_msg(h);
      snprintf(err, errlen, "%s: %s%s%s%s", nl->label[idx],
               jct__errno_text(-e->error, et, sizeof et), msg ? " (kernel: " : "", msg ? msg : "",
               msg ? ")" : "");
      rc = JCT_EIO;
    }
  }
  return rc;
}
