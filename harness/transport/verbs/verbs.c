/* The verbs transport: rdma_cm connections, RC QPs, WRITE WITH IMMEDIATE
 * messages and clear-to-sends, completions into the executor (verbs.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"
#include "verbs.h"

#define PDATA_MAGIC 0x6a63746cu /* "jctl" */
#define MAX_WRITE_BYTES (1ull << 30)
#define CQ_DEPTH 4096
#define RESOLVE_MS 2000

/* A send's wr_id: its connection in the low 32 bits; on a data message's
 * last work request also its op id + 1 in the high ones, so that its
 * completion can release program-order deps (jct_exec_on_sent). */
#define WR_OP_SHIFT 32

/* What the connect and accept carry (network order is not needed: both
 * ends are this program on the same architecture, but be explicit). */
typedef struct {
  uint32_t magic;
  uint32_t conn;
  uint64_t addr;
  uint32_t rkey;
  uint32_t pad;
} pdata_t;

typedef struct {
  uint32_t id;
  bool is_src; /* this rank sends the data (else it receives) */
  struct rdma_cm_id *cm;
  bool qp_made, established;
  uint64_t remote_addr; /* src: the peer's data buffer; dst: the peer's CTS buffer */
  uint32_t remote_rkey;
  uint32_t pending_cts, pending_recv; /* kept while no executor is attached */
  uint32_t pending_imm[64];
} conn_t;

struct jct_verbs {
  uv_loop_t *loop;
  const jct_schedule_t *s;
  uint32_t rank;
  jct__verbs_opts_t o;
  struct rdma_event_channel *ec;
  struct rdma_cm_id *listen;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_comp_channel *cc;
  struct ibv_cq *cq;
  void *data_buf, *send_buf, *cts_buf, *cts_src;
  size_t data_bytes, send_bytes;
  struct ibv_mr *data_mr, *send_mr, *cts_mr, *cts_src_mr;
  uv_poll_t ec_poll, cc_poll;
  int polls_open;
  conn_t *conns; /* indexed by connection id; only this rank's are used */
  uint32_t nlocal, outstanding;
  jct_exec_t *exec;
  uint32_t *addrs_be; /* copied from the options, or NULL */
  int failed;
  char why[256];
};

static void fail(jct__verbs_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(jct__verbs_t *v, const char *fmt, ...) {
  if (v->failed) return;
  v->failed = JCT_EIO;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->why, sizeof v->why, fmt, ap);
  va_end(ap);
}

/* Rank r's data address with port (host order). */
static void rank_addr(const jct__verbs_t *v, uint32_t r, uint16_t port,
                      struct sockaddr_storage *ss) {
  if (!v->addrs_be) {
    jct_rank_sockaddr(r, AF_INET, port, ss);
    return;
  }
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *in = (struct sockaddr_in *)ss;
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  in->sin_addr.s_addr = v->addrs_be[r];
}

static bool local(const jct__verbs_t *v, uint32_t c) {
  return v->s->conns[c].src == v->rank || v->s->conns[c].dst == v->rank;
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
  return ibv_post_recv(c->cm->qp, &wr, &bad);
}

static int make_qp(jct__verbs_t *v, conn_t *c) {
  uint32_t depth = 2 * v->o.slots + 4;
  struct ibv_qp_init_attr a = {
      .send_cq = v->cq,
      .recv_cq = v->cq,
      .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1}};
  c->cm->context = c;
  if (rdma_create_qp(c->cm, v->pd, &a)) {
    fail(v, "connection %u: rdma_create_qp: %s", c->id, strerror(errno));
    return -1;
  }
  c->qp_made = true;
  for (uint32_t i = 0; i < depth; i++)
    if (post_recv(c)) {
      fail(v, "connection %u: ibv_post_recv: %s", c->id, strerror(errno));
      return -1;
    }
  return 0;
}

static void set_options(jct__verbs_t *v, struct rdma_cm_id *id) {
  uint8_t tos = v->o.tos, timeout = v->o.timeout;
  if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos))
    fail(v, "rdma_set_option(TOS %u): %s", tos, strerror(errno));
  if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof timeout))
    fail(v, "rdma_set_option(ACK timeout %u): %s", timeout, strerror(errno));
}

static struct rdma_conn_param conn_param(const jct__verbs_t *v, const pdata_t *pd) {
  return (struct rdma_conn_param){.private_data = pd,
                                  .private_data_len = sizeof *pd,
                                  .responder_resources = 1,
                                  .initiator_depth = 1,
                                  .retry_count = v->o.retry_cnt,
                                  .rnr_retry_count = 7};
}

/* ---- rdma_cm events ----------------------------------------------------- */

