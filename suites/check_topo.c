/* Tests for the namespace topology (harness/fabric/topo*.c).
 *
 * Each test runs in the child Check forks for it, and that child calls
 * jct_ns_isolate() before building anything, so the runner itself stays in
 * the host's namespace and the tests work as root and unprivileged. When
 * not root and user namespaces are unavailable, a test says why and passes
 * without running; as root it must run. Traffic only ever goes between
 * ranks' 198.18.0.0/15 and 2001:2::/48 addresses inside those namespaces.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "jctlab/error.h"
#include "jctlab/topo.h"
#include "nskit.h"
#include "suites.h"

/* ---- Helpers ------------------------------------------------------------ */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static jct_topo_t *make_topo(size_t n, uint32_t mtu, bool ipv6) {
  char err[512] = "";
  jct_topo_t *t = NULL;
  jct_topo_opts_t o = {.mtu = mtu, .ipv6 = ipv6};
  int rc = jct_topo_create(&t, n, &o, err, sizeof err);
  ck_assert_msg(rc == 0, "jct_topo_create(%zu): %s", n, err);
  ck_assert_ptr_nonnull(t);
  return t;
}

/* The interface names in /proc/<pid>/net/dev ("self": this thread's
 * namespace), sorted into one space-separated string. */
static void dev_names(const char *pid, char *out, size_t outlen) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%s/net/dev", pid);
  FILE *f = fopen(path, "re");
  ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
  char names[256][IFNAMSIZ];
  size_t n = 0;
  while (fgets(line, sizeof line, f) && n < 256) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    *colon = '\0';
    char *name = line + strspn(line, " ");
    snprintf(names[n++], IFNAMSIZ, "%s", name);
  }
  fclose(f);
  qsort(names, n, IFNAMSIZ, (int (*)(const void *, const void *))strcmp);
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    strncat(out, names[i], outlen - strlen(out) - 1);
    strncat(out, " ", outlen - strlen(out) - 1);
  }
}

static void ifreq_for(struct ifreq *ifr, const char *name) {
  memset(ifr, 0, sizeof *ifr);
  snprintf(ifr->ifr_name, sizeof ifr->ifr_name, "%s", name);
}

static int ioctl_int(int fd, unsigned long req, const char *name, struct ifreq *ifr) {
  ifreq_for(ifr, name);
  return ioctl(fd, req, ifr);
}

/* The link is up, and operationally up (IFF_RUNNING) within 2 s: the
 * kernel's link watcher sets that asynchronously after carrier comes on. */
static void wait_running(int fd, const char *name) {
  struct ifreq ifr;
  uint64_t deadline = now_ns() + 2000000000u;
  for (;;) {
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFFLAGS, name, &ifr), 0);
    ck_assert_msg(ifr.ifr_flags & IFF_UP, "%s is down", name);
    if (ifr.ifr_flags & IFF_RUNNING) return;
    ck_assert_msg(now_ns() < deadline, "%s: not running after 2 s, flags %#x", name,
                  (unsigned)ifr.ifr_flags);
    usleep(1000);
  }
}

static uint32_t ethtool_get(int fd, const char *name, uint32_t cmd) {
  struct ethtool_value ev = {.cmd = cmd};
  struct ifreq ifr;
  ifreq_for(&ifr, name);
  ifr.ifr_data = (char *)&ev;
  ck_assert_msg(ioctl(fd, SIOCETHTOOL, &ifr) == 0, "ethtool %#x on %s: %s", cmd, name,
                strerror(errno));
  return ev.data;
}

static ino_t ns_ino_of_fd(int fd) {
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  return st.st_ino;
}

static ino_t current_ns_ino(void) {
  struct stat st;
  ck_assert_int_eq(stat("/proc/thread-self/ns/net", &st), 0);
  return st.st_ino;
}

/* Permanent IPv6 neighbours on ifindex, counted from an RTM_GETNEIGH dump
 * in the calling thread's namespace. */
struct neigh_count {
  int ifindex;
  int n;
};

static int neigh_cb(const struct nlmsghdr *nlh, void *data) {
  struct neigh_count *c = data;
  const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);
  if (nd->ndm_family == AF_INET6 && nd->ndm_ifindex == c->ifindex &&
      (nd->ndm_state & NUD_PERMANENT))
    c->n++;
  return MNL_CB_OK;
}

