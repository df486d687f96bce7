/* Injectors: the stages on the switch's path that make the network
 * misbehave (DESIGN.md, "Injector"). One small interface, one file per kind
 * in injectors/, a registry that lists the kinds explicitly.
 *
 * A spec is one string a person types, the same on the command line
 * (--inject SPEC) and in a scenario file:
 *     KIND [key=value ...]
 *     drop p=0.001 where="udp dst port 4791 and src host 198.18.0.3" at=1s until=2s
 * Values may be quoted ("..." or '...') to hold spaces. Keys every kind
 * takes (handled here, not by the kinds):
 *     where=EXPR   a libpcap filter expression (pcap_compile for Ethernet,
 *                  matched with pcap_offline_filter); default: every frame
 *     port=N       the switch port (link) it sits on, dir=in|out which side
 *                  of the switch (in: frames received from rank N; out:
 *                  frames sent to rank N); default: every port, out
 *     at=TIME until=TIME   active window from the start of the run
 *                  (TIME: 500ns, 10us, 5ms, 1s); default: always
 *     at=host:RANK the injector runs on rank RANK's host instead of on the
 *                  switch: in the kernel on its interface's egress (drop,
 *                  as a tc-eBPF program, include/jctlab/kdrop.h); at=switch
 *                  (the default) is the switch. Goes with a time at= too
 *                  (drop p=1% at=host:1 at=10ms). where=, port= and dir=
 *                  do not go with it. Its times (at=, until=, delay's
 *                  TIME and nak=K@TIME) are emulated as on the switch: the
 *                  kernel, in wall time, gets them x the dilation F.
 *     seed=N       the kind's PRNG seed; default: the run's seed, mixed with
 *                  the injector's position so two injectors differ. Every
 *                  run records the seeds it used; the same seed gives the
 *                  same faults on the same frames.
 * Errors point at the word: "drop p=1.5: p=1.5 is outside [0, 1]",
 * "delay 50us dist=cauchy: dist=cauchy: unknown distribution (uniform,
 * normal, pareto)", "drop where=\"udp port\": where: syntax error".
 *
 * Injectors see frames, now_ns and deadlines: no libuv, no I/O, no malloc
 * on the per-frame path, so tests drive them with a fake clock.
 */
