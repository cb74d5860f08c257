/* Scaled dot-product attention, tg_sdpa (core/ops/nn/attention.c), against a
 * naive loop and the mask references of tests/mask_cases.h (self and cross,
 * fully masked rows, no keys, eval mode, dropout), gradchecks, the
 * recomputing backward against the materialised one, out of memory and
 * errors. tg_sdpa_heads: tests/test_sdpa_heads.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/nn/nn.h>

#include "../core/ops/internal.h"
#include "mask_cases.h"
#include "ops_util.h"

TU_SUITE(sdpa, 11);

/* These tests were written with R seeded 7 (runs after the suite's setup). */
static void seed_7(void) { tg_rng_seed(&R, 7); }

/* tg_backward with d out = 1 everywhere. */
static int backward_ones(tg_tensor *out)
{
    tg_real *seed = malloc((out->size + 1) * sizeof *seed);
    for (size_t e = 0; e < out->size; e++) seed[e] = 1;
    int rc = tg_backward_seed(T, out, seed);
    free(seed);
    return rc;
}

/* out [B,H,Lq,dv] and w [B,H,Lq,Lk] of softmax(scale q k^T + mask) v, naively. */
static void ref_sdpa(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, const tg_mask *m,
                     double scale, double *out, double *w)
{
    int B = q->shape[0], H = q->shape[1], Lq = q->shape[2], Lk = k->shape[2], dk = q->shape[3],
        dv = v->shape[3];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Lq; i++) {
                int bh = b * H + h;
                double raw[MAXK], *wr = w + ((size_t)bh * Lq + i) * Lk;
                bool vis[MAXK];
                for (int j = 0; j < Lk; j++) {
                    raw[j] = 0;
                    for (int c = 0; c < dk; c++)
                        raw[j] += (double)q->data[(bh * Lq + i) * dk + c] * k->data[(bh * Lk + j) * dk + c];
                }
                ref_weights(m, B, H, b, h, i, Lk, raw, scale, wr, vis);
                for (int c = 0; c < dv; c++) {
                    double s = 0;
                    for (int j = 0; j < Lk; j++) s += wr[j] * v->data[(bh * Lk + j) * dv + c];
                    out[(bh * Lq + i) * dv + c] = s;
                }
            }
}

/* Compares tg_sdpa (output and weights) with ref_sdpa on random q, k, v. */
static void check_sdpa(int B, int H, int Lq, int Lk, int dk, int dv, const tg_mask *m, double scale)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B, H, Lq, dk});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dk});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dv});
    tg_tensor *w = NULL;
    tg_tensor *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = m, .scale = scale}, &w);
    cr_assert(o && w, "%s", tg_tape_error(T));
    cr_assert(o->shape[2] == Lq && o->shape[3] == dv && w->shape[2] == Lq && w->shape[3] == Lk);
    double *ro = calloc(o->size, sizeof *ro), *rw = calloc(w->size, sizeof *rw);
    ref_sdpa(q, k, v, m, scale > 0 ? scale : 1 / sqrt(dk), ro, rw);
    for (size_t e = 0; e < o->size; e++) tu_close(o->data[e], ro[e], TU_TOL);
    for (size_t e = 0; e < w->size; e++) {
        if (rw[e] == 0) cr_assert(w->data[e] == 0, "weight %zu = %g, want exactly 0", e, (double)w->data[e]);
        tu_close(w->data[e], rw[e], TU_TOL);
    }
    free(ro);
    free(rw);
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
}

typedef struct sdpa_ctx {
    const tg_mask *mask;
    double scale, dropout;
    bool shared;  /* q = k = v = in[0] */
} sdpa_ctx;

/* Reseeds a local rng at every call so each evaluation drops the same entries. */
static tg_tensor *f_sdpa(tg_tape *t, tg_tensor **in, void *vc)
{
    sdpa_ctx *c = vc;
    tg_rng rng;
    tg_rng_seed(&rng, 2024);
    tg_sdpa_opts o = {.mask = c->mask, .scale = c->scale, .dropout = c->dropout, .rng = &rng};
    if (c->shared) return tg_sdpa(t, in[0], in[0], in[0], &o, NULL);
    return tg_sdpa(t, in[0], in[1], in[2], &o, NULL);
}

