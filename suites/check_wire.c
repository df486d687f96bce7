/* `jctlab wire` (harness/cli/cmd_wire.c): jctlab's switch as a bump in the
 * wire between two existing interfaces.
 *
 * The namespace tests build rank A -- eth0/sw0 -- wire -- sw1/eth0 -- rank B
 * with jct_topo_create (two ranks, their veths' switch ends sw0 and sw1 in
 * the test's own switch namespace, jct_ns_isolate, as suites/check_fabric.c
 * does) and start `jctlab wire sw0 sw1` there as a child process, as a user
 * would start it between two NICs:
 *  - forwarding is exact: UDP datagrams both ways with 'drop every=10' on
 *    one direction; frames in = frames forwarded + the injector's drops,
 *    per direction, and the receivers get exactly the rest;
 *  - a targeted drop on the wire is the same drop as on jctlab's switch:
 *    uroce ranks run a 2-rank ring AllReduce (harness/transport/uroce/
 *    ranks.h, the executor, this process's loop) once across the in-process
 *    switch (jct_fabric_new) and once across `jctlab wire`, each with 'drop
 *    psn=20 qp=0x101'. Both fault logs hold one line, the same but for its
 *    time; in both, the receiver sends exactly one NAK (PSN sequence error,
 *    for PSN 20) and the sender exactly one go-back-N that resends from PSN
 *    20, with no timeout: the counters of the QPs, and the captures of both
 *    forwarders (the switch's pcap_out, the wire's --pcap-out), say so.
 * Bad input (no namespace needed) is one stderr line, exit 2, and no file
 * of those asked for is left.
 * Each namespace test runs in the child Check forks for it; when not root
 * and user namespaces are unavailable, it says why and passes without
 * running. Traffic stays between 198.18.0.1 and 198.18.0.2.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "craft.h"
#include "harness/fabric/chain.h"
#include "harness/orch/loop.h"
#include "harness/transport/uroce/ranks.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "jctlab/fabric.h"
#include "jctlab/schedule.h"
#include "jctlab/topo.h"
#include "nskit.h"
#include "suites.h"
#include "testkit.h"

#define UDP_PORT 5201
#define RATE "1gbit"
#define RATE_BPS 1000000000u
#define DROP_PSN 20u
#define DROP_QP 0x101u
#define DROP_SPEC "drop psn=20 qp=0x101"

static jct_topo_t *make_topo(void) {
  char err[256] = "";
  jct_topo_opts_t to = {.mtu = 9000, .ipv6 = false};
  jct_topo_t *t = NULL;
  ck_assert_msg(jct_topo_create(&t, 2, &to, err, sizeof err) == 0, "topology: %s", err);
  return t;
}

/* A temporary name whose file does not exist (yet). */
static void fresh_name(char *buf, size_t len, const char *suffix) {
  craft_tmpname(buf, len, suffix);
  unlink(buf);
}

static bool exists(const char *path) {
  return access(path, F_OK) == 0;
}

/* ---- the wire as a child ---------------------------------------------------- */

