/* Multi-head attention: gradchecks of both modes x {self, cross} x every mask
 * kind (w.r.t. the inputs and every parameter, d_head != d_model / n_heads in
 * half the cases); per-head and fused agree given the same weights (outputs
 * and every gradient); head mask; fully masked rows; returned weights;
 * errors naming the layer; per-head mode has the bits of one tg_sdpa per
 * head. */
#include <string.h>

#include <tapegrad/nn/nn.h>
#include "test_util.h"

enum { B = 2, D = 4, LQ = 4, LK = 5 };
enum { M_NONE, M_CAUSAL, M_PAD, M_WINDOW, M_CAUSAL_PAD, M_COUNT };

static const int32_t lens_self[B] = {LQ, 2}, lens_cross[B] = {LK, 3};

/* lens [B] as an int32 tensor, made once per process */
static const tg_tensor *lens_tensor(const int32_t *lens)
{
    static tg_tensor *made[2];
    int i = lens == lens_cross;
    if (!made[i]) {
        made[i] = tg_tensor_alloc_dtype(TG_I32, 1, (int[]){B});
        cr_assert_not_null(made[i]);
        memcpy(tg_data(made[i], TG_I32), lens, B * sizeof *lens);
    }
    return made[i];
}

static tg_mask make_mask(int kind, bool cross)
{
    tg_mask m = {0};
    if (kind == M_CAUSAL || kind == M_CAUSAL_PAD) m.causal = true;
    if (kind == M_PAD || kind == M_CAUSAL_PAD) m.key_lens = lens_tensor(cross ? lens_cross : lens_self);
    if (kind == M_WINDOW) m.window = 2;
    return m;
}

/* A head mask [n] of float32 values (the other float type in the float64 build). */
static tg_tensor *head_mask_of(const float *v, int n)
{
    tg_tensor *x = tg_tensor_alloc_dtype(TG_F32, 1, (int[]){n});
    cr_assert_not_null(x);
    memcpy(x->data, v, (size_t)n * sizeof *v);
    return x;
}

static tg_mha_config config(tg_mha_mode mode, int n_heads, int d_head, bool bias)
{
    return (tg_mha_config){.n_heads = n_heads, .d_model = D, .d_head = d_head, .bias = bias, .mode = mode};
}

static void init_mha(tg_mha *m, tg_params *p, const tg_mha_config *c, uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    cr_assert_eq(tg_mha_init(m, p, "attn", c, &rng), 0, "%s", tg_error());
    tu_jitter(p, &rng, 0.2);  /* non-zero biases */
}

/* ---- gradchecks ----------------------------------------------------------------- */

typedef struct mha_ctx {
    tg_mha m;
    tg_mask mask;
    bool cross;
    const tg_tensor *head_mask;
} mha_ctx;

static tg_tensor *mha_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    mha_ctx *c = ctx;
    return tg_mha_forward(t, &c->m, in[0], c->cross ? in[1] : in[0],
                          &(tg_mha_opts){.mask = &c->mask, .head_mask = c->head_mask}, NULL);
}

static void check_mha(tg_mha_mode mode, bool cross, int mask_kind, int d_head, bool bias,
                      const tg_tensor *head_mask)
{
    tg_rng rng;
    tg_rng_seed(&rng, 100 + mask_kind);
    tg_params *p = tg_params_new();
    mha_ctx c = {.mask = make_mask(mask_kind, cross), .cross = cross, .head_mask = head_mask};
    tg_mha_config cfg = config(mode, 2, d_head, bias);
    init_mha(&c.m, p, &cfg, 7 + mask_kind);
    tg_tensor *xq = tu_rand(&rng, -1, 1, 3, (int[]){B, LQ, D});
    tg_tensor *xkv = cross ? tu_rand(&rng, -1, 1, 3, (int[]){B, LK, D}) : NULL, *in[TU_MAXIN];
    int n = tu_gather(in, xq, xkv, p);
    tu_gradcheck(mha_fn, &c, in, n);
    tg_tensor_free(xq);
    tg_tensor_free(xkv);
    tg_params_free(p);
}