static void gc_sdpa(const char *what, int B, int H, int Lq, int Lk, int dk, int dv, sdpa_ctx c)
{
    tg_tensor *in[] = {tu_rand(&R, -1, 1, 4, (int[]){B, H, Lq, dk}),
                       tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dk}),
                       tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dv})};
    tg_gradcheck_result r = tg_gradcheck(f_sdpa, &c, in, c.shared ? 1 : 3, NULL);
    tu_free_all(in, 3);
    cr_assert(r.ok, "%s: %s", what, tg_error());
}

/* out, weights, dq, dk, dv of one tg_sdpa forward + backward (d out = 1)
 * under tg_sdpa_tune(rows, mat), concatenated into res (malloc'd). */
static tg_real *sdpa_tuned(int rows, int mat, tg_tensor *const in[3], const tg_mask *m, double p,
                           size_t *n)
{
    tg_sdpa_tune(rows, mat);
    tg_tape_reset(T);
    for (int x = 0; x < 3; x++)
        if (in[x]->grad) memset(in[x]->grad, 0, in[x]->size * sizeof *in[x]->grad);
    tg_rng rng;
    tg_rng_seed(&rng, 99);
    tg_tensor *w = NULL, *o = tg_sdpa(T, in[0], in[1], in[2], &(tg_sdpa_opts){.mask = m, .dropout = p, .rng = &rng}, &w);
    cr_assert(o && w, "%s", tg_tape_error(T));
    cr_assert_eq(backward_ones(o), 0, "%s", tg_tape_error(T));
    tg_sdpa_tune(0, -1);
    const tg_tensor *parts[5] = {o, w, NULL, NULL, NULL};
    *n = o->size + w->size + in[0]->size + in[1]->size + in[2]->size;
    tg_real *res = malloc(*n * sizeof *res), *r = res;
    for (int i = 0; i < 5; i++) {
        const tg_real *src = i < 2 ? parts[i]->data : in[i - 2]->grad;
        size_t len = i < 2 ? parts[i]->size : in[i - 2]->size;
        memcpy(r, src, len * sizeof *r);
        r += len;
    }
    return res;
}

/* For blocks of 1, 3 and all rows: recomputing the weights in backward gives
 * the same bits as keeping them; any blocking agrees with one block. */
static void check_modes(int B, int H, int Lq, int Lk, const tg_mask *m, double p)
{
    tg_tensor *in[3] = {tu_rand(&R, -1, 1, 4, (int[]){B, H, Lq, 3}), tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, 3}),
                        tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, 2})};
    size_t n;
    tg_real *one = sdpa_tuned(Lq, 1, in, m, p, &n);
    for (int rows = 1; rows <= Lq; rows = rows == 1 ? 3 : rows == 3 ? Lq : Lq + 1) {
        tg_real *kept = sdpa_tuned(rows, 1, in, m, p, &n), *redo = sdpa_tuned(rows, 0, in, m, p, &n);
        for (size_t e = 0; e < n; e++) {
            cr_assert(kept[e] == redo[e], "rows %d, elem %zu: kept %.9g, recomputed %.9g", rows, e,
                      (double)kept[e], (double)redo[e]);
            tu_close(redo[e], one[e], TU_TOL);
        }
        free(kept);
        free(redo);
    }
    free(one);
    tu_free_all(in, 3);
}

Test(sdpa, matches_naive_self_and_cross, .init = seed_7)
{
    check_sdpa(2, 2, LQ, LK, 3, 2, NULL, 0);          /* default scale 1/sqrt(3) */
    check_sdpa(2, 3, 5, 5, 4, 3, NULL, 0.9);          /* self, dk != dv */
    check_sdpa(2, 2, 3, 7, 4, 6, NULL, 0);            /* cross, Lq < Lk */
    check_sdpa(1, 2, 6, 2, 3, 5, NULL, 0);            /* cross, Lq > Lk */
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        check_sdpa(B_, H_, LQ, LK, 3, 2, &m, 0);
    }
}

