/* SIGINT and SIGTERM, as a run takes them (internal): the first asks the
 * run to end cleanly (the repetition under way stops, captures and the
 * fault log are closed whole, the cases finished so far are written and
 * the result says it was interrupted); a second ends the process at once,
 * as if no handler were there (the kernel then tears the namespaces down,
 * DESIGN.md decision 2).
 *
 * The handler only records the signal and writes a byte to a pipe whose
 * read end an event loop can watch (jct__interrupt_fd), so a loop asleep
 * until a distant timer wakes at once. */
#ifndef JCT_INTERRUPT_H
#define JCT_INTERRUPT_H

/* Install the handlers (idempotent). Returns 0, or -errno. */
int jct__interrupt_install(void);

/* The signal received (SIGINT, SIGTERM), or 0. Async-signal-safe to read. */
int jct__interrupt_signal(void);

/* The pipe's read end (non-blocking), or -1 before install. */
int jct__interrupt_fd(void);

/* Drain the pipe (after a loop woke on it). */
void jct__interrupt_drain(void);

#endif
