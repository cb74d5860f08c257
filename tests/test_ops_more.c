/* Shape, layernorm, embedding, cross-entropy and dropout ops: hand-computed
 * forward values, backward by hand where it is short, gradchecks of every op,
 * and every validation error. */
#include <string.h>

#include "test_util.h"

/* An arena tensor holding vals (n = product of shape). */
static tg_tensor *mk(tg_tape *t, int ndim, const int *shape, const tg_real *vals)
{
    tg_tensor *x = tg_tensor_from(t, vals, ndim, shape);
    cr_assert_not_null(x, "%s", tg_tape_error(t) ? tg_tape_error(t) : "");
    return x;
}

/* A heap tensor with values 0, 1, 2, ... (requires_grad set). */
static tg_tensor *iota(int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    cr_assert_not_null(x);
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)i;
    x->requires_grad = true;
    return x;
}

/* The op returned NULL and the tape's message names every needle. */
#define assert_fails(t, res, ...)                                                              \
    do {                                                                                       \
        cr_assert_null(res, "expected an error");                                              \
        const char *msg_ = tg_tape_error(t);                                                   \
        cr_assert_not_null(msg_, "no error message");                                          \
        const char *needles_[] = {__VA_ARGS__};                                                \
        for (size_t k_ = 0; k_ < sizeof needles_ / sizeof *needles_; k_++)                     \
            cr_assert(strstr(msg_, needles_[k_]), "message \"%s\" lacks \"%s\"", msg_, needles_[k_]); \
        tg_tape_clear_error(t);                                                                \
    } while (0)

/* ---- forward values --------------------------------------------------------- */

Test(shape, permute_and_transpose_values)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){2, 3, 4});
    tg_tensor *p = tg_permute(t, x, (int[]){2, 0, 1});
    cr_assert_not_null(p);
    cr_assert(p->ndim == 3 && p->shape[0] == 4 && p->shape[1] == 2 && p->shape[2] == 3);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) cr_assert_eq(p->data[(k * 2 + i) * 3 + j], i * 12 + j * 4 + k);
    tg_tensor *tr = tg_transpose(t, x, -1, 0);  /* [4,3,2], tr[k,j,i] = x[i,j,k] */
    cr_assert_not_null(tr);
    cr_assert(tr->shape[0] == 4 && tr->shape[1] == 3 && tr->shape[2] == 2);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++) cr_assert_eq(tr->data[(k * 3 + j) * 2 + i], i * 12 + j * 4 + k);
    /* backward of permute: d x[i,j,k] = d p[k,i,j] */
    tg_real seed[24];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) seed[(k * 2 + i) * 3 + j] = (tg_real)(100 * k + 10 * i + j);
    cr_assert_eq(tg_backward_seed(t, p, seed), 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) cr_assert_eq(x->grad[i * 12 + j * 4 + k], 100 * k + 10 * i + j);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(shape, split_merge_round_trip)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){2, 3, 6});
    tg_tensor *s = tg_split_heads(t, x, 3);
    cr_assert_not_null(s);
    cr_assert(s->ndim == 4 && s->shape[0] == 2 && s->shape[1] == 3 && s->shape[2] == 3 && s->shape[3] == 2);
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 3; h++)
            for (int l = 0; l < 3; l++)
                for (int d = 0; d < 2; d++)
                    cr_assert_eq(s->data[((b * 3 + h) * 3 + l) * 2 + d], x->data[(b * 3 + l) * 6 + h * 2 + d]);
    tg_tensor *m = tg_merge_heads(t, s);
    cr_assert_not_null(m);
    cr_assert(tg_shape_equal(m, x));
    for (size_t i = 0; i < x->size; i++) cr_assert_eq(m->data[i], x->data[i]);
    /* backward through split then merge is the identity map */
    cr_assert_eq(tg_backward_seed(t, m, x->data), 0);
    for (size_t i = 0; i < x->size; i++) cr_assert_eq(x->grad[i], x->data[i]);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(shape, concat_slice_values_and_backward)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = iota(2, (int[]){2, 2}), *b = iota(2, (int[]){2, 1}), *c = iota(2, (int[]){2, 3});
    const tg_real av[] = {1, 2, 3, 4}, bv[] = {5, 6}, cv[] = {7, 8, 9, 10, 11, 12};
    memcpy(a->data, av, sizeof av);
    memcpy(b->data, bv, sizeof bv);
    memcpy(c->data, cv, sizeof cv);
    b->requires_grad = false;
    tg_tensor *out = tg_concat(t, (tg_tensor *[]){a, b, c}, 3);
    cr_assert_not_null(out);
    cr_assert(out->ndim == 2 && out->shape[0] == 2 && out->shape[1] == 6);
    const tg_real want[] = {1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12};
    for (int i = 0; i < 12; i++) cr_assert_eq(out->data[i], want[i]);
    tg_tensor *s = tg_slice(t, out, 2, 3);
    cr_assert_not_null(s);
    cr_assert(s->shape[0] == 2 && s->shape[1] == 3);
    const tg_real ws[] = {5, 7, 8, 6, 10, 11};
    for (int i = 0; i < 6; i++) cr_assert_eq(s->data[i], ws[i]);
    /* d out = slice's grad scattered into columns 2..4; then split per input */
    const tg_real seed[] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(tg_backward_seed(t, s, seed), 0);
    const tg_real da[] = {0, 0, 0, 0}, dc[] = {2, 3, 0, 5, 6, 0};
    for (int i = 0; i < 4; i++) cr_assert_eq(a->grad[i], da[i]);
    for (int i = 0; i < 6; i++) cr_assert_eq(c->grad[i], dc[i]);
    cr_assert_null(b->grad, "an input without requires_grad gets no grad");
    tg_tensor *e = tg_slice(t, out, 6, 0);  /* empty slice at the end is valid */
    cr_assert(e && e->size == 0);
    tu_free_all((tg_tensor *[]){a, b, c}, 3);
    tg_tape_free(t);
}

