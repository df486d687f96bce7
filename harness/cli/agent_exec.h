/* A lab VM that runs a given program instead of serving as a rank's agent
 * (cli/, the agent's side of `jctlab lab-exec`, cmd_lab_exec.c): the
 * host's jctlab puts jctlab.exec=PATH on the VM's kernel command line
 * (harness/lab/lab.h, exec_path), the VM's /init starts `jctlab agent
 * --control PORT` as ever (scripts/lab-init), and the agent, once it has
 * made the VM rank 0's host (eth0 198.18.0.1, rxe0 active), runs PATH in
 * its place. */
#ifndef JCT_CLI_AGENT_EXEC_H
#define JCT_CLI_AGENT_EXEC_H

#include <stdbool.h>
#include <stddef.h>

/* The PATH of a jctlab.exec=PATH word on the kernel command line
 * (/proc/cmdline) into path[len]; false when there is none. */
bool jct__agent_exec_wanted(char *path, size_t len);

/* Run path (no arguments; stdin /dev/null) with its stdout and stderr on
 * the control port control, wait for it, then write the line
 * "jctlab-exec: exit N" there (N its exit status, 128 + the signal that
 * ended it). Returns N. */
int jct__agent_exec(const char *control, const char *path);

#define JCT_AGENT_EXEC_STATUS "jctlab-exec: exit "

#endif