/* Start `jctlab wire sw0 sw1 EXTRA...` and wait until it says it forwards. */
static child_t wire_start(char *const extra[]) {
  char *argv[32] = {JCT_BINARY, "wire", "sw0", "sw1"};
  size_t n = 4;
  for (size_t i = 0; extra[i]; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  child_t c = spawn(argv, NULL);
  double t0 = now_s();
  for (;;) {
    char *e = slurp(c.err, NULL);
    bool ready = e && strstr(e, "jctlab wire: forwarding sw0 <-> sw1");
    free(e);
    if (ready) return c;
    int ws;
    if (waitpid(c.pid, &ws, WNOHANG) == c.pid) {
      result_t r = collect(&c, ws);
      ck_abort_msg("jctlab wire ended before forwarding (status %d): %s", r.status, r.err);
    }
    ck_assert_msg(now_s() - t0 < 10, "jctlab wire did not start forwarding in 10 s");
    sleep_ms(10);
  }
}

/* SIGINT, as a user ends it; it must end by itself, with status 0. */
static json_t *wire_stop(child_t *c, const char *json_path) {
  kill(c->pid, SIGINT);
  result_t r = finish(c, 10);
  ck_assert_msg(r.status == 0, "jctlab wire: status %d, stderr: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "ended by SIGINT"));
  result_free(&r);
  char *text = slurp(json_path, NULL);
  ck_assert_msg(text != NULL, "no --json %s", json_path);
  json_t *doc = parse_json(text, "jctlab wire --json");
  free(text);
  ck_assert_str_eq(json_string_value(jget(doc, "wire.ended_by")), "SIGINT");
  ck_assert(jbool(doc, "valid"));
  ck_assert_int_eq(jint(doc, "harness.lost"), 0);
  return doc;
}

/* ---- exact forwarding -------------------------------------------------------- */

/* n datagrams from rank `from` to the other; returns how many arrived within 2 s. */
static unsigned udp_across(const jct_topo_t *t, size_t from, unsigned n) {
  char err[256];
  size_t to = 1 - from;
  int tx = jct_topo_socket(t, from, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0, err, sizeof err);
  int rx =
      jct_topo_socket(t, to, AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, err, sizeof err);
  ck_assert_msg(tx >= 0 && rx >= 0, "sockets: %s", err);
  /* Room for every datagram: a busy machine keeps this thread off the CPU
   * while the wire forwards a burst, and a default receive buffer (some
   * 200 KB, about 1.2 KB of it per small datagram) would drop past the
   * wire, where nothing it counts can tell. Root: past rmem_max. */
  int rcvbuf = 8 << 20;
  ck_assert_int_eq(setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf), 0);
  struct sockaddr_storage ss;
  socklen_t sl = jct_rank_sockaddr(to, AF_INET, UDP_PORT, &ss);
  ck_assert_int_eq(bind(rx, (struct sockaddr *)&ss, sl), 0);
  ck_assert_int_eq(connect(tx, (struct sockaddr *)&ss, sl), 0);
  uint8_t buf[256] = {0};
  unsigned got = 0;
  for (unsigned i = 0; i < n; i++) {
    ck_assert_int_eq(send(tx, buf, sizeof buf, 0), (ssize_t)sizeof buf);
    if (i % 50 == 49) sleep_ms(2); /* no burst beyond the sockets' buffers */
    while (recv(rx, buf, sizeof buf, 0) == (ssize_t)sizeof buf)
      got++;
  }
  double t0 = now_s();
  while (now_s() - t0 < 2) {
    while (recv(rx, buf, sizeof buf, 0) == (ssize_t)sizeof buf)
      got++;
    sleep_ms(20);
  }
  close(tx);
  close(rx);
  return got;
}

/* directions.D.FIELD of the wire's JSON. */
static json_int_t dir_int(json_t *doc, int d, const char *field) {
  char k[64];
  snprintf(k, sizeof k, "directions.%d.%s", d, field);
  return jint(doc, k);
}

START_TEST(wire_forwards_exactly) {
  if (!ns_own("wire", "wire_forwards_exactly", NS_USERNS)) return;
  jct_topo_t *t = make_topo();
  char js[256];
  fresh_name(js, sizeof js, ".json");
  char *extra[] = {"--rate", RATE, "--inject", "drop every=10 port=1 where=\"udp dst port 5201\"",
                   "--json", js, NULL};
  child_t c = wire_start(extra);
  const unsigned n0 = 500, n1 = 200;
  unsigned got0 = udp_across(t, 0, n0), got1 = udp_across(t, 1, n1);
  json_t *doc = wire_stop(&c, js);
  unlink(js);
  ck_assert_uint_eq(got0, n0 - n0 / 10);
  ck_assert_uint_eq(got1, n1);
  for (int d = 0; d < 2; d++) {
    json_int_t in = dir_int(doc, d, "in"), fwd = dir_int(doc, d, "forwarded"),
               dropped = dir_int(doc, d, "dropped"), held = dir_int(doc, d, "held");
    ck_assert_int_eq(in, fwd + dropped + dir_int(doc, d, "mac_control") + held);
    ck_assert_int_eq(held, 0);
    ck_assert_int_ge(fwd, d ? n1 : n0 - n0 / 10);
    ck_assert_int_eq(dropped, d ? 0 : n0 / 10);
  }
  ck_assert_int_eq(jint(doc, "directions.0.drops.injector"), n0 / 10);
  ck_assert_str_eq(json_string_value(jget(doc, "directions.0.from")), "sw0");
  ck_assert_int_eq(jint(doc, "injectors.0.matched"), n0);
  ck_assert_int_eq(jint(doc, "injectors.0.dropped"), n0 / 10);
  /* The drops were where frames leave by port 1 (dir=out, the default). */
  ck_assert_int_eq(jint(doc, "ports.1.tx_drops.injector"), n0 / 10);
  /* What port 1 sent is what came in on port 0, less the drops. */
  ck_assert_int_eq(jint(doc, "ports.1.tx_frames"),
                   jint(doc, "ports.0.rx_frames") - jint(doc, "directions.0.dropped") -
                       jint(doc, "ports.0.rx_control"));
  json_decref(doc);
  jct_topo_destroy(t);
}
END_TEST

/* ---- the same drop on the switch and on the wire -------------------------------- */

typedef struct {
  jct__loop_t loop;
  jct__ranks_t *ranks;
  jct_exec_t *exec;
  jct_timer_t exec_timer;
} job_t;

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns) {
  job_t *j = t->data;
  if (jct_exec_on_timer(j->exec, now_ns) == 0) jct__ranks_kick(j->ranks);
}

