/* The agent's NIC sends at the emulated link rate: a token bucket (tbf)
 * as the root qdisc of its interface, set over rtnetlink.
 *
 * A rank on uroce paces its own datagrams at the link rate, as a NIC
 * serializes at line rate (ranks.h); a soft-RoCE VM's virtio NIC has no
 * line rate, so rxe would send as fast as the host copies frames and the
 * switch's queues would overflow. A tbf at rate R with the switch's wire
 * overhead (preamble, FCS, gap: 24 bytes per frame, on top of the Ethernet
 * header the qdisc already counts) makes the VM's NIC a link of rate R.
 * rxe keeps at most 64 packets per QP in the kernel's transmit path
 * (RXE_INFLIGHT_SKBS_PER_QP_HIGH) and waits for them to drain, so a queue
 * limit of a few MiB never drops: the bucket back-pressures rxe as a real
 * NIC's ring would. (tbf: net/sched/sch_tbf.c; the attributes are those
 * `tc qdisc replace dev eth0 root tbf rate R burst B limit L` sends.)
 * Under the tbf, fq keeps the QPs apart (jct__agent_shape_per_qp).
 */
#include <libmnl/libmnl.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "agent_nic.h"
#include "common/errf.h"
#include "jctlab/error.h"
#include "harness/base/netlink.h"

#define WIRE_OVERHEAD_BYTES 24       /* preamble 8, FCS 4, inter-frame gap 12 */
#define QUEUE_LIMIT_BYTES (8u << 20) /* far above rxe's 64 packets per QP */
#define PAUSED_BPS 8000u             /* tbf's slowest useful rate */

int jct__agent_shape(const char *ifname, uint64_t rate_bps, uint32_t mtu, bool paused, char *err,
                     size_t errlen) {
  unsigned ifindex = if_nametoindex(ifname);
  if (!ifindex) return jct__errf(err, errlen, JCT_EIO, "%s: no such interface", ifname);
  if (rate_bps < 8000)
    return jct__errf(err, errlen, JCT_EINVAL, "rate %llu bit/s: too low",
                     (unsigned long long)rate_bps);
  jct__nl_t *nl;
  int rc = jct__nl_open(&nl, err, errlen);
  if (rc) return rc;
  struct nlmsghdr *nlh;
  rc = jct__nl_begin(nl, &nlh, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, err, errlen,
                     "%s: tbf rate %llu bit/s as the root qdisc", ifname,
                     (unsigned long long)rate_bps);
  if (rc < 0) {
    jct__nl_close(nl);
    return rc;
  }
  struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
  tcm->tcm_family = AF_UNSPEC;
  tcm->tcm_ifindex = (int)ifindex;
  tcm->tcm_handle = 1u << 16; /* 1: */
  tcm->tcm_parent = TC_H_ROOT;
  mnl_attr_put_strz(nlh, TCA_KIND, "tbf");
  uint64_t rate_Bps = rate_bps / 8;
  struct tc_tbf_qopt q;
  memset(&q, 0, sizeof q);
  q.rate.rate = rate_Bps >= UINT32_MAX ? UINT32_MAX : (uint32_t)rate_Bps;
  q.rate.linklayer = TC_LINKLAYER_ETHERNET;
  q.rate.overhead = WIRE_OVERHEAD_BYTES;
  q.limit = QUEUE_LIMIT_BYTES;
  /* Two frames may leave back to back: the bucket holds one MTU-sized frame
   * and the next, so a full RoCE packet never waits for tokens it can't get. */
  uint32_t burst = 2 * (mtu + 14 + WIRE_OVERHEAD_BYTES);
  if (paused) {
    /* Paused (PFC XOFF): a trickle, and a bucket of one frame (tbf drops a
     * frame larger than its bucket), so at most the frame on the wire leaves. */
    rate_Bps = PAUSED_BPS / 8;
    q.rate.rate = (uint32_t)rate_Bps;
    burst = mtu + 14 + WIRE_OVERHEAD_BYTES;
  }
  struct nlattr *opts = mnl_attr_nest_start(nlh, TCA_OPTIONS);
  mnl_attr_put(nlh, TCA_TBF_PARMS, sizeof q, &q);
  if (rate_Bps >= UINT32_MAX) mnl_attr_put_u64(nlh, TCA_TBF_RATE64, rate_Bps);
  mnl_attr_put_u32(nlh, TCA_TBF_BURST, burst);
  mnl_attr_nest_end(nlh, opts);
  rc = jct__nl_flush(nl, err, errlen);
  jct__nl_close(nl);
  return rc;
}

int jct__agent_shape_per_qp(const char *ifname, char *err, size_t errlen) {
  unsigned ifindex = if_nametoindex(ifname);
  if (!ifindex) return jct__errf(err, errlen, JCT_EIO, "%s: no such interface", ifname);
  char label[IF_NAMESIZE + 64];
  snprintf(label, sizeof label, "%s: fq under the shaper's tbf (a queue per QP)", ifname);
  return jct__agent_put_fq((int)ifindex, TC_H_MAKE(1u << 16, 1), JCT__AGENT_SHAPER_FQ_HANDLE, label,
                           err, errlen);
}

int jct__agent_put_fq(int ifindex, uint32_t parent, uint32_t handle, const char *label, char *err,
                      size_t errlen) {
  jct__nl_t *nl;
  int rc = jct__nl_open(&nl, err, errlen);
  if (rc) return rc;
  struct nlmsghdr *nlh;
  rc =
      jct__nl_begin(nl, &nlh, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, err, errlen, "%s", label);
  if (rc == 0) {
    struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
    tcm->tcm_family = AF_UNSPEC;
    tcm->tcm_ifindex = ifindex;
    tcm->tcm_parent = parent;
    tcm->tcm_handle = handle;
    mnl_attr_put_strz(nlh, TCA_KIND, "fq");
    rc = jct__nl_flush(nl, err, errlen);
  }
  jct__nl_close(nl);
  return rc;
}
