/* tapegrad: the distributed layer in a build without MPI: one process, rank
 * 0 of 1, and every collective leaves its buffer as it is (see dist.h). */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>

int tg_dist_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* started by mpirun as one of several: each copy would train alone on
     * the whole batch and write the same files */
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (!n) n = getenv("PMI_SIZE");
    if (n && atoi(n) > 1) {
        tg_error_set("started as one of %s ranks, but this build has no MPI: install "
                     "libopenmpi-dev and rebuild (cmake finds it, or give -DTAPEGRAD_MPI=ON)", n);
        return -1;
    }
    return 0;
}

void tg_dist_finalize(void) {}
bool tg_dist_available(void) { return false; }
int tg_dist_rank(void) { return 0; }
int tg_dist_size(void) { return 1; }

int tg_dist_bcast_params(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    return 0;
}

int tg_dist_allreduce_grads(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    return 0;
}

int tg_dist_sum(double *v, int n)
{
    TG_REFUSE_NULL(v || n <= 0, "v", -1);
    return 0;
}

int tg_dist_bcast(double *v, int n)
{
    TG_REFUSE_NULL(v || n <= 0, "v", -1);
    return 0;
}

int tg_dist_barrier(void) { return 0; }

int tg_dist_set_timeout(double seconds, const char *why)
{
    (void)why;
    if (!(seconds >= 0 && seconds <= 1e9))
        return tg_error_set("tg_dist_set_timeout: the timeout %g s is not in [0, 1e9]", seconds);
    return 0;
}

int tg_dist_params_agree(const tg_params *p, bool *same)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    TG_REFUSE_NULL(same, "same", -1);
    *same = true;
    return 0;
}

_Noreturn void tg_dist_abort(int status, const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    exit(status);
}
