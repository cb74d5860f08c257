/* torch.nn.MultiheadAttention's options in both modes: kdim / vdim (keys and
 * values from inputs of their own widths, q/k/v_proj_weight), add_bias_kv,
 * add_zero_attn and unbatched [L, D] input, each against nn.MultiheadAttention
 * itself (bench/torch/make_attn_fixtures.py; its state_dict names load as
 * they are) in output, weights and every gradient, in fused and per-head
 * mode; gradchecks; the appended keys are visible to every query whatever
 * the mask; the files converted to per-head names and back; misuse. */
#include <string.h>

#include "fixture_util.h"
#include "ops_util.h"

TU_SUITE(mha_options, 23);

Test(mha_options, layer_vs_torch_both_modes)
{
    check_mha_fixture_both_modes("mha_kdim_vdim.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("mha_bias_kv_zero_attn.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("mha_unbatched.safetensors", TG_MHA_FUSED);
}

Test(mha_options, pytorch_names)
{
    const char *want[] = {"a.q_proj_weight", "a.k_proj_weight", "a.v_proj_weight", "a.in_proj_bias", "a.bias_k",
                          "a.bias_v", "a.out_proj.weight", "a.out_proj.bias"};
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = 2, .d_model = 4, .kdim = 3, .vdim = 5, .add_bias_kv = true, .bias = true,
                       .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "a", &c, &R), 0, "%s", tg_error());
    for (int i = 0; i < 8; i++) cr_assert_not_null(tg_params_get(p, want[i]), "%s", want[i]);
    cr_assert_null(tg_params_get(p, "a.in_proj_weight"));
    cr_assert_eq(tg_params_get(p, "a.k_proj_weight")->shape[1], 3);
    cr_assert_eq(tg_params_get(p, "a.bias_k")->ndim, 3);
    tg_params_free(p);
}

static void check_grads(tg_mha_mode mode, bool zero_attn)
{
    tg_mha_config cfg = {.n_heads = 2, .d_model = 4, .kdim = 3, .vdim = 2, .add_bias_kv = true,
                         .add_zero_attn = zero_attn, .bias = true, .mode = mode};
    check_mha_grads(&cfg, true, 5 + zero_attn);
}

Test(mha_options, gradcheck_both_modes)
{
    check_grads(TG_MHA_FUSED, true);
    check_grads(TG_MHA_PER_HEAD, false);
    tg_mha_config self = {.n_heads = 2, .d_model = 4, .add_zero_attn = true, .bias = true, .mode = TG_MHA_PER_HEAD};
    check_mha_grads(&self, false, 9);
}

/* A row whose every key is padded still sees the appended bias key. */
Test(mha_options, appended_keys_are_visible_to_every_query)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config cfg = {.n_heads = 1, .d_model = 2, .add_bias_kv = true, .add_zero_attn = true, .bias = true,
                         .mode = TG_MHA_PER_HEAD};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &cfg, &R), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){1, 3, 2}), *w;
    tg_mask mask = {.causal = true, .key_lens = tu_lens((int32_t[]){0}, 1)};
    cr_assert_not_null(tg_mha_forward(T, &m, x, x, &(tg_mha_opts){.mask = &mask}, &w), "%s", tg_tape_error(T));
    cr_assert(w->ndim == 4 && w->shape[3] == 5);
    for (int i = 0; i < 3; i++) {
        const tg_real *r = w->data + i * 5;
        cr_assert(r[0] == 0 && r[1] == 0 && r[2] == 0 && r[3] > 0 && r[4] > 0, "row %d", i);
        tu_close(r[3] + r[4], 1, TU_TOL);
    }
    tg_tensor_free(x);
    tg_params_free(p);
}

