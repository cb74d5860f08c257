/* Numerical robustness at library level (docs/RELIABILITY.md):
 * huge logits through cross-entropy and through the whole model, and the
 * degenerate sizes of the toy model (sequence length 1, one head, batch 1,
 * d_head 1, every key masked, a one-symbol vocabulary, V = 1, d_model 1).
 * Each either works (finite logits, loss and gradients, and a gradcheck of
 * the loss w.r.t. every parameter with the default tolerances) or is refused
 * with a message. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static bool all_finite(const tg_real *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

/* ---- huge logits through cross-entropy ---------------------------------------------------- */

/* loss and grad of cross-entropy of logits [N, V] (heap tensor, grad reset) */
static tg_real ce(tg_tensor *x, const int32_t *targets)
{
    tg_tape *t = tg_tape_new();
    if (x->grad) memset(x->grad, 0, x->size * sizeof(tg_real));
    tg_tensor *l = tg_cross_entropy(t, x, tg_tensor_from_dtype(t, TG_I32, targets, 1, x->shape), TG_IGNORE);
    cr_assert_not_null(l, "%s", tg_tape_error(t));
    cr_assert_eq(tg_backward(t, l), 0, "%s", tg_tape_error(t));
    tg_real v = l->data[0];
    tg_tape_free(t);
    return v;
}

/* Cross-entropy is shift invariant per row: logits + 1e4 (and - 1e4) give the
 * loss and gradient of the O(1) logits, up to the rounding of the shifted
 * inputs (ulp(1e4) ~ 1e-3 in float). */
Test(robust, cross_entropy_logits_1e4_shift_invariant)
{
    enum { N = 4, V = 6 };
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -2, 2, 2, (int[]){N, V});
    const int32_t y[N] = {0, 5, TG_IGNORE, 2};
    tg_real L = ce(x, y), g[N * V];
    memcpy(g, x->grad, sizeof g);
#ifdef TAPEGRAD_DOUBLE
    const double tol = 1e-9;
#else
    const double tol = 2e-3;
#endif
    for (int sign = -1; sign <= 1; sign += 2) {
        tg_tensor *xs = tu_rand(&rng, 0, 0, 2, (int[]){N, V});
        for (int i = 0; i < N * V; i++) xs->data[i] = x->data[i] + (tg_real)(sign * 1e4);
        tg_real Ls = ce(xs, y);
        cr_assert(isfinite(Ls) && all_finite(xs->grad, xs->size));
        tu_close(Ls, L, tol);
        for (int i = 0; i < N * V; i++) tu_close(xs->grad[i], g[i], tol);
        tg_tensor_free(xs);
    }
    tg_tensor_free(x);
}

/* Logits spread over +-1e4 in one row: the loss is 0 for the top class, about
 * 2e4 for the bottom one, and the gradient (softmax - onehot) / n stays in
 * [-1/n, 1/n]: nothing overflows. */
Test(robust, cross_entropy_logits_1e4_spread)
{
    tg_tensor *x = tg_tensor_alloc(2, (int[]){3, 4});
    const tg_real v[12] = {1e4, 0, -1e4, 5e3, 1e4, 0, -1e4, 5e3, 1e4, 1e4, 1e4, 1e4};
    memcpy(x->data, v, sizeof v);
    x->requires_grad = true;
    const int32_t y[3] = {0, 2, 1};
    tg_real L = ce(x, y);
    /* row 0: 0; row 1: 2e4; row 2: log 4 */
    tu_close(L, (0 + 2e4 + log(4.0)) / 3, 1e-6);
    cr_assert(all_finite(x->grad, x->size));
    for (int i = 0; i < 12; i++) cr_assert(fabs((double)x->grad[i]) <= 1.0 / 3 + 1e-6, "grad[%d] = %g", i, (double)x->grad[i]);
    tu_close(x->grad[0], 0, 1e-6);                /* row 0 predicts its target surely */
    tu_close(x->grad[6], -1.0 / 3, 1e-6);         /* row 1: target has probability ~0 */
    tu_close(x->grad[4], 1.0 / 3, 1e-6);          /* ... and the top class takes it all */
    for (int j = 0; j < 4; j++) tu_close(x->grad[8 + j], (0.25 - (j == 1)) / 3, 1e-3);
    tg_tensor_free(x);
}

/* Equal logits of 1e7: softmax is exactly 1/4 each. The log-sum-exp is kept
 * in double for backward; rounded to float it would give 0.37 here. */
