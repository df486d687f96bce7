/* UDP traffic for bench/fabric: sender and receiver threads, each moved
 * into its rank's network namespace (setns), sending with sendmmsg as fast
 * as it can and receiving with recvmmsg, with counters the main thread
 * reads while they run. */
#ifndef JCT_BENCH_FABRIC_TRAFFIC_H
#define JCT_BENCH_FABRIC_TRAFFIC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/topo.h"

#define JCT__TRAFFIC_PORT 5201
#define JCT__TRAFFIC_TOS 0x6a            /* DSCP 26 (switch priority 3) and ECT(0), as uroce */
#define JCT__TRAFFIC_ETH_IP_UDP_BYTES 42 /* Ethernet 14 + IPv4 20 + UDP 8, no FCS */

typedef struct {
  /* set by the caller */
  const jct_topo_t *topo;
  size_t rank;          /* the rank namespace the thread runs in */
  size_t peer;          /* sender: the destination rank */
  size_t payload_bytes; /* sender: UDP payload of every datagram */
  bool sender;
  bool pin; /* true: run on cpu only; false: on any CPU */
  int cpu;
  bool sched_idle; /* SCHED_IDLE: run only when no normal thread wants the CPU */
  int nice;        /* otherwise SCHED_OTHER at this nice value (per thread) */
  /* counters: updated once per batch, read while the thread runs */
  _Alignas(64) _Atomic uint64_t packets;
  _Atomic uint64_t bytes;  /* UDP payload bytes */
  _Atomic uint64_t errors; /* sendmmsg failures (sender) */
  uint64_t sock_drops;     /* receiver: the socket's drop count when it stopped */
  /* internal */
  pthread_t tid;
  bool started;
  int rc;
  char err[192];
  struct jct__traffic *group;
} jct__flow_t;

typedef struct jct__traffic {
  jct__flow_t *flows;
  size_t nflows;
  _Atomic bool stop;
  pthread_mutex_t mu; /* nready and go */
  pthread_cond_t cond;
  size_t nready;
  bool go;
} jct__traffic_t;

/* Start one thread per flow and wait until every one has its socket
 * (receivers bound before any sender sends a datagram: receivers set up
 * first, then senders). Returns 0, or the first flow's error with err set
 * (every thread is then joined). */
int jct__traffic_start(jct__traffic_t *t, jct__flow_t *flows, size_t nflows, char *err,
                       size_t errlen);

/* Tell every thread to stop and join them. */
void jct__traffic_stop(jct__traffic_t *t);

#endif
