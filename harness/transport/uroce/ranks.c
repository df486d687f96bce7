/* The ranks of a run over the uroce transport (ranks.h). */
#include <errno.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errf.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "ranks.h"

#define SOCKET_BUFFER_BYTES (4 << 20)
#define RECV_BATCH 32
#define WIRE_OVERHEAD_BYTES (8 + 20 + 14 + 24)
#define CATCH_UP_PACKETS 1 /* a late loop may send this many back to back (service()) */
#define IP_TTL_VALUE 64
#define ECN_ECT0 2

typedef struct rank rank_t;

typedef struct {
  jct__ranks_t *R;
  uint32_t rank, conn;
  bool is_src;
  jct_uroce_qp_t *qp;
  int fd; /* the socket it sends from: its rank's, or its source port's */
  struct sockaddr_storage peer;
  socklen_t peerlen;
  uint64_t fired_in; /* the rank's service() that last fired its QP's timer */
} endpoint_t;

struct rank {
  jct__ranks_t *R;
  uint32_t index;
  int fd;
  pcap_t *pfc;
  uint32_t *eps; /* endpoint indices */
  uint32_t neps, rr;
  uint16_t *sport; /* per_qp_sport: the source ports' sockets, nsports of them */
  int *sport_fd;
  uint32_t nsports;
  uint64_t next_tx_ns, paused_until_ns;
  uint64_t qp_now_ns; /* the latest time handed to its QPs (qp_time) */
  uint64_t paused_ns; /* PFC pause time, each pause counted to its (latest) end */
  /* The NIC's transmit queue (opts.nic_queue_pkts > 0): packets the QPs
   * handed over and the link has not sent yet, oldest first. */
  uint8_t (*q)[JCT_UROCE_MAX_PACKET_BYTES];
  uint32_t *q_len, *q_ep;
  uint32_t q_head, q_count;
  jct_timer_t timer;
  uint64_t services; /* service() calls, to tell one from the next */
  bool dirty;
  bool idle; /* the link ran out of packets: its next one goes from then, with no catch-up */
};

typedef struct {
  size_t open;
  uv_poll_t h[];
} polls_t;

struct jct_ranks {
  jct__ranks_opts_t opts;
  uv_loop_t *loop;
  jct_clock_t *clock;
  const jct_topo_t *topo;
  const jct_schedule_t *s;
  rank_t *ranks;
  endpoint_t *eps; /* 2 per connection: source end at 2c, destination end at 2c + 1 */
  uint32_t *ep_storage;
  polls_t *polls;
  jct_exec_t *exec;
  uint64_t send_failures;
  uint64_t link_down_sends; /* refused because the rank's link was down (a host flap) */
  int failed;
  bool busy_added;
  char why[256];
  uint8_t buf[RECV_BATCH][JCT_UROCE_MAX_PACKET_BYTES];
  uint8_t tx[JCT_UROCE_MAX_PACKET_BYTES];
};

