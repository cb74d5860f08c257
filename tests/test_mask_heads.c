/* Attention masks as tensors (core/ops/nn/mask.h), per head: a bool mask
 * [B*H, Lq, Lk] (PyTorch's 3-D attn_mask) gives the bits of each head run
 * with its own mask, in the core op and in the layer; the [B, H, Lq, Lk]
 * form equals the 3-D one; both modes against nn.MultiheadAttention with a
 * 3-D bool attn_mask, a 3-D float one (with add_bias_kv and add_zero_attn)
 * and a float key_padding_mask (bench/torch/make_mask_fixtures.py);
 * gradchecks of the layer under the new masks; a mask of the wrong shape or
 * dtype refused naming what was wrong. */
#include <string.h>

#include "fixture_util.h"

TU_SUITE(mask_heads, 31);

enum { B = 2, H = 3, LQ = 4, LK = 5, DK = 3, DV = 2 };

/* A heap bool tensor of shape, about a third true, every row keeping key 0. */
static tg_tensor *rand_deny(int ndim, const int *shape)
{
    tg_tensor *m = tg_tensor_alloc_dtype(TG_BOOL, ndim, shape);
    cr_assert_not_null(m);
    uint8_t *d = tg_data(m, TG_BOOL);
    int Lk = shape[ndim - 1];
    for (size_t i = 0; i < m->size; i++) d[i] = i % (size_t)Lk != 0 && tg_rng_uniform(&R) < 0.35;
    return m;
}

/* x [B, H, L, w] -> head h [B, 1, L, w], a heap copy. */
static tg_tensor *head_of(const tg_tensor *x, int h)
{
    int nb = x->shape[0], nh = x->shape[1], L = x->shape[2], w = x->shape[3];
    tg_tensor *y = tg_tensor_alloc(4, (int[]){nb, 1, L, w});
    for (int b = 0; b < nb; b++)
        memcpy(y->data + (size_t)b * L * w, x->data + ((size_t)b * nh + h) * L * w, (size_t)L * w * sizeof *y->data);
    y->requires_grad = true;
    return y;
}

/* out and the grads g of q, k, v (d sum(out) = 1) of tg_sdpa under mask. */
static void run_sdpa(tg_tensor *q, tg_tensor *k, tg_tensor *v, const tg_mask *mask, tg_real *out, tg_real *g[3])
{
    tg_tape_reset(T);
    tg_tensor *in[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        if (in[i]->grad) memset(in[i]->grad, 0, in[i]->size * sizeof(tg_real));
    tg_tensor *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = mask}, NULL);
    cr_assert_not_null(o, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward(T, tg_sum(T, o)), 0, "%s", tg_tape_error(T));
    memcpy(out, o->data, o->size * sizeof *out);
    for (int i = 0; i < 3; i++) memcpy(g[i], in[i]->grad, in[i]->size * sizeof(tg_real));
}

/* tg_sdpa with a [B*H, Lq, Lk] mask == per head h, tg_sdpa on that head with
 * the mask's planes b*H + h as [B, Lq, Lk], bit for bit (outputs and grads);
 * the [B, H, Lq, Lk] form and a [B*H, Lq, Lk] float mask of -inf the same. */
