/* Reductions along one dim: values and gradients against a naive loop for
 * every dim (negative too) with and without keepdim, gradchecks, the first
 * maximum, NaN and -inf rows, empty dims, and bad dims. */
#include <string.h>

#include "test_util.h"

static tg_tape *T;
static tg_rng R;
static void setup(void)
{
    T = tg_tape_new();
    tg_rng_seed(&R, 3);
}
static void teardown(void) { tg_tape_free(T); }
TestSuite(reduce, .init = setup, .fini = teardown);

enum { SUM, MEAN, MAX, LSE, N_KINDS };
static tg_tensor *(*const reduce[])(tg_tape *, tg_tensor *, int, bool) = {tg_sum_dim, tg_mean_dim, tg_max_dim,
                                                                         tg_logsumexp_dim};
static const char *const names[] = {"tg_sum_dim", "tg_mean_dim", "tg_max_dim", "tg_logsumexp_dim"};

/* y and dy/dx_k (seed 1) of one reduction over x [n] at stride st, in double */
static double ref(int kind, const tg_real *x, int n, size_t st, double *d)
{
    double s = 0, m = -INFINITY;
    int at = 0;
    for (int k = 0; k < n; k++) {
        double v = (double)x[k * st];
        s += v;
        if (v > m) m = v, at = k;
    }
    double lse = 0;
    for (int k = 0; k < n; k++) lse += exp((double)x[k * st] - m);
    lse = m + log(lse);
    for (int k = 0; k < n; k++)
        d[k] = kind == SUM ? 1 : kind == MEAN ? 1.0 / n : kind == MAX ? (k == at) : exp((double)x[k * st] - lse);
    return kind == SUM ? s : kind == MEAN ? s / n : kind == MAX ? m : lse;
}

/* Every dim of a [2,3,4,5], as -4..3, keepdim or not: shape, values, grads. */
Test(reduce, every_dim_against_a_naive_loop)
{
    const int shape[4] = {2, 3, 4, 5};
    tg_tensor *x = tu_rand(&R, -3, 3, 4, shape);
    for (int kind = SUM; kind < N_KINDS; kind++)
        for (int dim = -4; dim < 4; dim++)
            for (int keep = 0; keep < 2; keep++) {
                cr_assert(tg_tensor_alloc_grad(x));
                memset(x->grad, 0, x->size * sizeof(tg_real));
                tg_tensor *y = reduce[kind](T, x, dim, keep);
                cr_assert_not_null(y, "%s dim %d: %s", names[kind], dim, tg_tape_error(T));
                int d = dim < 0 ? dim + 4 : dim;
                cr_assert_eq(y->ndim, keep ? 4 : 3, "%s dim %d keepdim %d: ndim %d", names[kind], dim, keep, y->ndim);
                for (int i = 0, j = 0; i < 4; i++) {
                    if (i == d && !keep) continue;
                    cr_assert_eq(y->shape[j++], i == d ? 1 : shape[i]);
                }
                size_t outer = 1, inner = 1;
                for (int i = 0; i < d; i++) outer *= (size_t)shape[i];
                for (int i = d + 1; i < 4; i++) inner *= (size_t)shape[i];
                tg_real seed[120];
                for (size_t e = 0; e < y->size; e++) seed[e] = (tg_real)(0.5 + 0.1 * (double)e);
                cr_assert_eq(tg_backward_seed(T, y, seed), 0, "%s", tg_tape_error(T));
                for (size_t o = 0; o < outer; o++)
                    for (size_t c = 0; c < inner; c++) {
                        size_t e = o * inner + c, x0 = o * (size_t)shape[d] * inner + c;
                        double dk[8], want = ref(kind, x->data + x0, shape[d], inner, dk);
                        tu_close(y->data[e], want, TU_TOL * 4);
                        for (int k = 0; k < shape[d]; k++)
                            tu_close(x->grad[x0 + (size_t)k * inner], dk[k] * (double)seed[e], TU_TOL * 4);
                    }
                tg_tape_reset(T);
            }
    tg_tensor_free(x);
}

typedef struct red_ctx {
    int kind, dim;
    bool keep;
} red_ctx;

static tg_tensor *f_reduce(tg_tape *t, tg_tensor **in, void *ctx)
{
    red_ctx *c = ctx;
    return reduce[c->kind](t, in[0], c->dim, c->keep);
}

Test(reduce, gradcheck_each_kind_and_dim)
{
    for (int kind = SUM; kind < N_KINDS; kind++)
        for (int dim = -3; dim < 3; dim++) {
            tg_tensor *x = tu_rand(&R, -2, 2, 3, (int[]){2, 3, 4}); /* distinct values: max has no tie */
            red_ctx c = {kind, dim, dim % 2 != 0};
            tu_gradcheck(f_reduce, &c, &x, 1);
            tg_tensor_free(x);
        }
}

/* masked mean pooling, the way examples/classify uses these ops:
 * sum_t(h * keep) / sum_t(keep) with keep [B, T, 1] */
static tg_tensor *f_pool(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *keep = tg_tensor_from(t, (tg_real[]){1, 1, 1, 0, 1, 1, 0, 0}, 3, (int[]){2, 4, 1});
    tg_tensor *sum = tg_sum_dim(t, tg_mul(t, in[0], keep), 1, false);
    return tg_div(t, sum, tg_sum_dim(t, keep, 1, false));
}

Test(reduce, gradcheck_masked_mean_pooling)
{
    tg_tensor *h = tu_rand(&R, -1, 1, 3, (int[]){2, 4, 3});
    tu_gradcheck(f_pool, NULL, &h, 1);
    tg_tensor_free(h);
}