static void fail(jct__ranks_t *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(jct__ranks_t *R, const char *fmt, ...) {
  if (R->failed) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(R->why, sizeof R->why, fmt, ap);
  va_end(ap);
  R->failed = JCT_EIO;
}

static uint64_t wire_ns(const jct__ranks_t *R, size_t len) {
  return ((uint64_t)(len + WIRE_OVERHEAD_BYTES) * 8u * 1000000000u) / R->opts.rate_bps;
}

static void on_rank_timer(jct_timer_t *t, uint64_t now_ns);

/* The next packet of the rank's QPs, round robin, into buf; 0 when none
 * has one. *ep says whose. */
static size_t next_packet(rank_t *k, uint64_t now, uint8_t *buf, endpoint_t **ep) {
  jct__ranks_t *R = k->R;
  for (uint32_t j = 0; j < k->neps; j++) {
    *ep = &R->eps[k->eps[(k->rr + j) % k->neps]];
    size_t len = jct_uroce_next_packet((*ep)->qp, now, buf, JCT_UROCE_MAX_PACKET_BYTES);
    if (len) {
      k->rr = (k->rr + j + 1) % k->neps;
      return len;
    }
  }
  return 0;
}

/* A CNP leaves at the CNP DSCP (IP_TOS for this datagram only), the rest
 * with the socket's TOS. */
static ssize_t send_pkt(rank_t *k, endpoint_t *ep, const uint8_t *pkt, size_t len) {
  if (!(len && pkt[0] == JCT_OP_CNP && k->R->opts.cnp_dscp))
    return sendto(ep->fd, pkt, len, 0, (struct sockaddr *)&ep->peer, ep->peerlen);
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct iovec iov = {(void *)pkt, len};
  struct msghdr m = {.msg_name = &ep->peer,
                     .msg_namelen = ep->peerlen,
                     .msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = u.buf,
                     .msg_controllen = sizeof u.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = IPPROTO_IP;
  c->cmsg_type = IP_TOS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int tos = k->R->opts.cnp_dscp << 2;
  memcpy(CMSG_DATA(c), &tos, sizeof tos);
  return sendmsg(ep->fd, &m, 0);
}

/* With a transmit queue, the QPs hand over packets as soon as there is
 * room, whatever the link's pace, as rxe hands skbs to the kernel: what is
 * queued goes out even after a NAK rewinds its QP. */
static void fill_queue(rank_t *k, uint64_t now) {
  jct__ranks_t *R = k->R;
  uint32_t cap = R->opts.nic_queue_pkts;
  while (k->q_count < cap) {
    uint32_t slot = (k->q_head + k->q_count) % cap;
    endpoint_t *ep;
    size_t len = next_packet(k, now, k->q[slot], &ep);
    if (!len) break;
    k->q_len[slot] = (uint32_t)len;
    k->q_ep[slot] = (uint32_t)(ep - R->eps);
    k->q_count++;
  }
}

/* The time to hand the rank's QPs for an event due at t: t itself, the
 * time the NIC acts, not the late loop's now; but never before what they
 * were last handed (a datagram read at the loop's now before a late
 * service(), the start of the catch-up), so that no QP sees its time go
 * back. */
static uint64_t qp_time(rank_t *k, uint64_t t) {
  if (t < k->qp_now_ns) t = k->qp_now_ns;
  return k->qp_now_ns = t;
}

/* The packet of the send slot at k->next_tx_ns, made (or taken from the
 * NIC's queue) at time t; false when the link has none. */
static bool send_slot(rank_t *k, uint64_t t) {
  jct__ranks_t *R = k->R;
  uint32_t cap = R->opts.nic_queue_pkts;
  size_t len = 0;
  endpoint_t *ep = NULL;
  const uint8_t *pkt = R->tx;
  if (cap) {
    fill_queue(k, t);
    if (!k->q_count) return false;
    pkt = k->q[k->q_head];
    len = k->q_len[k->q_head];
    ep = &R->eps[k->q_ep[k->q_head]];
    k->q_head = (k->q_head + 1) % cap;
    k->q_count--;
  } else if (!(len = next_packet(k, t, R->tx, &ep))) {
    return false;
  }
  if (send_pkt(k, ep, pkt, len) != (ssize_t)len) {
    /* A link set down (flap at=host) loses what the rank sends, as a
     * pulled cable does: the network's loss, not the harness's. */
    if (errno == ENETDOWN || errno == ENETUNREACH)
      R->link_down_sends++;
    else
      R->send_failures++;
  } else
    jct_clock_flight(R->clock, 1); /* until the switch reads it (clock.h) */
  k->next_tx_ns += wire_ns(R, len);
  if (cap) fill_queue(k, t); /* the room it left is taken at once */
  return true;
}

/* What fell due by now, in time order, as the NIC would have done it: the
 * link's send slots (one packet each, round robin over the rank's QPs, at
 * the NIC's pace) and the QPs' deadlines (retransmit timer, go-back-N,
 * NAK delay, end of a pause or a stall, the rate limiter's slot), each
 * handed to the QPs at its own time (qp_time; no earlier than the catch-up
 * slack allows, below). A loop that wakes late past
 * a slot and a later deadline sends the slot's packet first: firing the
 * timer first would put its go-back-N's PSN on the wire in the slot, and
 * lose the ACK the packet would have drawn. A slot and a deadline at the
 * same time: the slot first, as rxe, whose retransmit timer only flags the
 * QP for its completer task (rxe_comp.c retransmit_timer), so the packet
 * the link was taking goes. Then sleep until the next slot or deadline. */
static void service(rank_t *k, uint64_t now) {
  jct__ranks_t *R = k->R;
  k->dirty = false;
  /* A late loop may catch up one packet of the path MTU (a valid run's p99
   * lateness is under one); an idle link nothing (a NIC earns no credit
   * while it has nothing to send). Each packet caught up arrives at the
   * switch behind the last and stands in its egress queue for as long as
   * the link stays busy (equal rates never drain it), so every go-back-N
   * starts that much deeper: 4 packets of 4 KiB, as before, were 16 of
   * 1 KiB after each idle time, 2 ms at the shipped capture's rate. Later
   * than that, the NIC lost the time between: its next slot is now -
   * slack, after the deadlines of the time it lost, which its QPs see
   * then too (a go-back-N re-arms its timer from there, so a loop that
   * slept through a timeout does not count a retry for each against ACKs
   * its socket holds unread). */
  uint64_t slack = CATCH_UP_PACKETS * jct_uroce_full_packet_wire_bytes(R->opts.path_mtu_bytes) *
                   8u * 1000000000u / R->opts.rate_bps;
  qp_time(k, now > slack ? now - slack : 0);
  if (k->idle && k->next_tx_ns < now) k->next_tx_ns = now;
  k->idle = false;
  if (k->next_tx_ns + slack < now) k->next_tx_ns = now - slack;
  uint32_t cap = R->opts.nic_queue_pkts;
  /* A paused priority stops the queue too (the QPs check the pause
   * themselves before they hand over a packet). */
  if (cap && k->paused_until_ns > k->next_tx_ns) k->next_tx_ns = k->paused_until_ns;
  k->services++;
  for (;;) {
    endpoint_t *ep = NULL;
    uint64_t d = UINT64_MAX;
    for (uint32_t i = 0; i < k->neps; i++) {
      uint64_t di = jct_uroce_next_deadline_ns(R->eps[k->eps[i]].qp);
      if (di < d) d = di, ep = &R->eps[k->eps[i]];
    }
    if (!k->idle && k->next_tx_ns <= now && k->next_tx_ns <= d) {
      if (!send_slot(k, qp_time(k, k->next_tx_ns))) k->idle = true;
      continue;
    }
    /* A QP's timer fires once a call: due again by now (a timeout shorter
     * than the slack), it waits for the loop's next turn, which may first
     * read what the rank's socket holds (the ACKs a NIC would have seen). */
    if (d > now || ep->fired_in == k->services) break;
    ep->fired_in = k->services;
    uint64_t t = qp_time(k, d);
    jct_uroce_on_timer(ep->qp, t);
    if (k->idle) { /* what the timer made goes from then on, as after a post */
      k->idle = false;
      if (k->next_tx_ns < t) k->next_tx_ns = t;
      if (cap && k->paused_until_ns > k->next_tx_ns) k->next_tx_ns = k->paused_until_ns;
    }
    if (cap) fill_queue(k, t);
  }
  if (cap) fill_queue(k, now);
  uint64_t due = (cap ? k->q_count > 0 : !k->idle) ? k->next_tx_ns : UINT64_MAX;
  for (uint32_t i = 0; i < k->neps; i++) {
    uint64_t d = jct_uroce_next_deadline_ns(R->eps[k->eps[i]].qp);
    if (d < due) due = d;
  }
  if (due == UINT64_MAX)
    jct_timer_stop(R->clock, &k->timer);
  else if (!jct_timer_active(&k->timer) || k->timer.due_ns != due)
    jct_timer_start(R->clock, &k->timer, due, on_rank_timer);
}

static void on_rank_timer(jct_timer_t *t, uint64_t now_ns) {
  rank_t *k = t->data;
  service(k, now_ns);
  jct__ranks_kick(k->R);
}

void jct__ranks_kick(jct__ranks_t *R) {
  uint64_t now = jct_now_ns();
  for (uint32_t i = 0; i < R->s->nranks; i++)
    if (R->ranks[i].dirty) service(&R->ranks[i], now);
}

static void on_qp_event(jct_uroce_qp_t *qp, const jct_uroce_event_t *ev) {
  endpoint_t *ep = jct_uroce_data(qp);
  jct__ranks_t *R = ep->R;
  if (ev->type == JCT_UROCE_EV_SEND_DONE) {
    if (ev->status != JCT_UROCE_WC_SUCCESS)
      fail(R, "rank %u, connection %u: retry count exceeded (RETRY_EXC) after %u retries", ep->rank,
           ep->conn, R->opts.retry_cnt);
    else if (ep->is_src && R->exec && /* a message, not a CTS: program-order deps wait for it */
             jct_exec_on_sent(R->exec, ep->conn, (uint32_t)ev->wr_id, ev->time_ns))
      fail(R, "connection %u: message %u completed out of order", ep->conn, (uint32_t)ev->wr_id);
    return;
  }
  if (!R->exec) return;
  int rc = ep->is_src ? jct_exec_on_cts(R->exec, ep->conn, ev->time_ns)
                      : jct_exec_on_recv(R->exec, ep->conn, ev->imm, ev->time_ns);
  if (rc) fail(R, "connection %u: message %u arrived out of order", ep->conn, ev->imm);
}

static int post_cts(jct_exec_t *e, uint32_t conn) {
  jct__ranks_t *R = jct_exec_data(e);
  endpoint_t *ep = &R->eps[2 * conn + 1];
  if (!ep->qp) return 0; /* another process's rank posts it */
  R->ranks[ep->rank].dirty = true;
  return jct_uroce_post_cts(ep->qp, conn, NULL, 0);
}

static int post_send(jct_exec_t *e, uint32_t conn, uint32_t op, uint64_t bytes) {
  jct__ranks_t *R = jct_exec_data(e);
  endpoint_t *ep = &R->eps[2 * conn];
  if (bytes > JCT_ROCE_MAX_MSG_BYTES) return JCT_EINVAL;
  if (!ep->qp) return 0; /* another process's rank posts it */
  jct_uroce_wr_t wr = {.wr_id = op, .bytes = (uint32_t)bytes, .has_imm = true, .imm = op};
  R->ranks[ep->rank].dirty = true;
  return jct_uroce_post_write(ep->qp, &wr, NULL, 0);
}

jct_exec_hooks_t jct__ranks_hooks(jct__ranks_t *R) {
  jct_exec_hooks_t h = {post_cts, post_send, R};
  return h;
}

void jct__ranks_attach(jct__ranks_t *R, jct_exec_t *e) {
  R->exec = e;
}

/* The ECN field of a received datagram (IP_RECVTOS), 0 when absent. */
static uint8_t ecn_of(struct msghdr *m) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1))
      return CMSG_DATA(c)[0] & 3;
  return 0;
}