Test(mask_heads, per_head_mask_is_each_head_with_its_own)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B, H, LQ, DK}), *k = tu_rand(&R, -1, 1, 4, (int[]){B, H, LK, DK});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B, H, LK, DV});
    tg_tensor *deny = rand_deny(3, (int[]){B * H, LQ, LK});
    tg_tensor *deny4 = tg_tensor_alloc_dtype(TG_BOOL, 4, (int[]){B, H, LQ, LK});
    tg_tensor *add = tg_tensor_alloc(3, (int[]){B * H, LQ, LK});
    memcpy(tg_data(deny4, TG_BOOL), tg_data(deny, TG_BOOL), deny->size);
    for (size_t i = 0; i < add->size; i++) add->data[i] = ((uint8_t *)tg_data(deny, TG_BOOL))[i] ? -INFINITY : 0;
    static tg_real out[3][B * H * LQ * DV], g[3][3][B * H * LK * DK];
    run_sdpa(q, k, v, &(tg_mask){.attn = deny}, out[0], (tg_real *[]){g[0][0], g[0][1], g[0][2]});
    run_sdpa(q, k, v, &(tg_mask){.attn = deny4}, out[1], (tg_real *[]){g[1][0], g[1][1], g[1][2]});
    cr_assert(memcmp(out[0], out[1], sizeof out[0]) == 0 && memcmp(g[0], g[1], sizeof g[0]) == 0,
              "[B, H, Lq, Lk] differs from [B*H, Lq, Lk]");
    run_sdpa(q, k, v, &(tg_mask){.attn = add}, out[1], (tg_real *[]){g[1][0], g[1][1], g[1][2]});
    const tg_tensor *qkv[3] = {q, k, v};
    for (size_t e = 0; e < B * H * LQ * DV; e++) tu_close(out[1][e], out[0][e], TU_TOL);
    for (int i = 0; i < 3; i++)
        for (size_t e = 0; e < qkv[i]->size; e++) tu_close(g[1][i][e], g[0][i][e], TU_TOL);
    int masked = 0;
    for (int h = 0; h < H; h++) {
        tg_tensor *qh = head_of(q, h), *kh = head_of(k, h), *vh = head_of(v, h);
        tg_tensor *mh = tg_tensor_alloc_dtype(TG_BOOL, 3, (int[]){B, LQ, LK});
        for (int b = 0; b < B; b++)
            memcpy((uint8_t *)tg_data(mh, TG_BOOL) + (size_t)b * LQ * LK,
                   (uint8_t *)tg_data(deny, TG_BOOL) + ((size_t)b * H + h) * LQ * LK, LQ * LK);
        tg_real oh[B * LQ * DV], gh[3][B * LK * DK];
        run_sdpa(qh, kh, vh, &(tg_mask){.attn = mh}, oh, (tg_real *[]){gh[0], gh[1], gh[2]});
        const tg_tensor *one[3] = {qh, kh, vh};
        for (int b = 0; b < B; b++) {
            size_t po = (size_t)LQ * DV;
            cr_assert(memcmp(oh + b * po, out[0] + (b * H + h) * po, po * sizeof(tg_real)) == 0, "head %d batch %d", h, b);
            for (int i = 0; i < 3; i++) {
                size_t pl = one[i]->size / B;
                cr_assert(memcmp(gh[i] + b * pl, g[0][i] + (b * H + h) * pl, pl * sizeof(tg_real)) == 0,
                          "head %d batch %d: grad of input %d", h, b, i);
            }
        }
        for (size_t e = 0; e < mh->size; e++) masked += ((uint8_t *)tg_data(mh, TG_BOOL))[e];
        tu_free_all((tg_tensor *[]){qh, kh, vh, mh}, 4);
    }
    cr_assert_gt(masked, 10);
    tu_free_all((tg_tensor *[]){q, k, v, deny, deny4, add}, 6);
}

/* The layer (per-head mode, B = 1) with a [H, Lq, Lk] mask == head h run on
 * its own with its [Lq, Lk] mask (one tg_sdpa per head, the outputs joined
 * and projected), bit for bit in the output. */