static void turn(void *arg) {
  job_t *j = arg;
  uint64_t d = jct_exec_next_deadline_ns(j->exec);
  if (d == UINT64_MAX)
    jct_timer_stop(&j->loop.clock, &j->exec_timer);
  else if (!jct_timer_active(&j->exec_timer) || j->exec_timer.due_ns != d)
    jct_timer_start(&j->loop.clock, &j->exec_timer, d, on_exec_timer);
}

static bool job_done(void *arg) {
  job_t *j = arg;
  return jct_exec_done(j->exec) || jct__ranks_failed(j->ranks, NULL, 0);
}

/* What one run of the job showed. */
typedef struct {
  jct_uroce_stats_t qp;
  uint64_t switch_drops; /* the in-process switch's injector drops */
  char log_line[512];    /* the fault log's only line, without its t_ns */
  size_t log_lines;
  /* from the forwarder's capture */
  unsigned naks, naks_for_drop, psn_drop_sent, first_resent_psn, resent;
} seen_t;

/* Run the 2-rank ring (1 MiB) over topology t; with the switch in this
 * process when switch_pcap is set (the injector, its fault log and its
 * pcap_out on it), else across whatever forwards between sw0 and sw1. */
static void run_job(const jct_topo_t *t, const char *switch_pcap, const char *switch_log,
                    seen_t *out) {
  char err[512] = "";
  jct_schedule_t *s = NULL;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 2, 1u << 20, 1, err, sizeof err), 0);
  job_t j = {0};
  j.exec_timer.data = &j;
  ck_assert_int_eq(jct__loop_open(&j.loop, 1000000, err, sizeof err), 0);
  jct__chain_t *chain = NULL;
  jct_fabric_t *fab = NULL;
  FILE *log = NULL;
  if (switch_pcap) {
    const char *spec = DROP_SPEC;
    ck_assert_int_eq(jct__chain_new(&chain, &spec, 1, 1, err, sizeof err), 0);
    log = fopen(switch_log, "w");
    ck_assert_ptr_nonnull(log);
    jct_fabric_opts_t fo = {.nranks = 2,
                            .rate_bps = RATE_BPS,
                            .mtu = 9000,
                            .data_prio = 3,
                            .topo = t,
                            .pcap_out = switch_pcap,
                            .fault_log = log,
                            .chain = chain};
    ck_assert_msg(jct_fabric_new(&fab, &j.loop.uv, &j.loop.clock, &fo, err, sizeof err) == 0,
                  "fabric: %s", err);
  }
  jct__ranks_opts_t ro = {.rate_bps = RATE_BPS,
                          .path_mtu_bytes = 4096,
                          .timeout = 14, /* 67 ms: a timeout would show, and not hang the test */
                          .retry_cnt = 7,
                          .dscp = 26,
                          .data_prio = 3};
  ck_assert_msg(jct__ranks_new(&j.ranks, &j.loop.uv, &j.loop.clock, t, s, &ro, err, sizeof err) ==
                    0,
                "ranks: %s", err);
  jct_exec_hooks_t hooks = jct__ranks_hooks(j.ranks);
  ck_assert_int_eq(jct_exec_new(&j.exec, s, 0, &hooks), 0);
  jct__ranks_attach(j.ranks, j.exec);
  uint64_t start = jct_now_ns();
  if (fab) jct_fabric_start(fab, start);
  ck_assert_int_eq(jct_exec_start(j.exec, start), 0);
  jct__ranks_kick(j.ranks);
  jct__loop_run_until(&j.loop, job_done, turn, &j, start + 10000000000u);
  ck_assert_msg(!jct__ranks_failed(j.ranks, err, sizeof err), "ranks failed: %s", err);
  ck_assert_msg(jct_exec_done(j.exec), "the ring did not finish in 10 s");
  /* Let the last ACKs cross before the counters are read. */
  jct__loop_run_until(&j.loop, job_done, NULL, &j, jct_now_ns() + 50000000u);
  jct__ranks_stats(j.ranks, &out->qp);
  ck_assert_uint_eq(jct__ranks_harness_losses(j.ranks), 0);
  if (fab) {
    jct_switch_totals_t tot;
    jct_switch_totals(jct_fabric_switch(fab), &tot);
    out->switch_drops = tot.drops[JCT_SW_DROP_INJECTOR];
  }
  jct__ranks_attach(j.ranks, NULL);
  jct_timer_stop(&j.loop.clock, &j.exec_timer);
  jct_exec_free(j.exec);
  jct__ranks_free(j.ranks);
  jct_fabric_free(fab);
  jct__loop_close(&j.loop);
  if (log) fclose(log);
  jct__chain_free(chain);
  jct_schedule_free(s);
}

