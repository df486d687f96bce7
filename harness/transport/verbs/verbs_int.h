/* The verbs transport's insides (internal to transport/verbs/): the state
 * its three files share. verbs.c keeps the executor's side (buffers,
 * posting, completions), verbs_cm.c connects QPs with rdma_cm (the
 * agents'), verbs_qp.c by hand from ends exchanged elsewhere (`jctlab
 * rank` over MPI). Either way each of this rank's connections ends with
 * an RC QP in RTS (conn_t.qp) and the peer's buffer (remote_addr,
 * remote_rkey), which is all verbs.c needs. */
#ifndef JCT_VERBS_INT_H
#define JCT_VERBS_INT_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "verbs.h"

#define JCT__VERBS_CQ_DEPTH 4096

typedef struct {
  uint32_t id;
  bool is_src;           /* this rank sends the data (else it receives) */
  struct rdma_cm_id *cm; /* rdma_cm's (verbs_cm.c); NULL by hand */
  struct ibv_qp *qp;     /* the connection's QP, either way */
  bool qp_made, established;
  uint64_t remote_addr; /* src: the peer's data buffer; dst: the peer's CTS buffer */
  uint32_t remote_rkey;
  uint32_t pending_cts, pending_recv; /* kept while no executor is attached */
  uint32_t pending_imm[64];
} jct__verbs_conn_t;

struct jct_verbs {
  uv_loop_t *loop;
  const jct_schedule_t *s;
  uint32_t rank;
  jct__verbs_opts_t o;
  struct rdma_event_channel *ec; /* rdma_cm only */
  struct rdma_cm_id *listen;     /* rdma_cm only */
  struct ibv_context *ctx;
  bool own_ctx;      /* opened by name (verbs_qp.c): closed with v */
  uint32_t port_num; /* by hand: the port opened */
  struct ibv_pd *pd;
  struct ibv_comp_channel *cc;
  struct ibv_cq *cq;
  void *data_buf, *send_buf, *cts_buf, *cts_src;
  size_t data_bytes, send_bytes;
  struct ibv_mr *data_mr, *send_mr, *cts_mr, *cts_src_mr;
  uv_poll_t ec_poll, cc_poll;
  bool ec_polled, cc_polled;
  int polls_open;
  jct__verbs_conn_t *conns; /* indexed by connection id; only this rank's are used */
  uint32_t nlocal, outstanding;
  jct_exec_t *exec;
  uint32_t *addrs_be; /* copied from the options, or NULL */
  int failed;
  char why[256];
};

void jct__verbs_fail(jct__verbs_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Connection c is this rank's (either end). */
bool jct__verbs_local(const jct__verbs_t *v, uint32_t c);
/* The local ACK timeout exponent of c's QP at this end: the source's
 * timeout, the destination's cts_timeout (when given). */
uint8_t jct__verbs_timeout(const jct__verbs_t *v, const jct__verbs_conn_t *c);
/* v made for rank of s with options o (its conns named, nothing opened). */
int jct__verbs_alloc(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                     const jct__verbs_opts_t *o);
/* On v->ctx: the PD, completion channel and CQ, the message buffers, and
 * the completion channel watched. Errors: JCT_EIO, JCT_ENOMEM. */
int jct__verbs_open_ctx(jct__verbs_t *v, char *err, size_t errlen);
/* c's QP made (c->qp set): its receive WRs posted. -1: v failed. */
int jct__verbs_post_recvs(jct__verbs_t *v, jct__verbs_conn_t *c);
/* The QP's capacities for its send and receive queues. */
struct ibv_qp_init_attr jct__verbs_qp_attr(const jct__verbs_t *v);

#endif
