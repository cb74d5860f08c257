/* One training step of the toy model (nn/model.h) on a generated task.
 *
 *   bench_model [--reps 30] [--burn-in 3] [--budget 10] [--task reverse|copy]
 *               [--symbols 16 --min-len 4 --max-len 12 --layers 2 --d-model 64
 *                --heads 4 --d-head 0 --d-ff 0 --mode fused|per-head --pos learned|rope|none --batch 64
 *                --lr 0.003 --warmup 50 --steps 3000 --schedule cosine
 *                --optimizer adamw (any tg_optim kind, by name) --weight-decay 0.01 --clip 1 --seed 1]
 *               [--precision f32|bf16|both] [--threads T (0: one per core)] [--tag step]
 *
 * The model flags take seqtask train's names and defaults; scripts/bench.sh
 * reads the current defaults from `seqtask train --help` and passes them to
 * this program and to bench/torch/bench_model.py alike (--warmup is the
 * learning-rate warmup, as there, by default min(50, steps / 10); --burn-in
 * counts the untimed steps).
 * A step is seqtask's: forward, cross-entropy, zero_grad, backward, clip the
 * global grad norm, lr of the schedule, AdamW (betas 0.9, 0.98, no decay on
 * 1-D parameters), tape reset, on a fixed batch of B reverse (or copy)
 * examples with source lengths uniform in [min-len, max-len] (T = longest
 * sequence - 1, the loss on the positions that predict y1..ym and EOS).
 * --precision bf16 runs the forward under autocast, as seqtask train
 * --precision bf16 does (core/engine/tape.h: the products' operands rounded
 * to bfloat16, float32 sums; the loss, backward's other ops and the optimizer
 * in float32); the ROW line names it and the half GEMM kernel that ran
 * (core/kernels/gemm_half.h). --precision both alternates f32 and bf16
 * steps on one model, the first of each pair swapped every pair, so that a
 * shared host's slow spells fall on both alike; a timed rep is a pair, and
 * the ROW adds each precision's median (ms_f32, ms_bf16) and the median and
 * quartiles of the pairs' f32 / bf16 time ratios (speedup, speedup_q1,
 * speedup_q3); its ms, min_ms, cpu_ms, wall_ms and allocs_per_step are a
 * pair's, arena_peak_mib the last step's.
 * Time-to-99% is not measured here: scripts/bench.sh runs `seqtask train`
 * itself. The ROW line gives the median and best step (ms, min_ms), the GEMM
 * GFLOP/s of the median (of both steps of a pair), and the process's CPU time per step next to the wall
 * time (cpu_ms, wall_ms: means over the timed steps, every thread counted, so
 * a pool worker spinning while the step is serial shows).
 *
 * Memory accounting ("act": what backward must read), per layer: ln1 input
 * and output, q k v, attention's row stats [B,H,T,2] and its weights
 * [B,H,T,T] where it keeps them (tg_sdpa_materialises), merged heads, ln2 input
 * and output, fc1 output and GELU output [B,T,d_ff]; then ln_f input and
 * output and the softmax of the logits [B,T,V]. state = 4 P (parameters,
 * grads, Adam m and v). "flight": the activation grads backward must hold at
 * once (an op needs its output's grad while it writes its inputs'; the
 * residual stream's grad lives through a whole block), each [B,T,.]:
 *   FFN:        d x (D) + d GELU output and d fc1 output (2 d_ff)
 *   attention:  fused, d x and d ln1 output (2D) + d qkv (3E), or d x (D) +
 *               d merged (E) + d qkv (3E); per head, d x (D) + d qkv and
 *               the grads of the projections it joins (6E), or d x and d
 *               ln1 output (2D) + those projections' grads (3E)
 *   head:       d logits (V) + d ln_f output (D), or d ln_f output + d x (2D)
 * need = state + act + flight (dropout 0: with dropout the FFN also holds
 * its mask's output grad).
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/kernels/threads.h>
#include <tapegrad/core/ops/ops.h>
#include <tapegrad/nn/model.h>
#include <tapegrad/optim/optim.h>
#include "bench_util.h"
#include "../core/kernels/gemm.h"
#include "../core/kernels/gemm_half.h"
#include "../core/ops/internal.h"

enum { PAD = 0, BOS = 1, SEP = 2, EOS = 3, SYM0 = 4 };

typedef struct model_ctx {
    tg_tape *t;
    tg_params *p;
    tg_model m;
    tg_optim *opt;
    tg_schedule sched;
    tg_dtype cast; /* TG_F32, or TG_BF16: the forward under autocast */
    double clip;
    int B, T;
    int32_t *ids, *targets, *lens;
    long step;
    size_t arena_peak;
} model_ctx;

