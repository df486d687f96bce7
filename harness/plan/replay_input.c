/* What `jctlab replay` replays (replay_input.h): a generated collective,
 * a schedule file, or a capture, whose schedule is inferred (infer.h) and
 * whose losses the postmortem (postmortem.h) turns into injectors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "harness/base/layout.h"
#include "jctlab/error.h"
#include "jctlab/infer.h"
#include "capture_figures.h"
#include "replay_input.h"
#include "replay_profile.h"


/* A schedule is JSON: a .json name, or a file whose first non-blank byte is '{'. */
static int is_schedule(const char *path) {
  size_t n = strlen(path);
  if (n > 5 && strcmp(path + n - 5, ".json") == 0) return 1;
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  int c;
  while ((c = fgetc(f)) == ' ' || c == '\n' || c == '\t' || c == '\r') {
  }
  fclose(f);
  return c == '{';
}

/* A capture: its inferred schedule, sizes scaled, and its losses as
 * targeted drops; the losses' offsets scale with the sizes. In the lab
 * (vm_stalls), its hosts' transmit stalls as stall injectors too, and its
 * timer go-backs with nothing lost as timeout injectors. */
static int load_trace(jct__replay_input_t *in, const char *path, uint32_t pmtu, double scale,
                      bool verbs, bool vm_stalls, char *err, size_t errlen) {
  jct_infer_report_t rep;
  int rc = jct_infer(path, NULL, &in->schedule, &rep, err, errlen);
  if (rc) return rc;
  snprintf(in->pattern, sizeof in->pattern, "%s", rep.pattern);
  in->no_cts = rep.ops && !rep.flow_control;
  if (!in->schedule->bytes) in->schedule->bytes = rep.total_bytes;
  /* The targeted drops count packets of the MTU the replay will use: the
   * user's, else the capture's (replay_profile.h), else 4096. */
  const jct_figure_t *m = in->schedule->profile ? &in->schedule->profile->mtu_bytes : NULL;
  if (!pmtu && m && m->set && m->value >= 256 && m->value <= 4096 && !(m->value & (m->value - 1)))
    pmtu = (uint32_t)m->value;
  if (!pmtu) pmtu = 4096;
  rc = jct__capture_figures_measure(path, in->schedule, &rep, &in->capture, err, errlen);
  in->have_capture = rc == 0;
  if (!rc) rc = jct_schedule_scale(in->schedule, scale, err, errlen);
  if (!rc)
    rc =
        jct__postmortem_specs(in->schedule, &rep, scale, pmtu, verbs, in->fault_specs, &in->nfaults,
                              &in->lost_packets, &in->lost_retransmissions, err, errlen);
  if (!rc)
    rc = jct__postmortem_go_backs(in->schedule, &rep, scale, pmtu, &in->go_backs,
                                  &in->go_back_idle_ns, &in->ngo_backs);
  if (!rc) rc = jct__postmortem_stalls(in->schedule, &rep, scale, pmtu, &in->stalls, &in->nstalls);
  if (!rc && vm_stalls) {
    rc = jct__postmortem_stall_specs(in->schedule, in->stalls, in->nstalls, in->host_specs,
                                     &in->nstall_specs, err, errlen);
    in->nhost_specs = in->nstall_specs;
  }
  if (!rc && vm_stalls) {
    uint32_t ntimeouts = 0;
    rc = jct__postmortem_timeout_specs(in->schedule, in->go_backs, in->ngo_backs,
                                       in->host_specs + in->nstall_specs, &ntimeouts, err, errlen);
    in->nhost_specs += ntimeouts;
  }
  jct_infer_report_free(&rep);
  return rc;
}