/* The fault log's lines; the only one (when one) into out->log_line with its
 * "t_ns" taken out (the two forwarders' clocks start apart). */
static void read_log(const char *path, seen_t *out) {
  char *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(text);
  out->log_lines = count_lines(text);
  char *t = strstr(text, "\"t_ns\":");
  if (out->log_lines == 1 && t) {
    char *end = strchr(t, ',');
    ck_assert_ptr_nonnull(end);
    memmove(t, end + 1, strlen(end + 1) + 1);
    snprintf(out->log_line, sizeof out->log_line, "%s", text);
  }
  free(text);
}

/* What crossed the forwarder on connection 0 (data to QP 0x101, its
 * acknowledgements to 0x100): NAKs, and the data PSNs in order of
 * departure: the first PSN sent that is not after the highest before it
 * starts the go-back-N. */
static void read_capture(const char *path, seen_t *out) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
  ck_assert_msg(p != NULL, "%s: %s", path, eb);
  struct pcap_pkthdr *h;
  const u_char *d;
  bool any = false;
  uint32_t hi = 0;
  out->first_resent_psn = UINT32_MAX;
  while (pcap_next_ex(p, &h, &d) == 1) {
    jct_packet_t pkt;
    if (jct_decode(JCT_LINK_EN10MB, d, h->caplen, h->len, &pkt) != JCT_PKT_ROCE) continue;
    const struct jct_roce_hdrs *r = &pkt.roce;
    if (r->bth.dest_qp == DROP_QP - 1 && (r->aeth.syndrome >> 5) == JCT_AETH_NAK &&
        r->bth.opcode == 0x11) {
      out->naks++;
      if (r->bth.psn == DROP_PSN && (r->aeth.syndrome & 0x1f) == JCT_NAK_PSN_SEQ_ERR)
        out->naks_for_drop++;
    }
    if (r->bth.dest_qp != DROP_QP || r->bth.opcode > 0x0b) continue; /* RC requests only */
    uint32_t psn = r->bth.psn;
    if (psn == DROP_PSN) out->psn_drop_sent++;
    if (any && psn <= hi) {
      if (out->first_resent_psn == UINT32_MAX) out->first_resent_psn = psn;
      out->resent++;
    }
    if (!any || psn > hi) hi = psn;
    any = true;
  }
  pcap_close(p);
}

