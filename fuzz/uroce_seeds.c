/* Writes the seed corpus of fuzz_uroce (fuzz/corpus/uroce/): inputs in the
 * format of fuzz_uroce.h whose packets are real ones the fixture's QPs
 * produce (captured through its tap while the same records run), so that
 * they reach the states a working connection goes through: data delivered
 * in order, the ACK that completes it, a NAK after a loss and the
 * retransmission, PSNs wrapping at 2^24, a retry counter running out, PFC
 * pauses, duplicates and reordering; and near-valid variants of real
 * packets: a flipped payload byte with and without a fixed ICRC, a wrong
 * opcode, pad, destination QP or AETH, ACKs for PSNs never sent, runts.
 *
 *   fuzz_uroce_seeds DIR   (run from the build tree; overwrites DIR/seed-*)
 *
 * Each seed is replayed through the fuzz target before it is written.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_uroce.h"
#include "jctlab/roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 65536
#define MAX_CAPTURED 32

typedef struct {
  uint8_t in[MAX_INPUT];
  size_t len;
  jct__upair_t *pair;
  /* The packets produced by the last record, in order. */
  uint8_t pkt[MAX_CAPTURED][JCT_UROCE_MAX_PACKET_BYTES];
  size_t pkt_len[MAX_CAPTURED];
  int pkt_from[MAX_CAPTURED];
  int npkts;
  const char *dir;
  int failed;
} seed_t;

static seed_t S;

static void tap(void *arg, int from, const uint8_t *pkt, size_t len) {
  seed_t *s = arg;
  if (s->npkts == MAX_CAPTURED) return;
  memcpy(s->pkt[s->npkts], pkt, len);
  s->pkt_len[s->npkts] = len;
  s->pkt_from[s->npkts++] = from;
}

static void start(uint8_t config) {
  S.len = 0;
  S.in[S.len++] = config;
  S.pair = jct__upair_new(config, tap, &S);
  if (!S.pair) {
    fprintf(stderr, "uroce_seeds: cannot create the QPs\n");
    exit(1);
  }
}

/* Append a record and run it on our pair, capturing what it produces. */
static void rec(uint8_t ctl, const uint8_t *bytes, size_t len) {
  if (S.len + 3 + len > MAX_INPUT) {
    fprintf(stderr, "uroce_seeds: seed too long\n");
    exit(1);
  }
  S.in[S.len++] = ctl;
  S.in[S.len++] = (uint8_t)(len >> 8);
  S.in[S.len++] = (uint8_t)len;
  if (len) memcpy(S.in + S.len, bytes, len);
  S.len += len;
  S.npkts = 0;
  jct__upair_step(S.pair, ctl, bytes, len);
}

/* The k-th request (RDMA WRITE) packet, or k-th ACK/NAK, the last record
 * captured from `from`. */
static int captured(int from, int k, bool ack) {
  for (int i = 0, seen = 0; i < S.npkts; i++)
    if (S.pkt_from[i] == from && (S.pkt[i][0] == JCT_OP_RC_ACKNOWLEDGE) == ack && seen++ == k)
      return i;
  fprintf(stderr, "uroce_seeds: packet %d from %c was not produced\n", k, from ? 'B' : 'A');
  for (int i = 0; i < S.npkts; i++)
    fprintf(stderr, "  captured: from %c opcode 0x%02x, %zu bytes\n", S.pkt_from[i] ? 'B' : 'A',
            S.pkt[i][0], S.pkt_len[i]);
  exit(1);
}

static void save(const char *name) {
  jct__upair_finish(S.pair);
  const jct_uroce_stats_t *a = jct_uroce_stats(jct__upair_qp(S.pair, UPAIR_A));
  const jct_uroce_stats_t *b = jct_uroce_stats(jct__upair_qp(S.pair, UPAIR_B));
  printf("%-28s %5zu bytes  A: tx %llu rx %llu acks %llu naks %llu sent %llu  "
         "B: rx %llu dup %llu oos %llu icrc %llu malf %llu qp %llu recv %llu\n",
         name, S.len, (unsigned long long)a->tx_pkts, (unsigned long long)a->rx_pkts,
         (unsigned long long)a->rx_acks, (unsigned long long)a->rx_naks,
         (unsigned long long)a->msgs_sent, (unsigned long long)b->rx_pkts,
         (unsigned long long)b->dup_pkts, (unsigned long long)b->out_of_seq_pkts,
         (unsigned long long)b->bad_icrc, (unsigned long long)b->rx_malformed,
         (unsigned long long)b->rx_wrong_qp, (unsigned long long)b->msgs_recv);
  jct__upair_free(S.pair);
  S.pair = NULL;
  LLVMFuzzerTestOneInput(S.in, S.len); /* aborts if the seed breaks a promise */
  char path[4096];
  snprintf(path, sizeof path, "%s/seed-%s", S.dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(S.in, 1, S.len, f) != S.len || fclose(f) != 0) {
    perror(path);
    S.failed = 1;
  }
}

