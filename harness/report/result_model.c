/* A case's go-back-N model prediction as JSON (result.h; the model is
 * include/jctlab/model.h): null for the faults it does not cover. */
#include <math.h>

#include "jctlab/model.h"
#include "result.h"

static json_t *finite_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

json_t *jct__model_json(const jct_run_opts_t *o) {
  jct_loss_model_in_t in;
  jct_loss_model_t m;
  char err[200];
  if (!o->schedule || !jct_loss_model_covers(o, &in) ||
      jct_loss_model(o->schedule, o, &in, &m, err, sizeof err))
    return json_null();
  json_t *j = json_object();
  json_object_set_new(j, "covers", json_string("bernoulli drop"));
  json_object_set_new(j, "p", json_real(in.p));
  json_object_set_new(j, "jct_ns", finite_or_null(m.jct_ns));
  json_object_set_new(j, "degradation", finite_or_null(m.degradation));
  json_object_set_new(j, "base_ns", json_real(m.base_ns));
  json_object_set_new(j, "excess_ns", finite_or_null(m.excess_ns));
  json_object_set_new(j, "mean_excess_ns", finite_or_null(m.mean_excess_ns));
  json_object_set_new(j, "W_pkts", json_real(m.w_pkts));
  json_object_set_new(j, "bdp_pkts", json_real(m.bdp_pkts));
  json_object_set_new(j, "detect_pkts", json_real(m.detect_pkts));
  json_object_set_new(j, "packet_time_ns", json_real(m.packet_time_ns));
  json_object_set_new(j, "nak_cost_ns", json_real(m.nak_cost_ns));
  json_object_set_new(j, "timer_ns", finite_or_null(m.timer_ns));
  json_object_set_new(j, "p_timer", json_real(m.p_timer));
  json_object_set_new(j, "losses", json_real(m.losses));
  json_object_set_new(j, "timeouts", json_real(m.timeouts));
  json_object_set_new(j, "trials", json_integer(m.trials));
  return j;
}