START_TEST(wire_drop_makes_the_switchs_nak) {
  if (!ns_own("wire", "wire_drop_makes_the_switchs_nak", NS_USERNS)) return;
  jct_topo_t *t = make_topo();
  char sw_pcap[256], sw_log[256], w_pcap[256], w_log[256], w_json[256];
  fresh_name(sw_pcap, sizeof sw_pcap, ".pcap");
  fresh_name(sw_log, sizeof sw_log, ".jsonl");
  fresh_name(w_pcap, sizeof w_pcap, ".pcap");
  fresh_name(w_log, sizeof w_log, ".jsonl");
  fresh_name(w_json, sizeof w_json, ".json");
  seen_t sw = {0}, wi = {0};

  run_job(t, sw_pcap, sw_log, &sw);
  read_log(sw_log, &sw);
  read_capture(sw_pcap, &sw);

  char *extra[] = {"--rate",      RATE,  "--inject",   DROP_SPEC, "--fault-log", w_log,
                   "--pcap-out", w_pcap, "--json", w_json, NULL};
  child_t c = wire_start(extra);
  run_job(t, NULL, NULL, &wi);
  json_t *doc = wire_stop(&c, w_json);
  read_log(w_log, &wi);
  read_capture(w_pcap, &wi);

  /* The one drop, on either: one fault-log line, the same packet. */
  ck_assert_uint_eq(sw.switch_drops, 1);
  ck_assert_int_eq(jint(doc, "injectors.0.dropped"), 1);
  ck_assert_int_eq(jint(doc, "directions.0.dropped") + jint(doc, "directions.1.dropped"), 1);
  ck_assert_uint_eq(sw.log_lines, 1);
  ck_assert_uint_eq(wi.log_lines, 1);
  ck_assert_ptr_nonnull(strstr(sw.log_line, "\"psn\":20,"));
  ck_assert_ptr_nonnull(strstr(sw.log_line, "\"action\":\"drop\""));
  ck_assert_str_eq(wi.log_line, sw.log_line);
  /* The receiver's one NAK and the sender's one rewind, by the QPs. */
  const seen_t *both[2] = {&sw, &wi};
  for (int i = 0; i < 2; i++) {
    const seen_t *x = both[i];
    const char *who = i ? "wire" : "switch";
    ck_assert_msg(x->qp.tx_naks == 1 && x->qp.rx_naks == 1, "%s: %llu NAKs sent, %llu received",
                  who, (unsigned long long)x->qp.tx_naks, (unsigned long long)x->qp.rx_naks);
    ck_assert_msg(x->qp.go_back_n == 1 && x->qp.timeouts == 0,
                  "%s: %llu go-back-Ns, %llu timeouts", who, (unsigned long long)x->qp.go_back_n,
                  (unsigned long long)x->qp.timeouts);
    ck_assert_uint_ge(x->qp.out_of_seq_pkts, 1);
    ck_assert_uint_ge(x->qp.retx_pkts, 1);
    /* ... and by what crossed the forwarder: the NAK names PSN 20, the
     * resending starts at 20, which crossed once (its first copy dropped). */
    ck_assert_msg(x->naks == 1 && x->naks_for_drop == 1, "%s: %u NAKs crossed, %u for PSN 20",
                  who, x->naks, x->naks_for_drop);
    ck_assert_msg(x->first_resent_psn == DROP_PSN, "%s: resending started at PSN %u", who,
                  x->first_resent_psn);
    ck_assert_uint_eq(x->psn_drop_sent, 1);
    ck_assert_uint_eq(x->resent, x->qp.retx_pkts);
  }
  json_decref(doc);
  unlink(sw_pcap);
  unlink(sw_log);
  unlink(w_pcap);
  unlink(w_log);
  unlink(w_json);
  jct_topo_destroy(t);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------ */

/* jctlab wire ARGS... --fault-log F --pcap-out P: status 2, one stderr line
 * naming `word`, nothing on stdout, neither file made. */
static void refused(const char *word, char *const args[]) {
  char log[256], pcap[256];
  fresh_name(log, sizeof log, ".jsonl");
  fresh_name(pcap, sizeof pcap, ".pcap");
  char *argv[32] = {JCT_BINARY, "wire"};
  size_t n = 2;
  for (size_t i = 0; args[i]; i++)
    argv[n++] = args[i];
  char *tail[] = {"--fault-log", log, "--pcap-out", pcap, NULL};
  for (size_t i = 0; tail[i]; i++)
    argv[n++] = tail[i];
  argv[n] = NULL;
  result_t r = run_cmd(argv, NULL, 10);
  ck_assert_msg(r.status == 2, "%s: status %d (%s)", word, r.status, r.err);
  ck_assert_msg(count_lines(r.err) == 1, "%s: stderr is not one line: %s", word, r.err);
  ck_assert_msg(strstr(r.err, word) != NULL, "stderr does not name '%s': %s", word, r.err);
  ck_assert_uint_eq(r.out_len, 0);
  ck_assert_msg(!exists(log) && !exists(pcap), "%s: a file was left behind", word);
  result_free(&r);
}

START_TEST(wire_bad_input) {
  refused("jctwire-none0", (char *[]){"jctwire-none0", "jctwire-none1", NULL});
  refused("'lo' given twice", (char *[]){"lo", "lo", NULL});
  refused("p=2", (char *[]){"a0", "a1", "--inject", "drop p=2", NULL});
  refused("'5parsecs'", (char *[]){"a0", "a1", "--duration", "5parsecs", NULL});
  refused("'0'", (char *[]){"a0", "a1", "--duration", "0", NULL});
  refused("port=2", (char *[]){"a0", "a1", "--inject", "drop p=0.1 port=2", NULL});
  refused("two interfaces", (char *[]){"a0", NULL});
  refused("'--nonsense'", (char *[]){"a0", "a1", "--nonsense", NULL});
  refused("'fast'", (char *[]){"a0", "a1", "--rate", "fast", NULL});
}
END_TEST

START_TEST(wire_refuses_a_down_port) {
  if (!ns_own("wire", "wire_refuses_a_down_port", NS_USERNS)) return;
  jct_topo_t *t = make_topo();
  /* sw1 taken down (SIOCSIFFLAGS, in the test's own namespace). */
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr = {0};
  strcpy(ifr.ifr_name, "sw1");
  ck_assert_int_eq(ioctl(sock, SIOCGIFFLAGS, &ifr), 0);
  ifr.ifr_flags &= ~IFF_UP;
  ck_assert_int_eq(ioctl(sock, SIOCSIFFLAGS, &ifr), 0);
  close(sock);
  refused("'sw1' is down", (char *[]){"sw0", "sw1", NULL});
  jct_topo_destroy(t);
}
END_TEST

/* A TUN interface (IFF_TUN, no Ethernet header) is not a port. */
START_TEST(wire_refuses_non_ethernet) {
  if (!ns_own("wire", "wire_refuses_non_ethernet", NS_USERNS)) return;
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    printf("wire: wire_refuses_non_ethernet skipped: /dev/net/tun: %s\n", strerror(errno));
    return;
  }
  jct_topo_t *t = make_topo();
  struct ifreq ifr = {0};
  strcpy(ifr.ifr_name, "jcttun0");
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  ck_assert_int_eq(ioctl(fd, TUNSETIFF, &ifr), 0);
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_eq(ioctl(sock, SIOCGIFFLAGS, &ifr), 0);
  ifr.ifr_flags |= IFF_UP;
  ck_assert_int_eq(ioctl(sock, SIOCSIFFLAGS, &ifr), 0);
  close(sock);
  refused("'jcttun0' is not Ethernet", (char *[]){"sw0", "jcttun0", NULL});
  close(fd);
  jct_topo_destroy(t);
}
END_TEST

