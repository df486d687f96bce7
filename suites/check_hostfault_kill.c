/* hostfault's "killed" case (issue 14: nothing is left behind when a host
 * agent is killed): a real `jctlab agent --no-net --netdev lo` in a
 * network namespace of the test's attaches its drop program on lo's
 * egress; the test turns the program on through its configuration map
 * (every packet to UDP 4791 lost) and sees a datagram lost, then SIGKILLs
 * the agent.
 *   tcx:      a lost frame sent from a packet socket is taken whole by
 *             send() (NET_XMIT_SUCCESS, as on a wire: TC_ACT_SHOT's
 *             ENOBUFS is what rxe takes for a local error) and does not
 *             leave; after the kill, at once, no link, no program and no
 *             tc filter of jctlab's are left, and the datagram and the
 *             frame pass.
 *   fallback: (JCT_HOSTDROP_ATTACH=tc, a 400 ms lease) the filter stays,
 *             still dropping right after the kill, passes everything once
 *             the lease is past, and the next agent to start removes it
 *             and the clsact qdisc it sat on.
 * Needs root, rdma-core (the agent) and the tc-eBPF build. */
#include <arpa/inet.h>
#include <jansson.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef JCT_HAVE_HOSTFAULT
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#endif

#include "craft.h"
#include "harness/fabric/hostdrop.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"
#include "jctlab/roce.h"
#include "jctlab/schedule.h"
#include "schedule/schedule_json.h"
#include "nskit.h"
#include "suites.h"
#include "testkit.h"

#if defined(JCT_HAVE_HOSTFAULT) && defined(JCT_HAVE_VERBS)
#define SPEC "drop p=100%"

/* Turn the program with this id on: every RoCEv2 packet lost (every=1). */
static void enable_prog(uint32_t id) {
  int pfd = bpf_prog_get_fd_by_id(id);
  ck_assert_int_ge(pfd, 0);
  uint32_t maps[16];
  struct bpf_prog_info pi;
  uint32_t len = sizeof pi;
  memset(&pi, 0, sizeof pi);
  pi.nr_map_ids = 16;
  pi.map_ids = (uint64_t)(uintptr_t)maps;
  ck_assert_int_eq(bpf_obj_get_info_by_fd(pfd, &pi, &len), 0);
  bool done = false;
  for (uint32_t i = 0; i < pi.nr_map_ids && i < 16; i++) {
    int mfd = bpf_map_get_fd_by_id(maps[i]);
    struct bpf_map_info mi;
    uint32_t mlen = sizeof mi;
    memset(&mi, 0, sizeof mi);
    if (mfd >= 0 && bpf_obj_get_info_by_fd(mfd, &mi, &mlen) == 0 && !strcmp(mi.name, "jct_cfg")) {
      struct jct_kdrop_cfg cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.mode = JCT_KDROP_EVERY;
      cfg.every = 1;
      cfg.burst = 1;
      cfg.enabled = 1;
      uint32_t zero = 0;
      ck_assert_int_eq(bpf_map_update_elem(mfd, &zero, &cfg, BPF_ANY), 0);
      done = true;
    }
    if (mfd >= 0) close(mfd);
  }
  close(pfd);
  ck_assert_msg(done, "the program has no jct_cfg map");
}

/* Whether a RoCEv2 datagram sent to 127.0.0.1:4791 over lo arrives. */
static bool datagram_passes(void) {
  int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(4791)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  int one = 1;
  setsockopt(rx, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ck_assert_int_eq(bind(rx, (struct sockaddr *)&sa, sizeof sa), 0);
  struct timeval tv = {0, 200000};
  setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  uint8_t bth[12 + 64] = {0x0a}; /* RDMA WRITE MIDDLE's BTH, a payload */
  bth[7] = 0x11;                 /* destination QP */
  ck_assert_int_eq(sendto(tx, bth, sizeof bth, 0, (struct sockaddr *)&sa, sizeof sa),
                   (ssize_t)sizeof bth);
  uint8_t got[128];
  bool passed = recv(rx, got, sizeof got, 0) == (ssize_t)sizeof bth;
  close(rx);
  close(tx);
  return passed;
}

/* A RoCEv2 frame sent on lo from a packet socket (not bypassing the
 * qdiscs, so the egress hook runs): whether send() took it whole, as it
 * does for NET_XMIT_SUCCESS, where the program's loss is the wire's (a
 * NET_XMIT_DROP, TC_ACT_SHOT's, makes it fail with ENOBUFS: the error rxe
 * takes for a local one), and whether it left (seen by a second socket on
 * lo, which sees only what got past the hook). */
static void raw_frame(int ifindex, bool *accepted, bool *left) {
  craft_roce_t c = {.payload_bytes = 64};
  c.h.bth.opcode = JCT_OP_RC_RDMA_WRITE_MIDDLE;
  c.h.bth.dest_qp = 0x11;
  c.h.bth.psn = 7;
  uint8_t frame[256], got[512];
  size_t n = craft_roce(frame, sizeof frame, &c);
  ck_assert_uint_gt(n, 0);
  struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = ifindex,
                            .sll_protocol = htons(ETH_P_ALL)};
  int tx = socket(AF_PACKET, SOCK_RAW, 0), rx = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  ck_assert_int_ge(tx, 0);
  ck_assert_int_ge(rx, 0);
  ck_assert_int_eq(bind(rx, (struct sockaddr *)&sll, sizeof sll), 0);
  sll.sll_protocol = 0;
  ck_assert_int_eq(bind(tx, (struct sockaddr *)&sll, sizeof sll), 0);
  *accepted = send(tx, frame, n, 0) == (ssize_t)n;
  *left = false;
  for (double t0 = now_s(); !*left && now_s() - t0 < 0.3;) {
    ssize_t k = recv(rx, got, sizeof got, MSG_DONTWAIT);
    if (k == (ssize_t)n && !memcmp(got, frame, n))
      *left = true;
    else if (k < 0)
      sleep_ms(10);
  }
  close(tx);
  close(rx);
}