Test(shape, reshape_is_a_view_and_grads_flow)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(2, (int[]){2, 3});
    tg_tensor *v = tg_reshape(t, x, 2, (int[]){3, -1});
    cr_assert_not_null(v);
    cr_assert(v->ndim == 2 && v->shape[0] == 3 && v->shape[1] == 2 && v->size == 6);
    cr_assert(v->data == x->data, "reshape shares data");
    cr_assert(v->grad != NULL && v->grad == x->grad, "reshape shares grad");
    cr_assert(v->requires_grad);
    cr_assert_eq(tg_tape_node_count(t), 0, "reshape records no node");
    x->data[3] = 42;
    cr_assert_eq(v->data[3], 42);
    tg_tensor *y = tg_slice(t, v, 0, 1);  /* v[:, 0] = x flat 0, 2, 4 */
    cr_assert_not_null(y);
    cr_assert_eq(tg_backward_seed(t, y, (tg_real[]){1, 2, 3}), 0);
    const tg_real want[] = {1, 0, 2, 0, 3, 0};
    for (int i = 0; i < 6; i++) cr_assert_eq(x->grad[i], want[i]);

    /* a view of a temporary: grads reach the temporary, then its input */
    tg_tape_reset(t);
    memset(x->grad, 0, 6 * sizeof(tg_real));
    tg_tensor *p = tg_transpose(t, x, 0, 1);                  /* [3,2] */
    tg_tensor *f = tg_reshape(t, p, 1, (int[]){-1});          /* [6] = x^T flat */
    cr_assert(f && f->grad == p->grad && f->data == p->data);
    tg_tensor *z = tg_slice(t, f, 1, 2);                      /* p flat 1, 2 = x[1,0], x[0,1] */
    cr_assert_eq(tg_backward_seed(t, z, (tg_real[]){5, 7}), 0);
    const tg_real want2[] = {0, 7, 0, 5, 0, 0};
    for (int i = 0; i < 6; i++) cr_assert_eq(x->grad[i], want2[i]);

    /* not recording: still a view, the grad of a temporary is not allocated */
    tg_tape_reset(t);
    tg_no_grad_begin(t);
    tg_tensor *q = tg_slice(t, x, 0, 3);
    tg_tensor *w = tg_reshape(t, q, 0, NULL);
    cr_assert_null(w, "6 elements do not fit a 0-d tensor");
    tg_tape_clear_error(t);
    w = tg_reshape(t, q, 4, (int[]){1, 2, 3, 1});
    cr_assert(w && w->data == q->data && w->grad == NULL);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(norm, constant_rows_give_the_bias_exactly)
{
    tg_tape *t = tg_tape_new();
    tg_real xv[12], wv[4] = {0.5f, -1.25f, 2, 0.75f}, bv[4] = {0.1f, -0.3f, 0.7f, 1e-3f};
    for (int j = 0; j < 4; j++) xv[j] = (tg_real)0.1, xv[4 + j] = (tg_real)-3.7, xv[8 + j] = (tg_real)1e6;
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv), *w = mk(t, 1, (int[]){4}, wv), *b = mk(t, 1, (int[]){4}, bv);
    x->requires_grad = w->requires_grad = b->requires_grad = true;
    tg_tensor *y = tg_layernorm(t, x, w, b, 1e-5);
    cr_assert_not_null(y);
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 4; j++) cr_assert(y->data[r * 4 + j] == bv[j], "row %d col %d: %g", r, j, (double)y->data[r * 4 + j]);
    tg_real seed[12];
    for (int i = 0; i < 12; i++) seed[i] = (tg_real)(i % 5) - 2;
    cr_assert_eq(tg_backward_seed(t, y, seed), 0);
    for (int i = 0; i < 12; i++) cr_assert(isfinite(x->grad[i]));
    for (int j = 0; j < 4; j++) cr_assert(w->grad[j] == 0, "xhat is exactly 0, so dw is 0");
    tg_tape_free(t);
}

