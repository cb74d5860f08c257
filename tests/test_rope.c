/* Rotary position embeddings: tg_rope against the rotation written out
 * (angles, the dims and columns it leaves alone, its positions), its
 * gradchecks; the layer with RoPE in both modes against PyTorch's LLaMA
 * formula (bench/torch/make_attn_fixtures.py: grouped-query with every dim
 * rotated, multi-head with half of them and another base), each file also
 * run in the other mode; layer gradchecks; misuse. Decoding with the cache:
 * tests/test_kv_cache.c; training: tests/test_train_variants.c. */
#include <math.h>
#include <string.h>

#include "fixture_util.h"
#include "ops_util.h"

TU_SUITE(rope, 17);

/* x [2, 3, 11]: two heads of 4 columns from column 2, 2 of each rotated. */
Test(rope, rotates_pairs_by_position_and_leaves_the_rest)
{
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){2, 3, 11});
    const int32_t pos0[2] = {0, 5};
    tg_rope_opts o = {.col = 2, .n_heads = 2, .d_head = 4, .rot = 2, .base = 7, .pos0 = tu_lens(pos0, 2)};
    tg_tensor *y = tg_rope(T, x, &o);
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    for (int b = 0; b < 2; b++)
        for (int l = 0; l < 3; l++) {
            const tg_real *xr = x->data + (b * 3 + l) * 11, *yr = y->data + (b * 3 + l) * 11;
            double a = pos0[b] + l;  /* pair 0: angle p / 7^0 */
            for (int c = 0; c < 11; c++) {
                int h = (c - 2) / 4, k = (c - 2) % 4;
                if (c < 2 || c >= 10 || k >= 2) {
                    cr_assert_eq(yr[c], xr[c], "column %d moved", c);
                    continue;
                }
                const tg_real *p = xr + 2 + 4 * h;
                double want = k == 0 ? p[0] * cos(a) - p[1] * sin(a) : p[0] * sin(a) + p[1] * cos(a);
                tu_close(yr[c], want, TU_TOL);
            }
        }
    /* the second pair of a full rotation turns by p / base^(2/4) */
    o = (tg_rope_opts){.n_heads = 1, .d_head = 4, .base = 100};
    tg_tensor *u = tg_tensor_alloc(3, (int[]){1, 4, 4});
    for (int l = 0; l < 4; l++) u->data[l * 4 + 2] = 1;
    y = tg_rope(T, u, &o);
    for (int l = 0; l < 4; l++) {
        tu_close(y->data[l * 4 + 2], cos(l / 10.0), TU_TOL);
        tu_close(y->data[l * 4 + 3], sin(l / 10.0), TU_TOL);
    }
    tg_tensor_free(x);
    tg_tensor_free(u);
}

static tg_tensor *rope_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_rope(t, in[0], ctx);
}

Test(rope, gradcheck)
{
    const int32_t pos0[2] = {3, 1};
    tg_rope_opts full = {.n_heads = 3, .d_head = 2}, part = {.col = 1, .n_heads = 2, .d_head = 5, .rot = 4, .base = 3,
                                                             .pos0 = tu_lens(pos0, 2)};
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){2, 4, 12});
    tu_gradcheck(rope_fn, &full, &x, 1);
    tu_gradcheck(rope_fn, &part, &x, 1);
    tg_tensor_free(x);
}