static int count_v6_neighbours(int ifindex) {
  struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
  ck_assert_ptr_nonnull(nl);
  ck_assert_int_eq(mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID), 0);
  char buf[16384] __attribute__((aligned(8)));
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETNEIGH;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = 1;
  struct ndmsg *nd = mnl_nlmsg_put_extra_header(nlh, sizeof *nd);
  nd->ndm_family = AF_INET6;
  ck_assert_int_ge(mnl_socket_sendto(nl, nlh, nlh->nlmsg_len), 0);
  struct neigh_count c = {ifindex, 0};
  unsigned portid = mnl_socket_get_portid(nl);
  int ret;
  do {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ret = mnl_cb_run(buf, (size_t)n, 1, portid, neigh_cb, &c);
  } while (ret > 0);
  ck_assert_int_eq(ret, MNL_CB_STOP);
  mnl_socket_close(nl);
  return c.n;
}

/* ---- core ----------------------------------------------------------------- */

/* In rank i's namespace, eth0 has the rank's addresses, MAC and MTU, is up
 * and running, has its offloads off and a permanent neighbour for every
 * other rank; lo is up; the switch end is up with the same MTU. */
START_TEST(test_rank_interfaces) {
  if (!ns_own("topo", "rank_interfaces", NS_USERNS)) return;
  const size_t n = 4;
  const uint32_t mtu = 4200;
  jct_topo_t *t = make_topo(n, mtu, true);
  char err[256];
  ck_assert_uint_eq(jct_topo_nranks(t), n);
  ck_assert_uint_eq(jct_topo_mtu(t), mtu);

  for (size_t i = 0; i < n; i++) {
    ck_assert_int_ge(jct_topo_rank_nsfd(t, i), 0);
    ck_assert_str_eq(jct_topo_rank_ifname(t, i), "eth0");
    char sw[16];
    snprintf(sw, sizeof sw, "sw%zu", i);
    ck_assert_str_eq(jct_topo_switch_ifname(t, i), sw);

    ck_assert_msg(jct_topo_enter_rank(t, i, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_ne(current_ns_ino(), ns_ino_of_fd(jct_topo_switch_nsfd(t)));
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ck_assert_int_ge(fd, 0);
    struct ifreq ifr;
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFINDEX, "eth0", &ifr), 0);
    ck_assert_int_eq(ifr.ifr_ifindex, jct_topo_rank_ifindex(t, i));

    ck_assert_int_eq(ioctl_int(fd, SIOCGIFADDR, "eth0", &ifr), 0);
    struct sockaddr_in sin;
    memcpy(&sin, &ifr.ifr_addr, sizeof sin);
    char want4[32];
    snprintf(want4, sizeof want4, "198.18.0.%zu", i + 1);
    ck_assert_str_eq(inet_ntoa(sin.sin_addr), want4);
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFNETMASK, "eth0", &ifr), 0);
    memcpy(&sin, &ifr.ifr_netmask, sizeof sin);
    ck_assert_str_eq(inet_ntoa(sin.sin_addr), "255.254.0.0");

    ck_assert_int_eq(ioctl_int(fd, SIOCGIFHWADDR, "eth0", &ifr), 0);
    uint8_t mac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, (uint8_t)(i + 1)};
    ck_assert_mem_eq(ifr.ifr_hwaddr.sa_data, mac, 6);
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFMTU, "eth0", &ifr), 0);
    ck_assert_int_eq(ifr.ifr_mtu, (int)mtu);
    wait_running(fd, "eth0");
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFFLAGS, "lo", &ifr), 0);
    ck_assert(ifr.ifr_flags & IFF_UP);

    ck_assert_uint_eq(ethtool_get(fd, "eth0", ETHTOOL_GTXCSUM), 0);
    ck_assert_uint_eq(ethtool_get(fd, "eth0", ETHTOOL_GTSO), 0);
    ck_assert_uint_eq(ethtool_get(fd, "eth0", ETHTOOL_GGSO), 0);

    /* IPv6: the rank's /48 address, no DAD, no link-local address. */
    FILE *f = fopen("/proc/self/net/if_inet6", "re");
    ck_assert_ptr_nonnull(f);
    char line[256], want6[40];
    snprintf(want6, sizeof want6, "200100020000000000000000%08zx", i + 1);
    int found = 0, linklocal = 0;
    while (fgets(line, sizeof line, f)) {
      char addr[40], dev[IFNAMSIZ];
      unsigned idx, plen, scope, flags;
      if (sscanf(line, "%39s %x %x %x %x %15s", addr, &idx, &plen, &scope, &flags, dev) != 6)
        continue;
      if (strncmp(addr, "fe80", 4) == 0) linklocal++;
      if (strcmp(addr, want6) == 0 && strcmp(dev, "eth0") == 0) {
        ck_assert_uint_eq(plen, 48);
        ck_assert_msg(flags & 0x02, "rank %zu: %s without IFA_F_NODAD", i, want6); /* NODAD */
        ck_assert_msg(!(flags & 0x40), "rank %zu: %s tentative", i, want6);
        found++;
      }
    }
    fclose(f);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(linklocal, 0);

    /* IPv4 neighbours: complete and permanent (ATF_COM | ATF_PERM), with
     * the other ranks' MACs. */
    f = fopen("/proc/self/net/arp", "re");
    ck_assert_ptr_nonnull(f);
    int arp = 0;
    while (fgets(line, sizeof line, f)) {
      char ip[32], hw[32], mask[8], dev[IFNAMSIZ];
      unsigned type, flags;
      if (sscanf(line, "%31s 0x%x 0x%x %31s %7s %15s", ip, &type, &flags, hw, mask, dev) != 6)
        continue;
      unsigned a, b, c, d;
      ck_assert_int_eq(sscanf(ip, "%u.%u.%u.%u", &a, &b, &c, &d), 4);
      ck_assert_msg(a == 198 && b == 18 && c == 0 && d >= 1 && d <= n && d != i + 1, "%s", ip);
      ck_assert_uint_eq(flags, 0x6);
      char want_hw[32];
      snprintf(want_hw, sizeof want_hw, "02:00:c6:12:00:%02x", d);
      ck_assert_str_eq(hw, want_hw);
      ck_assert_str_eq(dev, "eth0");
      arp++;
    }
    fclose(f);
    ck_assert_int_eq(arp, (int)n - 1);
    ck_assert_int_eq(count_v6_neighbours(jct_topo_rank_ifindex(t, i)), (int)n - 1);
    close(fd);

    /* The switch end. */
    ck_assert_msg(jct_topo_enter_switch(t, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(current_ns_ino(), ns_ino_of_fd(jct_topo_switch_nsfd(t)));
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFINDEX, sw, &ifr), 0);
    ck_assert_int_eq(ifr.ifr_ifindex, jct_topo_switch_ifindex(t, i));
    ck_assert_int_eq(ioctl_int(fd, SIOCGIFMTU, sw, &ifr), 0);
    ck_assert_int_eq(ifr.ifr_mtu, (int)mtu);
    wait_running(fd, sw);
    ck_assert_uint_eq(ethtool_get(fd, sw, ETHTOOL_GTXCSUM), 0);
    close(fd);
  }
  /* The switch namespace holds lo and the switch ends, nothing else. */
  char names[512];
  dev_names("thread-self", names, sizeof names);
  ck_assert_str_eq(names, "lo sw0 sw1 sw2 sw3 ");
  jct_topo_destroy(t);
}
END_TEST

