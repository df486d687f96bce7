/* A run: a schedule executed K times on the emulated fabric (or, with
 * agents on hosts, on theirs), with the job's completion time measured each
 * time (DESIGN.md, "Orchestrator" and decision 5).
 *
 * The caller must have called jct_ns_isolate() first, single-threaded.
 *
 * The α-β model (Hockney) the measurement is compared with, for the
 * emulated link: B is the goodput of a link of rate R carrying full
 * packets (R * PMTU / wire bytes per packet: PMTU plus BTH 12, ICRC 4,
 * UDP 8, IPv4 20, Ethernet 14 and 24 bytes of preamble, FCS and gap); α is
 * a message's latency: two propagation delays and one packet's
 * serialization (the switch stores and forwards). AllReduce (ring, tree,
 * halving-doubling, and a schedule of any other name): T = 2(N-1)·α +
 * 2(N-1)/N · S/B; all-to-all, all-gather and reduce-scatter (one half of
 * the ring): T = (N-1)·α + (N-1)/N · S/B; broadcast, pipelined down the
 * ring in chunks (schedule.h): T = (N-1)·α + ((N-2)·c + S)/B, with c the
 * bytes the root sends first (one chunk per channel): the first chunk
 * takes N-1 hops, and the root's link carries all S. With one chunk
 * (S up to 512 KiB a channel) that is (N-1)·(α + S/B), no pipeline;
 * incast (S from each of N-1 senders to one receiver, whose link is the
 * bottleneck): T = α + (N-1)·S/B.
 *
 * A run is invalid, never reported as a result, when the harness lost
 * frames by its own fault (pcap_inject refused, kernel buffers overran) or
 * a repetition did not finish; it is loop-bound when the event loop rather
 * than the emulated link set the pace: its p99 lateness exceeded one
 * packet's serialization time. (The loop spins between close timers, so
 * its CPU time says little: cpu_busy is reported, not judged.)
 */
#ifndef JCTLAB_RUN_H
#define JCTLAB_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/dcqcn.h"
#include "jctlab/dev_counters.h"
#include "jctlab/rdma.h"
#include "jctlab/injector.h"
#include "jctlab/fabric.h"
#include "jctlab/schedule.h"
#include "jctlab/switch.h"
#include "jctlab/uroce.h"

/* Which transport the ranks run: jctlab's own userspace RoCE (uroce.h), in
 * network namespaces of this process; or rdma-core (libibverbs, librdmacm)
 * in rank agents, over soft-RoCE (Linux rxe) in the lab's VMs or a real
 * NIC (DESIGN.md, "Ranks and transports" and decision 7). */
typedef enum { JCT_TRANSPORT_UROCE, JCT_TRANSPORT_VERBS } jct_transport_t;

/* Congestion control in the ranks' QPs: auto (0) is DCQCN when the switch
 * marks ECN (ecn) and the transport is uroce, else none; none: ECN-CE is
 * ignored; DCQCN (include/jctlab/dcqcn.h): uroce only (Linux rxe has no
 * congestion control). */
typedef enum { JCT_CC_AUTO = 0, JCT_CC_NONE, JCT_CC_DCQCN } jct_cc_t;