#ifndef JCTLAB_INJECTOR_H
#define JCTLAB_INJECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* PASS: unchanged; DROP; HOLD: not before hold_until_ns, keeping its
 * queue's order (netem without reorder); MODIFIED: data changed;
 * EXPEDITE: forward now, ahead of frames held in its queue (netem's
 * reorder: __qdisc_enqueue_head); DUPLICATE: pass, and send one copy more
 * (netem's duplicate). The copy is the frame as it reached the hook site
 * (the switch port and side); it meets the site's injectors again from the
 * first, as a frame of its own with jct_frame_t.copy set, and nobody
 * duplicates it again (harness/fabric/chain.h). */
typedef enum {
  JCT_PASS = 0,
  JCT_DROP,
  JCT_HOLD,
  JCT_MODIFIED,
  JCT_EXPEDITE,
  JCT_DUPLICATE
} jct_verdict_t;

/* A frame on its way through the switch. data is read-only until the
 * injector takes a writable copy with jct_frame_writable() (copy on write:
 * an injector that only looks costs no copy); then it may change it (up to
 * cap bytes, setting len) and return JCT_MODIFIED. Or it sets
 * hold_until_ns and returns JCT_HOLD. On entry hold_until_ns is the latest
 * hold the injectors before it in the chain gave the frame (0: none), so a
 * stage can count from it (rate does, as netem's rate follows its delay). */
typedef struct {
  uint8_t *data;
  size_t len, cap;
  uint32_t port;          /* the switch port it was received on (in) or goes to (out) */
  bool out;               /* on the egress side */
  bool copy;              /* a duplicate's copy (JCT_DUPLICATE): never duplicated again */
  uint64_t hold_until_ns; /* JCT_HOLD: not before this */
  uint8_t *scratch;       /* where a changed copy goes; NULL: data itself is writable */
  /* Where the RoCEv2 headers are, found once by jct_frame_roce() and shared
   * by every injector the frame meets (so each need not walk it again).
   * Zero: not looked at yet; whoever rewrites the headers zeroes parsed. */
  uint8_t parsed;        /* 0 not yet, 1 not RoCEv2, 2 RoCEv2 */
  uint16_t l3;           /* the IP header: offset in data */
  uint16_t udp, udp_len; /* the UDP datagram: offset in data, length */
  uint64_t flow_hash;    /* of the IP addresses and the BTH destination QP */
  /* The flow history of the hook site the frame is at (a chain keeps one
   * per site: jct_flows_new()), or NULL: each injector keeps its own. With
   * a site's, the packet's identity (jct_injector_packet_u32) is found
   * once per frame and shared by every injector it meets there. */
  void *site_flows;
  uint64_t packet_key; /* valid when keyed */
  bool keyed;
  /* Valid when keyed: a RoCEv2 data packet whose PSN is not after the
   * highest its flow has sent through the site (a go-back's copy). */
  bool retransmission;
  /* Set by a kind's process (stall): the frame's sender's host is to send
   * nothing for this long from now (emulated ns), which the chain asks of
   * the host (harness/fabric/chain.h, jct__chain_set_stall_fn); the frame
   * itself passes. jct_injector_process() zeroes it first. */
  uint64_t stall_ns;
} jct_frame_t;

/* A flow-history table for jct_frame_t.site_flows (4096 flows, about
 * 100 KB): NULL when out of memory. clear empties it (a repetition
 * starts); free takes NULL. */
void *jct_flows_new(void);
void jct_flows_clear(void *flows);
void jct_flows_free(void *flows);

/* True when the frame is a retransmission (jct_frame_t.retransmission),
 * by its site's history, keying the frame if no injector has; false when
 * it has no site (site_flows NULL). */
bool jct_frame_retransmission(jct_frame_t *f);

/* True when the frame is a RoCEv2 packet (frame.h's jct__frame_roce
 * rules); then f->l3, f->udp, f->udp_len and f->flow_hash are set. Parses
 * once. */
bool jct_frame_roce(jct_frame_t *f);

/* The frame, writable: copied into scratch first when it is not there. */
static inline uint8_t *jct_frame_writable(jct_frame_t *f) {
  if (f->scratch && f->data != f->scratch) {
    memcpy(f->scratch, f->data, f->len);
    f->data = f->scratch;
  }
  return f->data;
}

/* A parsed spec: the kind and its key=value words, with where each word
 * starts in the original string (for errors that point at it). */
#define JCT_SPEC_MAX_ARGS 24
typedef struct {
  const char *text; /* the whole spec, as given */
  char kind[16];
  uint32_t nargs;
  struct {
    char key[24];
    char value[256];
    uint32_t offset; /* of the word in text */
    bool used;       /* taken by the framework or the kind */
  } arg[JCT_SPEC_MAX_ARGS];
} jct_spec_t;

/* Parse text into spec. Errors: JCT_EINVAL ("drop p=: p has no value",
 * "drop p=0.1 \"x: unterminated quote", too many words). */
int jct_spec_parse(const char *text, jct_spec_t *spec, char *err, size_t errlen);

/* The value of key (marking it used), or NULL when absent. */
const char *jct_spec_get(jct_spec_t *spec, const char *key);

/* Typed getters: 0 when absent (out untouched) or parsed, JCT_EINVAL with
 * err pointing at the word otherwise. Probabilities must lie in [0, 1] and
 * also read "25%"; times read 500ns, 10us, 5ms, 1s (ns when bare); rates
 * read "1000/s"; counts are whole numbers; QPNs and PSNs take 0x too. */
int jct_spec_prob(jct_spec_t *spec, const char *key, double *out, char *err, size_t errlen);
int jct_spec_time_ns(jct_spec_t *spec, const char *key, uint64_t *out, char *err, size_t errlen);
int jct_spec_u64(jct_spec_t *spec, const char *key, uint64_t max, uint64_t *out, char *err,
                 size_t errlen);
int jct_spec_rate_per_s(jct_spec_t *spec, const char *key, double *out, char *err, size_t errlen);
/* A link rate in bits per second, read as --rate reads it (common/rate.h:
 * 10mbit, 1.5gbit, 100m; powers of 1000; "bps" is bits, not tc's bytes). */
int jct_spec_rate_bps(jct_spec_t *spec, const char *key, uint64_t *out, char *err, size_t errlen);

/* Every counter an injector keeps, in one struct for all kinds. */
typedef struct {
  uint64_t seen;    /* frames offered (in its window and on its port/side) */
  uint64_t matched; /* of which the where= filter selected */
  uint64_t dropped, held, modified, expedited;
  uint64_t generated;  /* frames it made itself (pause storm's PFC frames) */
  uint64_t duplicated; /* frames it asked one copy more of (JCT_DUPLICATE) */
  /* Its holds, summed: how much later than the injectors before it in the
   * chain (or now) had made each frame ready. */
  uint64_t hold_ns_total;
  /* flap at a host: how long it kept the host's link down, and the frames
   * the switch could not send to the host meanwhile (in dropped too). */
  uint64_t link_down_ns;
  /* ... and the packets the host's own kernel refused to send while its
   * link was down (no route: the namespace's IP and IPv6 OutNoRoutes,
   * RFC 4293's ipSystemStatsOutNoRoutes, across the down time). */
  uint64_t refused;
  /* stall: the senders' transmit stalls it asked for (jct_frame_t.stall_ns)
   * and their length in all (emulated ns). */
  uint64_t stalls, stall_ns;
  /* timeout: the requesters' go-backs that ended its targets' ACK drops
   * (each a retransmit timer run out; the ACKs themselves in dropped). */
  uint64_t timeouts;
} jct_injector_stats_t;

typedef struct jct_injector jct_injector_t;
struct jct_kdrop_cfg; /* jctlab/kdrop.h */

/* Called for each frame an injector makes itself, to go back to the
 * switch (a pause storm's PFC frames arrive on port as if its rank sent
 * them), stamped now_ns. The injector comes first, as libuv's callbacks take
 * their handle; the caller's own state is in inj->data. */
typedef void (*jct_injector_emit_cb)(jct_injector_t *inj, uint32_t port, const uint8_t *frame,
                                     size_t len, uint64_t now_ns);

struct jct_injector_ops {
  const char *name;  /* the spec's KIND: "drop", "delay", "pause", ... */
  const char *usage; /* one line: "drop p=P | model=gemodel p= r= [h= k=] | every=N | ..." */
  size_t priv_size;
  /* Take the kind's keys from spec (jct_spec_get and the typed getters),
   * validate them all before anything applies. When init fails, destroy is
   * not called: init cleans up after itself. */
  int (*init)(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen);
  /* A frame the framework matched (port, side, window, where=). */
  jct_verdict_t (*process)(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns);
  /* For kinds that act on time (pause storms, flaps): when tick is next
   * due, UINT64_MAX when never; tick may emit frames, calling
   * emit_cb(inj, ...). NULL when unused. */
  uint64_t (*next_deadline_ns)(const jct_injector_t *inj);
  void (*tick)(jct_injector_t *inj, uint64_t now_ns, jct_injector_emit_cb emit_cb);
  void (*destroy)(jct_injector_t *inj); /* may be NULL */
  /* at=host: the kernel program's configuration for what init parsed
   * (jctlab/kdrop.h; enabled, times and rng are the caller's: a delay's
   * delay_ns and nak_hold_ns come as the spec's emulated TIME, which the
   * caller makes wall time, x F), or
   * JCT_EINVAL naming what the kernel program cannot do. NULL: the kind
   * runs on the switch only. */
  int (*kernel)(const jct_injector_t *inj, struct jct_kdrop_cfg *cfg, char *err, size_t errlen);
  /* at=host: the frames tick makes leave from the host's own interface
   * (an AF_PACKET socket) instead of entering the switch (pause). */
  bool host_frames;
  /* at=host: process() says whether the host's link is down now (JCT_DROP)
   * and the harness sets the host interface down and up to match, over
   * netlink, at each of next_deadline_ns's transitions (flap). */
  bool host_link;
  /* process() asks for its frames' senders' transmit stalls
   * (jct_frame_t.stall_ns), which only a host the harness can stop gives
   * (the lab's VMs: stall). */
  bool stalls_host;
};

/* What the framework keeps for every injector; kinds use priv and the
 * helpers below. */
struct jct_injector {
  const struct jct_injector_ops *ops;
  char spec[512]; /* as given, for reports */
  uint32_t index; /* position in its chain, for logs */
  bool all_ports, out;
  uint32_t port;
  uint64_t at_ns, until_ns; /* window relative to start_ns; until 0: none */
  int32_t host;             /* at=host:RANK: RANK; -1: on the switch */
  uint64_t start_ns;        /* the run's start, set by jct_injector_start */
  uint64_t seed;
  uint64_t rng[4]; /* xoshiro256** state, seeded from seed */
  void *filter;    /* compiled where= (struct bpf_program), or NULL */
  void *flows;     /* per-flow PSN history for jct_injector_packet_u32 */
  jct_injector_stats_t stats;
  /* Set by the kind's init when the spec names packets it must act on
   * (drop psn=, pkt=): a faulted repetition in which it acts on nothing
   * is invalid (harness/orch/session.c), not a fault-free result. */
  bool targeted;
  /* Set by the kind's init (stall baseline=yes): it acts in the baseline
   * repetitions too, as the captured system's own behaviour rather than a
   * fault (a postmortem's transmit stalls, held as uroce holds them). */
  bool baseline;
  /* Set by the kind's init (stall): its longest stall, emulated ns. The
   * lab keeps its peers' clear-to-send timers past it (verbs.h). */
  uint64_t stall_max_ns;
  void *priv; /* ops->priv_size bytes, zeroed */
  void *data; /* the caller's (as libuv's uv_handle_t.data); jctlab leaves it alone */
};

/* The kinds: one file each in injectors/, exporting only its table (as
 * DPDK's rte_port_* headers declare theirs); registry.c lists them. */

/* drop: random loss (Bernoulli, Gilbert-Elliott, 4-state), every-Nth, by PSN */
extern const struct jct_injector_ops jct_drop_ops;
/* delay: a constant delay plus jitter, netem's distributions and correlation */
extern const struct jct_injector_ops jct_delay_ops;
/* reorder: netem's reordering, a few frames sent at once ahead of held ones */
extern const struct jct_injector_ops jct_reorder_ops;
/* pause: a PFC pause storm, 802.1Qbb frames at a rate on one priority */
extern const struct jct_injector_ops jct_pause_ops;
/* ecn: mark CE on ECN-capable IPv4/IPv6 packets */
extern const struct jct_injector_ops jct_ecn_ops;
/* corrupt: flip one bit after a RoCEv2 packet's BTH, so its ICRC fails */
extern const struct jct_injector_ops jct_corrupt_ops;
/* flap: the link goes down and comes back up on a schedule */
extern const struct jct_injector_ops jct_flap_ops;
/* duplicate: netem's duplication, one copy more of a frame with P */
extern const struct jct_injector_ops jct_duplicate_ops;
/* stall: a sender's host stops sending for a time after a packet (a VM frozen) */
extern const struct jct_injector_ops jct_stall_ops;
extern const struct jct_injector_ops jct_timeout_ops;
/* rate: netem's rate, frames leave no faster than a rate with an overhead */
extern const struct jct_injector_ops jct_rate_ops;

/* The registered kinds, NULL-terminated (injectors/registry.c). */
extern const struct jct_injector_ops *const jct_injector_kinds[];

/* Create an injector from a spec string. run_seed feeds the default seed;
 * index is its position in the chain. Errors: JCT_EINVAL (err points at
 * the bad word: unknown kind, unknown key, bad value, bad filter),
 * JCT_ENOMEM. */
int jct_injector_new(jct_injector_t **out, const char *spec, uint64_t run_seed, uint32_t index,
                     char *err, size_t errlen);
void jct_injector_free(jct_injector_t *inj);

/* The run (or repetition) starts now: windows count from here; the PRNG
 * restarts from the seed so every repetition sees the same faults. */
void jct_injector_start(jct_injector_t *inj, uint64_t start_ns);

/* Offer a frame. The framework checks port, side, window and where= and
 * counts, then calls the kind. */
jct_verdict_t jct_injector_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns);