/* d_head 3 (!= D / H = 2) for the odd mask kinds, the default for the others */
#define DH(kind) ((kind) % 2 ? 3 : 0)
#define GC_TEST(mode, mname, cross, cname, kind, kname)                                         \
    Test(mha, mname##_##cname##_##kname) { check_mha(mode, cross, kind, DH(kind), true, NULL); }
#define GC_MASKS(mode, mname, cross, cname)                          \
    GC_TEST(mode, mname, cross, cname, M_NONE, no_mask)              \
    GC_TEST(mode, mname, cross, cname, M_CAUSAL, causal)             \
    GC_TEST(mode, mname, cross, cname, M_PAD, padding)               \
    GC_TEST(mode, mname, cross, cname, M_WINDOW, window)             \
    GC_TEST(mode, mname, cross, cname, M_CAUSAL_PAD, causal_padding)
GC_MASKS(TG_MHA_FUSED, fused, false, self)
GC_MASKS(TG_MHA_FUSED, fused, true, cross)
GC_MASKS(TG_MHA_PER_HEAD, per_head, false, self)
GC_MASKS(TG_MHA_PER_HEAD, per_head, true, cross)

Test(mha, no_bias_both_modes)
{
    check_mha(TG_MHA_FUSED, true, M_CAUSAL, 3, false, NULL);
    check_mha(TG_MHA_PER_HEAD, true, M_CAUSAL, 3, false, NULL);
}

Test(mha, head_mask_both_modes)
{
    tg_tensor *hm = head_mask_of((const float[]){1, 0}, 2);
    check_mha(TG_MHA_FUSED, false, M_CAUSAL_PAD, 3, true, hm);
    check_mha(TG_MHA_PER_HEAD, true, M_CAUSAL_PAD, 3, true, hm);
    tg_tensor_free(hm);
}

/* ---- per-head == fused ------------------------------------------------------------ */

#ifdef TAPEGRAD_DOUBLE
#define OUT_TOL 1e-12
#define GRAD_TOL 1e-12
#else
#define OUT_TOL 1e-6
#define GRAD_TOL 1e-5
#endif

/* Relative closeness: |a - b| <= tol |b|, with an absolute floor of tol / 100
 * for entries that are ~0 by cancellation. */
#define rel_close(a, b, tol)                                                                  \
    cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * (fabs((double)(b)) + 1e-2),          \
              "%s = %.12g, expected %.12g (relative tolerance %g)", #a, (double)(a), (double)(b), (double)(tol))

/* The [dh, D] weight block (or [dh] bias) of projection s, head h: in data or grad. */
static const tg_real *block_of(const tg_mha *m, int s, int h, bool bias, bool grad)
{
    const tg_mha_config *c = &m->cfg;
    if (c->mode == TG_MHA_PER_HEAD) {
        const tg_mha_head *hd = &m->heads[h];
        const tg_tensor *x = bias ? (s == 0 ? hd->bq : s == 1 ? hd->bk : hd->bv)
                                  : (s == 0 ? hd->wq : s == 1 ? hd->wk : hd->wv);
        return grad ? x->grad : x->data;
    }
    size_t row = (size_t)s * c->n_heads * c->d_head + (size_t)h * c->d_head;
    const tg_tensor *x = bias ? m->in_proj_bias : m->in_proj_weight;
    return (grad ? x->grad : x->data) + row * (bias ? 1 : (size_t)c->d_model);
}

static void assert_same_weights(const tg_mha *a, const tg_mha *b, bool grad, double tol)
{
    int dh = a->cfg.d_head;
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < a->cfg.n_heads; h++) {
            const tg_real *x = block_of(a, s, h, false, grad), *y = block_of(b, s, h, false, grad);
            for (int i = 0; i < dh * D; i++) rel_close(x[i], y[i], tol);
            x = block_of(a, s, h, true, grad), y = block_of(b, s, h, true, grad);
            for (int i = 0; i < dh; i++) rel_close(x[i], y[i], tol);
        }
    const tg_tensor *wa = a->out_proj.weight, *wb = b->out_proj.weight, *ba = a->out_proj.bias, *bb = b->out_proj.bias;
    for (size_t i = 0; i < wa->size; i++) rel_close(grad ? wa->grad[i] : wa->data[i], grad ? wb->grad[i] : wb->data[i], tol);
    for (size_t i = 0; i < ba->size; i++) rel_close(grad ? ba->grad[i] : ba->data[i], grad ? bb->grad[i] : bb->data[i], tol);
}

/* Runs forward + backward (seed w) of m on copies of xq / xkv; returns the
 * output (on t) and the inputs' grads in gq / gkv. */