typedef struct {
  const jct_schedule_t *schedule;
  jct_transport_t transport; /* uroce (0) or verbs */
  uint32_t lab_ranks;        /* verbs: boot this many soft-RoCE VMs, one per rank (0: none) */
  const char *agents;        /* verbs on hosts: "HOST:PORT,..." of `jctlab agent --listen`, rank
                                order; no jctlab fabric then (NULL: none) */
  uint32_t reps;             /* >= 1 */
  uint32_t warmup;           /* repetitions run first, without the injectors, and not measured
                                (nccl-tests' -w); 0: none */
  uint64_t rate_bps;         /* per link */
  uint64_t prop_delay_ns;    /* per link */
  uint32_t mtu;              /* link IP MTU; 0: 9000 */
  uint32_t path_mtu_bytes;   /* RoCE path MTU; 0: 4096 */
  uint32_t nic_queue_pkts;   /* uroce: the NIC's transmit queue, packets (0: none; ranks.h) */
  uint64_t nak_delay_ns;     /* uroce: a slow responder's NAK latency (uroce.h; 0: none) */
  uint64_t nak_react_ns;     /* uroce: a slow requester's NAK-to-go-back latency (0: none) */
  uint32_t cts_slots;        /* uroce: clear-to-send buffers per connection (executor.h): 0
                                NCCL's 8, JCT_EXEC_NO_CTS none (a capture of a job without) */
  uint8_t timeout;           /* QP local ACK timeout exponent (NCCL: 20) */
  uint8_t retry_cnt;         /* (NCCL: 7) */
  bool pfc;                  /* PFC on the data priority */
  bool ecn;                  /* ECN marking on the data priority (thresholds in fabric.h) */
  /* ECN's RED-like thresholds (jct_fabric_opts_t); 0: fabric.h's defaults. */
  uint64_t ecn_kmin_bytes, ecn_kmax_bytes;
  double ecn_pmax;
  jct_cc_t cc;               /* congestion control (auto: DCQCN with ecn on uroce) */
  jct_dcqcn_profile_t cc_profile; /* DCQCN's parameters (0: ConnectX's defaults) */
  double cc_dilation; /* DCQCN's parameters dilated by this (jct_dcqcn_dilate); 0: the
                         profile's rate / rate_bps (at least 1); 1: as the profile has them */
  bool pfc_watchdog;         /* the switch's PFC watchdog (200 ms detection and restoration) */
  bool watchdog_forward;     /* its action: forward instead of drop */
  bool no_skip;              /* uroce: keep real time, never skip idle time (clock.h) */
  bool hold_naks;            /* verbs, a capture's replay: hold the capture's NAKs at their
                                responders' hosts for its requesters' reaction (--hold-naks) */
  uint64_t series_ns;        /* uroce: sample jct_series_t every this much (0: none) */
  double tdf;                /* time-dilation factor F (clock.h): 0 auto (jct_run_dilation), 1
                                none, else >= 1 (verbs: a power of two the QP timeout allows) */
  uint64_t rate_ceiling_bps; /* auto F: the highest wall-time link rate (0: the default,
                                JCT_RUN_RATE_CEILING_BPS) */
  uint64_t wall_budget_ns;   /* refuse a run estimated to take longer (0: JCT_RUN_WALL_BUDGET_NS) */
  uint64_t silent_after_ns;  /* jctlab rank: rank 0 ends a repetition whose task it has not heard
                                from this long (its ALIVE every 100 ms), invalid, the rank named;
                                0: JCT_RUN_SILENT_AFTER_NS; at least 2 ALIVE periods */
  const char *pcap_out;      /* NULL, or a capture of what crossed the switch */
  const char *pcap_port;     /* NULL: pcap_out holds every rank's link (what the fabric sent
                                toward the ranks); else the one link it holds, named as
                                injectors name ports (injector.h, clos.h): "N", rank N's
                                link, or "leaf1:spine0" / "spine0:leaf1", what that link's
                                sending switch put on it (fabric.h) */
  const char *pcap_in;       /* NULL, or a capture of every frame as it reached the switch */
  uint32_t pcap_snaplen_bytes; /* bytes of each frame kept in pcap_out/pcap_in (0: all), as -s */
  uint64_t pcap_file_bytes;    /* rotate pcap_out/pcap_in past this size (0: never), as -C */
  uint32_t pcap_files; /* with pcap_file_bytes, at most this many files, a ring (0: no limit), as
                          -W; the files' names and the rules in fabric.h */
  const char *pcap_drops;    /* NULL, or a capture of the frames injectors dropped */
  const char *fault_log;     /* NULL, or every injector action as a JSON line */
  /* Time each loss on the switch's wire, from its hole to the retransmission
   * that fills it, as `jctlab inspect` times a capture's (replay.h's
   * loss_recovery_ns); a postmortem replay sets it. Costs a decode and an
   * inspector's bookkeeping per frame; not with agents (no switch). The
   * same watch runs without it where the devices count no re-sent packets
   * (verbs in the lab: rxe), for those (the retx_ figures below). */
  bool watch_losses;
  const char *const *inject; /* injector specs (injector.h), in chain order */
  uint32_t ninject;
  uint64_t seed; /* the run's seed: injectors without seed= derive theirs from it */
  const jct_clos_t *clos; /* NULL: the star; else the fabric's shape, ECMP and placement
                             (clos.h); injectors may name its links (port=leaf0:spine1) */
  jct_rdma_opts_t rdma; /* verbs: the ranks' RDMA device settings (above) */
  /* `jctlab rank`: this process is rank 0 of an MPI job whose other tasks
   * are the schedule's other ranks (harness/orch/rank_world.h's
   * jct__rank_world_t; uroce on one host). NULL: this process runs every
   * rank. */
  void *world;

  /* Set by a capture's replay for itself, from the capture's postmortem
   * (harness/plan/replay_input.h, replay_profile.h), not by users: no
   * command-line option or scenario key sets them, and a caller of jct_run
   * that is not a capture's replay leaves them 0 (none). */
  const jct_uroce_go_back_t *go_backs; /* uroce: a captured requester's go-backs, each as deep
                                          as the capture's (uroce.h; the postmortem's) */
  uint32_t ngo_backs;
  const jct_uroce_stall_t *stalls; /* uroce: a captured sender's transmit stalls, held in every
                                      repetition (uroce.h; the postmortem's) */
  uint32_t nstalls;
  bool timeout_captured; /* verbs: timeout is a capture's rxe timer (replay_profile.h), which
                            the lab refuses only when rxe's NIC queue outlasts it, not half of
                            it as a timer the user gave */
  double tdf_floor;      /* auto F in the soft-RoCE lab: at least this (a power of two; 0 or
                            1: none). A capture's replay that holds its hosts' stalls or late
                            ACKs sets 4 (replay_input.h) */
  /* Where the replay adds the capture's own specs to inject
   * (jct__replay_input_specs), for its fidelity's reasons
   * (harness/report/fidelity.h): how many of inject are what the
   * capture's hosts did, not faults: its NAK holds (hold_naks; none when
   * no NAK of the capture waited long enough) and, in the lab, its timer
   * go-backs with nothing lost as timeout injectors (its late ACKs). A
   * spec given by hand is neither. 0: none. */
  uint32_t capture_timeouts;
  uint32_t capture_nak_holds;
} jct_run_opts_t;

