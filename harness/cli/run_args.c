/* The fabric options `jctlab run` and `jctlab replay` share (commands.h):
 * argv into a jct__run_args_t (harness/plan/run_args.h), each value read
 * with units.h's parsers and checked against the others (--lab, --agents,
 * --transport, --ranks). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "harness/base/units.h"
#include "harness/orch/names.h"
#include "harness/plan/run_args.h"
#include "harness/transport/rdma_sysfs.h"

const char jct__run_args_help[] =
    "  --rate RATE        every link's rate: 100mbit, 1gbit, 10gbit (default 100mbit)\n"
    "  --delay TIME       every link's propagation delay: 1us, 500ns, 2ms (default 1us)\n"
    "  --reps K           repetitions (default 5)\n"
    "  --no-pfc           no PFC on the data priority (lossy fabric)\n"
    "  --ecn              ECN marking on the data priority (Kmin 64 KiB, Kmax 256 KiB, Pmax 0.2)\n"
    "  --ecn-thresholds KMIN,KMAX,PMAX  other marking thresholds (implies --ecn); the DCQCN\n"
    "                     paper's: 5KB,200KB,0.01\n"
    "  --cc none|dcqcn    congestion control in uroce's QPs: DCQCN answers ECN marks with\n"
    "                     CNPs and rate cuts (default: dcqcn with --ecn, else none)\n"
    "  --cc-profile P     DCQCN's parameters: connectx (NVIDIA's defaults; default) or paper\n"
    "                     (Zhu et al., SIGCOMM 2015)\n"
    "  --cc-dilation F    DCQCN's timers x F, its rate steps / F (auto: the profile's line\n"
    "                     rate, 100 or 40 Gbit/s, / --rate; 1: as the profile has them)\n"
    "  --path-mtu N       RoCE path MTU: 256, 512, 1024, 2048 or 4096 (default 4096)\n"
    "  --timeout N        QP local ACK timeout exponent, 4.096 us * 2^N (default 20, NCCL's)\n"
    "  --retry N          QP retry count (default 7, NCCL's)\n"
    "  --inject SPEC      an injector on the switch's path, repeatable, in order:\n"
    "                     'drop p=0.001', 'drop psn=4096 qp=0x101' ('psn=4096@2': its 2nd\n"
    "                     transmission), 'delay 50us jitter=10us',\n"
    "                     'pause prio=3 quanta=65535 rate=1000/s for=200ms port=2', 'ecn p=0.05',\n"
    "                     'corrupt p=0.0001', 'flap down=5ms every=1s', 'reorder p=0.01 gap=5',\n"
    "                     'duplicate p=0.01', 'rate 10mbit overhead=24'\n"
    "                     (common keys: where=\"FILTER\" port=N dir=in|out at= until= seed=;\n"
    "                     at=host:RANK: drop on rank RANK's kernel path, tc-eBPF)\n"
    "  --inject-at P      where the --inject specs that name no place run: switch (default)\n"
    "                     or host:RANK\n"
    "  --seed N           the run's seed; injectors without seed= derive theirs (default 1)\n"
    "  --pfc-watchdog[=drop|forward]  the switch's PFC watchdog (200 ms, 200 ms, drop)\n"
    "  --fault-log FILE   every injector action as a JSON line\n"
    "  --pcap-drops FILE  the frames injectors dropped (nanosecond pcap)\n"
    "  --pcap-out FILE    write every frame that crossed the switch (nanosecond pcap)\n"
    "  --pcap-port LINK   --pcap-out holds one link: a rank's (3), or one between switches\n"
    "                     (leaf1:spine0: what leaf 1 sent to spine 0; spine0:leaf1)\n"
    "  --pcap-in FILE     write every frame as it reached the switch, before the injectors\n"
    "  -s, --snaplen N    keep the first N bytes of each frame in --pcap-out/--pcap-in, as\n"
    "                     tcpdump -s (default 0: whole frames; 128 keeps every RoCE header)\n"
    "  -C SIZE            rotate --pcap-out/--pcap-in as tcpdump -C: a new file once one holds\n"
    "                     more than SIZE, named FILE, FILE1, FILE2, ... SIZE is millions of\n"
    "                     bytes, as tcpdump's (-C 10), or has its unit (500KB = 500,000 bytes,\n"
    "                     10MiB or 10M = 10 * 2^20). Every file ends on a whole record\n"
    "  -W N               with -C: at most N files, FILE0 to FILE<N-1> (zero-padded), the\n"
    "                     oldest written over, as tcpdump -W: the newest N are kept\n"
    "  --nic-queue N      uroce: a NIC transmit queue of N packets that the QPs fill ahead\n"
    "                     of the link, as rxe's 64 per QP (default 0: none)\n"
    "  --nak-delay TIME   uroce: a slow responder sends its NAK TIME after the gap\n"
    "  --nak-react TIME   uroce: a slow requester goes back TIME after the NAK arrives\n"
    "                     (both default 0, a NIC's; soft-RoCE under load takes ms);\n"
    "                     --nic-queue or --nak-react replaces a capture's go-backs\n"
    "                     replayed per loss\n"
    "  --no-skip          uroce: keep real time through idle times (a retransmit timeout\n"
    "                     with nothing in flight) instead of skipping them\n"
    "  --hold-naks        verbs, a capture's replay: hold each captured NAK at its\n"
    "                     responder's host as long as the capture's requester took to act\n"
    "                     on it, less the lab rxe's own time (off: rxe's queue decides)\n"
    "  --topology T       star (default) or leaf-spine:leaves=L,spines=S,hosts-per-leaf=H\n"
    "                     [,uplink-rate=RATE][,uplink-delay=TIME]: switches in one loop,\n"
    "                     ECMP at the leaves; injectors may name links (port=leaf0:spine1)\n"
    "  --placement P      leaf-spine: which host each rank lands on: packed (default),\n"
    "                     spread (rank i under leaf i mod L), random:SEED, or hosts 0,2,4,..\n"
    "  --ecmp-seed N      leaf-spine: the ECMP hash's seed (CRC-32 of the 5-tuple; default 0)\n"
    "  --ecmp MODE        hash (default, as ASICs); what-ifs: per-packet (spraying) or\n"
    "                     flowlet[:GAP] (a new random path after GAP idle, default 500us)\n"
    "  --series TIME      uroce: sample the first repetition every TIME: the queue toward\n"
    "                     each rank and each sending QP's rate (DCQCN), in --json \"series\"\n"
    "  --reroute-detection TIME|off  leaf-spine: a flapped cable leaves the ECMP groups\n"
    "                     TIME after it went down, resiliently (default 1ms; off: never)\n"
    "  --qps-per-connection N  each connection as N QPs (NCCL_IB_QPS_PER_CONNECTION), each\n"
    "                     message split across them; on a leaf-spine fabric each QP has its\n"
    "                     own UDP source port, so ECMP spreads them (default 1)\n"
    "  --tdf F            time dilation: the emulated world runs F times slower than wall\n"
    "                     time (links at RATE/F here, every time x F, every reported time / F);\n"
    "                     default: uroce and the lab above the ceiling take the smallest\n"
    "                     power of two that brings RATE under it (a capture's replay in the\n"
    "                     lab holding its host pauses: at least 4); 1: never dilate\n"
    "  --rate-ceiling R   the highest link rate run undilated (default 100mbit, measured)\n"
    "  --wall-budget TIME refuse a run estimated to take longer in wall time (default 1h)\n"
    "  --silent-after TIME  jctlab rank: a task not heard from for TIME during a repetition\n"
    "                     (its host hung or off the network) makes the run invalid, named\n"
    "                     (default 1.5s; emulated hosts sharing a CPU may need more)\n"
    "  --transport T      uroce (jctlab's own, in namespaces; default) or verbs (rdma-core)\n"
    "  --lab N            verbs over soft-RoCE: boot N VMs with Linux rxe, one per rank,\n"
    "                     their NICs on the switch (implies --transport verbs and --ranks N)\n"
    "  --agents LIST      verbs on hosts: HOST:PORT,... of `jctlab agent --listen`, in rank\n"
    "                     order; their own fabric, no injectors (implies --transport verbs)\n"
    "  --device NAME      verbs: the RDMA device each rank's address must be on (rxe0, mlx5_0)\n"
    "  --device-port N    verbs: and its port (default: rdma_cm's, by address)\n"
    "  --gid-index N      verbs: the GID table entry that must hold the rank's address\n"
    "  --traffic-class N  verbs: the QPs' traffic class, the IP TOS byte (default 104, DSCP 26)\n"
    "  --counters LIST    verbs: hw_counters names each agent reads around every repetition,\n"
    "                     per rank in the result (np_cnp_sent,out_of_sequence; README)\n";

#define bad jct__cmd_bad

/* The verbs RDMA settings' options (commands.h). */
int jct__rdma_opt_parse(jct_rdma_opts_t *r, const char *prog, const char *w, const char *v) {
  char e[256];
  if (!strcmp(w, "--device")) {
    if (jct__rdma_set_device(r, v, e, sizeof e)) return bad(prog, "%s: %s", w, e);
  } else if (!strcmp(w, "--counters")) {
    if (jct__rdma_add_counters(r, v, e, sizeof e)) return bad(prog, "%s: %s", w, e);
  } else if (!strcmp(w, "--device-port") || !strcmp(w, "--gid-index") ||
             !strcmp(w, "--traffic-class")) {
    uint64_t n, max = w[2] == 'd' ? 254 : w[2] == 'g' ? 4095 : 255;
    if (jct__parse_count(v, max, &n) || (w[2] == 'd' && !n))
      return bad(prog, "%s: '%s' is not %u to %llu", w, v, w[2] == 'd' ? 1u : 0u,
                 (unsigned long long)max);
    if (w[2] == 'd') {
      r->port = (uint8_t)n;
    } else if (w[2] == 'g') {
      r->gid_index = (uint16_t)n;
      r->has_gid_index = true;
    } else {
      r->traffic_class = (uint8_t)n;
      r->has_traffic_class = true;
    }
  } else {
    return 0;
  }
  return 1;
}