static tg_tensor *run(tg_tape *t, const tg_mha *m, const tg_tensor *xq0, const tg_tensor *xkv0,
                      const tg_mask *mask, const tg_tensor *head_mask, const tg_real *w, tg_real *gq,
                      tg_real *gkv, tg_tensor **weights)
{
    tg_tensor *xq = tg_tensor_from(t, xq0->data, 3, xq0->shape), *xkv = xq;
    xq->requires_grad = true;
    if (xkv0) {
        xkv = tg_tensor_from(t, xkv0->data, 3, xkv0->shape);
        xkv->requires_grad = true;
    }
    tg_tensor *out = tg_mha_forward(t, m, xq, xkv, &(tg_mha_opts){.mask = mask, .head_mask = head_mask}, weights);
    cr_assert_not_null(out, "%s", tg_tape_error(t));
    cr_assert_eq(tg_backward_seed(t, out, w), 0, "%s", tg_tape_error(t));
    memcpy(gq, xq->grad, xq->size * sizeof(tg_real));
    if (xkv0) memcpy(gkv, xkv->grad, xkv->size * sizeof(tg_real));
    return out;
}

static void check_modes_agree(bool cross, int d_head)
{
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    tg_params *pf = tg_params_new(), *ph = tg_params_new();
    tg_mha f, h;
    tg_mha_config cf = config(TG_MHA_FUSED, 2, d_head, true), ch = config(TG_MHA_PER_HEAD, 2, d_head, true);
    init_mha(&f, pf, &cf, 21);
    init_mha(&h, ph, &ch, 22);  /* different weights until copied */
    cr_assert_eq(tg_mha_copy_weights(&h, &f), 0);
    assert_same_weights(&h, &f, false, 0);
    tg_tensor *xq = tu_rand(&rng, -1, 1, 3, (int[]){B, LQ, D});
    tg_tensor *xkv = cross ? tu_rand(&rng, -1, 1, 3, (int[]){B, LK, D}) : NULL;
    tg_real w[B * LQ * D], gq[2][B * LQ * D], gkv[2][B * LK * D];
    for (int i = 0; i < B * LQ * D; i++) w[i] = (tg_real)(2 * tg_rng_uniform(&rng) - 1);
    tg_mask mask = make_mask(M_CAUSAL_PAD, cross);
    tg_tape *t = tg_tape_new(), *t2 = tg_tape_new();  /* one backward per tape */
    tg_tensor *wf, *wh;
    tg_tensor *of = run(t, &f, xq, xkv, &mask, NULL, w, gq[0], gkv[0], &wf);
    tg_tensor *oh = run(t2, &h, xq, xkv, &mask, NULL, w, gq[1], gkv[1], &wh);
    for (size_t i = 0; i < of->size; i++) rel_close(oh->data[i], of->data[i], OUT_TOL);
    cr_assert_eq(wf->size, wh->size);
    for (size_t i = 0; i < wf->size; i++) rel_close(wh->data[i], wf->data[i], OUT_TOL);
    for (int i = 0; i < B * LQ * D; i++) rel_close(gq[1][i], gq[0][i], GRAD_TOL);
    for (int i = 0; cross && i < B * LK * D; i++) rel_close(gkv[1][i], gkv[0][i], GRAD_TOL);
    assert_same_weights(&h, &f, true, GRAD_TOL);
    /* and back: fresh fused weights from the per-head ones */
    tu_jitter(ph, &rng, 0.5);
    cr_assert_eq(tg_mha_copy_weights(&f, &h), 0);
    assert_same_weights(&f, &h, false, 0);
    tg_tape_free(t);
    tg_tape_free(t2);
    tg_tensor_free(xq);
    tg_tensor_free(xkv);
    tg_params_free(pf);
    tg_params_free(ph);
}

Test(mha, agree_self) { check_modes_agree(false, 0); }
Test(mha, agree_self_wide_heads) { check_modes_agree(false, 5); }
Test(mha, agree_cross) { check_modes_agree(true, 3); }

/* Per-head mode as one tg_sdpa per head (what the layer ran before its one
 * attention path), written out: a group's key and value projections, then
 * each query's, head by head -> out_proj of the joined outputs. */
