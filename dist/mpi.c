/* tapegrad: the distributed layer on MPI (see dist.h). */
#include "dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static bool joined;  /* MPI_Init done: started by a launcher */
static int rank_, size_ = 1;

/* The deadline of a collective (tg_dist_set_timeout). Each collective also
 * carries a heartbeat: rank 0 and every other rank send each other the
 * collective's number when they reach it, so that a rank that waits too long
 * knows whom it has not heard from. */
enum { TAG_BEAT = 7301 };
static double timeout_s;     /* 0: wait forever */
static char note[512];
static long seq;             /* collectives started: the same count on every rank */
static long *beat_in;        /* [peers + 1] the numbers received, then the one sent */
static MPI_Request *reqs;    /* [1 + 2 peers] the collective, the receives, the sends */

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
    int peers = rank_ ? 1 : size_ - 1;
    beat_in = malloc((size_t)(peers + 1) * sizeof *beat_in);
    reqs = malloc((size_t)(1 + 2 * peers) * sizeof *reqs);
    if (!beat_in || !reqs) {
        tg_dist_finalize();
        return tg_error_set("out of memory joining the job");
    }
    return 0;
}

void tg_dist_finalize(void)
{
    if (joined) MPI_Finalize();
    joined = false;
    rank_ = 0;
    size_ = 1;
    seq = 0;
    free(beat_in);
    free(reqs);
    beat_in = NULL;
    reqs = NULL;
}

int tg_dist_set_timeout(double seconds, const char *why)
{
    if (!(seconds >= 0 && seconds <= 1e9))
        return tg_error_set("tg_dist_set_timeout: the timeout %g s is not in [0, 1e9]", seconds);
    timeout_s = seconds;
    snprintf(note, sizeof note, "%s", why ? why : "");
    return 0;
}

bool tg_dist_available(void) { return true; }
int tg_dist_rank(void) { return rank_; }
int tg_dist_size(void) { return size_; }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rank 0 hears from every rank, every rank from rank 0. */
static int peers(void) { return rank_ ? 1 : size_ - 1; }
static int peer(int i) { return rank_ ? 0 : i + 1; }

/* The heartbeat of the collective just started (reqs[1 ..]). */
static int beat_start(void)
{
    seq++;
    beat_in[peers()] = seq;  /* the send buffer: the same for every peer */
    for (int i = 0, n = peers(); i < n; i++)
        if (check(MPI_Irecv(&beat_in[i], 1, MPI_LONG, peer(i), TAG_BEAT, MPI_COMM_WORLD, &reqs[1 + i]), "heartbeat") ||
            check(MPI_Isend(&beat_in[n], 1, MPI_LONG, peer(i), TAG_BEAT, MPI_COMM_WORLD, &reqs[1 + n + i]),
                  "heartbeat"))
            return -1;
    return 0;
}

/* -1 with "no word from rank 1, 3 for 30.0 s in the <what> <note>": the
 * ranks whose heartbeat has not arrived (of two ranks, the other one), or,
 * when every one has, that the collective itself did not complete. */
static int timed_out(const char *what, double waited)
{
    char who[256] = "";
    size_t n = 0;
    for (int i = 0; i < peers() && n < sizeof who; i++) {
        int done = 0;
        MPI_Test(&reqs[1 + i], &done, MPI_STATUS_IGNORE);
        if (!done) n += (size_t)snprintf(who + n, sizeof who - n, "%s%d", n ? ", " : "", peer(i));
    }
    if (!n && size_ == 2)  /* the one other rank reached the collective and stopped in it */
        n = (size_t)snprintf(who, sizeof who, "%d", 1 - rank_);
    const char *sep = note[0] ? " " : "";
    if (n) return tg_error_set("no word from rank %s for %.1f s in the %s%s%s", who, waited, what, sep, note);
    return tg_error_set("the %s did not complete within %.1f s though %s reached it (a rank stopped in it, "
                        "or the network between ranks failed)%s%s", what, waited, rank_ ? "rank 0" : "every rank",
                        sep, note);
}

/* Waits for the collective (reqs[0]) and its heartbeat, polling against
 * the deadline. While a peer has not arrived (it computes, or is frozen),
 * the wait pauses between polls after its first millisecond, the pauses
 * doubling up to 1 ms, so that a rank that waits long for a slow one stays
 * off the core. Once every peer's heartbeat is in, it polls without pause:
 * OpenMPI moves a non-blocking collective's data only inside MPI calls, so
 * the data moves as fast as the blocking call's. The ranks other than 0 give
 * up 10% and a second later than rank 0, so that rank 0, which hears from
 * everyone, names the missing ranks before mpirun ends the job. */
