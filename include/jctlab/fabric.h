/* The emulated fabric at run time: the topology (topo.h), the switch
 * model (switch.h) with one libpcap port per rank link, driven by the
 * nanosecond clock (clock.h) in the caller's libuv loop.
 *
 * Each switch port is the switch end of a rank's veth ("sw<i>"), or an
 * interface the caller made (port_ifnames: a soft-RoCE VM's TAP), opened
 * with libpcap in immediate, non-blocking mode, inbound only
 * (pcap_setdirection PCAP_D_IN, so the frames the switch itself injects are
 * not read back), watched by uv_poll. Frames read are handed to the switch
 * with the time they were read; frames the switch emits at their departure
 * times are sent with pcap_inject on their port and, with pcap_out, also
 * written to a capture (nanosecond timestamps, CLOCK_REALTIME). With
 * pcap_in, every frame read from a port is written to a capture of its own
 * as it arrived, before the switch and its injectors see it, stamped with
 * the arrival time the switch takes for it (the kernel's receive stamp) on
 * the same clock as pcap_out's departures: pairing a frame across the two
 * gives the time it spent in the switch (bench/inject_delay does). Frames
 * an injector makes itself (a pause storm's) do not arrive at a port and
 * are not in it.
 *
 * pcap_out and pcap_in rotate as tcpdump -w does with -C and -W when
 * pcap_file_bytes is set: before a record, a file that holds more than
 * pcap_file_bytes is closed and the next one opened, so every file ends on a
 * whole record. They are named FILE, FILE1, FILE2, ...; with pcap_files, at
 * most that many, FILE0 to FILE<pcap_files-1> zero-padded to one width, the
 * oldest written over (the newest kept). Standard output ("-") cannot
 * rotate (JCT_EINVAL). The first file is opened by jct_fabric_new; when a
 * later one cannot be, that capture stops there, whole, and stderr says so.
 *
 * pcap_one_port narrows pcap_out to one link: a rank's, or one between
 * two switches of a leaf-spine fabric (the way to see what crossed a
 * spine uplink); its port number is the injectors' (jct_clos_port_number).
 *
 * Frames the harness itself loses (pcap_inject failing, the kernel
 * dropping frames before libpcap reads them, a frame longer than the
 * port's snap length, which libpcap would hand over cut) are counted apart: a run with
 * any is invalid (DESIGN.md, decision 4).
 */
#ifndef JCTLAB_FABRIC_H
#define JCTLAB_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "jctlab/clock.h"
#include "jctlab/clos.h"
#include "jctlab/switch.h"
#include "jctlab/topo.h"

