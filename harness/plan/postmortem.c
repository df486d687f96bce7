/* A capture's losses as `jctlab replay` injectors (postmortem.h): the
 * losses that the schedule inference found (include/jctlab/infer.h)
 * turned into targeted drops of the same packets, so that replaying the
 * capture (replay_input.c) without --inject re-runs the incident.
 *
 * The mapping: a loss is (op, byte offset in the op's message). On the
 * emulated fabric, op o of connection c is the M-th message its source
 * end sends (M counts the connection's earlier ops) to QP 0x101 + 2c
 * (ranks.h), and the lost bytes travel in packet offset / PMTU of it, the
 * replay's PMTU. So each connection with losses gets one injector:
 *   drop qp=0x101+2c pkt=M:K,M:K,...
 * (injectors/drop.c: by position, counted over first transmissions, anew
 * every repetition). Sizes scaled by --scale scale the offsets too.
 *
 * Lost retransmissions are replayed too, as the T-th transmission of the
 * same packet (drop.c's M:K@T, which counts transmissions by the packet's
 * losses at the site, as packet-keyed draws do): a loss whose first
 * transmission was lost and whose `again` re-sends were lost after it is
 * M:K, M:K@2, ..., M:K@(1+again); a loss of a re-sent copy whose first
 * transmission got through (`retransmission`) is M:K@2, ..., M:K@(2+again).
 * A transmission the capture lost at a later copy than its number (infer.h's
 * copies: a go-back re-sent it after an earlier copy got through) is
 * M:K@T#C, not before its C-th copy (drop.c): lost at the first re-sent
 * copy instead, it would be recovered inside the go-back that re-sent it
 * where the capture's drew a NAK of its own (the shipped capture's SEND
 * test: PSNs lost at their third to fifth copies, each NAKed and answered
 * 45-84 ms later).
 * Capture packets that land on the same replayed packet (a PMTU larger
 * than the capture's, or --scale below 1) merge: each transmission of it
 * is dropped once.
 *
 * A lost clear-to-send (infer.h's cts faults: the one that announced the
 * K-th message of connection c) is the K-th message the connection's
 * destination end sends back to its source end's QP, one packet: on the
 * emulated fabric
 *   drop qp=0x100+2c pkt=K:0
 * (ranks.h: the source end's QP, which receives only the connection's
 * clear-to-sends and ACKs). A replay without clear-to-sends (cts_slots 0,
 * a job of a capture that had none) never sends it: the injector acts on
 * nothing and the case is invalid, as for any target that acts on nothing.
 *
 * On the verbs transport the device picks its QP numbers, so a connection
 * is named by its ends and its place among the connections between them:
 * the injector takes the K-th QP that rank src's data to rank dst goes to
 * (drop.c, pkt= with qp-order= instead of qp=), K counting the
 * connections from src to dst that the job starts before this one:
 *   drop pkt=M:K,... qp-order=K where="src host A and dst host B and not
 *                           (udp[8] == 0x0b and udp[4:2] == 108)"
 * (the clause leaves out the 64-byte clear-to-sends of the connection the
 * other way, RDMA WRITE ONLY WITH IMMEDIATE in a 108-byte UDP datagram,
 * which rank src also sends to rank dst). A connection starts before
 * another when the other's first op depends, through any chain of deps,
 * on one of its ops (the schedule's program order: perftest's SEND test
 * starts after its WRITE test ends). Two connections between the same two
 * ranks in the same direction that may start at once cannot be told apart
 * on the wire: refused. A connection whose every message is 64 bytes is
 * left out of that count: its packets are the clause's 108-byte datagrams,
 * which never reach the injector (the lab's own captures hold such
 * connections: the verbs transport's clear-to-sends, WRITE ONLY WITH
 * IMMEDIATE of 64 bytes on the reverse connection's QP, which inference
 * took for a job's connection of 64-byte messages before it read them as
 * flow control; a schedule saved then still has them).
 * A lost clear-to-send on verbs is found the same way, on the way back:
 *   drop pkt=K:0 qp-order=0 where="src host B and dst host A and
 *                                 udp[8] == 0x0b and udp[4:2] == 108"
 * (only clear-to-sends pass: the 108-byte WRITE ONLY WITH IMMEDIATEs from
 * rank dst to rank src, to the QPs of the connections from src to dst).
 * A receiver announces its first buffers on all its connections at once
 * (executor.h), so two connections from src to dst cannot be told apart
 * by when their clear-to-sends start: refused.
 *
 * On verbs a connection's message losses go by what the responder made of
 * them (infer.h's behind; drop.c, epsn=): those lost at the expected PSN
 * in one injector, epsn=expected, dropping the packet's first copies the
 * responder would accept, and those lost behind a hole in another,
 * epsn=behind; @T numbers a packet's losses in that state. rxe in the lab
 * goes back deeper than the capture's requester (its NIC queue, up to 64
 * packets a QP, waits in the VM's shaper: agent_shape.c), so a loss
 * counted by transmission fell into the previous loss's go-back, behind
 * its hole, and drew no NAK of its own: the shipped capture's NAKs were 16
 * to 21 of 26 so, and are its 26 this way. Lost clear-to-sends are counted
 * by transmission as before (with unreached=first for a lost re-sent copy).
 *
 * On verbs the replayed requester is the lab's rxe, which acts on a NAK at
 * once, where the capture's requester sent on for its nak_to_resend_ns
 * (19.9 ms and 41 new packets in the lab's p2p-delay-drop capture): with
 * --hold-naks the NAK itself is held at its responder's host, `delay
 * nak=K@TIME at=host:R` (jct__postmortem_nak_holds), the K-th NAK rank R
 * sends leaving TIME late on its own flow, so that the requester learns
 * of it as late as the capture's acted on it. Off by default: rxe's queue
 * grows while the NAK is held, to its 64 packets in some repetitions and
 * not in others (README, "On verbs in the lab").
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/infer.h"
#include "jctlab/kdrop.h"
#include "jctlab/topo.h"
#include "harness/transport/uroce/ranks.h"
#include "postmortem.h"

#define MAX_PKTS_PER_SPEC 64 /* drop.c's list */
#define PKT_CHARS 40         /* ",M:K@T#C" at most */
#define CTS_BYTES 64         /* the verbs transport's clear-to-send (verbs.h) */