Test(rope, misuse_names_the_problem)
{
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){1, 2, 6});
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.n_heads = 2, .d_head = 3}), "tg_rope", "(3 of a head of 3)",
                 "must be even");
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 4, .rot = 6}), "tg_rope", "<= the head");
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.col = 3, .n_heads = 2, .d_head = 2}), "tg_rope",
                 "2 heads of 2 columns from column 3", "[1,2,6]");
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 2, .base = NAN}), "tg_rope", "base nan");
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 2, .pos0 = tu_lens((int32_t[]){-1}, 1)}),
                 "tg_rope", "pos0[0] = -1");
    /* the positions are an int64 or int32 tensor [B] */
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 2, .pos0 = tu_lens((int32_t[]){0, 0}, 2)}),
                 "tg_rope", "pos0 is [2], but it is [B] = [1]");
    tg_tensor *fpos = tg_tensor_zeros(T, 1, (int[]){1});
    assert_fails(T, tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 2, .pos0 = fpos}), "tg_rope",
                 "pos0 is float", "int64 or int32");
    int64_t p64 = 3;
    tg_tensor *y32 = tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 2, .pos0 = tu_lens((int32_t[]){3}, 1)});
    tg_tensor *y64 = tg_rope(T, x, &(tg_rope_opts){.n_heads = 1, .d_head = 2,
                                                   .pos0 = tg_tensor_from_dtype(T, TG_I64, &p64, 1, (int[]){1})});
    cr_assert(y32 && y64 && memcmp(y32->data, y64->data, y32->size * sizeof(tg_real)) == 0, "int64 positions");
    assert_fails(T, tg_rope(T, x, NULL), "tg_rope", "opts is NULL");
    /* the layer: an odd head width rotated whole, a share leaving no pair */
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config c = {.n_heads = 2, .d_model = 6, .rope = true, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    cr_assert(strstr(tg_error(), "RoPE rotates pairs of dims: 3 of a head of 3"), "%s", tg_error());
    c.d_model = 8, c.rope_frac = 0.2;
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    cr_assert(strstr(tg_error(), "rope_frac 0.2 leaves fewer than 2"), "%s", tg_error());
    c.rope_frac = 1.5;
    cr_assert_eq(tg_mha_init(&m, p, "attn", &c, NULL), -1);
    cr_assert(strstr(tg_error(), "rope_frac must be in [0, 1]"), "%s", tg_error());
    tg_model mo;
    tg_model_config mc = {.vocab = 4, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 4, .pos = 3};
    cr_assert_eq(tg_model_init(&mo, p, &mc, NULL), -1);
    cr_assert(strstr(tg_error(), "pos 3"), "%s", tg_error());
    tg_tensor_free(x);
    tg_params_free(p);
}

/* ---- the layer -------------------------------------------------------------------- */

Test(rope, layer_vs_torch_both_modes)
{
    check_mha_fixture_both_modes("rope_gqa_per_head.safetensors", TG_MHA_PER_HEAD);
    check_mha_fixture_both_modes("rope_gqa_fused.safetensors", TG_MHA_FUSED);
    check_mha_fixture_both_modes("rope_partial_fused.safetensors", TG_MHA_FUSED);
}

static void check_layer_grads(tg_mha_mode mode, int Hkv, double frac, bool cross)
{
    tg_mha_config cfg = {.n_heads = 2, .n_kv_heads = Hkv, .d_model = 4, .d_head = 4, .bias = true, .mode = mode,
                         .rope = true, .rope_base = 50, .rope_frac = frac};
    check_mha_grads(&cfg, cross, 60 + Hkv);
}

Test(rope, gradcheck_layer_both_modes)
{
    check_layer_grads(TG_MHA_FUSED, 0, 0, false);
    check_layer_grads(TG_MHA_PER_HEAD, 1, 0.5, false);
    check_layer_grads(TG_MHA_FUSED, 1, 0.5, true);
    check_layer_grads(TG_MHA_PER_HEAD, 0, 0, true);
}

/* Every allocation of tg_rope with positions, and of its backward, failing in turn. */
static tg_tensor *rope_forward(tg_tape *t, void *ctx)
{
    return tg_rope(t, ctx, &(tg_rope_opts){.n_heads = 2, .d_head = 2, .pos0 = tu_lens((const int32_t[]){2}, 1)});
}

Test(rope, out_of_memory_is_an_error)
{
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){1, 3, 4});
    tu_lens((const int32_t[]){2}, 1);  /* the positions' tensor made before any allocation fails */
    walk_out_of_memory(rope_forward, x, &x, 1);
    tg_tensor_free(x);
}

