/* tapegrad: the persistent thread pool (see core/kernels/threads.h).
 *
 * One job at a time: the caller that gets `busy` publishes the job, bumps
 * `generation` and broadcasts; worker w (1..T-1) runs chunk w, the caller runs
 * chunk 0, and the last worker to finish signals `done`. Both sides spin
 * briefly before sleeping (see SPIN_NS). Workers live for the
 * process (blocked in pthread_cond_wait, reachable from `pool`), so there is
 * nothing to join or free at exit.
 */
#include "threads.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define TG_MAX_THREADS 64

typedef struct pool_job {
    void (*fn)(void *ctx, int begin, int end);
    void *ctx;
    int n, chunks;
} pool_job;

static struct {
    pthread_mutex_t mu;          /* guards everything below */
    pthread_cond_t wake, done;   /* workers wait for a new generation; the caller for pending == 0 */
    pthread_mutex_t busy;        /* held by the one caller whose job is running */
    pthread_t tid[TG_MAX_THREADS];
    unsigned long start_gen[TG_MAX_THREADS];  /* generation when worker w was created */
    int workers;                 /* created so far: ids 1..workers */
    bool create_failed;          /* stop retrying pthread_create until tg_threads_set */
    atomic_ulong generation;     /* written under mu; read without it while spinning */
    atomic_int pending;          /* workers still running the current job */
    pool_job job;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER, .busy = PTHREAD_MUTEX_INITIALIZER};

static atomic_int g_threads;              /* 0: not set yet, use the core count */
static _Thread_local bool tl_inside;      /* this thread is running a chunk */
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* Asked once: sysconf reads /sys, too slow for every GEMM. */
static int g_cores;
static pthread_once_t g_cores_once = PTHREAD_ONCE_INIT;

static void count_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    g_cores = n < 1 ? 1 : n > TG_MAX_THREADS ? TG_MAX_THREADS : (int)n;
}

static int online_cores(void)
{
    pthread_once(&g_cores_once, count_cores);
    return g_cores;
}

void tg_threads_set(int n)
{
    if (n <= 0) n = online_cores();
    if (n > TG_MAX_THREADS) n = TG_MAX_THREADS;
    atomic_store(&g_threads, n);
    pthread_mutex_lock(&pool.mu);
    pool.create_failed = false;
    pthread_mutex_unlock(&pool.mu);
    openblas_set_num_threads(n);
}

int tg_threads_get(void)
{
    int n = atomic_load(&g_threads);
    return n > 0 ? n : online_cores();
}

/* Chunk c of T over [0, n): [n*c/T, n*(c+1)/T), empty chunks skipped. */
static void run_chunk(const pool_job *j, int c)
{
    int begin = (int)((int64_t)j->n * c / j->chunks), end = (int)((int64_t)j->n * (c + 1) / j->chunks);
    if (begin < end) j->fn(j->ctx, begin, end);
}

static void run_serial(const pool_job *j)
{
    bool was_inside = tl_inside;
    tl_inside = true;
    for (int c = 0; c < j->chunks; c++) run_chunk(j, c);
    tl_inside = was_inside;
}

/* Before sleeping on a condition variable, a thread busy-waits this long for
 * it to come true: a worker between two GEMMs of a step, the caller for the
 * last chunk. Waking a sleeping thread (futex + an idle vCPU) costs ~20 us,
 * which doubled the time of a 1664x64x64 product on 2 threads; 50 us of
 * spinning per job is the most this costs a shared machine. The spin yields
 * every few microseconds: when the scheduler has put the worker on the
 * caller's CPU (it does, for tens of ms after a new thread starts), a pure
 * spin made every 128x128x64 product wait 2 x 50 us for the other thread. */
#define SPIN_NS 50000L

static long elapsed_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins until *gen != seen, for at most SPIN_NS. */
static void spin_for_job(atomic_ulong *gen, unsigned long seen)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 64; i++, cpu_relax())
            if (atomic_load(gen) != seen) return;
        sched_yield();
    } while (elapsed_ns(&t0) < SPIN_NS);
}

/* Spins until *pending == 0, for at most SPIN_NS. */
static void spin_for_done(atomic_int *pending)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 64; i++, cpu_relax())
            if (atomic_load(pending) == 0) return;
        sched_yield();
    } while (elapsed_ns(&t0) < SPIN_NS);
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    tl_inside = true;
    pthread_mutex_lock(&pool.mu);
    unsigned long seen = pool.start_gen[id];
    for (;;) {
        pthread_mutex_unlock(&pool.mu);
        spin_for_job(&pool.generation, seen);
        pthread_mutex_lock(&pool.mu);
        while (pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.mu);
        seen = pool.generation;
        pool_job j = pool.job;  /* stays valid: the caller waits for every participant */
        pthread_mutex_unlock(&pool.mu);
        if (id < j.chunks) run_chunk(&j, id);
        pthread_mutex_lock(&pool.mu);
        if (id < j.chunks && --pool.pending == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* The child of a fork has only the forking thread: forget the workers. */
static void atfork_child(void)
{
    pthread_mutex_init(&pool.mu, NULL);
    pthread_mutex_init(&pool.busy, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.pending = 0;
    pool.create_failed = false;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* With `busy` held: makes sure workers 1..T-1 exist. */
static bool ensure_workers(int T)
{
    pthread_once(&g_atfork_once, register_atfork);
    pthread_mutex_lock(&pool.mu);
    while (pool.workers < T - 1 && !pool.create_failed) {
        int id = pool.workers + 1;
        pool.start_gen[id] = pool.generation;
        if (pthread_create(&pool.tid[id], NULL, worker_main, (void *)(intptr_t)id) != 0)
            pool.create_failed = true;
        else
            pool.workers = id;
    }
    bool ok = pool.workers >= T - 1;
    pthread_mutex_unlock(&pool.mu);
    return ok;
}

void tg_parallel_for(int n, void (*fn)(void *ctx, int begin, int end), void *ctx)
{
    if (n <= 0) return;
    pool_job j = {fn, ctx, n, tg_threads_get()};
    if (j.chunks <= 1 || tl_inside || pthread_mutex_trylock(&pool.busy) != 0) {
        run_serial(&j);
        return;
    }
    if (!ensure_workers(j.chunks)) {
        pthread_mutex_unlock(&pool.busy);
        run_serial(&j);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    pool.job = j;
    pool.pending = j.chunks - 1;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    tl_inside = true;
    run_chunk(&j, 0);
    tl_inside = false;

    spin_for_done(&pool.pending);
    pthread_mutex_lock(&pool.mu);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.busy);
}