Test(norm, values_by_hand)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = mk(t, 1, (int[]){4}, (tg_real[]){1, 2, 3, 4});
    tg_tensor *y = tg_layernorm(t, x, NULL, NULL, 1e-5);
    cr_assert_not_null(y);
    double rstd = 1 / sqrt(1.25 + 1e-5);
    for (int j = 0; j < 4; j++) tu_close(y->data[j], (j + 1 - 2.5) * rstd, TU_TOL);
    tg_tensor *w = mk(t, 1, (int[]){4}, (tg_real[]){2, 2, 2, 2});
    y = tg_layernorm(t, x, w, NULL, 1e-5);
    cr_assert_not_null(y);
    for (int j = 0; j < 4; j++) tu_close(y->data[j], 2 * (j + 1 - 2.5) * rstd, TU_TOL);
    tg_tape_free(t);
}

/* mean over valid rows of (logsumexp(x_r) - x_r[y_r]), in double */
static double ce_ref(const tg_real *x, const int32_t *y, int N, int V, int ignore, double *grad, double g)
{
    double sum = 0;
    int valid = 0;
    for (int r = 0; r < N; r++) valid += y[r] != ignore;
    for (int r = 0; r < N; r++) {
        if (y[r] == ignore) continue;
        double z = 0;
        for (int j = 0; j < V; j++) z += exp((double)x[r * V + j]);
        sum += log(z) - x[r * V + y[r]];
        for (int j = 0; j < V; j++) grad[r * V + j] = (exp((double)x[r * V + j]) / z - (j == y[r])) * g / valid;
    }
    return valid ? sum / valid : 0;
}

Test(loss, cross_entropy_with_ignored_targets)
{
    tg_tape *t = tg_tape_new();
    const tg_real xv[12] = {0.5f, -1, 2, 0.25f, 3, 1, -2, 0, -0.5f, 1.5f, 0.75f, -1.25f};
    const int32_t y[3] = {2, TG_IGNORE, 0};
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    tg_tensor *loss = tg_cross_entropy(t, x, y, TG_IGNORE);
    cr_assert_not_null(loss);
    cr_assert(loss->ndim == 0 && loss->size == 1);
    double grad[12] = {0};
    double want = ce_ref(xv, y, 3, 4, TG_IGNORE, grad, 1);
    tu_close(loss->data[0], want, TU_TOL);
    cr_assert_eq(tg_backward(t, loss), 0);
    for (int i = 0; i < 12; i++) tu_close(x->grad[i], grad[i], TU_TOL);
    for (int j = 0; j < 4; j++) cr_assert(x->grad[4 + j] == 0, "an ignored row gets exactly zero grad");

    /* every target ignored: loss 0 and zero grad, no NaN */
    tg_tape_reset(t);
    const int32_t none[3] = {TG_IGNORE, TG_IGNORE, TG_IGNORE};
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    loss = tg_cross_entropy(t, x, none, TG_IGNORE);
    cr_assert(loss && loss->data[0] == 0);
    cr_assert_eq(tg_backward(t, loss), 0);
    cr_assert_not_null(x->grad, "the logits get a zero grad, not none");
    for (int i = 0; i < 12; i++) cr_assert(x->grad[i] == 0);

    /* an ignore_index inside [0, V) (class 0 here) also works */
    tg_tape_reset(t);
    x = mk(t, 3, (int[]){1, 3, 4}, xv);
    const int32_t y0[3] = {0, 3, 0};
    loss = tg_cross_entropy(t, x, y0, 0);
    cr_assert_not_null(loss);
    tu_close(loss->data[0], ce_ref(xv, y0, 3, 4, 0, grad, 1), TU_TOL);
    tg_tape_free(t);
}

/* reduction='sum': n_valid times the mean, and the same grads times n_valid;
 * sum * (1/n_valid) gives every row the very grad bits of the mean */
Test(loss, cross_entropy_sum_is_the_unnormalised_mean)
{
    tg_tape *t = tg_tape_new();
    const tg_real xv[12] = {0.5f, -1, 2, 0.25f, 3, 1, -2, 0, -0.5f, 1.5f, 0.75f, -1.25f};
    const int32_t y[3] = {2, TG_IGNORE, 0};
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    tg_tensor *loss = tg_cross_entropy_sum(t, x, y, TG_IGNORE);
    cr_assert_not_null(loss);
    double grad[12] = {0};
    tu_close(loss->data[0], 2 * ce_ref(xv, y, 3, 4, TG_IGNORE, grad, 2), TU_TOL);
    cr_assert_eq(tg_backward(t, loss), 0);
    for (int i = 0; i < 12; i++) tu_close(x->grad[i], grad[i], TU_TOL);

    tg_real mean_grad[12];
    tg_tape_reset(t);
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, tg_cross_entropy(t, x, y, TG_IGNORE)), 0);
    memcpy(mean_grad, x->grad, sizeof mean_grad);
    tg_tape_reset(t);
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, tg_scale(t, tg_cross_entropy_sum(t, x, y, TG_IGNORE), 1.0 / 2)), 0);
    cr_assert_eq(memcmp(mean_grad, x->grad, sizeof mean_grad), 0);
    tg_tape_free(t);
}