/* The message index of each op on its connection. */
static uint32_t *message_indices(const jct_schedule_t *s) {
  uint32_t *idx = calloc(s->nops ? s->nops : 1, sizeof *idx);
  uint32_t *next = calloc(s->nconns ? s->nconns : 1, sizeof *next);
  if (idx && next)
    for (uint32_t i = 0; i < s->nops; i++)
      idx[i] = next[s->ops[i].conn]++;
  free(next);
  return idx;
}

/* The first op of connection c, nops when it has none. */
static uint32_t first_op(const jct_schedule_t *s, uint32_t c) {
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].conn == c) return i;
  return s->nops;
}

/* Whether op `from` depends, through a chain of deps, on an op of
 * connection c. seen and stack: nops entries each, scratch. */
static bool depends_on_conn(const jct_schedule_t *s, uint32_t from, uint32_t c, bool *seen,
                            uint32_t *stack) {
  memset(seen, 0, s->nops * sizeof *seen);
  uint32_t n = 0;
  stack[n++] = from;
  seen[from] = true;
  while (n) {
    const jct_op_t *op = &s->ops[stack[--n]];
    for (uint32_t k = 0; k < op->ndeps; k++) {
      uint32_t d = op->deps[k];
      if (d >= s->nops || seen[d]) continue;
      if (s->ops[d].conn == c) return true;
      seen[d] = true;
      stack[n++] = d;
    }
  }
  return false;
}

/* Whether connection c sends only 64-byte messages (verbs.h's
 * clear-to-send size): on verbs each is one WRITE ONLY WITH IMMEDIATE in
 * a 108-byte UDP datagram, which add_spec's where= leaves out, so the
 * injector never sees the connection. */
static bool cts_sized(const jct_schedule_t *s, uint32_t c) {
  bool any = false;
  for (uint32_t i = 0; i < s->nops; i++) {
    if (s->ops[i].conn != c) continue;
    if (s->ops[i].bytes != CTS_BYTES) return false;
    any = true;
  }
  return any;
}

/* On verbs: conn's place among the connections with its ends (how many
 * of them the job starts before it), into *order. Errors: JCT_EINVAL when
 * one of them may start at the same time (err says which), JCT_ENOMEM. */