static void on_socket(uv_poll_t *h, int status, int events) {
  (void)events;
  rank_t *k = h->data;
  jct__ranks_t *R = k->R;
  if (status < 0) return;
  struct mmsghdr msgs[RECV_BATCH];
  struct iovec iov[RECV_BATCH];
  struct sockaddr_in from[RECV_BATCH];
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl[RECV_BATCH];
  int n;
  for (;;) {
    for (int i = 0; i < RECV_BATCH; i++) {
      iov[i] = (struct iovec){R->buf[i], sizeof R->buf[i]};
      msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i],
                                        .msg_namelen = sizeof from[i],
                                        .msg_iov = &iov[i],
                                        .msg_iovlen = 1,
                                        .msg_control = ctl[i].buf,
                                        .msg_controllen = sizeof ctl[i].buf};
    }
    if ((n = recvmmsg(k->fd, msgs, RECV_BATCH, MSG_DONTWAIT, NULL)) <= 0) break;
    jct_clock_flight(R->clock, -n); /* the switch counted them out (clock.h) */
    uint64_t now = qp_time(k, jct_now_ns());
    for (int i = 0; i < n; i++) {
      size_t len = msgs[i].msg_len;
      uint32_t qpn = jct_uroce_dest_qpn(R->buf[i], len);
      uint32_t e = qpn - JCT__UROCE_QPN_BASE;
      if (qpn == UINT32_MAX || qpn < JCT__UROCE_QPN_BASE || e >= 2 * R->s->nconns ||
          R->eps[e].rank != k->index || !R->eps[e].qp)
        continue; /* not one of this rank's QPs: counted by nobody, as a NIC drops it */
      jct_uroce_rx_ecn(R->eps[e].qp, R->buf[i], len, ntohs(from[i].sin_port),
                       ecn_of(&msgs[i].msg_hdr), now);
    }
    if (n < RECV_BATCH) break;
  }
  service(k, jct_now_ns());
  jct__ranks_kick(R);
}

