/* Helpers shared by the suites that compare with PyTorch's fixtures
 * (bench/torch/make_nn_fixtures.py, make_attn_fixtures.py): loading a file,
 * its tensors and metadata, tolerant comparison reporting the worst element,
 * and one attention layer run against its file in either mode; the
 * gradcheck of one attention layer w.r.t. its inputs and every parameter;
 * and the two modes of one layer computing the same function. */
#ifndef TAPEGRAD_TESTS_FIXTURE_UTIL_H
#define TAPEGRAD_TESTS_FIXTURE_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/nn/nn.h>
#include "test_util.h"

/* Fixtures are float64 (computed by torch in float64). */
#ifdef TAPEGRAD_DOUBLE
#define FX_RTOL 1e-10
#define FX_ATOL 1e-12
#else
#define FX_RTOL 1e-4
#define FX_ATOL 1e-5
#endif

static inline tg_safetensors *load_fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", TG_SOURCE_DIR, name);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
    return s;
}

static inline const tg_tensor *fx(const tg_safetensors *s, const char *name)
{
    const tg_tensor *x = tg_st_get(s, name);
    cr_assert_not_null(x, "fixture tensor '%s' missing", name);
    return x;
}

static inline int meta_int(const tg_safetensors *s, const char *key)
{
    const char *v = tg_st_meta(s, key);
    cr_assert_not_null(v, "fixture metadata '%s' missing", key);
    return atoi(v);
}

/* got[i] vs want within FX_ATOL + FX_RTOL |want|, reporting the worst element. */
static inline void assert_matches(const tg_real *got, size_t n, const tg_tensor *want, const char *what)
{
    cr_assert_eq(n, want->size, "%s: %zu values, fixture has %zu", what, n, want->size);
    size_t worst = 0;
    double ratio = -1;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)got[i] - (double)want->data[i]) / (FX_ATOL + FX_RTOL * fabs((double)want->data[i]));
        if (!(r <= ratio)) ratio = r, worst = i;
    }
    cr_assert(ratio <= 1, "%s[%zu] = %.10g, torch %.10g (%.3g of tolerance)", what, worst, (double)got[worst],
              (double)want->data[worst], ratio);
}

/* The metadata value of key, or def when the file has none. */
static inline int meta_or(const tg_safetensors *s, const char *key, int def)
{
    const char *v = tg_st_meta(s, key);
    return v ? atoi(v) : def;
}

static inline double meta_real_or(const tg_safetensors *s, const char *key, double def)
{
    const char *v = tg_st_meta(s, key);
    return v ? atof(v) : def;
}

static inline int32_t *to_ints(const tg_tensor *x)
{
    int32_t *v = malloc(x->size * sizeof *v);
    for (size_t i = 0; i < x->size; i++) v[i] = (int32_t)x->data[i];
    return v;
}

static inline tg_tensor *input(tg_tape *t, const tg_tensor *x)
{
    tg_tensor *y = tg_tensor_from(t, x->data, x->ndim, x->shape);
    y->requires_grad = true;
    return y;
}

/* Every parameter's grad of p against "grad.<name>" of s. */
static inline void assert_param_grads(const tg_params *p, const tg_safetensors *s)
{
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *x = tg_params_at(p, i);
        char key[256];
        snprintf(key, sizeof key, "grad.%s", x->name);
        assert_matches(x->grad, x->size, fx(s, key), key);
    }
}

/* The fixture's mask `name` (stored as float64) on t: bool (true where the
 * stored value is not 0) when metadata bool_key is 1, else float64 (the other
 * float type of a float32 program: the op converts it). NULL when absent. */
static inline const tg_tensor *fixture_mask(tg_tape *t, const tg_safetensors *s, const char *name, const char *bool_key)
{
    const tg_tensor *x = tg_st_get(s, name);
    if (!x) return NULL;
    bool b = meta_or(s, bool_key, 0) != 0;
    tg_tensor *m = tg_tensor_new_dtype(t, b ? TG_BOOL : TG_F64, x->ndim, x->shape);
    cr_assert_not_null(m, "%s", tg_tape_error(t));
    for (size_t i = 0; i < x->size; i++) tg_dtype_store(m->dtype, m->data, i, b ? x->data[i] != 0 : x->data[i]);
    return m;
}