Test(mask_heads, layer_per_head_mask_is_each_head_with_its_own)
{
    enum { L = 6, DM = 6, NH = 3, DH = 2 };
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = NH, .d_model = DM, .bias = true, .mode = TG_MHA_PER_HEAD};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, &R), 0, "%s", tg_error());
    tu_jitter(p, &R, 0.2);
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){1, L, DM}), *deny = rand_deny(3, (int[]){NH, L, L});
    tg_tensor *y = tg_mha_forward(T, &m, x, x, &(tg_mha_opts){.mask = &(tg_mask){.attn = deny}}, NULL);
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    tg_tensor *outs[NH], *mh[NH];
    for (int h = 0; h < NH; h++) {
        const tg_mha_head *hd = &m.heads[h];
        mh[h] = tg_tensor_alloc_dtype(TG_BOOL, 2, (int[]){L, L});
        memcpy(tg_data(mh[h], TG_BOOL), (uint8_t *)tg_data(deny, TG_BOOL) + (size_t)h * L * L, L * L);
        tg_tensor *qh = tg_reshape(T, tg_matmul(T, x, hd->wq, hd->bq, TG_TRANS_B), 4, (int[]){1, 1, L, DH});
        tg_tensor *kh = tg_reshape(T, tg_matmul(T, x, hd->wk, hd->bk, TG_TRANS_B), 4, (int[]){1, 1, L, DH});
        tg_tensor *vh = tg_reshape(T, tg_matmul(T, x, hd->wv, hd->bv, TG_TRANS_B), 4, (int[]){1, 1, L, DH});
        tg_tensor *o = tg_sdpa(T, qh, kh, vh, &(tg_sdpa_opts){.mask = &(tg_mask){.attn = mh[h]}}, NULL);
        cr_assert_not_null(o, "%s", tg_tape_error(T));
        outs[h] = tg_reshape(T, o, 3, (int[]){1, L, DH});
    }
    tg_tensor *want = tg_linear_forward(T, &m.out_proj, tg_concat(T, outs, NH));
    cr_assert_not_null(want, "%s", tg_tape_error(T));
    cr_assert(memcmp(want->data, y->data, y->size * sizeof(tg_real)) == 0);
    tu_free_all(mh, NH);
    tu_free_all((tg_tensor *[]){x, deny}, 2);
    tg_params_free(p);
}

/* Both modes against nn.MultiheadAttention: output, weights, every grad. */
Test(mask_heads, layer_vs_torch_both_modes)
{
    check_mha_fixture_both_modes("mha_mask_heads.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("mha_mask_heads_float.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("mha_mask_padding_float.safetensors", TG_MHA_FUSED);
}

/* ---- gradchecks of the layer under the new masks (float32 and, in the _f64 twin, float64) ---- */

typedef struct gc_ctx {
    tg_mha m;
    tg_mask mask;
    bool cross;
} gc_ctx;

static tg_tensor *gc_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    gc_ctx *c = ctx;
    return tg_mha_forward(t, &c->m, in[0], c->cross ? in[1] : in[0], &(tg_mha_opts){.mask = &c->mask}, NULL);
}

static void gradcheck_layer(tg_mha_mode mode, bool cross, bool extra, int which)
{
    enum { NH = 2, LQ2 = 3 };
    int Lk = cross ? 4 : LQ2;
    tg_params *p = tg_params_new();
    gc_ctx c = {.cross = cross};
    tg_mha_config cfg = {.n_heads = NH, .d_model = 4, .bias = true, .mode = mode, .add_bias_kv = extra,
                         .add_zero_attn = extra};
    cr_assert_eq(tg_mha_init(&c.m, p, "attn", &cfg, &R), 0, "%s", tg_error());
    tu_jitter(p, &R, 0.2);
    tg_tensor *deny = rand_deny(3, (int[]){B * NH, LQ2, Lk});
    tg_tensor *add = tu_rand(&R, -1, 1, 4, (int[]){B, NH, LQ2, Lk}), *pad = tu_rand(&R, -1, 1, 2, (int[]){B, Lk});
    add->data[3] = -INFINITY, pad->data[1] = -INFINITY;
    if (which == 0) c.mask = (tg_mask){.attn = deny};
    if (which == 1) c.mask = (tg_mask){.attn = add, .causal = !cross};
    if (which == 2) c.mask = (tg_mask){.key_padding = pad, .attn = deny};
    tg_tensor *xq = tu_rand(&R, -1, 1, 3, (int[]){B, LQ2, 4}), *xkv = cross ? tu_rand(&R, -1, 1, 3, (int[]){B, Lk, 4}) : NULL;
    tg_tensor *in[TU_MAXIN];
    int n = tu_gather(in, xq, xkv, p);
    tu_gradcheck(gc_fn, &c, in, n);
    tu_free_all((tg_tensor *[]){xq, xkv, deny, add, pad}, 5);
    tg_params_free(p);
}

