/* ALiBi and an additive bias per (batch, head) with a gradient: tg_sdpa's
 * output equals softmax(scale q k^T + bias + m_h (j - i)) v written out,
 * its gradient w.r.t. the bias is dS (gradchecks of tg_sdpa and
 * tg_sdpa_heads with a bias of either batch size, ALiBi, grouped heads);
 * ALiBi's slopes; the layer in both modes against PyTorch
 * (bench/torch/make_attn_fixtures.py: ALiBi with 4 and 3 heads, a bias of
 * [B, H, L, L] and [1, H, L, L], output, weights and every gradient, the bias's
 * included), each file also run in the other mode; layer gradchecks;
 * misuse. Decoding with the cache: tests/test_kv_cache.c. */
#include <math.h>
#include <string.h>

#include "fixture_util.h"
#include "ops_util.h"

TU_SUITE(alibi, 19);

#ifdef TAPEGRAD_DOUBLE
#define EQ_TOL 1e-12
#else
#define EQ_TOL 1e-6
#endif

Test(alibi, slopes_are_the_papers)
{
    double s4[4], s3[3], s6[6];
    tg_alibi_slopes(s4, 4), tg_alibi_slopes(s3, 3), tg_alibi_slopes(s6, 6);
    const double w4[] = {0.25, 0.0625, 0.015625, 0.00390625}, w3[] = {0.0625, 0.00390625, 0.25},
                 w6[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    for (int h = 0; h < 6; h++) {
        if (h < 4) cr_assert_eq(s4[h], w4[h]);
        if (h < 3) cr_assert_eq(s3[h], w3[h]);
        cr_assert_eq(s6[h], w6[h]);
    }
}

/* One (b, h) row written out: softmax(scale q.k_j + bias + m (j - i)) . v */
Test(alibi, sdpa_adds_bias_and_alibi_as_written)
{
    enum { B = 2, H = 2, L = 4, D = 3 };
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B, H, L, D}), *k = tu_rand(&R, -1, 1, 4, (int[]){B, H, L, D});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B, H, L, D}), *bias = tu_rand(&R, -1, 1, 4, (int[]){1, H, L, L});
    const double slopes[H] = {0.5, 0.125};
    tg_tensor *out = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.bias = bias, .alibi = slopes, .mask = &(tg_mask){.causal = true}}, NULL);
    cr_assert_not_null(out, "%s", tg_tape_error(T));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < L; i++) {
                double s[L], z = 0, mx = -INFINITY;
                size_t pl = (size_t)(b * H + h) * L * D;
                for (int j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int c = 0; c < D; c++) dot += (double)q->data[pl + i * D + c] * k->data[pl + j * D + c];
                    s[j] = dot / sqrt((double)D) + bias->data[(h * L + i) * L + j] + slopes[h] * (j - i);
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= i; j++) {
                    s[j] = exp(s[j] - mx);
                    z += s[j];
                }
                for (int c = 0; c < D; c++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += s[j] / z * v->data[pl + j * D + c];
                    tu_close(out->data[pl + i * D + c], o, 1e-5);
                }
            }
    tu_free_all((tg_tensor *[]){q, k, v, bias}, 4);
}

typedef struct bias_case {
    tg_sdpa_opts o;
    double slopes[4];
    tg_mask mask;
} bias_case;

static tg_tensor *sdpa_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    bias_case *c = ctx;
    tg_sdpa_opts o = c->o;
    o.bias = in[3];
    return tg_sdpa(t, in[0], in[1], in[2], &o, NULL);
}

static tg_tensor *heads_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    bias_case *c = ctx;
    tg_sdpa_opts o = c->o;
    o.bias = in[1];
    tg_sdpa_layout lay = {.n_heads = 4, .n_kv_heads = 2, .dk = 2, .dv = 2, .k_col = 8, .v_col = 12};
    return tg_sdpa_heads(t, in[0], in[0], &lay, &o, NULL);
}

Test(alibi, gradcheck_bias_and_alibi)
{
    bias_case c = {.slopes = {0.5, 0.25, 0.125, 0.0625}, .mask = {.causal = true}};
    c.o = (tg_sdpa_opts){.alibi = c.slopes, .mask = &c.mask};
    for (int bb = 1; bb <= 2; bb++) {  /* a bias of the whole batch, then one per element */
        tg_tensor *in[4] = {tu_rand(&R, -1, 1, 4, (int[]){2, 4, 3, 2}), tu_rand(&R, -1, 1, 4, (int[]){2, 2, 3, 2}),
                            tu_rand(&R, -1, 1, 4, (int[]){2, 2, 3, 2}), tu_rand(&R, -1, 1, 4, (int[]){bb, 4, 3, 3})};
        tu_gradcheck(sdpa_fn, &c, in, 4);
        tu_free_all(in, 4);
        tg_tensor *hin[2] = {tu_rand(&R, -1, 1, 3, (int[]){2, 3, 16}), tu_rand(&R, -1, 1, 4, (int[]){bb, 4, 3, 3})};
        c.o.mask = bb == 1 ? NULL : &c.mask;
        tu_gradcheck(heads_fn, &c, hin, 2);
        tu_free_all(hin, 2);
    }
}

