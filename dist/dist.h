/* tapegrad: data-parallel training across processes (MPI).
 *
 * Every rank holds the whole model, runs forward and backward on its share
 * of the batch, and the ranks sum their grads (tg_dist_allreduce_grads)
 * before each optimizer step, so every rank takes the same step. With grads
 * of the form (sum over my rows) / (rows of the whole batch), the sum over
 * ranks is the whole batch's mean.
 *
 * A library of its own, libtapegrad-dist (CMake: tapegrad::dist, from
 * find_package(tapegrad COMPONENTS dist); pkg-config: tapegrad-dist), so that
 * only the programs that link it need MPI.
 * Built on MPI when CMake finds it (dist/mpi.c); otherwise, and in a program
 * not started by mpirun, the process is rank 0 of 1 and every call below is
 * a no-op that succeeds (dist/local.c), so one program serves both.
 *
 * Failure: a call that fails returns -1 with its message in tg_error(). A rank that
 * hits an error only it knows about calls tg_dist_abort, which ends every
 * rank (mpirun reports it); errors every rank knows about (a bad flag, a
 * non-finite loss after the all-reduce) are left the ordinary way after
 * tg_dist_finalize. Never leave one rank with tg_dist_finalize while the
 * others wait in a collective: that is the one way to hang.
 *
 * A rank that never arrives (stopped, frozen, cut off by the network) is
 * caught by the deadline of tg_dist_set_timeout: the collectives below fail
 * with "no word from rank R for S s in the all-reduce ..." (rank 0 hears from
 * every rank, the others from rank 0), and the caller ends the job with
 * tg_dist_abort: after a timeout the job cannot go on.
 */
#ifndef TAPEGRAD_DIST_H
#define TAPEGRAD_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/engine/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Joins the job when the process was started by mpirun (or another MPI
 * launcher); else the process runs alone. Call once, before any thread is
 * started. 0, or -1 with a message (an MPI build that cannot initialise,
 * or a build without MPI started as one of several ranks). */
int tg_dist_init(int *argc, char ***argv);
void tg_dist_finalize(void);
/* Whether this build has MPI at all. */
bool tg_dist_available(void);

int tg_dist_rank(void);  /* 0 .. size-1 */
int tg_dist_size(void);  /* 1 when alone */

/* Every rank's parameter values become rank 0's. */
int tg_dist_bcast_params(tg_params *p);
/* Every rank's flat grad buffer becomes the sum over ranks, in one call
 * (MPI_Allreduce in place). The same bits on every rank. */
int tg_dist_allreduce_grads(tg_params *p);
/* v[0..n) becomes the sum over ranks (status flags, loss sums). */
int tg_dist_sum(double *v, int n);
/* v[0..n) becomes rank 0's. */
int tg_dist_bcast(double *v, int n);
int tg_dist_barrier(void);
/* Every collective above waits at most `seconds` (0, the default: forever)
 * for the other ranks, then fails naming the ranks not heard from, with
 * `why` (NULL: nothing) appended to the message: the caller's state, e.g.
 * "at step 17". Ranks other than 0 wait 1.1 x seconds + 1 s, so that rank 0
 * speaks first. -1 for a timeout not in [0, 1e9]. */
int tg_dist_set_timeout(double seconds, const char *why);
/* *same = every rank holds bit for bit the same parameter values (a hash of
 * them compared across ranks): the check that the ranks did not drift. */
int tg_dist_params_agree(const tg_params *p, bool *same);
/* Prints "rank R: msg" to stderr and ends every rank with status (alone:
 * exit(status)). */
__attribute__((noreturn)) void tg_dist_abort(int status, const char *msg);

#ifdef __cplusplus
}
#endif

#endif