/* Time series of one repetition (uroce, series_ns > 0): at most
 * JCT_SERIES_MAX samples, taken at the loop's turns at least series_ns
 * apart from the repetition's start: the frame bytes queued at the switch
 * port toward each rank (its host link's egress: an incast's bottleneck is
 * its receiver's) and each connection's sending QP's rate (DCQCN's Rc; the
 * line rate without congestion control). Times are emulated (dilation
 * divided out by the clock). */
#define JCT_SERIES_MAX 4096
typedef struct {
  uint64_t interval_ns;
  uint32_t n, nranks, nconns;
  uint64_t *t_ns;        /* n, from the repetition's start */
  uint64_t *queue_bytes; /* n x nranks, sample-major */
  uint64_t *rate_bps;    /* n x nconns, sample-major */
} jct_series_t;

/* A series for nranks and nconns with room for JCT_SERIES_MAX samples, or
 * NULL (out of memory); freed by jct_series_free (NULL is fine). */
jct_series_t *jct_series_new(uint64_t interval_ns, uint32_t nranks, uint32_t nconns);
void jct_series_free(jct_series_t *s);

/* What a transport counted, summed over its QPs (and over repetitions where
 * a result says so), in the InfiniBand terms both transports share. uroce
 * counts every figure (jct_uroce_stats_t, uroce.h); an RDMA device counts
 * what its hw_counters say (Linux rxe: neither the data packets it sends
 * apart from its ACKs nor the ones it sends again), so `counted` says which
 * figures are real: one whose JCT_TSTAT_* bit is clear is absent (null in
 * JSON), not zero. */