/* Send A's whole plan to B as explicit records, then B's ACK to A. */
static void seed_conversation(const char *name, uint8_t config) {
  start(config);
  rec(UPAIR_X(UPAIR_X_DROP_A), NULL, 0); /* A's packets, captured and lost */
  int n = S.npkts;
  static uint8_t pkts[MAX_CAPTURED][JCT_UROCE_MAX_PACKET_BYTES];
  static size_t lens[MAX_CAPTURED];
  int na = 0;
  for (int i = 0; i < n; i++)
    if (S.pkt_from[i] == UPAIR_A) {
      memcpy(pkts[na], S.pkt[i], S.pkt_len[i]);
      lens[na++] = S.pkt_len[i];
    }
  for (int i = 0; i < na; i++)
    rec(UPAIR_X(UPAIR_X_NONE), pkts[i], lens[i]); /* to B, in order */
  rec(UPAIR_X(UPAIR_X_DROP_B), NULL, 0);          /* B's ACK, captured and lost */
  int ack = captured(UPAIR_B, 0, true);
  memcpy(pkts[0], S.pkt[ack], S.pkt_len[ack]);
  rec(UPAIR_TO_A, pkts[0], S.pkt_len[ack]);
  rec(UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_ALL), NULL, 0);
  save(name);
}

/* Lose A's first packet: B NAKs the second, A goes back. */
static void seed_nak(const char *name, uint8_t config) {
  static uint8_t second[JCT_UROCE_MAX_PACKET_BYTES], nak[64];
  start(config);
  rec(UPAIR_X(UPAIR_X_DROP_A), NULL, 0);
  int i = captured(UPAIR_A, 1, false);
  size_t n = S.pkt_len[i];
  memcpy(second, S.pkt[i], n);
  rec(UPAIR_X(UPAIR_X_NONE), second, n); /* out of sequence at B */
  rec(UPAIR_X(UPAIR_X_DROP_B), NULL, 0); /* the NAK, captured */
  i = captured(UPAIR_B, 0, true);
  size_t nn = S.pkt_len[i];
  memcpy(nak, S.pkt[i], nn);
  rec(UPAIR_TO_A, nak, nn);           /* go-back-N */
  rec(UPAIR_X(UPAIR_X_ALL), NULL, 0); /* the retransmission */
  rec(UPAIR_TO_A, nak, nn);           /* the same NAK again: stale */
  nak[12] = 0x61;                     /* another NAK code: invalid request */
  rec(UPAIR_TO_A | UPAIR_FIX_ICRC, nak, nn);
  rec(UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_ALL), NULL, 0);
  save(name);
}

/* Near-valid variants of a real request and a real ACK. */
static void seed_corrupt(const char *name, uint8_t config) {
  static uint8_t p0[JCT_UROCE_MAX_PACKET_BYTES], p1[JCT_UROCE_MAX_PACKET_BYTES],
      p2[JCT_UROCE_MAX_PACKET_BYTES], ack[64];
  start(config);
  rec(UPAIR_X(UPAIR_X_DROP_A), NULL, 0);
  int i = captured(UPAIR_A, 0, false), j = captured(UPAIR_A, 1, false),
      k = captured(UPAIR_A, 2, false);
  size_t n0 = S.pkt_len[i], n1 = S.pkt_len[j], n2 = S.pkt_len[k];
  memcpy(p0, S.pkt[i], n0);
  memcpy(p1, S.pkt[j], n1);
  memcpy(p2, S.pkt[k], n2);
  p0[40] ^= 0x01;                     /* payload byte flipped */
  rec(UPAIR_X(UPAIR_X_NONE), p0, n0); /* bad ICRC */
  rec(UPAIR_FIX_ICRC, p0, n0);        /* forged but valid: accepted */
  uint8_t op = p1[0];
  p1[0] = JCT_OP_RC_SEND_MIDDLE; /* an opcode this QP never takes */
  rec(UPAIR_FIX_ICRC, p1, n1);
  p1[0] = JCT_OP_RC_RDMA_WRITE_LAST; /* a LAST with pad 3 */
  p1[1] = (uint8_t)(p1[1] | 0x30);
  rec(UPAIR_FIX_ICRC, p1, n1);
  p1[0] = op;
  p1[1] = (uint8_t)(p1[1] & ~0x30);
  p1[7] ^= 0x40; /* another destination QP */
  rec(UPAIR_FIX_ICRC, p1, n1);
  rec(UPAIR_FIX_ICRC | UPAIR_FIX_QPN, p1, n1); /* ... made right */
  rec(UPAIR_FIX_ICRC, p1, 16);                 /* a runt: BTH + ICRC only */
  rec(UPAIR_X(UPAIR_X_NONE), p1, 11);          /* shorter than a BTH */
  rec(UPAIR_X(UPAIR_X_NONE), p2, n2);          /* the real LAST, which asks for an ACK */
  rec(UPAIR_X(UPAIR_X_DROP_B), NULL, 0);       /* B's ACK */
  i = captured(UPAIR_B, 0, true);
  size_t na = S.pkt_len[i];
  memcpy(ack, S.pkt[i], na);
  ack[10] = (uint8_t)(ack[10] + 100); /* ACK for a PSN never sent */
  rec(UPAIR_TO_A | UPAIR_FIX_ICRC, ack, na);
  ack[10] = (uint8_t)(ack[10] - 100);
  ack[12] = 0x20; /* RNR NAK, which this peer never sends */
  rec(UPAIR_TO_A | UPAIR_FIX_ICRC, ack, na);
  rec(UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_ALL), NULL, 0);
  save(name);
}