static int record_ns(void *arg) {
  *(ino_t *)arg = current_ns_ino();
  return 7;
}

/* in_rank runs the function in the rank's namespace and comes back; a
 * socket made with jct_topo_socket lives in the rank's namespace. */
START_TEST(test_in_rank) {
  if (!ns_own("topo", "in_rank", NS_USERNS)) return;
  jct_topo_t *t = make_topo(2, 0, false);
  char err[256];
  ck_assert_uint_eq(jct_topo_mtu(t), JCT_TOPO_MTU_DEFAULT);
  ino_t before = current_ns_ino(), inside = 0;
  ck_assert_int_eq(jct_topo_in_rank(t, 1, record_ns, &inside, err, sizeof err), 7);
  ck_assert_uint_eq(inside, ns_ino_of_fd(jct_topo_rank_nsfd(t, 1)));
  ck_assert_uint_eq(current_ns_ino(), before);
  ck_assert_int_eq(jct_topo_in_rank(t, 2, record_ns, &inside, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "2 ranks"));

  int fd = jct_topo_socket(t, 1, AF_INET, SOCK_DGRAM, 0, err, sizeof err);
  ck_assert_msg(fd >= 0, "%s", err);
  struct sockaddr_storage ss;
  socklen_t len = jct_rank_sockaddr(1, AF_INET, 0, &ss);
  ck_assert_uint_eq(len, sizeof(struct sockaddr_in));
  ck_assert_msg(bind(fd, (struct sockaddr *)&ss, len) == 0, "bind: %s", strerror(errno));
  close(fd);
  /* Rank 0's address does not exist in rank 1's namespace. */
  fd = jct_topo_socket(t, 1, AF_INET, SOCK_DGRAM, 0, err, sizeof err);
  len = jct_rank_sockaddr(0, AF_INET, 0, &ss);
  ck_assert_int_ne(bind(fd, (struct sockaddr *)&ss, len), 0);
  ck_assert_int_eq(errno, EADDRNOTAVAIL);
  close(fd);
  ck_assert_int_eq(jct_topo_rank_nsfd(t, 2), -1);
  ck_assert_ptr_null(jct_topo_switch_ifname(t, 2));
  jct_topo_destroy(t);
}
END_TEST