static int conn_order(const jct_schedule_t *s, uint32_t conn, uint32_t *order, char *err,
                      size_t errlen) {
  const jct_conn_t *c = &s->conns[conn];
  *order = 0;
  bool *seen = NULL;
  uint32_t *stack = NULL;
  int rc = 0;
  for (uint32_t o = 0; o < s->nconns && rc == 0; o++) {
    if (o == conn || s->conns[o].src != c->src || s->conns[o].dst != c->dst || cts_sized(s, o))
      continue;
    if (!seen &&
        (!(seen = malloc(s->nops * sizeof *seen)) || !(stack = malloc(s->nops * sizeof *stack)))) {
      rc = JCT_ENOMEM;
      break;
    }
    uint32_t a = first_op(s, conn), b = first_op(s, o);
    if (b == s->nops) continue; /* never used: sends nothing */
    if (a < s->nops && depends_on_conn(s, a, o, seen, stack))
      (*order)++; /* o starts first */
    else if (a == s->nops || !depends_on_conn(s, b, conn, seen, stack))
      rc = jct__errf(err, errlen, JCT_EINVAL,
                     "the trace has two connections from rank %u to rank %u that may start at "
                     "once: on verbs their losses cannot be targeted (give --inject instead)",
                     c->src, c->dst);
  }
  free(seen);
  free(stack);
  return rc;
}

/* On verbs: whether conn is the only connection from its source to its
 * destination with ops, so that its clear-to-sends are the only ones on
 * their way back. Errors: JCT_EINVAL (err says which). */
static int cts_alone(const jct_schedule_t *s, uint32_t conn, char *err, size_t errlen) {
  const jct_conn_t *c = &s->conns[conn];
  for (uint32_t o = 0; o < s->nconns; o++)
    if (o != conn && s->conns[o].src == c->src && s->conns[o].dst == c->dst &&
        first_op(s, o) < s->nops)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "the trace lost a clear-to-send of one of two connections from rank %u to "
                       "rank %u: on verbs their clear-to-sends start at once and cannot be told "
                       "apart (give --inject instead)",
                       c->src, c->dst);
  return 0;
}

/* Append to specs[*n] the spec of kind ("drop", "stall") with args
 * ("pkt=LIST", "pkt=LIST for=..."), naming conn's packets: its messages,
 * or (cts) its clear-to-sends. */
static int add_spec(char **specs, uint32_t *n, const jct_schedule_t *s, uint32_t conn, bool verbs,
                    bool cts, const char *kind, const char *args, char *err, size_t errlen) {
  if (*n == JCT_POSTMORTEM_MAX_SPECS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "the trace's %s on more than %u connections: give --inject instead",
                     !strcmp(kind, "stall")     ? "transmit stalls are"
                     : !strcmp(kind, "timeout") ? "timer go-backs are"
                                                : "losses are",
                     JCT_POSTMORTEM_MAX_SPECS);
  const jct_conn_t *c = &s->conns[conn];
  uint32_t order = 0;
  int rc;
  if (verbs &&
      (rc = cts ? cts_alone(s, conn, err, errlen) : conn_order(s, conn, &order, err, errlen)))
    return rc;
  size_t len = strlen(args) + 340;
  char *spec = malloc(len);
  if (!spec) return JCT_ENOMEM;
  /* rxe goes back less deep than the capture's requester (its host's
   * reaction): a lost re-sent copy's packet it never re-sends loses its
   * next in-order copy instead (drop.c, unreached=first); the message
   * losses by state (epsn=) need none. */
  const char *unreached =
      verbs && !strcmp(kind, "drop") && strchr(args, '@') && !strstr(args, " epsn=")
          ? " unreached=first"
          : "";
  if (verbs && strcmp(kind, "timeout") == 0) { /* its data, and its responder's ACKs back */
    char a[48], b[48];
    jct_addr_t sa = jct_rank_ipv4(c->src), da = jct_rank_ipv4(c->dst);
    jct_addr_str(&sa, a, sizeof a);
    jct_addr_str(&da, b, sizeof b);
    snprintf(spec, len,
             "%s %s qp-order=%u where=\"(src host %s and dst host %s and not (udp[8] == 0x0b and "
             "udp[4:2] == 108)) or (src host %s and dst host %s and udp[8] == 0x11)\"",
             kind, args, order, a, b, b, a);
  } else if (verbs) {
    char a[48], b[48];
    jct_addr_t sa = jct_rank_ipv4(c->src), da = jct_rank_ipv4(c->dst);
    jct_addr_str(&sa, a, sizeof a);
    jct_addr_str(&da, b, sizeof b);
    if (cts)
      snprintf(spec, len,
               "%s %s%s qp-order=0 where=\"src host %s and dst host %s and udp[8] == 0x0b "
               "and udp[4:2] == 108\"",
               kind, args, unreached, b, a);
    else
      snprintf(spec, len,
               "%s %s%s qp-order=%u where=\"src host %s and dst host %s and not (udp[8] == "
               "0x0b and udp[4:2] == 108)\"",
               kind, args, unreached, order, a, b);
  } else {
    snprintf(spec, len, "%s qp=0x%x %s", kind, jct__uroce_qpn(conn, !cts), args);
  }
  specs[(*n)++] = spec;
  return 0;
}

