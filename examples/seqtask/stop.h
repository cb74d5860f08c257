/* seqtask: SIGINT and SIGUSR1 ask a training run to stop cleanly (finish
 * the step, save the checkpoint, exit 130). The handlers are installed
 * first thing in main, so a signal that comes during setup is a stop too,
 * never the default "terminate"; they only set a flag, every later signal
 * included, so a second one while stopping cannot kill the save in
 * progress; and they restart interrupted system calls (SA_RESTART), so a
 * signal cannot fail a write. mpirun passes SIGUSR1 on to every rank (it
 * ends the job on SIGINT itself). */
#ifndef SEQTASK_STOP_H
#define SEQTASK_STOP_H

#include <stdbool.h>

/* Installs the handlers (again after MPI's initialisation: it may install
 * its own). */
void sq_stop_install(void);
/* Whether a stop was asked for. */
bool sq_stop_requested(void);

#endif
