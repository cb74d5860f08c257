/* Ops whose loops run on the thread pool give the same bits on one thread and
 * on several (core/kernels/parallel.c cuts rows or columns, never a sum), and
 * the pool itself: its size rule, and chunks claimed by whoever comes first.
 * Shapes are large enough that the size rule splits them while the worker is
 * awake, which wake_pool makes likely. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <tapegrad/core/kernels/threads.h>
#include "../core/kernels/spin.h"
#include "../core/kernels/gemm.h"
#include "test_util.h"

enum { ROWS = 2048, C = 96 };

typedef struct run {
    tg_tensor *y;                   /* forward output, copied out of the arena */
    tg_real *dx, *dw, *db;          /* grads after backward */
} run;

/* The pool's timing policy (when a loop splits, how long a stall calms it,
 * how long a worker spins) is tested in the release build on a real CPU:
 * under qemu-user the threads' timing is the emulator's, under
 * AddressSanitizer the sanitizer's, and on a loaded machine each made these
 * tests fail now and then. Same-bits and claim-once tests run everywhere. */
#if defined(TG_EMULATED)
#define SKIP_POOL_TIMING() cr_skip_test("under qemu-user the threads' timing is the emulator's")
#elif defined(__SANITIZE_ADDRESS__)
#define SKIP_POOL_TIMING() cr_skip_test("under AddressSanitizer the threads' timing is the sanitizer's")
#else
#define SKIP_POOL_TIMING() ((void)0)
#endif

static void nothing(void *ctx, int begin, int end) { (void)ctx, (void)begin, (void)end; }

/* A job for the pool, so its worker is spinning (not asleep) when the op
 * under test asks tg_parallel_pays. */
static void wake_pool(void) { tg_parallel_for(2, nothing, NULL); }

/* loss = sum(f(x) * r), so every output element gets its own upstream grad */
static void run_once(int threads, int op, tg_tensor *x, tg_tensor *w, tg_tensor *b, tg_tensor *r, run *out)
{
    tg_threads_set(threads);
    wake_pool();
    tg_tape *t = tg_tape_new();
    cr_assert_not_null(t);
    memset(x->grad, 0, x->size * sizeof(tg_real));
    memset(w->grad, 0, w->size * sizeof(tg_real));
    memset(b->grad, 0, b->size * sizeof(tg_real));
    tg_tensor *y = op == 0   ? tg_layernorm(t, x, w, b, 1e-5)
                   : op == 1 ? tg_gelu(t, x)
                   : op == 2 ? tg_relu(t, x)
                   : op == 3 ? tg_add(t, tg_mul(t, x, w), b)       /* broadcast [C]: dw, db are sums */
                   : op == 4 ? tg_logsumexp_dim(t, x, 0, true)     /* [1, C], columns */
                   : op == 5 ? tg_max_dim(t, tg_sigmoid(t, x), -1, true)
                             : tg_div(t, tg_sum_dim(t, x, 1, true), tg_exp(t, b));  /* [ROWS, 1] / [C] */
    tg_tensor *loss = tg_sum(t, tg_mul(t, y, r));  /* y broadcast to [ROWS, C] */
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    out->y = tg_tensor_alloc(y->ndim, y->shape);
    memcpy(out->y->data, y->data, y->size * sizeof(tg_real));
    out->dx = malloc(x->size * sizeof(tg_real));
    out->dw = malloc(w->size * sizeof(tg_real));
    out->db = malloc(b->size * sizeof(tg_real));
    memcpy(out->dx, x->grad, x->size * sizeof(tg_real));
    memcpy(out->dw, w->grad, w->size * sizeof(tg_real));
    memcpy(out->db, b->grad, b->size * sizeof(tg_real));
    tg_tape_free(t);
}

static void run_free(run *r)
{
    tg_tensor_free(r->y);
    free(r->dx);
    free(r->dw);
    free(r->db);
}