/* Loads an MHA fixture into mode `file_mode` (the file's layout), runs it in
 * mode `run_mode` (converting with tg_mha_copy_weights when they differ) and
 * compares the output, weights and gradients. */
static inline void check_mha_fixture(const char *file, tg_mha_mode file_mode, tg_mha_mode run_mode)
{
    tg_safetensors *s = load_fixture(file);
    tg_mha_config cfg = {.n_heads = meta_int(s, "n_heads"), .d_model = meta_int(s, "d_model"),
                         .d_head = meta_int(s, "d_head"), .n_kv_heads = meta_or(s, "n_kv_heads", 0),
                         .rope = meta_or(s, "rope", 0) != 0, .rope_base = meta_real_or(s, "rope_base", 0),
                         .rope_frac = meta_real_or(s, "rope_frac", 0), .alibi = meta_or(s, "alibi", 0) != 0,
                         .kdim = meta_or(s, "kdim", 0), .vdim = meta_or(s, "vdim", 0),
                         .add_bias_kv = meta_or(s, "add_bias_kv", 0) != 0,
                         .add_zero_attn = meta_or(s, "add_zero_attn", 0) != 0, .bias = true, .mode = file_mode};
    tg_params *pf = tg_params_new(), *pr = tg_params_new();
    tg_mha mf, mr;
    cr_assert_eq(tg_mha_init(&mf, pf, "attn", &cfg, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(pf, s, false, NULL), 0, "%s", tg_error());
    cfg.mode = run_mode;
    cr_assert_eq(tg_mha_init(&mr, pr, "attn", &cfg, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_mha_copy_weights(&mr, &mf), 0);
    bool cross = tg_st_get(s, "xkv") != NULL;
    int32_t *lens = tg_st_get(s, "lens") ? to_ints(fx(s, "lens")) : NULL;
    tg_tape *t = tg_tape_new();
    tg_tensor *xl = lens ? tg_tensor_from_dtype(t, TG_I32, lens, 1, (int[]){(int)fx(s, "lens")->size}) : NULL;
    tg_mask mask = {.causal = meta_int(s, "causal") != 0, .key_lens = xl,
                    .key_padding = fixture_mask(t, s, "key_padding_mask", "key_padding_bool"),
                    .attn = fixture_mask(t, s, "attn_mask", "attn_mask_bool")};
    tg_tensor *xq = input(t, fx(s, "xq")), *xkv = cross ? input(t, fx(s, "xkv")) : xq, *w;
    tg_tensor *bias = tg_st_get(s, "bias") ? input(t, fx(s, "bias")) : NULL;
    tg_tensor *xv = tg_st_get(s, "xv") ? input(t, fx(s, "xv")) : NULL;  /* values from their own input */
    tg_tensor *out = tg_mha_forward(t, &mr, xq, xkv, &(tg_mha_opts){.mask = &mask, .bias = bias, .xv = xv}, &w);
    cr_assert_not_null(out, "%s", tg_tape_error(t));
    assert_matches(out->data, out->size, fx(s, "out"), "out");
    assert_matches(w->data, w->size, fx(s, "weights"), "weights");
    cr_assert_eq(tg_backward_seed(t, out, fx(s, "seed")->data), 0, "%s", tg_tape_error(t));
    assert_matches(xq->grad, xq->size, fx(s, "grad.xq"), "grad.xq");
    if (cross) assert_matches(xkv->grad, xkv->size, fx(s, "grad.xkv"), "grad.xkv");
    if (bias) assert_matches(bias->grad, bias->size, fx(s, "grad.bias"), "grad.bias");
    if (xv) assert_matches(xv->grad, xv->size, fx(s, "grad.xv"), "grad.xv");
    if (run_mode == file_mode) {
        assert_param_grads(pr, s);
    } else {  /* grads move between layouts exactly as weights do */
        for (size_t i = 0; i < tg_params_numel(pr); i++) tg_params_data(pr)[i] = tg_params_grad(pr)[i];
        cr_assert_eq(tg_mha_copy_weights(&mf, &mr), 0);
        for (size_t i = 0; i < tg_params_numel(pf); i++) tg_params_grad(pf)[i] = tg_params_data(pf)[i];
        assert_param_grads(pf, s);
    }
    free(lens);
    tg_tape_free(t);
    tg_params_free(pf);
    tg_params_free(pr);
    tg_st_free(s);
}

/* The file in its own mode, then in the other (the same reference). */
static inline void check_mha_fixture_both_modes(const char *file, tg_mha_mode file_mode)
{
    check_mha_fixture(file, file_mode, file_mode);
    check_mha_fixture(file, file_mode, file_mode == TG_MHA_FUSED ? TG_MHA_PER_HEAD : TG_MHA_FUSED);
}

typedef struct mha_grad_ctx {
    tg_mha m;
    tg_mask mask;
    bool cross, xv;
} mha_grad_ctx;

static inline tg_tensor *mha_grad_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    mha_grad_ctx *c = ctx;
    return tg_mha_forward(t, &c->m, in[0], c->cross ? in[1] : in[0],
                          &(tg_mha_opts){.mask = &c->mask, .xv = c->xv ? in[2] : NULL}, NULL);
}

/* Gradcheck of the layer cfg (d_model 4) on xq [2, 3, 4] (when cross also
 * xkv [2, 5, kdim] under key padding, and xv [2, 5, vdim] when vdim differs
 * from kdim; else causal self-attention) w.r.t. the inputs and every
 * parameter, its init jittered so that the biases are not 0. */
static inline void check_mha_grads(const tg_mha_config *cfg, bool cross, uint64_t seed)
{
    static const int32_t lens[2] = {3, 5};
    int kdim = cfg->kdim ? cfg->kdim : cfg->d_model, vdim = cfg->vdim ? cfg->vdim : cfg->d_model;
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    tg_params *p = tg_params_new();
    mha_grad_ctx c = {.mask = {.causal = !cross, .key_lens = cross ? tu_lens(lens, 2) : NULL}, .cross = cross,
                      .xv = cross && vdim != kdim};
    cr_assert_eq(tg_mha_init(&c.m, p, "attn", cfg, &rng), 0, "%s", tg_error());
    tg_real *d = tg_params_data(p);
    for (size_t i = 0; i < tg_params_numel(p); i++) d[i] += (tg_real)(0.2 * (2 * tg_rng_uniform(&rng) - 1));
    tg_tensor *in[64] = {tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4})};
    int n = 1;
    if (cross) in[n++] = tu_rand(&rng, -1, 1, 3, (int[]){2, 5, kdim});
    if (c.xv) in[n++] = tu_rand(&rng, -1, 1, 3, (int[]){2, 5, vdim});
    int n_x = n;
    for (int i = 0; i < tg_params_count(p); i++) in[n++] = tg_params_at(p, i);
    tu_gradcheck(mha_grad_fn, &c, in, n);
    tu_free_all(in, n_x);
    tg_params_free(p);
}