static bool has_our_filter(int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
  LIBBPF_OPTS(bpf_tc_opts, o, .handle = JCT__HOSTDROP_HANDLE, .priority = 1);
  return bpf_tc_query(&hook, &o) == 0;
}


/* A `jctlab agent` serving lo, and the test's end of its control channel. */
typedef struct {
  child_t c;
  int fd;
} agent_t;

static agent_t agent_start(int port) {
  char listen[32];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  char *argv[] = {JCT_BINARY, "agent",    "--listen", listen, "--rank", "0",         "--nranks",
                  "2",        "--no-net", "--netdev", "lo",   "--addr", "127.0.0.1", NULL};
  agent_t a = {.c = spawn(argv, NULL), .fd = -1};
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  for (int k = 0; k < 250 && a.fd < 0; k++) {
    a.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(a.fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
      close(a.fd);
      a.fd = -1;
      sleep_ms(20);
    }
  }
  ck_assert_int_ge(a.fd, 0);
  return a;
}

/* Read lines until one holds want (5 s at most). */
static void await(int fd, const char *want) {
  static char buf[65536];
  size_t len = 0;
  buf[0] = '\0';
  for (double t0 = now_s(); !strstr(buf, want) && now_s() - t0 < 5;) {
    ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, MSG_DONTWAIT);
    if (n > 0) {
      len += (size_t)n;
      buf[len] = '\0';
    } else {
      sleep_ms(20);
    }
  }
  ck_assert_msg(strstr(buf, want), "the agent said '%s', without '%s'", buf, want);
}

/* A setup naming SPEC at this host: the agent attaches its program before
 * it looks for an RDMA device (none here: the setup fails then, and the
 * program stays attached until the agent ends). */
static void agent_setup(agent_t *a) {
  await(a->fd, "\"msg\":\"hello\"");
  char e[256] = "";
  jct_schedule_t *sch;
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 2, 65536, 1, e, sizeof e), 0);
  jct_injector_t *inj;
  ck_assert_msg(jct_injector_new(&inj, SPEC " at=host:0", 1, 0, e, sizeof e) == 0, "%s", e);
  json_t *sj = jct__schedule_json(sch);
  json_t *m = json_pack("{s:s,s:i,s:o,s:[{s:s,s:i,s:i,s:I}]}", "msg", "setup", "rank", 0,
                        "schedule", sj, "host_drops", "spec", SPEC " at=host:0", "index", 0,
                        "run_seed", 1, "seed", (json_int_t)inj->seed);
  char *text = json_dumps(m, JSON_COMPACT);
  size_t n = strlen(text);
  ck_assert_int_eq(write(a->fd, text, n), (ssize_t)n);
  ck_assert_int_eq(write(a->fd, "\n", 1), 1);
  free(text);
  json_decref(m);
  jct_injector_free(inj);
  jct_schedule_free(sch);
  await(a->fd, "\"msg\":\"");
}

/* The agent's program on lo's egress (its id): a tcx link's, or the
 * fallback filter's; 0 until there is one. */
static uint32_t prog_on(int ifindex) {
  uint32_t ids[16];
  if (tcx_progs(ifindex, ids, 16) > 0) return ids[0];
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
  LIBBPF_OPTS(bpf_tc_opts, o, .handle = JCT__HOSTDROP_HANDLE, .priority = 1);
  return bpf_tc_query(&hook, &o) == 0 ? o.prog_id : 0;
}

