/* The verbs transport's executor side: buffers, RC QPs' receive WRs,
 * WRITE WITH IMMEDIATE messages and clear-to-sends, completions into the
 * executor (verbs.h). Connections: verbs_cm.c (rdma_cm) or verbs_qp.c (by
 * hand). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "verbs_int.h"

#define MAX_WRITE_BYTES (1ull << 30)

/* A send's wr_id: its connection in the low 32 bits; on a data message's
 * last work request also its op id + 1 in the high ones, so that its
 * completion can release program-order deps (jct_exec_on_sent). */
#define WR_OP_SHIFT 32

typedef jct__verbs_conn_t conn_t;

void jct__verbs_fail(jct__verbs_t *v, const char *fmt, ...) {
  if (v->failed) return;
  v->failed = JCT_EIO;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->why, sizeof v->why, fmt, ap);
  va_end(ap);
}
#define fail jct__verbs_fail

bool jct__verbs_local(const jct__verbs_t *v, uint32_t c) {
  return v->s->conns[c].src == v->rank || v->s->conns[c].dst == v->rank;
}

uint8_t jct__verbs_timeout(const jct__verbs_t *v, const jct__verbs_conn_t *c) {
  return !c->is_src && v->o.cts_timeout ? v->o.cts_timeout : v->o.timeout;
}

/* ---- buffers, QPs ------------------------------------------------------- */
static int make_buffers(jct__verbs_t *v, char *err, size_t errlen) {
  for (uint32_t i = 0; i < v->s->nops; i++) {
    const jct_conn_t *c = &v->s->conns[v->s->ops[i].conn];
    size_t b = v->s->ops[i].bytes > MAX_WRITE_BYTES ? MAX_WRITE_BYTES : v->s->ops[i].bytes;
    if (c->dst == v->rank && b > v->data_bytes) v->data_bytes = b;
    if (c->src == v->rank && b > v->send_bytes) v->send_bytes = b;
  }
  if (!v->data_bytes) v->data_bytes = 64;
  if (!v->send_bytes) v->send_bytes = 64;
  unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (!(v->data_buf = calloc(1, v->data_bytes)) || !(v->send_buf = calloc(1, v->send_bytes)) ||
      !(v->cts_buf = calloc(1, JCT_VERBS_CTS_BYTES)) ||
      !(v->cts_src = calloc(1, JCT_VERBS_CTS_BYTES)))
    return jct__errf(err, errlen, JCT_ENOMEM,
                     "rank %u: cannot allocate %zu + %zu bytes of message buffers (a lab VM "
                     "has 512 MiB: smaller messages)",
                     v->rank, v->data_bytes, v->send_bytes);
  if (!(v->data_mr = ibv_reg_mr(v->pd, v->data_buf, v->data_bytes, access)) ||
      !(v->send_mr = ibv_reg_mr(v->pd, v->send_buf, v->send_bytes, IBV_ACCESS_LOCAL_WRITE)) ||
      !(v->cts_mr = ibv_reg_mr(v->pd, v->cts_buf, JCT_VERBS_CTS_BYTES, access)) ||
      !(v->cts_src_mr = ibv_reg_mr(v->pd, v->cts_src, JCT_VERBS_CTS_BYTES, IBV_ACCESS_LOCAL_WRITE)))
    return jct__errf(err, errlen, JCT_EIO, "ibv_reg_mr: %s", strerror(errno));
  return 0;
}

static int post_recv(conn_t *c) {
  struct ibv_recv_wr wr = {.wr_id = c->id}, *bad;
  return ibv_post_recv(c->qp, &wr, &bad);
}

struct ibv_qp_init_attr jct__verbs_qp_attr(const jct__verbs_t *v) {
  uint32_t depth = 2 * v->o.slots + 4;
  return (struct ibv_qp_init_attr){
      .send_cq = v->cq,
      .recv_cq = v->cq,
      .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1}};
}

int jct__verbs_post_recvs(jct__verbs_t *v, conn_t *c) {
  c->qp_made = true;
  for (uint32_t i = 0; i < jct__verbs_qp_attr(v).cap.max_recv_wr; i++)
    if (post_recv(c)) {
      fail(v, "connection %u: ibv_post_recv: %s", c->id, strerror(errno));
      return -1;
    }
  return 0;
}

/* ---- completions ------------------------------------------------------- */

static conn_t *conn_of_qp(jct__verbs_t *v, uint32_t qpn) {
  for (uint32_t c = 0; c < v->s->nconns; c++)
    if (v->conns[c].qp_made && v->conns[c].qp->qp_num == qpn) return &v->conns[c];
  return NULL;
}

static void deliver(jct__verbs_t *v, conn_t *c, uint32_t imm) {
  uint64_t now = jct_now_ns();
  int rc = 0;
  if (c->is_src && imm == JCT_VERBS_CTS_IMM) {
    if (v->exec)
      rc = jct_exec_on_cts(v->exec, c->id, now);
    else
      c->pending_cts++;
  } else if (!c->is_src) {
    if (v->exec)
      rc = jct_exec_on_recv(v->exec, c->id, imm, now);
    else if (c->pending_recv < 64)
      c->pending_imm[c->pending_recv++] = imm;
    else
      fail(v, "connection %u: messages arrived with no run going", c->id);
  } else {
    fail(v, "connection %u: the source received immediate %u", c->id, imm);
  }
  if (rc) fail(v, "connection %u: the executor refused immediate %u (out of order)", c->id, imm);
}

