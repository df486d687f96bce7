/* The `verbs` transport (internal to the harness): one rank's side of a
 * schedule over rdma-core (libibverbs, librdmacm), on soft-RoCE (Linux rxe)
 * or a real RDMA NIC, driven by a libuv loop and the schedule executor
 * (include/jctlab/executor.h). It runs in a rank's agent (agent.c).
 *
 * As the uroce transport (ranks.h), one RC QP per connection carries both
 * directions: the connection's source writes each message into the
 * destination's buffer with one RDMA WRITE WITH IMMEDIATE (immediate: the
 * op id; a message above 1 GiB goes as RDMA WRITEs and a last WRITE WITH
 * IMMEDIATE), and the destination announces each buffer with a 64-byte RDMA
 * WRITE WITH IMMEDIATE the other way (immediate JCT_VERBS_CTS_IMM), as
 * NCCL's IB transport does with its clear-to-send. Both ends keep receive
 * WRs posted for the immediates (IB spec vol. 1, 9.4.3: a WRITE with
 * immediate consumes a receive WR).
 *
 * Connections are made with rdma_cm (jct__verbs_new, verbs_cm.c; RDMA_PS_TCP, port JCT_AGENT_PORT):
 * every rank listens on its address (opts.addrs_be; in the lab
 * jct_rank_ipv4(rank), topo.h); the
 * source of each connection connects to its destination. The connect's
 * private data carries the connection id and the source's CTS buffer
 * (address, rkey); the accept's, the destination's data buffer. QP
 * attributes from the options: local ACK timeout exponent
 * (RDMA_OPTION_ID_ACK_TIMEOUT: 4.096 us * 2^timeout; the destination's,
 * cts_timeout), retry count
 * (rdma_conn_param.retry_count), IP TOS (RDMA_OPTION_ID_TOS; DSCP 26 is
 * TOS 104); RNR retry 7 (infinite). The path MTU is the device's active
 * MTU, which rxe derives from its netdev's MTU (MTU 9000: 4096).
 *
 * Or by hand (jct__verbs_open, verbs_qp.c; `jctlab rank`): the device
 * and port opened by name, one QP per connection end made and moved to
 * INIT, each end's bootstrap (jct__verbs_end_t) exchanged elsewhere (over
 * MPI), then every QP moved to RTR and RTS with ibv_modify_qp (IBA vol. 1
 * 10.3 / 11.2.4: path MTU, destination QPN, receive PSN, the address
 * vector's GRH with the peer's GID, our GID index and the traffic class;
 * then timeout, retry count, RNR retry 7 and the send PSN): the GID index
 * is a choice, as perftest's -x and NCCL_IB_GID_INDEX make it.
 *
 * Every descriptor (the cm event channel, the completion channel) is
 * nonblocking and watched by uv_poll: nothing here ever blocks the loop.
 * Events that arrive while no executor is attached (a peer's CTS for the
 * next repetition can come before this rank's run starts) are kept and
 * delivered when one is.
 */
#ifndef JCT_VERBS_H
#define JCT_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "jctlab/executor.h"
#include "jctlab/dev_counters.h"
#include "jctlab/schedule.h"

#define JCT_VERBS_CTS_IMM 0xffffffffu
#define JCT_VERBS_CTS_BYTES 64

typedef struct {
  uint8_t timeout;   /* local ACK timeout exponent */
  /* The destinations' (0: timeout): a connection's destination sends only
   * its clear-to-sends, jctlab's, not the job's; the lab gives them a
   * timer past the longest stall it holds (vm_stalls.h), since a peer
   * whose VM is stopped for a captured host pause cannot ACK them and the
   * captured job had no such flow to time out. */
  uint8_t cts_timeout;
  uint8_t retry_cnt; /* 0..7 */
  uint8_t tos;       /* IP TOS of the QPs' packets */
  uint32_t slots;    /* CTS ahead per connection (the executor's) */
  uint16_t port;     /* rdma_cm port */
  /* Each rank's IPv4 data address, network order, schedule->nranks of
   * them (the agents' hellos say them); NULL: jct_rank_ipv4(rank), the
   * lab's (topo.h). */
  const uint32_t *addrs_be;
} jct__verbs_opts_t;

typedef struct jct_verbs jct__verbs_t;

/* rdma_cm: listen on this rank's address and make the PD, CQ and buffers on the
 * device it is bound to. Errors: JCT_EIO (no RDMA device on that address,
 * a verbs call failed: err says which), JCT_ENOMEM. */
int jct__verbs_new(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                  const jct__verbs_opts_t *o, char *err, size_t errlen);