Test(robust, cross_entropy_large_equal_logits_exact_grad)
{
    tg_tensor *x = tg_tensor_alloc(2, (int[]){1, 4});
    for (int j = 0; j < 4; j++) x->data[j] = (tg_real)1e7;
    x->requires_grad = true;
    const int32_t y[1] = {2};
    tg_real L = ce(x, y);
    tu_close(L, log(4.0), 1e-6);
    for (int j = 0; j < 4; j++) tu_close(x->grad[j], 0.25 - (j == 2), 1e-6);
    tg_tensor_free(x);
}

/* softmax / log_softmax of 1e4-sized rows: finite, rows of softmax sum to 1. */
Test(robust, softmax_family_logits_1e4)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(2, (int[]){2, 3});
    const tg_real v[6] = {1e4, -1e4, 0, 1e4, 1e4, -1e4};
    memcpy(x->data, v, sizeof v);
    x->requires_grad = true;
    tg_tensor *s = tg_softmax(t, x), *ls = tg_log_softmax(t, x);
    cr_assert(s && ls, "%s", tg_tape_error(t));
    cr_assert(all_finite(s->data, 6) && all_finite(ls->data, 6));
    tu_close(s->data[0], 1, 1e-6);
    tu_close(s->data[3] + s->data[4], 1, 1e-6);
    tu_close(ls->data[1], -2e4, 1e-6);
    cr_assert_eq(tg_backward(t, tg_add(t, tg_sum(t, tg_mul(t, s, s)), tg_sum(t, ls))), 0, "%s", tg_tape_error(t));
    cr_assert(all_finite(x->grad, 6));
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* ---- the toy model at its edges -------------------------------------------------------------- */

typedef struct mcase {
    tg_model m;
    int B, T;
    const int32_t *ids, *lens, *targets;
} mcase;

/* The case's forward: ids [B, T] and lens [B] as int32 tensors of t. */
static tg_tensor *case_forward(tg_tape *t, mcase *c, tg_tensor **attn)
{
    tg_model_opts o = {.lens = c->lens ? tg_tensor_from_dtype(t, TG_I32, c->lens, 1, (int[]){c->B}) : NULL};
    return tg_model_forward(t, &c->m, tg_tensor_from_dtype(t, TG_I32, c->ids, 2, (int[]){c->B, c->T}), &o, attn);
}

static tg_tensor *loss_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)in;
    mcase *c = ctx;
    tg_tensor *logits = case_forward(t, c, NULL);
    return tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, c->targets, 2, (int[]){c->B, c->T}), TG_IGNORE);
}

/* Builds the model (biases and LayerNorms nudged off 0 / 1), checks that the
 * logits, the loss and every parameter gradient are finite, returns the
 * attention weights of layer 0 through *attn0 (copied, caller frees) and runs
 * a gradcheck of the loss w.r.t. every parameter. */
static void model_case(tg_model_config cfg, mcase *c, tg_real **attn0)
{
    tg_rng rng;
    tg_rng_seed(&rng, 21);
    tg_params *p = tg_params_new();
    cr_assert_eq(tg_model_init(&c->m, p, &cfg, &rng), 0, "%s", tg_error());
    tg_real *d = tg_params_data(p);
    for (size_t i = 0; i < tg_params_numel(p); i++) d[i] += (tg_real)(0.1 * (2 * tg_rng_uniform(&rng) - 1));
    tg_tape *t = tg_tape_new();
    tg_tensor **attn = calloc((size_t)cfg.n_layers, sizeof *attn);
    tg_tensor *logits = case_forward(t, c, attn);
    cr_assert_not_null(logits, "%s", tg_tape_error(t));
    cr_assert(logits->shape[0] == c->B && logits->shape[1] == c->T && logits->shape[2] == cfg.vocab);
    cr_assert(all_finite(logits->data, logits->size));
    if (attn0) {
        size_t n = attn[0]->size;
        *attn0 = malloc(n * sizeof **attn0);
        memcpy(*attn0, attn[0]->data, n * sizeof **attn0);
    }
    tg_tensor *loss = tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, c->targets, 2, (int[]){c->B, c->T}), TG_IGNORE);
    cr_assert_not_null(loss, "%s", tg_tape_error(t));
    cr_assert(isfinite(loss->data[0]));
    tg_params_zero_grad(p);
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    cr_assert(all_finite(tg_params_grad(p), tg_params_numel(p)));
    tg_tape_free(t);
    free(attn);
    int n = tg_params_count(p);
    tg_tensor **in = malloc((size_t)n * sizeof *in);
    for (int i = 0; i < n; i++) in[i] = tg_params_at(p, i);
    tu_gradcheck(loss_fn, c, in, n);
    free(in);
    tg_model_free(&c->m);
    tg_params_free(p);
}