static void on_pfc_frame(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes) {
  rank_t *k = (rank_t *)user;
  jct__ranks_t *R = k->R;
  jct_clock_flight(R->clock, -1); /* every MAC Control frame: the switch counted them out */
  jct_packet_t p;
  if (jct_decode(JCT_LINK_EN10MB, bytes, h->caplen, h->len, &p) != JCT_PKT_PFC) return;
  uint8_t prio = R->opts.data_prio;
  if (!(p.pfc.class_enable & (1u << prio))) return;
  uint64_t now = jct_now_ns();
  uint64_t q = p.pfc.quanta[prio];
  uint64_t until = q ? now + q * 512u * 1000000000u / R->opts.rate_bps : now;
  /* The pause under way counted to its end; a new frame moves the end. */
  if (k->paused_until_ns > now) k->paused_ns -= k->paused_until_ns - now;
  k->paused_ns += until - now;
  k->paused_until_ns = until;
}

static void on_pfc(uv_poll_t *h, int status, int events) {
  (void)events;
  rank_t *k = h->data;
  if (status < 0) return;
  pcap_dispatch(k->pfc, -1, on_pfc_frame, (u_char *)k);
  service(k, jct_now_ns());
}

/* The rank's socket: bound to its address and port 4791, UDP checksum 0
 * (RoCEv2, Annex A17.3.1), DF set so Linux writes IP ID 0 (the ICRC covers
 * the ID), DSCP for the data priority and ECT(0), and the TOS of what
 * arrives (IP_RECVTOS) for its ECN field. */