Test(sdpa, fully_masked_zero_out_and_grad, .init = seed_7)
{
    tg_mask m = {.key_lens = MC_I32(LENS0)};
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LQ, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 2});
    tg_tensor *w = NULL, *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &m}, &w);
    cr_assert(o && w);
    cr_assert_eq(backward_ones(o), 0, "%s", tg_tape_error(T));
    for (size_t e = 0; e < o->size; e++) cr_assert(e >= o->size / 2 || o->data[e] == 0);
    for (size_t e = 0; e < w->size / 2; e++) cr_assert(w->data[e] == 0);
    tg_tensor *in[] = {q, k, v};
    for (int x = 0; x < 3; x++)
        for (size_t e = 0; e < in[x]->size; e++) {
            cr_assert(isfinite(in[x]->grad[e]));
            if (e < in[x]->size / 2) cr_assert(in[x]->grad[e] == 0, "input %d elem %zu", x, e);
        }
    cr_assert(v->grad[v->size / 2] != 0);  /* batch 1, key 0 does get a gradient */
    tu_free_all(in, 3);
}

Test(sdpa, empty_keys_and_eval_mode, .init = seed_7)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){1, 1, 2, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){1, 1, 0, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){1, 1, 0, 4});
    tg_tensor *o = tg_sdpa(T, q, k, v, NULL, NULL);
    cr_assert_not_null(o, "%s", tg_tape_error(T));
    for (size_t e = 0; e < o->size; e++) cr_assert(o->data[e] == 0);
    cr_assert_eq(backward_ones(o), 0, "%s", tg_tape_error(T));
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
    /* not recording: same values, no node */
    tg_tape_reset(T);
    q = tu_rand(&R, -1, 1, 4, (int[]){1, 2, 3, 4});
    tg_tensor *o1 = tg_sdpa(T, q, q, q, NULL, NULL);
    int nodes = tg_tape_node_count(T);
    tg_no_grad_begin(T);
    tg_tensor *o2 = tg_sdpa(T, q, q, q, NULL, NULL);
    cr_assert(o1 && o2);
    cr_assert_eq(tg_tape_node_count(T), nodes);
    for (size_t e = 0; e < o1->size; e++) cr_assert(o1->data[e] == o2->data[e]);
    tg_tensor_free(q);
}

/* Backward reads nothing from the caller's mask tensors, and the weights
 * handed out are the caller's to modify. */
Test(sdpa, backward_independent_of_caller_arrays, .init = seed_7)
{
    tg_tensor *kl = tg_tensor_alloc_dtype(TG_I32, 1, (int[]){B_}), *ka = tg_tensor_alloc(2, (int[]){LQ, LK});
    tg_tensor *kd = tg_tensor_alloc_dtype(TG_BOOL, 4, (int[]){B_, H_, LQ, LK});
    int32_t *lens = tg_data(kl, TG_I32);
    uint8_t *deny = tg_data(kd, TG_BOOL);
    tg_real *add = ka->data;
    lens[0] = 3, lens[1] = 4;
    for (int e = 0; e < LQ * LK; e++) add[e] = (tg_real)(0.1 * (e % 5));
    for (int e = 0; e < B_ * H_ * LQ * LK; e++) deny[e] = e % 7 == 2;
    tg_mask m = {.causal = true, .key_lens = kl, .attn = ka}, mh = {.attn = kd};
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LQ, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 2});
    tg_real want[B_ * H_ * LQ * 3];
    for (int pass = 0; pass < 2; pass++) {
        tg_tape_reset(T);
        if (q->grad) memset(q->grad, 0, q->size * sizeof *q->grad);
        tg_tensor *w = NULL, *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &m}, &w);
        cr_assert(o && w);
        o = tg_add(T, o, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &mh}, NULL));
        cr_assert(o);
        if (pass == 1) { /* scribble over everything the caller owns */
            lens[0] = lens[1] = 1;
            for (int e = 0; e < LQ * LK; e++) add[e] = (tg_real)(e % 3);
            memset(deny, 1, (size_t)B_ * H_ * LQ * LK);
            tg_tensor_fill(w, 42);
        }
        cr_assert_eq(backward_ones(o), 0);
        for (size_t e = 0; e < q->size; e++) {
            if (pass == 0) want[e] = q->grad[e];
            else cr_assert(q->grad[e] == want[e], "elem %zu", e);
        }
    }
    tg_tensor *in[] = {q, k, v, kl, ka, kd};
    tu_free_all(in, 6);
}