/* The replay's packet index of fault f (sizes already scaled); a
 * clear-to-send is one packet. */
static uint64_t packet_of(const jct_schedule_t *s, const jct_infer_fault_t *f, double scale,
                          uint32_t pmtu) {
  if (f->cts) return 0;
  uint64_t bytes = s->ops[f->op].bytes;
  uint64_t off = (uint64_t)((double)f->offset_bytes * scale);
  if (off >= bytes) off = bytes - 1;
  return f->tail ? (bytes - 1) / pmtu : off / pmtu; /* the tail stays the tail */
}

/* The transmissions of its packet that fault f lost: first..last (1: the
 * first transmission). */
static void transmissions(const jct_infer_fault_t *f, uint32_t *first, uint32_t *last) {
  *first = f->retransmission ? 2 : 1;
  uint64_t l = (uint64_t)*first + f->again;
  *last = l > JCT_POSTMORTEM_MAX_TX ? JCT_POSTMORTEM_MAX_TX : (uint32_t)l;
}

/* Whether an earlier fault dropped transmission t of the same replayed
 * packet (a packet whose losses the capture shows twice, or two lost
 * packets that a larger PMTU or scaling merged). */
static bool repeated(const jct_schedule_t *s, const jct_infer_report_t *rep, uint32_t i, uint32_t t,
                     double scale, uint32_t pmtu) {
  const jct_infer_fault_t *f = &rep->faults[i];
  for (uint32_t j = 0; j < i; j++) {
    uint32_t a, b;
    transmissions(&rep->faults[j], &a, &b);
    if (rep->faults[j].op == f->op && rep->faults[j].cts == f->cts && t >= a && t <= b &&
        packet_of(s, &rep->faults[j], scale, pmtu) == packet_of(s, f, scale, pmtu))
      return true;
  }
  return false;
}

/* One transmission of a packet to drop: pkt= target M:K@T#C, in list
 * `list` (LIST_ANY, or on verbs by the state the capture lost it in). */
typedef struct {
  uint32_t msg, t, copy;
  uint32_t tx; /* the transmission the capture lost (1: the first) */
  uint64_t pkt;
  int list;
} target_t;

enum { LIST_ANY, LIST_EXPECTED, LIST_BEHIND, NLISTS };
static const char *const list_words[NLISTS] = {"", " epsn=expected", " epsn=behind"};

/* Connection c's targets (its messages', or its clear-to-sends'), in the
 * order of the faults, into t[*n] (t has room for every fault's
 * transmissions). On verbs a message's losses go by the responder's state
 * (drop.c, epsn=): rxe goes back deeper than the capture's requester, so
 * a loss counted by transmission would land behind another's hole. */