Test(index, embedding_values_and_repeated_ids_accumulate)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *w = iota(2, (int[]){4, 2});
    int32_t ids[6] = {1, 3, 1, 1, 0, 3};
    tg_tensor *out = tg_embedding(t, w, ids, 2, 3);
    cr_assert_not_null(out);
    cr_assert(out->ndim == 3 && out->shape[0] == 2 && out->shape[1] == 3 && out->shape[2] == 2);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 2; j++) cr_assert_eq(out->data[i * 2 + j], ids[i] * 2 + j);
    for (int i = 0; i < 6; i++) ids[i] = 2;  /* the caller reuses its array */
    tg_real seed[12];
    for (int i = 0; i < 6; i++) seed[2 * i] = (tg_real)(i + 1), seed[2 * i + 1] = (tg_real)(10 * (i + 1));
    cr_assert_eq(tg_backward_seed(t, out, seed), 0);
    /* id 0 at position 4; id 1 at 0, 2, 3; id 2 nowhere; id 3 at 1, 5 */
    const tg_real want[8] = {5, 50, 1 + 3 + 4, 10 + 30 + 40, 0, 0, 2 + 6, 20 + 60};
    for (int i = 0; i < 8; i++) cr_assert_eq(w->grad[i], want[i], "dW[%d] = %g", i, (double)w->grad[i]);
    tg_tensor_free(w);
    tg_tape_free(t);
}

Test(dropout, identity_cases_return_the_input)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_tensor *x = iota(2, (int[]){3, 4});
    cr_assert(tg_dropout(t, x, 0, NULL) == x);
    cr_assert(tg_dropout(t, x, 0, &rng) == x);
    tg_tape_set_training(t, false);
    cr_assert(tg_dropout(t, x, 0.5, &rng) == x);
    cr_assert(tg_dropout(t, x, 0.5, NULL) == x, "no rng is needed when not training");
    cr_assert_eq(tg_tape_node_count(t), 0);
    cr_assert_null(tg_tape_error(t));
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(dropout, statistics_and_backward_uses_the_same_mask)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 42);
    const int n = 100000;
    const double p = 0.3;
    tg_tensor *x = tg_tensor_alloc(1, &n);
    cr_assert_not_null(x);
    tg_tensor_fill(x, 1);
    x->requires_grad = true;
    tg_tensor *y = tg_dropout(t, x, p, &rng);
    cr_assert(y && y != x);
    const tg_real scale = (tg_real)(1 / (1 - p));
    int zeros = 0;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        cr_assert(y->data[i] == 0 || y->data[i] == scale, "y[%d] = %g", i, (double)y->data[i]);
        zeros += y->data[i] == 0;
        sum += y->data[i];
    }
    /* binomial std of the dropped fraction: sqrt(p(1-p)/n) = 0.0014 */
    cr_assert(fabs((double)zeros / n - p) < 0.01, "dropped fraction %g", (double)zeros / n);
    cr_assert(fabs(sum / n - 1) < 0.02, "mean %g (inverted dropout keeps the mean)", sum / n);
    tg_real *seed = tg_malloc(n * sizeof *seed);
    cr_assert_not_null(seed);
    for (int i = 0; i < n; i++) seed[i] = 1;
    cr_assert_eq(tg_backward_seed(t, y, seed), 0);
    for (int i = 0; i < n; i++) cr_assert(x->grad[i] == y->data[i], "dx[%d] = %g, y = %g", i, (double)x->grad[i], (double)y->data[i]);
    /* the same seed gives the same mask */
    tg_rng_seed(&rng, 42);
    tg_tensor *y2 = tg_dropout(t, x, p, &rng);
    for (int i = 0; i < n; i++) cr_assert(y2->data[i] == y->data[i]);
    tg_free(seed);
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* ---- gradchecks ---------------------------------------------------------------- */

static tg_tensor *gc_permute(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_permute(t, in[0], ctx);
}

static tg_tensor *gc_transpose(tg_tape *t, tg_tensor **in, void *ctx)
{
    const int *d = ctx;
    return tg_transpose(t, in[0], d[0], d[1]);
}

static tg_tensor *gc_split(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_split_heads(t, in[0], *(const int *)ctx);
}