int jct__run_args_parse(jct__run_args_t *a, int argc, char **argv, int *i, const char *prog) {
  const char *w = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  jct_run_opts_t *r = &a->run;
  /* Flags without a value. */
  if (!strcmp(w, "--no-pfc")) {
    r->pfc = false;
    return 1;
  } else if (!strcmp(w, "--ecn")) {
    r->ecn = true;
    return 1;
  } else if (!strcmp(w, "--no-skip")) {
    r->no_skip = true;
    return 1;
  } else if (!strcmp(w, "--hold-naks")) {
    r->hold_naks = true;
    return 1;
  } else if (!strcmp(w, "--pfc-watchdog") || !strcmp(w, "--pfc-watchdog=drop")) {
    jct__watchdog_set(r, JCT_WATCHDOG_DROP);
    return 1;
  } else if (!strcmp(w, "--pfc-watchdog=forward")) {
    jct__watchdog_set(r, JCT_WATCHDOG_FORWARD);
    return 1;
  } else if (!strncmp(w, "--pfc-watchdog=", 15)) {
    return bad(prog, "%s: the action '%s' is not drop or forward", "--pfc-watchdog", w + 15);
  }
  static const char *const valued[] = {"--synth",
                                       "--schedule",
                                       "--ranks",
                                       "--bytes",
                                       "--channels",
                                       "--rate",
                                       "--delay",
                                       "--reps",
                                       "--timeout",
                                       "--retry",
                                       "--inject",
                                       "--seed",
                                       "--path-mtu",
                                       "--fault-log",
                                       "--pcap-drops",
                                       "--pcap-out",
                                       "--pcap-in",
                                       "--transport",
                                       "--lab",
                                       "--nic-queue",
                                       "--agents",
                                       "-s",
                                       "--snaplen",
                                       "-C",
                                       "-W",
                                       "--nak-delay",
                                       "--nak-react",
                                       "--cc",
                                       "--cc-profile",
                                       "--cc-dilation",
                                       "--topology",
                                       "--placement",
                                       "--ecmp-seed",
                                       "--ecmp",
                                       "--reroute-detection",
                                       "--series",
                                       "--qps-per-connection",
                                       "--tdf",
                                       "--rate-ceiling",
                                       "--wall-budget",
                                       "--silent-after",
                                       "--inject-at",
                                       "--pcap-port",
                                       "--ecn-thresholds",
                                       "--device",
                                       "--device-port",
                                       "--gid-index",
                                       "--traffic-class",
                                       "--counters",
                                       NULL};
  size_t k = 0;
  while (valued[k] && strcmp(valued[k], w))
    k++;
  if (!valued[k]) return 0;
  if (!v) return bad(prog, "%s needs a value", w);
  (*i)++;
  int got = jct__capture_opt_parse(r, w, v, prog); /* -s, -C, -W */
  if (got) return got;
  char e[256];
  if (!strcmp(w, "--synth")) {
    a->synth = v;
  } else if (!strcmp(w, "--topology")) {
    if (jct_clos_parse(&a->clos, v, e, sizeof e)) return bad(prog, "--topology: %s", e);
  } else if (!strcmp(w, "--qps-per-connection")) {
    if (jct__parse_count(v, JCT_SCHEDULE_MAX_QPS_PER_CONN, &a->qps_per_conn) || !a->qps_per_conn)
      return bad(prog, "%s: '%s' is not 1 to %u", w, v, JCT_SCHEDULE_MAX_QPS_PER_CONN);
  } else if ((got = jct__rdma_opt_parse(&r->rdma, prog, w, v))) {
    return got;
  } else if (!strcmp(w, "--placement")) {
    if (jct_placement_parse(&a->clos.placement, v, e, sizeof e))
      return bad(prog, "--placement: %s", e);
  } else if (!strcmp(w, "--ecmp-seed")) {
    uint64_t n;
    if (jct__parse_count(v, UINT32_MAX, &n))
      return bad(prog, "%s: '%s' is not 0 to 4294967295", w, v);
    a->clos.ecmp_seed = (uint32_t)n;
  } else if (!strcmp(w, "--series")) {
    if (jct__parse_time_ns(v, &r->series_ns) || !r->series_ns || r->series_ns > 1000000000u)
      return bad(prog, "%s: '%s' is not a time from 1ns to 1s (100us, 1ms)", w, v);
  } else if (!strcmp(w, "--reroute-detection")) {
    if (jct_clos_reroute_parse(&a->clos, v, e, sizeof e)) return bad(prog, "%s: %s", w, e);
  } else if (!strcmp(w, "--ecmp")) {
    if (jct_clos_ecmp_parse(&a->clos, v, e, sizeof e)) return bad(prog, "--ecmp: %s", e);
  } else if (!strcmp(w, "--cc")) {
    if (jct__cc_parse(v, &r->cc)) return bad(prog, "%s: '%s' is not none or dcqcn", w, v);
  } else if (!strcmp(w, "--cc-dilation")) {
    char *end;
    double f = strtod(v, &end);
    if (!strcmp(v, "auto"))
      r->cc_dilation = 0;
    else if (*end || !(f >= 1 && f <= 1e9))
      return bad(prog, "%s: '%s' is not auto or a factor from 1 to 1e9", w, v);
    else
      r->cc_dilation = f;
  } else if (!strcmp(w, "--tdf")) {
    double f;
    if (jct__parse_number(v, &f) || !(f >= 1 && f <= JCT_CLOCK_MAX_TDF))
      return bad(prog, "%s: '%s' is not a factor from 1 to 1048576", w, v);
    r->tdf = f;
  } else if (!strcmp(w, "--rate-ceiling")) {
    if (jct__parse_rate_bps(v, &r->rate_ceiling_bps) || r->rate_ceiling_bps < 1000000)
      return bad(prog, "%s: '%s' is not a rate of 1mbit or more (200mbit, 1gbit)", w, v);
  } else if (!strcmp(w, "--wall-budget")) {
    if (jct__parse_time_ns(v, &r->wall_budget_ns) || !r->wall_budget_ns)
      return bad(prog, "%s: '%s' is not a time (90s, 30min, 2h)", w, v);
  } else if (!strcmp(w, "--silent-after")) {
    if (jct__parse_time_ns(v, &r->silent_after_ns) || r->silent_after_ns < JCT_RUN_SILENT_AFTER_MIN_NS)
      return bad(prog, "%s: '%s' is not a time of 200ms or more (1.5s, 5s)", w, v);
  } else if (!strcmp(w, "--cc-profile")) {
    if (jct_dcqcn_profile_parse(v, &r->cc_profile))
      return bad(prog, "%s: '%s' is not connectx or paper", w, v);
  } else if (!strcmp(w, "--schedule")) {
    a->schedule = v;
  } else if (!strcmp(w, "--ranks")) {
    if (jct__parse_count(v, 1u << 20, &a->ranks) || a->ranks < 2)
      return bad(prog, "%s %s: not a number of ranks (2 or more)", w, v);
    if (r->lab_ranks && a->ranks != r->lab_ranks)
      return bad(prog, "--ranks %s: the lab has %u", v, r->lab_ranks);
  } else if (!strcmp(w, "--agents")) {
    if (r->lab_ranks) return bad(prog, "--agents: the lab's VMs are the ranks already (--lab)");
    if (a->transport_set && r->transport == JCT_TRANSPORT_UROCE)
      return bad(prog, "--agents: agents run verbs, not uroce");
    r->agents = v;
    r->transport = JCT_TRANSPORT_VERBS;
  } else if (!strcmp(w, "--nic-queue")) {
    uint64_t n;
    if (jct__parse_count(v, 4096, &n)) return bad(prog, "%s: '%s' is not 0 to 4096", w, v);
    r->nic_queue_pkts = (uint32_t)n;
    a->user_set |= JCT__SET_NIC_QUEUE;
  } else if (!strcmp(w, "--nak-delay") || !strcmp(w, "--nak-react")) {
    bool react = w[6] == 'r';
    uint64_t *t = react ? &r->nak_react_ns : &r->nak_delay_ns;
    if (jct__parse_time_ns(v, t) || *t > 10000000000ull)
      return bad(prog, "%s: '%s' is not a time up to 10 s (500us, 2ms)", w, v);
    a->user_set |= react ? JCT__SET_NAK_REACT : JCT__SET_NAK_DELAY;
  } else if (!strcmp(w, "--transport")) {
    if (jct__transport_parse(v, &r->transport))
      return bad(prog, "%s: '%s' is not uroce or verbs", w, v);
    a->transport_set = true;
    if (r->lab_ranks && r->transport == JCT_TRANSPORT_UROCE)
      return bad(prog, "--transport uroce: the lab's ranks run verbs");
  } else if (!strcmp(w, "--lab")) {
    uint64_t n;
    if (jct__parse_count(v, 64, &n) || n < 2) return bad(prog, "%s: '%s' is not 2 to 64", w, v);
    if (a->ranks && a->ranks != n)
      return bad(prog, "%s %s: --ranks is %llu", w, v, (unsigned long long)a->ranks);
    if (a->transport_set && r->transport == JCT_TRANSPORT_UROCE)
      return bad(prog, "--lab: the lab's ranks run verbs, not uroce");
    if (r->agents) return bad(prog, "--lab: the ranks are --agents already");
    r->lab_ranks = (uint32_t)n;
    a->ranks = n;
    r->transport = JCT_TRANSPORT_VERBS;
  } else if (!strcmp(w, "--bytes")) {
    if (jct__parse_size_bytes(v, &a->bytes)) return bad(prog, "%s: '%s' is not a size", w, v);
  } else if (!strcmp(w, "--channels")) {
    if (jct__parse_count(v, 64, &a->channels) || !a->channels)
      return bad(prog, "%s: '%s' is not 1 to 64", w, v);
  } else if (!strcmp(w, "--rate")) {
    if (jct__parse_rate_bps(v, &r->rate_bps))
      return bad(prog, "%s: '%s' is not a rate (100mbit, 1gbit, 10gbit)", w, v);
    a->user_set |= JCT__SET_RATE;
  } else if (!strcmp(w, "--delay")) {
    if (jct__parse_time_ns(v, &r->prop_delay_ns) || r->prop_delay_ns > 1000000000u)
      return bad(prog, "%s: '%s' is not a time up to 1 s (1us, 500ns, 2ms)", w, v);
    a->user_set |= JCT__SET_DELAY;
  } else if (!strcmp(w, "--reps")) {
    if (jct__parse_count(v, JCT_RUN_MAX_REPS, &a->reps) || !a->reps)
      return bad(prog, "%s: '%s' is not 1 to 1000", w, v);
  } else if (!strcmp(w, "--ecn-thresholds")) {
    if (jct__parse_ecn_thresholds(v, &r->ecn_kmin_bytes, &r->ecn_kmax_bytes, &r->ecn_pmax))
      return bad(prog, "%s: '%s' is not KMIN,KMAX,PMAX (sizes with KMIN <= KMAX, 0 < PMAX <= 1)",
                 w, v);
    r->ecn = true;
  } else if (!strcmp(w, "--path-mtu")) {
    if (jct__parse_path_mtu(v, &r->path_mtu_bytes))
      return bad(prog, "%s: '%s' is not 256, 512, 1024, 2048 or 4096", w, v);
    a->user_set |= JCT__SET_PATH_MTU;
  } else if (!strcmp(w, "--timeout")) {
    if (jct__parse_count(v, 31, &a->timeout)) return bad(prog, "%s: '%s' is not 0 to 31", w, v);
    a->user_set |= JCT__SET_TIMEOUT;
  } else if (!strcmp(w, "--retry")) {
    if (jct__parse_count(v, 7, &a->retry)) return bad(prog, "%s: '%s' is not 0 to 7", w, v);
    a->user_set |= JCT__SET_RETRY;
  } else if (!strcmp(w, "--inject")) {
    if (r->ninject == JCT_RUN_MAX_INJECTORS) return bad(prog, "%s: at most 16 of them (%s)", w, v);
    a->inject[r->ninject++] = v;
  } else if (!strcmp(w, "--inject-at")) {
    char *end = NULL;
    if (strcmp(v, "switch") != 0 && (strncmp(v, "host:", 5) != 0 || v[5] < '0' || v[5] > '9' ||
                                     (strtoul(v + 5, &end, 10), *end != 0)))
      return bad(prog, "%s: '%s' is not switch or host:RANK", w, v);
    a->inject_at = v;
  } else if (!strcmp(w, "--seed")) {
    if (jct__parse_count(v, UINT64_MAX, &r->seed))
      return bad(prog, "%s: '%s' is not a number", w, v);
  } else if (!strcmp(w, "--fault-log")) {
    if (jct__cmd_output_ok(prog, w, v)) return 2;
    r->fault_log = v;
  } else if (!strcmp(w, "--pcap-drops")) {
    if (jct__cmd_writable(prog, w, v)) return 2;
    r->pcap_drops = v;
  } else if (!strcmp(w, "--pcap-port")) {
    if (!*v) return bad(prog, "--pcap-port needs a link (3, leaf1:spine0)");
    r->pcap_port = v;
  } else if (!strcmp(w, "--pcap-in")) {
    if (jct__cmd_writable(prog, w, v)) return 2;
    r->pcap_in = v;
  } else {
    if (jct__cmd_writable(prog, w, v)) return 2;
    r->pcap_out = v;
  }
  return 1;
}