static void conn_targets(const jct_schedule_t *s, const jct_infer_report_t *rep,
                         const uint32_t *msg, uint32_t c, bool cts, bool verbs, double scale,
                         uint32_t pmtu, target_t *t, uint32_t *n) {
  *n = 0;
  for (uint32_t i = 0; i < rep->nfaults; i++) {
    const jct_infer_fault_t *f = &rep->faults[i];
    if (f->op >= s->nops || s->ops[f->op].conn != c || f->cts != cts) continue;
    uint64_t pkt = packet_of(s, f, scale, pmtu);
    uint32_t first, last;
    transmissions(f, &first, &last);
    for (uint32_t tx = first; tx <= last; tx++) {
      if (repeated(s, rep, i, tx, scale, pmtu)) continue;
      uint32_t k = tx - first;
      target_t x = {.msg = msg[f->op], .pkt = pkt, .t = tx, .tx = tx, .list = LIST_ANY};
      x.copy = k < JCT_INFER_MAX_COPIES ? f->copies[k] : 0;
      if (verbs && !cts) {
        bool behind = k < JCT_INFER_MAX_COPIES && ((f->behind >> k) & 1u);
        x.list = behind ? LIST_BEHIND : LIST_EXPECTED;
        x.copy = 0;
        x.t = 1; /* the copies in its state before it, of the same packet */
        for (uint32_t j = 0; j < *n; j++)
          x.t += t[j].list == x.list && t[j].msg == x.msg && t[j].pkt == x.pkt;
      }
      t[(*n)++] = x;
    }
  }
}

/* The specs of connection c's targets in list `list`: one packet's
 * transmissions in one spec (drop.c counts them there). */
static int list_specs(char **specs, uint32_t *nspecs, const jct_schedule_t *s, uint32_t c,
                      bool verbs, bool cts, const target_t *t, uint32_t n, int list, char *buf,
                      char *err, size_t errlen) {
  uint32_t in = 0;
  size_t used = (size_t)sprintf(buf, "pkt=");
  int rc = 0;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    if (t[i].list != list) continue;
    uint32_t same = 0; /* this packet's targets from here on */
    for (uint32_t j = i; j < n; j++)
      same += t[j].list == list && t[j].msg == t[i].msg && t[j].pkt == t[i].pkt;
    bool first_of_packet = true;
    for (uint32_t j = 0; j < i; j++)
      if (t[j].list == list && t[j].msg == t[i].msg && t[j].pkt == t[i].pkt)
        first_of_packet = false;
    if (in && first_of_packet && in + same > MAX_PKTS_PER_SPEC) {
      strcpy(buf + used, list_words[list]);
      rc = add_spec(specs, nspecs, s, c, verbs, cts, "drop", buf, err, errlen);
      in = 0;
      used = (size_t)sprintf(buf, "pkt=");
    }
    if (in == MAX_PKTS_PER_SPEC) continue;
    char tx[24] = "";
    if (t[i].copy > t[i].t)
      snprintf(tx, sizeof tx, "@%u#%u", t[i].t, t[i].copy);
    else if (t[i].t > 1)
      snprintf(tx, sizeof tx, "@%u", t[i].t);
    used += (size_t)snprintf(buf + used, PKT_CHARS, "%s%u:%llu%s", in ? "," : "", t[i].msg,
                             (unsigned long long)t[i].pkt, tx);
    in++;
  }
  if (in && rc == 0) {
    strcpy(buf + used, list_words[list]);
    rc = add_spec(specs, nspecs, s, c, verbs, cts, "drop", buf, err, errlen);
  }
  return rc;
}

int jct__postmortem_specs(const jct_schedule_t *s, const jct_infer_report_t *rep, double scale,
                          uint32_t pmtu, bool verbs, char *specs[JCT_POSTMORTEM_MAX_SPECS],
                          uint32_t *nspecs, uint64_t *lost_packets, uint64_t *lost_retransmissions,
                          char *err, size_t errlen) {
  *nspecs = 0;
  *lost_packets = 0;
  *lost_retransmissions = 0;
  size_t room = 1;
  for (uint32_t i = 0; i < rep->nfaults; i++) {
    uint32_t first, last;
    transmissions(&rep->faults[i], &first, &last);
    room += last - first + 1;
  }
  uint32_t *msg = message_indices(s);
  char *buf = malloc(MAX_PKTS_PER_SPEC * PKT_CHARS + 32);
  target_t *t = malloc(room * sizeof *t);
  int rc = msg && buf && t ? 0 : JCT_ENOMEM;
  for (uint32_t cc = 0; cc < 2 * s->nconns && rc == 0; cc++) {
    uint32_t c = cc / 2, n; /* each connection's messages, then its clear-to-sends */
    bool cts = cc % 2;
    conn_targets(s, rep, msg, c, cts, verbs, scale, pmtu, t, &n);
    for (uint32_t i = 0; i < n; i++) {
      (*lost_packets)++;
      if (t[i].tx > 1) (*lost_retransmissions)++;
    }
    for (int list = 0; list < NLISTS && rc == 0; list++)
      rc = list_specs(specs, nspecs, s, c, verbs, cts, t, n, list, buf, err, errlen);
  }
  free(msg);
  free(buf);
  free(t);
  return rc;
}

