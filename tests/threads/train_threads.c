/* Several tapes training at once on separate threads, sharing nothing but the
 * library (its thread pool, allocation counter, error slots...), give the
 * same bits as the same runs one after the other; one of them runs its
 * products under bfloat16 autocast, on the bfloat16 kernel this CPU has or
 * else its emulation (core/kernels/gemm_half.h), whose threads pack into
 * per-thread buffers. A plain program, not a
 * Criterion suite: the ThreadSanitizer build (TAPEGRAD_TSAN, scripts/test.sh)
 * runs it to find races, and Criterion's runner does not start under TSan.
 * Exit status 0 when every check holds; each failure is printed. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/tapegrad.h>
#include <tapegrad/core/kernels/gemm_half.h>

static int failures;

static void check(bool ok, const char *what, int run)
{
    if (ok) return;
    fprintf(stderr, "FAIL: %s (run %d)\n", what, run);
    failures++;
}

/* d_model 64 over 2 x 16 positions: big enough that the GEMMs and
 * elementwise passes go through the shared pool from several threads. */
enum { RUNS = 4, STEPS = 4, B = 2, TT = 16, V = 11, D = 64 };

typedef struct run {
    int seed;
    tg_mha_mode mode;
    tg_dtype cast;   /* autocast's operand type (TG_F32: none) */
    tg_real *final;  /* the parameters after STEPS steps (heap) */
    size_t n;
    double loss;
    char error[256];
} run;

/* One training run, everything its own: model, store, optimizer, tape, rng. */
static void *train(void *arg)
{
    run *r = arg;
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)r->seed);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = V, .d_model = D, .n_layers = 2, .n_heads = 2, .max_len = TT,
                           .dropout = 0.1, .mode = r->mode};
    tg_optim_opts oo = tg_optim_defaults(TG_ADAMW);
    tg_optim *opt = NULL;
    tg_tape *t = tg_tape_new();
    if (!p || !t || tg_model_init(&m, p, &cfg, &rng) || !(opt = tg_optim_new(p, &oo))) goto fail;
    int32_t ids[B * TT], y[B * TT];
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < B * TT; i++) ids[i] = (int32_t)tg_rng_below(&rng, V), y[i] = (ids[i] * 3 + 1) % V;
        tg_tape_reset(t);
        tg_model_opts mo = {.rng = &rng};
        tg_tensor *x = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){B, TT});
        tg_dtype cast = tg_autocast_begin(t, r->cast);
        tg_tensor *logits = tg_model_forward(t, &m, x, &mo, NULL);
        tg_autocast_end(t, cast);
        tg_tensor *loss = tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, y, 2, (int[]){B, TT}), TG_IGNORE);
        tg_optim_zero_grad(opt);
        if (!loss || tg_backward(t, loss) || tg_optim_step(opt)) goto fail;
        r->loss = loss->data[0];
    }
    /* a checkpoint through memory: its bytes parse back to the same parameters */
    tg_safetensors *st = tg_st_new(), *back = NULL;
    uint8_t *bytes = NULL;
    size_t len;
    int rc = !st || tg_st_add_params(st, p) || tg_st_to_bytes(st, TG_F64, &bytes, &len) ||
             tg_st_parse(bytes, len, "checkpoint", &back) || tg_st_load_params(p, back, true, NULL);
    tg_st_free(st);
    tg_st_free(back);
    tg_free(bytes);
    if (rc) goto fail;
    r->n = tg_params_numel(p);
    r->final = malloc(r->n * sizeof(tg_real));
    memcpy(r->final, tg_params_data(p), r->n * sizeof(tg_real));
    goto done;
fail:
    snprintf(r->error, sizeof r->error, "%s", tg_tape_error(t) ? tg_tape_error(t) : tg_error());
done:
    tg_tape_free(t);
    tg_optim_free(opt);
    tg_model_free(&m);
    tg_params_free(p);
    return NULL;
}

static void runs_init(run *rs)
{
    for (int i = 0; i < 3; i++) rs[i] = (run){.seed = 7 + i, .mode = i % 2 ? TG_MHA_PER_HEAD : TG_MHA_FUSED};
    rs[3] = (run){.seed = 9, .mode = TG_MHA_FUSED, .cast = TG_BF16}; /* run 2 with rounded products */
}

static void tapes_on_threads_match_the_same_runs_in_turn(void)
{
    run seq[RUNS], par[RUNS];
    runs_init(seq);
    runs_init(par);
    for (int i = 0; i < RUNS; i++) {
        train(&seq[i]);
        if (!seq[i].final) fprintf(stderr, "run %d: %s\n", i, seq[i].error);
        check(seq[i].final != NULL && isfinite(seq[i].loss), "a run alone trains", i);
    }
    pthread_t tid[RUNS];
    for (int i = 0; i < RUNS; i++) check(pthread_create(&tid[i], NULL, train, &par[i]) == 0, "pthread_create", i);
    for (int i = 0; i < RUNS; i++) pthread_join(tid[i], NULL);
    for (int i = 0; i < RUNS; i++) {
        if (!par[i].final) fprintf(stderr, "run %d on a thread: %s\n", i, par[i].error);
        check(par[i].final && seq[i].final && par[i].n == seq[i].n &&
                  memcmp(par[i].final, seq[i].final, seq[i].n * sizeof(tg_real)) == 0,
              "the parameters trained on a thread are the same bits as the same run alone", i);
        free(seq[i].final);
        free(par[i].final);
    }
    /* different seeds made different runs: the comparison is not vacuous */
    check(seq[0].loss != seq[2].loss, "different seeds train differently", 0);
    check(seq[2].loss != seq[3].loss, "the bfloat16 run's products were rounded", 3);
}

/* tg_error() is per thread: a failure on one thread does not show on another. */
static void *fail_here(void *arg)
{
    tg_error_clear();
    tg_tape *t = tg_tape_new();
    *(bool *)arg = !tg_tensor_new(t, 2, NULL) && tg_error() && strstr(tg_error(), "the shape is NULL");
    tg_tape_free(t);
    return NULL;
}

static void errors_stay_on_their_thread(void)
{
    tg_error_clear();
    bool seen = false;
    pthread_t tid;
    check(pthread_create(&tid, NULL, fail_here, &seen) == 0, "pthread_create", 0);
    pthread_join(tid, NULL);
    check(seen, "the failing thread sees its message", 0);
    check(tg_error() == NULL, "the main thread sees none", 0);
}

int main(void)
{
    if (tg_gemm_half_get_kernel() == TG_GEMM_HALF_WIDEN) tg_gemm_half_set_kernel(TG_GEMM_HALF_AVX512BF16_EMULATED);
    printf("threads: the bfloat16 run's kernel: %s\n", tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()));
    tapes_on_threads_match_the_same_runs_in_turn();
    errors_stay_on_their_thread();
    if (!failures) printf("threads: %d runs on threads (one in bfloat16) match the runs in turn\n", RUNS);
    return failures != 0;
}
