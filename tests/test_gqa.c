/* Grouped-query and multi-query attention (n_kv_heads dividing n_heads):
 * tg_sdpa and tg_sdpa_heads with fewer key/value heads equal attention on
 * keys and values repeated per query head (outputs, weights, every grad,
 * the shared heads' grads summed over their group), with gradchecks; the
 * layer in both modes against PyTorch (bench/torch/make_attn_fixtures.py),
 * each file also run in the other mode; per-head equals fused from the same
 * seed and on copied weights (outputs, weights, every grad); misuse.
 * Decoding with the cache: tests/test_kv_cache.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_util.h"
#include "ops_util.h"

TU_SUITE(gqa, 31);

#ifdef TAPEGRAD_DOUBLE
#define EQ_TOL 1e-12
#else
#define EQ_TOL 1e-6
#endif

enum { GB = 2, GH = 4, GL = 5, GK = 6, GD = 3 };

/* k [B, Hkv, L, d] -> [B, H, L, d], each head repeated H / Hkv times (repeat_interleave). */
static tg_tensor *repeat_heads(const tg_tensor *k, int H)
{
    int B = k->shape[0], Hkv = k->shape[1], L = k->shape[2], d = k->shape[3];
    tg_tensor *r = tg_tensor_alloc(4, (int[]){B, H, L, d});
    r->requires_grad = true;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            memcpy(r->data + ((size_t)b * H + h) * L * d, k->data + ((size_t)b * Hkv + h / (H / Hkv)) * L * d,
                   (size_t)L * d * sizeof(tg_real));
    return r;
}

/* grad of the repeated [B, H, L, d] summed back over each group -> want [B, Hkv, L, d] */
static void assert_group_sum(const tg_tensor *k, const tg_tensor *rep)
{
    int B = k->shape[0], Hkv = k->shape[1], H = rep->shape[1], L = k->shape[2], d = k->shape[3];
    for (int b = 0; b < B; b++)
        for (int g = 0; g < Hkv; g++)
            for (size_t e = 0; e < (size_t)L * d; e++) {
                double want = 0;
                for (int h = g * (H / Hkv); h < (g + 1) * (H / Hkv); h++)
                    want += rep->grad[((size_t)b * H + h) * L * d + e];
                tu_close(k->grad[((size_t)b * Hkv + g) * L * d + e], want, EQ_TOL);
            }
}

static void check_sdpa_grouped(int Hkv, bool causal)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){GB, GH, GL, GD}), *k = tu_rand(&R, -1, 1, 4, (int[]){GB, Hkv, GK, GD});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){GB, Hkv, GK, GD + 1}), *kr = repeat_heads(k, GH), *vr = repeat_heads(v, GH);
    tg_tensor *q2 = tu_rand(&R, 0, 1, 4, (int[]){GB, GH, GL, GD}), *seed = tu_rand(&R, -1, 1, 4, (int[]){GB, GH, GL, GD + 1});
    memcpy(q2->data, q->data, q->size * sizeof(tg_real));
    tg_sdpa_opts o = {.mask = &(tg_mask){.causal = causal}};
    tg_tensor *w, *wr;
    tg_tensor *out = tg_sdpa(T, q, k, v, &o, &w), *ref = tg_sdpa(T, q2, kr, vr, &o, &wr);
    cr_assert(out && ref, "%s", tg_tape_error(T));
    for (size_t i = 0; i < out->size; i++) tu_close(out->data[i], ref->data[i], EQ_TOL);
    for (size_t i = 0; i < w->size; i++) tu_close(w->data[i], wr->data[i], EQ_TOL);
    cr_assert_eq(tg_backward(T, tg_sum(T, tg_mul(T, tg_add(T, out, ref), seed))), 0, "%s", tg_tape_error(T));
    for (size_t i = 0; i < q->size; i++) tu_close(q->grad[i], q2->grad[i], EQ_TOL);
    assert_group_sum(k, kr);
    assert_group_sum(v, vr);
    tu_free_all((tg_tensor *[]){q, k, v, kr, vr, q2, seed}, 7);
    tg_tape_reset(T);
}

Test(gqa, sdpa_equals_repeated_keys_and_values)
{
    check_sdpa_grouped(2, false);
    check_sdpa_grouped(2, true);
    check_sdpa_grouped(1, true);
    check_sdpa_grouped(GH, false);
}

static tg_tensor *sdpa_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_sdpa(t, in[0], in[1], in[2], ctx, NULL);
}

