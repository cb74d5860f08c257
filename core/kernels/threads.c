/* tapegrad: the persistent thread pool (see core/kernels/threads.h).
 *
 * One job at a time: the caller that gets `busy` publishes the job, bumps
 * `generation` and broadcasts. Then everyone claims chunks from `claim`, the
 * caller from the front and the workers from the back, until none is left,
 * and the caller waits only for chunks a worker has claimed and not
 * finished. A worker the scheduler has not run yet (the other core busy with
 * another process, or the worker just waking up) therefore never holds a job
 * up: the caller runs the chunks it does not get to. A job has up to
 * CHUNKS_PER_THREAD chunks per thread, so a late worker still takes a share.
 * Workers live for the process (blocked in pthread_cond_wait, reachable from
 * `pool`), so there is nothing to join or free at exit.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include "threads.h"
#include "spin.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "../engine/error.h"

#define TG_MAX_THREADS 64
#define CHUNKS_PER_THREAD 4

/* Before sleeping on a condition variable, a thread busy-waits for it to
 * come true: a worker for the next job, the caller for the chunks workers
 * are running for SPIN_DONE_NS. Waking a sleeping thread costs the waker a
 * system call and the sleeper 10-100 us when the CPUs are virtual (futex, an
 * IPI to an idle vCPU), so a worker stays awake through the short gaps
 * between the jobs of a training step; but a worker that spins through a
 * long serial stretch (the optimizer's small tensors, a data loader, an
 * evaluation) burns a core for nothing. So the pool keeps counts of the
 * recent gaps between one job's end and the next job (or the next loop that
 * would have been split had a worker been awake), in power-of-two buckets
 * from 2 us, halved every GAP_HALF_LIFE gaps, and a worker spins for the
 * budget S in [SPIN_MIN_NS, SPIN_MAX_NS] that minimises, over those gaps,
 * the spinning (min(gap, S)) plus WAKE_COST_NS for every gap longer than S
 * (the next job then starts without the worker, which joins it 10-100 us
 * late or not at all). With mostly short gaps and a few long ones it spins
 * just past the short ones; a loop of back-to-back jobs keeps SPIN_MAX_NS,
 * the 1 ms OpenMP runtimes spin. A spin does not yield while it has a CPU
 * of its own: under load sched_yield hands the CPU to another process until
 * the next scheduler tick (milliseconds), and since the caller runs every
 * chunk no worker has claimed, a worker that is not running delays nothing.
 * A worker on the caller's CPU (where the scheduler puts a new or newly
 * woken thread when the other CPU is busy) does yield, so the caller runs
 * and the load balancer can move the worker to the other CPU; it claims no
 * chunk there, which would only take turns with the caller. */
#define SPIN_MIN_NS 64000L
#define SPIN_MAX_NS 1024000L
#define WAKE_COST_NS 100000L
#define GAP_BUCKETS 12        /* [0, 2) us, [2, 4), ..., [1024, 2048), [2048, inf) */
#define GAP_HALF_LIFE 256
#define GAP_CHOOSE_EVERY 16   /* gaps between two choices of the budget */

typedef struct pool_job {
    void (*fn)(void *ctx, int begin, int end);
    void *ctx;
    int n, chunks;
} pool_job;