static int socket_on(jct__ranks_t *R, uint32_t i, uint16_t port, char *err, size_t errlen) {
  int type = SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
  int fd = R->topo ? jct_topo_socket(R->topo, i, AF_INET, type, 0, err, errlen)
                   : socket(AF_INET, type, 0);
  if (fd < 0 && !R->topo)
    return jct__errf(err, errlen, JCT_EIO, "rank %u: socket: %s", i, strerror(errno));
  if (fd < 0) return fd;
  int one = 1, pmtu = IP_PMTUDISC_DO, tos = R->opts.dscp << 2 | ECN_ECT0, ttl = IP_TTL_VALUE;
  int buf = SOCKET_BUFFER_BYTES;
  if (setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof one) ||
      setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) ||
      setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) ||
      setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) ||
      setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl)) {
    close(fd);
    return jct__errf(err, errlen, JCT_EIO, "rank %u: socket options: %s", i, strerror(errno));
  }
  /* Larger buffers where allowed; the kernel caps them at rmem_max otherwise. */
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf))
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf))
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  struct sockaddr_storage ss;
  socklen_t sl = jct_rank_sockaddr(i, AF_INET, port, &ss);
  if (bind(fd, (struct sockaddr *)&ss, sl)) {
    int e = errno;
    close(fd);
    return jct__errf(err, errlen, JCT_EIO, "rank %u: bind to port %u: %s", i, port, strerror(e));
  }
  return fd;
}

static int open_socket(jct__ranks_t *R, uint32_t i, char *err, size_t errlen) {
  int fd = socket_on(R, i, JCT_ROCEV2_UDP_PORT, err, errlen);
  if (fd < 0) return fd;
  R->ranks[i].fd = fd;
  return 0;
}

/* The send-only socket of rank me's source port: one per distinct port,
 * shared by the QPs whose ports collide (rxe's 14-bit hash). */
static int sport_socket(jct__ranks_t *R, uint32_t me, uint16_t port, char *err, size_t errlen) {
  rank_t *k = &R->ranks[me];
  for (uint32_t j = 0; j < k->nsports; j++)
    if (k->sport[j] == port) return k->sport_fd[j];
  int fd = socket_on(R, me, port, err, errlen);
  if (fd < 0) return fd;
  k->sport[k->nsports] = port;
  k->sport_fd[k->nsports++] = fd;
  return fd;
}

typedef struct {
  jct__ranks_t *R;
  uint32_t i;
  char *err;
  size_t errlen;
} pfc_open_t;

static int open_pfc_in_rank(void *arg) {
  pfc_open_t *a = arg;
  rank_t *k = &a->R->ranks[a->i];
  char eb[PCAP_ERRBUF_SIZE] = "";
  struct bpf_program prog;
  pcap_t *p = pcap_create(JCT_TOPO_RANK_IFNAME, eb);
  if (!p) return jct__errf(a->err, a->errlen, JCT_EIO, "rank %u: PFC listener: %s", a->i, eb);
  k->pfc = p;
  if (pcap_set_snaplen(p, 128) || pcap_set_immediate_mode(p, 1) || pcap_activate(p) < 0 ||
      pcap_setnonblock(p, 1, eb) < 0 || pcap_setdirection(p, PCAP_D_IN) < 0 ||
      pcap_compile(p, &prog, "ether proto 0x8808", 1, PCAP_NETMASK_UNKNOWN) < 0)
    return jct__errf(a->err, a->errlen, JCT_EIO, "rank %u: PFC listener: %s", a->i,
                     *eb ? eb : pcap_geterr(p));
  int rc = pcap_setfilter(p, &prog);
  pcap_freecode(&prog);
  if (rc < 0)
    return jct__errf(a->err, a->errlen, JCT_EIO, "rank %u: PFC listener: %s", a->i, pcap_geterr(p));
  return 0;
}