/* A bias shared by the batch takes every element's dS, summed: the same as
 * the bias repeated per element with its grads added up. */
Test(alibi, shared_bias_grad_is_the_batch_sum)
{
    enum { B = 3, H = 2, L = 5, D = 2 };
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B, H, L, D}), *seed = tu_rand(&R, -1, 1, 4, (int[]){B, H, L, D});
    tg_tensor *bias = tu_rand(&R, -1, 1, 4, (int[]){1, H, L, L}), *full = tg_tensor_alloc(4, (int[]){B, H, L, L});
    full->requires_grad = true;
    for (int b = 0; b < B; b++) memcpy(full->data + b * bias->size, bias->data, bias->size * sizeof(tg_real));
    tg_tensor *bs[2] = {bias, full};
    for (int i = 0; i < 2; i++) {
        tg_tensor *y = tg_sdpa(T, q, q, q, &(tg_sdpa_opts){.bias = bs[i], .mask = &(tg_mask){.causal = true}}, NULL);
        cr_assert_eq(tg_backward(T, tg_sum(T, tg_mul(T, y, seed))), 0, "%s", tg_tape_error(T));
        tg_tape_reset(T);
    }
    for (size_t e = 0; e < bias->size; e++) {
        double want = 0;
        for (int b = 0; b < B; b++) want += full->grad[b * bias->size + e];
        tu_close(bias->grad[e], want, EQ_TOL);
    }
    for (int i = 0; i < L; i++)  /* masked entries (j > i) take nothing */
        for (int j = i + 1; j < L; j++) cr_assert_eq(bias->grad[i * L + j], 0);
    tu_free_all((tg_tensor *[]){q, seed, bias, full}, 4);
}

/* ---- the layer -------------------------------------------------------------------- */

Test(alibi, layer_vs_torch_both_modes)
{
    check_mha_fixture_both_modes("alibi_gqa_per_head.safetensors", TG_MHA_PER_HEAD);
    check_mha_fixture_both_modes("alibi_gqa_fused.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("alibi_fused.safetensors", TG_MHA_FUSED);
}

Test(alibi, gradcheck_layer_both_modes)
{
    for (int mode = 0; mode < 2; mode++) {
        tg_mha_config cfg = {.n_heads = 2, .n_kv_heads = mode ? 1 : 0, .d_model = 4, .d_head = 2, .bias = true,
                             .mode = mode ? TG_MHA_PER_HEAD : TG_MHA_FUSED, .alibi = true};
        check_mha_grads(&cfg, false, 80 + mode);
        check_mha_grads(&cfg, true, 90 + mode);
    }
}

Test(alibi, misuse_names_the_problem)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 3, 2}), *b = tu_rand(&R, -1, 1, 4, (int[]){3, 2, 3, 3});
    tg_tensor *b2 = tu_rand(&R, -1, 1, 4, (int[]){1, 2, 3, 4});
    assert_fails(T, tg_sdpa(T, q, q, q, &(tg_sdpa_opts){.bias = b}, NULL), "tg_sdpa", "bias [3,2,3,3]",
                 "[B or 1, H, Lq, Lk] = [2 or 1, 2, 3, 3]");
    assert_fails(T, tg_sdpa(T, q, q, q, &(tg_sdpa_opts){.bias = b2}, NULL), "tg_sdpa", "bias [1,2,3,4]");
    assert_fails(T, tg_sdpa(T, q, q, q, &(tg_sdpa_opts){.alibi = (double[]){0.5, NAN}}, NULL), "tg_sdpa",
                 "ALiBi slope 1 is nan");
    tu_free_all((tg_tensor *[]){q, b, b2}, 3);
}

/* Every allocation of a forward with a bias and ALiBi, and of its backward,
 * failing in turn: an error saying "out of memory", never a crash. */
static tg_tensor *bias_forward(tg_tape *t, void *ctx)
{
    tg_tensor **in = ctx;
    static const double slopes[2] = {0.5, 0.25};
    return tg_sdpa(t, in[0], in[0], in[0], &(tg_sdpa_opts){.bias = in[1], .alibi = slopes}, NULL);
}

Test(alibi, out_of_memory_is_an_error)
{
    tg_tensor *in[2] = {tu_rand(&R, -1, 1, 4, (int[]){1, 2, 3, 2}), tu_rand(&R, -1, 1, 4, (int[]){1, 2, 3, 3})};
    walk_out_of_memory(bias_forward, in, in, 2);
    tu_free_all(in, 2);
}

/* Per-head == fused on the same weights, with ALiBi and a bias per (batch,
 * head) (outputs, weights, every grad, the bias's included). */
Test(alibi, per_head_equals_fused)
{
    tg_mha_config a = {.n_heads = 4, .n_kv_heads = 2, .d_model = 4, .bias = true, .alibi = true};
    check_modes_agree(&a, false, true, MODES_TOL);
    check_modes_agree(&a, true, true, MODES_TOL);
}