static void same_bits_on_1_and_2_threads(int op, const char *name)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_tensor *x = tu_rand(&rng, -3, 3, 2, (int[]){ROWS, C}), *r = tu_rand(&rng, -1, 1, 2, (int[]){ROWS, C});
    tg_tensor *w = tu_rand(&rng, 0.5, 1.5, 1, (int[]){C}), *b = tu_rand(&rng, -1, 1, 1, (int[]){C});
    r->requires_grad = false;
    cr_assert(tg_tensor_alloc_grad(x) && tg_tensor_alloc_grad(w) && tg_tensor_alloc_grad(b));
    run one, two;
    run_once(1, op, x, w, b, r, &one);
    run_once(2, op, x, w, b, r, &two);
    cr_expect(memcmp(one.y->data, two.y->data, one.y->size * sizeof(tg_real)) == 0, "%s: forward differs", name);
    cr_expect(memcmp(one.dx, two.dx, x->size * sizeof(tg_real)) == 0, "%s: dx differs", name);
    cr_expect(memcmp(one.dw, two.dw, w->size * sizeof(tg_real)) == 0, "%s: dw differs", name);
    cr_expect(memcmp(one.db, two.db, b->size * sizeof(tg_real)) == 0, "%s: db differs", name);
    double dx_norm = 0;
    for (size_t i = 0; i < x->size; i++) dx_norm += fabs((double)one.dx[i]);
    cr_expect_gt(dx_norm, 0, "%s: no gradient reached x", name);
    run_free(&one);
    run_free(&two);
    tg_tensor *all[] = {x, r, w, b};
    tu_free_all(all, 4);
    tg_threads_set(0);
}

Test(parallel, layernorm_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(0, "layernorm"); }
Test(parallel, gelu_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(1, "gelu"); }
Test(parallel, relu_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(2, "relu"); }
Test(parallel, broadcast_bias_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(3, "mul, add [C]"); }
Test(parallel, logsumexp_dim_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(4, "logsumexp_dim"); }
Test(parallel, max_dim_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(5, "sigmoid, max_dim"); }
Test(parallel, sum_dim_div_same_bits_on_1_and_2_threads) { same_bits_on_1_and_2_threads(6, "sum_dim, div, exp"); }

/* sdpa cuts its batch loop into the pool's chunks (core/ops/nn/attention.c) */
static void sdpa_once(int threads, tg_tensor *const qkv[3], tg_tensor *r, tg_real *out, tg_real *grads[3])
{
    tg_threads_set(threads);
    wake_pool();
    tg_tape *t = tg_tape_new();
    cr_assert_not_null(t);
    for (int i = 0; i < 3; i++) memset(qkv[i]->grad, 0, qkv[i]->size * sizeof(tg_real));
    tg_mask m = {.causal = true};
    tg_sdpa_opts o = {.mask = &m};
    tg_tensor *y = tg_sdpa(t, qkv[0], qkv[1], qkv[2], &o, NULL);
    cr_assert_eq(tg_backward(t, tg_sum(t, tg_mul(t, y, r))), 0, "%s", tg_tape_error(t));
    memcpy(out, y->data, y->size * sizeof(tg_real));
    for (int i = 0; i < 3; i++) memcpy(grads[i], qkv[i]->grad, qkv[i]->size * sizeof(tg_real));
    tg_tape_free(t);
}

Test(parallel, sdpa_same_bits_on_1_and_2_threads)
{
    enum { B = 6, H = 2, L = 32, D = 16, N = B * H * L * D };
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_tensor *qkv[3], *r = tu_rand(&rng, -1, 1, 4, (int[]){B, H, L, D});
    for (int i = 0; i < 3; i++) {
        qkv[i] = tu_rand(&rng, -1, 1, 4, (int[]){B, H, L, D});
        cr_assert(tg_tensor_alloc_grad(qkv[i]));
    }
    r->requires_grad = false;
    static tg_real out[2][N], g[2][3][N];
    sdpa_once(1, qkv, r, out[0], (tg_real *[]){g[0][0], g[0][1], g[0][2]});
    sdpa_once(2, qkv, r, out[1], (tg_real *[]){g[1][0], g[1][1], g[1][2]});
    cr_expect(memcmp(out[0], out[1], sizeof out[0]) == 0, "sdpa: forward differs");
    for (int i = 0; i < 3; i++) cr_expect(memcmp(g[0][i], g[1][i], sizeof g[0][i]) == 0, "sdpa: grad %d differs", i);
    double gq = 0;
    for (int e = 0; e < N; e++) gq += fabs((double)g[0][0][e]);
    cr_expect_gt(gq, 0, "sdpa: no gradient reached q");
    tu_free_all(qkv, 3);
    tg_tensor_free(r);
    tg_threads_set(0);
}