/* With v = identity (dv = Lk) the output is the dropped weights themselves. */
Test(sdpa, dropout_drops_and_rescales, .init = seed_7)
{
    enum { L = 8, H = 4 };
    const double p = 0.5;
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){1, H, L, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){1, H, L, 3});
    tg_tensor *v = tu_rand(&R, 0, 0, 4, (int[]){1, H, L, L});
    for (int h = 0; h < H; h++)
        for (int j = 0; j < L; j++) v->data[(h * L + j) * L + j] = 1;
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_sdpa_opts o = {.dropout = p, .rng = &rng};
    tg_tensor *w = NULL, *out = tg_sdpa(T, q, k, v, &o, &w);
    cr_assert(out && w, "%s", tg_tape_error(T));
    int dropped = 0;
    for (size_t e = 0; e < out->size; e++) {
        if (out->data[e] == 0) dropped++;
        else tu_close(out->data[e], w->data[e] / (1 - p), 1e-5);
    }
    cr_assert(dropped > (int)out->size / 4 && dropped < 3 * (int)out->size / 4, "dropped %d of %zu", dropped, out->size);
    /* weights are pre-dropout: rows sum to one */
    for (int r = 0; r < H * L; r++) {
        double s = 0;
        for (int j = 0; j < L; j++) s += w->data[r * L + j];
        tu_close(s, 1.0, 1e-5);
    }
    /* not training: dropout is off */
    tg_tape_set_training(T, false);
    tg_tensor *ev = tg_sdpa(T, q, k, v, &o, NULL);
    cr_assert_not_null(ev);
    for (size_t e = 0; e < ev->size; e++) cr_assert(ev->data[e] == w->data[e]);
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
}

Test(sdpa, gradcheck_masks, .init = seed_7)
{
    tg_mask causal = {.causal = true}, pad = {.key_lens = MC_I32(LENS)}, keep = {.key_padding = MC_BOOL(KPAD, B_, LK)};
    tg_mask win = {.window = 2}, cpad = {.causal = true, .key_lens = MC_I32(LENS)};
    tg_mask none_visible = {.key_lens = MC_I32(LENS0), .attn = MC_REAL(ADD, LQ, LK)};
    gc_sdpa("no mask", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){0});
    gc_sdpa("causal", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &causal});
    gc_sdpa("key_lens", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &pad});
    gc_sdpa("key_padding", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &keep});
    gc_sdpa("window", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &win});
    gc_sdpa("causal+padding", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &cpad, .scale = 0.6});
    gc_sdpa("fully masked batch + additive", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &none_visible});
    for (int kind = 5; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        gc_sdpa("mask kind", B_, H_, LQ, LK, 2, 3, (sdpa_ctx){.mask = &m});
    }
}

Test(sdpa, gradcheck_cross_shared_and_dropout, .init = seed_7)
{
    static const int32_t lens64[2] = {6, 4};
    tg_mask pad = {.key_lens = MC_I32(lens64)};
    gc_sdpa("cross", 2, 2, 3, 6, 4, 2, (sdpa_ctx){0});
    gc_sdpa("cross + padding", 2, 1, 3, 6, 2, 3, (sdpa_ctx){.mask = &pad});
    gc_sdpa("q = k = v", 1, 2, 4, 4, 3, 3, (sdpa_ctx){.shared = true});
    tg_mask causal = {.causal = true};
    gc_sdpa("dropout", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.dropout = 0.3});
    gc_sdpa("dropout + causal", B_, H_, LQ, LQ, 3, 2, (sdpa_ctx){.mask = &causal, .dropout = 0.5});
}