static void on_wc(jct__verbs_t *v, const struct ibv_wc *wc) {
  conn_t *c = conn_of_qp(v, wc->qp_num);
  if (wc->status != IBV_WC_SUCCESS) {
    fail(v, "connection %u: work completion %s (vendor error %u)", c ? c->id : 0,
         ibv_wc_status_str(wc->status), wc->vendor_err);
    return;
  }
  if (!c) return;
  if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    if (post_recv(c)) fail(v, "connection %u: ibv_post_recv: %s", c->id, strerror(errno));
    deliver(v, c, ntohl(wc->imm_data));
  } else if (wc->opcode == IBV_WC_RDMA_WRITE) {
    if (v->outstanding) v->outstanding--;
    uint64_t op_tag = wc->wr_id >> WR_OP_SHIFT;
    if (op_tag && v->exec && jct_exec_on_sent(v->exec, c->id, (uint32_t)(op_tag - 1), jct_now_ns()))
      fail(v, "connection %u: message %u completed out of order", c->id, (uint32_t)(op_tag - 1));
  }
}

static void on_cq(uv_poll_t *h, int status, int events) {
  (void)status, (void)events;
  jct__verbs_t *v = h->data;
  struct ibv_cq *cq;
  void *ctx;
  while (ibv_get_cq_event(v->cc, &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    if (ibv_req_notify_cq(cq, 0)) fail(v, "ibv_req_notify_cq: %s", strerror(errno));
  }
  struct ibv_wc wc[32];
  int n;
  while ((n = ibv_poll_cq(v->cq, 32, wc)) > 0)
    for (int i = 0; i < n; i++)
      on_wc(v, &wc[i]);
  if (n < 0) fail(v, "ibv_poll_cq failed");
}

/* ---- posting ------------------------------------------------------------ */

static int write_imm(jct__verbs_t *v, conn_t *c, void *src, struct ibv_mr *mr, uint64_t bytes,
                     uint32_t imm) {
  uint64_t off = 0;
  do {
    uint64_t len = bytes - off > MAX_WRITE_BYTES ? MAX_WRITE_BYTES : bytes - off;
    bool last = off + len == bytes;
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = (uint32_t)len, .lkey = mr->lkey};
    bool data = c->is_src && imm != JCT_VERBS_CTS_IMM;
    uint64_t op_tag = last && data ? ((uint64_t)imm + 1) << WR_OP_SHIFT : 0;
    struct ibv_send_wr wr = {.wr_id = op_tag | c->id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = htonl(imm),
                             .wr.rdma = {.remote_addr = c->remote_addr, .rkey = c->remote_rkey}};
    struct ibv_send_wr *bad;
    if (ibv_post_send(c->qp, &wr, &bad)) {
      fail(v, "connection %u: ibv_post_send: %s", c->id, strerror(errno));
      return JCT_EIO;
    }
    v->outstanding++;
    off += len;
  } while (off < bytes);
  return 0;
}

static int hook_send(jct_exec_t *e, uint32_t conn, uint32_t op, uint64_t bytes) {
  jct__verbs_t *v = jct_exec_data(e);
  if (v->s->conns[conn].src != v->rank) return 0;
  conn_t *c = &v->conns[conn];
  if (!c->established) {
    fail(v, "connection %u: a send before it was established", conn);
    return JCT_EIO;
  }
  return write_imm(v, c, v->send_buf, v->send_mr, bytes, op);
}

static int hook_cts(jct_exec_t *e, uint32_t conn) {
  jct__verbs_t *v = jct_exec_data(e);
  if (v->s->conns[conn].dst != v->rank) return 0;
  conn_t *c = &v->conns[conn];
  if (!c->established) {
    fail(v, "connection %u: a clear-to-send before it was established", conn);
    return JCT_EIO;
  }
  return write_imm(v, c, v->cts_src, v->cts_src_mr, JCT_VERBS_CTS_BYTES, JCT_VERBS_CTS_IMM);
}

jct_exec_hooks_t jct__verbs_hooks(jct__verbs_t *v) {
  return (jct_exec_hooks_t){.post_cts = hook_cts, .post_send = hook_send, .data = v};
}

void jct__verbs_attach(jct__verbs_t *v, jct_exec_t *e) {
  v->exec = e;
  if (!e) return;
  uint64_t now = jct_now_ns();
  for (uint32_t c = 0; c < v->s->nconns; c++) {
    conn_t *k = &v->conns[c];
    for (; k->pending_cts; k->pending_cts--)
      if (jct_exec_on_cts(e, c, now)) fail(v, "connection %u: a kept CTS was refused", c);
    for (uint32_t i = 0; i < k->pending_recv; i++)
      if (jct_exec_on_recv(e, c, k->pending_imm[i], now))
        fail(v, "connection %u: a kept message was refused", c);
    k->pending_recv = 0;
  }
}

