/* tapegrad: the distributed layer on MPI (see dist.h). */
#include "dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef TAPEGRAD_DOUBLE
#define TG_MPI_REAL MPI_DOUBLE
#else
#define TG_MPI_REAL MPI_FLOAT
#endif

static bool joined;  /* MPI_Init done: started by a launcher */
static int rank_, size_ = 1;

/* The variables OpenMPI, MPICH (Hydra) and PMIx launchers give their ranks. */
static bool launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* 0, or -1 with "what: MPI's message". */
static int check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return tg_error_set("rank %d: %s: %s", rank_, what, msg);
}

int tg_dist_init(int *argc, char ***argv)
{
    if (joined || !launched()) return 0;
    int provided;
    /* only the main thread calls MPI; the GEMM pool's threads never do */
    if (check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init")) return -1;
    joined = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    return 0;
}

void tg_dist_finalize(void)
{
    if (joined) MPI_Finalize();
    joined = false;
    rank_ = 0;
    size_ = 1;
}

bool tg_dist_available(void) { return true; }
int tg_dist_rank(void) { return rank_; }
int tg_dist_size(void) { return size_; }

/* MPI counts are int: large buffers go in pieces. */
#define PIECE (INT_MAX / 2)

/* v [n] broadcast from rank 0, or (sum) summed in place over the ranks. */
static int in_pieces(tg_real *v, size_t n, bool sum, const char *what)
{
    for (size_t i = 0; i < n; i += PIECE) {
        int k = (int)(n - i < PIECE ? n - i : PIECE);
        int rc = sum ? MPI_Allreduce(MPI_IN_PLACE, v + i, k, TG_MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
                     : MPI_Bcast(v + i, k, TG_MPI_REAL, 0, MPI_COMM_WORLD);
        if (check(rc, what)) return -1;
    }
    return 0;
}

int tg_dist_bcast_params(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    if (size_ == 1) return 0;
    return in_pieces(tg_params_data(p), tg_params_numel(p), false, "broadcast of the parameters");
}

int tg_dist_allreduce_grads(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    if (size_ == 1) return 0;
    return in_pieces(tg_params_grad(p), tg_params_numel(p), true, "all-reduce of the gradients");
}

int tg_dist_sum(double *v, int n)
{
    TG_REFUSE_NULL(v || n <= 0, "v", -1);
    if (size_ == 1) return 0;
    return check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "all-reduce");
}

int tg_dist_bcast(double *v, int n)
{
    TG_REFUSE_NULL(v || n <= 0, "v", -1);
    if (size_ == 1) return 0;
    return check(MPI_Bcast(v, n, MPI_DOUBLE, 0, MPI_COMM_WORLD), "broadcast");
}

int tg_dist_barrier(void)
{
    if (size_ == 1) return 0;
    return check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

int tg_dist_params_agree(const tg_params *p, bool *same)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    TG_REFUSE_NULL(same, "same", -1);
    *same = true;
    if (size_ == 1) return 0;
    const unsigned char *b = (const unsigned char *)tg_params_data(p);
    uint64_t h = 1469598103934665603ull;  /* FNV-1a */
    for (size_t i = 0, n = tg_params_numel(p) * sizeof(tg_real); i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    uint64_t lo, hi;
    if (check(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD), "all-reduce") ||
        check(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD), "all-reduce"))
        return -1;
    *same = lo == hi;
    return 0;
}

_Noreturn void tg_dist_abort(int status, const char *msg)
{
    if (size_ > 1) fprintf(stderr, "rank %d: %s\n", rank_, msg);
    else fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    if (joined) MPI_Abort(MPI_COMM_WORLD, status);
    exit(status);
}