/* ---- traffic -------------------------------------------------------------- */

static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum) {
  for (size_t k = 0; k + 1 < len; k += 2)
    sum += (uint32_t)(p[k] << 8 | p[k + 1]);
  if (len & 1) sum += (uint32_t)(p[len - 1] << 8);
  return sum;
}

static uint16_t fold(uint32_t sum) {
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)sum;
}

struct seen {
  int udp;            /* UDP frames to the receiver's MAC */
  int arp, nd;        /* address resolution frames: must stay 0 */
  int csum_bad;       /* UDP checksums that did not verify */
  int csum_zero;      /* IPv4 UDP checksums left 0 */
  size_t frame_bytes; /* of the last UDP frame */
};

/* Look at one frame the forwarder carries. */
static void inspect_frame(const uint8_t *f, size_t len, struct seen *s) {
  if (len < 14) return;
  uint16_t type = (uint16_t)(f[12] << 8 | f[13]);
  if (type == 0x0806) s->arp++;
  if (type == 0x0800 && len >= 34 && f[23] == 17) {
    size_t ihl = (size_t)(f[14] & 0x0f) * 4;
    const uint8_t *udp = f + 14 + ihl;
    size_t ulen = (size_t)(udp[4] << 8 | udp[5]);
    ck_assert_uint_le(14 + ihl + ulen, len);
    s->udp++;
    s->frame_bytes = len;
    if (udp[6] == 0 && udp[7] == 0) {
      s->csum_zero++;
      return;
    }
    uint32_t sum = sum16(f + 26, 8, 0) + 17 + (uint32_t)ulen; /* pseudo-header */
    if (fold(sum16(udp, ulen, sum)) != 0xffff) s->csum_bad++;
  }
  if (type == 0x86dd && len >= 54) {
    uint8_t next = f[20];
    const uint8_t *l4 = f + 54;
    size_t plen = (size_t)(f[18] << 8 | f[19]);
    if (next == 58 && len >= 55 && (l4[0] == 135 || l4[0] == 136)) s->nd++;
    if (next != 17) return;
    ck_assert_uint_le(54 + plen, len);
    s->udp++;
    s->frame_bytes = len;
    uint32_t sum = sum16(f + 22, 32, 0) + 17 + (uint32_t)plen;
    if (fold(sum16(l4, plen, sum)) != 0xffff) s->csum_bad++;
  }
}

static int packet_socket(int ifindex) {
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
  ck_assert_msg(fd >= 0, "AF_PACKET: %s", strerror(errno));
  struct sockaddr_ll sll = {
      .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = ifindex};
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sll, sizeof sll), 0);
  return fd;
}

/* Receive on rx for up to timeout_ms; when fwd is non-NULL, meanwhile
 * forward frames between the two packet sockets fwd[0] and fwd[1] (a
 * two-port switch in userspace). Returns the datagram's length, or -1. */