Test(sdpa, recomputed_equals_materialised, .init = seed_7)
{
    check_modes(B_, H_, LQ, LK, NULL, 0);
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        check_modes(B_, H_, LQ, LK, &m, 0);
        check_modes(B_, H_, LQ, LK, &m, 0.3);
    }
    tg_mask causal = {.causal = true};  /* several blocks of the size rule's rows */
    check_modes(1, 1, 300, 300, &causal, 0);
}

/* The gradchecks above, with the weights recomputed in blocks of 2 rows. */
Test(sdpa, gradcheck_recomputed_blocks, .init = seed_7)
{
    tg_sdpa_tune(2, 0);
    gc_sdpa("no mask", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){0});
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        gc_sdpa("mask kind", B_, H_, LQ, LK, 2, 3, (sdpa_ctx){.mask = &m});
    }
    gc_sdpa("dropout + causal", B_, H_, LQ, LQ, 3, 2, (sdpa_ctx){.mask = &(tg_mask){.causal = true}, .dropout = 0.5});
    gc_sdpa("cross", 2, 2, 3, 6, 4, 2, (sdpa_ctx){0});
    tg_sdpa_tune(0, -1);
}

typedef struct sdpa_run {
    tg_tensor **in;
    const tg_sdpa_opts *opts;
} sdpa_run;

static tg_tensor *forward_sdpa(tg_tape *t, void *ctx)
{
    const sdpa_run *r = ctx;
    tg_tensor *w = NULL;
    return tg_sdpa(t, r->in[0], r->in[1], r->in[2], r->opts, &w);
}

Test(sdpa, out_of_memory, .init = seed_7)
{
    tg_tensor *in[] = {tu_rand(&R, -1, 1, 4, (int[]){2, 2, 3, 4}), tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 4}),
                       tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 2})};
    tg_mask m = {.causal = true, .key_lens = MC_I32(LENS), .attn = MC_BOOL(DENYH, B_ * H_, LQ - 1, LK)};
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_sdpa_opts o = {.mask = &m, .dropout = 0.2, .rng = &rng};
    walk_out_of_memory(forward_sdpa, &(sdpa_run){in, &o}, in, 3);
    tu_free_all(in, 3);
}

