/* Rows of the network ops: softmax, norms, dropout, attention, rope,
 * embedding (tests/op_cases.h). Element 1 of the first input is the NaN. */
#include "op_cases.h"

OC_BUILD(b_softmax, tg_softmax(t, x[0]))
OC_BUILD(b_log_softmax, tg_log_softmax(t, x[0]))
OC_BUILD(b_softmax_masked, tg_softmax_masked(t, x[0], &(tg_mask){.causal = true}, 0.5))
OC_BUILD(b_softmax_unmasked, tg_softmax_masked(t, x[0], NULL, 2))
OC_BUILD(b_layernorm, tg_layernorm(t, x[0], x[1], x[2], 1e-5))
OC_BUILD(b_rmsnorm, tg_rmsnorm(t, x[0], x[1], 1e-6))
OC_BUILD(b_dropout, tg_dropout(t, x[0], 0.5, OC_PTR(c, 0, c->rng)))
OC_BUILD(b_sdpa, tg_sdpa(t, x[0], x[1], x[2], NULL, NULL))
static const double slopes[2] = {0.5, 0.25};
/* causal, dropout, a bias with a grad, ALiBi, the weights asked for */
static tg_tensor *b_sdpa_opts(const oc_call *c)
{
    tg_tensor **x = c->in, *w;
    tg_sdpa_opts o = {.mask = &(tg_mask){.causal = true}, .scale = 0.7, .dropout = 0.25, .rng = c->rng,
                      .bias = x[3], .alibi = slopes};
    return tg_sdpa(c->t, x[0], x[1], x[2], &o, &w);
}
/* q and xkv packed [B, L, C]: head 0's k in columns 1..3, v in 0..1 of xkv (overlapping) */
static const tg_sdpa_layout heads = {.n_heads = 2, .dk = 2, .dv = 2, .q_col = 0, .k_col = 1, .v_col = 0,
                                     .n_kv_heads = 1};
OC_BUILD(b_sdpa_heads, tg_sdpa_heads(t, x[0], x[1], OC_PTR(c, 0, &heads), NULL, NULL))
/* One decoded position over a cache of 3 filled positions (of 4), not recorded:
 * the cache is an input of random keys and values. */
static const tg_sdpa_layout one = {.n_heads = 2, .dk = 2, .dv = 1, .n_kv_heads = 1};
static tg_tensor *b_sdpa_decode(const oc_call *c)
{
    tg_tape *t = c->t;
    bool rec = t ? tg_no_grad_begin(t) : false;
    tg_tensor *pos = OC_PTR(c, 1, OC_INDEX(TG_I32, ((const int32_t[]){2}), 1));
    tg_tensor *y = tg_sdpa_decode(t, c->in[0], c->in[1], OC_PTR(c, 0, &one), pos, NULL);
    if (c->t) tg_no_grad_end(c->t, rec);
    return y;
}
static tg_tensor *b_rope(const oc_call *c)
{
    tg_tape *t = c->t;
    tg_rope_opts o = {.col = 0, .n_heads = 2, .d_head = 2, .base = 100,
                      .pos0 = OC_INDEX(TG_I64, ((const int64_t[]){1}), 1)};
    return tg_rope(c->t, c->in[0], OC_PTR(c, 0, &o));
}
OC_BUILD(b_mask_visible, tg_mask_visible(t, &(tg_mask){.causal = true, .window = 2}, 2, 2, 3, 4))
OC_BUILD(b_embedding, tg_embedding(t, x[0], OC_PTR(c, 0, OC_INDEX(TG_I64, ((const int64_t[]){0, 3, 1, 0}), 2, 2))))

/* NaN: softmax and the norms spoil the NaN's row; a masked-out NaN is ignored
 * (PyTorch masks with -inf first); dropout keeps a dropped NaN (PyTorch
 * multiplies by the mask); attention spoils the NaN query's output row. */
static const op_case rows[] = {
    {"tg_softmax", b_softmax, 1, 1, 0, {OC_IN(-2, 2, 2, 3)}, OC_GROWS, "nnn...", NULL},
    {"tg_log_softmax", b_log_softmax, 1, 1, 0, {OC_IN(-2, 2, 2, 3)}, OC_GROWS, "nnn...", NULL},
    {"tg_softmax_masked", b_softmax_masked, 1, 1, 0, {OC_IN(-2, 2, 3, 3)}, 0, ".........", NULL},
    {"tg_softmax_masked", b_softmax_unmasked, 1, 1, 0, {OC_IN(-2, 2, 3, 3)}, 0, "nnn......", NULL},
    {"tg_layernorm", b_layernorm, 3, 1, 0, {OC_IN(-1, 1, 2, 3), OC_IN(0.5, 1.5, 3), OC_IN(-1, 1, 3)}, OC_GROWS, "nnn...",
     NULL},
    {"tg_rmsnorm", b_rmsnorm, 2, 1, 0, {OC_IN(-1, 1, 2, 3), OC_IN(0.5, 1.5, 3)}, OC_GROWS, "nnn...", NULL},
    {"tg_dropout", b_dropout, 1, 1, 1, {OC_IN(-1, 1, 2, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_sdpa", b_sdpa, 3, 3, 0, {OC_IN(-1, 1, 1, 1, 3, 2), OC_IN(-1, 1, 1, 1, 3, 2), OC_IN(-1, 1, 1, 1, 3, 2)}, OC_GROWS,
     "nn....", NULL},
    /* 2 query heads on 1 key/value head (grouped-query) */
    {"tg_sdpa", b_sdpa_opts, 4, 3, 0,
     {OC_IN(-1, 1, 1, 2, 3, 2), OC_IN(-1, 1, 1, 1, 3, 2), OC_IN(-1, 1, 1, 1, 3, 2), OC_IN(-1, 1, 1, 2, 3, 3)}, OC_GROWS,
     "nn..........", NULL},
    {"tg_sdpa_heads", b_sdpa_heads, 2, 2, 1, {OC_IN(-1, 1, 1, 3, 4), OC_IN(-1, 1, 1, 3, 3)}, OC_GROWS, "nn..........",
     NULL},
    {"tg_sdpa_decode", b_sdpa_decode, 2, 2, 2, {OC_IN(-1, 1, 1, 1, 4), OC_IN(-1, 1, 1, 4, 3)}, OC_NO_GRAD, "n.",
     "inference only: no gradcheck"},
    {"tg_rope", b_rope, 1, 1, 1, {OC_IN(-1, 1, 1, 3, 4)}, 0, "nn..........", NULL},
    {"tg_embedding", b_embedding, 1, 1, 1, {OC_IN(-1, 1, 4, 2)}, 0, ".n.....n", NULL},
    {"tg_mask_visible", b_mask_visible, 0, 0, 0, {{0}}, OC_NO_GRAD, NULL,
     "no tensor input (a mask's tensors are read through a pointer): no gradcheck, NaN or misuse row"},
};

const oc_family oc_nn = {"nn", rows, sizeof rows / sizeof rows[0]};