static int make_qp(jct__ranks_t *R, uint32_t c, bool src, char *err, size_t errlen) {
  const jct_conn_t *conn = &R->s->conns[c];
  uint32_t me = src ? conn->src : conn->dst, peer = src ? conn->dst : conn->src;
  endpoint_t *ep = &R->eps[2 * c + (src ? 0 : 1)];
  *ep = (endpoint_t){.R = R, .rank = me, .conn = c, .is_src = src, .fd = -1};
  if (R->opts.one_rank && me != R->opts.rank) return 0; /* another process's end */
  ep->peerlen = jct_rank_sockaddr(peer, AF_INET, JCT_ROCEV2_UDP_PORT, &ep->peer);
  jct_uroce_cfg_t cfg;
  jct_uroce_cfg_init(&cfg);
  uint32_t psn_src = (c * 2654435761u) & JCT_PSN_MASK,
           psn_dst = (psn_src ^ 0x5a5a5a) & JCT_PSN_MASK;
  cfg.local_qpn = jct__uroce_qpn(c, !src);
  cfg.remote_qpn = jct__uroce_qpn(c, src);
  cfg.sq_psn = src ? psn_src : psn_dst;
  cfg.rq_psn = src ? psn_dst : psn_src;
  if (R->opts.sq_psn) { /* the bootstrap's: each end's own, and its peer's */
    cfg.sq_psn = R->opts.sq_psn[2 * c + (src ? 0 : 1)] & JCT_PSN_MASK;
    cfg.rq_psn = R->opts.sq_psn[2 * c + (src ? 1 : 0)] & JCT_PSN_MASK;
  }
  cfg.path_mtu_bytes = R->opts.path_mtu_bytes;
  cfg.timeout = R->opts.timeout;
  cfg.retry_cnt = R->opts.retry_cnt;
  cfg.nak_delay_ns = R->opts.nak_delay_ns;
  cfg.nak_react_ns = R->opts.nak_react_ns;
  cfg.local = jct_rank_ipv4(me);
  cfg.remote = jct_rank_ipv4(peer);
  /* 0: rxe's hash of the QPN (uroce_qp.c); else one socket per rank, on 4791 */
  cfg.udp_sport = R->opts.per_qp_sport ? 0 : JCT_ROCEV2_UDP_PORT;
  cfg.paused_until_ns = &R->ranks[me].paused_until_ns;
  cfg.dcqcn = R->opts.dcqcn;
  cfg.line_rate_bps = R->opts.rate_bps;
  cfg.cb = on_qp_event;
  cfg.data = ep;
  /* The connection's captured go-backs: their depths to its sending end,
   * their NAK latencies to its receiving end (for its clear-to-sends' the
   * other way round). */
  jct_uroce_go_back_t *gb = NULL;
  for (uint32_t i = 0; i < R->opts.ngo_backs; i++) {
    if (R->opts.go_backs[i].conn != c) continue;
    if (!gb && !(gb = malloc(R->opts.ngo_backs * sizeof *gb))) return JCT_ENOMEM;
    jct_uroce_go_back_t g = R->opts.go_backs[i];
    if (src != g.cts)
      g.hole_to_nak_ns = g.nak_ahead_psns = 0; /* the requester's part */
    else
      /* the responder's: a timer go-back is none of its (its own
       * requester sends the other stream) */
      g.ahead_psns = 0, g.nak_to_resend_ns = 0, g.timer_ns = 0;
    gb[cfg.ngo_backs++] = g;
  }
  cfg.go_backs = gb;
  /* The connection's captured stalls: its sending end's. */
  jct_uroce_stall_t *st = NULL;
  for (uint32_t i = 0; src && i < R->opts.nstalls; i++) {
    if (R->opts.stalls[i].conn != c) continue;
    if (!st && !(st = malloc(R->opts.nstalls * sizeof *st))) {
      free(gb);
      return JCT_ENOMEM;
    }
    st[cfg.nstalls++] = R->opts.stalls[i];
  }
  cfg.stalls = st;
  char e2[128];
  int rc = jct_uroce_qp_create(&cfg, &ep->qp, e2, sizeof e2);
  free(gb);
  free(st);
  if (rc) return jct__errf(err, errlen, rc, "connection %u: %s", c, e2);
  rank_t *k = &R->ranks[me];
  k->eps[k->neps++] = 2 * c + (src ? 0 : 1);
  ep->fd = k->fd;
  if (R->opts.per_qp_sport) {
    int fd = sport_socket(R, me, jct_uroce_udp_sport(ep->qp), err, errlen);
    if (fd < 0) return fd;
    ep->fd = fd;
  }
  return 0;
}

static int start_polls(jct__ranks_t *R, char *err, size_t errlen) {
  for (uint32_t i = 0; i < R->s->nranks; i++) {
    rank_t *k = &R->ranks[i];
    if (k->fd < 0) continue; /* another process's rank */
    /* In the order opened: jct__ranks_free closes the first `open`. */
    uv_poll_t *hs = &R->polls->h[R->polls->open], *hp = &R->polls->h[R->polls->open + 1];
    int pfd = pcap_get_selectable_fd(k->pfc);
    if (uv_poll_init(R->loop, hs, k->fd))
      return jct__errf(err, errlen, JCT_EIO, "rank %u: cannot poll its socket", i);
    R->polls->open++;
    if (pfd < 0 || uv_poll_init(R->loop, hp, pfd))
      return jct__errf(err, errlen, JCT_EIO, "rank %u: cannot poll its PFC listener", i);
    R->polls->open++;
    hs->data = hp->data = k;
    uv_poll_start(hs, UV_READABLE, on_socket);
    uv_poll_start(hp, UV_READABLE, on_pfc);
  }
  return 0;
}

