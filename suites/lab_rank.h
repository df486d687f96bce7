/* lab_rank's one boot (check_lab_rank.c): two lab VMs, one Slurm over
 * both, and a list of parts, each some shell run in the VMs and a check of
 * what they printed. A part is a few fields of lab_rank_part_t; adding one
 * is two lines in check_lab_rank.c (its declaration and its entry in the
 * list) and its file in suites/CMakeLists.txt.
 *
 * The boot's script (/bin/sh, in both VMs; VM 1's lines reach the output
 * prefixed "vm1: ") runs, in this order:
 *   1. every part's vars (shell assignments, written by the test on the
 *      host: for what the host computes, such as a setup message);
 *   2. in VM 1, every part's vm1 fragment, then VM 1's slurmd starts and
 *      VM 1 waits to be stopped;
 *   3. in VM 0, slurmctld and its slurmd start, then every part's alone
 *      fragment (VM 1 is busy with its own meanwhile: nothing may cross
 *      eth0 to it), then VM 0 waits for both nodes to be idle;
 *   4. in VM 0, every part's both fragment, Slurm over the two VMs;
 *   5. Slurm stopped; the output goes to every part's check, in order.
 * What a fragment may use:
 *   $J       the jctlab binary; $SRC the source tree (the host's root,
 *            read-only); $CONF the two-node slurm.conf (exported as
 *            SLURM_CONF in VM 0, with Open MPI on TCP over eth0:
 *            OMPI_MCA_pml=ob1, OMPI_MCA_btl=self,tcp, ..._if_include=eth0);
 *   $ADDR    this VM's eth0 address (198.18.0.1 in VM 0, .2 in VM 1);
 *   /root/   its files (the VM's tmpfs overlay; gone with the VM);
 *   launch NAME CMD...  runs CMD, its stdout and stderr into
 *            /root/NAME.out and .err, and prints "== NAME exit N" and its
 *            stderr's first 5 lines as "== NAME err: LINE";
 *   run NAME SCEN ARGS...  launch NAME: `srun -N 2 --ntasks-per-node=1
 *            --mpi=pmix $J rank SCEN --gid-index 1 ARGS` (rank 0 in VM 0,
 *            rank 1 in VM 1; both fragments only), within 300 s;
 *   mpi1 NAME NP ARGS...  launch NAME: `mpirun --oversubscribe -np NP $J
 *            rank ARGS` on VM 0 alone (alone fragments), within 300 s;
 *   show NAME FILE  prints FILE between "== json NAME" and "== end";
 *   showlog NAME FILE  a JSON-lines file (--fault-log) as one array, so.
 * Names are the parts' own: two parts must not share one. */
#ifndef JCT_SUITES_LAB_RANK_H
#define JCT_SUITES_LAB_RANK_H

#include <check.h>
#include <jansson.h>
#include <stdio.h>

typedef struct {
  const char *name;
  void (*vars)(FILE *script); /* NULL: none */
  const char *vm1;            /* NULL: nothing there */
  const char *alone;
  const char *both;
  void (*check)(const char *out); /* the boot's whole output */
} lab_rank_part_t;

/* The parts (lab_rank_one.c: VM 0 alone, and VM 1's fq guard;
 * lab_rank_two.c: across the two VMs). */
extern const lab_rank_part_t lab_rank_refusals, lab_rank_hosts, lab_rank_fq;
extern const lab_rank_part_t lab_rank_four, lab_rank_pair;

/* Reading the output (check_lab_rank.c). */
/* "== NAME exit N": N, -1 when there is none. */
int lab_rank_exit(const char *out, const char *name);
/* NAME's stderr lines ("== NAME err: "), one a line, into buf. */
void lab_rank_err(const char *out, const char *name, char *buf, size_t len);
/* NAME's exit status, which must be status (fails naming its stderr
 * lines, which go into err either way). */
void lab_rank_expect(const char *out, const char *name, int status, char *err, size_t errlen);
/* VM 0's document between "== json NAME" and "== end", VM 1's lines
 * ("vm1: ...") that came between dropped (fails without one). */
json_t *lab_rank_doc(const char *out, const char *name);
/* The rest of the line after KEY's first occurrence, into buf (fails
 * without one). */
const char *lab_rank_line(const char *out, const char *key, char *buf, size_t len);
/* rank's named counter in a document's case c, side ("baseline",
 * "faulted"), of a document with nranks ranks. */
json_int_t lab_rank_counter(json_t *c, const char *side, size_t nranks, size_t rank,
                            const char *name);

#endif
