/* The soft-RoCE lab: TAPs, control channels and one qemu per rank (lab.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h> /* before linux/if.h, which then leaves its names alone */
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "common/errf.h"
#include "harness/base/layout.h"
#include "harness/base/netlink.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"
#include "lab.h"
#include "harness/fabric/topo_link.h"

#define QEMU "qemu-system-x86_64"
#define TERM_GRACE_MS 2000
#define MAX_ARGS 64
#define VM_NICE 10

typedef struct {
  pid_t pid;
  int status; /* once reaped */
  bool reaped;
  int tap_fd, ctl_fd; /* ctl_fd: the host's end */
  int mon_fd;         /* the host's end of qemu's human monitor (HMP) */
  int console_fd;     /* a memfd: the VM's ttyS0 and qemu's own messages */
  char ifname[IFNAMSIZ];
} vm_t;

struct jct_lab {
  uint32_t n;
  char accel[8];
  vm_t vm[];
};

static const char *cache_dir(const jct__lab_opts_t *o) {
  if (o && o->cache_dir) return o->cache_dir;
  const char *env = getenv("JCT_LAB_CACHE");
  return env && *env ? env : JCT_LAB_CACHE_DEFAULT;
}

/* The path of name on PATH, in buf; false when absent. */
static bool on_path(const char *name, char *buf, size_t len) {
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    const char *end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    snprintf(buf, len, "%.*s/%s", (int)n, path, name);
    if (access(buf, X_OK) == 0) return true;
    path += n + (end ? 1 : 0);
  }
  return false;
}

static bool cache_has(const char *dir, const char *file) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return access(p, R_OK) == 0;
}

int jct__lab_available(char *why, size_t len) {
  char q[PATH_MAX], deps[PATH_MAX];
  const char *dir = cache_dir(NULL);
  if (!on_path(QEMU, q, sizeof q)) {
    snprintf(why, len, "no %s: run %s --with-lab", QEMU,
             jct__script_name("setup-deps", deps, sizeof deps));
    return 0;
  }
  if (!cache_has(dir, "vmlinuz") || !cache_has(dir, "initrd.img")) {
    snprintf(why, len, "no lab kernel in %s: run %s --with-lab", dir,
             jct__script_name("setup-deps", deps, sizeof deps));
    return 0;
  }
  return 1;
}

/* "kvm" where the cache's probe booted the kernel with it, else "tcg". */
static void pick_accel(const char *dir, char *out, size_t len) {
  const char *env = getenv("JCT_LAB_ACCEL");
  if (env && (!strcmp(env, "kvm") || !strcmp(env, "tcg"))) {
    snprintf(out, len, "%s", env);
    return;
  }
  char p[PATH_MAX], word[8] = "";
  snprintf(p, sizeof p, "%s/accel", dir);
  FILE *f = fopen(p, "r");
  if (f) {
    if (!fgets(word, sizeof word, f)) word[0] = '\0';
    fclose(f);
  }
  snprintf(out, len, "%s",
           strncmp(word, "kvm", 3) == 0 && access("/dev/kvm", W_OK) == 0 ? "kvm" : "tcg");
}

static int make_tap(vm_t *v, uint32_t i, uint32_t mtu, char *err, size_t errlen) {
  snprintf(v->ifname, sizeof v->ifname, "jl%u", i);
  v->tap_fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (v->tap_fd < 0) return jct__errf(err, errlen, JCT_EIO, "/dev/net/tun: %s", strerror(errno));
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", v->ifname);
  if (ioctl(v->tap_fd, TUNSETIFF, &ifr) < 0)
    return jct__errf(err, errlen, JCT_EIO, "cannot create TAP %s: %s", v->ifname, strerror(errno));
  return jct__topo_port_iface(v->ifname, mtu, err, errlen);
}

/* The TAPs on one bridge, BRIDGE, up (RTM_NEWLINK: a "bridge" link, then
 * each TAP's IFLA_MASTER, as `ip link add jlbr type bridge; ip link set jlX
 * master jlbr` do). STP stays off, so the ports forward at once. */
#define BRIDGE "jlbr"
static int bridge_taps(const jct__lab_t *l, char *err, size_t errlen) {
  jct__nl_t *nl;
  int rc = jct__nl_open(&nl, err, errlen);
  if (rc) return rc;
  struct nlmsghdr *nlh;
  if (!(rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                           "add bridge %s", BRIDGE))) {
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, BRIDGE);
    struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
    mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
    mnl_attr_nest_end(nlh, info);
    rc = jct__nl_flush(nl, err, errlen);
  }
  int br = rc ? 0 : (int)if_nametoindex(BRIDGE);
  if (!rc && !br) rc = jct__errf(err, errlen, JCT_EIO, "bridge %s: made, then not found", BRIDGE);
  for (uint32_t i = 0; !rc && i <= l->n; i++) { /* each TAP its port, then the bridge up */
    const char *name = i < l->n ? l->vm[i].ifname : BRIDGE;
    if ((rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "%s %s", name,
                            i < l->n ? "master " BRIDGE : "up")))
      break;
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = i < l->n ? (int)if_nametoindex(name) : br;
    if (i < l->n) {
      mnl_attr_put_u32(nlh, IFLA_MASTER, (uint32_t)br);
    } else {
      ifi->ifi_flags = IFF_UP;
      ifi->ifi_change = IFF_UP;
    }
    rc = jct__nl_flush(nl, err, errlen);
  }
  jct__nl_close(nl);
  return rc;
}