Test(mask_heads, gradcheck_fused)
{
    for (int which = 0; which < 3; which++) {
        gradcheck_layer(TG_MHA_FUSED, false, false, which);
        gradcheck_layer(TG_MHA_FUSED, true, which == 1, which);
    }
}

Test(mask_heads, gradcheck_per_head)
{
    for (int which = 0; which < 3; which++) {
        gradcheck_layer(TG_MHA_PER_HEAD, true, false, which);
        gradcheck_layer(TG_MHA_PER_HEAD, false, which != 1, which);
    }
}

/* ---- misuse ------------------------------------------------------------------------------- */

/* A mask of the wrong shape or dtype is refused naming what was expected and
 * what was given, by the core op and by the layer (whose add_zero_attn
 * widens the mask itself). */
Test(mask_heads, wrong_shape_or_dtype_is_refused_by_name)
{
    tg_params *p = tg_params_new();
    tg_mha m, z;
    tg_mha_config c = {.n_heads = H, .d_model = 6, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, &R), 0, "%s", tg_error());
    c.add_zero_attn = true;
    cr_assert_eq(tg_mha_init(&z, p, "zero", &c, &R), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){B, LQ, 6}), *kv = tu_rand(&R, -1, 1, 3, (int[]){B, LK, 6});
    tg_tensor *bad_shape = tg_tensor_alloc_dtype(TG_BOOL, 3, (int[]){B * H, LK, LQ});
    tg_tensor *bad_heads = tg_tensor_alloc_dtype(TG_BOOL, 4, (int[]){B, 2, LQ, LK});
    tg_tensor *bad_dtype = tg_tensor_alloc_dtype(TG_I64, 3, (int[]){B * H, LQ, LK});
    tg_tensor *bad_pad = tg_tensor_alloc_dtype(TG_BOOL, 2, (int[]){B, LQ});
    tg_tensor *bad_lens = tg_tensor_alloc_dtype(TG_BOOL, 1, (int[]){B});
    const char *expect = "[Lq, Lk] = [4, 5], [B, Lq, Lk] = [2, 4, 5], [B*H, Lq, Lk] = [6, 4, 5] or [B, H, Lq, Lk] = "
                         "[2, 3, 4, 5]";
    for (int layer = 0; layer < 2; layer++) {
        const tg_mha *l = layer ? &z : &m;
        const char *who = layer ? "tg_mha 'zero': mask" : "tg_sdpa_heads: mask";
#define REFUSED(mk, n1, n2)                                                                                   \
    tu_expect_error(T, tg_mha_forward(T, l, x, kv, &(tg_mha_opts){.mask = &(tg_mask)mk}, NULL), n1, n2)
        REFUSED({.attn = bad_shape}, who, "attn [6,5,4] must be");
        REFUSED({.attn = bad_shape}, "attn [6,5,4]", expect);
        REFUSED({.attn = bad_heads}, "attn [2,2,4,5] must be", expect);
        REFUSED({.attn = bad_dtype}, who, "attn is int64, but must be bool (true = not allowed) or float32/float64");
        REFUSED({.key_padding = bad_pad}, who, "key_padding [2,4] must be [B, Lk] = [2, 5]");
        REFUSED({.key_lens = bad_lens}, who, "key_lens is bool, but must be int32 or int64");
#undef REFUSED
    }
    /* a freed mask tensor is refused, not read */
    tg_tensor *gone = tg_tensor_alloc_dtype(TG_BOOL, 2, (int[]){LQ, LK});
    tg_tensor_free(gone);
    tg_tensor *s = tg_tensor_zeros(T, 3, (int[]){B, LQ, LK});
    tu_expect_error(T, tg_softmax_masked(T, s, &(tg_mask){.attn = gone}, 1), "tg_softmax_masked: mask attn", "");
    tu_free_all((tg_tensor *[]){x, kv, bad_shape, bad_heads, bad_dtype, bad_pad, bad_lens}, 7);
    tg_params_free(p);
}