static struct {
    pthread_mutex_t mu;          /* guards everything below but the atomics */
    pthread_cond_t wake, done;   /* workers wait for a new generation; the caller for unfinished == 0 */
    pthread_mutex_t busy;        /* held by the one caller whose job is running */
    pthread_t tid[TG_MAX_THREADS];
    unsigned long start_gen[TG_MAX_THREADS];  /* generation when worker w was created */
    int workers;                 /* created so far: ids 1..workers */
    bool create_failed;          /* stop retrying pthread_create until tg_threads_set */
    atomic_ulong generation;     /* written under mu; read without it while spinning */
    unsigned long nudges;        /* bumped to wake sleeping workers without a job */
    atomic_long last_nudge_ns;   /* when the last nudge was sent */
    /* (generation mod 2^32) << 32 | front << 16 | back: chunks [front, back)
     * are unclaimed; the caller takes them from the front, workers from the
     * back, so with both running each gets the half it would in a fixed
     * split (and keeps that half of the data in its cache from op to op). A
     * worker still holding an older job's copy cannot claim a chunk of the
     * new one. */
    atomic_uint_fast64_t claim;
    atomic_int unfinished;       /* chunks of the current job not finished */
    atomic_int caller_cpu, worker_cpu;  /* where the last caller and worker ran (-1: unknown) */
    atomic_int spinning;         /* workers spinning for the next job (the others sleep) */
    atomic_long calm_from_ns;    /* after a stall: no small splits before this time */
    atomic_long calm_ns;         /* the length of the last calm */
    atomic_long spin_ns;         /* how long a worker spins for the next job (learnt, see spin_choose) */
    atomic_long last_end_ns;     /* when the last job (or nudge) ended: the start of the current gap */
    unsigned gap_count[GAP_BUCKETS];  /* recent gaps between jobs, by length (under mu) */
    unsigned gap_events;         /* gaps recorded since the counts were last halved */
    pool_job job;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER, .busy = PTHREAD_MUTEX_INITIALIZER,
          .caller_cpu = -1, .worker_cpu = -1, .spin_ns = SPIN_MAX_NS};

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

int tg_parallel_chunks(int n)
{
    int c = tg_threads_get() * CHUNKS_PER_THREAD;
    return n < c ? n : c;
}

/* Chunk c of C over [0, n): [n*c/C, n*(c+1)/C), empty chunks skipped. */
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

/* A wait for a worker's chunk this much longer than the caller's own chunks
 * is a stall. After one, small loops stay on one thread for CALM_PER_STALL
 * times the wait (at least CALM_MIN_NS), twice as long as the last time (up
 * to CALM_MAX_NS) after a stall that follows the last calm within its
 * length. So a lone hiccup of a virtual CPU (tens of us, a few a second on
 * a quiet cloud machine) costs about a millisecond of single-thread small
 * loops, where a fixed 100 ms calm took 25% of the toy-model step's splits
 * away; and a core taken by another process (stalls of a scheduler slice,
 * again and again) soon keeps small loops on one thread for seconds: under
 * load a calm that ended in another stall so soon lost the 2-thread step
 * 20-50% to 1 thread. */
#define STALL_NS 20000L
#define CALM_PER_STALL 16
#define CALM_MIN_NS 1000000L
#define CALM_MAX_NS 1600000000L
#define SPIN_DONE_NS 500000L

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

static int this_cpu(void)
{
#ifdef __linux__
    return sched_getcpu();
#else
    return -1;
#endif
}

/* This thread runs on the CPU where `other` last ran. */
static bool on_cpu_of(const atomic_int *other)
{
    int c = this_cpu();
    return c >= 0 && c == atomic_load(other);
}

/* Spins until *gen != seen, for at most the learnt budget (spin_choose). */
static void spin_for_job(atomic_ulong *gen, unsigned long seen)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long budget = atomic_load(&pool.spin_ns);
    atomic_fetch_add(&pool.spinning, 1);
    do {
        for (int i = 0; i < 256; i++, cpu_relax())
            if (atomic_load(gen) != seen) goto out;
        if (on_cpu_of(&pool.caller_cpu)) sched_yield();
    } while (elapsed_ns(&t0) < budget);