typedef struct {
  uint32_t nranks;
  uint64_t rate_bps;      /* every link's rate, switch ports and rank NICs */
  uint64_t prop_delay_ns; /* every link's propagation delay */
  uint32_t mtu;           /* IP MTU of the links; 0: JCT_TOPO_MTU_DEFAULT */
  uint8_t data_prio;      /* the lossless priority RoCE traffic uses (3) */
  bool pfc;               /* PFC on data_prio */
  bool ecn;               /* ECN marking on data_prio (Kmin 64 KiB, Kmax 256 KiB, Pmax 0.2) */
  /* Other marking thresholds (switch.h: Kmin, Kmax in bytes of queue depth,
   * Pmax the marking probability at Kmax); 0: the defaults above. The
   * DCQCN paper (Zhu et al., SIGCOMM 2015) uses 5 KB, 200 KB, 1%. */
  uint64_t ecn_kmin_bytes, ecn_kmax_bytes;
  double ecn_pmax;
#define JCT_FABRIC_ECN_KMIN_BYTES (64u << 10)
#define JCT_FABRIC_ECN_KMAX_BYTES (256u << 10)
#define JCT_FABRIC_ECN_PMAX 0.2
  const jct_topo_t *topo; /* NULL: build one; else use this one (nranks ranks), not freed */
  /* NULL: the ports are the topology's "sw<i>" veth ends. Else nranks names
   * of interfaces that already exist in the calling thread's namespace (the
   * TAPs of soft-RoCE VMs, harness/lab/lab.h), one per rank: no topology is
   * built and jct_fabric_topo() returns NULL. Rank i's MAC must still be
   * jct_rank_mac(i) (topo.h): the switch's MAC table is built from it,
   * unless transparent. */
  const char *const *port_ifnames;
  /* No MAC table: every frame floods to every port but its own, which with
   * two ports is the other one, whatever its addresses (`jctlab wire`, a
   * bump in the wire between a host and its switch). */
  bool transparent;
  bool pfc_watchdog;        /* the switch's PFC watchdog (SONiC defaults: 200 ms, 200 ms) */
  bool watchdog_forward;    /* its action: forward instead of drop */
  const char *pcap_out;     /* NULL, or where to write what crossed the switch */
  bool pcap_one_port;       /* pcap_out holds only pcap_port's frames: */
  uint32_t pcap_port;       /* 0..nranks-1 what the fabric sent toward that rank; nranks + k
                               what link k's sending switch put on it (below), stamped as
                               every frame of pcap_out: its last bit's arrival at the far end
                               (departure + the link's propagation), on the run's clock */
  const char *pcap_in;      /* NULL, or where to write every frame as it arrived at a port */
  uint32_t pcap_snaplen;    /* bytes of each frame kept in pcap_out and pcap_in; 0: all */
  uint64_t pcap_file_bytes; /* rotate pcap_out and pcap_in past this size (0: never), as -C */
  uint32_t pcap_files;      /* with it, at most this many files, a ring (0: no limit), as -W */
  const char *pcap_drops;   /* NULL, or where to write the frames injectors dropped */
  FILE *fault_log;          /* NULL, or where injectors' actions go, one JSON line each */
  /* NULL, or called with every frame the switch sends toward a host (what
   * pcap_out holds without pcap_one_port), at its departure in emulated ns,
   * for a look at the wire in memory: `jctlab inspect`'s analysis of it,
   * a run's re-sent packets where the devices count none (rxe) and a
   * postmortem's per-loss recovery times (harness/orch/loss_watch.h).
   * It must not keep frame. NULL costs the frame nothing. */
  void (*tap)(const uint8_t *frame, size_t len, uint64_t depart_ns, void *arg);
  void *tap_arg;
  struct jct__chain *chain; /* NULL, or the injectors, put on the switch's hooks */
  /* The ranks' hosts are VMs whose agents run the chain's at=host:RANK
   * injectors themselves (the lab: drop as the tc-eBPF program in the VM's
   * kernel); the chain only keeps their counters and fault-log lines. */
  bool remote_hosts;
  const jct_clos_t *clos;   /* NULL or leaves 0: the star; else a leaf-spine fabric (clos.h),
                               not with port_ifnames or transparent */
} jct_fabric_opts_t;

typedef struct {
  uint64_t inject_failures; /* pcap_inject refused a frame */
  uint64_t pcap_drops;      /* frames the kernel dropped before libpcap read them */
  uint64_t truncated;       /* frames longer than a port's snap length (its MTU + 64 bytes, a
                               receive offload such as GRO or LRO): not forwarded */
  uint64_t frames_in, frames_out;
} jct_fabric_harness_stats_t;

typedef struct jct_fabric jct_fabric_t;

/* Build the topology and the switch and start reading the ports. The
 * calling thread must be in the switch namespace (jct_ns_isolate()).
 * Errors: JCT_EINVAL (a bad option or more ranks than the switch or the
 * machine holds: err says which), JCT_EIO (namespaces, netlink, libpcap,
 * the capture file), JCT_ENOMEM. On error nothing is left behind. */
int jct_fabric_new(jct_fabric_t **out, uv_loop_t *loop, jct_clock_t *clock,
                   const jct_fabric_opts_t *opts, char *err, size_t errlen);

const jct_topo_t *jct_fabric_topo(const jct_fabric_t *f);
jct_switch_t *jct_fabric_switch(jct_fabric_t *f);
void jct_fabric_harness_stats(jct_fabric_t *f, jct_fabric_harness_stats_t *out);

/* Counters summed over every switch, and the egress time paused by PFC
 * (all priorities) on the ports of the ranks' links as of now_ns. */
void jct_fabric_totals(const jct_fabric_t *f, jct_switch_totals_t *out);
uint64_t jct_fabric_host_paused_ns(const jct_fabric_t *f, uint64_t now_ns);

