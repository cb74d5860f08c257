/* One MHA layer training step: forward, backward, Adam update.
 *
 *   bench_mha --B 16 --L 128 --D 512 --H 8 [--mode fused|per_head]
 *             [--reps 20] [--warmup 3] [--budget 10] [--tag NAME] [--threads T]
 *
 * Causal self-attention on a fixed random input x [B, L, D], loss = mean(out);
 * a step is zero_grad, tg_mha_forward, tg_mean, tg_backward, tg_optim_step,
 * tg_tape_reset (the same as bench/torch/bench_mha.py). Prints one ROW with the
 * median ms/step, effective GFLOP/s, the forward / backward / Adam split,
 * tapegrad allocations per step after warm-up (must be 0), peak RSS and the
 * memory accounting:
 *   state   = 4 * P * sizeof(tg_real)   (parameters, grads, Adam m and v)
 *   act     = what backward must read:   x [B,L,D], q k v 3x[B,L,E], the
 *             merged heads [B,L,E], attention's row stats [B,H,L,2] and,
 *             only where attention keeps them (tg_sdpa_materialises: one op
 *             for all heads in either mode), its weights [B,H,L,L]
 *   flight  = the activation grads backward must hold at once: an op needs
 *             its output's grad while it writes its inputs'. Fused, the
 *             most is attention's d merged [B,L,E] with d qkv [B,L,3E];
 *             per head, d qkv with the grads of the 3H projections it
 *             joins, [B,L,3E] (out_proj's d out [B,L,D] with d merged
 *             where D is larger)
 *   need    = state + act + flight, compared with the peak RSS growth over a
 *             baseline taken after OpenBLAS's first GEMM (rss_ratio, target
 *             <= 1.3); arena_mib is what the tape's arena really holds.
 * GFLOP/s counts only the GEMMs (QKV projection, Q K^T, A V, out_proj; full
 * L x L products even though causal), times 3 for forward + backward.
 * Run one configuration per process: peak RSS is per process.
 */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/engine/params.h>
#include <tapegrad/core/engine/tape.h>
#include <tapegrad/core/kernels/threads.h>
#include <tapegrad/core/ops/ops.h>
#include <tapegrad/nn/attention.h>
#include <tapegrad/optim/optim.h>
#include "bench_util.h"
#include "../core/kernels/gemm.h"
#include "../core/ops/internal.h"

typedef struct mha_ctx {
    tg_tape *t;
    tg_params *p;
    tg_mha m;
    tg_optim *opt;
    tg_tensor *x;
    tg_mask mask;
    double fwd[BU_MAX_REPS + 64], bwd[BU_MAX_REPS + 64], upd[BU_MAX_REPS + 64];
    int n;                /* steps run so far (warm-up included) */
    size_t arena_fwd;     /* arena bytes in use after the forward */
    size_t arena_peak;    /* after the backward */
} mha_ctx;

static int mha_step(void *arg)
{
    mha_ctx *c = arg;
    double t0 = bu_now();
    tg_params_zero_grad(c->p);
    tg_tensor *out = tg_mha_forward(c->t, &c->m, c->x, c->x, &(tg_mha_opts){.mask = &c->mask}, NULL);
    tg_tensor *loss = tg_mean(c->t, out);
    if (!loss) return -1;  /* the op's message is in tg_error() */
    c->arena_fwd = tg_tape_arena_used(c->t);
    double t1 = bu_now();
    if (tg_backward(c->t, loss)) {
        tg_error_set("backward: %s", tg_tape_error(c->t));
        return -1;
    }
    c->arena_peak = tg_tape_arena_used(c->t);
    double t2 = bu_now();
    tg_optim_step(c->opt);
    tg_tape_reset(c->t);
    double t3 = bu_now();
    if (c->n < BU_MAX_REPS + 64) {
        c->fwd[c->n] = (t1 - t0) * 1e3;
        c->bwd[c->n] = (t2 - t1) * 1e3;
        c->upd[c->n] = (t3 - t2) * 1e3;
        c->n++;
    }
    return 0;
}

static double gemm_flops(int B, int L, int D, int H, int E)
{
    double dk = (double)E / H;
    double fwd = 2.0 * B * L * D * 3.0 * E + 2.0 * 2.0 * B * H * (double)L * L * dk + 2.0 * B * L * E * D;
    return 3.0 * fwd;
}