typedef struct {
  uint64_t packets;            /* sent, ACKs and NAKs included */
  uint64_t data_packets;       /* request packets sent, retransmissions included */
  uint64_t retx_packets;       /* request packets sent again (go-back-N) */
  uint64_t retx_bytes;         /* their bytes (UDP payload) */
  uint64_t rx_packets;         /* received */
  uint64_t naks;               /* requester: NAK-PSN-sequence-errors received */
  uint64_t timeouts;           /* local ACK timer expiries that restarted the send stream */
  uint64_t timeouts_after_nak; /* of them, uroce: back to the PSN of a NAK the requester had
                                  ignored (on the wire, that NAK's go-back: a capture's
                                  inspector counts it so); 0 on verbs */
  uint64_t go_back_n;          /* restarts of the send stream (NAK or timeout) */
  uint64_t out_of_seq_packets; /* responder: PSN above the expected one */
  uint64_t dup_packets;        /* responder: PSN below the expected one */
  uint64_t cnps;               /* CNPs sent by notification points (DCQCN) */
  uint64_t nic_paused_ns;      /* time the ranks' NICs were paused by PFC frames from the
                                  switch, summed over ranks */
  uint32_t counted;            /* JCT_TSTAT_* bits */
} jct_transport_stats_t;

enum {
  JCT_TSTAT_PACKETS = 1u << 0,
  JCT_TSTAT_DATA_PACKETS = 1u << 1,
  JCT_TSTAT_RETX_PACKETS = 1u << 2,
  JCT_TSTAT_RETX_BYTES = 1u << 3,
  JCT_TSTAT_RX_PACKETS = 1u << 4,
  JCT_TSTAT_NAKS = 1u << 5,
  JCT_TSTAT_TIMEOUTS = 1u << 6,
  JCT_TSTAT_GO_BACK_N = 1u << 7,
  JCT_TSTAT_OUT_OF_SEQ_PACKETS = 1u << 8,
  JCT_TSTAT_DUP_PACKETS = 1u << 9,
  JCT_TSTAT_CNPS = 1u << 10,
  JCT_TSTAT_NIC_PAUSED = 1u << 11,
  JCT_TSTAT_ALL = (1u << 12) - 1,
};

/* The congestion control o runs (auto resolved): JCT_CC_NONE or
 * JCT_CC_DCQCN. */
jct_cc_t jct_run_cc(const jct_run_opts_t *o);
/* The dilation of DCQCN's parameters o runs with (cc_dilation resolved). */
double jct_run_cc_dilation(const jct_run_opts_t *o);

/* Time dilation (DESIGN.md decision 8, include/jctlab/clock.h): the
 * emulated world runs F times slower than wall time, so a link of rate R
 * runs at R / F here and every time reported is emulated time.
 *
 * The ceiling: the highest per-link rate one event loop on this machine
 * emulates exactly. bench/run-rates measured the lossless 8-rank ring
 * within 0.999 of the alpha-beta model at 100 Mbit/s, 1.001 at 200 Mbit/s
 * and at the edge at 300 Mbit/s (p99 lateness just over one packet's time;
 * README), on a quiet machine. Dilated to 195 Mbit/s, the 8-rank
 * ring at 400 Gbit/s was loop-bound here on a machine shared by others
 * (p99 344 us against a 171 us packet) and valid at 98 Mbit/s (0.983 of
 * the model, CV 1.6%): the default takes 100 Mbit/s, 3x below the edge. */
#define JCT_RUN_RATE_CEILING_BPS 100000000ull
/* The wall-time budget a run may be estimated to take (1 h). */
#define JCT_RUN_WALL_BUDGET_NS 3600000000000ull
/* jctlab rank: how long rank 0 waits on a task it no longer hears from
 * during a repetition (1.5 s: fifteen of its 100 ms ALIVE messages), and
 * the least a user may set (200 ms: two of them). Two tasks sharing a TCG
 * VM's one CPU were measured silent 1.6 s in a first repetition (README). */
#define JCT_RUN_SILENT_AFTER_NS 1500000000ull
#define JCT_RUN_SILENT_AFTER_MIN_NS 200000000ull

