/* What an agent changed on its host, undone when it dies however it dies
 * (internal to `jctlab agent`): one guard process per agent, for every
 * fault that changes the host (a flap's link down, agent_link.h; a
 * delay's fq qdisc, agent_qdisc.h).
 *
 * The guard is forked on first use. It holds one end of a socket pair
 * whose other end only the agent holds (O_CLOEXEC; a process forked from
 * the agent starts a guard of its own). Through it the agent hands it
 * undo requests, each a complete rtnetlink request with NLM_F_ACK that the
 * agent built beforehand, under a key: the guard keeps the latest per key
 * (at most JCT__GUARD_KEYS) and forgets a key when told. When the agent
 * exits or is killed (SIGKILL included) the kernel closes its end;
 * the guard reads end-of-file, sends what it holds, the last kept first
 * (undone in the reverse order of doing), says on stderr which the kernel
 * refused, and exits.
 *
 * The agent may have threads by then (the lease's, hostdrop.h), so the
 * guard allocates nothing after the fork: records are fixed-size, read
 * into its stack. It ignores SIGINT, SIGTERM and SIGHUP (a terminal's
 * Ctrl-C reaches the agent's whole process group) and keeps no other
 * descriptor of the agent's (its control connection closes with it). A
 * guard killed itself undoes nothing (and the agent's next hand-over
 * fails, JCT_EIO, without a SIGPIPE): the next agent clears what it can
 * recognise (jctlab's fq, agent_qdisc.h; jctlab's filters, hostdrop.h).
 */
#ifndef JCT_AGENT_GUARD_H
#define JCT_AGENT_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JCT__GUARD_KEYS 16
#define JCT__GUARD_REQ_MAX 512  /* bytes of one undo request */
#define JCT__GUARD_LABEL_MAX 96 /* "set eth0 up", in the guard's complaint */

/* What a key guards, with the interface's index: jct__guard_key(). */
typedef enum {
  JCT__GUARD_LINK = 1, /* a flap's link: set up */
  JCT__GUARD_FQ = 2,   /* the root qdisc a delay's fq replaced */
} jct__guard_what_t;

static inline uint64_t jct__guard_key(jct__guard_what_t what, int ifindex) {
  return (uint64_t)what << 32 | (uint32_t)ifindex;
}

/* Have the guard send req (len bytes, an rtnetlink request asking for an
 * ACK) when this process dies, unless forgotten first; replaces what key
 * held. label names it in the guard's complaint if the kernel refuses.
 * Starts the guard when this process has none. Errors: JCT_EINVAL (len 0
 * or above JCT__GUARD_REQ_MAX), JCT_EIO (no pipe, fork or write; err
 * says which); the guard then holds nothing new. */
int jct__agent_guard_keep(uint64_t key, const void *req, size_t len, const char *label, char *err,
                          size_t errlen);

/* The guard forgets key (undone by the agent itself). */
void jct__agent_guard_forget(uint64_t key);

/* The guard's process id; 0 when this process has none. */
pid_t jct__agent_guard_pid(void);

/* End the guard: it undoes what it still holds, and is waited for. For a
 * clean exit, after everything was undone and forgotten. */
void jct__agent_guard_stop(void);

#endif