static tg_tensor *per_head_ops(tg_tape *t, const tg_mha *m, tg_tensor *x, const tg_mask *mask)
{
    int H = m->cfg.n_heads, group = H / m->cfg.n_kv_heads, dh = m->cfg.d_head, nb = x->shape[0], L = x->shape[1];
    tg_tensor *outs[TG_MHA_MAX_HEADS], *k = NULL, *v = NULL;
    for (int h = 0; h < H; h++) {
        const tg_mha_head *hd = &m->heads[h];
        if (h % group == 0) k = tg_matmul(t, x, hd->wk, hd->bk, TG_TRANS_B), v = tg_matmul(t, x, hd->wv, hd->bv, TG_TRANS_B);
        tg_tensor *q = tg_matmul(t, x, hd->wq, hd->bq, TG_TRANS_B);
        tg_tensor *o = tg_sdpa(t, tg_reshape(t, q, 4, (int[]){nb, 1, L, dh}), tg_reshape(t, k, 4, (int[]){nb, 1, L, dh}),
                               tg_reshape(t, v, 4, (int[]){nb, 1, L, dh}), &(tg_sdpa_opts){.mask = mask}, NULL);
        outs[h] = tg_reshape(t, o, 3, (int[]){nb, L, dh});
    }
    return tg_linear_forward(t, &m->out_proj, tg_concat(t, outs, H));
}

/* Per-head mode's grads have the bits of one tg_sdpa per head: project()
 * makes its GEMMs in that order, so x's grad sums the heads' terms as those
 * ops did (docs/ATTENTION.md "Two modes, one function"; a key/value head of
 * 2 query heads and one row block, whose sum has one order). */
Test(mha, per_head_grads_have_the_bits_of_one_sdpa_per_head)
{
    enum { NB = 3, L = 9, DM = 16 };
    for (int kv = 4; kv >= 2; kv -= 2) {
        tg_rng rng;
        tg_rng_seed(&rng, 5);
        tg_params *p = tg_params_new();
        tg_mha m;
        tg_mha_config c = {.n_heads = 4, .n_kv_heads = kv, .d_model = DM, .bias = true, .mode = TG_MHA_PER_HEAD};
        init_mha(&m, p, &c, 31);
        tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){NB, L, DM}), *w = tu_rand(&rng, -1, 1, 3, (int[]){NB, L, DM});
        size_t np = tg_params_numel(p);
        tg_real y[2][NB * L * DM], dx[2][NB * L * DM], dp[2][4 * DM * DM * 2 + 8 * DM];
        cr_assert_leq(np, sizeof dp[0] / sizeof dp[0][0]);
        tg_mask causal = {.causal = true};
        tg_tape *t = tg_tape_new();
        for (int way = 0; way < 2; way++) {
            if (x->grad) memset(x->grad, 0, x->size * sizeof *x->grad);
            tg_params_zero_grad(p);
            tg_tensor *out = way ? per_head_ops(t, &m, x, &causal)
                                 : tg_mha_forward(t, &m, x, x, &(tg_mha_opts){.mask = &causal}, NULL);
            cr_assert_not_null(out, "%s", tg_tape_error(t));
            cr_assert_eq(tg_backward(t, tg_sum(t, tg_mul(t, out, w))), 0, "%s", tg_tape_error(t));
            memcpy(y[way], out->data, sizeof y[way]);
            memcpy(dx[way], x->grad, sizeof dx[way]);
            memcpy(dp[way], tg_params_grad(p), np * sizeof(tg_real));
            tg_tape_reset(t);
        }
        cr_expect(memcmp(y[0], y[1], sizeof y[0]) == 0, "%d key/value heads: outputs differ", kv);
        cr_expect(memcmp(dx[0], dx[1], sizeof dx[0]) == 0, "%d key/value heads: x's grads differ", kv);
        cr_expect(memcmp(dp[0], dp[1], np * sizeof(tg_real)) == 0, "%d key/value heads: parameter grads differ", kv);
        tg_tape_free(t);
        tg_tensor_free(x);
        tg_tensor_free(w);
        tg_params_free(p);
    }
}