static tg_tensor *gc_merge(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_merge_heads(t, in[0]);
}

static tg_tensor *gc_concat(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_concat(t, in, *(const int *)ctx);
}

static tg_tensor *gc_slice(tg_tape *t, tg_tensor **in, void *ctx)
{
    const int *s = ctx;
    return tg_slice(t, in[0], s[0], s[1]);
}

/* reshape of an input and of a temporary, each followed by an op */
static tg_tensor *gc_reshape(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *v = tg_reshape(t, in[0], 3, (int[]){3, -1, 2});       /* [2,6] -> [3,2,2] */
    tg_tensor *p = tg_permute(t, v, (int[]){2, 0, 1});               /* [2,3,2] */
    tg_tensor *f = tg_reshape(t, p, 2, (int[]){-1, 4});              /* [3,4] */
    return tg_slice(t, f, 1, 2);
}

typedef struct ln_ctx {
    bool weight, bias;
} ln_ctx;

static tg_tensor *gc_layernorm(tg_tape *t, tg_tensor **in, void *ctx)
{
    const ln_ctx *c = ctx;
    return tg_layernorm(t, in[0], c->weight ? in[1] : NULL, c->bias ? in[2] : NULL, 1e-5);
}

static tg_tensor *gc_embedding(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_embedding(t, in[0], ctx, 2, 4);
}

static tg_tensor *gc_cross_entropy(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_cross_entropy(t, in[0], ctx, TG_IGNORE);
}

static tg_tensor *gc_cross_entropy_sum(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_cross_entropy_sum(t, in[0], ctx, TG_IGNORE);
}

static tg_tensor *gc_dropout(tg_tape *t, tg_tensor **in, void *ctx)
{
    tg_rng r;  /* reseeded every call: the same mask in every perturbed pass */
    tg_rng_seed(&r, *(const unsigned *)ctx);
    return tg_dropout(t, in[0], 0.4, &r);
}

Test(gradcheck, permute_and_transpose)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4});
    tu_gradcheck(gc_permute, ((int[]){2, 0, 1}), &x, 1);
    tu_gradcheck(gc_permute, ((int[]){1, 2, 0}), &x, 1);
    tu_gradcheck(gc_transpose, ((int[]){0, -1}), &x, 1);
    tg_tensor *y = tu_rand(&rng, -1, 1, 4, (int[]){2, 3, 2, 3});
    tu_gradcheck(gc_permute, ((int[]){3, 1, 0, 2}), &y, 1);
    tu_gradcheck(gc_transpose, ((int[]){1, 2}), &y, 1);
    tu_free_all((tg_tensor *[]){x, y}, 2);
}

Test(gradcheck, split_and_merge_heads)
{
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 6});
    tu_gradcheck(gc_split, ((int[]){3}), &x, 1);
    tu_gradcheck(gc_split, ((int[]){2}), &x, 1);
    tg_tensor *y = tu_rand(&rng, -1, 1, 4, (int[]){2, 3, 4, 2});
    tu_gradcheck(gc_merge, NULL, &y, 1);
    tu_free_all((tg_tensor *[]){x, y}, 2);
}

Test(gradcheck, concat_and_slice)
{
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_tensor *xs[5];
    for (int i = 0; i < 5; i++) xs[i] = tu_rand(&rng, -1, 1, 3, (int[]){2, 2, 1 + i % 3});
    xs[2]->requires_grad = false;  /* an input without grad among them */
    tu_gradcheck(gc_concat, ((int[]){3}), xs, 3);
    tu_gradcheck(gc_concat, ((int[]){5}), xs, 5);  /* more inputs than a node holds */
    tg_tensor *z = tu_rand(&rng, -1, 1, 2, (int[]){3, 7});
    tu_gradcheck(gc_slice, ((int[]){2, 3}), &z, 1);
    tu_gradcheck(gc_slice, ((int[]){0, 7}), &z, 1);
    tu_gradcheck(gc_slice, ((int[]){6, 1}), &z, 1);
    tg_tensor_free(z);
    tu_free_all(xs, 5);
}

Test(gradcheck, reshape_view)
{
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    tg_tensor *x = tu_rand(&rng, -1, 1, 2, (int[]){2, 6});
    tu_gradcheck(gc_reshape, NULL, &x, 1);
    tg_tensor_free(x);
}

Test(gradcheck, layernorm)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_tensor *in[3] = {tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 5}), tu_rand(&rng, 0.5, 1.5, 1, (int[]){5}),
                        tu_rand(&rng, -0.5, 0.5, 1, (int[]){5})};
    tu_gradcheck(gc_layernorm, (&(ln_ctx){true, true}), in, 3);
    tu_gradcheck(gc_layernorm, (&(ln_ctx){false, false}), in, 1);
    tu_gradcheck(gc_layernorm, (&(ln_ctx){true, false}), in, 2);
    in[0]->requires_grad = false;  /* weight and bias only */
    tu_gradcheck(gc_layernorm, (&(ln_ctx){true, true}), in, 3);
    tu_free_all(in, 3);
}

