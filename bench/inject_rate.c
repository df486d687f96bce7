/* bench/inject_rate: how fast jctlab's switch model forwards RoCEv2 frames
 * with the injector chain of `jctlab run` on its path, against the same
 * switch with no injectors, in one run (bench/injectors runs it).
 *
 * The switch (include/jctlab/switch.h) has two ports; every frame enters
 * port 0 and leaves by port 1. The chain is harness/fabric/chain.h's, the one
 * `jctlab run --inject` installs: hooks on every port's ingress and egress,
 * each injector checking its port, side, window and where= before its
 * kind acts. The five injectors:
 *     drop p=0.0001
 *     delay 1us
 *     ecn p=0.01
 *     corrupt p=0.00001
 *     drop every=100000 where="udp dst port 4791"
 * The frames are RDMA WRITE MIDDLEs of connection 0 (QP 0x101) with a
 * 4096-byte payload, IPv4 DSCP 26 and ECT(0), a valid ICRC and PSNs
 * counting up (256 frames prepared, then cycled), as `jctlab run` sends
 * them. The clock is a fake one: each
 * frame arrives one wire time after the previous at the ports' rate, and
 * the switch is polled every 16 frames, so the queue stays short; the wall
 * time counts jct_switch_rx and jct_switch_poll only.
 *
 * Rounds alternate: none, chain, none, chain, ...; each configuration's
 * rate is the median of its rounds, with the lowest and highest printed
 * (the machine is shared: medians and ratios).
 *
 * Usage: inject_rate [--frames N] [--rounds R] [--payload BYTES] [--each]
 *                    [--only none|chain]
 *   --each  also each injector alone (where the loss of rate comes from)
 *   --only  run one configuration's rounds and print its rate (for perf)
 * Prints one line per configuration and the loss of rate; exit 1 when a
 * count does not add up (a frame lost or invented by the model).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/fabric/chain.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/roce.h"
#include "jctlab/switch.h"

#define RATE_BPS 100000000000ull /* 100 Gbit/s: only the fake clock sees it */
#define WIRE_EXTRA_BYTES 24      /* preamble, FCS, gap: the switch's default */
#define POLL_EVERY 16
#define MAX_ROUNDS 101
#define FRAME_CAP 9216
#define NDISTINCT 256 /* frames prepared, PSNs 0 to 255, each with its ICRC */

static const char *const chain_specs[] = {"drop p=0.0001", "delay 1us", "ecn p=0.01",
                                          "corrupt p=0.00001",
                                          "drop every=100000 where=\"udp dst port 4791\""};
#define NSPECS (sizeof chain_specs / sizeof *chain_specs)

