/* The verbs transport's connections by hand (verbs.h): the device opened
 * by name, each QP moved RESET -> INIT -> RTR -> RTS with ibv_modify_qp
 * from ends exchanged by the caller (IBA vol. 1 10.3.1, the QP state
 * machine; 11.2.4.2 the attributes each transition requires for RC; the
 * same sequence as perftest's ctx_modify_qp_to_rtr/rts and NCCL's
 * ncclIbRtrQp/RtsQp). On RoCE the address vector is global: its GRH holds
 * the peer's GID, our source GID index and the traffic class (on RoCE v2
 * the IP TOS byte); the kernel resolves the peer's MAC from the GID. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "verbs_int.h"

#define HOP_LIMIT 64
#define MIN_RNR_TIMER 12 /* 0.64 ms (IBA table 45); our receive WRs never run out */

static uint32_t mtu_bytes(enum ibv_mtu m) {
  return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static enum ibv_mtu mtu_enum(uint32_t bytes) {
  enum ibv_mtu m = IBV_MTU_256;
  while (m < IBV_MTU_4096 && (128u << (m + 1)) <= bytes)
    m++;
  return m;
}

/* The device named (or the first), opened; false with err set. */
static int open_device(jct__verbs_t *v, const char *name, char *err, size_t errlen) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    if (list) ibv_free_device_list(list);
    return jct__errf(err, errlen, JCT_EINVAL, "rank %u: no RDMA device here (ibv_get_device_list)",
                     v->rank);
  }
  struct ibv_device *dev = NULL;
  char there[200] = "";
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    const char *dn = ibv_get_device_name(list[i]);
    if (!dev && (!name[0] || !strcmp(dn, name))) dev = list[i];
    if (at < sizeof there)
      at += (size_t)snprintf(there + at, sizeof there - at, "%s%s", i ? ", " : "", dn);
  }
  int rc = 0;
  if (!dev)
    rc = jct__errf(err, errlen, JCT_EINVAL, "device '%s': no such RDMA device here (there: %s)",
                   name, there);
  else if (!(v->ctx = ibv_open_device(dev)))
    rc = jct__errf(err, errlen, JCT_EIO, "ibv_open_device(%s): %s", ibv_get_device_name(dev),
                   strerror(errno));
  v->own_ctx = v->ctx != NULL;
  ibv_free_device_list(list);
  return rc;
}

int jct__verbs_open(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                    const jct__verbs_opts_t *o, const char *device, uint32_t port, char *err,
                    size_t errlen) {
  *out = NULL;
  jct__verbs_t *v;
  int rc = jct__verbs_alloc(&v, loop, s, rank, o);
  if (rc) return rc;
  v->port_num = port ? port : 1;
  if ((rc = open_device(v, device ? device : "", err, errlen))) goto fail;
  struct ibv_device_attr da;
  struct ibv_port_attr pa;
  if (ibv_query_device(v->ctx, &da)) {
    rc = jct__errf(err, errlen, JCT_EIO, "ibv_query_device: %s", strerror(errno));
    goto fail;
  }
  if (v->port_num > da.phys_port_cnt || ibv_query_port(v->ctx, (uint8_t)v->port_num, &pa)) {
    rc = jct__errf(err, errlen, JCT_EINVAL, "port %u: %s has no such port (its ports: 1 to %u)",
                   v->port_num, jct__verbs_device(v), da.phys_port_cnt);
    goto fail;
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    rc = jct__errf(err, errlen, JCT_EINVAL, "port %u: %s port %u is %s, not active", v->port_num,
                   jct__verbs_device(v), v->port_num, ibv_port_state_str(pa.state));
    goto fail;
  }
  if ((rc = jct__verbs_open_ctx(v, err, errlen))) goto fail;
  *out = v;
  return 0;
fail:
  jct__verbs_free(v);
  return rc;
}