static int finish(const char *what)
{
    double start = now(), limit = timeout_s > 0 && rank_ ? 1.1 * timeout_s + 1 : timeout_s;
    long pause_ns = 1000;
    int here = 0;  /* every peer's heartbeat arrived */
    for (int i = 0, n = 1 + 2 * peers(); i < n;) {
        int done;
        if (check(MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE), what)) return -1;
        if (done) {
            i++;
            continue;
        }
        double waited = now() - start;
        if (limit > 0 && waited >= limit) return timed_out(what, waited);
        if (!here && check(MPI_Testall(peers(), reqs + 1, &here, MPI_STATUSES_IGNORE), what)) return -1;
        if (here || waited < 1e-3) continue;
        nanosleep(&(struct timespec){0, pause_ns}, NULL);
        if (pause_ns < 1000000) pause_ns *= 2;
    }
    for (int i = 0; i < peers(); i++)
        if (beat_in[i] != seq)
            return tg_error_set("rank %d is at collective %ld but rank %d at %ld: the ranks call different "
                                "collectives", peer(i), beat_in[i], rank_, seq);
    return 0;
}

/* The collective just started (rc, its request in reqs[0]) with its
 * heartbeat, to the end. */
static int collective(int rc, const char *what)
{
    return check(rc, what) || beat_start() || finish(what) ? -1 : 0;
}

/* MPI counts are int: large buffers go in pieces. */
#define PIECE (INT_MAX / 2)

/* The store's flat data (or grad) [numel] broadcast from rank 0, or (sum)
 * summed in place over the ranks. */
static int in_pieces(const tg_params *p, bool sum, const char *what)
{
    tg_dtype dt = tg_params_dtype(p);
    MPI_Datatype type = dt == TG_F64 ? MPI_DOUBLE : MPI_FLOAT;
    unsigned char *v = tg_params_flat(p, dt, sum);
    for (size_t i = 0, n = tg_params_numel(p); i < n; i += PIECE) {
        int k = (int)(n - i < PIECE ? n - i : PIECE);
        unsigned char *at = v + i * tg_dtype_size(dt);
        int rc = sum ? MPI_Iallreduce(MPI_IN_PLACE, at, k, type, MPI_SUM, MPI_COMM_WORLD, reqs)
                     : MPI_Ibcast(at, k, type, 0, MPI_COMM_WORLD, reqs);
        if (collective(rc, what)) return -1;
    }
    return 0;
}

int tg_dist_bcast_params(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    if (size_ == 1) return 0;
    return in_pieces(p, false, "broadcast of the parameters");
}

int tg_dist_allreduce_grads(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    if (size_ == 1) return 0;
    return in_pieces(p, true, "all-reduce of the gradients");
}

int tg_dist_sum(double *v, int n)
{
    TG_REFUSE_NULL(v || n <= 0, "v", -1);
    if (size_ == 1) return 0;
    return collective(MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, reqs), "all-reduce");
}

int tg_dist_bcast(double *v, int n)
{
    TG_REFUSE_NULL(v || n <= 0, "v", -1);
    if (size_ == 1) return 0;
    return collective(MPI_Ibcast(v, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, reqs), "broadcast");
}

int tg_dist_barrier(void)
{
    if (size_ == 1) return 0;
    return collective(MPI_Ibarrier(MPI_COMM_WORLD, reqs), "barrier");
}

int tg_dist_params_agree(const tg_params *p, bool *same)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    TG_REFUSE_NULL(same, "same", -1);
    *same = true;
    if (size_ == 1) return 0;
    const unsigned char *b = tg_params_flat(p, tg_params_dtype(p), false);
    uint64_t h = 1469598103934665603ull;  /* FNV-1a */
    for (size_t i = 0, n = tg_params_numel(p) * tg_dtype_size(tg_params_dtype(p)); i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    uint64_t hash[2] = {h, ~h};  /* the max of h and of ~h: every rank's h is the same when max = ~min */
    if (collective(MPI_Iallreduce(MPI_IN_PLACE, hash, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, reqs), "all-reduce"))
        return -1;
    *same = hash[0] == ~hash[1];
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
