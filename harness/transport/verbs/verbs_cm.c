/* The verbs transport's connections over rdma_cm (verbs.h): every rank
 * listens on its address, the source of each connection connects to its
 * destination, the connect's and accept's private data carry the buffers. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"
#include "verbs_int.h"

#define PDATA_MAGIC 0x6a63746cu /* "jctl" */
#define RESOLVE_MS 2000

typedef jct__verbs_conn_t conn_t;
#define fail jct__verbs_fail

/* What the connect and accept carry (network order is not needed: both
 * ends are this program on the same architecture, but be explicit). */
typedef struct {
  uint32_t magic;
  uint32_t conn;
  uint64_t addr;
  uint32_t rkey;
  uint32_t pad;
} pdata_t;

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

static int make_qp(jct__verbs_t *v, conn_t *c) {
  struct ibv_qp_init_attr a = jct__verbs_qp_attr(v);
  c->cm->context = c;
  if (rdma_create_qp(c->cm, v->pd, &a)) {
    fail(v, "connection %u: rdma_create_qp: %s", c->id, strerror(errno));
    return -1;
  }
  c->qp = c->cm->qp;
  return jct__verbs_post_recvs(v, c);
}

static void set_options(jct__verbs_t *v, const conn_t *c) {
  struct rdma_cm_id *id = c->cm;
  uint8_t tos = v->o.tos, timeout = jct__verbs_timeout(v, c);
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
  set_options(v, c);
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
    set_options(v, c);
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

static int nonblock(int fd) {
  return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int jct__verbs_new(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                   const jct__verbs_opts_t *o, char *err, size_t errlen) {
  jct__verbs_t *v;
  int rc = jct__verbs_alloc(&v, loop, s, rank, o);
  if (rc) return rc;
  rc = JCT_EIO;
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
  if ((rc = jct__verbs_open_ctx(v, err, errlen))) goto fail;
  rc = JCT_EIO;
  if (nonblock(v->ec->fd) || uv_poll_init(loop, &v->ec_poll, v->ec->fd)) {
    jct__errf(err, errlen, rc, "cannot watch the rdma_cm channel");
    goto fail;
  }
  v->polls_open++;
  v->ec_polled = true;
  v->ec_poll.data = v;
  uv_poll_start(&v->ec_poll, UV_READABLE, on_cm);
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