int jct__verbs_make_qps(jct__verbs_t *v, uint32_t gid_index, jct__verbs_end_t *ends, char *err,
                        size_t errlen) {
  struct ibv_port_attr pa;
  union ibv_gid gid;
  if (ibv_query_port(v->ctx, (uint8_t)v->port_num, &pa) ||
      ibv_query_gid(v->ctx, (uint8_t)v->port_num, (int)gid_index, &gid))
    return jct__errf(err, errlen, JCT_EIO, "gid_index %u: ibv_query_gid on %s port %u: %s",
                     gid_index, jct__verbs_device(v), v->port_num, strerror(errno));
  for (uint32_t c = 0; c < v->s->nconns; c++) {
    jct__verbs_conn_t *k = &v->conns[c];
    if (!jct__verbs_local(v, c)) continue;
    struct ibv_qp_init_attr a = jct__verbs_qp_attr(v);
    if (!(k->qp = ibv_create_qp(v->pd, &a)))
      return jct__errf(err, errlen, JCT_EIO, "connection %u: ibv_create_qp: %s", c,
                       strerror(errno));
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT,
                               .pkey_index = 0,
                               .port_num = (uint8_t)v->port_num,
                               .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE};
    if (ibv_modify_qp(k->qp, &init,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return jct__errf(err, errlen, JCT_EIO, "connection %u: ibv_modify_qp to INIT: %s", c,
                       strerror(errno));
    if (jct__verbs_post_recvs(v, k)) return jct__errf(err, errlen, JCT_EIO, "%s", v->why);
    jct__verbs_end_t *e = &ends[2 * c + (k->is_src ? 0 : 1)];
    e->qpn = k->qp->qp_num;
    e->addr = k->is_src ? (uintptr_t)v->cts_buf : (uintptr_t)v->data_buf;
    e->rkey = k->is_src ? v->cts_mr->rkey : v->data_mr->rkey;
    e->mtu_bytes = mtu_bytes(pa.active_mtu);
    memcpy(e->gid, gid.raw, sizeof e->gid);
    e->gid_index = gid_index;
    e->announced = 1;
  }
  return 0;
}

static int to_rtr_rts(jct__verbs_t *v, jct__verbs_conn_t *k, const jct__verbs_end_t *me,
                      const jct__verbs_end_t *peer, uint32_t max_mtu, char *err, size_t errlen) {
  uint32_t mtu = me->mtu_bytes < peer->mtu_bytes ? me->mtu_bytes : peer->mtu_bytes;
  if (max_mtu && max_mtu < mtu) mtu = max_mtu;
  struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR,
                            .path_mtu = mtu_enum(mtu),
                            .dest_qp_num = peer->qpn,
                            .rq_psn = peer->psn,
                            .max_dest_rd_atomic = 1,
                            .min_rnr_timer = MIN_RNR_TIMER,
                            .ah_attr = {.is_global = 1,
                                        .port_num = (uint8_t)v->port_num,
                                        .grh = {.sgid_index = (uint8_t)me->gid_index,
                                                .hop_limit = HOP_LIMIT,
                                                .traffic_class = v->o.tos}}};
  memcpy(rtr.ah_attr.grh.dgid.raw, peer->gid, sizeof peer->gid);
  if (ibv_modify_qp(k->qp, &rtr,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    /* The kernel resolves the peer's MAC from its GID through the source
     * GID's netdev (ib_resolve_eth_dmac): no route means a GID index this
     * host cannot use to reach the peer, a setting, not a failure. */
    if (errno == ENETUNREACH || errno == EHOSTUNREACH || errno == EADDRNOTAVAIL)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "gid_index %u: the peer's GID (connection %u) cannot be reached from it: "
                       "%s (choose the GID of the address the ranks reach each other by)",
                       me->gid_index, k->id, strerror(errno));
    return jct__errf(err, errlen, JCT_EIO,
                     "connection %u: ibv_modify_qp to RTR (peer QPN 0x%x, sgid_index %u): %s",
                     k->id, peer->qpn, me->gid_index, strerror(errno));
  }
  struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS,
                            .timeout = jct__verbs_timeout(v, k),
                            .retry_cnt = v->o.retry_cnt,
                            .rnr_retry = 7,
                            .sq_psn = me->psn,
                            .max_rd_atomic = 1};
  if (ibv_modify_qp(k->qp, &rts,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return jct__errf(err, errlen, JCT_EIO, "connection %u: ibv_modify_qp to RTS: %s", k->id,
                     strerror(errno));
  k->remote_addr = peer->addr;
  k->remote_rkey = peer->rkey;
  k->established = true;
  return 0;
}

int jct__verbs_connect_ends(jct__verbs_t *v, const jct__verbs_end_t *all, uint32_t max_mtu_bytes,
                            char *err, size_t errlen) {
  for (uint32_t c = 0; c < v->s->nconns; c++) {
    jct__verbs_conn_t *k = &v->conns[c];
    if (!jct__verbs_local(v, c)) continue;
    const jct__verbs_end_t *me = &all[2 * c + (k->is_src ? 0 : 1)];
    const jct__verbs_end_t *peer = &all[2 * c + (k->is_src ? 1 : 0)];
    int rc = to_rtr_rts(v, k, me, peer, max_mtu_bytes, err, errlen);
    if (rc) return rc;
  }
  return 0;
}
