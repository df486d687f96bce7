/* The rank agent's NIC (internal to the harness): its rxe device
 * (agent_rxe.c), its shaper to the emulated link rate (agent_shape.c, which
 * says why and how) and its honouring of PFC (agent_pfc.c). */
#ifndef JCT_AGENT_NIC_H
#define JCT_AGENT_NIC_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* Make a tbf of rate_bps (wire bits per second, preamble to gap counted)
 * the root qdisc of ifname, in the calling thread's network namespace;
 * mtu: the interface's IP MTU. paused: 8 kbit/s and a one-frame bucket
 * instead (a PFC XOFF: agent_pfc.c), what is queued stays queued. Replaces
 * what was there. Errors: JCT_EIO
 * (no such interface, the kernel refused: err gives its reason, e.g. no
 * sch_tbf), JCT_EINVAL (rate below 8 kbit/s). */
int jct__agent_shape(const char *ifname, uint64_t rate_bps, uint32_t mtu, bool paused, char *err,
                     size_t errlen);

/* Put fq (net/sched/sch_fq.c, tc-fq(8)) under the shaper's tbf on ifname
 * (its class 1:1, handle JCT__AGENT_SHAPER_FQ_HANDLE), in place of the
 * tbf's one FIFO: a queue per flow, served in turn. rxe gives each QP its
 * own UDP socket and source port (rxe_qp.c), so each QP is a flow, and a
 * responder's ACK leaves ahead of the data another of the VM's QPs has
 * queued, as an RDMA NIC schedules its QPs (and Debian's default
 * fq_codel keeps flows apart); in one FIFO it waited behind up to 64
 * packets of another QP (RXE_INFLIGHT_SKBS_PER_QP_HIGH), longer than the
 * captured job's ACKs waited. rxe's 64 a QP stay under fq's 100 a flow,
 * so nothing is dropped; a pause (jct__agent_shape, paused) changes the
 * tbf in place and keeps it. Call once, after jct__agent_shape made the
 * tbf. Errors: JCT_EIO (no such interface; the kernel refused: err names
 * fq and gives its reason, e.g. no sch_fq), the tbf and its FIFO as they
 * were. */
int jct__agent_shape_per_qp(const char *ifname, char *err, size_t errlen);
/* The shaper's fq's handle, "fc8:" (a host delay's is "fc7:", agent_qdisc.h,
 * so the one is never taken for a stale other). */
#define JCT__AGENT_SHAPER_FQ_HANDLE (0xfc8u << 16)

/* Put an fq with handle at parent (TC_H_ROOT or a class) on ifindex,
 * replacing what is there (RTM_NEWQDISC, tc-fq(8)); label names the
 * request in err. Errors: JCT_EIO with the kernel's reason (no sch_fq:
 * ENOENT). */
int jct__agent_put_fq(int ifindex, uint32_t parent, uint32_t handle, const char *label, char *err,
                      size_t errlen);

/* The agent's NIC honours 802.1Qbb PFC as uroce's ranks do (ranks.h): it
 * listens on ifname for PFC frames (libpcap, "ether proto 0x8808",
 * inbound) and, for quanta q > 0 on priority prio, pauses its shaper for
 * q x 512 bit times at rate_bps (q = 0 resumes at once), on the agent's
 * clock. A virtio NIC ignores pause frames; without this a pause storm on
 * the lab would fill the switch's queues until they drop. Errors: JCT_EIO
 * (libpcap cannot listen: err says why), JCT_ENOMEM. */
typedef struct jct__agent_pfc jct__agent_pfc_t;
struct jct_clock;
int jct__agent_pfc_new(jct__agent_pfc_t **out, uv_loop_t *loop, struct jct_clock *clock,
                       const char *ifname, uint8_t prio, uint64_t rate_bps, uint32_t mtu, char *err,
                       size_t errlen);
/* Time paused so far, ns. */
uint64_t jct__agent_pfc_paused_ns(const jct__agent_pfc_t *p);
void jct__agent_pfc_free(jct__agent_pfc_t *p);

/* Create the soft-RoCE device name on netdev (RDMA_NLDEV_CMD_NEWLINK with
 * link type "rxe"; nothing when it exists). Errors: JCT_EIO with the
 * kernel's reason (ENOENT: rdma_rxe or its crc32 missing). */
int jct__agent_rxe_add(const char *name, const char *netdev, char *err, size_t errlen);
/* Wait (up to 5 s) until name's port 1 is ACTIVE. Errors: JCT_EIO. */
int jct__agent_rxe_wait_active(const char *name, char *err, size_t errlen);

#endif