Test(gradcheck, embedding)
{
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    tg_tensor *w = tu_rand(&rng, -1, 1, 2, (int[]){5, 3});
    int32_t ids[8] = {4, 1, 1, 0, 4, 2, 1, 4};
    tu_gradcheck(gc_embedding, ids, &w, 1);
    tg_tensor_free(w);
}

Test(gradcheck, cross_entropy)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_tensor *x = tu_rand(&rng, -2, 2, 3, (int[]){2, 3, 5});
    int32_t y[6] = {1, TG_IGNORE, 4, 0, TG_IGNORE, 2};
    tu_gradcheck(gc_cross_entropy, y, &x, 1);
    int32_t none[6] = {TG_IGNORE, TG_IGNORE, TG_IGNORE, TG_IGNORE, TG_IGNORE, TG_IGNORE};
    tu_gradcheck(gc_cross_entropy, none, &x, 1);
    tu_gradcheck(gc_cross_entropy_sum, y, &x, 1);
    tu_gradcheck(gc_cross_entropy_sum, none, &x, 1);
    tg_tensor_free(x);
}

Test(gradcheck, dropout)
{
    tg_rng rng;
    tg_rng_seed(&rng, 8);
    tg_tensor *x = tu_rand(&rng, -1, 1, 2, (int[]){4, 5});
    unsigned seed = 99;
    tu_gradcheck(gc_dropout, &seed, &x, 1);
    /* the check means something only if some elements were dropped and some kept */
    tg_tape *t = tg_tape_new();
    tg_tensor *y = gc_dropout(t, &x, &seed);
    int zeros = 0;
    for (size_t i = 0; i < y->size; i++) zeros += y->data[i] == 0;
    cr_assert(zeros > 0 && zeros < (int)y->size, "%d of %zu dropped", zeros, y->size);
    tg_tape_free(t);
    tg_tensor_free(x);
}

/* ---- errors ---------------------------------------------------------------------- */

Test(errors, shape_ops_reject_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 3, (int[]){2, 3, 4});
    tg_tensor *s0 = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_reshape(t, x, 2, (int[]){5, 5}), "tg_reshape", "[2,3,4]", "{5,5}");
    assert_fails(t, tg_reshape(t, x, 2, (int[]){-1, -1}), "tg_reshape", "[2,3,4]", "{-1,-1}");
    assert_fails(t, tg_reshape(t, x, 2, (int[]){5, -1}), "tg_reshape", "[2,3,4]", "{5,-1}");
    assert_fails(t, tg_reshape(t, x, 2, (int[]){-2, 12}), "tg_reshape", "[2,3,4]", "{-2,12}");
    assert_fails(t, tg_reshape(t, x, 5, (int[]){1, 2, 3, 4, 1}), "tg_reshape", "[2,3,4]", "5 dims");
    assert_fails(t, tg_reshape(t, x, 2, NULL), "tg_reshape", "[2,3,4]");
    tg_tensor *e = tg_tensor_zeros(t, 2, (int[]){0, 3});
    assert_fails(t, tg_reshape(t, e, 2, (int[]){0, -1}), "tg_reshape", "[0,3]", "{0,-1}");
    assert_fails(t, tg_permute(t, x, (int[]){0, 0, 1}), "tg_permute", "[2,3,4]", "{0,0,1}");
    assert_fails(t, tg_permute(t, x, (int[]){0, 1, 3}), "tg_permute", "[2,3,4]", "{0,1,3}");
    assert_fails(t, tg_permute(t, x, NULL), "tg_permute", "[2,3,4]");
    assert_fails(t, tg_transpose(t, x, 0, 3), "tg_transpose", "[2,3,4]", "(0, 3)");
    assert_fails(t, tg_transpose(t, x, -4, 1), "tg_transpose", "[2,3,4]");
    assert_fails(t, tg_split_heads(t, s0, 2), "tg_split_heads", "[]");
    assert_fails(t, tg_split_heads(t, x, 3), "tg_split_heads", "[2,3,4]", "3 heads");
    assert_fails(t, tg_split_heads(t, x, 0), "tg_split_heads", "[2,3,4]", "0 heads");
    assert_fails(t, tg_merge_heads(t, x), "tg_merge_heads", "[2,3,4]");
    tg_tensor *y = tg_tensor_zeros(t, 3, (int[]){2, 2, 4});
    tg_tensor *z = tg_tensor_zeros(t, 2, (int[]){2, 3});
    assert_fails(t, tg_concat(t, (tg_tensor *[]){x, y}, 2), "tg_concat", "xs[1] [2,2,4]", "xs[0] [2,3,4]");
    assert_fails(t, tg_concat(t, (tg_tensor *[]){x, z}, 2), "tg_concat", "xs[1] [2,3]", "xs[0] [2,3,4]");
    assert_fails(t, tg_concat(t, (tg_tensor *[]){s0, s0}, 2), "tg_concat", "xs[0] []");
    assert_fails(t, tg_concat(t, (tg_tensor *[]){x}, 0), "tg_concat", "n = 0");
    assert_fails(t, tg_slice(t, x, 2, 3), "tg_slice", "[2,3,4]", "start 2, len 3");
    assert_fails(t, tg_slice(t, x, -1, 2), "tg_slice", "[2,3,4]", "start -1");
    assert_fails(t, tg_slice(t, x, 1, -1), "tg_slice", "[2,3,4]", "len -1");
    assert_fails(t, tg_slice(t, x, 5, 0), "tg_slice", "[2,3,4]", "start 5");
    assert_fails(t, tg_slice(t, s0, 0, 1), "tg_slice", "[]");
    tg_tape_free(t);
}