static ssize_t receive(int rx, const int *fwd, uint8_t *buf, size_t buflen, int timeout_ms,
                       struct seen *s) {
  uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
  static uint8_t frame[65536];
  for (;;) {
    uint64_t now = now_ns();
    if (now >= deadline) return -1;
    struct pollfd pfd[3] = {
        {rx, POLLIN, 0}, {fwd ? fwd[0] : -1, POLLIN, 0}, {fwd ? fwd[1] : -1, POLLIN, 0}};
    int ms = (int)((deadline - now) / 1000000u) + 1;
    ck_assert_int_ge(poll(pfd, 3, ms), 0);
    if (pfd[0].revents & POLLIN) return recv(rx, buf, buflen, 0);
    for (int k = 0; k < 2; k++) {
      if (!(pfd[k + 1].revents & POLLIN)) continue;
      struct sockaddr_ll from;
      socklen_t fl = sizeof from;
      ssize_t n = recvfrom(fwd[k], frame, sizeof frame, 0, (struct sockaddr *)&from, &fl);
      if (n < 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
      inspect_frame(frame, (size_t)n, s);
      ck_assert_int_eq(send(fwd[1 - k], frame, (size_t)n, 0), n);
    }
  }
}

/* A datagram from rank 0 to rank 1 is not delivered while nothing forwards
 * between sw0 and sw1, and is once a two-port userspace switch does: the
 * static neighbours give the right MACs without ARP/ND, the frame is not
 * fragmented, and its UDP checksum is real (offloads off). */
static void udp_through_switch(int family) {
  if (!ns_own("topo", family == AF_INET ? "udp_ipv4" : "udp_ipv6", NS_USERNS)) return;
  jct_topo_t *t = make_topo(3, 0, true);
  char err[256];
  int rx = jct_topo_socket(t, 1, family, SOCK_DGRAM, 0, err, sizeof err);
  int tx = jct_topo_socket(t, 0, family, SOCK_DGRAM, 0, err, sizeof err);
  ck_assert_msg(rx >= 0 && tx >= 0, "%s", err);
  struct sockaddr_storage dst, src;
  socklen_t dlen = jct_rank_sockaddr(1, family, 5001, &dst);
  socklen_t slen = jct_rank_sockaddr(0, family, 5000, &src);
  ck_assert_msg(bind(rx, (struct sockaddr *)&dst, dlen) == 0, "bind: %s", strerror(errno));
  ck_assert_msg(bind(tx, (struct sockaddr *)&src, slen) == 0, "bind: %s", strerror(errno));

  static uint8_t msg[8000], got[9000];
  for (size_t k = 0; k < sizeof msg; k++)
    msg[k] = (uint8_t)(k * 7 + 1);
  struct seen s = {0};

  ck_assert_int_eq(sendto(tx, msg, sizeof msg, 0, (struct sockaddr *)&dst, dlen),
                   (ssize_t)sizeof msg);
  ck_assert_int_eq(receive(rx, NULL, got, sizeof got, 300, &s), -1);

  int fwd[2] = {packet_socket(jct_topo_switch_ifindex(t, 0)),
                packet_socket(jct_topo_switch_ifindex(t, 1))};
  msg[0] ^= 0xff;
  ck_assert_int_eq(sendto(tx, msg, sizeof msg, 0, (struct sockaddr *)&dst, dlen),
                   (ssize_t)sizeof msg);
  ssize_t n = receive(rx, fwd, got, sizeof got, 3000, &s);
  ck_assert_int_eq(n, (ssize_t)sizeof msg);
  ck_assert_mem_eq(got, msg, sizeof msg);
  ck_assert_int_eq(s.udp, 1);
  size_t ip_bytes = family == AF_INET ? 20 : 40;
  ck_assert_uint_eq(s.frame_bytes, 14 + ip_bytes + 8 + sizeof msg);
  ck_assert_int_eq(s.csum_bad, 0);
  ck_assert_int_eq(s.csum_zero, 0); /* a plain socket: Linux fills the checksum in */
  ck_assert_int_eq(s.arp, 0);
  ck_assert_int_eq(s.nd, 0);
  close(fwd[0]);
  close(fwd[1]);
  close(rx);
  close(tx);
  jct_topo_destroy(t);
}

START_TEST(test_udp_ipv4) {
  udp_through_switch(AF_INET);
}
END_TEST

START_TEST(test_udp_ipv6) {
  udp_through_switch(AF_INET6);
}
END_TEST

/* ---- cleanup ------------------------------------------------------------ */

static int count_fds(void) {
  int n = 0;
  char path[64];
  for (int fd = 0; fd < 1024; fd++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (access(path, F_OK) == 0) n++;
  }
  return n;
}

/* destroy removes both ends of every pair at once (a rank namespace still
 * held elsewhere keeps only lo), closes every fd, and the same names can
 * be used again straight away. */
START_TEST(test_destroy_leaves_nothing) {
  if (!ns_own("topo", "destroy_leaves_nothing", NS_USERNS)) return;
  char before[512], during[512], after[512];
  dev_names("thread-self", before, sizeof before);
  ck_assert_str_eq(before, "lo ");
  int fds = count_fds();
  jct_topo_t *t = make_topo(8, 0, true);
  dev_names("thread-self", during, sizeof during);
  ck_assert_str_eq(during, "lo sw0 sw1 sw2 sw3 sw4 sw5 sw6 sw7 ");
  int held = dup(jct_topo_rank_nsfd(t, 0));
  int sw = dup(jct_topo_switch_nsfd(t));
  jct_topo_destroy(t);
  dev_names("thread-self", after, sizeof after);
  ck_assert_str_eq(after, before);
  ck_assert_int_eq(count_fds(), fds + 2);

  ck_assert_int_eq(setns(held, CLONE_NEWNET), 0);
  dev_names("thread-self", after, sizeof after);
  ck_assert_str_eq(after, "lo ");
  close(held);
  ck_assert_int_eq(setns(sw, CLONE_NEWNET), 0);
  close(sw);

  t = make_topo(8, 0, true); /* same names again */
  jct_topo_destroy(t);
}
END_TEST

/* A failed request is reported with the rank, the request and the kernel's
 * reason; the failed build leaves the existing topology alone. */
START_TEST(test_netlink_error) {
  if (!ns_own("topo", "netlink_error", NS_USERNS)) return;
  jct_topo_t *t = make_topo(2, 0, false), *t2 = NULL;
  char err[512], names[512];
  ck_assert_int_eq(jct_topo_create(&t2, 2, NULL, err, sizeof err), JCT_EIO);
  ck_assert_ptr_null(t2);
  ck_assert_msg(strstr(err, "rank 0: create veth pair sw0 <-> eth0: File exists (EEXIST)") == err,
                "%s", err);
  dev_names("thread-self", names, sizeof names);
  ck_assert_str_eq(names, "lo sw0 sw1 ");
  jct_topo_destroy(t);
  dev_names("thread-self", names, sizeof names);
  ck_assert_str_eq(names, "lo ");
}
END_TEST

/* A child that builds a topology and is SIGKILLed leaves nothing in this
 * (the host's) namespace, and nothing appeared there while it ran, though
 * its own namespace held the switch ends. */
START_TEST(test_sigkill_leaves_nothing) {
  char host_before[1024], host_during[1024], host_after[1024], child_ns[1024];
  dev_names("self", host_before, sizeof host_before);
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(p[0]);
    char err[512], msg[600];
    jct_topo_t *t = NULL;
    int rc = jct_ns_isolate(err, sizeof err);
    if (rc == 0) {
      jct_topo_opts_t o = {.mtu = 0, .ipv6 = true};
      rc = jct_topo_create(&t, 8, &o, err, sizeof err);
    }
    snprintf(msg, sizeof msg, "%s %s", rc == 0 ? "ready" : "fail", rc == 0 ? "" : err);
    if (write(p[1], msg, strlen(msg)) < 0) _exit(1);
    for (;;)
      pause();
  }
  close(p[1]);
  char msg[600] = "";
  struct pollfd pfd = {p[0], POLLIN, 0};
  ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
  ssize_t n = read(p[0], msg, sizeof msg - 1);
  close(p[0]);
  msg[n > 0 ? n : 0] = '\0';
  if (strncmp(msg, "ready", 5) != 0 && geteuid() != 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    printf("topo: sigkill_leaves_nothing skipped: %s\n", msg);
    return;
  }
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
  dev_names(pidstr, child_ns, sizeof child_ns);
  dev_names("self", host_during, sizeof host_during);
  ck_assert_int_eq(kill(pid, SIGKILL), 0);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  dev_names("self", host_after, sizeof host_after);
  ck_assert_msg(strncmp(msg, "ready", 5) == 0, "child: %s", msg);
  ck_assert_str_eq(child_ns, "lo sw0 sw1 sw2 sw3 sw4 sw5 sw6 sw7 ");
  ck_assert_str_eq(host_during, host_before);
  ck_assert_str_eq(host_after, host_before);
}
END_TEST