int jct__replay_input_load(jct__replay_input_t *in, const jct__run_args_t *a, const char *path,
                           double scale, char *err, size_t errlen) {
  memset(in, 0, sizeof *in);
  int rc;
  if (a->synth) {
    in->kind = "synth";
    snprintf(in->source, sizeof in->source, "synth %s, %llu ranks, %llu bytes", a->synth,
             (unsigned long long)a->ranks, (unsigned long long)a->bytes);
    rc = jct_schedule_synth(&in->schedule, a->synth, (uint32_t)a->ranks, a->bytes,
                            (uint32_t)a->channels, err, errlen);
  } else {
    if (!path) path = jct__default_trace();
    snprintf(in->source, sizeof in->source, "%s", path);
    int sched = is_schedule(path);
    if (sched < 0) return jct__errf(err, errlen, JCT_EIO, "%s: no such file", path);
    if (sched) {
      in->kind = "schedule";
      rc = jct_schedule_load(&in->schedule, path, err, errlen);
    } else {
      in->kind = "trace";
      bool verbs = a->run.transport == JCT_TRANSPORT_VERBS;
      rc = load_trace(in, path, a->run.path_mtu_bytes, scale, verbs, jct_run_in_lab(&a->run), err,
                      errlen);
      scale = 1; /* done there */
    }
  }
  if (!rc) rc = jct_schedule_scale(in->schedule, scale, err, errlen);
  if (!rc && a->qps_per_conn > 1) { /* --qps-per-connection, qps_per_connection: */
    jct_schedule_t *split;
    if (!(rc = jct_schedule_split_qps(&split, in->schedule, (uint32_t)a->qps_per_conn, err,
                                      errlen))) {
      split->profile = in->schedule->profile; /* the capture's, still this job's */
      in->schedule->profile = NULL;
      jct_schedule_free(in->schedule);
      in->schedule = split;
    }
  }
  if (rc) jct__replay_input_free(in);
  return rc;
}

const char **jct__replay_input_specs(const jct__replay_input_t *in, bool trace_losses,
                                     const char *const *user, uint32_t n_user, uint32_t *n,
                                     jct_run_opts_t *o) {
  uint32_t nl = trace_losses ? in->nfaults : 0, total = nl + n_user + in->nhost_specs;
  const char **specs = calloc(total + 1, sizeof *specs);
  if (!specs) return NULL;
  for (uint32_t i = 0; i < nl; i++)
    specs[i] = in->fault_specs[i];
  for (uint32_t i = 0; i < n_user; i++)
    specs[nl + i] = user[i];
  for (uint32_t i = 0; i < in->nhost_specs; i++)
    specs[nl + n_user + i] = in->host_specs[i];
  *n = total;
  o->capture_timeouts = in->nhost_specs - in->nstall_specs;
  o->capture_nak_holds = trace_losses ? in->nak_holds : 0; /* the last of fault_specs */
  return specs;
}