static int model_step(void *arg)
{
    model_ctx *c = arg;
    tg_tensor *ids = tg_tensor_from_dtype(c->t, TG_I32, c->ids, 2, (int[]){c->B, c->T});
    tg_tensor *lens = tg_tensor_from_dtype(c->t, TG_I32, c->lens, 1, (int[]){c->B});
    tg_dtype prev = tg_autocast_begin(c->t, c->cast);
    tg_tensor *logits = tg_model_forward(c->t, &c->m, ids, &(tg_model_opts){.lens = lens}, NULL);
    tg_autocast_end(c->t, prev);
    tg_tensor *y = tg_tensor_from_dtype(c->t, TG_I32, c->targets, 2, (int[]){c->B, c->T});
    tg_tensor *loss = y ? tg_cross_entropy(c->t, logits, y, TG_IGNORE) : NULL;
    tg_params_zero_grad(c->p);
    if (!loss || tg_backward(c->t, loss)) return -1;  /* the message is in tg_error() */
    c->arena_peak = tg_tape_arena_used(c->t);
    if (c->clip > 0) tg_clip_grad_norm(c->p, c->clip);
    tg_optim_schedule_lr(c->opt, &c->sched, c->step);
    tg_optim_step(c->opt);
    tg_tape_reset(c->t);
    c->step++;
    return 0;
}

/* --precision both: a step of each precision (bf16 first in odd pairs),
 * each timed; kept for the last BU_MAX_REPS pairs (the warm-up's are older). */
typedef struct pair_ctx {
    model_ctx *c;
    double ms[2][BU_MAX_REPS]; /* [0] f32, [1] bf16 */
    long n;
} pair_ctx;

static int pair_step(void *arg)
{
    pair_ctx *q = arg;
    for (int k = 0; k < 2; k++) {
        int bf = k ^ (int)(q->n & 1);
        q->c->cast = bf ? TG_BF16 : TG_F32;
        double t0 = bu_now();
        if (model_step(q->c)) return -1;
        q->ms[bf][q->n % BU_MAX_REPS] = (bu_now() - t0) * 1e3;
    }
    q->n++;
    return 0;
}

/* The median of the f32 and bf16 times of the last n pairs, and the median
 * and quartiles of their ratios. */
static void pair_stats(pair_ctx *q, int n, double *f32_ms, double *bf16_ms, double ratio[3])
{
    static double f[BU_MAX_REPS], b[BU_MAX_REPS], r[BU_MAX_REPS];
    for (int i = 0; i < n; i++) {
        long at = (q->n - n + i) % BU_MAX_REPS;
        f[i] = q->ms[0][at], b[i] = q->ms[1][at], r[i] = f[i] / b[i];
    }
    *f32_ms = bu_median(f, n), *bf16_ms = bu_median(b, n);
    ratio[1] = bu_median(r, n); /* which sorts r */
    ratio[0] = r[n / 4], ratio[2] = r[n - 1 - n / 4];
}

/* B reverse (or copy) examples, BOS x SEP reverse(x) EOS, into ids / targets
 * / lens (each [B, T] with T = longest - 1); returns T. */