void jct__postmortem_timer_go_backs(jct_uroce_go_back_t *g, const uint64_t *idle_ns, uint32_t n,
                                    uint8_t timeout) {
  if (!timeout) return;
  uint64_t timer_ns = (uint64_t)JCT_UROCE_TIMEOUT_UNIT_NS << timeout;
  for (uint32_t i = 0; i < n; i++)
    if (g[i].timer_ns && idle_ns[i] >= timer_ns) g[i].timer_ns = g[i].ahead_psns = 0;
}

/* Whether go-back i is the first NAK go-back at its position and a fault
 * there lost the packet's first transmission (uroce.h first_tx). */
static bool first_tx(const jct_infer_report_t *rep, uint32_t i) {
  const jct_infer_go_back_t *b = &rep->go_backs[i];
  if (b->timer || !b->hole_to_nak_ns) return false;
  for (uint32_t j = 0; j < i; j++) {
    const jct_infer_go_back_t *a = &rep->go_backs[j];
    if (!a->timer && a->op == b->op && a->offset_bytes == b->offset_bytes && a->cts == b->cts)
      return false;
  }
  for (uint32_t j = 0; j < rep->nfaults; j++) {
    const jct_infer_fault_t *f = &rep->faults[j];
    if (f->op == b->op && f->offset_bytes == b->offset_bytes && f->cts == b->cts &&
        !f->retransmission && f->copies[0] <= 1)
      return true;
  }
  return false;
}

int jct__postmortem_go_backs(const jct_schedule_t *s, const jct_infer_report_t *rep, double scale,
                             uint32_t pmtu, jct_uroce_go_back_t **out, uint64_t **idle_ns,
                             uint32_t *n) {
  *out = NULL;
  *idle_ns = NULL;
  *n = 0;
  if (!rep->ngo_backs) return 0;
  uint32_t *msg = message_indices(s);
  jct_uroce_go_back_t *g = malloc(rep->ngo_backs * sizeof *g);
  uint64_t *idle = calloc(rep->ngo_backs, sizeof *idle);
  if (!msg || !g || !idle) {
    free(msg);
    free(g);
    free(idle);
    return JCT_ENOMEM;
  }
  for (uint32_t i = 0; i < rep->ngo_backs; i++) {
    const jct_infer_go_back_t *b = &rep->go_backs[i];
    if (b->op >= s->nops) continue;
    jct_infer_fault_t at = {.op = b->op, .offset_bytes = b->offset_bytes, .cts = b->cts};
    idle[*n] = b->idle_ns;
    g[(*n)++] = (jct_uroce_go_back_t){.conn = s->ops[b->op].conn,
                                      .cts = b->cts,
                                      .msg = msg[b->op],
                                      .pkt = (uint32_t)packet_of(s, &at, scale, pmtu),
                                      .ahead_psns = b->ahead_psns,
                                      .hole_to_nak_ns = b->hole_to_nak_ns,
                                      .nak_ahead_psns = b->nak_ahead_psns,
                                      .nak_to_resend_ns = b->nak_to_resend_ns,
                                      .timer_ns = b->timer_ns,
                                      .timer_lead_ns = b->timer_lead_ns,
                                      .idle_ns = b->idle_ns,
                                      .recovers_loss = b->recovers_loss,
                                      .first_tx = first_tx(rep, i)};
  }
  free(msg);
  *out = g;
  *idle_ns = idle;
  return 0;
}