int jct__replay_input_fabric(jct__replay_input_t *in, uint32_t user_set, jct_run_opts_t *o,
                             char *err, size_t errlen) {
  json_decref(in->replay_profile);
  in->replay_profile = NULL;
  jct__replay_capture_t c = {
      .captured_rate_bps = in->captured_rate_bps, .ngo_backs = in->ngo_backs, .no_cts = in->no_cts};
  for (uint32_t i = 0; i < in->ngo_backs; i++) /* a captured timer go-back re-sent a lost packet */
    c.timer_recovers_loss |= in->go_backs[i].timer_ns > 0 && in->go_backs[i].recovers_loss;
  /* The lab holds the capture's host pauses (stall and timeout injectors):
   * undilated, its TCG VMs pause by themselves as long again (ring2-drop1pct:
   * job 1.20-1.39 of the capture's at x1, 1.15-1.18 at x2 and x4;
   * ring2-nodrop 4 timeouts of 2 at x1, 2 at x2 and x4), and while it stops
   * and resumes VMs its loop's p99 lateness came to about 1 ms of wall time,
   * over one packet's time at x2 (invalid in 4 of 6 runs, none of 6 at x4):
   * so its dilation is at least 4. Nothing held: none unless the rate needs
   * it, the VMs at their own pace, which set the capture's go-back depth
   * (p2p-delay-drop: re-sent 0.69-1.40 at x1, 0.67 at x2 and x4, where rxe
   * outruns the link and goes back as deep as its NIC queue). README, "The
   * lab's dilation for a capture". */
  o->tdf_floor = in->nhost_specs ? 4 : 0;
  /* The capture's transmit stalls: its hosts', lossless capture or not; the rate then leaves
   * them out (replay_profile.h). uroce holds them in its QPs, keeping its own retransmit timer
   * still during each and the captured go-backs in the capture's order (uroce.h), without
   * which holding them cost the shipped capture a timeout and the lab's ring2-drop1pct one
   * (job 1.62 of the capture's); the lab holds them by stopping the sender's VM (its stall
   * injectors, host_specs), its rxe timer stopped with it. o->stalls are uroce's QPs' only. */
  bool stalls = in->nstalls && (o->transport == JCT_TRANSPORT_UROCE || in->nstall_specs);
  o->stalls = stalls ? in->stalls : NULL;
  o->nstalls = stalls ? in->nstalls : 0;
  int rc =
      jct__replay_profile_apply(in->schedule, user_set, &c, o, &in->replay_profile, err, errlen);
  o->go_backs = o->ngo_backs ? in->go_backs : NULL;
  if (!rc)
    jct__postmortem_timer_go_backs(in->go_backs, in->go_back_idle_ns, o->ngo_backs, o->timeout);
  /* On verbs the lab's rxe goes back at once: with --hold-naks its
   * responders' hosts hold the NAKs as long as the capture's requesters
   * took (postmortem.h), once the replay's rate is known. Off by default:
   * rxe's own queue at the NAK, its VM's timing, grows while it is held
   * (README, "On verbs in the lab"). */
  if (!rc && o->hold_naks && o->transport != JCT_TRANSPORT_VERBS)
    rc = jct__errf(err, errlen, JCT_EINVAL,
                   "--hold-naks: verbs only (uroce replays the capture's go-backs itself)");
  if (!rc && o->hold_naks && in->nfaults && !in->nak_holds) {
    uint32_t before = in->nfaults;
    rc = jct__postmortem_nak_holds(in->schedule, in->go_backs, in->ngo_backs, o->rate_bps,
                                   o->path_mtu_bytes ? o->path_mtu_bytes : 4096, in->fault_specs,
                                   &in->nfaults, err, errlen);
    in->nak_holds = in->nfaults - before;
  }
  if (!rc && in->replay_profile) {
    json_t *f = json_pack("{s:I, s:s}", "value", (json_int_t)o->nstalls, "source",
                          stalls ? "capture" : "default");
    if (f && stalls)
      json_object_set_new(f, "from",
                          json_string(in->nstall_specs
                                          ? "the capture's transmit stalls: a sender's host held "
                                            "a message's packets, each held as long after the "
                                            "packet before it, the sender's VM stopped"
                                          : "the capture's transmit stalls: a sender's host held "
                                            "a message's packets, each held as long at the same "
                                            "packet"));
    if (!f || json_object_set_new(in->replay_profile, "stalls", f)) rc = JCT_ENOMEM;
  }
  return rc;
}

void jct__replay_input_free(jct__replay_input_t *in) {
  jct__capture_figures_free(&in->capture);
  in->have_capture = false;
  json_decref(in->replay_profile);
  in->replay_profile = NULL;
  jct_schedule_free(in->schedule);
  in->schedule = NULL;
  for (uint32_t i = 0; i < in->nfaults; i++)
    free(in->fault_specs[i]);
  in->nfaults = 0;
  free(in->go_backs);
  free(in->go_back_idle_ns);
  in->go_backs = NULL;
  in->go_back_idle_ns = NULL;
  in->ngo_backs = 0;
  free(in->stalls);
  in->stalls = NULL;
  in->nstalls = 0;
  for (uint32_t i = 0; i < in->nhost_specs; i++)
    free(in->host_specs[i]);
  in->nhost_specs = in->nstall_specs = 0;
}