Test(mha, same_seed_same_init)
{
    tg_params *pf = tg_params_new(), *ph = tg_params_new();
    tg_mha f, h;
    tg_mha_config cf = config(TG_MHA_FUSED, 3, 2, true), ch = config(TG_MHA_PER_HEAD, 3, 2, true);
    tg_rng r1, r2;
    tg_rng_seed(&r1, 5);
    tg_rng_seed(&r2, 5);
    cr_assert_eq(tg_mha_init(&f, pf, "a", &cf, &r1), 0);
    cr_assert_eq(tg_mha_init(&h, ph, "a", &ch, &r2), 0);
    assert_same_weights(&f, &h, false, 0);
    cr_assert_str_eq(tg_params_at(ph, 0)->name, "a.heads.0.q_proj.weight");
    cr_assert_not_null(tg_params_get(ph, "a.heads.2.v_proj.bias"));
    cr_assert_not_null(tg_params_get(pf, "a.in_proj_bias"));
    cr_assert_eq(tg_params_get(pf, "a.in_proj_weight")->shape[0], 18);
    cr_assert_eq(tg_params_get(ph, "a.out_proj.weight")->shape[1], 6);
    tg_params_free(pf);
    tg_params_free(ph);
}

Test(mha, copy_rejects_other_shapes)
{
    tg_params *p = tg_params_new();
    tg_mha a, b, c;
    tg_mha_config ca = config(TG_MHA_FUSED, 2, 2, true), cb = config(TG_MHA_PER_HEAD, 2, 3, true),
                  cc = config(TG_MHA_PER_HEAD, 2, 2, false);
    cr_assert_eq(tg_mha_init(&a, p, "a", &ca, NULL), 0);
    cr_assert_eq(tg_mha_init(&b, p, "b", &cb, NULL), 0);
    cr_assert_eq(tg_mha_init(&c, p, "c", &cc, NULL), 0);
    cr_assert_eq(tg_mha_copy_weights(&b, &a), -1);
    cr_assert_str_eq(tg_error(), "tg_mha_copy_weights: 'b' and 'a' differ: n_heads 2 / 2, n_kv_heads 2 / 2, d_model 4 / 4, "
                                 "d_head 3 / 2, bias 1 / 1");
    cr_assert_eq(tg_mha_copy_weights(&c, &a), -1);
    cr_assert(strstr(tg_error(), "bias 0 / 1"), "%s", tg_error());
    tg_params_free(p);
}

/* ---- head mask ---------------------------------------------------------------------- */

static void check_head_mask(tg_mha_mode mode)
{
    enum { H = 3, DH = 2 };
    tg_rng rng;
    tg_rng_seed(&rng, 31);
    tg_params *p = tg_params_new(), *pz = tg_params_new();
    tg_mha m, z;
    tg_mha_config c = config(mode, H, DH, true);
    init_mha(&m, p, &c, 32);
    init_mha(&z, pz, &c, 33);
    cr_assert_eq(tg_mha_copy_weights(&z, &m), 0);
    static const float hv[H] = {1, 0, 0.5f};  /* head 1 silenced, head 2 halved */
    for (int r = 0; r < D; r++)  /* z: each head's out_proj columns scaled by hand */
        for (int i = 0; i < H * DH; i++) z.out_proj.weight->data[r * H * DH + i] *= hv[i / DH];
    tg_tensor *hm = head_mask_of(hv, H);
    tg_tensor *xq = tu_rand(&rng, -1, 1, 3, (int[]){B, LQ, D}), *xkv = tu_rand(&rng, -1, 1, 3, (int[]){B, LK, D});
    tg_real w[B * LQ * D], gq[B * LQ * D], gkv[B * LK * D];
    for (int i = 0; i < B * LQ * D; i++) w[i] = (tg_real)(2 * tg_rng_uniform(&rng) - 1);
    tg_mask mask = make_mask(M_PAD, true);
    tg_tape *t = tg_tape_new(), *t2 = tg_tape_new();
    tg_tensor *om = run(t, &m, xq, xkv, &mask, hm, w, gq, gkv, NULL);
    tg_tensor *oz = run(t2, &z, xq, xkv, &mask, NULL, w, gq, gkv, NULL);
    for (size_t i = 0; i < om->size; i++) tu_close(om->data[i], oz->data[i], TU_TOL);
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < H; h++) {
            const tg_real *gw = block_of(&m, s, h, false, true), *gb = block_of(&m, s, h, true, true);
            double sum = 0;
            for (int i = 0; i < DH * D; i++) sum += fabs((double)gw[i]);
            for (int i = 0; i < DH; i++) sum += fabs((double)gb[i]);
            if (h == 1) cr_assert_eq(sum, 0.0, "silenced head: projection %d grad sum %g", s, sum);
            else cr_assert_gt(sum, 0.0, "live head %d projection %d has no grad", h, s);
        }
    tg_tape_free(t);
    tg_tape_free(t2);
    tg_tensor_free(xq);
    tg_tensor_free(xkv);
    tg_tensor_free(hm);
    tg_params_free(p);
    tg_params_free(pz);
}