/* ---- Links between switches (leaf-spine) ---------------------------------
 * Link k, 0 <= k < jct_fabric_nlinks(), is one direction of one leaf-spine
 * cable: "leaf<l>:spine<s>" (the leaf's egress toward spine s, an uplink)
 * or "spine<s>:leaf<l>" (a downlink). Its counters are the sending port's
 * (tx, queue, marks, drops, pause received), plus the flows it carried. */
#define JCT_FABRIC_LINK_FLOWS 32

typedef struct {
  uint32_t src_rank, dst_rank; /* from the IPv4 addresses (topo.h); UINT32_MAX: not a rank */
  uint16_t udp_sport;
  uint64_t frames, bytes;
} jct_fabric_flow_t;

typedef struct {
  char name[24];   /* "leaf1:spine0" */
  bool uplink;     /* leaf to spine */
  uint64_t tx_frames, tx_bytes, ecn_marked, drops, peak_queue_bytes;
  uint64_t paused_ns; /* egress paused by PFC from the receiving switch, all priorities */
  uint64_t rx_pfc_xoff;
  jct_fabric_flow_t flows[JCT_FABRIC_LINK_FLOWS]; /* the first ones seen, by bytes */
  uint32_t nflows;
  uint64_t other_flows; /* frames of flows beyond JCT_FABRIC_LINK_FLOWS */
  /* Rerouting (below): the cable's (both directions') down time, its
   * withdrawals and restores; the flows this direction carried in the
   * repetition before each withdrawal (the ones the rehash moved). */
  uint64_t down_ns, reroutes, restores, flows_moved;
} jct_fabric_link_stats_t;

/* ---- Rerouting around a cable that is down --------------------------------
 * A flap injector on a leaf-spine link (port=leaf1:spine0 or
 * port=spine0:leaf1, either dir) takes the cable down during its down
 * phase; the switches at both ends notice after clos.reroute_detect_ns
 * (clos.h: default 1 ms, "off": never) and withdraw the routes through it:
 * the leaf's uplink leaves its ECMP groups, and every other leaf stops
 * sending to that leaf's hosts through that spine. Rehashing is resilient:
 * only the flows that were on the withdrawn member move (switch.h). The
 * routes come back detect_ns after the cable is up again. Frames offered
 * to a down link before the withdrawal are lost (the flap's drops). */

uint32_t jct_fabric_nlinks(const jct_fabric_t *f);
/* Errors: JCT_EINVAL (k out of range). */
int jct_fabric_link_stats(const jct_fabric_t *f, uint32_t k, uint64_t now_ns,
                          jct_fabric_link_stats_t *out);
/* Start every link's peak queue again (jct_switch_reset_peak): a
 * repetition's peak is then its own, not the fabric's since it was built. */
void jct_fabric_links_reset_peaks(jct_fabric_t *f);
/* The link named "leaf1:spine0" (or its port index for injectors: see
 * jct_fabric_port_index), -1 when there is none. */
int jct_fabric_link_find(const jct_fabric_t *f, const char *name);

/* Frame bytes queued now at the switch port toward rank (its host link's
 * egress queues, all priorities); 0 for no such rank. */
uint64_t jct_fabric_queue_bytes(const jct_fabric_t *f, uint32_t rank);

/* The host each rank sits on (clos.h's numbering; the star: the rank). */
uint32_t jct_fabric_host_of(const jct_fabric_t *f, uint32_t rank);

/* A repetition starts now: the injectors restart. */
void jct_fabric_start(jct_fabric_t *f, uint64_t now_ns);

/* True when the switch holds no frame (queued or on the wire). */
bool jct_fabric_idle(const jct_fabric_t *f);

/* True while the PFC watchdog holds some egress queue in storm (until
 * restoration, switch.h: 200 ms after its last pause frame). */
bool jct_fabric_wd_storming(const jct_fabric_t *f);

/* Stop reading, flush and close the capture, free the switch and tear the
 * topology down. The poll handles are closed through the loop: run it once
 * more (uv_run NOWAIT) before closing the loop. NULL is fine. */
void jct_fabric_free(jct_fabric_t *f);

#endif