Test(mha_options, misuse_names_the_problem)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = 2, .n_kv_heads = 1, .d_model = 4, .add_bias_kv = true, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    cr_assert(strstr(tg_error(), "add_bias_kv does not combine with n_kv_heads < n_heads"), "%s", tg_error());
    c = (tg_mha_config){.n_heads = 2, .d_model = 4, .add_zero_attn = true, .rope = true, .mode = TG_MHA_PER_HEAD};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    cr_assert(strstr(tg_error(), "do not combine with rope or alibi (the appended keys have no position)"), "%s",
              tg_error());
    c = (tg_mha_config){.n_heads = 2, .d_model = 4, .kdim = 3, .vdim = 5, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, &R), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){1, 2, 4}), *k = tu_rand(&R, -1, 1, 3, (int[]){1, 3, 3});
    assert_fails(T, tg_mha_forward(T, &m, x, x, NULL, NULL), "tg_mha 'attn'", "xkv [B, Lk, 3]");
    assert_fails(T, tg_mha_forward(T, &m, x, k, NULL, NULL), "[B, Lk, 5] (vdim)", "pass it when vdim != kdim");
    tg_tensor *u = tu_rand(&R, -1, 1, 2, (int[]){2, 4});
    assert_fails(T, tg_mha_forward(T, &m, u, k, NULL, NULL), "unbatched xq [Lq, D] needs unbatched");
    tg_tensor *kv = tu_rand(&R, -1, 1, 3, (int[]){1, 3, 3}), *v = tu_rand(&R, -1, 1, 3, (int[]){1, 3, 5});
    tg_mask bad = {.key_lens = tu_lens((int32_t[]){4}, 1)};
    tg_mha mb;
    tg_mha_config cb = {.n_heads = 2, .d_model = 4, .kdim = 3, .vdim = 5, .add_zero_attn = true, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&mb, p, "b", &cb, &R), 0, "%s", tg_error());
    assert_fails(T, tg_mha_forward(T, &mb, x, kv, &(tg_mha_opts){.mask = &bad, .xv = v}, NULL), "tg_mha 'b'",
                 "key_lens[0] = 4 is outside [0, Lk = 3]");
    tg_tensor_free(kv);
    tg_tensor_free(v);
    tg_tensor *cache = tg_tensor_alloc(3, (int[]){1, 4, 16}), *x1 = tu_rand(&R, -1, 1, 3, (int[]){1, 1, 4});
    tg_no_grad_begin(T);
    assert_fails(T, tg_mha_decode(T, &m, x1, cache, tu_lens((int32_t[]){0}, 1), NULL), "tg_mha_decode 'attn'",
                 "no key/value cache with kdim");
    tg_tensor_free(cache);
    tg_tensor_free(x1);
    tu_free_all((tg_tensor *[]){x, k, u}, 3);
    tg_params_free(p);
}

/* Every allocation of a layer with every option (widened mask, appended
 * positions, separate projections) and of its backward failing in turn. */
typedef struct oom_run {
    tg_mha *m;
    tg_tensor *x[3];
} oom_run;

static const int32_t oom_lens[1] = {2};

static tg_tensor *options_forward(tg_tape *t, void *ctx)
{
    oom_run *r = ctx;
    tg_mask mask = {.causal = true, .key_lens = tu_lens(oom_lens, 1)};  /* made before the walk */
    return tg_mha_forward(t, r->m, r->x[0], r->x[1], &(tg_mha_opts){.mask = &mask, .xv = r->x[2]}, NULL);
}

Test(mha_options, out_of_memory_is_an_error)
{
    for (int mode = 0; mode < 2; mode++) {
        tg_params *p = tg_params_new();
        tg_mha m;
        tg_mha_config c = {.n_heads = 2, .d_model = 4, .kdim = 3, .vdim = 2, .add_bias_kv = true,
                           .add_zero_attn = true, .bias = true, .mode = mode ? TG_MHA_PER_HEAD : TG_MHA_FUSED};
        cr_assert_eq(tg_mha_init(&m, p, "attn", &c, &R), 0, "%s", tg_error());
        oom_run r = {&m, {tu_rand(&R, -1, 1, 3, (int[]){1, 2, 4}), tu_rand(&R, -1, 1, 3, (int[]){1, 3, 3}),
                          tu_rand(&R, -1, 1, 3, (int[]){1, 3, 2})}};
        tu_lens(oom_lens, 1);
        walk_out_of_memory(options_forward, &r, r.x, 3);
        tu_free_all(r.x, 3);
        tg_params_free(p);
    }
}