int main(int argc, char **argv)
{
    int B = (int)bu_opt_long(argc, argv, "--B", 16), L = (int)bu_opt_long(argc, argv, "--L", 128);
    int D = (int)bu_opt_long(argc, argv, "--D", 512), H = (int)bu_opt_long(argc, argv, "--H", 8);
    const char *mode = bu_opt_str(argc, argv, "--mode", "fused");
    const char *tag = bu_opt_str(argc, argv, "--tag", "-");
    bu_plan plan = {.warmup = (int)bu_opt_long(argc, argv, "--warmup", 3),
                    .reps = (int)bu_opt_long(argc, argv, "--reps", 20),
                    .min_reps = 3,
                    .budget_s = bu_opt_double(argc, argv, "--budget", 10.0)};
    if (plan.warmup < 1) plan.warmup = 1;  /* the first step grows the arena */
    int threads = (int)bu_opt_long(argc, argv, "--threads", 0);  /* 0: one per core */
    if (threads > 0) tg_threads_set(threads);
    tg_sdpa_tune(0, (int)bu_opt_long(argc, argv, "--materialise", -1)); /* 1 keep A, 0 recompute, -1 rule */
    bool per_head = strcmp(mode, "per_head") == 0;
    if (!per_head && strcmp(mode, "fused") != 0) {
        fprintf(stderr, "bench_mha: --mode must be fused or per_head, not '%s'\n", mode);
        return 2;
    }
    bu_warm_blas();
    double base_rss = bu_rss_mib();

    static mha_ctx c;  /* large: the split-time arrays */
    memset(&c, 0, sizeof c);
    c.t = tg_tape_new();
    c.p = tg_params_new();
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_mha_config cfg = {.n_heads = H, .d_model = D, .d_head = 0, .bias = true, .dropout = 0,
                         .mode = per_head ? TG_MHA_PER_HEAD : TG_MHA_FUSED};
    int rc = 1;
    if (!c.t || !c.p || tg_mha_init(&c.m, c.p, "attn", &cfg, &rng)) goto done;
    tg_optim_opts adam = tg_optim_defaults(TG_ADAM);
    if (!(c.opt = tg_optim_new(c.p, &adam))) goto done;
    c.x = tg_tensor_alloc(3, (int[]){B, L, D});
    if (!c.x) {
        tg_error_set("out of memory for x [%d,%d,%d]", B, L, D);
        goto done;
    }
    for (size_t i = 0; i < c.x->size; i++) c.x->data[i] = (tg_real)tg_rng_normal(&rng);
    c.mask = (tg_mask){.causal = true};

    bu_result r = bu_measure(mha_step, &c, plan);
    if (r.failed) goto done;
    int first = c.n - r.reps;  /* the timed steps' splits */
    double fwd = bu_median(c.fwd + first, r.reps), bwd = bu_median(c.bwd + first, r.reps),
           upd = bu_median(c.upd + first, r.reps);

    int E = c.m.cfg.n_heads * c.m.cfg.d_head;
    double P = (double)tg_params_numel(c.p), sz = sizeof(tg_real), mib = 1024.0 * 1024.0;
    double state = 4 * P * sz / mib;
    double weights = tg_sdpa_materialises(B, H, L, L) ? (double)B * H * L * L : 0;
    double act = ((double)B * L * D + 4.0 * B * L * E + weights + 2.0 * B * H * L) * sz / mib;
    double BL = (double)B * L, out_grads = BL * (D + E);
    double attn_grads = per_head ? 6 * BL * E : 4 * BL * E;
    double flight = (out_grads > attn_grads ? out_grads : attn_grads) * sz / mib;
    double peak = bu_peak_rss_mib(), delta = peak - base_rss;
    double gflops = gemm_flops(B, L, D, H, E) / (r.median_ms * 1e-3) / 1e9;
    bu_row("bench=mha impl=tapegrad_%s tag=%s B=%d L=%d D=%d H=%d threads=%d reps=%d ms=%.4f "
           "min_ms=%.4f gflops=%.2f fwd_ms=%.4f bwd_ms=%.4f adam_ms=%.4f allocs_per_step=%llu "
           "params=%.0f state_mib=%.2f act_mib=%.2f flight_mib=%.2f need_mib=%.2f arena_fwd_mib=%.2f "
           "arena_peak_mib=%.2f arena_cap_mib=%.2f peak_rss_mib=%.1f base_rss_mib=%.1f "
           "rss_delta_mib=%.1f rss_ratio=%.2f",
           mode, tag, B, L, D, H, tg_threads_get(), r.reps, r.median_ms, r.min_ms, gflops,
           fwd, bwd, upd, r.allocs_per_step_max, P, state, act, flight, state + act + flight,
           c.arena_fwd / mib, c.arena_peak / mib, tg_tape_arena_capacity(c.t) / mib, peak, base_rss,
           delta, delta / (state + act + flight));
    rc = 0;
done:
    if (rc) fprintf(stderr, "bench_mha: %s\n", tg_error() ? tg_error() : "out of memory");
    tg_tensor_free(c.x);
    tg_optim_free(c.opt);
    tg_params_free(c.p);
    tg_tape_free(c.t);
    return rc;
}