/* One QP end's bootstrap by hand: what its peer needs of it. */
typedef struct {
  uint32_t qpn, psn; /* its QP number; the first PSN it sends (its peer's rq_psn) */
  uint64_t addr;     /* the buffer its peer writes: a source end's CTS buffer, a
                        destination end's data buffer */
  uint32_t rkey;
  uint32_t mtu_bytes; /* its port's active MTU (ibv_query_port), 256..4096 */
  uint8_t gid[16];    /* its GID, at gid_index of its port's table */
  uint32_t gid_index;
  uint32_t announced; /* 1: filled by its rank; 0: another rank's end */
} jct__verbs_end_t;

/* By hand: open device (its name; "": the first of ibv_get_device_list)
 * and port (1..; 0: 1), make the PD, CQ and buffers. Errors: JCT_EINVAL
 * (no such device or port, or the port is not active: err names it),
 * JCT_EIO, JCT_ENOMEM. */
int jct__verbs_open(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                    const jct__verbs_opts_t *o, const char *device, uint32_t port, char *err,
                    size_t errlen);
/* By hand: one RC QP per end of this rank's connections, moved to INIT
 * (receive WRs posted), and its bootstrap into ends[2c + (dst ? 1 : 0)]:
 * its psn as given there, everything else filled (GID from gid_index,
 * ibv_query_gid). Errors: JCT_EIO (err says which call). */
int jct__verbs_make_qps(jct__verbs_t *v, uint32_t gid_index, jct__verbs_end_t *ends, char *err,
                        size_t errlen);
/* By hand: every QP of this rank to RTR then RTS against its peer's end
 * (all[2 * nconns], every end announced), path MTU the smaller active MTU
 * of the two ends and max_mtu_bytes (0: no limit). Errors: JCT_EIO. */
int jct__verbs_connect_ends(jct__verbs_t *v, const jct__verbs_end_t *all, uint32_t max_mtu_bytes,
                            char *err, size_t errlen);

/* Connect every connection this rank is the source of (asynchronously). */
int jct__verbs_connect(jct__verbs_t *v);
/* Every connection of this rank, in either direction, is established. */
bool jct__verbs_connected(const jct__verbs_t *v);
/* The device's name ("rxe0") and port (1..), once bound (rdma_cm binds
 * the rank's address: rdma_bind_addr). Its counters: rdma_sysfs.h. */
const char *jct__verbs_device(const jct__verbs_t *v);
uint32_t jct__verbs_port(const jct__verbs_t *v);

/* Hooks for the executor: post_send acts for connections this rank is the
 * source of, post_cts for those it is the destination of; others are no-ops
 * (each rank's executor runs the whole schedule but acts for itself). */
jct_exec_hooks_t jct__verbs_hooks(jct__verbs_t *v);
/* Deliver CTS and receive events to e (NULL: keep them for the next). */
void jct__verbs_attach(jct__verbs_t *v, jct_exec_t *e);
/* Sends posted and not yet completed. */
uint32_t jct__verbs_outstanding(const jct__verbs_t *v);
/* Nonzero once a work completion failed (e.g. IBV_WC_RETRY_EXC_ERR), a
 * connection was refused or lost, or the executor refused an event; err
 * says which. */
int jct__verbs_failed(const jct__verbs_t *v, char *err, size_t errlen);

void jct__verbs_free(jct__verbs_t *v);

/* The module (harness/base/module.h): the functions above live in
 * jctlab-verbs.so, the only part of jctlab that links rdma-core, and reach
 * it through this table; jctlab's own jct__verbs_* (verbs_load.c) forward
 * to it. jct__verbs_load loads it, once; a command that will use verbs
 * calls it first and stops with its err (one line, exit 2) when the
 * module is missing. jct__verbs_new and jct__verbs_open load it too, and
 * fail with that err. Errors: JCT_EIO. */
struct jct__verbs_ops {
  int (*new_)(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
              const jct__verbs_opts_t *o, char *err, size_t errlen);
  int (*open)(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
              const jct__verbs_opts_t *o, const char *device, uint32_t port, char *err,
              size_t errlen);
  int (*make_qps)(jct__verbs_t *v, uint32_t gid_index, jct__verbs_end_t *ends, char *err,
                  size_t errlen);
  int (*connect_ends)(jct__verbs_t *v, const jct__verbs_end_t *all, uint32_t max_mtu_bytes,
                      char *err, size_t errlen);
  int (*connect)(jct__verbs_t *v);
  bool (*connected)(const jct__verbs_t *v);
  const char *(*device)(const jct__verbs_t *v);
  uint32_t (*port)(const jct__verbs_t *v);
  jct_exec_hooks_t (*hooks)(jct__verbs_t *v);
  void (*attach)(jct__verbs_t *v, jct_exec_t *e);
  uint32_t (*outstanding)(const jct__verbs_t *v);
  int (*failed)(const jct__verbs_t *v, char *err, size_t errlen);
  void (*free)(jct__verbs_t *v);
};
#define JCT__VERBS_MODULE "verbs"
#define JCT__VERBS_OPS "jct__verbs_module_ops"
int jct__verbs_load(char *err, size_t errlen);

#endif