static int make_batch(tg_rng *r, bool copy, int B, int n_sym, int min_len, int max_len, int32_t *ids,
                      int32_t *targets, int32_t *lens)
{
    int n[4096], T = 1;
    for (int b = 0; b < B; b++) {
        n[b] = min_len + (int)tg_rng_below(r, (uint32_t)(max_len - min_len + 1));
        if (2 * n[b] + 2 > T) T = 2 * n[b] + 2;
    }
    int32_t seq[2 * 4096 + 3];
    for (int b = 0; b < B; b++) {
        int L = 0, k = n[b];
        seq[L++] = BOS;
        for (int i = 0; i < k; i++) seq[L++] = SYM0 + (int32_t)tg_rng_below(r, (uint32_t)n_sym);
        seq[L++] = SEP;
        for (int i = 0; i < k; i++) seq[L++] = seq[copy ? 1 + i : k - i];  /* x, or x reversed */
        seq[L++] = EOS;
        for (int t = 0; t < T; t++) {
            ids[b * T + t] = t < L - 1 ? seq[t] : PAD;
            targets[b * T + t] = (t > k && t < L - 1) ? seq[t + 1] : TG_IGNORE;
        }
        lens[b] = L - 1;
    }
    return T;
}


int main(int argc, char **argv)
{
    if (bu_flag(argc, argv, "--help") || bu_flag(argc, argv, "-h")) {
        fputs("usage: bench_model [--reps 30] [--burn-in 3] [--budget 10] [--task reverse|copy]\n"
              "  [--symbols 16 --min-len 4 --max-len 12 --layers 2 --d-model 64 --heads 4 --d-head 0\n"
              "   --d-ff 0 --mode fused|per-head --pos learned|rope|none --dropout 0 --batch 64 --lr 0.003 --warmup W --steps 3000\n"
              "   --schedule cosine|linear|constant --optimizer adamw (any tg_optim kind, by name) --weight-decay 0.01\n"
              "   --clip 1 --seed 1 --materialise -1] [--precision f32|bf16|both] [--threads T (0: one per core)]\n"
              "  [--tag step]\n"
              "One training step of the toy model, timed; prints a ROW line (see the header of\n"
              "bench/bench_model.c). --warmup is the learning-rate warmup (min(50, steps / 10)),\n"
              "--burn-in the untimed steps; --precision bf16 runs the forward under bfloat16 autocast,\n"
              "both alternates f32 and bf16 steps and reports each and their ratio.\n", stdout);
        return 0;
    }
#define OPT(name, def) bu_opt_long(argc, argv, "--" name, def)
    int n_sym = (int)OPT("symbols", 16), min_len = (int)OPT("min-len", 4), max_len = (int)OPT("max-len", 12);
    int B = (int)OPT("batch", 64);
    const char *mode = bu_opt_str(argc, argv, "--mode", "fused");
    const char *task = bu_opt_str(argc, argv, "--task", "reverse");
    const char *pos = bu_opt_str(argc, argv, "--pos", "learned");
    const char *optim = bu_opt_str(argc, argv, "--optimizer", "adamw");
    const char *sched = bu_opt_str(argc, argv, "--schedule", "cosine");
    const char *precision = bu_opt_str(argc, argv, "--precision", "f32");
    double lr = bu_opt_double(argc, argv, "--lr", 0.003);
    long steps = OPT("steps", 3000), warm_steps = OPT("warmup", steps / 10 < 50 ? steps / 10 : 50);
    tg_model_config mc = {.vocab = n_sym + 4, .d_model = (int)OPT("d-model", 64),
                          .n_layers = (int)OPT("layers", 2), .n_heads = (int)OPT("heads", 4),
                          .d_head = (int)OPT("d-head", 0), .d_ff = (int)OPT("d-ff", 0),
                          .max_len = 2 * max_len + 3, .dropout = bu_opt_double(argc, argv, "--dropout", 0),
                          .mode = strcmp(mode, "per-head") == 0 ? TG_MHA_PER_HEAD : TG_MHA_FUSED,
                          .pos = strcmp(pos, "rope") == 0 ? TG_POS_ROPE : strcmp(pos, "none") == 0 ? TG_POS_NONE
                                                                                                : TG_POS_LEARNED};
    bu_plan plan = {.warmup = (int)OPT("burn-in", 3), .reps = (int)OPT("reps", 30), .min_reps = 3,
                    .budget_s = bu_opt_double(argc, argv, "--budget", 10.0)};
    if (plan.warmup < 1) plan.warmup = 1;
    bool copy = strcmp(task, "copy") == 0;
    int kind = tg_optim_kind_parse(optim);
    if (kind < 0) {
        fprintf(stderr, "bench_model: --optimizer: %s\n", tg_error());
        return 2;
    }
    if (B < 1 || B > 4096 || min_len < 1 || max_len < min_len || max_len > 4096 || n_sym < 1 ||
        (!copy && strcmp(task, "reverse") != 0) ||
        (mc.pos == TG_POS_LEARNED && strcmp(pos, "learned") != 0)) {
        fprintf(stderr, "bench_model: need 1 <= batch <= 4096, 1 <= min-len <= max-len <= 4096, symbols >= 1, "
                        "--task reverse or copy, --pos learned, rope or none\n");
        return 2;
    }
    bool both = strcmp(precision, "both") == 0;
    if (strcmp(precision, "f32") != 0 && strcmp(precision, "bf16") != 0 && !both) {
        fprintf(stderr, "bench_model: --precision must be f32, bf16 or both, not '%s'\n", precision);
        return 2;
    }
    if (sizeof(tg_real) != sizeof(float) && strcmp(precision, "f32") != 0) {
        fprintf(stderr, "bench_model: --precision %s needs the float32 build (autocast leaves float64 products alone)\n",
                precision);
        return 2;
    }
    if (OPT("threads", 0) > 0) tg_threads_set((int)OPT("threads", 0));
    tg_sdpa_tune(0, (int)OPT("materialise", -1)); /* 1 keep A, 0 recompute, -1 rule */
    bu_warm_blas();
    double base_rss = bu_rss_mib();

    static model_ctx c;
    memset(&c, 0, sizeof c);
    c.clip = bu_opt_double(argc, argv, "--clip", 1.0);
    c.cast = strcmp(precision, "bf16") == 0 ? TG_BF16 : TG_F32;
    c.B = B;
    int rc = 1, T = 2 * max_len + 2;
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)OPT("seed", 1) * 2 + 1);
    c.t = tg_tape_new();
    c.p = tg_params_new();
    c.ids = tg_malloc((size_t)B * T * sizeof *c.ids);
    c.targets = tg_malloc((size_t)B * T * sizeof *c.targets);
    c.lens = tg_malloc((size_t)B * sizeof *c.lens);
    if (!c.t || !c.p || !c.ids || !c.targets || !c.lens) goto done;
    if (tg_model_init(&c.m, c.p, &mc, &rng)) goto done;
    /* seqtask's options (examples/seqtask/checkpoint.c, sq_optim_opts): any kind
     * by its name, tuned as seqtask tunes it */
    tg_optim_opts oo = tg_optim_defaults((tg_optim_kind)kind);
    oo.lr = lr;
    oo.weight_decay = bu_opt_double(argc, argv, "--weight-decay", 0.01);
    if (oo.kind == TG_SGD) oo.momentum = 0.9;
    if (oo.kind == TG_ADAM || oo.kind == TG_ADAMW) oo.beta2 = 0.98;
    oo.no_decay_1d = oo.kind == TG_ADAMW;
    if (!(c.opt = tg_optim_new(c.p, &oo))) goto done;
    if (strcmp(sched, "constant") == 0) c.sched = tg_schedule_constant(lr, warm_steps);
    else if (strcmp(sched, "linear") == 0) c.sched = tg_schedule_linear(lr, lr / 10, warm_steps, steps);
    else c.sched = tg_schedule_cosine(lr, lr / 10, warm_steps, steps);
    c.T = make_batch(&rng, copy, B, n_sym, min_len, max_len, c.ids, c.targets, c.lens);

    static pair_ctx pairs;
    pairs.c = &c;
    bu_result r = both ? bu_measure(pair_step, &pairs, plan) : bu_measure(model_step, &c, plan);
    if (r.failed) goto done;
    char paired[160] = "";
    if (both) {
        double f32_ms, bf16_ms, ratio[3];
        pair_stats(&pairs, r.reps, &f32_ms, &bf16_ms, ratio);
        snprintf(paired, sizeof paired, " ms_f32=%.4f ms_bf16=%.4f speedup=%.3f speedup_q1=%.3f speedup_q3=%.3f", f32_ms,
                 bf16_ms, ratio[1], ratio[0], ratio[2]);
    }

    const tg_model_config *k = &c.m.cfg;
    double BT = (double)B * c.T, D = k->d_model, E = (double)k->n_heads * k->d_head;
    bool per_head = mc.mode == TG_MHA_PER_HEAD;
    double weights = tg_sdpa_materialises(B, k->n_heads, c.T, c.T) ? (double)B * k->n_heads * c.T * c.T : 0;
    double per_layer = BT * (4 * D + 4 * E + 2.0 * k->d_ff) + weights + 2.0 * B * k->n_heads * c.T;
    /* GEMM flops as bench_mha counts them (full T x T products), times 3 for backward */
    double gflop = 3 * (k->n_layers * (2 * BT * D * (4 * E + 2.0 * k->d_ff) + 4.0 * B * k->n_heads * c.T * c.T * k->d_head) +
                        2 * BT * D * k->vocab) / 1e9;
    double act_elems = k->n_layers * per_layer + BT * (2 * D + k->vocab);
    double ffn = D + 2.0 * k->d_ff, head = D + (k->vocab > D ? k->vocab : D);
    double attn = per_head ? fmax(D + 6 * E, 2 * D + 3 * E) : fmax(2 * D + 3 * E, D + 4 * E);
    double flight_elems = BT * fmax(ffn, fmax(attn, head));
    double P = (double)tg_params_numel(c.p), sz = sizeof(tg_real), mib = 1024.0 * 1024.0;
    double state = 4 * P * sz / mib, act = act_elems * sz / mib, flight = flight_elems * sz / mib;
    double peak = bu_peak_rss_mib(), delta = peak - base_rss;
    bu_row("bench=model impl=tapegrad tag=%s precision=%s half_kernel=%s task=%s mode=%s pos=%s B=%d T=%d D=%d layers=%d heads=%d V=%d threads=%d "
           "reps=%d ms=%.4f min_ms=%.4f gflops=%.2f cpu_ms=%.4f wall_ms=%.4f allocs_per_step=%llu params=%.0f state_mib=%.2f act_mib=%.2f "
           "flight_mib=%.2f need_mib=%.2f arena_peak_mib=%.2f arena_cap_mib=%.2f peak_rss_mib=%.1f base_rss_mib=%.1f "
           "rss_delta_mib=%.1f rss_ratio=%.2f%s",
           bu_opt_str(argc, argv, "--tag", "step"), precision, tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()), task,
           mode, pos, B, c.T, k->d_model, k->n_layers, k->n_heads, k->vocab, tg_threads_get(), r.reps,
           r.median_ms, r.min_ms, (both ? 2 : 1) * gflop / (r.median_ms * 1e-3), r.cpu_mean_ms, r.wall_mean_ms, r.allocs_per_step_max, P, state, act, flight,
           state + act + flight, c.arena_peak / mib, tg_tape_arena_capacity(c.t) / mib, peak, base_rss, delta,
           delta / (state + act + flight), paired);
    rc = 0;
done:
    if (rc) fprintf(stderr, "bench_model: %s\n", tg_error() ? tg_error() : "out of memory");
    tg_optim_free(c.opt);
    tg_model_free(&c.m);
    tg_params_free(c.p);
    tg_tape_free(c.t);
    tg_free(c.ids), tg_free(c.targets), tg_free(c.lens);
    return rc;
#undef OPT
}