/* Per-head == fused on the same weights (outputs, weights, every grad). */
Test(rope, per_head_equals_fused)
{
    tg_mha_config full = {.n_heads = 2, .d_model = 4, .d_head = 4, .bias = true, .rope = true};
    tg_mha_config part = {.n_heads = 4, .n_kv_heads = 2, .d_model = 4, .d_head = 6, .bias = true, .rope = true,
                          .rope_base = 100, .rope_frac = 0.7};
    check_modes_agree(&full, false, false, MODES_TOL);
    check_modes_agree(&part, false, false, MODES_TOL);
    check_modes_agree(&part, true, false, MODES_TOL);
}

/* y and dx of one head's pair i at position p, written out as the rotation
 * was before its cos and sin were tabled: each angle, cos and sin recomputed
 * for every head of every row. */
static void rotate_direct(const tg_real *x, tg_real *y, int r, double base, int p, int sign)
{
    for (int i = 0; i < r / 2; i++) {
        double a = p / pow(base, 2.0 * i / r);
        tg_real c = (tg_real)cos(a), s = (tg_real)(sign * sin(a)), x0 = x[2 * i], x1 = x[2 * i + 1];
        y[2 * i] = x0 * c - x1 * s;
        y[2 * i + 1] = x0 * s + x1 * c;
    }
}

/* The table of (position, pair) cos and sin gives the bits of computing
 * them for every head of every row, forward and backward: odd widths, part
 * of a head rotated, batch rows at repeated and distinct decoding offsets. */
Test(rope, the_table_equals_recomputing_every_angle_bit_for_bit)
{
    const int32_t pos0[5] = {7, 7, 0, 1000, 7};
    const tg_rope_opts cases[] = {
        {.col = 1, .n_heads = 3, .d_head = 7, .rot = 4, .base = 500, .pos0 = tu_lens(pos0, 5)},
        {.n_heads = 2, .d_head = 10, .rot = 6},  /* rope_frac 0.6 of a layer */
        {.col = 3, .n_heads = 1, .d_head = 2, .pos0 = tu_lens(pos0, 5)},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const tg_rope_opts *o = &cases[k];
        int B = 5, L = 9, C = o->col + o->n_heads * o->d_head + 2, r = o->rot ? o->rot : o->d_head;
        double base = o->base > 0 ? o->base : 10000;
        tg_tensor *x = tu_rand(&R, -2, 2, 3, (int[]){B, L, C}), *w = tu_rand(&R, -1, 1, 3, (int[]){B, L, C});
        x->requires_grad = true;
        tg_tensor *y = tg_rope(T, x, o);
        cr_assert_not_null(y, "%s", tg_tape_error(T));
        cr_assert_eq(tg_backward(T, tg_sum(T, tg_mul(T, y, w))), 0, "%s", tg_error());  /* dy = w */
        tg_real want[32], dwant[32];
        for (int b = 0; b < B; b++)
            for (int l = 0; l < L; l++)
                for (int h = 0; h < o->n_heads; h++) {
                    size_t at = ((size_t)b * L + l) * C + o->col + (size_t)h * o->d_head;
                    int p = (o->pos0 ? pos0[b] : 0) + l;
                    rotate_direct(x->data + at, want, r, base, p, 1);
                    rotate_direct(w->data + at, dwant, r, base, p, -1);
                    for (int i = 0; i < r; i++) {
                        cr_assert(y->data[at + i] == want[i], "case %zu (b %d, l %d, h %d, dim %d): %a, want %a", k, b,
                                  l, h, i, (double)y->data[at + i], (double)want[i]);
                        cr_assert(x->grad[at + i] == dwant[i], "case %zu (b %d, l %d, h %d, dim %d): grad %a, want %a",
                                  k, b, l, h, i, (double)x->grad[at + i], (double)dwant[i]);
                    }
                }
        tg_tape_reset(T);
        tg_tensor_free(x);
        tg_tensor_free(w);
    }
}
