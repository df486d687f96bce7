/* UDP traffic for bench/fabric (fabric_traffic.h).
 *
 * Each thread enters its rank's network namespace with setns(2) (through
 * jct_topo_enter_rank) and makes its socket there. Senders connect to the
 * peer rank's address and send batches of BATCH datagrams with sendmmsg(2),
 * with IP_TOS DSCP 26 + ECT(0) and DF set, so every datagram is one frame
 * classified to the switch's lossless priority 3. Receivers bind to their
 * rank's address and drain with recvmmsg(2) (MSG_WAITFORONE, SO_RCVTIMEO
 * so they notice the stop flag); a large SO_RCVBUF (SO_RCVBUFFORCE: we
 * hold CAP_NET_ADMIN in our own namespace) keeps the receiver from being
 * the first to drop. SO_MEMINFO's SK_MEMINFO_DROPS gives the socket's drops.
 */
#include "fabric_traffic.h"

#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "jctlab/error.h"

#define BATCH 64
#define RX_BUF_BYTES 9216
#define RCVBUF_BYTES (32 << 20)
#define RCV_TIMEOUT_US 50000

static int policy(jct__flow_t *f) {
  cpu_set_t set;
  CPU_ZERO(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < n && c < CPU_SETSIZE; c++)
    if (!f->pin || c == f->cpu) CPU_SET((size_t)c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    snprintf(f->err, sizeof f->err, "rank %zu: sched_setaffinity: %s", f->rank, strerror(errno));
    return JCT_EIO;
  }
  struct sched_param sp = {.sched_priority = 0};
  if (f->sched_idle && sched_setscheduler(0, SCHED_IDLE, &sp) != 0) {
    snprintf(f->err, sizeof f->err, "rank %zu: SCHED_IDLE: %s", f->rank, strerror(errno));
    return JCT_EIO;
  }
  if (!f->sched_idle && setpriority(PRIO_PROCESS, (id_t)gettid(), f->nice) != 0) {
    snprintf(f->err, sizeof f->err, "rank %zu: setpriority %d: %s", f->rank, f->nice,
             strerror(errno));
    return JCT_EIO;
  }
  return 0;
}

static int open_socket(jct__flow_t *f, int *fd_out) {
  struct sockaddr_storage ss;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(f->err, sizeof f->err, "rank %zu: socket: %s", f->rank, strerror(errno));
    return JCT_EIO;
  }
  *fd_out = fd;
  if (f->sender) {
    int tos = JCT__TRAFFIC_TOS, pmtu = IP_PMTUDISC_DO;
    socklen_t sl = jct_rank_sockaddr(f->peer, AF_INET, JCT__TRAFFIC_PORT, &ss);
    if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) != 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) != 0 || sl == 0 ||
        connect(fd, (struct sockaddr *)&ss, sl) != 0) {
      snprintf(f->err, sizeof f->err, "rank %zu: sender socket to rank %zu: %s", f->rank, f->peer,
               strerror(errno));
      return JCT_EIO;
    }
    return 0;
  }
  int rcvbuf = RCVBUF_BYTES;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  struct timeval tv = {.tv_sec = 0, .tv_usec = RCV_TIMEOUT_US};
  socklen_t sl = jct_rank_sockaddr(f->rank, AF_INET, JCT__TRAFFIC_PORT, &ss);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 || sl == 0 ||
      bind(fd, (struct sockaddr *)&ss, sl) != 0) {
    snprintf(f->err, sizeof f->err, "rank %zu: receiver socket: %s", f->rank, strerror(errno));
    return JCT_EIO;
  }
  return 0;
}