static void on_connect_request(jct__verbs_t *v, struct rdma_cm_event *ev) {
  const pdata_t *in = ev->param.conn.private_data;
  if (!in || ev->param.conn.private_data_len < sizeof *in || in->magic != PDATA_MAGIC ||
      in->conn >= v->s->nconns || v->s->conns[in->conn].dst != v->rank || v->conns[in->conn].cm) {
    rdma_reject(ev->id, NULL, 0);
    rdma_destroy_id(ev->id);
    fail(v, "refused a connection request that is not one of this rank's");
    return;
  }
  conn_t *c = &v->conns[in->conn];
  c->cm = ev->id;
  c->remote_addr = in->addr;
  c->remote_rkey = in->rkey;
  set_options(v, c->cm);
  if (make_qp(v, c)) return;
  pdata_t out = {PDATA_MAGIC, c->id, (uintptr_t)v->data_buf, v->data_mr->rkey, 0};
  struct rdma_conn_param p = conn_param(v, &out);
  if (rdma_accept(c->cm, &p)) fail(v, "connection %u: rdma_accept: %s", c->id, strerror(errno));
}

static void on_event(jct__verbs_t *v, struct rdma_cm_event *ev) {
  conn_t *c = ev->id->context;
  switch (ev->event) {
  case RDMA_CM_EVENT_CONNECT_REQUEST:
    on_connect_request(v, ev);
    break;
  case RDMA_CM_EVENT_ADDR_RESOLVED:
    set_options(v, c->cm);
    if (rdma_resolve_route(c->cm, RESOLVE_MS))
      fail(v, "connection %u: rdma_resolve_route: %s", c->id, strerror(errno));
    break;
  case RDMA_CM_EVENT_ROUTE_RESOLVED: {
    if (make_qp(v, c)) break;
    pdata_t out = {PDATA_MAGIC, c->id, (uintptr_t)v->cts_buf, v->cts_mr->rkey, 0};
    struct rdma_conn_param p = conn_param(v, &out);
    if (rdma_connect(c->cm, &p)) fail(v, "connection %u: rdma_connect: %s", c->id, strerror(errno));
    break;
  }
  case RDMA_CM_EVENT_ESTABLISHED:
    if (c->is_src) {
      const pdata_t *in = ev->param.conn.private_data;
      if (!in || ev->param.conn.private_data_len < sizeof *in || in->magic != PDATA_MAGIC) {
        fail(v, "connection %u: the accept carries no buffer", c->id);
        break;
      }
      c->remote_addr = in->addr;
      c->remote_rkey = in->rkey;
    }
    c->established = true;
    break;
  case RDMA_CM_EVENT_DISCONNECTED:
  case RDMA_CM_EVENT_TIMEWAIT_EXIT:
    if (c) c->established = false;
    break;
  default:
    fail(v, "connection %u: %s (status %d)", c ? c->id : 0, rdma_event_str(ev->event), ev->status);
    break;
  }
}

static void on_cm(uv_poll_t *h, int status, int events) {
  (void)status, (void)events;
  jct__verbs_t *v = h->data;
  struct rdma_cm_event *ev;
  while (rdma_get_cm_event(v->ec, &ev) == 0) {
    on_event(v, ev);
    rdma_ack_cm_event(ev);
  }
}

/* ---- completions ------------------------------------------------------- */