Test(sdpa, rejects_bad_inputs, .init = seed_7)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 4, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 2});
    tg_tensor *q3 = tu_rand(&R, -1, 1, 3, (int[]){2, 4, 3});
    tg_tensor *kb = tu_rand(&R, -1, 1, 4, (int[]){3, 2, 5, 3});
    tg_tensor *vh = tu_rand(&R, -1, 1, 4, (int[]){2, 1, 5, 2});
    tg_tensor *kd = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 4});
    tg_tensor *vl = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 6, 2});
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *w = (tg_tensor *)1;
    tu_expect_error(T, tg_sdpa(T, q3, k, v, NULL, &w), "tg_sdpa", "[2,4,3]");
    cr_assert_null(w);
    tu_expect_error(T, tg_sdpa(T, q, kb, v, NULL, NULL), "tg_sdpa", "[3,2,5,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, vh, NULL, NULL), "tg_sdpa", "[2,1,5,2]");
    tu_expect_error(T, tg_sdpa(T, q, kd, v, NULL, NULL), "tg_sdpa", "[2,2,5,4]");
    tu_expect_error(T, tg_sdpa(T, q, k, vl, NULL, NULL), "tg_sdpa", "[2,2,6,2]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = 1, .rng = &rng}, NULL), "tg_sdpa: dropout", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = -0.1, .rng = &rng}, NULL), "tg_sdpa: dropout", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = NAN, .rng = &rng}, NULL), "tg_sdpa: dropout", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = 0.1}, NULL), "rng", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.scale = INFINITY}, NULL), "tg_sdpa: scale", "[2,2,4,3]");
    static const int32_t lens6[2] = {3, 6}, lens_neg[2] = {-1, 2};
    tg_tensor *nan = tg_tensor_alloc(2, (int[]){LQ, LK}), *inf = tg_tensor_alloc(2, (int[]){LQ, LK});
    nan->data[7] = NAN, inf->data[19] = INFINITY;
    tg_tensor *made[] = {nan, inf, tg_tensor_alloc_dtype(TG_BOOL, 3, (int[]){3, LQ, LK}),
                         tg_tensor_alloc_dtype(TG_I32, 2, (int[]){LQ, LK}), tg_tensor_alloc_dtype(TG_F32, 1, (int[]){2}),
                         tg_tensor_alloc_dtype(TG_I32, 1, (int[]){3}), tg_tensor_alloc_dtype(TG_BOOL, 2, (int[]){2, 4}),
                         tg_tensor_alloc_dtype(TG_I64, 2, (int[]){2, LK}),
                         tg_tensor_alloc_dtype(TG_BOOL, 4, (int[]){2, 1, LQ, LK})};
    const tg_mask bad[] = {
        {.key_lens = MC_I32(lens6)},
        {.key_lens = MC_I32(lens_neg)},
        {.window = -2},
        {.attn = nan},
        {.attn = inf},
        {.attn = made[2]},
        {.attn = made[3]},
        {.key_lens = made[4]},
        {.key_lens = made[5]},
        {.key_padding = made[6]},
        {.key_padding = made[7]},
        {.attn = made[8]},
    };
    const char *why[] = {"key_lens[1] = 6", "key_lens[0] = -1", "window -2", "attn[1,2]", "attn[3,4]",
                         "mask attn [3,4,5] must be [Lq, Lk] = [4, 5], [B, Lq, Lk] = [2, 4, 5], [B*H, Lq, Lk] = "
                         "[4, 4, 5] or [B, H, Lq, Lk] = [2, 2, 4, 5]", "mask attn is int32, but must be bool",
                         "mask key_lens is float32, but must be int32 or int64", "mask key_lens [3] must be [B] = [2]",
                         "mask key_padding [2,4] must be [B, Lk] = [2, 5]", "mask key_padding is int64",
                         "mask attn [2,1,4,5] must be"};
    for (int i = 0; i < 12; i++) {
        tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &bad[i]}, NULL), "tg_sdpa", why[i]);
        tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &bad[i]}, NULL), "tg_sdpa", "k [2,2,5,3]");
        tg_tensor *s = tg_tensor_zeros(T, 4, (int[]){2, 2, 4, 5});
        tu_expect_error(T, tg_softmax_masked(T, s, &bad[i], 1), "tg_softmax_masked", why[i]);
        s = tg_tensor_zeros(T, 4, (int[]){2, 2, 4, 5});
        tu_expect_error(T, tg_softmax_masked(T, s, &bad[i], 1), "tg_softmax_masked", "[2,2,4,5]");
    }
    /* a NULL input keeps the earlier message */
    cr_assert_null(tg_sdpa(T, q, kd, v, NULL, NULL));
    char first[512];
    snprintf(first, sizeof first, "%s", tg_tape_error(T));
    cr_assert_null(tg_sdpa(T, NULL, k, v, NULL, NULL));
    cr_assert_null(tg_sdpa(T, q, k, NULL, NULL, NULL));
    cr_assert_str_eq(tg_tape_error(T), first);
    tg_tape_reset(T);
    tu_expect_error(T, tg_sdpa(T, q, NULL, v, NULL, NULL), "tg_sdpa", "NULL");
    tg_tensor *all[] = {q, k, v, q3, kb, vh, kd, vl};
    tu_free_all(all, 8);
    tu_free_all(made, 9);
}