typedef struct {
  double tdf;           /* F: 1 undilated */
  bool automatic;       /* chosen by jctlab (no --tdf): the rate above the ceiling, or the
                           lab's tdf_floor */
  bool floored;         /* automatic, and o->tdf_floor, not the rate, set it */
  uint64_t ceiling_bps; /* the ceiling it was chosen against */
  double wall_rate_bps; /* the link's rate in wall time: rate / F */
  /* verbs dilated (below): the QP timeout exponent given to rxe, t + log2 F
   * (0: not verbs, or undilated). */
  uint8_t verbs_timeout_exp;
  /* verbs in the lab holding stalls: the local ACK timeout exponent of the
   * destinations' QPs, which send only jctlab's clear-to-sends (a timer of
   * 4.096 us x 2^exponent, IBA vol. 1 9.7.6.1.3, as rxe arms it), the
   * first past twice the longest stall in the VMs' time
   * (harness/orch/vm_stalls.h); 0: the QPs' own.
   * jct_run_dilation always leaves it 0: it sees the options, not the
   * injectors. A run or replay (jct_run, jct_replay) fills it in its
   * result's dilation from its injectors, the same figure its agents'
   * QPs were given. */
  uint8_t verbs_cts_timeout_exp;
} jct_run_dilation_t;

/* rxe's QP timer resolution: one jiffy at Debian's HZ=250 (below). */
#define JCT_RUN_RXE_JIFFY_NS 4000000ull

/* Whether o runs verbs in the soft-RoCE lab: its VMs, one per rank
 * (lab_ranks), on this machine with jctlab's switch; not on hosts through
 * agents. */
bool jct_run_in_lab(const jct_run_opts_t *o);

/* The dilation o runs with: o->tdf when given (>= 1); else, on uroce and
 * on verbs in the soft-RoCE lab (jct_run_in_lab), the smallest power
 * of two F with rate_bps / F at most the ceiling (1 when the rate is at
 * most the ceiling), in the lab at least o->tdf_floor; verbs on hosts
 * (agents, `jctlab rank`) runs undilated unless told. */
void jct_run_dilation(const jct_run_opts_t *o, jct_run_dilation_t *d);

/* log2 tdf when tdf is a power of two (the shift of a QP timeout
 * exponent under dilation), else -1. */
int jct_run_verbs_timeout_shift(double tdf);

/* Refuse (JCT_EINVAL, err says what it would take) a run whose estimated
 * wall time -- the model's JCT x F x reps, the repetitions it runs
 * (baseline and faulted, warm-up), skipped idle time aside -- exceeds
 * o->wall_budget_ns, and a dilation the transport cannot honour (F below
 * 1; on verbs an F that is not a power of two, or a dilated timeout
 * exponent above 31).
 *
 * verbs under dilation: the rank VMs' (or hosts') kernels keep real time.
 * jctlab's switch is dilated by the clock (rate / F, delays x F); the QP
 * timeout exponent t is set to t + log2 F (4.096 us x 2^t x F, IBA
 * 9.7.6.1.3, exact for a power of two); the agents' NICs are shaped to
 * rate / F, the compute gaps sent to them x F and the op times they report
 * / F. What rxe does in its own time is not dilated: its turnaround (NAK,
 * ACK, requester wake-ups) and its timers' floor -- rxe keeps the QP
 * timeout in jiffies (rxe_qp.c, rxe_qp_from_attr: nsecs_to_jiffies of
 * 4096 ns << t, at least one jiffy; 4 ms at Debian's HZ=250), an
 * emulated floor of 4 ms / F. */
int jct_run_check_dilation(const jct_run_opts_t *o, uint32_t reps, char *err, size_t errlen);

/* The wall time reps repetitions of o are estimated to take: the model's
 * JCT x F x reps, skipped idle time aside (0 for options the model cannot
 * use: no schedule, no rate). */
double jct_run_wall_estimate_ns(const jct_run_opts_t *o, uint32_t reps);

/* Refuse (JCT_EINVAL, err says what it would take) a plan of nruns runs --
 * a scenario's cases, a sweep's sizes -- whose summed estimates total_ns
 * (jct_run_wall_estimate_ns) exceed budget_ns (0: JCT_RUN_WALL_BUDGET_NS).
 * what names the runs ("cases", "sizes"). Each run is also checked alone
 * (jct_run_check_dilation). */