static const int32_t IDS[8] = {1, 4, 5, 2, 6, 3, 0, 0}, TGT[8] = {4, 5, 2, 6, 3, TG_IGNORE, TG_IGNORE, 1};

Test(robust, sequence_length_1)
{
    const int32_t ids[3] = {1, 4, 6}, tgt[3] = {4, 5, 2};
    for (int mode = 0; mode < 2; mode++) {
        mcase c = {.B = 3, .T = 1, .ids = ids, .targets = tgt};
        model_case((tg_model_config){.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 4,
                                     .mode = mode},
                   &c, NULL);
    }
}

Test(robust, one_head_batch_1)
{
    for (int mode = 0; mode < 2; mode++) {
        mcase c = {.B = 1, .T = 8, .ids = IDS, .targets = TGT};
        model_case((tg_model_config){.vocab = 7, .d_model = 6, .n_layers = 1, .n_heads = 1, .max_len = 8,
                                     .mode = mode},
                   &c, NULL);
    }
}

Test(robust, d_head_1)
{
    for (int mode = 0; mode < 2; mode++) {
        mcase c = {.B = 2, .T = 4, .ids = IDS, .targets = TGT};
        model_case((tg_model_config){.vocab = 7, .d_model = 6, .n_layers = 1, .n_heads = 3, .d_head = 1,
                                     .max_len = 4, .mode = mode},
                   &c, NULL);
    }
}

/* lens[0] = 0: every key of sequence 0 is masked for every query. Its
 * attention weights are exactly zero (so the block adds out_proj's bias),
 * everything stays finite and the gradient is exact (no kink: the masked
 * entries are constants). */
Test(robust, all_keys_masked)
{
    const int32_t lens[2] = {0, 3};
    for (int mode = 0; mode < 2; mode++) {
        mcase c = {.B = 2, .T = 4, .ids = IDS, .lens = lens, .targets = TGT};
        tg_real *w;
        model_case((tg_model_config){.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 4,
                                     .mode = mode},
                   &c, &w);
        for (int i = 0; i < 2 * 4 * 4; i++) cr_assert_eq(w[i], 0, "weight %d of the masked sequence", i);
        for (int h = 0; h < 2; h++)  /* sequence 1: rows of visible keys sum to 1 */
            for (int q = 0; q < 4; q++) {
                double s = 0;
                for (int k = 0; k < 4; k++) s += w[((2 + h) * 4 + q) * 4 + k];
                tu_close(s, 1, 1e-5);
            }
        free(w);
    }
}

/* The seqtask vocabulary with one symbol: PAD, BOS, SEP, EOS + 1 = 5 tokens. */
Test(robust, vocabulary_of_one_symbol)
{
    const int32_t ids[6] = {1, 4, 2, 4, 3, 0}, tgt[6] = {TG_IGNORE, TG_IGNORE, 4, 3, TG_IGNORE, TG_IGNORE};
    mcase c = {.B = 1, .T = 6, .ids = ids, .targets = tgt};
    model_case((tg_model_config){.vocab = 5, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 6}, &c, NULL);
}

/* V = 1: the only class is always right: loss exactly 0, gradient exactly 0. */
Test(robust, vocab_1)
{
    const int32_t ids[4] = {0, 0, 0, 0}, tgt[4] = {0, 0, TG_IGNORE, 0};
    mcase c = {.B = 2, .T = 2, .ids = ids, .targets = tgt};
    model_case((tg_model_config){.vocab = 1, .d_model = 4, .n_layers = 1, .n_heads = 2, .max_len = 2}, &c, NULL);
    tg_tensor *x = tg_tensor_alloc(2, (int[]){3, 1});
    x->data[0] = 1e4;
    x->requires_grad = true;
    cr_assert_eq(ce(x, (int32_t[]){0, 0, 0}), 0);
    for (int i = 0; i < 3; i++) cr_assert_eq(x->grad[i], 0);
    tg_tensor_free(x);
}