/* The gradient goes to the first maximum only; a NaN wins (the first one). */
Test(reduce, max_ties_nan_and_inf)
{
    tg_tensor *x = tg_tensor_from(T, (tg_real[]){1, 3, 3, 2, 0, NAN, 5, NAN, 0, -INFINITY}, 2, (int[]){2, 5});
    x->requires_grad = true;
    tg_tensor *y = tg_max_dim(T, x, 1, false);
    cr_assert_not_null(y);
    cr_assert(y->data[0] == 3 && isnan(y->data[1]));
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1}), 0);
    const tg_real want[] = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    for (int i = 0; i < 10; i++) cr_assert_eq(x->grad[i], want[i], "grad %d = %g", i, (double)x->grad[i]);
    tg_tape_reset(T);
    x = tg_tensor_from(T, (tg_real[]){-INFINITY, -INFINITY, 1, -INFINITY}, 2, (int[]){2, 2});
    x->requires_grad = true;
    y = tg_max_dim(T, x, -1, true);
    cr_assert(y && y->data[0] == -INFINITY && y->data[1] == 1);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){2, 3}), 0);
    cr_assert(x->grad[0] == 2 && x->grad[1] == 0 && x->grad[2] == 3 && x->grad[3] == 0);
}

/* logsumexp: no overflow at large values, -inf entries weigh 0, an all -inf
 * row gives -inf with zero grad (PyTorch: NaN grad), +inf gives +inf. */
Test(reduce, logsumexp_extremes)
{
    tg_tensor *x = tg_tensor_from(T, (tg_real[]){1000, 1000, -INFINITY, 0, -INFINITY, -INFINITY, INFINITY, 1}, 2,
                                  (int[]){4, 2});
    x->requires_grad = true;
    tg_tensor *y = tg_logsumexp_dim(T, x, 1, false);
    cr_assert_not_null(y);
    tu_close(y->data[0], 1000 + log(2.0), TU_TOL);
    cr_assert_eq(y->data[1], 0);
    cr_assert(y->data[2] == -INFINITY && y->data[3] == INFINITY);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 0}), 0);
    tu_close(x->grad[0], 0.5, TU_TOL);
    tu_close(x->grad[1], 0.5, TU_TOL);
    cr_assert(x->grad[2] == 0 && x->grad[3] == 1 && x->grad[4] == 0 && x->grad[5] == 0);
    /* a column reduction (dim 0, inner > 1) takes the same path rules */
    tg_tape_reset(T);
    x = tg_tensor_from(T, (tg_real[]){1000, -INFINITY, 1000, -INFINITY}, 2, (int[]){2, 2});
    y = tg_logsumexp_dim(T, x, 0, true);
    cr_assert(y && y->ndim == 2 && y->shape[0] == 1 && y->shape[1] == 2);
    tu_close(y->data[0], 1000 + log(2.0), TU_TOL);
    cr_assert_eq(y->data[1], -INFINITY);
}

/* Empty dims as PyTorch: sum 0, mean NaN, logsumexp -inf, max an error; a
 * 0-d tensor reduces over dim 0 or -1 to itself. */
Test(reduce, empty_dims_and_scalars)
{
    tg_tensor *x = tg_tensor_zeros(T, 2, (int[]){3, 0});
    tg_tensor *s = tg_sum_dim(T, x, 1, false), *m = tg_mean_dim(T, x, -1, false), *l = tg_logsumexp_dim(T, x, 1, false);
    cr_assert(s && m && l && s->size == 3);
    for (int i = 0; i < 3; i++) cr_assert(s->data[i] == 0 && isnan(m->data[i]) && l->data[i] == -INFINITY);
    tu_expect_error(T, tg_max_dim(T, tg_tensor_zeros(T, 2, (int[]){3, 0}), 1, false), "tg_max_dim: dim 1 of a [3,0] has size 0",
                    "no maximum");
    tg_tensor *e = tg_sum_dim(T, tg_tensor_zeros(T, 2, (int[]){0, 4}), 1, true);
    cr_assert(e && e->ndim == 2 && e->shape[0] == 0 && e->shape[1] == 1);
    tg_tensor *c = tg_tensor_from(T, (tg_real[]){2.5}, 0, NULL);
    for (int kind = SUM; kind < N_KINDS; kind++)
        for (int dim = -1; dim <= 0; dim++) {
            tg_tensor *y = reduce[kind](T, c, dim, dim == 0);
            cr_assert(y && y->ndim == 0 && y->data[0] == 2.5, "%s of a scalar", names[kind]);
        }
}

Test(reduce, bad_dims_name_the_op_and_the_shape)
{
    for (int kind = SUM; kind < N_KINDS; kind++) {
        tg_tensor *x = tg_tensor_zeros(T, 3, (int[]){2, 3, 4});
        tu_expect_error(T, reduce[kind](T, x, 3, false), names[kind], "dim 3 is out of range for a [2,3,4] (dims -3 to 2)");
        x = tg_tensor_zeros(T, 3, (int[]){2, 3, 4});
        tu_expect_error(T, reduce[kind](T, x, -4, true), names[kind], "dim -4 is out of range");
        tu_expect_error(T, reduce[kind](T, tg_tensor_zeros(T, 0, NULL), 1, false), names[kind], "for a [] (dims -1 to 0)");
        tu_expect_error(T, reduce[kind](T, NULL, 0, false), names[kind], "input is NULL");
    }
}