/* Tick a time-driven injector (ops->tick) at now_ns; the frames it makes go
 * to emit_cb, called before this returns, and are counted as generated
 * here. No-op for kinds without tick. */
void jct_injector_tick(jct_injector_t *inj, uint64_t now_ns, jct_injector_emit_cb emit_cb);

/* A uniform 32-bit number that depends only on the seed, salt and the
 * packet, so that the same seed gives the same faults on the same packets
 * whatever order frames reach the injector in. A RoCEv2 packet is known by
 * its flow (addresses, destination QP), PSN, opcode (an ACK also by its
 * syndrome) and how many times that PSN was lost at the site before
 * (jct_injector_packet_lost): a copy of a PSN that was never lost draws
 * what its first transmission drew, however many copies go-back-N's timing
 * makes, and a lost one's next copy draws anew. CNPs are known by their
 * place in the flow's sequence of CNPs. The history is the frame's
 * site_flows when set (found once per frame), else the injector's own.
 * Other frames and flows beyond the table (4096) take the next number of
 * the injector's stream. A flow remembers its last 16 lost PSNs: a copy of
 * one forgotten draws as its first transmission did (lost again, once).
 * The memoryless kinds use it
 * (drop p=, ecn, corrupt, duplicate); the Markov loss models and jitter
 * keep a sequence and use the stream. */