/* ---- life --------------------------------------------------------------- */

static int nonblock(int fd) {
  return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int jct__verbs_alloc(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                     const jct__verbs_opts_t *o) {
  *out = NULL;
  jct__verbs_t *v = calloc(1, sizeof *v);
  if (!v || !(v->conns = calloc(s->nconns ? s->nconns : 1, sizeof *v->conns))) {
    free(v);
    return JCT_ENOMEM;
  }
  v->loop = loop;
  v->s = s;
  v->rank = rank;
  v->o = *o;
  v->o.addrs_be = NULL;
  if (!v->o.slots) v->o.slots = JCT_EXEC_DEFAULT_SLOTS;
  for (uint32_t c = 0; c < s->nconns; c++) {
    v->conns[c].id = c;
    v->conns[c].is_src = s->conns[c].src == rank;
    if (jct__verbs_local(v, c)) v->nlocal++;
  }
  if (o->addrs_be) {
    if (!(v->addrs_be = malloc(s->nranks * sizeof *v->addrs_be))) {
      jct__verbs_free(v);
      return JCT_ENOMEM;
    }
    memcpy(v->addrs_be, o->addrs_be, s->nranks * sizeof *v->addrs_be);
  }
  *out = v;
  return 0;
}

int jct__verbs_open_ctx(jct__verbs_t *v, char *err, size_t errlen) {
  int rc = JCT_EIO;
  if (!(v->pd = ibv_alloc_pd(v->ctx)) || !(v->cc = ibv_create_comp_channel(v->ctx)) ||
      !(v->cq = ibv_create_cq(v->ctx, JCT__VERBS_CQ_DEPTH, v, v->cc, 0)) ||
      ibv_req_notify_cq(v->cq, 0))
    return jct__errf(err, errlen, rc, "rank %u: PD, completion channel or CQ: %s", v->rank,
                     strerror(errno));
  if ((rc = make_buffers(v, err, errlen))) return rc;
  if (nonblock(v->cc->fd) || uv_poll_init(v->loop, &v->cc_poll, v->cc->fd))
    return jct__errf(err, errlen, JCT_EIO, "cannot watch the completion channel");
  v->polls_open++;
  v->cc_polled = true;
  v->cc_poll.data = v;
  uv_poll_start(&v->cc_poll, UV_READABLE, on_cq);
  return 0;
}

const char *jct__verbs_device(const jct__verbs_t *v) {
  return v->ctx ? ibv_get_device_name(v->ctx->device) : "";
}

uint32_t jct__verbs_port(const jct__verbs_t *v) {
  return v->listen ? v->listen->port_num : v->port_num;
}

bool jct__verbs_connected(const jct__verbs_t *v) {
  for (uint32_t c = 0; c < v->s->nconns; c++)
    if (jct__verbs_local(v, c) && !v->conns[c].established) return false;
  return true;
}

uint32_t jct__verbs_outstanding(const jct__verbs_t *v) {
  return v->outstanding;
}

int jct__verbs_failed(const jct__verbs_t *v, char *err, size_t errlen) {
  if (v->failed && err) snprintf(err, errlen, "%s", v->why);
  return v->failed;
}

static void on_closed(uv_handle_t *h) {
  jct__verbs_t *v = h->data;
  if (--v->polls_open == 0) free(v);
}

void jct__verbs_free(jct__verbs_t *v) {
  if (!v) return;
  for (uint32_t c = 0; v->conns && c < v->s->nconns; c++) {
    conn_t *k = &v->conns[c];
    if (k->cm) {
      if (k->established) rdma_disconnect(k->cm);
      if (k->qp_made) rdma_destroy_qp(k->cm);
      rdma_destroy_id(k->cm);
    } else if (k->qp) {
      ibv_destroy_qp(k->qp);
    }
  }
  struct ibv_mr *mrs[] = {v->data_mr, v->send_mr, v->cts_mr, v->cts_src_mr};
  for (size_t i = 0; i < 4; i++)
    if (mrs[i]) ibv_dereg_mr(mrs[i]);
  if (v->cq) ibv_destroy_cq(v->cq);
  if (v->cc) ibv_destroy_comp_channel(v->cc);
  if (v->pd) ibv_dealloc_pd(v->pd);
  if (v->listen) rdma_destroy_id(v->listen);
  if (v->ec) rdma_destroy_event_channel(v->ec);
  if (v->own_ctx && v->ctx) ibv_close_device(v->ctx);
  free(v->data_buf);
  free(v->send_buf);
  free(v->cts_buf);
  free(v->cts_src);
  free(v->conns);
  v->conns = NULL;
  free(v->addrs_be);
  v->addrs_be = NULL;
  if (v->polls_open) {
    if (v->ec_polled) uv_close((uv_handle_t *)&v->ec_poll, on_closed);
    if (v->cc_polled) uv_close((uv_handle_t *)&v->cc_poll, on_closed);
  } else {
    free(v);
  }
}
