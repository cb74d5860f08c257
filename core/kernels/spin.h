/* tapegrad: the thread pool's state, for the library's size rule and the
 * tests (core/kernels/threads.c). Internal: not installed. */
#ifndef TAPEGRAD_SPIN_H
#define TAPEGRAD_SPIN_H

#include <stdbool.h>

/* Some worker is spinning for the next job, so handing it one costs no
 * wake-up (core/kernels/threads.c). */
bool tg_parallel_awake(void);

/* A worker stalled mid-chunk lately, so small loops run on one thread for
 * now, for a time in proportion to the stall (core/kernels/threads.c). */
bool tg_parallel_calm(void);

/* How long a worker now spins for the next job before it sleeps, in ns:
 * learnt from the gaps between recent jobs (core/kernels/threads.c). */
long tg_parallel_spin_ns(void);

/* Wakes the sleeping workers to spin for the jobs to come, without a job
 * (at most once per spin period): tg_parallel_pays does, for a loop worth
 * splitting that it runs on one thread because the workers sleep. */
void tg_parallel_wake(void);

#endif
