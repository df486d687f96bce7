/* `jctlab rank --transport verbs`: each task's QPs, connected by hand
 * from ends exchanged over MPI (rank_world.h, verbs.h). As the issue asks
 * and perftest and NCCL do: every task opens its device and port, picks
 * its source GID index, makes one RC QP per end of its connections and
 * says, for each, its QPN, first PSN, GID, MTU and the buffer its peer
 * writes (address, rkey); an MPI_Allgather gives every task every end,
 * and each moves its QPs to RTR and RTS against their peers'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errf.h"
#include "harness/transport/rdma_sysfs.h"
#include "harness/transport/verbs/verbs.h"
#include "jctlab/error.h"
#include "rank_world.h"

/* This task's device, its GID index and QPs, its ends filled. */
static int open_mine(jct__verbs_t **v, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                     const jct__rank_up_t *u, uint64_t seed, jct__verbs_end_t *mine,
                     char *netdev, size_t netdev_len, char *err, size_t errlen) {
  jct__verbs_opts_t vo = {.timeout = u->timeout, .retry_cnt = u->retry_cnt, .tos = u->tos};
  int rc = jct__verbs_open(v, loop, s, rank, &vo, u->rdma.device, u->rdma.port, err, errlen);
  if (rc) return rc;
  const char *dev = jct__verbs_device(*v);
  uint32_t port = jct__verbs_port(*v), gid_index = 0;
  char gid[64];
  if ((rc =
           jct__rdma_pick_gid(NULL, &u->rdma, dev, port, &gid_index, gid, sizeof gid, err, errlen)))
    return rc;
  /* Where this rank's injectors at its host act (agent_host.h); none
   * (empty) is only wrong when there are some (their setup says so). */
  char ignored[8];
  if (jct__rdma_gid_netdev(NULL, dev, port, gid_index, netdev, netdev_len, ignored,
                           sizeof ignored))
    netdev[0] = 0;
  /* The counters named: each one the device has (device, port and GID
   * were chosen above, not bound by an address). */
  jct_rdma_opts_t counters = {.ncounters = u->rdma.ncounters};
  memcpy(counters.counters, u->rdma.counters, sizeof counters.counters);
  if ((rc = jct__rdma_check(NULL, &counters, dev, port, 0, err, errlen))) return rc;
  jct__rank_end_t *psn = calloc(2 * (size_t)s->nconns + 1, sizeof *psn);
  if (!psn) return JCT_ENOMEM;
  jct__rank_own_ends(s, rank, seed, psn);
  for (size_t e = 0; e < 2 * (size_t)s->nconns; e++)
    mine[e].psn = psn[e].psn;
  free(psn);
  return jct__verbs_make_qps(*v, gid_index, mine, err, errlen);
}

int jct__rank_verbs_up(jct__verbs_t **out, uv_loop_t *loop, const jct_schedule_t *s, uint32_t rank,
                       uint32_t size, const jct__rank_up_t *u, uint64_t seed, int rc_in,
                       bool *mpi_failed, char *netdev, size_t netdev_len, char *err,
                       size_t errlen) {
  *out = NULL;
  *mpi_failed = false;
  size_t per = 2 * (size_t)u->nconns;
  jct__verbs_end_t *mine = calloc(per ? per : 1, sizeof *mine);
  jct__verbs_end_t *all = calloc(size * (per ? per : 1), sizeof *all);
  if (!mine || !all) { /* the others wait in the allgather: end the world */
    fprintf(stderr, "jctlab rank: rank %u: out of memory\n", rank);
    jct__world_abort(1);
  }
  jct__verbs_t *v = NULL;
  int rc = rc_in ? rc_in : open_mine(&v, loop, s, rank, u, seed, mine, netdev, netdev_len, err, errlen);
  if (rc) memset(mine, 0, per * sizeof *mine); /* announce nothing */
  if (jct__world_allgather(mine, all, per * sizeof *all)) {
    *mpi_failed = true;
    if (!rc) rc = jct__errf(err, errlen, JCT_EIO, "MPI: the ranks' bootstrap failed");
  }
  for (uint32_t c = 0; !rc && c < s->nconns; c++) /* every end, from its owner */
    for (uint32_t d = 0; !rc && d < 2; d++) {
      uint32_t owner = d ? s->conns[c].dst : s->conns[c].src;
      const jct__verbs_end_t *e = &all[owner * per + 2 * c + d];
      if (!e->announced)
        rc = jct__errf(err, errlen, JCT_EIO, "rank %u announced no QP ends: its setup failed",
                       owner);
      else
        mine[2 * c + d] = *e;
    }
  if (!rc) rc = jct__verbs_connect_ends(v, mine, u->max_mtu_bytes, err, errlen);
  free(mine);
  free(all);
  if (rc) {
    jct__verbs_free(v);
    return rc;
  }
  *out = v;
  return 0;
}

void jct__rank_verbs_counters(const jct__verbs_t *v, const jct_rdma_opts_t *want, bool settle,
                              jct_dev_counters_t *out, char *device, uint32_t *port) {
  /* The counts after a repetition: once ib_core's copy is older than the
   * repetition's end (its lifespan, plus a 10 ms jiffy at HZ 100). Two
   * tasks on one rxe0 read 0 for 3 of 4 repetitions without it. */
  uint32_t ms = jct__rdma_counters_lifespan_ms(NULL, jct__verbs_device(v), jct__verbs_port(v));
  if (settle && ms) {
    struct timespec ts = {(ms + 10) / 1000, (long)((ms + 10) % 1000) * 1000000};
    nanosleep(&ts, NULL);
  }
  jct__rdma_counters(NULL, jct__verbs_device(v), jct__verbs_port(v), want, out);
  snprintf(device, 64, "%s", jct__verbs_device(v));
  *port = jct__verbs_port(v);
}

void jct__rank_verbs_free(jct__verbs_t *v) {
  jct__verbs_free(v);
}