/* --duration ends it by itself, status 0, and the JSON says so. */
START_TEST(wire_ends_after_duration) {
  if (!ns_own("wire", "wire_ends_after_duration", NS_USERNS)) return;
  jct_topo_t *t = make_topo();
  char js[256];
  fresh_name(js, sizeof js, ".json");
  char *argv[] = {JCT_BINARY, "wire", "sw0", "sw1", "--duration", "300ms", "--json", js, NULL};
  double t0 = now_s();
  result_t r = run_cmd(argv, NULL, 10);
  double took = now_s() - t0;
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "ended by duration"));
  result_free(&r);
  char *text = slurp(js, NULL);
  ck_assert_ptr_nonnull(text);
  json_t *doc = parse_json(text, "jctlab wire --json");
  free(text);
  unlink(js);
  ck_assert_str_eq(json_string_value(jget(doc, "wire.ended_by")), "duration");
  json_int_t ns = jint(doc, "wire.elapsed_ns");
  ck_assert_msg(ns >= 300000000 && ns < 1000000000, "elapsed %lld ns", (long long)ns);
  ck_assert_msg(took < 5, "took %.1f s", took);
  /* The kernel reports 10 Gbit/s for a veth: the default rate. */
  ck_assert_int_eq(jint(doc, "wire.rate_bps"), 10000000000);
  json_decref(doc);
  jct_topo_destroy(t);
}
END_TEST

Suite *wire_suite(void) {
  Suite *s = suite_create("wire");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 60);
  tcase_add_test(core, wire_forwards_exactly);
  tcase_add_test(core, wire_drop_makes_the_switchs_nak);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_set_timeout(limits, 30);
  tcase_add_test(limits, wire_bad_input);
  tcase_add_test(limits, wire_refuses_a_down_port);
  tcase_add_test(limits, wire_refuses_non_ethernet);
  tcase_add_test(limits, wire_ends_after_duration);
  suite_add_tcase(s, limits);
  return s;
}