/* d_model 1 (one head of size 1) is allowed: each LayerNorm over one
 * feature outputs its bias exactly (x - mean = 0, rstd = 1/sqrt(eps) is
 * finite), so the logits are the same at every position and only ln_f.bias
 * and head get a gradient; every other gradient is exactly 0. */
Test(robust, d_model_1)
{
    for (int mode = 0; mode < 2; mode++) {
        mcase c = {.B = 2, .T = 4, .ids = IDS, .targets = TGT};
        model_case((tg_model_config){.vocab = 7, .d_model = 1, .n_layers = 2, .n_heads = 1, .max_len = 4,
                                     .mode = mode},
                   &c, NULL);
    }
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 7, .d_model = 1, .n_layers = 2, .n_heads = 1, .max_len = 4};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *logits = tg_model_forward(t, &m, tg_tensor_from_dtype(t, TG_I32, IDS, 2, (int[]){2, 4}), NULL, NULL);
    cr_assert_not_null(logits, "%s", tg_tape_error(t));
    for (size_t i = 7; i < logits->size; i++) cr_assert_eq(logits->data[i], logits->data[i % 7]);
    tg_params_zero_grad(p);
    cr_assert_eq(tg_backward(t, tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, TGT, 2, (int[]){2, 4}), TG_IGNORE)), 0, "%s", tg_tape_error(t));
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *x = tg_params_at(p, i);
        bool live = strcmp(x->name, "ln_f.bias") == 0 || strncmp(x->name, "head.", 5) == 0;
        for (size_t k = 0; !live && k < x->size; k++) cr_assert_eq(x->grad[k], 0, "%s[%zu]", x->name, k);
    }
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
    /* two heads cannot share one feature unless d_head is given */
    p = tg_params_new();
    cfg.n_heads = 2;
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), -1);
    cr_assert(strstr(tg_error(), "d_model must divide by n_heads"), "%s", tg_error());
    tg_params_free(p);
}

/* Huge logits from the model itself (head.bias = +-1e4): loss and every
 * parameter gradient stay finite. */
Test(robust, model_with_logits_1e4)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 4};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0);
    tg_tensor *hb = tg_params_get(p, "head.bias");
    for (int v = 0; v < 7; v++) hb->data[v] = (tg_real)(v % 2 ? 1e4 : -1e4);
    tg_tape *t = tg_tape_new();
    tg_tensor *ids = tg_tensor_from_dtype(t, TG_I32, IDS, 2, (int[]){2, 4});
    tg_tensor *loss = tg_cross_entropy(t, tg_model_forward(t, &m, ids, NULL, NULL),
                                       tg_tensor_from_dtype(t, TG_I32, TGT, 2, (int[]){2, 4}), TG_IGNORE);
    cr_assert_not_null(loss, "%s", tg_tape_error(t));
    cr_assert(isfinite(loss->data[0]) && loss->data[0] > 1e3);  /* even targets sit 2e4 below the odd ones */
    tg_params_zero_grad(p);
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    cr_assert(all_finite(tg_params_grad(p), tg_params_numel(p)));
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

/* Degenerate sizes that cannot work are refused with a message. */
Test(robust, empty_sizes_refused)
{
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 4};
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *none = tg_tensor_zeros_dtype(t, TG_I32, 2, (int[]){0, 4});
    cr_assert_null(tg_model_forward(t, &m, none, NULL, NULL));  /* batch 0 */
    cr_assert(strstr(tg_tape_error(t), "with B > 0"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    none = tg_tensor_zeros_dtype(t, TG_I32, 2, (int[]){1, 0});
    cr_assert_null(tg_model_forward(t, &m, none, NULL, NULL));  /* length 0 */
    cr_assert(strstr(tg_tape_error(t), "0 < T <= max_len 4"), "%s", tg_tape_error(t));
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
    const tg_model_config bad[] = {
        {.vocab = 0, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 4},
        {.vocab = 7, .d_model = 0, .n_layers = 1, .n_heads = 2, .max_len = 4},
        {.vocab = 7, .d_model = 8, .n_layers = 1, .n_heads = 0, .max_len = 4},
        {.vocab = 7, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 0},
    };
    for (int i = 0; i < 4; i++) {
        p = tg_params_new();
        cr_assert_eq(tg_model_init(&m, p, &bad[i], NULL), -1);
        cr_assert(strstr(tg_error(), "tg_model: bad config"), "%s", tg_error());
        tg_params_free(p);
    }
}