out:
    atomic_fetch_sub(&pool.spinning, 1);
}

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The spin budget S (a bucket's upper end, SPIN_MIN_NS to SPIN_MAX_NS) with
 * the least sum over the counted gaps of min(gap, S), plus WAKE_COST_NS per
 * gap longer than S; a gap counts as 1.5 times its bucket's lower end. Ties
 * go to the longer spin. Under pool.mu. */
static void spin_choose(void)
{
    long best = SPIN_MAX_NS;
    double best_cost = -1;
    for (long s = SPIN_MAX_NS; s >= SPIN_MIN_NS; s /= 2) {
        double cost = 0;
        for (int b = 0; b < GAP_BUCKETS; b++) {
            double gap = b == 0 ? 1000.0 : 1500.0 * (double)(1L << b);
            cost += pool.gap_count[b] * (gap < (double)s ? gap : (double)(s + WAKE_COST_NS));
        }
        if (best_cost < 0 || cost < best_cost) best = s, best_cost = cost;
    }
    atomic_store(&pool.spin_ns, best);
}

/* Counts the gap from the last job's end to now, when a job (or a loop that
 * would have been one) starts. Under pool.mu. */
static void gap_count(long now)
{
    long end = atomic_load(&pool.last_end_ns);
    if (end == 0) return;
    long us = (now - end) / 1000;
    int b = 0;
    while (b < GAP_BUCKETS - 1 && us >= 2L << b) b++;
    pool.gap_count[b]++;
    if (++pool.gap_events % GAP_CHOOSE_EVERY) return;
    spin_choose();
    if (pool.gap_events < GAP_HALF_LIFE) return;
    pool.gap_events = 0;
    for (b = 0; b < GAP_BUCKETS; b++) pool.gap_count[b] /= 2;
}

/* A calm (after a stall) holds at time now. */
static bool calm_at(long now) { return now < atomic_load(&pool.calm_from_ns); }

bool tg_parallel_calm(void) { return calm_at(now_ns()); }

bool tg_parallel_awake(void) { return atomic_load(&pool.spinning) > 0 && !tg_parallel_calm(); }

long tg_parallel_spin_ns(void) { return atomic_load(&pool.spin_ns); }

static bool ensure_workers(int T);

void tg_parallel_wake(void)
{
    int T = tg_threads_get();
    long now = now_ns(), last = atomic_load(&pool.last_nudge_ns);
    if (T < 2 || tl_inside || now - last < atomic_load(&pool.spin_ns) || calm_at(now)) return;
    if (!atomic_compare_exchange_strong(&pool.last_nudge_ns, &last, now)) return;  /* another thread nudges */
    if (!ensure_workers(T)) return;
    atomic_store(&pool.caller_cpu, this_cpu());
    pthread_mutex_lock(&pool.mu);
    /* a loop the workers slept through: the gap it ends counts, and the next starts now */
    gap_count(now);
    atomic_store(&pool.last_end_ns, now);
    pool.nudges++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
}

/* Spins until *unfinished == 0, for at most SPIN_DONE_NS. */
static void spin_for_done(atomic_int *unfinished)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 256; i++, cpu_relax())
            if (atomic_load(unfinished) == 0) return;
    } while (!on_cpu_of(&pool.worker_cpu) && elapsed_ns(&t0) < SPIN_DONE_NS);
}

static uint_fast64_t claim_word(unsigned long gen, int front, int back)
{
    return (uint_fast64_t)(gen & 0xffffffffu) << 32 | (uint_fast64_t)front << 16 | (uint_fast64_t)back;
}

/* Claims and runs chunks of job j (generation gen), from the front (the
 * caller) or the back (workers), until none is left; returns how many it
 * ran, *last set when this thread finished the job's last chunk. */