/* The whole toy model (seqtask's defaults, both attention modes): loss and
 * every parameter grad are the same bits on 1 and 2 threads in the float
 * build, which is why seqtask's --threads need not be stored in a checkpoint. */
static void model_grads(int threads, tg_mha_mode mode, tg_real *loss, tg_real *grad, size_t *numel)
{
    enum { B = 64, T = 26, V = 20 };
    static int32_t ids[B * T], targets[B * T], lens[B];
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    for (int i = 0; i < B * T; i++) ids[i] = (int32_t)(tg_rng_u32(&rng) % V), targets[i] = ids[i];
    for (int b = 0; b < B; b++) lens[b] = 10 + b % (T - 9);
    tg_threads_set(threads);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = V, .d_model = 64, .n_layers = 2, .n_heads = 4, .max_len = T, .mode = mode};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){B, T});
    tg_tensor *logits = tg_model_forward(t, &m, x, &(tg_model_opts){.lens = tu_index(t, TG_I32, lens, 1, (int[]){B})},
                                         NULL);
    tg_tensor *l = tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, targets, 2, (int[]){B, T}), TG_IGNORE);
    cr_assert_eq(tg_backward(t, l), 0, "%s", tg_tape_error(t));
    *loss = l->data[0];
    *numel = tg_params_numel(p);
    memcpy(grad, tg_params_grad(p), *numel * sizeof(tg_real));
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
    tg_threads_set(0);
}

static void model_same_bits(tg_mha_mode mode)
{
#ifdef TAPEGRAD_DOUBLE
    cr_skip_test("the double build's GEMMs are OpenBLAS's dgemm, whose threads may cut K");
#endif
    if (tg_gemm_get_kernel() == TG_GEMM_BLAS)
        cr_skip_test("no GEMM kernel of ours on this CPU: cblas_sgemm's threads may cut K");
    static tg_real g1[200000], g2[200000];
    tg_real l1, l2;
    size_t n1, n2;
    model_grads(1, mode, &l1, g1, &n1);
    model_grads(2, mode, &l2, g2, &n2);
    cr_assert_lt(n1, sizeof g1 / sizeof g1[0]);
    cr_assert_eq(n1, n2);
    cr_expect(memcmp(&l1, &l2, sizeof l1) == 0, "loss %.9g vs %.9g", (double)l1, (double)l2);
    cr_expect(memcmp(g1, g2, n1 * sizeof(tg_real)) == 0, "parameter grads differ");
}

Test(parallel, model_same_bits_on_1_and_2_threads_fused) { model_same_bits(TG_MHA_FUSED); }
Test(parallel, model_same_bits_on_1_and_2_threads_per_head) { model_same_bits(TG_MHA_PER_HEAD); }

/* AdamW cuts a parameter's elements across the pool (optim/adam.c): three
 * steps on 1 and on 2 threads give the same bits, on a size whose cut falls
 * inside vectors (a step is ~100 us of work, split while the worker spins). */
static void adamw_steps(int threads, tg_real *out, int n)
{
    tg_threads_set(threads);
    tg_params *p = tg_params_new();
    cr_assert_not_null(p);
    tg_tensor *w = tg_params_add(p, "w", 1, (int[]){n});
    cr_assert_not_null(w);
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    for (int i = 0; i < n; i++) w->data[i] = (tg_real)(2 * tg_rng_uniform(&rng) - 1);
    tg_optim_opts o = tg_optim_defaults(TG_ADAMW);
    o.weight_decay = 0.1;
    tg_optim *opt = tg_optim_new(p, &o);
    cr_assert_not_null(opt);
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < n; i++) w->grad[i] = (tg_real)(2 * tg_rng_uniform(&rng) - 1);
        wake_pool();
        cr_assert_eq(tg_optim_step(opt), 0);
    }
    memcpy(out, w->data, (size_t)n * sizeof(tg_real));
    tg_optim_free(opt);
    tg_params_free(p);
}

Test(parallel, adamw_same_bits_on_1_and_2_threads)
{
    enum { N = 100003 };
    static tg_real one[N], two[N];
    adamw_steps(1, one, N);
    adamw_steps(2, two, N);
    cr_expect(memcmp(one, two, sizeof one) == 0, "adamw: parameters differ");
    double moved = 0;
    for (int i = 0; i < N; i++) moved += fabs((double)one[i]);
    cr_expect_gt(moved, 0);
    tg_threads_set(0);
}