int jct_run_check_wall_total(double total_ns, uint32_t nruns, const char *what,
                             uint64_t budget_ns, char *err, size_t errlen);

/* Add x's figures to sum's (counted: either's). */
void jct_transport_stats_add(jct_transport_stats_t *sum, const jct_transport_stats_t *x);

#define JCT_RUN_MAX_REPS 1000
#define JCT_RUN_MAX_WARMUP 100
#define JCT_RUN_MAX_INJECTORS 16

/* One connection's figures over a run's repetitions (or one side's of a
 * replay), as perftest reports one test: a connection of the schedule is
 * one RC QP pair (jct_conn_t), and its messages are the schedule's ops on
 * it. Over the repetitions that finished (reps; 0: none, and no figure
 * below has a value):
 * - bw_bps: perftest's "BW average" for the QP: 8 * bytes * reps divided
 *   by the sum over those repetitions of the time from the QP's first post
 *   (an op's start_ns) to its last completion (done_ns), in bit/s.
 * - completion_*_ns: each message's completion time, done_ns - start_ns
 *   (posted to the transport by the sender to received whole by the
 *   destination: its serialization and the path's latency, the time it
 *   waited behind the QP's earlier messages, and any loss recovery), over
 *   the QP's messages of the first completion_reps repetitions; p50 and
 *   p99 by nearest rank (with fewer than 100 messages p99 is the
 *   maximum). completion_reps is reps unless messages * reps exceeds
 *   JCT_QP_MAX_SAMPLES for the whole schedule: the samples are held
 *   exactly, 8 bytes each, and no more than that many.
 * - retx_packets: request packets the QP pair sent again (go-back-N), both
 *   ends (its messages and their clear-to-send WRITEs), summed over the
 *   repetitions, where retx_counted: uroce counts it per QP; an RDMA device
 *   counts per port (Linux rxe's hw_counters), so over verbs it is absent
 *   (null in JSON), not zero. The per-QP figures then add up to the run's
 *   transport total. rate_cuts and below_line_rate_ns (DCQCN, below) are
 *   per QP on the same terms. */
#define JCT_QP_MAX_SAMPLES (1u << 24)

/* What a transport counts per connection (uroce; verbs counts per device). */
typedef struct {
  uint64_t retx_packets;       /* request packets sent again, both ends */
  uint64_t rate_cuts;          /* DCQCN: CNPs that cut the sending QP's rate */
  uint64_t below_line_rate_ns; /* DCQCN: time the sending QP's rate was below the line rate */
} jct_conn_counts_t;

typedef struct {
  uint64_t bytes;    /* the schedule's bytes on this connection, per repetition */
  uint32_t messages; /* its ops, per repetition */
  uint32_t reps, completion_reps;
  double bw_bps;
  uint64_t completion_p50_ns, completion_p99_ns, completion_max_ns;
  uint64_t retx_packets;
  /* DCQCN, summed over the repetitions like retx_packets and counted with
   * it: the CNPs that cut the sending QP's rate (rate_cuts), and the time
   * its rate spent below the line rate (below_line_rate_ns; a time a rate
   * cut leaves below the line rate when the repetition ends counts up to
   * the QP's latest packet or timer); 0 without congestion control. */
  uint64_t rate_cuts, below_line_rate_ns;
  bool retx_counted;
} jct_qp_figures_t;

/* One injector's spec, seed and counters summed over the repetitions. */
typedef struct {
  char spec[512];
  char kind[16];
  uint64_t seed;
  jct_injector_stats_t stats;
} jct_run_injector_t;

