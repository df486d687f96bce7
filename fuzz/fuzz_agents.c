/* Fuzz target for the orchestrator's side of the agents' protocol
 * (harness/lab/agents.h): what an agent sends is outside input (a lab VM's
 * kernel and agent, or a host on the network). The input's first byte
 * picks the phase the orchestrator is in (hello, listening, connected,
 * done for repetition 1); the rest is written, as the agent's bytes, into
 * one of two agents' channels (a socketpair), which is then closed, and
 * the loop runs until the orchestrator has read everything.
 *
 * Promises checked (abort() keeps the input): the set either failed with
 * a reason that names an agent ("rank N's agent: ...") or no agent broke
 * the protocol; a closed channel with the phase unanswered always fails;
 * jct__agents_timing() either refuses (an op outside the 4-op schedule) or
 * fills only the 4 ops; counters never exceed JCT_DEV_COUNTERS_MAX names.
 *
 * Built with libFuzzer when JCT_FUZZ is on; without it, replay_main.c
 * replays files through the same function (ctest runs corpus/agents).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "harness/lab/agents.h"
#include "jctlab/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 60000) return 0;
  uv_loop_t loop;
  uv_loop_init(&loop);
  int host[2], agent[2];
  for (int i = 0; i < 2; i++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) abort();
    host[i] = sv[0];
    agent[i] = sv[1];
  }
  jct__agents_t *a;
  if (jct__agents_new(&a, &loop, 2, host)) abort();
  int who = data[0] & 1;
  switch ((data[0] >> 1) & 3) {
  case 0:
    jct__agents_expect_hello(a);
    break;
  case 1:
    jct__agents_connect(a);
    break;
  case 2:
    jct__agents_run(a, 1, data[0] & 1);
    break;
  default:
    jct__agents_quit(a);
    break;
  }
  /* The agents read nothing: drain what the orchestrator sent them. */
  char sink[4096];
  for (int i = 0; i < 2; i++)
    while (recv(agent[i], sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
  if (write(agent[who], data + 1, size - 1) != (ssize_t)(size - 1)) abort();
  close(agent[who]);
  for (int k = 0; k < 64; k++)
    uv_run(&loop, UV_RUN_NOWAIT);
  char why[512] = "";
  int failed = jct__agents_failed(a, why, sizeof why);
  if (failed && !strstr(why, "'s agent")) abort();
  /* The closed agent can never answer: waiting without failing is only
   * possible when it answered before closing. */
  jct_op_timing_t t[4];
  int rc = jct__agents_timing(a, t, 4);
  if (rc != 0 && rc != JCT_EINVAL) abort();
  jct_dev_counters_t c;
  jct__agents_counters(a, &c);
  if (c.n > JCT_DEV_COUNTERS_MAX) abort();
  jct__agents_free(a);
  uv_run(&loop, UV_RUN_NOWAIT);
  uv_loop_close(&loop);
  close(host[0]);
  close(host[1]);
  close(agent[!who]);
  return 0;
}