Test(errors, norm_index_loss_dropout_reject_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){3, 4});
    tg_tensor *w4 = tg_tensor_zeros(t, 1, (int[]){4}), *w5 = tg_tensor_zeros(t, 1, (int[]){5});
    tg_tensor *w14 = tg_tensor_zeros(t, 2, (int[]){1, 4}), *s0 = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_layernorm(t, x, w5, w4, 1e-5), "tg_layernorm", "weight", "[3,4]", "[5]");
    assert_fails(t, tg_layernorm(t, x, w4, w14, 1e-5), "tg_layernorm", "bias", "[3,4]", "[1,4]");
    assert_fails(t, tg_layernorm(t, x, NULL, w5, 1e-5), "tg_layernorm", "bias", "[3,4]", "[5]");
    assert_fails(t, tg_layernorm(t, s0, NULL, NULL, 1e-5), "tg_layernorm", "x []");
    assert_fails(t, tg_layernorm(t, x, w4, w4, -1), "tg_layernorm", "eps", "[3,4]");
    assert_fails(t, tg_layernorm(t, x, w4, w4, NAN), "tg_layernorm", "eps", "[3,4]");

    tg_tensor *emb = tg_tensor_zeros(t, 2, (int[]){10, 3});
    int32_t ids[6] = {0, 9, 3, 10, 11, 2};
    assert_fails(t, tg_embedding(t, emb, ids, 2, 3), "tg_embedding", "id 10", "position 3", "[0, 10)", "[10,3]");
    ids[3] = 4;
    ids[4] = 5;
    ids[5] = -1;
    assert_fails(t, tg_embedding(t, emb, ids, 2, 3), "tg_embedding", "id -1", "position 5", "[0, 10)");
    assert_fails(t, tg_embedding(t, w4, ids, 2, 3), "tg_embedding", "[4]");
    assert_fails(t, tg_embedding(t, emb, ids, -1, 3), "tg_embedding", "B -1", "[10,3]");

    int32_t y[3] = {0, 4, TG_IGNORE};
    assert_fails(t, tg_cross_entropy(t, x, y, TG_IGNORE), "tg_cross_entropy", "target 4", "position 1", "[3,4]");
    y[1] = -3;
    assert_fails(t, tg_cross_entropy(t, x, y, TG_IGNORE), "tg_cross_entropy", "target -3", "position 1", "[3,4]");
    y[1] = TG_IGNORE;
    assert_fails(t, tg_cross_entropy(t, x, y, 1), "tg_cross_entropy", "target -100", "position 1", "[3,4]");
    assert_fails(t, tg_cross_entropy(t, s0, y, TG_IGNORE), "tg_cross_entropy", "[]");
    y[1] = 7;
    assert_fails(t, tg_cross_entropy_sum(t, x, y, TG_IGNORE), "tg_cross_entropy_sum", "target 7", "[3,4]");
    assert_fails(t, tg_cross_entropy_sum(t, s0, y, TG_IGNORE), "tg_cross_entropy_sum", "[]");

    tg_rng rng;
    tg_rng_seed(&rng, 1);
    assert_fails(t, tg_dropout(t, x, 1, &rng), "tg_dropout", "p", "[3,4]");
    assert_fails(t, tg_dropout(t, x, -0.1, &rng), "tg_dropout", "p", "[3,4]");
    assert_fails(t, tg_dropout(t, x, NAN, &rng), "tg_dropout", "p", "[3,4]");
    assert_fails(t, tg_dropout(t, x, 0.5, NULL), "tg_dropout", "rng", "[3,4]");
    tg_tape_set_training(t, false);
    assert_fails(t, tg_dropout(t, x, 1.5, NULL), "tg_dropout", "p", "[3,4]");
    tg_tape_free(t);
}

/* Every op given a NULL input returns NULL and keeps an earlier message; with
 * no earlier message it names itself. */