/* ---- limits --------------------------------------------------------------- */

START_TEST(test_bad_input) {
  char err[256];
  jct_topo_t *t = (jct_topo_t *)&err; /* must come back NULL */
  ck_assert_int_eq(jct_topo_create(&t, 0, NULL, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_ptr_nonnull(strstr(err, "0 ranks"));

  ck_assert_int_eq(jct_topo_create(&t, 5000000, NULL, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "5000000 ranks: more than this machine can hold (limit ") != NULL, "%s",
                err);

  const char *why = NULL;
  size_t lim = jct_topo_max_ranks(true, &why);
  ck_assert_uint_ge(lim, 64);
  ck_assert_uint_le(lim, JCT_TOPO_MAX_RANKS);
  ck_assert_int_eq(jct_topo_create(&t, lim + 1, NULL, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, why));

  jct_topo_opts_t o = {.mtu = 60, .ipv6 = false};
  ck_assert_int_eq(jct_topo_create(&t, 2, &o, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "MTU 60"));
  o = (jct_topo_opts_t){.mtu = 1000, .ipv6 = true};
  ck_assert_int_eq(jct_topo_create(&t, 2, &o, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "1280"));

  /* Open files bind: (200 - 64) / 4 = 34 ranks. */
  struct rlimit rl = {200, 200};
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  ck_assert_uint_eq(jct_topo_max_ranks(false, &why), 34);
  ck_assert_str_eq(why, "open files");
  ck_assert_int_eq(jct_topo_create(&t, 5000, NULL, err, sizeof err), JCT_EINVAL);
  ck_assert_str_eq(err, "5000 ranks: more than this machine can hold (limit 34: open files)");
  ck_assert_ptr_null(t);
}
END_TEST

/* Not isolated: root is refused in the host's namespace; anyone else
 * fails to create namespaces. Nothing is made either way. */
START_TEST(test_refuses_host_ns) {
  char err[256], before[1024], after[1024];
  dev_names("self", before, sizeof before);
  jct_topo_t *t = NULL;
  int rc = jct_topo_create(&t, 1, NULL, err, sizeof err);
  ck_assert_int_lt(rc, 0);
  ck_assert_ptr_null(t);
  if (geteuid() == 0) {
    ck_assert_int_eq(rc, JCT_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "jct_ns_isolate"));
  }
  dev_names("self", after, sizeof after);
  ck_assert_str_eq(after, before);
}
END_TEST

/* 64 ranks build (and go) in well under a few seconds. */
START_TEST(test_64_ranks_fast) {
  if (!ns_own("topo", "64_ranks_fast", NS_USERNS)) return;
  for (size_t n = 8; n <= 64; n *= 8) {
    uint64_t t0 = now_ns();
    jct_topo_t *t = make_topo(n, 0, true);
    uint64_t t1 = now_ns();
    ck_assert_int_ge(jct_topo_rank_nsfd(t, n - 1), 0);
    jct_topo_destroy(t);
    uint64_t t2 = now_ns();
    printf("topo: %zu ranks: create %.1f ms, destroy %.1f ms\n", n, (double)(t1 - t0) / 1e6,
           (double)(t2 - t1) / 1e6);
    ck_assert_uint_lt(t1 - t0, 3000000000u);
  }
}
END_TEST

Suite *topo_suite(void) {
  Suite *s = suite_create("topo");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 30);
  tcase_add_test(core, test_rank_interfaces);
  tcase_add_test(core, test_in_rank);
  suite_add_tcase(s, core);

  TCase *traffic = tcase_create("traffic");
  tcase_set_timeout(traffic, 30);
  tcase_add_test(traffic, test_udp_ipv4);
  tcase_add_test(traffic, test_udp_ipv6);
  suite_add_tcase(s, traffic);

  TCase *cleanup = tcase_create("cleanup");
  tcase_set_timeout(cleanup, 30);
  tcase_add_test(cleanup, test_destroy_leaves_nothing);
  tcase_add_test(cleanup, test_sigkill_leaves_nothing);
  tcase_add_test(cleanup, test_netlink_error);
  suite_add_tcase(s, cleanup);

  TCase *limits = tcase_create("limits");
  tcase_set_timeout(limits, 60);
  tcase_add_test(limits, test_bad_input);
  tcase_add_test(limits, test_refuses_host_ns);
  tcase_add_test(limits, test_64_ranks_fast);
  suite_add_tcase(s, limits);
  return s;
}