/* The fused set s converted to per-head names (which hold per_head_name)
 * and back: the same tensors bit for bit. -> the per-head set. */
static tg_safetensors *convert_round_trip(const tg_safetensors *s, int H, int Hkv, const char *per_head_name)
{
    tg_safetensors *ph = tg_mha_convert(s, TG_MHA_PER_HEAD, H, Hkv);
    cr_assert_not_null(ph, "%s", tg_error());
    cr_assert_not_null(tg_st_get(ph, per_head_name), "%s", per_head_name);
    tg_safetensors *back = tg_mha_convert(ph, TG_MHA_FUSED, H, Hkv);
    cr_assert_not_null(back, "%s", tg_error());
    cr_assert_eq(tg_st_count(back), tg_st_count(s));
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *a = tg_st_at(s, i), *b = tg_st_get(back, a->name);
        cr_assert(b && b->size == a->size && b->ndim == a->ndim, "%s", a->name);
        cr_assert_eq(memcmp(a->data, b->data, a->size * sizeof *a->data), 0, "%s", a->name);
    }
    tg_st_free(back);
    return ph;
}

/* nn.MultiheadAttention's files to per-head names and back, and the per-head
 * set loads into a per-head layer. */
static void check_convert(const char *file, const char *per_head_name)
{
    tg_safetensors *s = load_fixture(file);
    tg_safetensors *ph = convert_round_trip(s, meta_int(s, "n_heads"), 0, per_head_name);
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = meta_int(s, "n_heads"), .d_model = meta_int(s, "d_model"),
                       .kdim = meta_or(s, "kdim", 0), .vdim = meta_or(s, "vdim", 0),
                       .add_bias_kv = meta_or(s, "add_bias_kv", 0), .add_zero_attn = meta_or(s, "add_zero_attn", 0),
                       .bias = true, .mode = TG_MHA_PER_HEAD};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(p, ph, false, NULL), 0, "%s", tg_error());
    /* the same numbers where tg_mha_copy_weights puts the fused layer's */
    tg_params *pf = tg_params_new(), *pq = tg_params_new();
    tg_mha mf, mq;
    cr_assert_eq(tg_mha_init(&mq, pq, "attn", &c, NULL), 0, "%s", tg_error());
    c.mode = TG_MHA_FUSED;
    cr_assert_eq(tg_mha_init(&mf, pf, "attn", &c, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(pf, s, false, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_mha_copy_weights(&mq, &mf), 0, "%s", tg_error());
    cr_assert_eq(tg_params_numel(p), tg_params_numel(pq));
    cr_assert_eq(memcmp(tg_params_data(p), tg_params_data(pq), tg_params_numel(p) * sizeof(tg_real)), 0);
    tg_params_free(p), tg_params_free(pf), tg_params_free(pq);
    tg_st_free(s), tg_st_free(ph);
}

Test(mha_options, convert_between_modes)
{
    check_convert("mha_kdim_vdim.safetensors", "attn.heads.1.v_proj.weight");
    check_convert("mha_bias_kv_zero_attn.safetensors", "attn.heads.2.bias_v");
}

/* Per-head == fused on the same weights with every option (outputs, weights,
 * every grad). */
Test(mha_options, per_head_equals_fused)
{
    tg_mha_config o = {.n_heads = 2, .d_model = 4, .kdim = 3, .vdim = 5, .add_bias_kv = true, .add_zero_attn = true,
                       .bias = true};
    tg_mha_config self = {.n_heads = 2, .d_model = 4, .add_bias_kv = true, .bias = true};
    check_modes_agree(&o, true, true, MODES_TOL);
    check_modes_agree(&self, false, false, MODES_TOL);
}

/* kdim, vdim and add_zero_attn with the other variants (grouped heads, RoPE,
 * ALiBi), which one attention path serves together: gradchecks in both modes,
 * and the modes agree (outputs, weights, every grad, a learned bias too). */
Test(mha_options, combine_with_gqa_rope_alibi)
{
    tg_mha_config all = {.n_heads = 2, .n_kv_heads = 1, .d_model = 4, .kdim = 3, .vdim = 5, .rope = true,
                         .alibi = true, .bias = true};
    tg_mha_config zero = {.n_heads = 2, .n_kv_heads = 1, .d_model = 4, .add_zero_attn = true, .bias = true};
    for (int mode = 0; mode < 2; mode++) {
        all.mode = zero.mode = mode ? TG_MHA_PER_HEAD : TG_MHA_FUSED;
        check_mha_grads(&all, true, 31 + mode);
        check_mha_grads(&zero, false, 41 + mode);
        check_mha_grads(&zero, true, 43 + mode);
    }
    check_modes_agree(&all, true, true, MODES_TOL);
    check_modes_agree(&zero, true, true, MODES_TOL);
    check_modes_agree(&zero, false, false, MODES_TOL);
}

/* kdim = vdim = d_model given explicitly is the default layer: the same
 * parameters, the same bits, with RoPE, ALiBi and grouped heads too (it was
 * refused with them); it fills a key/value cache and decodes from it: the
 * last row of a whole pass. */
Test(mha_options, explicit_kdim_vdim_d_model_is_the_default)
{
    for (int mode = 0; mode < 2; mode++) {
        tg_mha_config c = {.n_heads = 4, .n_kv_heads = 2, .d_model = 8, .rope = true, .alibi = true, .bias = true,
                           .mode = mode ? TG_MHA_PER_HEAD : TG_MHA_FUSED};
        tg_params *p[2] = {tg_params_new(), tg_params_new()};
        tg_mha m[2];
        tg_tensor *out[2], *w[2], *dec[2];
        tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){2, 6, 8}), *x5 = tg_narrow(T, x, 1, 0, 5);
        tg_tensor *x1 = tg_narrow(T, x, 1, 5, 1), *cache = tg_tensor_alloc(3, (int[]){2, 6, 2 * 2 * 2});  /* 2 Ekv */
        tg_mask mask = {.causal = true};
        for (int i = 0; i < 2; i++) {
            tg_rng rng;
            tg_rng_seed(&rng, 9);
            c.kdim = c.vdim = i ? 8 : 0;
            cr_assert_eq(tg_mha_init(&m[i], p[i], "attn", &c, &rng), 0, "%s", tg_error());
            out[i] = tg_mha_forward(T, &m[i], x, x, &(tg_mha_opts){.mask = &mask}, &w[i]);
            cr_assert_not_null(out[i], "%s", tg_tape_error(T));
            bool prev = tg_no_grad_begin(T);
            cr_assert_not_null(tg_mha_forward(T, &m[i], x5, x5, &(tg_mha_opts){.mask = &mask, .cache = cache}, NULL),
                               "%s", tg_tape_error(T));
            dec[i] = tg_mha_decode(T, &m[i], x1, cache, tu_lens((int32_t[]){5, 5}, 2), NULL);
            cr_assert_not_null(dec[i], "%s", tg_tape_error(T));
            tg_no_grad_end(T, prev);
        }
        cr_assert_eq(tg_params_count(p[0]), tg_params_count(p[1]));
        cr_assert_eq(memcmp(tg_params_data(p[0]), tg_params_data(p[1]), tg_params_numel(p[0]) * sizeof(tg_real)), 0);
        cr_assert_eq(memcmp(out[0]->data, out[1]->data, out[0]->size * sizeof(tg_real)), 0);
        cr_assert_eq(memcmp(w[0]->data, w[1]->data, w[0]->size * sizeof(tg_real)), 0);
        cr_assert_eq(memcmp(dec[0]->data, dec[1]->data, dec[0]->size * sizeof(tg_real)), 0);
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 8; j++) tu_close(dec[1]->data[b * 8 + j], out[1]->data[(b * 6 + 5) * 8 + j], TU_TOL);
        tg_tensor_free(x);
        tg_tensor_free(cache);
        tg_params_free(p[0]);
        tg_params_free(p[1]);
    }
}