/* Timer expiries with everything A sends lost: retries run out. */
static void seed_timeout(const char *name, uint8_t config, int expiries) {
  start(config);
  rec(UPAIR_X(UPAIR_X_DROP_A), NULL, 0);
  for (int k = 0; k < expiries; k++)
    rec(UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_DROP_A), NULL, 0);
  rec(UPAIR_CLOCK(UPAIR_CLOCK_5MS) | UPAIR_X(UPAIR_X_ALL), NULL, 0);
  save(name);
}

/* A script of ctl-only records (the real traffic under the network's faults). */
static void seed_script(const char *name, uint8_t config, const uint8_t *ctl, size_t n) {
  start(config);
  for (size_t k = 0; k < n; k++)
    rec(ctl[k], NULL, 0);
  save(name);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  S.dir = argv[1];
  seed_conversation("conversation-mtu256", UPAIR_CFG_MTU(0) | UPAIR_CFG_RETRY(2));
  seed_conversation("conversation-mtu4096-wrap",
                    UPAIR_CFG_MTU(4) | UPAIR_CFG_WRAP | UPAIR_CFG_RETRY(3));
  seed_nak("nak-mtu1024", UPAIR_CFG_MTU(2) | UPAIR_CFG_RETRY(3));
  seed_nak("nak-mtu256-wrap-sq2", UPAIR_CFG_MTU(0) | UPAIR_CFG_WRAP | UPAIR_CFG_SQ2);
  seed_corrupt("corrupt-mtu512", UPAIR_CFG_MTU(1) | UPAIR_CFG_RETRY(3));
  seed_timeout("retry0-exceeded", UPAIR_CFG_MTU(0) | UPAIR_CFG_RETRY(0), 2);
  seed_timeout("retry1-exceeded-wrap", UPAIR_CFG_MTU(3) | UPAIR_CFG_RETRY(1) | UPAIR_CFG_WRAP, 3);
  static const uint8_t faults[] = {
      UPAIR_X(UPAIR_X_PAUSE),
      UPAIR_CLOCK(UPAIR_CLOCK_100US) | UPAIR_X(UPAIR_X_ALL),
      UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_DUP),
      UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_REORDER),
      UPAIR_CLOCK(UPAIR_CLOCK_5MS) | UPAIR_X(UPAIR_X_DROP_FIRST),
      UPAIR_CLOCK(UPAIR_CLOCK_DEADLINE) | UPAIR_X(UPAIR_X_ALL),
  };
  seed_script("faults-mtu2048", UPAIR_CFG_MTU(3) | UPAIR_CFG_RETRY(2), faults, sizeof faults);
  static const uint8_t no_timer[] = {UPAIR_X(UPAIR_X_DROP_FIRST), UPAIR_X(UPAIR_X_REORDER),
                                     UPAIR_CLOCK(UPAIR_CLOCK_5MS) | UPAIR_X(UPAIR_X_ALL)};
  seed_script("no-timer-loss", UPAIR_CFG_MTU(0) | UPAIR_CFG_NO_TIMER | UPAIR_CFG_SQ2, no_timer,
              sizeof no_timer);
  return S.failed;
}