/* Per-head equals fused: the layer cfg (d_model 4) in fused mode, its
 * weights copied into per-head mode; on the same inputs (causal self-attention,
 * or cross under key padding with xv when vdim differs from kdim) and with
 * bias [B, H, Lq, Lk'] when given, the outputs, weights, input grads and every
 * parameter grad (carried back by tg_mha_copy_weights) agree to tol. */
static inline void check_modes_agree(const tg_mha_config *cfg, bool cross, bool with_bias, double tol)
{
    static const int32_t lens[2] = {4, 6};
    int kdim = cfg->kdim ? cfg->kdim : cfg->d_model, vdim = cfg->vdim ? cfg->vdim : cfg->d_model;
    int H = cfg->n_heads, Lq = 5, Lk = cross ? 6 : 5, extra = cfg->add_bias_kv + cfg->add_zero_attn;
    bool sep = cross && vdim != kdim;
    tg_rng rng;
    tg_rng_seed(&rng, 77);
    tg_params *p[2] = {tg_params_new(), tg_params_new()};
    tg_mha m[2];
    tg_mha_config c = *cfg;
    for (int i = 0; i < 2; i++) {
        c.mode = i ? TG_MHA_PER_HEAD : TG_MHA_FUSED;
        cr_assert_eq(tg_mha_init(&m[i], p[i], "attn", &c, i ? NULL : &rng), 0, "%s", tg_error());
    }
    tg_real *d = tg_params_data(p[0]);
    for (size_t i = 0; i < tg_params_numel(p[0]); i++) d[i] += (tg_real)(0.3 * (2 * tg_rng_uniform(&rng) - 1));
    cr_assert_eq(tg_mha_copy_weights(&m[1], &m[0]), 0, "%s", tg_error());
    tg_tensor *x[4] = {tu_rand(&rng, -1, 1, 3, (int[]){2, Lq, cfg->d_model}),
                       cross ? tu_rand(&rng, -1, 1, 3, (int[]){2, Lk, kdim}) : NULL,
                       sep ? tu_rand(&rng, -1, 1, 3, (int[]){2, Lk, vdim}) : NULL,
                       with_bias ? tu_rand(&rng, -1, 1, 4, (int[]){2, H, Lq, Lk + extra}) : NULL};
    tg_mask mask = {.causal = !cross, .key_lens = cross ? tu_lens(lens, 2) : NULL};
    tg_tape *t[2] = {tg_tape_new(), tg_tape_new()};
    tg_tensor *out[2], *w[2];
    tg_real *grads[2][4];
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 4; k++)
            if (x[k]) tg_free(x[k]->grad), x[k]->grad = NULL;
        out[i] = tg_mha_forward(t[i], &m[i], x[0], cross ? x[1] : x[0],
                                &(tg_mha_opts){.mask = &mask, .xv = x[2], .bias = x[3]}, &w[i]);
        cr_assert_not_null(out[i], "%s", tg_tape_error(t[i]));
        cr_assert_eq(tg_backward(t[i], tg_sum(t[i], tg_mul(t[i], out[i], out[i]))), 0, "%s", tg_tape_error(t[i]));
        for (int k = 0; k < 4; k++) {
            grads[i][k] = x[k] ? tg_malloc(x[k]->size * sizeof(tg_real)) : NULL;
            if (x[k]) memcpy(grads[i][k], x[k]->grad, x[k]->size * sizeof(tg_real));
        }
    }
    for (size_t e = 0; e < out[0]->size; e++) tu_close(out[1]->data[e], out[0]->data[e], tol);
    cr_assert_eq(w[0]->size, w[1]->size);
    for (size_t e = 0; e < w[0]->size; e++) tu_close(w[1]->data[e], w[0]->data[e], tol);
    for (int k = 0; k < 4; k++)
        for (size_t e = 0; x[k] && e < x[k]->size; e++) tu_close(grads[1][k][e], grads[0][k][e], tol);
    /* the per-head grads, as weights, copied into the fused layout: the fused grads */
    for (size_t e = 0; e < tg_params_numel(p[1]); e++) tg_params_data(p[1])[e] = tg_params_grad(p[1])[e];
    cr_assert_eq(tg_mha_copy_weights(&m[0], &m[1]), 0);
    for (size_t e = 0; e < tg_params_numel(p[0]); e++) tu_close(tg_params_data(p[0])[e], tg_params_grad(p[0])[e], tol);
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 4; k++) tg_free(grads[i][k]);
        tg_tape_free(t[i]);
        tg_params_free(p[i]);
    }
    for (int k = 0; k < 4; k++) tg_tensor_free(x[k]);
}

#ifdef TAPEGRAD_DOUBLE
#define MODES_TOL 1e-12
#else
#define MODES_TOL 1e-5
#endif

#endif
