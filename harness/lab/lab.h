/* The soft-RoCE lab (internal to the harness): one small qemu VM per rank,
 * booting Debian's own kernel (which has rdma_rxe) with the host's root
 * filesystem shared read-only over 9p under a tmpfs overlay, so that the
 * same jctlab binary runs inside as the rank's agent (DESIGN.md, decision
 * 7; scripts/lab-kernel builds the kernel, uncompressed too for qemu's
 * PVH entry, and the initramfs, scripts/lab-init is the VM's /init).
 *
 * VM i, for rank i:
 *   - its NIC (virtio-net, MAC jct_rank_mac(i), topo.h) is backed by a TAP
 *     "jl<i>" that jct__lab_up() creates in the calling thread's network
 *     namespace (the switch namespace: jct_ns_isolate(), topo.h) and hands
 *     to qemu as an open fd; the switch opens the TAP as its port i
 *     (fabric.h, port_ifnames), so every frame the VM sends or receives
 *     crosses jctlab's switch and its injectors;
 *   - its control channel is a virtio-serial port named "jctlab.ctl" whose
 *     host end is one end of a socketpair (jct__lab_control_fd());
 *   - qemu's human monitor is another socketpair, for the NIC's carrier
 *     (jct__lab_set_link()) and for stopping the VM (jct__lab_freeze());
 *   - its console (ttyS0) goes to a file in the lab's temporary directory,
 *     for error messages (jct__lab_console_tail()).
 * qemu runs with KVM where the cache's probe found it boots this kernel
 * (scripts/lab-kernel writes "kvm" or "tcg" to CACHE/accel), TCG otherwise;
 * JCT_LAB_ACCEL overrides. Each qemu dies with jctlab (PR_SET_PDEATHSIG),
 * and the TAPs with its namespace, so nothing outlives a crash.
 */
#ifndef JCT_LAB_H
#define JCT_LAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JCT_LAB_CACHE_DEFAULT "/var/cache/jctlab/lab"

typedef struct {
  uint32_t nranks;
  uint32_t mem_mib;       /* per VM; 0: 512 */
  uint32_t mtu;           /* the NICs' IP MTU; 0: 9000 (rxe's active MTU is then 4096) */
  const char *cache_dir;  /* NULL: $JCT_LAB_CACHE, else JCT_LAB_CACHE_DEFAULT */
  const char *agent_path; /* NULL: this program (/proc/self/exe) */
  /* Non-NULL: the VMs' agents run this program of the host's root in
   * their place, once their VM is a rank's host (jctlab.exec=PATH on the
   * kernel command line; cli/agent_exec.h): its output and then the line
   * "jctlab-exec: exit N" come on the control channel. One VM is enough. */
  const char *exec_path;
  /* The VMs' NICs on one L2 segment by themselves: their TAPs on a bridge
   * "jlbr" in the same namespace (gone with it), where no switch is to
   * open them (`jctlab lab-exec --vms 2`: rank 0's host and rank 1's). */
  bool bridge;
} jct__lab_opts_t;

typedef struct jct_lab jct__lab_t;

/* 1 when the lab can start here (qemu and the cache's kernel are there);
 * 0 with the reason in why ("no qemu-system-x86_64: run scripts/setup-deps
 * --with-lab", an installed jctlab naming its installed script). */
int jct__lab_available(char *why, size_t len);

/* Create the TAPs and start one VM per rank (at least 2; 1 with exec_path); returns once all are started,
 * before they boot (the agents' hellos say when they are up). Errors:
 * JCT_EINVAL (the host's own namespace, bad options), JCT_EIO (no cache,
 * no qemu, a TAP or a process that cannot be made: err says which). On
 * error nothing is left behind. */
int jct__lab_up(jct__lab_t **out, const jct__lab_opts_t *o, char *err, size_t errlen);

const char *jct__lab_port_ifname(const jct__lab_t *l, uint32_t i); /* "jl<i>" */
int jct__lab_control_fd(const jct__lab_t *l, uint32_t i);          /* nonblocking */
const char *jct__lab_accel(const jct__lab_t *l);                   /* "kvm" or "tcg" */
/* The last lines of VM i's console (at most len - 1 bytes). */
void jct__lab_console_tail(const jct__lab_t *l, uint32_t i, char *buf, size_t len);
/* VM i's qemu is still running. */
bool jct__lab_alive(jct__lab_t *l, uint32_t i);

/* VM i's NIC loses (up false) or regains its carrier, as a pulled and
 * replugged cable: qemu's `set_link n0 off|on` through its human monitor
 * (the guest's virtio-net sees link down, VIRTIO_NET_S_LINK_UP cleared;
 * what either side sends meanwhile is lost). The interface stays up
 * administratively, with its addresses and routes. Returns 0, JCT_EINVAL
 * (no such VM) or JCT_EIO (the monitor took no command). */
int jct__lab_set_link(jct__lab_t *l, uint32_t i, bool up);

/* VM i stops (frozen true) or goes on, as a host that is not scheduled:
 * qemu's `stop` and `cont` through its human monitor. Stopped, its vCPU
 * runs nothing and qemu's virtual clock (QEMU_CLOCK_VIRTUAL, which the
 * guest's clock sources and timer interrupts count) stands still, so on
 * `cont` the guest goes on as if no time had passed: its timers (rxe's
 * retransmit timer) do not see the gap and its clock (CLOCK_MONOTONIC,
 * the agent's op times) lost it (agents.h, jct__agents_frozen). Its NIC's
 * backend stays open: frames to it queue in the TAP, and what it had
 * handed the TAP before still leaves. Returns 0, JCT_EINVAL (no such VM)
 * or JCT_EIO (the monitor took no command). */
int jct__lab_freeze(jct__lab_t *l, uint32_t i, bool frozen);

/* Stop every VM (SIGTERM, then SIGKILL after 2 s), reap them, close the
 * TAPs and channels, remove the temporary directory (kept when
 * JCT_LAB_KEEP is set, and its path printed). NULL is fine. */
void jct__lab_down(jct__lab_t *l);

#endif