int jct__postmortem_stalls(const jct_schedule_t *s, const jct_infer_report_t *rep, double scale,
                           uint32_t pmtu, jct_uroce_stall_t **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  if (!rep->nstalls) return 0;
  uint32_t *msg = message_indices(s);
  jct_uroce_stall_t *x = malloc(rep->nstalls * sizeof *x);
  if (!msg || !x) {
    free(msg);
    free(x);
    return JCT_ENOMEM;
  }
  for (uint32_t i = 0; i < rep->nstalls; i++) {
    const jct_infer_stall_t *st = &rep->stalls[i];
    if (st->op >= s->nops) continue;
    jct_infer_fault_t at = {.op = st->op, .offset_bytes = st->offset_bytes};
    x[(*n)++] = (jct_uroce_stall_t){.conn = s->ops[st->op].conn,
                                    .msg = msg[st->op],
                                    .pkt = (uint32_t)packet_of(s, &at, scale, pmtu),
                                    .stall_ns = st->stall_ns};
  }
  free(msg);
  *out = x;
  return 0;
}

/* A RoCEv2 packet of pmtu bytes on the wire: Ethernet 14, IPv4 20, UDP 8,
 * BTH 12, ICRC 4, FCS 4, preamble 8 and gap 12 (the switch's overhead). */
#define ROCE_WIRE_BYTES 82u

int jct__postmortem_nak_holds(const jct_schedule_t *s, const jct_uroce_go_back_t *g, uint32_t n,
                              uint64_t rate_bps, uint32_t pmtu,
                              char *specs[JCT_POSTMORTEM_MAX_SPECS], uint32_t *nspecs, char *err,
                              size_t errlen) {
  if (!rate_bps || !pmtu) return 0;
  double own_ns =
      JCT_POSTMORTEM_RXE_QUEUE_PKTS * (double)(pmtu + ROCE_WIRE_BYTES) * 8e9 / (double)rate_bps;
  for (uint32_t r = 0; r < s->nranks; r++) {
    char list[JCT_KDROP_MAX_NAKS * 32 + 1] = "";
    size_t used = 0;
    uint32_t k = 0, held = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (g[i].timer_ns || !g[i].nak_to_resend_ns || g[i].conn >= s->nconns) continue;
      const jct_conn_t *c = &s->conns[g[i].conn];
      if ((g[i].cts ? c->src : c->dst) != r) continue;
      k++;
      double hold = (double)g[i].nak_to_resend_ns - own_ns;    /* emulated: the chain x F */
      if (hold < 1000 || held == JCT_KDROP_MAX_NAKS) continue; /* under 1 us: at once */
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%u@%lluus", held ? "," : "", k,
                               (unsigned long long)(hold / 1000));
      held++;
    }
    if (!held) continue;
    if (*nspecs == JCT_POSTMORTEM_MAX_SPECS)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "the trace's NAKs need more than %u injectors: give --inject instead",
                       JCT_POSTMORTEM_MAX_SPECS);
    size_t len = used + 48;
    char *spec = malloc(len);
    if (!spec) return JCT_ENOMEM;
    snprintf(spec, len, "delay nak=%s at=host:%u", list, r);
    specs[(*nspecs)++] = spec;
  }
  return 0;
}

/* The stall target after which the replay's sender waits: the packet
 * before the one the stall preceded (the switch sees a packet go by, not
 * one to come); before a message's first packet (a larger PMTU or --scale
 * merged the stall's packets into packet 0), its first packet, one late. */
static uint32_t stall_after(const jct_uroce_stall_t *x) {
  return x->pkt ? x->pkt - 1 : 0;
}

#define STALL_LIST_CHARS 240 /* a spec's value holds 255 (injector.h) */

/* One target of a connection's stall or timeout spec: packet pkt of
 * message msg; a stall's also how long (for=). */
typedef struct {
  uint32_t msg, pkt;
  uint64_t stall_ns;
} listed_t;

/* Connection c's specs of kind "stall" (pkt= and for= lists) or "timeout"
 * (pkt= alone), baseline=yes, for its targets e (ne, in order): as many
 * specs as keep each list within STALL_LIST_CHARS, added to specs
 * (add_spec). */