static tg_tensor *heads_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    /* qkv [B, L, H*d + 2*Hkv*d] in place: query heads 0..3, two key heads, two value heads */
    tg_sdpa_layout lay = {.n_heads = GH, .n_kv_heads = 2, .dk = GD, .dv = GD, .k_col = GH * GD, .v_col = (GH + 2) * GD};
    return tg_sdpa_heads(t, in[0], in[0], &lay, ctx, NULL);
}

Test(gqa, gradcheck_sdpa_and_sdpa_heads)
{
    tg_sdpa_opts causal = {.mask = &(tg_mask){.causal = true}}, plain = {0};
    for (int Hkv = 1; Hkv <= 2; Hkv++) {
        tg_tensor *in[3] = {tu_rand(&R, -1, 1, 4, (int[]){GB, GH, GL, GD}), tu_rand(&R, -1, 1, 4, (int[]){GB, Hkv, GK, GD}),
                            tu_rand(&R, -1, 1, 4, (int[]){GB, Hkv, GK, 2})};
        tu_gradcheck(sdpa_fn, Hkv == 1 ? &causal : &plain, in, 3);
        tu_free_all(in, 3);
    }
    tg_tensor *qkv = tu_rand(&R, -1, 1, 3, (int[]){GB, GL, (GH + 4) * GD});
    tu_gradcheck(heads_fn, &causal, &qkv, 1);
    tg_tensor_free(qkv);
}

/* ---- the layer ------------------------------------------------------------------- */

Test(gqa, layer_vs_torch_both_modes)
{
    check_mha_fixture_both_modes("gqa_per_head.safetensors", TG_MHA_PER_HEAD);
    check_mha_fixture_both_modes("gqa_fused.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("mqa_fused.safetensors", TG_MHA_FUSED);
}

/* The per-head file converted to fused names is the fused file's tensors
 * exactly, and back. */
Test(gqa, convert_gives_the_other_files_tensors)
{
    tg_safetensors *ph = load_fixture("gqa_per_head.safetensors"), *fu = load_fixture("gqa_fused.safetensors");
    tg_safetensors *to_f = tg_mha_convert(ph, TG_MHA_FUSED, GH, 2), *back = to_f ? tg_mha_convert(to_f, TG_MHA_PER_HEAD, GH, 2) : NULL;
    cr_assert(to_f && back, "%s", tg_error());
    const char *names[] = {"attn.in_proj_weight", "attn.in_proj_bias", "attn.kv_heads.1.v_proj.weight",
                           "attn.heads.3.q_proj.bias"};
    for (int i = 0; i < 4; i++) {
        const tg_tensor *a = tg_st_get(i < 2 ? to_f : back, names[i]), *b = tg_st_get(i < 2 ? fu : ph, names[i]);
        cr_assert(a && b && a->size == b->size, "%s", names[i]);
        cr_assert_eq(memcmp(a->data, b->data, a->size * sizeof *a->data), 0, "%s", names[i]);
    }
    cr_assert_null(tg_st_get(back, "attn.heads.0.k_proj.weight"));
    cr_assert_null(tg_mha_convert(ph, TG_MHA_FUSED, GH, 3));
    cr_assert(strstr(tg_error(), "n_kv_heads 3"), "%s", tg_error());
    tg_st_free(ph), tg_st_free(fu), tg_st_free(to_f), tg_st_free(back);
}

/* One seed, both modes: the same numbers drawn, so the same function. */
Test(gqa, same_seed_same_function_in_both_modes)
{
    tg_mha m[2];
    tg_params *p[2];
    tg_tensor *out[2], *x = tu_rand(&R, -1, 1, 3, (int[]){GB, GL, 8});
    for (int i = 0; i < 2; i++) {
        tg_rng rng;
        tg_rng_seed(&rng, 5);
        p[i] = tg_params_new();
        tg_mha_config c = {.n_heads = GH, .n_kv_heads = 2, .d_model = 8, .bias = true,
                           .mode = i ? TG_MHA_PER_HEAD : TG_MHA_FUSED};
        cr_assert_eq(tg_mha_init(&m[i], p[i], "attn", &c, &rng), 0, "%s", tg_error());
        /* in_proj [(4 + 2*2) * 2, 8] + [16], out_proj [8, 8] + [8], in either mode */
        cr_assert_eq(tg_params_numel(p[i]), (size_t)(16 * 8 + 16 + 8 * 8 + 8));
        out[i] = tg_mha_forward(T, &m[i], x, x, &(tg_mha_opts){.mask = &(tg_mask){.causal = true}}, NULL);
        cr_assert_not_null(out[i], "%s", tg_tape_error(T));
    }
    for (size_t e = 0; e < out[0]->size; e++) tu_close(out[0]->data[e], out[1]->data[e], EQ_TOL);
    tg_tensor_free(x);
    for (int i = 0; i < 2; i++) tg_params_free(p[i]);
}

Test(gqa, per_head_shares_one_key_value_head_per_group)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = 6, .n_kv_heads = 2, .d_model = 6, .d_head = 2, .bias = true, .mode = TG_MHA_PER_HEAD};
    cr_assert_eq(tg_mha_init(&m, p, "a", &c, NULL), 0, "%s", tg_error());
    cr_assert(m.heads[0].wk == m.heads[2].wk && m.heads[3].wv == m.heads[5].wv && m.heads[2].wk != m.heads[3].wk);
    cr_assert_not_null(tg_params_get(p, "a.kv_heads.1.v_proj.bias"));
    cr_assert_null(tg_params_get(p, "a.heads.0.k_proj.weight"));
    /* 6 query heads [2, 6] + 2 x (k, v) + out_proj [6, 12] */
    cr_assert_eq(tg_params_numel(p), (size_t)(6 * (12 + 2) + 4 * (12 + 2) + 6 * 12 + 6));
    tg_params_free(p);
}