static uint32_t attached_prog(int ifindex) {
  for (double t0 = now_s(); now_s() - t0 < 5; sleep_ms(20)) {
    uint32_t id = prog_on(ifindex);
    if (id) return id;
  }
  ck_abort_msg("the agent's program never appeared on lo");
  return 0;
}

static bool prog_gone(uint32_t id, double limit_s) {
  for (double t0 = now_s(); now_s() - t0 < limit_s; sleep_ms(20)) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) return true;
    close(fd);
  }
  return false;
}

static void kill_agent(agent_t *a) {
  kill(a->c.pid, SIGKILL);
  result_t r = finish(&a->c, 10);
  ck_assert_int_eq(r.signal, SIGKILL);
  result_free(&r);
  close(a->fd);
}

START_TEST(killed_agent_leaves_nothing) {
  if (!ns_own("hostfault", "killed_agent_leaves_nothing", NS_LO_UP)) return;
  libbpf_set_print(NULL); /* bpf_tc_query on a device without clsact says so */
  int lo = (int)if_nametoindex("lo");
  int port = 45000 + (int)(getpid() % 2000);

  /* tcx: the kernel detaches the link with the killed agent. */
  unsetenv("JCT_HOSTDROP_ATTACH");
  agent_t a = agent_start(port);
  agent_setup(&a);
  uint32_t id = attached_prog(lo);
  ck_assert_int_eq(tcx_links(lo, id), 1);
  ck_assert(!has_our_filter(lo));
  enable_prog(id);
  ck_assert_msg(!datagram_passes(), "tcx: the program on lo did not drop");
  bool accepted, left;
  raw_frame(lo, &accepted, &left);
  ck_assert_msg(accepted && !left, "tcx: a lost frame was %s and %s", accepted ? "sent" : "refused",
                left ? "left" : "lost");
  kill_agent(&a);
  ck_assert_msg(prog_gone(id, 2), "tcx: the program outlived its killed agent");
  ck_assert_int_eq(tcx_links(lo, id), 0);
  ck_assert(!has_our_filter(lo));
  ck_assert(!has_clsact(lo));
  ck_assert_msg(datagram_passes(), "tcx: lo drops after the agent was killed");
  raw_frame(lo, &accepted, &left);
  ck_assert_msg(accepted && left, "tcx: after the kill a frame was %s and %s",
                accepted ? "sent" : "refused", left ? "left" : "lost");

  /* The fallback filter: inert after its lease, removed by the next agent. */
  setenv("JCT_HOSTDROP_ATTACH", "tc", 1);
  setenv("JCT_HOSTDROP_LEASE_MS", "400", 1);
  a = agent_start(port + 1);
  agent_setup(&a);
  id = attached_prog(lo);
  ck_assert_int_eq(tcx_links(lo, id), 0);
  ck_assert(has_our_filter(lo));
  enable_prog(id);
  sleep_ms(600); /* past one lease: the agent renews it */
  ck_assert_msg(!datagram_passes(), "tc: the program lost its lease while its agent lived");
  kill_agent(&a);
  double killed = now_s();
  ck_assert_msg(!datagram_passes(), "tc: the filter went inert at once, not after its lease");
  sleep_ms(500); /* the lease, from the agent's last renewal */
  ck_assert_msg(datagram_passes(), "tc: the filter still drops %.2f s after its agent was killed",
                now_s() - killed);
  ck_assert(has_our_filter(lo)); /* inert, but there: the next agent removes it */
  unsetenv("JCT_HOSTDROP_ATTACH");
  unsetenv("JCT_HOSTDROP_LEASE_MS");
  a = agent_start(port + 2);
  await(a.fd, "\"msg\":\"hello\"");
  ck_assert_msg(!has_our_filter(lo), "the next agent left the stale filter");
  ck_assert_msg(!has_clsact(lo), "the next agent left the clsact qdisc the stale filter sat on");
  ck_assert_msg(prog_gone(id, 2), "the stale filter's program outlived its removal");
  ck_assert_int_eq(write(a.fd, "{\"msg\":\"quit\"}\n", 15), 15);
  result_t r = finish(&a.c, 10);
  ck_assert_int_eq(r.status, 0);
  ck_assert_msg(strstr(r.err, "removed 1 tc filter a killed agent left on lo's egress"), "%s",
                r.err);
  result_free(&r);
  close(a.fd);
}
END_TEST

TCase *hostfault_kill_tcase(void) {
  TCase *t = tcase_create("killed");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, killed_agent_leaves_nothing);
  return t;
}
#else
TCase *hostfault_kill_tcase(void) {
  return NULL; /* no agent or no tc-eBPF in this build: nothing attaches */
}
#endif