typedef struct {
  uint32_t reps;
  uint64_t jct_ns[JCT_RUN_MAX_REPS];
  uint64_t median_ns, min_ns, max_ns;
  double cv;                     /* standard deviation / mean */
  double algbw_gbps, busbw_gbps; /* nccl-tests: S / median, algbw * factor; GB/s (1e9) */
  double alpha_ns, goodput_bps, model_ns, model_ratio; /* model_ratio: median / model */
  uint64_t lateness_p50_ns, lateness_p99_ns, lateness_max_ns;
  double packet_time_ns; /* one full packet's serialization */
  double cpu_busy;       /* process CPU time / wall time over the reps */
  bool loop_bound;
  uint64_t skipped_ns; /* idle time the clock skipped over the measured reps (clock.h) */
  jct_run_dilation_t dilation;
  double wall_s; /* wall time of the measured repetitions, drains included */
  bool valid;
  char invalid_why[256];
  jct_transport_stats_t transport; /* summed over QPs and repetitions */
  jct_switch_totals_t fabric;
  uint64_t harness_losses; /* pcap_inject failures, pcap and socket drops */
  uint64_t paused_ns; /* egress time the switch's queues were paused by PFC, summed over ports */
  uint32_t ninjectors;
  jct_run_injector_t injectors[JCT_RUN_MAX_INJECTORS];
  jct_qp_figures_t *qps; /* schedule->nconns, by connection; NULL when the run is
                            invalid. Owned: jct_run_result_free() */
  double jain_index;     /* jct_jain_index() over qps; NaN when invalid or under 2 QPs */
  /* A leaf-spine fabric's links (fabric.h), counted over the measured
   * repetitions; NULL and 0 for the star. Owned: jct_run_result_free(). */
  jct_fabric_link_stats_t *links;
  uint32_t nlinks;
  double ecmp_imbalance; /* max / mean of the uplinks' bytes (1: even); NaN without links */
  uint32_t host_of[64];  /* the host each rank sat on (the first 64 ranks; clos.h) */
  jct_series_t *series;  /* the first measured repetition's (series_ns); NULL: none. Owned */
  /* verbs: each rank's device counters summed over the repetitions
   * (schedule->nranks; the scenario's counters, or every one read); NULL on
   * uroce. Owned. */
  jct_dev_counters_t *dev_rank;
} jct_run_result_t;

/* What jct_run() and jct_replay() refuse before building anything, for a
 * caller that checks many options first (a size sweep): no schedule, or
 * one without its size; reps outside [1, JCT_RUN_MAX_REPS]; warmup above
 * JCT_RUN_MAX_WARMUP; a rate outside what the fabric emulates; a message
 * over JCT_ROCE_MAX_MSG_BYTES (2^31, roce.h); too many injectors. Returns
 * 0 or JCT_EINVAL (err says which). */
int jct_run_check(const jct_run_opts_t *o, char *err, size_t errlen);

/* Jain's fairness index (Jain, Chiu & Hawe, DEC-TR-301, 1984) over the
 * bandwidths (bw_bps) of the n connections that carried messages:
 * (sum x)^2 / (k * sum x^2) for k of them, 1 when all are equal, 1/k when
 * one takes everything. NaN under two such connections. */
double jct_jain_index(const jct_qp_figures_t *q, uint32_t n);

/* Run. Returns 0 with *res filled (res->valid says whether it may be
 * reported; free it with jct_run_result_free), or JCT_EINVAL (bad options:
 * err says which), JCT_EIO (the fabric could not be built), JCT_ENOMEM. */
int jct_run(const jct_run_opts_t *opts, jct_run_result_t *res, char *err, size_t errlen);

void jct_run_result_free(jct_run_result_t *res);

/* Keep the soft-RoCE lab (lab_ranks) up between the runs that follow, in
 * this process: a run that ends well (valid or not, not interrupted, every
 * VM alive) resets its agents to before setup (the QPs, host programs and
 * PFC responder freed; each VM's link up) instead of stopping its VMs, and
 * the next run with as many ranks and the same VMs' MTU takes them as they
 * are, without a boot (under TCG here, about 8 s of two VMs' boot
 * each); another lab stops them first. The rxe counters a run reports are
 * its own repetitions' deltas either way. false: stop a kept lab now and
 * boot each run's own again. For a scenario's cases and a sweep
 * (harness/plan/cases.c); not thread-safe. */
void jct_run_lab_keep(bool keep);

/* The α-β model for the options (fills packet_time_ns, alpha_ns,
 * goodput_bps, model_ns). */
void jct_run_model(const jct_run_opts_t *opts, jct_run_result_t *res);

#endif