/* The child: the TAP as fd 3, the control channel as fd 4, the console as
 * fd 5 (write-only, for qemu's fd set), the monitor as fd 6, qemu's own
 * messages to the console's memfd; dies with jctlab. Never returns. */
static void exec_qemu(const vm_t *v, int guest_ctl, int mon, char *const argv[]) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setpgid(0, 0); /* a terminal's ^C goes to jctlab, which stops the VMs itself */
  /* Under TCG a VM takes a whole core; the switch's loop must still keep
   * its timers, or the run is invalid (replay.h): the VMs yield to it. */
  setpriority(PRIO_PROCESS, 0, VM_NICE);
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", v->console_fd);
  int null = open("/dev/null", O_RDONLY), out = open(self, O_WRONLY | O_APPEND);
  if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
      dup2(v->tap_fd, 3) < 0 || dup2(guest_ctl, 4) < 0 || dup2(out, 5) < 0 || dup2(mon, 6) < 0)
    _exit(127);
  for (int fd = 7; fd < 1024; fd++)
    close(fd);
  execvp(QEMU, argv);
  fprintf(stderr, "jctlab lab: cannot run %s: %s\n", QEMU, strerror(errno));
  _exit(127);
}

/* The kernel qemu boots, in buf: the cache's vmlinux (scripts/lab-kernel:
 * the same kernel uncompressed, an ELF that qemu enters at its PVH entry,
 * without SeaBIOS and the bzImage's decompressor: under TCG here, boot to
 * the initramfs's probe in 6.0 s of qemu's CPU against 7.2 (medians of 3),
 * 8.5 s of wall time against 10.4 at load 4) when it is there and not
 * older than vmlinuz (a cache rebuilt by a lab-kernel that writes no
 * vmlinux), else vmlinuz. */
static void kernel_path(const char *dir, char *buf, size_t len) {
  char z[PATH_MAX];
  struct stat elf, bz;
  snprintf(z, sizeof z, "%s/vmlinuz", dir);
  snprintf(buf, len, "%s/vmlinux", dir);
  if (stat(buf, &elf) || stat(z, &bz) || access(buf, R_OK) ||
      (elf.st_mtim.tv_sec < bz.st_mtim.tv_sec ||
       (elf.st_mtim.tv_sec == bz.st_mtim.tv_sec && elf.st_mtim.tv_nsec < bz.st_mtim.tv_nsec)))
    snprintf(buf, len, "%s", z);
}