Test(errors, null_inputs_keep_the_first_message)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 3, (int[]){2, 3, 4});
    int32_t ids[2] = {0, 0};
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    for (int round = 0; round < 2; round++) {
        const char *names[] = {"tg_reshape", "tg_permute", "tg_transpose", "tg_split_heads", "tg_merge_heads",
                               "tg_concat", "tg_concat", "tg_slice", "tg_layernorm", "tg_embedding",
                               "tg_embedding", "tg_cross_entropy", "tg_cross_entropy", "tg_dropout"};
        for (int k = 0; k < 14; k++) {
            tg_tape_clear_error(t);
            if (round == 0) tg_fail(t, "an earlier error");
            tg_tensor *r = NULL;
            switch (k) {
            case 0: r = tg_reshape(t, NULL, 1, (int[]){-1}); break;
            case 1: r = tg_permute(t, NULL, (int[]){0}); break;
            case 2: r = tg_transpose(t, NULL, 0, 1); break;
            case 3: r = tg_split_heads(t, NULL, 2); break;
            case 4: r = tg_merge_heads(t, NULL); break;
            case 5: r = tg_concat(t, (tg_tensor *[]){x, NULL}, 2); break;
            case 6: r = tg_concat(t, NULL, 2); break;
            case 7: r = tg_slice(t, NULL, 0, 1); break;
            case 8: r = tg_layernorm(t, NULL, NULL, NULL, 1e-5); break;
            case 9: r = tg_embedding(t, NULL, ids, 1, 2); break;
            case 10: r = tg_embedding(t, x, NULL, 1, 2); break;
            case 11: r = tg_cross_entropy(t, NULL, ids, TG_IGNORE); break;
            case 12: r = tg_cross_entropy(t, x, NULL, TG_IGNORE); break;
            case 13: r = tg_dropout(t, NULL, 0.5, &rng); break;
            }
            cr_assert_null(r, "case %d", k);
            const char *msg = tg_tape_error(t);
            cr_assert_not_null(msg);
            if (round == 0)
                cr_assert_str_eq(msg, "an earlier error");
            else
                cr_assert(strstr(msg, names[k]) && strstr(msg, "NULL"), "case %d: %s", k, msg);
        }
    }
    /* no tape: NULL, nothing to report to */
    cr_assert_null(tg_permute(NULL, x, (int[]){0, 1, 2}));
    cr_assert_null(tg_dropout(NULL, x, 0.5, &rng));
    tg_tape_free(t);
}

/* Out of memory in the arena (first allocation) or in the node array (second)
 * gives NULL and a message naming the op; ASan checks nothing leaks. */
Test(errors, out_of_memory_names_the_op)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4});
    int32_t ids[6] = {0, 1, 2, 3, 0, 1};
    const char *names[] = {"tg_permute", "tg_split_heads", "tg_concat", "tg_slice", "tg_layernorm",
                           "tg_embedding", "tg_cross_entropy", "tg_dropout", "tg_reshape"};
    for (uint64_t at = 1; at <= 2; at++)
        for (int k = 0; k < 9; k++) {
            tg_tape *t = tg_tape_new();
            cr_assert_not_null(t);
            tg_alloc_fail_at(at);
            tg_tensor *r = NULL;
            switch (k) {
            case 0: r = tg_permute(t, x, (int[]){1, 0, 2}); break;
            case 1: r = tg_split_heads(t, x, 2); break;
            case 2: r = tg_concat(t, (tg_tensor *[]){x, x}, 2); break;
            case 3: r = tg_slice(t, x, 1, 2); break;
            case 4: r = tg_layernorm(t, x, NULL, NULL, 1e-5); break;
            case 5: r = tg_embedding(t, x, ids, 2, 3); break;  /* x as [V, D]: see below */
            case 6: r = tg_cross_entropy(t, x, ids, TG_IGNORE); break;
            case 7: r = tg_dropout(t, x, 0.5, &rng); break;
            case 8:  /* without requires_grad: only the view itself is allocated */
                x->requires_grad = false;
                r = tg_reshape(t, x, 1, (int[]){-1});
                x->requires_grad = true;
                break;
            }
            tg_alloc_fail_at(0);
            if (k == 5) {  /* a 3-D weight is refused before any allocation */
                cr_assert_null(r);
                tg_tape_free(t);
                continue;
            }
            if (k == 8 && at == 2) {  /* a view records no node: nothing else to fail */
                cr_assert_not_null(r);
                tg_tape_free(t);
                continue;
            }
            cr_assert_null(r, "%s, allocation %d", names[k], (int)at);
            const char *msg = tg_tape_error(t);
            cr_assert(msg && strstr(msg, "out of memory") && strstr(msg, names[k]), "%s: %s", names[k],
                      msg ? msg : "(none)");
            tg_tape_free(t);
        }
    tg_tensor_free(x);
}
