/* Ctrl-C for training programs: the first SIGINT only asks the program to stop (it
 * finishes the current batch, saves where it is and exits with status 130, as a shell
 * reports a process killed by SIGINT); a second one exits at once, saving nothing. */
#ifndef CT_EXAMPLES_INTERRUPT_H
#define CT_EXAMPLES_INTERRUPT_H

#include <stdbool.h>

#define INTERRUPT_EXIT_STATUS 130

/* Installs the SIGINT handler (for the whole process: any thread may take the signal). */
void interrupt_install(void);
/* Under mpirun, which meets Ctrl-C with SIGTERM to every process (and SIGKILL a
 * second later) and forwards SIGUSR1: SIGTERM and SIGUSR1 count as Ctrl-C too.
 * quiet_rank: say nothing (another process of the job does). */
void interrupt_install_launcher_signals(bool quiet_rank);
/* Whether a SIGINT (or a signal above) has come since interrupt_install. */
bool interrupt_requested(void);

#endif