Test(gqa, misuse_names_the_problem)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = 4, .n_kv_heads = 3, .d_model = 8, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    cr_assert(strstr(tg_error(), "n_kv_heads must divide n_heads") && strstr(tg_error(), "n_kv_heads 3"), "%s",
              tg_error());
    c.n_kv_heads = -1;
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){1, 4, 2, 2}), *k = tu_rand(&R, -1, 1, 4, (int[]){1, 3, 2, 2});
    tg_tensor *v2 = tu_rand(&R, -1, 1, 4, (int[]){1, 2, 2, 2});
    assert_fails(T, tg_sdpa(T, q, k, k, NULL, NULL), "tg_sdpa", "heads must divide q's", "[1,3,2,2]");
    assert_fails(T, tg_sdpa(T, q, k, v2, NULL, NULL), "tg_sdpa", "head dims, differ");
    tg_sdpa_layout lay = {.n_heads = 4, .n_kv_heads = 3, .dk = 1, .dv = 1, .k_col = 4, .v_col = 7};
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){1, 2, 10});
    assert_fails(T, tg_sdpa_heads(T, x, x, &lay, NULL, NULL), "tg_sdpa_heads", "n_kv_heads must divide n_heads",
                 "n_kv_heads 3");
    tu_free_all((tg_tensor *[]){q, k, v2, x}, 4);
    tg_params_free(p);
}

/* ---- gradchecks of the layer, w.r.t. the input and every parameter ---------------- */

static void check_layer_grads(tg_mha_mode mode, int Hkv)
{
    tg_mha_config cfg = {.n_heads = 4, .n_kv_heads = Hkv, .d_model = 4, .d_head = 2, .bias = true, .mode = mode};
    check_mha_grads(&cfg, false, 40 + Hkv);
}

Test(gqa, gradcheck_layer_both_modes)
{
    check_layer_grads(TG_MHA_FUSED, 2);
    check_layer_grads(TG_MHA_PER_HEAD, 2);
    check_layer_grads(TG_MHA_FUSED, 1);
    check_layer_grads(TG_MHA_PER_HEAD, 1);
}

/* Heatmaps title each head with its key/value group; a group count that does
 * not divide the heads is refused. */
Test(gqa, heatmap_labels_key_value_groups)
{
    tg_real w[2 * 4 * 3 * 3];
    for (int i = 0; i < 72; i++) w[i] = (tg_real)(i % 3) / 2;
    char path[] = "/tmp/tg_gqa_heatmap_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tg_heatmap_png_groups(path, w, 2, 4, 2, 3, 3, NULL, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_heatmap_png_groups(path, w, 2, 4, 3, 3, 3, NULL, NULL), -1);
    cr_assert(strstr(tg_error(), "n_kv_heads 3 must divide n_heads 4"), "%s", tg_error());
    unlink(path);
}

/* Per-head == fused on the same weights (outputs, weights, every grad). */
Test(gqa, per_head_equals_fused)
{
    tg_mha_config gqa = {.n_heads = 4, .n_kv_heads = 2, .d_model = 4, .d_head = 3, .bias = true};
    tg_mha_config mqa = {.n_heads = 4, .n_kv_heads = 1, .d_model = 4, .bias = true};
    check_modes_agree(&gqa, false, false, MODES_TOL);
    check_modes_agree(&gqa, true, false, MODES_TOL);
    check_modes_agree(&mqa, false, false, MODES_TOL);
}