/* The size rule: never on one thread; below a few microseconds of work never;
 * from a fifth of a millisecond always, worker awake or not. */
Test(parallel, size_rule)
{
    tg_threads_set(1);
    cr_expect_not(tg_parallel_pays(1e9), "split on one thread");
    tg_threads_set(2);
    cr_expect_not(tg_parallel_pays(0), "split an empty loop");
    cr_expect_not(tg_parallel_pays(1000), "split 1 us of work");
    cr_expect(tg_parallel_pays(1e6), "did not split 1 ms of work");
    SKIP_POOL_TIMING();
    /* in between, it splits while a worker spins for work (waking one costs more) */
    int checked = 0;
    for (int i = 0; i < 100 && checked < 10; i++) {
        if (i % 2) wake_pool();
        bool before = tg_parallel_awake(), pays = tg_parallel_pays(20000), after = tg_parallel_awake();
        if (before != after) continue;  /* the worker fell asleep or woke meanwhile */
        cr_expect_eq(pays, before, "20 us of work: split %d, worker awake %d", pays, before);
        checked++;
    }
    cr_expect_eq(checked, 10);
    tg_threads_set(0);
}

typedef struct claim_ctx {
    atomic_int hits[64];
    atomic_int calls;
} claim_ctx;

static void claim_cover(void *p, int begin, int end)
{
    claim_ctx *c = p;
    atomic_fetch_add(&c->calls, 1);
    for (int i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* Thousands of jobs back to back, some after a pause long enough for the
 * workers to fall asleep: every index of every job runs exactly once, in
 * exactly tg_parallel_chunks(n) calls, whoever claims them (a worker still
 * holding an earlier job must not run a chunk of the next). */
Test(parallel, chunks_claimed_exactly_once_over_many_jobs)
{
    for (int T = 2; T <= 4; T++) {
        tg_threads_set(T);
        for (int job = 0; job < 3000; job++) {
            int n = 1 + job % 64;
            claim_ctx c;
            for (int i = 0; i < 64; i++) atomic_init(&c.hits[i], 0);
            atomic_init(&c.calls, 0);
            if (job % 500 == 499) nanosleep(&(struct timespec){0, 3000000}, NULL);  /* > the workers' spin */
            tg_parallel_for(n, claim_cover, &c);
            for (int i = 0; i < n; i++) cr_assert_eq(atomic_load(&c.hits[i]), 1, "T=%d job %d n=%d i=%d", T, job, n, i);
            for (int i = n; i < 64; i++) cr_assert_eq(atomic_load(&c.hits[i]), 0, "T=%d job %d n=%d i=%d", T, job, n, i);
            cr_assert_eq(atomic_load(&c.calls), tg_parallel_chunks(n), "T=%d job %d n=%d", T, job, n);
        }
    }
    tg_threads_set(0);
}

static long now_ns_test(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Which threads ran a job's chunks: each chunk waits ~20 us, so that every
 * awake worker gets to claim some. */
typedef struct who_ctx {
    pthread_t ran[16];
    atomic_int n;
} who_ctx;

static void who_runs(void *p, int begin, int end)
{
    who_ctx *w = p;
    for (int i = begin; i < end; i++) w->ran[atomic_fetch_add(&w->n, 1)] = pthread_self();
    long t0 = now_ns_test();
    while (now_ns_test() - t0 < 20000) continue;
}

static int threads_that_ran(int T, int jobs)
{
    pthread_t seen[8];
    int distinct = 0;
    for (int job = 0; job < jobs; job++) {
        who_ctx w;
        atomic_init(&w.n, 0);
        tg_parallel_for(16, who_runs, &w);
        cr_assert_eq(atomic_load(&w.n), 16, "T=%d: every index once", T);
        for (int i = 0; i < 16; i++) {
            bool known = false;
            for (int k = 0; k < distinct; k++) known = known || pthread_equal(seen[k], w.ran[i]);
            if (!known && distinct < 8) seen[distinct++] = w.ran[i];
        }
    }
    return distinct;
}

/* Workers made for 3 threads stay, but a later tg_threads_set(2) gets at most
 * 2 threads' work, and tg_threads_set(1) only the caller's: a worker of the
 * larger pool claimed chunks of every later job. */
Test(parallel, fewer_threads_than_workers_made_uses_only_as_many)
{
    tg_threads_set(3);
    cr_assert_geq(threads_that_ran(3, 50), 1);
    tg_threads_set(2);
    int two = threads_that_ran(2, 200);
    tg_threads_set(1);
    int one = threads_that_ran(1, 50);
    tg_threads_set(0);
    cr_assert_leq(two, 2, "tg_threads_set(2) after 3: %d threads ran chunks", two);
    cr_assert_eq(one, 1, "tg_threads_set(1) after 3: %d threads ran chunks", one);
}

typedef struct stall_ctx {
    pthread_t caller;
    long worker_sleep_ns;
    atomic_int worker_ran, caller_ran;
    long loop_ns;  /* how long the last loop took */
} stall_ctx;

/* On the caller, ~20 us of work; on a worker, a sleep (as if its CPU were
 * taken by another process mid-chunk). */
static void stall_chunk(void *p, int begin, int end)
{
    (void)begin, (void)end;
    stall_ctx *s = p;
    if (pthread_equal(pthread_self(), s->caller)) {
        atomic_store(&s->caller_ran, 1);
        long t0 = now_ns_test();
        while (now_ns_test() - t0 < 20000) continue;
    } else {
        atomic_store(&s->worker_ran, 1);
        nanosleep(&(struct timespec){0, s->worker_sleep_ns}, NULL);
    }
}

/* Runs the loop until a run where both threads ran chunks calms the pool.
 * A loop is a stall only when both threads ran chunks of it and the caller
 * was not itself descheduled for milliseconds mid-chunk, which a loaded
 * machine (or qemu) can do to any one loop; so the loop is tried until the
 * pool calms down (up to 2 s: a new worker shares the caller's CPU for the
 * first tens of ms). Returns whether both threads ever ran chunks. */
static bool stall_until_calm(stall_ctx *s)
{
    int both = 0;
    for (int i = 0; i < 1000 && both < 50; i++) {
        atomic_init(&s->worker_ran, 0);
        atomic_init(&s->caller_ran, 0);
        wake_pool();
        long t0 = now_ns_test();
        tg_parallel_for(64, stall_chunk, s);
        s->loop_ns = now_ns_test() - t0;
        if (atomic_load(&s->worker_ran) && atomic_load(&s->caller_ran)) {
            both++;
            if (tg_parallel_calm()) break;
        } else {
            nanosleep(&(struct timespec){0, 2000000}, NULL);
        }
    }
    return both > 0;
}

/* After the caller waited far longer for a worker's chunk than its own
 * chunks took, small loops run on one thread (and wake no one) for a while:
 * on a machine where that happens, splitting them cannot pay. The test fails
 * if the pool never calms while both threads keep running chunks. */
Test(parallel, a_stalled_worker_keeps_small_loops_on_one_thread)
{
    SKIP_POOL_TIMING();
    tg_threads_set(2);
    stall_ctx s = {.caller = pthread_self(), .worker_sleep_ns = 3000000};
    if (!stall_until_calm(&s)) cr_skip_test("the worker never ran a chunk beside the caller (a busy machine)");
    cr_expect(tg_parallel_calm(), "no calm after a stall");
    cr_expect_not(tg_parallel_awake(), "small loops still split after a stall");
    cr_expect_not(tg_parallel_pays(20000), "20 us of work split after a stall");
    cr_expect(tg_parallel_pays(1e6), "1 ms of work not split after a stall");
    tg_threads_set(0);
}

/* How long the pool stays calm from now, polled every 0.5 ms (up to 5 s). */
static long calm_left_ns(void)
{
    long t0 = now_ns_test(), t = t0;
    while (tg_parallel_calm() && (t = now_ns_test()) - t0 < 5000000000L)
        nanosleep(&(struct timespec){0, 500000}, NULL);
    return t - t0;
}

/* The calm lasts in proportion to the stall: a worker that lost its CPU for
 * ~150 us (a virtual CPU's hiccup) keeps small loops on one thread for a
 * millisecond or few, not for the 100 ms that a core taken by another process
 * earns. Bound: 16 times the whole loop (the caller's wait is part of it), at
 * least 1 ms, plus 20 ms for the polling. */
Test(parallel, a_short_stall_calms_the_pool_briefly)
{
    SKIP_POOL_TIMING();
    tg_threads_set(2);
    stall_ctx s = {.caller = pthread_self(), .worker_sleep_ns = 150000};
    if (!stall_until_calm(&s)) cr_skip_test("the worker never ran a chunk beside the caller (a busy machine)");
    long loop_ns = s.loop_ns;
    if (!tg_parallel_calm()) cr_skip_test("the pool never calmed (no loop stalled long enough)");
    if (loop_ns > 2000000) cr_skip_test("the stalled loop took %ld us (a busy machine)", loop_ns / 1000);
    long bound = (16 * loop_ns > 1000000 ? 16 * loop_ns : 1000000) + 20000000;
    long waited = calm_left_ns();
    cr_expect(waited <= bound, "small loops stayed on one thread %ld ms after a loop of %ld us (bound %ld ms)",
              waited / 1000000, loop_ns / 1000, bound / 1000000);
    tg_threads_set(0);
}

/* Stalls that recur as soon as a calm ends (a core another process keeps
 * taking) double the calm each time, so under load small loops soon stay
 * on one thread for long. */
Test(parallel, a_stall_right_after_a_calm_doubles_the_next)
{
    SKIP_POOL_TIMING();
    tg_threads_set(2);
    stall_ctx s = {.caller = pthread_self(), .worker_sleep_ns = 3000000};
    if (!stall_until_calm(&s)) cr_skip_test("the worker never ran a chunk beside the caller (a busy machine)");
    long first = calm_left_ns(), t_end = now_ns_test();
    if (!stall_until_calm(&s)) cr_skip_test("the worker never ran a chunk beside the caller (a busy machine)");
    long gap = now_ns_test() - t_end;
    if (gap > 3 * first / 4)
        cr_skip_test("the second stall came %ld ms after a calm of %ld (a busy machine)", gap / 1000000,
                     first / 1000000);
    long second = calm_left_ns();
    cr_expect(second > 3 * first / 2, "a calm of %ld ms after one of %ld ms: not doubled", second / 1000000,
              first / 1000000);
    tg_threads_set(0);
}

/* The worker's spin follows the gaps between jobs: jobs 3 ms apart teach it
 * the shortest budget (it then sleeps through such a gap instead of burning
 * a core), jobs back to back bring back the full millisecond. */
Test(parallel, spin_budget_follows_the_gaps_between_jobs)
{
    SKIP_POOL_TIMING();
    tg_threads_set(2);
    for (int i = 0; i < 64; i++) {
        tg_parallel_for(2, nothing, NULL);
        nanosleep(&(struct timespec){0, 3000000}, NULL);
    }
    long spaced = tg_parallel_spin_ns();
    cr_expect_leq(spaced, 128000, "jobs 3 ms apart: the worker spins %ld ns after each", spaced);
    /* asleep 3 ms after a job (tried a few times: a loaded machine may not run the worker at all) */
    bool slept = false;
    for (int i = 0; i < 20 && !slept; i++) {
        tg_parallel_for(2, nothing, NULL);
        nanosleep(&(struct timespec){0, 3000000}, NULL);
        slept = !tg_parallel_awake();
    }
    cr_expect(slept, "the worker still spins 3 ms after every job");
    /* Back to back: the counts halve every 256 gaps, so the 84 long gaps
     * above are forgotten after 7 halvings (1,792 gaps), and any later gap
     * over 100 us (this thread descheduled on a busy machine), which
     * rightly keeps the budget short, within 512. The loop runs until both
     * are past, and the budget must be the full one by then. */
    int jobs = 0, last_long = 0;
    long t_end = now_ns_test(), t_stop = t_end + 3000000000L;
    while (tg_parallel_spin_ns() < 1000000 && now_ns_test() < t_stop) {
        long t = now_ns_test();
        if (t - t_end > 100000) last_long = jobs;
        tg_parallel_for(2, nothing, NULL);
        t_end = now_ns_test();
        jobs++;
        if (jobs > 2500 && jobs - last_long > 600) break;
    }
    cr_expect_geq(tg_parallel_spin_ns(), 1000000,
                  "back-to-back jobs: the worker spins only %ld ns after %d jobs, the last %d with gaps under 100 us",
                  tg_parallel_spin_ns(), jobs, jobs - last_long);
    tg_threads_set(0);
}