/* Idle-time skipping waits while a rank has work no timer stands for:
 * posts not yet serviced (the rest, pacing and QP deadlines, are timers). */
static bool busy(void *arg) {
  const jct__ranks_t *R = arg;
  for (uint32_t i = 0; i < R->s->nranks; i++)
    if (R->ranks[i].dirty) return true;
  return false;
}

int jct__ranks_new(jct__ranks_t **out, uv_loop_t *loop, jct_clock_t *clock, const jct_topo_t *topo,
                   const jct_schedule_t *s, const jct__ranks_opts_t *opts, char *err,
                   size_t errlen) {
  *out = NULL;
  jct__ranks_t *R = calloc(1, sizeof *R);
  if (!R) return JCT_ENOMEM;
  R->opts = *opts;
  R->loop = loop;
  R->clock = clock;
  R->topo = topo;
  R->s = s;
  R->ranks = calloc(s->nranks, sizeof *R->ranks);
  R->eps = calloc(2 * (size_t)s->nconns, sizeof *R->eps);
  R->ep_storage = calloc(2 * (size_t)s->nconns, sizeof *R->ep_storage);
  R->polls = calloc(1, sizeof *R->polls + 2 * s->nranks * sizeof(uv_poll_t));
  int rc = JCT_ENOMEM;
  if (!R->ranks || !R->eps || !R->ep_storage || !R->polls) goto fail;
  /* each rank's endpoints, in one array */
  uint32_t *count = calloc(s->nranks, sizeof *count);
  if (!count) goto fail;
  for (uint32_t c = 0; c < s->nconns; c++)
    count[s->conns[c].src]++, count[s->conns[c].dst]++;
  uint32_t off = 0;
  for (uint32_t i = 0; i < s->nranks; i++) {
    rank_t *k = &R->ranks[i];
    *k = (rank_t){.R = R, .index = i, .fd = -1, .eps = R->ep_storage + off};
    k->timer.data = k;
    if (opts->per_qp_sport && count[i] &&
        (!(k->sport = calloc(count[i], sizeof *k->sport)) ||
         !(k->sport_fd = calloc(count[i], sizeof *k->sport_fd)))) {
      free(count);
      rc = JCT_ENOMEM;
      goto fail;
    }
    off += count[i];
    uint32_t cap = opts->nic_queue_pkts;
    if (cap &&
        (!(k->q = calloc(cap, sizeof *k->q)) || !(k->q_len = calloc(cap, sizeof(uint32_t))) ||
         !(k->q_ep = calloc(cap, sizeof(uint32_t))))) {
      free(count);
      rc = JCT_ENOMEM;
      goto fail;
    }
  }
  free(count);
  for (uint32_t i = 0; i < s->nranks; i++) {
    if (opts->one_rank && i != opts->rank) continue;
    if ((rc = open_socket(R, i, err, errlen))) goto fail;
    pfc_open_t a = {R, i, err, errlen};
    if ((rc = topo ? jct_topo_in_rank(topo, i, open_pfc_in_rank, &a, err, errlen)
                   : open_pfc_in_rank(&a)))
      goto fail;
  }
  for (uint32_t c = 0; c < s->nconns; c++)
    if ((rc = make_qp(R, c, true, err, errlen)) || (rc = make_qp(R, c, false, err, errlen)))
      goto fail;
  if ((rc = start_polls(R, err, errlen))) goto fail;
  if ((rc = jct_clock_add_busy(clock, busy, R))) goto fail;
  R->busy_added = true;
  *out = R;
  return 0;
fail:
  jct__ranks_free(R);
  return rc;
}

bool jct__ranks_quiet(const jct__ranks_t *R) {
  for (uint32_t e = 0; e < 2 * R->s->nconns; e++)
    if (R->eps[e].qp && jct_uroce_next_deadline_ns(R->eps[e].qp) != UINT64_MAX) return false;
  return true;
}

int jct__ranks_failed(const jct__ranks_t *R, char *err, size_t errlen) {
  if (R->failed) jct__errf(err, errlen, R->failed, "%s", R->why);
  return R->failed;
}

void jct__ranks_rep_start(jct__ranks_t *R, bool faulted) {
  uint64_t now = jct_now_ns();
  for (uint32_t e = 0; e < 2 * R->s->nconns; e++) {
    if (!R->eps[e].qp) continue; /* another process's end (jctlab rank) */
    jct_uroce_cc_reset(R->eps[e].qp, qp_time(&R->ranks[R->eps[e].rank], now));
    jct_uroce_rep_start(R->eps[e].qp, faulted);
  }
}