static int run_claimed(const pool_job *j, unsigned long gen, bool from_back, bool *last)
{
    const uint_fast64_t tag = claim_word(gen, 0, 0);
    int ran = 0;
    *last = false;
    uint_fast64_t c = atomic_load(&pool.claim);
    for (;;) {
        int front = (int)(c >> 16 & 0xffff), back = (int)(c & 0xffff);
        if ((c & ~(uint_fast64_t)0xffffffffu) != tag || front >= back) break;
        int mine = from_back ? back - 1 : front;
        uint_fast64_t next = from_back ? claim_word(gen, front, back - 1) : claim_word(gen, front + 1, back);
        if (!atomic_compare_exchange_weak(&pool.claim, &c, next)) continue;
        run_chunk(j, mine);
        ran++;
        *last = atomic_fetch_sub(&pool.unfinished, 1) == 1;
        c = atomic_load(&pool.claim);
    }
    return ran;
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    tl_inside = true;
    pthread_mutex_lock(&pool.mu);
    unsigned long seen = pool.start_gen[id], nudged = pool.nudges;
    for (;;) {
        pthread_mutex_unlock(&pool.mu);
        spin_for_job(&pool.generation, seen);
        pthread_mutex_lock(&pool.mu);
        while (pool.generation == seen && pool.nudges == nudged) pthread_cond_wait(&pool.wake, &pool.mu);
        nudged = pool.nudges;
        if (pool.generation == seen) continue;  /* nudged: spin for the jobs to come */
        seen = pool.generation;
        pool_job j = pool.job;  /* a copy: the caller may finish the job without us */
        pthread_mutex_unlock(&pool.mu);
        /* woken on the caller's CPU, it would only take turns with the
           caller; and a worker made for an earlier, larger tg_threads_set
           sits out */
        bool last = false;
        if (!on_cpu_of(&pool.caller_cpu) && id < tg_threads_get()) {
            atomic_store(&pool.worker_cpu, this_cpu());
            run_claimed(&j, seen, true, &last);
        }
        pthread_mutex_lock(&pool.mu);
        if (last) pthread_cond_signal(&pool.done);
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
    pool.unfinished = 0;
    pool.spinning = 0;
    pool.create_failed = false;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* Makes sure workers 1..T-1 exist. */
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
    TG_REFUSE_NULL(fn, "fn", );
    if (n <= 0) return;
    int T = tg_threads_get();
    pool_job j = {fn, ctx, n, tg_parallel_chunks(n)};
    if (j.chunks <= 1 || T < 2 || tl_inside || pthread_mutex_trylock(&pool.busy) != 0) {
        run_serial(&j);
        return;
    }
    if (!ensure_workers(T)) {
        pthread_mutex_unlock(&pool.busy);
        run_serial(&j);
        return;
    }
    atomic_store(&pool.caller_cpu, this_cpu());
    long t_pub = now_ns();
    pthread_mutex_lock(&pool.mu);
    gap_count(t_pub);
    pool.job = j;
    unsigned long gen = ++pool.generation;
    atomic_store(&pool.unfinished, j.chunks);
    atomic_store(&pool.claim, claim_word(gen, 0, j.chunks));
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    long t0 = now_ns();
    bool last;
    tl_inside = true;
    int mine = run_claimed(&j, gen, false, &last);
    tl_inside = false;
    long t1 = now_ns();

    spin_for_done(&pool.unfinished);
    pthread_mutex_lock(&pool.mu);
    while (atomic_load(&pool.unfinished) > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.busy);
    /* A stall: the caller waited for a worker's chunk far longer than its own
     * chunks took, so the worker lost its CPU mid-chunk (another process on
     * its core). Small loops then run on one thread for a while: where such a
     * stall costs milliseconds, splitting a 5-200 us loop cannot pay. */
    long t2 = now_ns();
    atomic_store(&pool.last_end_ns, t2);
    if (mine > 0 && t2 - t1 > 2 * (t1 - t0) / mine + STALL_NS) {
        long len = atomic_load(&pool.calm_ns), fresh = CALM_PER_STALL * (t2 - t1);
        if (t2 - atomic_load(&pool.calm_from_ns) < len) fresh = fresh > 2 * len ? fresh : 2 * len;
        len = fresh < CALM_MIN_NS ? CALM_MIN_NS : fresh > CALM_MAX_NS ? CALM_MAX_NS : fresh;
        atomic_store(&pool.calm_ns, len);
        atomic_store(&pool.calm_from_ns, t2 + len);
    }
}
