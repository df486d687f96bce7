/* The verbs transport's RDMA device settings (a scenario's keys, run's
 * options), as the run options carry them (run.h's jct_run_opts_t.rdma)
 * and the agents check and apply them (harness/transport/rdma_sysfs.h).
 */
#ifndef JCTLAB_RDMA_H
#define JCTLAB_RDMA_H

#include <stdbool.h>
#include <stdint.h>

/* The verbs transport's RDMA settings (scenario keys device, port,
 * gid_index, traffic_class, counters; run's --device, --device-port,
 * --gid-index, --traffic-class, --counters), the same for every rank's
 * agent; checked by each agent against its own device
 * (harness/transport/rdma_sysfs.h), which names the bad word (exit 2).
 * Unset, each agent uses what rdma_cm binds to the rank's address.
 *
 * rdma_cm chooses the device, port and source GID from the rank's IP
 * address (librdmacm, rdma_bind_addr): device and port say which it must
 * be, gid_index which GID table entry must hold that address as a RoCE v2
 * GID (IBA vol. 1 annex A17: ::ffff:IPv4), so that a host whose address
 * sits elsewhere fails at setup, not in the middle of a job.
 * traffic_class is the GRH traffic class, on RoCE v2 the IP header's TOS
 * byte (DSCP << 2 | ECN; NCCL_IB_TC, perftest's --tclass), set with
 * RDMA_OPTION_ID_TOS; default DSCP 26 (104). counters: hw_counters names
 * (or port counters/ names) each agent reads before and after every
 * repetition, given per rank in the result: rxe's (drivers/infiniband/
 * sw/rxe/rxe_hw_counters.c) out_of_seq_request, rcvd_seq_err,
 * completer_retry_err, retry_exceeded_err, ...; mlx5's out_of_sequence,
 * packet_seq_err, local_ack_timeout_err, np_cnp_sent, rp_cnp_handled,
 * np_ecn_marked_roce_packets, ...; the port's port_xmit_packets,
 * port_xmit_wait, ... (README, "RDMA settings"). */
#define JCT_RDMA_MAX_COUNTERS 32
#define JCT_RDMA_DEFAULT_TRAFFIC_CLASS 104 /* DSCP 26, ECN bits 0: the data class */
typedef struct {
  char device[64];          /* "" : rdma_cm's */
  uint8_t port;             /* 1..; 0: rdma_cm's */
  bool has_gid_index, has_traffic_class;
  uint16_t gid_index;       /* with has_gid_index */
  uint8_t traffic_class;    /* with has_traffic_class */
  uint32_t ncounters;
  char counters[JCT_RDMA_MAX_COUNTERS][40];
} jct_rdma_opts_t;

/* Any RDMA setting given (r's device, port, gid_index, traffic_class or
 * counters): the word of the first, for an error naming it; NULL: none. */
const char *jct_rdma_opts_first(const jct_rdma_opts_t *r);

#endif