uint64_t jct__ranks_nic_paused_ns(const jct__ranks_t *R) {
  uint64_t t = 0;
  for (uint32_t i = 0; i < R->s->nranks; i++)
    t += R->ranks[i].paused_ns;
  return t;
}

void jct__ranks_stats(const jct__ranks_t *R, jct_uroce_stats_t *sum) {
  memset(sum, 0, sizeof *sum);
  for (uint32_t e = 0; e < 2 * R->s->nconns; e++) {
    if (!R->eps[e].qp) continue;
    const jct_uroce_stats_t *st = jct_uroce_stats(R->eps[e].qp);
    const uint64_t *a = (const uint64_t *)st;
    uint64_t *b = (uint64_t *)sum;
    for (size_t i = 0; i < sizeof *sum / sizeof(uint64_t); i++)
      b[i] += a[i];
  }
}

uint64_t jct__ranks_conn_retx(const jct__ranks_t *R, uint32_t conn) {
  uint64_t n = 0;
  for (uint32_t e = 2 * conn; e < 2 * conn + 2; e++)
    if (R->eps[e].qp) n += jct_uroce_stats(R->eps[e].qp)->retx_pkts;
  return n;
}

uint64_t jct__ranks_conn_rate_bps(const jct__ranks_t *R, uint32_t conn) {
  return jct_uroce_rate_bps(R->eps[2 * conn].qp);
}

void jct__ranks_conn_cc(const jct__ranks_t *R, uint32_t conn, uint64_t *rate_cuts,
                        uint64_t *below_line_rate_ns) {
  const jct_uroce_qp_t *qp = R->eps[2 * conn].qp;
  *rate_cuts = qp ? jct_uroce_stats(qp)->rate_cuts : 0;
  *below_line_rate_ns = qp ? jct_uroce_stats(qp)->below_line_rate_ns : 0;
}

/* UDP RcvbufErrors from /proc/net/snmp, read in the rank's namespace. */
static int rcvbuf_errors(void *arg) {
  uint64_t *total = arg;
  FILE *f = fopen("/proc/thread-self/net/snmp", "r");
  if (!f) return 0;
  char names[1024], values[1024];
  while (fgets(names, sizeof names, f) && fgets(values, sizeof values, f)) {
    if (strncmp(names, "Udp:", 4)) continue;
    char *sn, *sv, *n = strtok_r(names, " \n", &sn), *v = strtok_r(values, " \n", &sv);
    for (; n && v; n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv))
      if (strcmp(n, "RcvbufErrors") == 0) *total += strtoull(v, NULL, 10);
  }
  fclose(f);
  return 0;
}

uint64_t jct__ranks_harness_losses(const jct__ranks_t *R) {
  uint64_t total = R->send_failures;
  for (uint32_t i = 0; i < R->s->nranks; i++) {
    if (R->ranks[i].fd < 0) continue; /* another process's rank */
    if (R->topo)
      jct_topo_in_rank(R->topo, i, rcvbuf_errors, &total, NULL, 0);
    else
      rcvbuf_errors(&total); /* the calling thread is in the rank's namespace */
  }
  return total;
}

static void on_closed(uv_handle_t *h) {
  polls_t *b = h->data;
  if (--b->open == 0) free(b);
}

void jct__ranks_free(jct__ranks_t *R) {
  if (!R) return;
  if (R->busy_added) jct_clock_remove_busy(R->clock, busy, R);
  if (R->polls) {
    size_t open = R->polls->open;
    for (size_t i = 0; i < open; i++) {
      R->polls->h[i].data = R->polls;
      uv_close((uv_handle_t *)&R->polls->h[i], on_closed);
    }
    if (!open) free(R->polls);
  }
  for (uint32_t i = 0; R->ranks && i < R->s->nranks; i++) {
    jct_timer_stop(R->clock, &R->ranks[i].timer);
    if (R->ranks[i].fd >= 0) close(R->ranks[i].fd);
    for (uint32_t j = 0; j < R->ranks[i].nsports; j++)
      close(R->ranks[i].sport_fd[j]);
    free(R->ranks[i].sport);
    free(R->ranks[i].sport_fd);
    if (R->ranks[i].pfc) pcap_close(R->ranks[i].pfc);
    free(R->ranks[i].q);
    free(R->ranks[i].q_len);
    free(R->ranks[i].q_ep);
  }
  for (uint32_t e = 0; R->eps && e < 2 * R->s->nconns; e++)
    if (R->eps[e].qp) jct_uroce_qp_destroy(R->eps[e].qp);
  free(R->ranks);
  free(R->eps);
  free(R->ep_storage);
  free(R);
}