/* A head mask of the wrong shape or dtype is refused by name. */
Test(mha, head_mask_misuse)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = config(TG_MHA_FUSED, 2, 2, true);
    init_mha(&m, p, &c, 5);
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){B, LQ, D}), *three = head_mask_of((const float[]){1, 0, 1}, 3);
    tg_tensor *ints = tg_tensor_alloc_dtype(TG_I32, 1, (int[]){2});
    tu_expect_error(t, tg_mha_forward(t, &m, x, x, &(tg_mha_opts){.head_mask = three}, NULL), "tg_mha 'attn'",
                    "head_mask [3] must be [n_heads] = [2]");
    tu_expect_error(t, tg_mha_forward(t, &m, x, x, &(tg_mha_opts){.head_mask = ints}, NULL), "tg_mha 'attn'",
                    "head_mask is int32, but must be float");
    tu_free_all((tg_tensor *[]){x, three, ints}, 3);
    tg_tape_free(t);
    tg_params_free(p);
}

Test(mha, head_mask_fused) { check_head_mask(TG_MHA_FUSED); }
Test(mha, head_mask_per_head) { check_head_mask(TG_MHA_PER_HEAD); }

/* ---- masked rows and returned weights -------------------------------------------------- */

static void check_weights_rows(tg_mha_mode mode, int kind, bool cross)
{
    tg_rng rng;
    tg_rng_seed(&rng, 41 + kind);
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = config(mode, 2, 3, true);
    init_mha(&m, p, &c, 42);
    int Lk = cross ? LK : LQ;
    /* attn: row 1 sees nothing; with key_lens {Lk, 0} every row of batch 1 */
    tg_tensor *deny = tg_tensor_alloc_dtype(TG_BOOL, 2, (int[]){LQ, Lk}), *zero_len = tg_tensor_alloc_dtype(TG_I32, 1, (int[]){B});
    for (int i = 0; i < LQ * Lk; i++) ((uint8_t *)tg_data(deny, TG_BOOL))[i] = i / Lk == 1;
    ((int32_t *)tg_data(zero_len, TG_I32))[0] = Lk;
    tg_mask mask = make_mask(kind, cross);
    if (kind < 0) mask = (tg_mask){.attn = deny};
    if (kind == -2) mask = (tg_mask){.causal = true, .key_lens = zero_len};
    tg_tensor *xq = tu_rand(&rng, -1, 1, 3, (int[]){B, LQ, D});
    tg_tensor *xkv = cross ? tu_rand(&rng, -1, 1, 3, (int[]){B, LK, D}) : NULL;
    tg_real w[B * LQ * D], gq[B * LQ * D], gkv[B * LK * D];
    for (int i = 0; i < B * LQ * D; i++) w[i] = 1;
    tg_tape *t = tg_tape_new();
    tg_tensor *a;
    tg_tensor *o = run(t, &m, xq, xkv, &mask, NULL, w, gq, gkv, &a);
    cr_assert_not_null(a);
    cr_assert(a->ndim == 4 && a->shape[0] == B && a->shape[1] == 2 && a->shape[2] == LQ && a->shape[3] == Lk);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < LQ; i++) {
                bool empty = (kind == -1 && i == 1) || (kind == -2 && b == 1);
                double s = 0;
                for (int j = 0; j < Lk; j++) {
                    double v = a->data[((b * 2 + h) * LQ + i) * Lk + j];
                    cr_assert(v >= 0 && v <= 1, "weight %g", v);
                    s += v;
                }
                tu_close(s, empty ? 0.0 : 1.0, TU_TOL);
                for (int d = 0; empty && d < D; d++)  /* zero head output: only out_proj's bias */
                    cr_assert_eq(o->data[(b * LQ + i) * D + d], m.out_proj.bias->data[d]);
            }
    for (size_t i = 0; i < o->size; i++) cr_assert(isfinite(o->data[i]));
    for (int i = 0; i < B * LQ * D; i++) cr_assert(isfinite(gq[i]));
    for (size_t i = 0; i < tg_params_numel(p); i++) cr_assert(isfinite(tg_params_grad(p)[i]));
    tg_tape_free(t);
    tg_tensor_free(xq);
    tg_tensor_free(xkv);
    tg_tensor_free(deny);
    tg_tensor_free(zero_len);
    tg_params_free(p);
}

