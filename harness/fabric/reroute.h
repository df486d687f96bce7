/* Rerouting around a leaf-spine cable that is down (internal to the
 * fabric, fabric.h "Rerouting"): each cable's state, the detection delay,
 * and the ECMP members it withdraws and restores at the leaves.
 *
 * A cable is down while a flap has either of its directions down (a
 * receiver that loses the signal tells its peer with IEEE 802.3 link fault
 * signalling, remote fault; BFD is bidirectional too): both ends act on
 * it. detect_ns after it went down (and is still down) the routes through
 * it are withdrawn: leaf l drops its uplink to spine s from every group,
 * and every other leaf drops spine s from its group toward leaf l (spine
 * s's route to leaf l is gone, as a routed Clos's BGP withdrawal tells
 * them; the update's own propagation is not modelled: the leaves act at
 * the same instant). detect_ns after it came up (and is still up) the
 * routes are restored. A flap shorter than detect_ns is never noticed:
 * what it drops is lost. Member s of leaf i's group toward leaf j is up
 * exactly when neither cable (i, s) nor (j, s) is withdrawn. */
#ifndef JCT_REROUTE_H
#define JCT_REROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/switch.h"

typedef struct {
  bool down, withdrawn;
  uint64_t since_ns; /* the last change of down */
  uint64_t due_ns;   /* when the ends act on it (withdraw, restore); UINT64_MAX: nothing due */
  uint64_t down_ns;  /* down time of the periods that ended */
  uint64_t reroutes, restores;
} jct__cable_t;

typedef struct {
  uint32_t L, S, H;
  uint64_t detect_ns;  /* JCT_CLOS_REROUTE_OFF: never */
  jct_switch_t **leaf; /* L leaf switches (the caller's) */
  int32_t *group;      /* L * L: leaf i's group toward leaf j, -1: none (i == j, or S == 1) */
  jct__cable_t *cable; /* L * S: cable l * S + s */
} jct__reroute_t;

/* Arrays for L leaves, S spines, H host ports per leaf (uplink to spine s
 * at port H + s), every group -1 and every cable up. Errors: JCT_ENOMEM. */
int jct__reroute_init(jct__reroute_t *r, uint32_t L, uint32_t S, uint32_t H, uint64_t detect_ns);
void jct__reroute_free(jct__reroute_t *r);

/* A repetition starts: every cable up, every route restored; counters
 * kept, an open down period closed at now_ns. */
void jct__reroute_reset(jct__reroute_t *r, uint64_t now_ns);

/* Cable c is down (or up) as of now_ns. */
void jct__reroute_see(jct__reroute_t *r, uint32_t c, bool down, uint64_t now_ns);

/* When the next withdrawal or restore is due, UINT64_MAX: none. */
uint64_t jct__reroute_next_ns(const jct__reroute_t *r);

/* Withdraw and restore what is due by now_ns; cb(arg, cable, withdrawn)
 * after each. */
typedef void (*jct__reroute_cb)(void *arg, uint32_t cable, bool withdrawn);
void jct__reroute_tick(jct__reroute_t *r, uint64_t now_ns, jct__reroute_cb cb, void *arg);

/* Cable c's down time up to now_ns, an open period included. */
uint64_t jct__reroute_down_ns(const jct__reroute_t *r, uint32_t c, uint64_t now_ns);

#endif