static int start_vm(jct__lab_t *l, uint32_t i, const jct__lab_opts_t *o, const char *agent,
                    char *err, size_t errlen) {
  vm_t *v = &l->vm[i];
  const char *dir = cache_dir(o);
  int sv[2], mv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return jct__errf(err, errlen, JCT_EIO, "socketpair: %s", strerror(errno));
  v->ctl_fd = sv[0];
  fcntl(v->ctl_fd, F_SETFL, fcntl(v->ctl_fd, F_GETFL) | O_NONBLOCK);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, mv) < 0) {
    close(sv[1]);
    return jct__errf(err, errlen, JCT_EIO, "socketpair: %s", strerror(errno));
  }
  v->mon_fd = mv[0];
  fcntl(v->mon_fd, F_SETFL, fcntl(v->mon_fd, F_GETFL) | O_NONBLOCK);
  uint8_t mac[6];
  jct_rank_mac(i, mac);
  char kernel[PATH_MAX], initrd[PATH_MAX], append[2 * PATH_MAX + 256], mem[16], nic[96];
  kernel_path(dir, kernel, sizeof kernel);
  snprintf(initrd, sizeof initrd, "%s/initrd.img", dir);
  /* no_timer_check: the kernel's check that the IO-APIC's timer interrupt
   * arrives (check_timer) gives up under TCG on a loaded machine and the
   * VM panics at boot (seen: "clear_IO_APIC_pin ... apic_intr_mode_init"
   * at 0.016 s, both VMs of a lab_replay run at load 6 on 2 cores);
   * kernel-parameters.txt: "Disables the code which tests for broken
   * timer IRQ sources", as virtual machines' images boot.
   * cryptomgr.notests: the crypto manager's self-tests of every algorithm
   * it registers, 0.3 to 0.7 s of a boot's 3.6 to 4.3 s of CPU under TCG
   * here (qemu's user+sys time to the initramfs's probe); Debian's kernel
   * is tested where it is built. */
  snprintf(append, sizeof append,
           "console=ttyS0 quiet panic=-1 no_timer_check cryptomgr.notests jctlab.agent=%s "
           "jctlab.rank=%u jctlab.nranks=%u jctlab.mtu=%u%s%s",
           agent, i, l->n < 2 ? 2 : l->n, o->mtu ? o->mtu : JCT_TOPO_MTU_DEFAULT,
           o->exec_path ? " jctlab.exec=" : "", o->exec_path ? o->exec_path : "");
  /* The console in memory, never a file: nothing to remove, even when
   * jctlab is killed. */
  char name[32];
  snprintf(name, sizeof name, "jctlab-console%u", i);
  if ((v->console_fd = memfd_create(name, MFD_CLOEXEC)) < 0) {
    close(sv[1]);
    return jct__errf(err, errlen, JCT_EIO, "memfd_create: %s", strerror(errno));
  }
  snprintf(mem, sizeof mem, "%u", o->mem_mib ? o->mem_mib : 512);
  snprintf(nic, sizeof nic, "virtio-net-pci,netdev=n0,mac=%02x:%02x:%02x:%02x:%02x:%02x", mac[0],
           mac[1], mac[2], mac[3], mac[4], mac[5]);
  bool kvm = strcmp(l->accel, "kvm") == 0;
  char *argv[MAX_ARGS];
  int n = 0;
  char *fixed[] = {QEMU,
                   "-accel",
                   l->accel,
                   "-m",
                   mem,
                   "-smp",
                   "1",
                   "-nodefaults",
                   "-no-user-config",
                   "-nographic",
                   "-no-reboot",
                   "-monitor",
                   "none",
                   "-chardev",
                   "socket,id=m,fd=6",
                   "-mon",
                   "chardev=m,mode=readline",
                   "-kernel",
                   kernel,
                   "-initrd",
                   initrd,
                   "-append",
                   append,
                   "-add-fd",
                   "fd=5,set=1",
                   "-serial",
                   "file:/dev/fdset/1",
                   "-fsdev",
                   "local,id=r,path=/,security_model=none,readonly=on,multidevs=remap",
                   "-device",
                   "virtio-9p-pci,fsdev=r,mount_tag=hostroot",
                   "-netdev",
                   "tap,id=n0,fd=3",
                   "-device",
                   nic,
                   "-chardev",
                   "socket,id=c,fd=4",
                   "-device",
                   "virtio-serial-pci",
                   "-device",
                   "virtserialport,chardev=c,name=jctlab.ctl",
                   NULL};
  for (int k = 0; fixed[k]; k++)
    argv[n++] = fixed[k];
  if (kvm) argv[n++] = "-cpu", argv[n++] = "host";
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[1]);
    close(mv[1]);
    return jct__errf(err, errlen, JCT_EIO, "fork: %s", strerror(errno));
  }
  if (pid == 0) exec_qemu(v, sv[1], mv[1], argv);
  close(sv[1]);
  close(mv[1]);
  v->pid = pid;
  return 0;
}

int jct__lab_up(jct__lab_t **out, const jct__lab_opts_t *o, char *err, size_t errlen) {
  *out = NULL;
  char why[256];
  if (!jct__lab_available(why, sizeof why))
    return jct__errf(err, errlen, JCT_EIO, "the lab: %s", why);
  if (o->nranks < (o->exec_path ? 1u : 2u))
    return jct__errf(err, errlen, JCT_EINVAL, "the lab needs 2 ranks or more");
  jct__lab_t *l = calloc(1, sizeof *l + o->nranks * sizeof(vm_t));
  if (!l) return JCT_ENOMEM;
  l->n = o->nranks;
  for (uint32_t i = 0; i < l->n; i++)
    l->vm[i].tap_fd = l->vm[i].ctl_fd = l->vm[i].console_fd = l->vm[i].mon_fd = -1;
  pick_accel(cache_dir(o), l->accel, sizeof l->accel);
  char agent[PATH_MAX];
  if (o->agent_path)
    snprintf(agent, sizeof agent, "%s", o->agent_path);
  else if (!realpath("/proc/self/exe", agent))
    snprintf(agent, sizeof agent, "/proc/self/exe");
  int rc = 0;
  for (uint32_t i = 0; i < l->n && !rc; i++)
    rc = make_tap(&l->vm[i], i, o->mtu ? o->mtu : JCT_TOPO_MTU_DEFAULT, err, errlen);
  if (!rc && o->bridge) rc = bridge_taps(l, err, errlen);
  for (uint32_t i = 0; i < l->n && !rc; i++)
    rc = start_vm(l, i, o, agent, err, errlen);
  if (rc) {
    jct__lab_down(l);
    return rc;
  }
  *out = l;
  return 0;
}