/* Both modes run the one attention op, so with dropout on they draw the same
 * masks from the same rng: the same output and input grads. */
Test(mha_options, dropout_is_the_same_in_both_modes)
{
    tg_mha_config c = {.n_heads = 2, .n_kv_heads = 1, .d_model = 4, .dropout = 0.5, .bias = true};
    tg_params *p[2] = {tg_params_new(), tg_params_new()};
    tg_mha m[2];
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){2, 6, 4});
    tg_real *out[2], *gx[2];
    size_t n_out = 0;
    for (int i = 0; i < 2; i++) {
        tg_rng rng;
        tg_rng_seed(&rng, 3);
        c.mode = i ? TG_MHA_PER_HEAD : TG_MHA_FUSED;
        cr_assert_eq(tg_mha_init(&m[i], p[i], "attn", &c, &rng), 0, "%s", tg_error());
        tg_tape *t = tg_tape_new();
        tg_free(x->grad), x->grad = NULL;
        tg_tensor *y = tg_mha_forward(t, &m[i], x, x, &(tg_mha_opts){.rng = &rng}, NULL);
        cr_assert_not_null(y, "%s", tg_tape_error(t));
        cr_assert_eq(tg_backward(t, tg_sum(t, tg_mul(t, y, y))), 0, "%s", tg_tape_error(t));
        n_out = y->size;
        out[i] = tg_malloc(n_out * sizeof(tg_real));
        memcpy(out[i], y->data, n_out * sizeof(tg_real));
        gx[i] = tg_malloc(x->size * sizeof(tg_real));
        memcpy(gx[i], x->grad, x->size * sizeof(tg_real));
        tg_tape_free(t);
    }
    bool dropped = false;
    for (size_t e = 0; e < n_out; e++) tu_close(out[1][e], out[0][e], MODES_TOL);
    for (size_t e = 0; e < x->size; e++) tu_close(gx[1][e], gx[0][e], MODES_TOL);
    /* and dropout did drop: eval mode gives another output */
    tg_tape *t = tg_tape_new();
    tg_tape_set_training(t, false);
    tg_tensor *ev = tg_mha_forward(t, &m[0], x, x, NULL, NULL);
    cr_assert_not_null(ev, "%s", tg_tape_error(t));
    for (size_t e = 0; e < ev->size; e++) dropped = dropped || ev->data[e] != out[0][e];
    cr_assert(dropped);
    tg_tape_free(t);
    for (int i = 0; i < 2; i++) tg_free(out[i]), tg_free(gx[i]), tg_params_free(p[i]);
    tg_tensor_free(x);
}

/* q/k/v_proj_weight with grouped heads ([E, D], [Ekv, kdim], [Ekv, vdim])
 * to per-head names and back, bit for bit. */
Test(mha_options, convert_grouped_separate_weights)
{
    tg_mha_config c = {.n_heads = 4, .n_kv_heads = 2, .d_model = 4, .d_head = 2, .kdim = 3, .vdim = 5, .bias = true};
    tg_params *p = tg_params_new();
    tg_mha m;
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, &R), 0, "%s", tg_error());
    cr_assert_eq(tg_params_get(p, "attn.k_proj_weight")->shape[0], 4);
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_st_add_params(s, p), 0, "%s", tg_error());
    tg_safetensors *ph = convert_round_trip(s, 4, 2, "attn.kv_heads.1.v_proj.weight");
    cr_assert_null(tg_st_get(ph, "attn.kv_heads.2.v_proj.weight"));
    tg_params *pp = tg_params_new();
    tg_mha mp;
    c.mode = TG_MHA_PER_HEAD;
    cr_assert_eq(tg_mha_init(&mp, pp, "attn", &c, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(pp, ph, false, NULL), 0, "%s", tg_error());
    tg_params_free(p), tg_params_free(pp);
    tg_st_free(s), tg_st_free(ph);
}