static const uint8_t mac_rank0[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
static const uint8_t mac_rank1[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

static uint16_t ip_checksum(const uint8_t *h, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += (uint32_t)(h[i] << 8 | h[i + 1]);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

/* An RDMA WRITE MIDDLE from 198.18.0.1 to 198.18.0.2, QP 0x101; returns
 * its length (0: cap too small) and where its BTH starts. */
static size_t build_frame(uint8_t *f, size_t cap, uint32_t payload, size_t *bth_at) {
  const size_t eth = 14, ip = 20, udp = 8;
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  h.bth.opcode = 0x07; /* RC RDMA WRITE MIDDLE */
  h.bth.pkey = 0xffff;
  h.bth.dest_qp = 0x101;
  size_t len = eth + ip + udp + JCT_BTH_BYTES + payload + JCT_ICRC_BYTES;
  if (len > cap) return 0;
  memset(f, 0, len);
  memcpy(f, mac_rank1, 6);
  memcpy(f + 6, mac_rank0, 6);
  put16(f + 12, 0x0800);
  uint8_t *iph = f + eth;
  iph[0] = 0x45;
  iph[1] = 26 << 2 | 2; /* DSCP 26 (priority 3), ECT(0) */
  put16(iph + 2, (uint32_t)(len - eth));
  iph[6] = 0x40; /* DF */
  iph[8] = 64;
  iph[9] = 17;
  memcpy(iph + 12, (const uint8_t[]){198, 18, 0, 1}, 4);
  memcpy(iph + 16, (const uint8_t[]){198, 18, 0, 2}, 4);
  put16(iph + 10, ip_checksum(iph, ip));
  uint8_t *u = iph + ip;
  put16(u, 49152);
  put16(u + 2, JCT_ROCEV2_UDP_PORT);
  put16(u + 4, (uint32_t)(len - eth - ip));
  if (jct_roce_write(u + udp, JCT_BTH_BYTES, &h) != JCT_BTH_BYTES) return 0;
  for (uint32_t i = 0; i < payload; i++)
    u[udp + JCT_BTH_BYTES + i] = (uint8_t)(i * 7 + 1);
  *bth_at = eth + ip + udp;
  return len;
}

/* Set the PSN, and the ICRC over it. */
static void set_psn(uint8_t *f, size_t len, size_t bth_at, uint32_t psn) {
  f[bth_at + 9] = (uint8_t)(psn >> 16);
  f[bth_at + 10] = (uint8_t)(psn >> 8);
  f[bth_at + 11] = (uint8_t)psn;
  uint32_t icrc = jct_icrc(f + 14, len - 14 - JCT_ICRC_BYTES);
  for (int i = 0; i < 4; i++)
    f[len - 4 + (size_t)i] = (uint8_t)(icrc >> (8 * i)); /* little-endian on the wire */
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_cb(uint32_t port, const uint8_t *frame, size_t len, uint64_t depart_ns,
                     void *arg) {
  (void)port, (void)frame, (void)len, (void)depart_ns;
  (*(uint64_t *)arg)++;
}

typedef struct {
  uint64_t offered, emitted, injector_drops, other_drops;
  double wall_s;
} round_t;

static jct_switch_verdict_t noop_hook(jct_switch_frame_t *f, uint64_t now_ns,
                                      uint64_t *hold_until_ns, void *arg) {
  (void)f, (void)now_ns, (void)hold_until_ns, (void)arg;
  return JCT_SW_PASS;
}

/* Which stages get a hook that passes everything (chain NULL only). */
#define NOOP_INGRESS 1u
#define NOOP_EGRESS 2u

/* One round: nframes through a fresh switch, with the chain, with no-op
 * hooks, or bare; the frames cycle through the NDISTINCT prepared ones. */
static int run_round(jct__chain_t *chain, unsigned noop, const uint8_t *frames, size_t len,
                     uint64_t nframes, round_t *out) {
  char err[256];
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, 2, RATE_BPS);
  jct_switch_t *sw;
  if (jct_switch_new(&sw, &cfg, err, sizeof err) || jct_switch_add_mac(sw, mac_rank1, 1) ||
      jct_switch_add_mac(sw, mac_rank0, 0)) {
    fprintf(stderr, "inject_rate: switch: %s\n", err);
    return 1;
  }
  uint64_t now = 1000000000u;
  if (chain) {
    if (jct__chain_attach(chain, sw, 2, NULL, NULL, 0)) {
      fprintf(stderr, "inject_rate: cannot attach the chain\n");
      jct_switch_free(sw);
      return 1;
    }
    jct__chain_start(chain, now);
  }
  for (uint32_t p = 0; p < 2; p++) {
    if (noop & NOOP_INGRESS) jct_switch_set_hook(sw, p, JCT_SW_INGRESS, noop_hook, NULL);
    if (noop & NOOP_EGRESS) jct_switch_set_hook(sw, p, JCT_SW_EGRESS, noop_hook, NULL);
  }
  uint64_t step = (len + WIRE_EXTRA_BYTES) * 8 * 1000000000u / RATE_BPS + 1, emitted = 0;
  uint64_t t0 = wall_ns();
  for (uint64_t i = 0; i < nframes; i++) {
    jct_switch_rx(sw, 0, frames + (i % NDISTINCT) * len, len, now);
    if (i % POLL_EVERY == POLL_EVERY - 1) jct_switch_poll(sw, now, count_cb, &emitted);
    now += step;
  }
  jct_switch_poll(sw, now + 1000000000u, count_cb, &emitted);
  uint64_t t1 = wall_ns();

  jct_switch_totals_t tot;
  jct_switch_totals(sw, &tot);
  int rc = jct_switch_check(sw, err, sizeof err);
  if (rc) fprintf(stderr, "inject_rate: switch accounting: %s\n", err);
  *out = (round_t){nframes, emitted, tot.drops[JCT_SW_DROP_INJECTOR],
                   tot.rx_drops + tot.tx_drops - tot.drops[JCT_SW_DROP_INJECTOR],
                   (double)(t1 - t0) / 1e9};
  jct_switch_free(sw);
  return rc ? 1 : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median rate of rounds with chain (or noop hooks). */
static double median_rate(jct__chain_t *chain, unsigned noop, const uint8_t *frames, size_t len,
                          uint64_t nframes, uint64_t rounds) {
  double rate[MAX_ROUNDS];
  round_t r;
  uint64_t n = 0;
  for (uint64_t i = 0; i < rounds; i++)
    if (!run_round(chain, noop, frames, len, nframes, &r)) rate[n++] = (double)nframes / r.wall_s;
  if (!n) return 0;
  qsort(rate, n, sizeof(double), cmp_double);
  return n % 2 ? rate[n / 2] : (rate[n / 2 - 1] + rate[n / 2]) / 2;
}

/* --each: where the loss of rate comes from: hooks that pass everything,
 * then every injector alone; each against the bare switch's median. */
static void each_alone(const uint8_t *frames, size_t len, uint64_t nframes, uint64_t rounds,
                       double none) {
  printf("  where it goes (median of %llu rounds each, loss against no injectors):\n",
         (unsigned long long)rounds);
  static const struct {
    unsigned noop;
    const char *what;
  } hooks[] = {{NOOP_EGRESS, "no-op hook on egress only"},
               {NOOP_INGRESS | NOOP_EGRESS, "no-op hooks on ingress and egress"}};
  for (size_t k = 0; k < 2; k++) {
    double med = median_rate(NULL, hooks[k].noop, frames, len, nframes, rounds);
    printf("    %-44s %12.0f  %5.1f%%\n", hooks[k].what, med, (1 - med / none) * 100);
  }
  for (size_t k = 0; k < NSPECS; k++) {
    char err[512];
    jct__chain_t *one;
    if (jct__chain_new(&one, &chain_specs[k], 1, 1, err, sizeof err)) continue;
    double med = median_rate(one, 0, frames, len, nframes, rounds);
    jct__chain_free(one);
    printf("    %-44s %12.0f  %5.1f%%\n", chain_specs[k], med, (1 - med / none) * 100);
  }
}

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int main(int argc, char **argv) {
  uint64_t nframes = 1000000, rounds = 5, payload = 4096;
  bool each = false;
  int only = -1; /* --only: 0 none, 1 chain */
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--frames") && parse_u64(v, 1000, 1000000000, &nframes))
      i++;
    else if (!strcmp(argv[i], "--rounds") && parse_u64(v, 1, MAX_ROUNDS, &rounds))
      i++;
    else if (!strcmp(argv[i], "--payload") && parse_u64(v, 0, 8192, &payload))
      i++;
    else if (!strcmp(argv[i], "--each"))
      each = true;
    else if (!strcmp(argv[i], "--only") && (!strcmp(v, "none") || !strcmp(v, "chain")))
      only = !strcmp(v, "chain"), i++;
    else {
      fprintf(stderr,
              "usage: inject_rate [--frames N] [--rounds 1-%d] [--payload 0-8192] [--each] "
              "[--only none|chain]\n",
              MAX_ROUNDS);
      return 2;
    }
  }
  static uint8_t frame[FRAME_CAP];
  size_t bth_at;
  size_t len = build_frame(frame, sizeof frame, (uint32_t)payload, &bth_at);
  uint8_t *frames = len ? malloc(NDISTINCT * len) : NULL;
  if (!frames) {
    fprintf(stderr, "inject_rate: cannot build the frames\n");
    return 1;
  }
  for (uint32_t i = 0; i < NDISTINCT; i++) {
    set_psn(frame, len, bth_at, i);
    memcpy(frames + i * len, frame, len);
  }

  char err[512];
  jct__chain_t *chain;
  if (jct__chain_new(&chain, chain_specs, NSPECS, 1, err, sizeof err)) {
    fprintf(stderr, "inject_rate: %s\n", err);
    return 1;
  }

  double rate[2][MAX_ROUNDS];
  round_t last[2];
  int status = 0;
  jct_injector_stats_t sum[NSPECS];
  memset(sum, 0, sizeof sum);
  for (uint64_t r = 0; r < rounds && !status; r++)
    for (int with = 0; with <= 1 && !status; with++) {
      if (only >= 0 && with != only) {
        rate[with][r] = 0;
        continue;
      }
      status = run_round(with ? chain : NULL, 0, frames, len, nframes, &last[with]);
      rate[with][r] = (double)nframes / last[with].wall_s;
      /* Every frame offered is forwarded or dropped by an injector. */
      if (last[with].emitted + last[with].injector_drops != nframes || last[with].other_drops) {
        fprintf(
            stderr, "inject_rate: %s: %llu offered, %llu out, %llu injector drops, %llu other\n",
            with ? "chain" : "none", (unsigned long long)nframes,
            (unsigned long long)last[with].emitted, (unsigned long long)last[with].injector_drops,
            (unsigned long long)last[with].other_drops);
        status = 1;
      }
      if (with)
        for (size_t k = 0; k < NSPECS; k++) {
          const jct_injector_stats_t *st = &jct__chain_get(chain, k)->stats;
          sum[k].matched += st->matched;
          sum[k].dropped += st->dropped;
          sum[k].held += st->held;
          sum[k].modified += st->modified;
        }
    }
  if (status) {
    jct__chain_free(chain);
    free(frames);
    return status;
  }

  printf("switch model, 2 ports, %llu RoCE frames of %zu bytes per round, %llu rounds "
         "(median, [min, max] frames/s)\n",
         (unsigned long long)nframes, len, (unsigned long long)rounds);
  double med[2];
  for (int with = 0; with <= 1; with++) {
    if (only >= 0 && with != only) continue;
    qsort(rate[with], rounds, sizeof(double), cmp_double);
    med[with] = rounds % 2 ? rate[with][rounds / 2]
                           : (rate[with][rounds / 2 - 1] + rate[with][rounds / 2]) / 2;
    printf("  %-22s %12.0f  [%.0f, %.0f]  (%.0f ns per frame)\n",
           with ? "chain of 5 injectors" : "no injectors", med[with], rate[with][0],
           rate[with][rounds - 1], 1e9 / med[with]);
  }
  if (only < 0)
    printf("  loss of rate          %11.1f%%  (goal: under 20%%)\n", (1 - med[1] / med[0]) * 100);
  if (each && only < 0) each_alone(frames, len, nframes, rounds, med[0]);
  for (size_t k = 0; k < NSPECS; k++)
    printf("  injector #%zu %-44s matched %llu, dropped %llu, held %llu, modified %llu\n", k,
           chain_specs[k], (unsigned long long)sum[k].matched, (unsigned long long)sum[k].dropped,
           (unsigned long long)sum[k].held, (unsigned long long)sum[k].modified);
  jct__chain_free(chain);
  free(frames);
  return 0;
}