const char *jct__lab_port_ifname(const jct__lab_t *l, uint32_t i) {
  return i < l->n ? l->vm[i].ifname : NULL;
}

/* One command line to VM i's human monitor, after draining what it said
 * since the last (its banner, prompts, replies). */
static int monitor(jct__lab_t *l, uint32_t i, const char *cmd) {
  if (i >= l->n || l->vm[i].mon_fd < 0) return JCT_EINVAL;
  char drain[4096];
  while (read(l->vm[i].mon_fd, drain, sizeof drain) > 0)
    ;
  return write(l->vm[i].mon_fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) ? 0 : JCT_EIO;
}

int jct__lab_set_link(jct__lab_t *l, uint32_t i, bool up) {
  return monitor(l, i, up ? "set_link n0 on\n" : "set_link n0 off\n");
}

int jct__lab_freeze(jct__lab_t *l, uint32_t i, bool frozen) {
  return monitor(l, i, frozen ? "stop\n" : "cont\n");
}

int jct__lab_control_fd(const jct__lab_t *l, uint32_t i) {
  return i < l->n ? l->vm[i].ctl_fd : -1;
}

const char *jct__lab_accel(const jct__lab_t *l) {
  return l->accel;
}

void jct__lab_console_tail(const jct__lab_t *l, uint32_t i, char *buf, size_t len) {
  if (!len) return;
  buf[0] = '\0';
  if (i >= l->n || l->vm[i].console_fd < 0) return;
  struct stat st;
  if (fstat(l->vm[i].console_fd, &st) || st.st_size == 0) {
    snprintf(buf, len, "(no console output)");
    return;
  }
  off_t from = st.st_size > (off_t)len - 1 ? st.st_size - ((off_t)len - 1) : 0;
  ssize_t got = pread(l->vm[i].console_fd, buf, len - 1, from);
  buf[got > 0 ? got : 0] = '\0';
  /* Start at a whole line. */
  char *nl = from ? strchr(buf, '\n') : NULL;
  if (nl) memmove(buf, nl + 1, strlen(nl + 1) + 1);
}

static bool reap(vm_t *v, int flags) {
  if (v->reaped || v->pid <= 0) return true;
  pid_t r = waitpid(v->pid, &v->status, flags);
  if (r == v->pid || (r < 0 && errno == ECHILD)) v->reaped = true;
  return v->reaped;
}

bool jct__lab_alive(jct__lab_t *l, uint32_t i) {
  return i < l->n && l->vm[i].pid > 0 && !reap(&l->vm[i], WNOHANG);
}

/* JCT_LAB_KEEP: the consoles into files, for reading after the run. */
static void keep_consoles(const jct__lab_t *l) {
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX - 32];
  snprintf(dir, sizeof dir, "%s/jctlab-lab.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return;
  for (uint32_t i = 0; i < l->n; i++) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/console%u.log", dir, i);
    FILE *f = fopen(p, "w");
    char buf[65536];
    ssize_t n;
    for (off_t off = 0; f && (n = pread(l->vm[i].console_fd, buf, sizeof buf, off)) > 0; off += n)
      fwrite(buf, 1, (size_t)n, f);
    if (f) fclose(f);
  }
  fprintf(stderr, "jctlab: the lab's consoles are kept in %s\n", dir);
}

void jct__lab_down(jct__lab_t *l) {
  if (!l) return;
  for (uint32_t i = 0; i < l->n; i++)
    if (l->vm[i].pid > 0 && !reap(&l->vm[i], WNOHANG)) kill(l->vm[i].pid, SIGTERM);
  struct timespec pause = {0, 20000000};
  for (int waited = 0; waited < TERM_GRACE_MS; waited += 20) {
    bool all = true;
    for (uint32_t i = 0; i < l->n; i++)
      all &= reap(&l->vm[i], WNOHANG);
    if (all) break;
    nanosleep(&pause, NULL);
  }
  for (uint32_t i = 0; i < l->n; i++) {
    vm_t *v = &l->vm[i];
    if (!reap(v, WNOHANG)) {
      kill(v->pid, SIGKILL);
      reap(v, 0);
    }
    if (v->ctl_fd >= 0) close(v->ctl_fd);
    if (v->mon_fd >= 0) close(v->mon_fd);
    if (v->tap_fd >= 0) close(v->tap_fd); /* a TAP without its fd is gone */
  }
  if (getenv("JCT_LAB_KEEP")) keep_consoles(l);
  for (uint32_t i = 0; i < l->n; i++)
    if (l->vm[i].console_fd >= 0) close(l->vm[i].console_fd);
  free(l);
}