Test(mha, fully_masked_row_is_zero_fused)
{
    check_weights_rows(TG_MHA_FUSED, -1, false);
    check_weights_rows(TG_MHA_FUSED, -2, true);
}

Test(mha, fully_masked_row_is_zero_per_head)
{
    check_weights_rows(TG_MHA_PER_HEAD, -1, true);
    check_weights_rows(TG_MHA_PER_HEAD, -2, false);
}

Test(mha, weights_rows_sum_to_one)
{
    for (int k = 0; k < M_COUNT; k++)
        for (int cross = 0; cross < 2; cross++) {
            check_weights_rows(TG_MHA_FUSED, k, cross);
            check_weights_rows(TG_MHA_PER_HEAD, k, cross);
        }
}

/* ---- errors ------------------------------------------------------------------------- */

Test(mha, bad_config_and_shapes_name_the_layer)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = config(TG_MHA_FUSED, 3, 0, true);  /* 4 % 3 != 0 */
    cr_assert_eq(tg_mha_init(&m, p, "enc.attn", &c, NULL), -1);
    tu_assert_has(tg_error(), "tg_mha 'enc.attn'");
    c.n_heads = 0;
    cr_assert_eq(tg_mha_init(&m, p, "enc.attn", &c, NULL), -1);
    tu_assert_has(tg_error(), "n_heads");
    c = config(TG_MHA_PER_HEAD, 2, 0, true);
    c.dropout = 0.5;
    cr_assert_eq(tg_mha_init(&m, p, "enc.attn", &c, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *good = tg_tensor_zeros(t, 3, (int[]){2, 3, D});
    tg_tensor *bad[3] = {tg_tensor_zeros(t, 3, (int[]){2, 3, 5}), tg_tensor_zeros(t, 2, (int[]){3, D}),
                         tg_tensor_zeros(t, 3, (int[]){1, 3, D})};
    for (int i = 0; i < 3; i++) {
        tg_tensor *w = good;
        cr_assert_null(tg_mha_forward(t, &m, i < 2 ? bad[i] : good, i < 2 ? good : bad[i], NULL, &w));
        cr_assert_null(w);
        tu_assert_has(tg_tape_error(t), "tg_mha 'enc.attn'");
        tg_tape_clear_error(t);
    }
    cr_assert_null(tg_mha_forward(t, &m, good, good, NULL, NULL));  /* dropout, no rng */
    tu_assert_has(tg_tape_error(t), "rng");
    tg_tape_clear_error(t);
    cr_assert_null(tg_mha_forward(t, &m, NULL, good, NULL, NULL));
    tu_assert_has(tg_tape_error(t), "tg_mha");
    tg_tape_clear_error(t);
    tg_tape_set_training(t, false);  /* eval: dropout off, no rng needed */
    cr_assert_not_null(tg_mha_forward(t, &m, good, good, NULL, NULL), "%s", tg_tape_error(t));
    tg_tape_free(t);
    tg_params_free(p);
}

Test(mha, mha_config_refusals)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    const tg_mha_config base = {.n_heads = 2, .d_model = 4};
    const struct { tg_mha_config c; const char *why; } bad[] = {
        {{.n_heads = 2, .d_model = 0}, "d_model must be > 0"},
        {{.n_heads = 2, .d_model = 4, .d_head = -1}, "d_head must be >= 0"},
        {{.n_heads = 2, .d_model = 4, .dropout = 1.0}, "dropout must be in [0, 1)"},
        {{.n_heads = 2, .d_model = 4, .dropout = NAN}, "dropout must be in [0, 1)"},
        {{.n_heads = 2, .d_model = 4, .mode = (tg_mha_mode)7}, "mode must be TG_MHA_FUSED or TG_MHA_PER_HEAD"},
        {{.n_heads = 65, .d_model = 4, .d_head = 1}, "n_heads must be in [1, 64]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tg_mha_init(&m, p, "attn", &bad[i].c, NULL), -1);
        tu_assert_has(tg_error(), "tg_mha 'attn': ");
        tu_assert_has(tg_error(), bad[i].why);
    }
    cr_assert_eq(tg_mha_init(&m, p, "attn", &base, NULL), 0, "%s", tg_error());
    tg_params_free(p);
}