static void send_loop(jct__flow_t *f, int fd) {
  static const uint8_t payload[RX_BUF_BYTES]; /* zeros: only the length matters */
  struct iovec iov = {.iov_base = (void *)(uintptr_t)payload, .iov_len = f->payload_bytes};
  struct mmsghdr msgs[BATCH];
  memset(msgs, 0, sizeof msgs);
  for (size_t i = 0; i < BATCH; i++) {
    msgs[i].msg_hdr.msg_iov = &iov;
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  while (!atomic_load_explicit(&f->group->stop, memory_order_relaxed)) {
    int n = sendmmsg(fd, msgs, BATCH, 0);
    if (n <= 0) {
      atomic_fetch_add_explicit(&f->errors, 1, memory_order_relaxed);
      continue;
    }
    atomic_fetch_add_explicit(&f->packets, (uint64_t)n, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->bytes, (uint64_t)n * f->payload_bytes, memory_order_relaxed);
  }
}

static void recv_loop(jct__flow_t *f, int fd) {
  uint8_t *buf = malloc((size_t)BATCH * RX_BUF_BYTES);
  if (!buf) {
    snprintf(f->err, sizeof f->err, "rank %zu: out of memory", f->rank);
    f->rc = JCT_ENOMEM;
    return;
  }
  struct iovec iov[BATCH];
  struct mmsghdr msgs[BATCH];
  memset(msgs, 0, sizeof msgs);
  for (size_t i = 0; i < BATCH; i++) {
    iov[i] = (struct iovec){buf + i * RX_BUF_BYTES, RX_BUF_BYTES};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  while (!atomic_load_explicit(&f->group->stop, memory_order_relaxed)) {
    int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
    if (n <= 0) continue; /* timeout: look at the stop flag */
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++)
      bytes += msgs[i].msg_len;
    atomic_fetch_add_explicit(&f->packets, (uint64_t)n, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->bytes, bytes, memory_order_relaxed);
  }
  uint32_t mem[SK_MEMINFO_VARS];
  socklen_t ml = sizeof mem;
  if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &ml) == 0 && ml > SK_MEMINFO_DROPS * 4u)
    f->sock_drops = mem[SK_MEMINFO_DROPS];
  free(buf);
}

static void *flow_main(void *arg) {
  jct__flow_t *f = arg;
  int fd = -1;
  f->rc = policy(f);
  if (!f->rc) f->rc = jct_topo_enter_rank(f->topo, f->rank, f->err, sizeof f->err);
  if (!f->rc) f->rc = open_socket(f, &fd);
  jct__traffic_t *g = f->group;
  pthread_mutex_lock(&g->mu);
  g->nready++;
  pthread_cond_broadcast(&g->cond);
  while (!g->go)
    pthread_cond_wait(&g->cond, &g->mu);
  pthread_mutex_unlock(&g->mu);
  if (!f->rc && !atomic_load(&f->group->stop)) {
    if (f->sender)
      send_loop(f, fd);
    else
      recv_loop(f, fd);
  }
  if (fd >= 0) close(fd);
  return NULL;
}

void jct__traffic_stop(jct__traffic_t *t) {
  atomic_store(&t->stop, true);
  for (size_t i = 0; i < t->nflows; i++)
    if (t->flows[i].started) pthread_join(t->flows[i].tid, NULL);
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->mu);
}

int jct__traffic_start(jct__traffic_t *t, jct__flow_t *flows, size_t nflows, char *err,
                       size_t errlen) {
  t->flows = flows;
  t->nflows = nflows;
  t->nready = 0;
  t->go = false;
  atomic_store(&t->stop, false);
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cond, NULL);
  size_t started = 0;
  for (size_t i = 0; i < nflows; i++) {
    jct__flow_t *f = &flows[i];
    f->group = t;
    f->rc = 0;
    f->err[0] = '\0';
    atomic_store(&f->packets, 0);
    atomic_store(&f->bytes, 0);
    atomic_store(&f->errors, 0);
    f->sock_drops = 0;
    f->started = pthread_create(&f->tid, NULL, flow_main, f) == 0;
    if (!f->started) break;
    started++;
  }
  /* Every socket exists (receivers bound) before any sender sends. */
  pthread_mutex_lock(&t->mu);
  while (t->nready < started)
    pthread_cond_wait(&t->cond, &t->mu);
  int rc = 0;
  if (started < nflows) {
    rc = JCT_ENOMEM;
    snprintf(err, errlen, "cannot start thread %zu", started);
  }
  for (size_t i = 0; !rc && i < nflows; i++)
    if (flows[i].rc) {
      rc = flows[i].rc;
      snprintf(err, errlen, "%s", flows[i].err);
    }
  if (rc) atomic_store(&t->stop, true);
  t->go = true;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->mu);
  if (rc) jct__traffic_stop(t);
  return rc;
}
