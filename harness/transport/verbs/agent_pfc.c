/* The agent's NIC honours PFC: pause frames on its interface pause its
 * shaper (agent_nic.h). */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_nic.h"
#include "common/errf.h"
#include "jctlab/clock.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"

struct jct__agent_pfc {
  jct_clock_t *clock;
  pcap_t *pcap;
  uv_poll_t poll;
  bool polling;
  jct_timer_t resume;
  char ifname[32];
  uint8_t prio;
  uint64_t rate_bps;
  uint32_t mtu;
  bool paused;
  uint64_t paused_at_ns, paused_ns;
};

static void set_paused(jct__agent_pfc_t *p, bool paused, uint64_t now_ns) {
  if (p->paused == paused) return;
  char err[256];
  if (jct__agent_shape(p->ifname, p->rate_bps, p->mtu, paused, err, sizeof err)) {
    fprintf(stderr, "jctlab agent: PFC: %s\n", err);
    return;
  }
  p->paused = paused;
  if (paused)
    p->paused_at_ns = now_ns;
  else
    p->paused_ns += now_ns - p->paused_at_ns;
}

static void on_resume(jct_timer_t *t, uint64_t now_ns) {
  set_paused(t->data, false, now_ns);
}

static void on_frame(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes) {
  jct__agent_pfc_t *p = (jct__agent_pfc_t *)user;
  jct_packet_t pkt;
  if (jct_decode(JCT_LINK_EN10MB, bytes, h->caplen, h->len, &pkt) != JCT_PKT_PFC) return;
  if (!(pkt.pfc.class_enable & (1u << p->prio))) return;
  uint64_t now = jct_now_ns(), q = pkt.pfc.quanta[p->prio];
  if (!q) {
    jct_timer_stop(p->clock, &p->resume);
    set_paused(p, false, now);
    return;
  }
  set_paused(p, true, now);
  jct_timer_start(p->clock, &p->resume, now + q * 512u * 1000000000u / p->rate_bps, on_resume);
}

static void on_readable(uv_poll_t *h, int status, int events) {
  (void)events;
  jct__agent_pfc_t *p = h->data;
  if (status >= 0) pcap_dispatch(p->pcap, -1, on_frame, (u_char *)p);
}

int jct__agent_pfc_new(jct__agent_pfc_t **out, uv_loop_t *loop, struct jct_clock *clock,
                       const char *ifname, uint8_t prio, uint64_t rate_bps, uint32_t mtu, char *err,
                       size_t errlen) {
  *out = NULL;
  jct__agent_pfc_t *p = calloc(1, sizeof *p);
  if (!p) return JCT_ENOMEM;
  p->clock = clock;
  p->prio = prio;
  p->rate_bps = rate_bps;
  p->mtu = mtu;
  p->resume.data = p;
  snprintf(p->ifname, sizeof p->ifname, "%s", ifname);
  char eb[PCAP_ERRBUF_SIZE] = "";
  struct bpf_program prog;
  int rc = JCT_EIO;
  /* Promiscuous: virtio-net filters what its guest did not subscribe to, and
   * PFC goes to the reserved multicast 01:80:c2:00:00:01. */
  if (!(p->pcap = pcap_create(ifname, eb)) || pcap_set_snaplen(p->pcap, 128) ||
      pcap_set_promisc(p->pcap, 1) || pcap_set_immediate_mode(p->pcap, 1) ||
      pcap_activate(p->pcap) < 0 || pcap_setnonblock(p->pcap, 1, eb) < 0 ||
      pcap_setdirection(p->pcap, PCAP_D_IN) < 0 ||
      pcap_compile(p->pcap, &prog, "ether proto 0x8808", 1, PCAP_NETMASK_UNKNOWN) < 0) {
    jct__errf(err, errlen, rc, "PFC listener on %s: %s", ifname,
              *eb       ? eb
              : p->pcap ? pcap_geterr(p->pcap)
                        : "?");
    jct__agent_pfc_free(p);
    return rc;
  }
  int f = pcap_setfilter(p->pcap, &prog);
  pcap_freecode(&prog);
  int fd = pcap_get_selectable_fd(p->pcap);
  if (f < 0 || fd < 0 || uv_poll_init(loop, &p->poll, fd)) {
    jct__errf(err, errlen, rc, "PFC listener on %s: cannot watch it", ifname);
    jct__agent_pfc_free(p);
    return rc;
  }
  p->polling = true;
  p->poll.data = p;
  uv_poll_start(&p->poll, UV_READABLE, on_readable);
  *out = p;
  return 0;
}

uint64_t jct__agent_pfc_paused_ns(const jct__agent_pfc_t *p) {
  return p ? p->paused_ns + (p->paused ? jct_now_ns() - p->paused_at_ns : 0) : 0;
}

static void on_closed(uv_handle_t *h) {
  jct__agent_pfc_t *p = h->data;
  pcap_close(p->pcap);
  free(p);
}

void jct__agent_pfc_free(jct__agent_pfc_t *p) {
  if (!p) return;
  jct_timer_stop(p->clock, &p->resume);
  if (p->polling) {
    uv_close((uv_handle_t *)&p->poll, on_closed);
    return;
  }
  if (p->pcap) pcap_close(p->pcap);
  free(p);
}
