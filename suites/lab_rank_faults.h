/* Delay and flap at host:1 under srun on the lab's two VMs (issue 14),
 * a part of suite lab_rank's two_vms boot (lab_rank_faults.c). */
#ifndef JCT_SUITES_LAB_RANK_FAULTS_H
#define JCT_SUITES_LAB_RANK_FAULTS_H

/* Shell text for VM 0's script once Slurm is up on both VMs: $J the jctlab
 * binary, SLURM_CONF and Open MPI's TCP settings exported. It writes its
 * files under /root/fx (the VM's overlay: nothing on the host) and its
 * "== fx ..." lines and documents to stdout. */
const char *lab_rank_faults_script(void);

/* Check the boot's output (what the fragment wrote into it). */
void lab_rank_faults_check(const char *out);

#endif