static conn_t *conn_of_qp(jct__verbs_t *v, uint32_t qpn) {
  for (uint32_t c = 0; c < v->s->nconns; c++)
    if (v->conns[c].qp_made && v->conns[c].cm->qp->qp_num == qpn) return &v->conns[c];
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
    if (ibv_post_send(c->cm->qp, &wr, &bad)) {
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

int jct__verbs_new(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                  const jct__verbs_opts_t *o, char *err, size_t errlen) {
  *out = NULL;
  jct__verbs_t *v = calloc(1, sizeof *v);
  if (!v || !(v->conns = calloc(s->nconns, sizeof *v->conns))) {
    free(v);
    return JCT_ENOMEM;
  }
  v->loop = loop;
  v->s = s;
  v->rank = rank;
  v->o = *o;
  if (!v->o.slots) v->o.slots = JCT_EXEC_DEFAULT_SLOTS;
  for (uint32_t c = 0; c < s->nconns; c++) {
    v->conns[c].id = c;
    v->conns[c].is_src = s->conns[c].src == rank;
    if (local(v, c)) v->nlocal++;
  }
  int rc = JCT_EIO;
  if (o->addrs_be) {
    if (!(v->addrs_be = malloc(s->nranks * sizeof *v->addrs_be))) {
      jct__verbs_free(v);
      return JCT_ENOMEM;
    }
    memcpy(v->addrs_be, o->addrs_be, s->nranks * sizeof *v->addrs_be);
  }
  struct sockaddr_storage ss;
  rank_addr(v, rank, o->port, &ss);
  if (!(v->ec = rdma_create_event_channel())) {
    jct__errf(err, errlen, rc, "rdma_create_event_channel: %s (is rdma_ucm loaded?)",
              strerror(errno));
    goto fail;
  }
  if (rdma_create_id(v->ec, &v->listen, NULL, RDMA_PS_TCP) ||
      rdma_bind_addr(v->listen, (struct sockaddr *)&ss) || rdma_listen(v->listen, 64)) {
    jct__errf(err, errlen, rc, "rank %u: cannot listen on its address: %s", rank, strerror(errno));
    goto fail;
  }
  if (!(v->ctx = v->listen->verbs)) {
    jct__errf(err, errlen, rc, "rank %u: no RDMA device on its address", rank);
    goto fail;
  }
  if (!(v->pd = ibv_alloc_pd(v->ctx)) || !(v->cc = ibv_create_comp_channel(v->ctx)) ||
      !(v->cq = ibv_create_cq(v->ctx, CQ_DEPTH, v, v->cc, 0)) || ibv_req_notify_cq(v->cq, 0)) {
    jct__errf(err, errlen, rc, "rank %u: PD, completion channel or CQ: %s", rank, strerror(errno));
    goto fail;
  }
  if ((rc = make_buffers(v, err, errlen))) goto fail;
  rc = JCT_EIO;
  if (nonblock(v->ec->fd) || nonblock(v->cc->fd) || uv_poll_init(loop, &v->ec_poll, v->ec->fd)) {
    jct__errf(err, errlen, rc, "cannot watch the rdma_cm channel");
    goto fail;
  }
  v->polls_open++;
  if (uv_poll_init(loop, &v->cc_poll, v->cc->fd)) {
    jct__errf(err, errlen, rc, "cannot watch the completion channel");
    goto fail;
  }
  v->polls_open++;
  v->ec_poll.data = v->cc_poll.data = v;
  uv_poll_start(&v->ec_poll, UV_READABLE, on_cm);
  uv_poll_start(&v->cc_poll, UV_READABLE, on_cq);
  *out = v;
  return 0;
fail:
  jct__verbs_free(v);
  return rc;
}

int jct__verbs_connect(jct__verbs_t *v) {
  for (uint32_t c = 0; c < v->s->nconns; c++) {
    conn_t *k = &v->conns[c];
    if (!k->is_src) continue;
    struct sockaddr_storage src, dst;
    rank_addr(v, v->rank, 0, &src);
    rank_addr(v, v->s->conns[c].dst, v->o.port, &dst);
    if (rdma_create_id(v->ec, &k->cm, k, RDMA_PS_TCP) ||
        rdma_resolve_addr(k->cm, (struct sockaddr *)&src, (struct sockaddr *)&dst, RESOLVE_MS)) {
      fail(v, "connection %u: rdma_resolve_addr: %s", c, strerror(errno));
      return JCT_EIO;
    }
  }
  return 0;
}

bool jct__verbs_connected(const jct__verbs_t *v) {
  for (uint32_t c = 0; c < v->s->nconns; c++)
    if (local(v, c) && !v->conns[c].established) return false;
  return true;
}

const char *jct__verbs_device(const jct__verbs_t *v) {
  return v->ctx ? ibv_get_device_name(v->ctx->device) : "";
}

uint32_t jct__verbs_port(const jct__verbs_t *v) {
  return v->listen ? v->listen->port_num : 0;
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
    if (!k->cm) continue;
    if (k->established) rdma_disconnect(k->cm);
    if (k->qp_made) rdma_destroy_qp(k->cm);
    rdma_destroy_id(k->cm);
  }
  struct ibv_mr *mrs[] = {v->data_mr, v->send_mr, v->cts_mr, v->cts_src_mr};
  for (size_t i = 0; i < 4; i++)
    if (mrs[i]) ibv_dereg_mr(mrs[i]);
  if (v->cq) ibv_destroy_cq(v->cq);
  if (v->cc) ibv_destroy_comp_channel(v->cc);
  if (v->pd) ibv_dealloc_pd(v->pd);
  if (v->listen) rdma_destroy_id(v->listen);
  if (v->ec) rdma_destroy_event_channel(v->ec);
  free(v->data_buf);
  free(v->send_buf);
  free(v->cts_buf);
  free(v->cts_src);
  free(v->conns);
  v->conns = NULL;
  free(v->addrs_be);
  v->addrs_be = NULL;
  if (v->polls_open) {
    int open = v->polls_open;
    if (open >= 1) uv_close((uv_handle_t *)&v->ec_poll, on_closed);
    if (open >= 2) uv_close((uv_handle_t *)&v->cc_poll, on_closed);
  } else {
    free(v);
  }
}