uint32_t jct_injector_packet_u32(jct_injector_t *inj, jct_frame_t *f, uint64_t salt);

/* How many times the frame's PSN was lost at its site before this frame
 * (jct_injector_packet_lost), by the same history as
 * jct_injector_packet_u32 (the site's, else the injector's own): 0 for a
 * PSN never lost, a frame that is not RoCEv2, a CNP, or a flow beyond the
 * table; a flow remembers its last 16 lost PSNs (older ones read 0), and
 * counts up to 127 losses of one. drop's @T targets count transmissions by
 * it. */
uint32_t jct_injector_packet_losses(jct_injector_t *inj, jct_frame_t *f);

/* The frame is lost here: its PSN's next copy draws anew. The framework
 * calls it for every JCT_DROP; a kind whose change makes the receiver
 * discard the frame (corrupt) calls it itself. */
void jct_injector_packet_lost(jct_injector_t *inj, jct_frame_t *f);

/* A 32-bit number correlated with the last one by rho (a 32-bit fraction;
 * 0: independent), as netem's get_crandom() (net/sched/sch_netem.c):
 * next = (value * (2^32 - rho') + last * rho') >> 32, rho' = rho + 1.
 * *last is the caller's state. */
uint32_t jct_injector_crandom(jct_injector_t *inj, uint32_t rho, uint32_t *last);

/* Kinds' PRNG (xoshiro256**), seeded by the framework: 64 and 32 uniform
 * bits. Probabilities are 32-bit fractions compared with a 32-bit draw, as
 * netem keeps them. */
uint64_t jct_injector_u64(jct_injector_t *inj);
uint32_t jct_injector_u32(jct_injector_t *inj);

#endif