static int listed_specs(const jct_schedule_t *s, uint32_t c, const char *kind, const listed_t *e,
                        uint32_t ne, char **specs, uint32_t *nspecs, char *err, size_t errlen) {
  bool timed = strcmp(kind, "stall") == 0;
  char pkts[STALL_LIST_CHARS + 32] = "", times[STALL_LIST_CHARS + 32] = "";
  char args[2 * STALL_LIST_CHARS + 80];
  size_t np = 0, nt = 0;
  int rc = 0;
  for (uint32_t i = 0; i < ne && rc == 0; i++) {
    char p[32], t[32] = "";
    size_t lp = (size_t)snprintf(p, sizeof p, "%u:%u", e[i].msg, e[i].pkt), lt = 0;
    uint64_t ns = e[i].stall_ns;
    if (timed)
      lt = (size_t)snprintf(t, sizeof t, "%lluus",
                            (unsigned long long)(ns >= 1000 ? (ns + 500) / 1000 : 1));
    if (np && (np + 1 + lp > STALL_LIST_CHARS || nt + 1 + lt > STALL_LIST_CHARS)) { /* full */
      snprintf(args, sizeof args, "pkt=%s%s%s baseline=yes", pkts, timed ? " for=" : "", times);
      rc = add_spec(specs, nspecs, s, c, true, false, kind, args, err, errlen);
      np = nt = 0;
    }
    np += (size_t)snprintf(pkts + np, sizeof pkts - np, "%s%s", np ? "," : "", p);
    if (timed) nt += (size_t)snprintf(times + nt, sizeof times - nt, "%s%s", nt ? "," : "", t);
  }
  if (np && rc == 0) {
    snprintf(args, sizeof args, "pkt=%s%s%s baseline=yes", pkts, timed ? " for=" : "", times);
    rc = add_spec(specs, nspecs, s, c, true, false, kind, args, err, errlen);
  }
  return rc;
}

int jct__postmortem_stall_specs(const jct_schedule_t *s, const jct_uroce_stall_t *x, uint32_t nx,
                                char *specs[JCT_POSTMORTEM_MAX_SPECS], uint32_t *nspecs, char *err,
                                size_t errlen) {
  *nspecs = 0;
  listed_t *e = malloc((nx ? nx : 1) * sizeof *e);
  if (!e) return JCT_ENOMEM;
  int rc = 0;
  for (uint32_t c = 0; c < s->nconns && rc == 0; c++) {
    uint32_t ne = 0;
    for (uint32_t i = 0; i < nx; i++) {
      if (x[i].conn != c) continue;
      bool seen = false; /* two stalls at one replayed packet: one, as long as both */
      for (uint32_t j = 0; j < i && !seen; j++)
        seen = x[j].conn == c && x[j].msg == x[i].msg && stall_after(&x[j]) == stall_after(&x[i]);
      if (seen) continue;
      uint64_t ns = 0;
      for (uint32_t j = i; j < nx; j++)
        if (x[j].conn == c && x[j].msg == x[i].msg && stall_after(&x[j]) == stall_after(&x[i]))
          ns += x[j].stall_ns;
      e[ne++] = (listed_t){.msg = x[i].msg, .pkt = stall_after(&x[i]), .stall_ns = ns};
    }
    rc = listed_specs(s, c, "stall", e, ne, specs, nspecs, err, errlen);
  }
  free(e);
  return rc;
}

int jct__postmortem_timeout_specs(const jct_schedule_t *s, const jct_uroce_go_back_t *g, uint32_t n,
                                  char *specs[JCT_POSTMORTEM_MAX_SPECS], uint32_t *nspecs,
                                  char *err, size_t errlen) {
  *nspecs = 0;
  listed_t *e = malloc((n ? n : 1) * sizeof *e);
  if (!e) return JCT_ENOMEM;
  int rc = 0;
  for (uint32_t c = 0; c < s->nconns && rc == 0; c++) {
    uint32_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (g[i].conn != c || !g[i].timer_ns || g[i].recovers_loss || g[i].cts) continue;
      bool seen = false; /* two at one packet: one target */
      for (uint32_t j = 0; j < i && !seen; j++)
        seen = g[j].conn == c && g[j].timer_ns && !g[j].recovers_loss && !g[j].cts &&
               g[j].msg == g[i].msg && g[j].pkt == g[i].pkt;
      if (!seen) e[ne++] = (listed_t){.msg = g[i].msg, .pkt = g[i].pkt};
    }
    rc = listed_specs(s, c, "timeout", e, ne, specs, nspecs, err, errlen);
  }
  free(e);
  return rc;
}
