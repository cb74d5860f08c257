/* add, sub, mul, div with NumPy broadcasting: values and gradients against a
 * naive reference that indexes every output element on its own, gradchecks
 * over size-1 dims, scalars and rank differences, and shape errors. */
#include <string.h>

#include "test_util.h"

static tg_tape *T;
static tg_rng R;
static void setup(void)
{
    T = tg_tape_new();
    tg_rng_seed(&R, 11);
}
static void teardown(void) { tg_tape_free(T); }
TestSuite(broadcast, .init = setup, .fini = teardown);

enum { ADD, SUB, MUL, DIV };
static tg_tensor *(*const binary[])(tg_tape *, tg_tensor *, tg_tensor *) = {tg_add, tg_sub, tg_mul, tg_div};
static const char *const names[] = {"tg_add", "tg_sub", "tg_mul", "tg_div"};

typedef struct bshape {
    int na, sa[4], nb, sb[4];  /* operands */
    int nout, sout[4];         /* the broadcast shape */
} bshape;

/* size-1 dims on either side, scalars (0-d and [1]), rank differences, empty */
static const bshape cases[] = {
    {3, {2, 3, 4}, 3, {2, 3, 4}, 3, {2, 3, 4}},
    {3, {2, 3, 4}, 1, {4}, 3, {2, 3, 4}},           /* a bias */
    {1, {4}, 3, {2, 3, 4}, 3, {2, 3, 4}},           /* the bias first */
    {3, {2, 3, 4}, 2, {3, 1}, 3, {2, 3, 4}},        /* a column */
    {3, {2, 1, 4}, 2, {3, 1}, 3, {2, 3, 4}},        /* both stretch */
    {4, {2, 1, 3, 1}, 3, {4, 1, 2}, 4, {2, 4, 3, 2}},
    {2, {2, 3}, 0, {0}, 2, {2, 3}},                 /* 0-d scalar */
    {0, {0}, 2, {2, 3}, 2, {2, 3}},
    {2, {2, 3}, 1, {1}, 2, {2, 3}},                 /* [1] */
    {0, {0}, 0, {0}, 0, {0}},
    {4, {1, 1, 1, 5}, 2, {3, 1}, 4, {1, 1, 3, 5}},
    {3, {2, 0, 4}, 1, {4}, 3, {2, 0, 4}},           /* empty */
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* operand index of output element e (shape padded to nout dims on the left) */
static size_t src_index(int n, const int *s, int nout, const int *sout, size_t e)
{
    size_t idx = 0, stride = 1;
    for (int d = nout - 1; d >= 0; d--) {
        int coord = (int)(e % (size_t)sout[d]);
        e /= (size_t)sout[d];
        int k = d - (nout - n);
        if (k < 0) continue;
        if (s[k] != 1) idx += (size_t)coord * stride;
        stride *= (size_t)s[k];
    }
    return idx;
}

static double ref_op(int kind, double x, double y)
{
    return kind == ADD ? x + y : kind == SUB ? x - y : kind == MUL ? x * y : x / y;
}

static tg_tensor *rand_like(int n, const int *s, double lo, double hi)
{
    return tu_rand(&R, lo, hi, n, s);
}

/* Forward equals the naive loop exactly; grads (seed w) equal its sums. */
static void check_values(int kind, const bshape *c)
{
    tg_tensor *a = rand_like(c->na, c->sa, -2, 2), *b = rand_like(c->nb, c->sb, 0.5, 2);
    tg_tensor *out = binary[kind](T, a, b);
    cr_assert_not_null(out, "%s: %s", names[kind], tg_tape_error(T));
    cr_assert_eq(out->ndim, c->nout, "%s: ndim", names[kind]);
    for (int d = 0; d < c->nout; d++) cr_assert_eq(out->shape[d], c->sout[d]);
    tg_real *w = malloc((out->size + 1) * sizeof *w);
    double *ga = calloc(a->size + 1, sizeof *ga), *gb = calloc(b->size + 1, sizeof *gb);
    for (size_t e = 0; e < out->size; e++) {
        size_t ia = src_index(c->na, c->sa, c->nout, c->sout, e), ib = src_index(c->nb, c->sb, c->nout, c->sout, e);
        double x = a->data[ia], y = b->data[ib];
        cr_assert_eq(out->data[e], (tg_real)ref_op(kind, a->data[ia], b->data[ib]), "%s: element %zu", names[kind], e);
        w[e] = (tg_real)(0.5 + tg_rng_uniform(&R));
        double g = w[e];
        ga[ia] += kind == MUL ? g * y : kind == DIV ? g / y : g;
        gb[ib] += kind == ADD ? g : kind == SUB ? -g : kind == MUL ? g * x : -g * x / (y * y);
    }
    cr_assert_eq(tg_backward_seed(T, out, w), 0, "%s", tg_tape_error(T));
    cr_assert(a->grad && b->grad, "%s: both operands get a grad", names[kind]);
    for (size_t i = 0; i < a->size; i++) tu_close(a->grad[i], ga[i], TU_TOL);
    for (size_t i = 0; i < b->size; i++) tu_close(b->grad[i], gb[i], TU_TOL);
    free(w);
    free(ga);
    free(gb);
    tg_tensor_free(a);
    tg_tensor_free(b);
    tg_tape_reset(T);
}

Test(broadcast, values_and_grads_match_a_naive_loop)
{
    for (int kind = ADD; kind <= DIV; kind++)
        for (int i = 0; i < N_CASES; i++) check_values(kind, &cases[i]);
}

static tg_tensor *f_binary(tg_tape *t, tg_tensor **in, void *ctx)
{
    return binary[*(int *)ctx](t, in[0], in[1]);
}

Test(broadcast, gradcheck_every_shape_pair)
{
    for (int kind = ADD; kind <= DIV; kind++)
        for (int i = 0; i < N_CASES; i++) {
            const bshape *c = &cases[i];
            tg_tensor *in[2] = {rand_like(c->na, c->sa, -2, 2), rand_like(c->nb, c->sb, 0.5, 2)};
            tu_gradcheck(f_binary, &kind, in, 2);
            tu_free_all(in, 2);
        }
}

/* x * x and x / x: both operands are one tensor, both grads land in it */
static tg_tensor *f_self(tg_tape *t, tg_tensor **in, void *ctx)
{
    return binary[*(int *)ctx](t, in[0], in[0]);
}

Test(broadcast, gradcheck_same_tensor_twice)
{
    for (int kind = ADD; kind <= DIV; kind++) {
        tg_tensor *x = rand_like(2, (int[]){3, 4}, 0.5, 2);
        tu_gradcheck(f_self, &kind, &x, 1);
        tg_tensor_free(x);
    }
}

Test(broadcast, shape_errors_name_both_shapes)
{
    tg_tensor *a = tg_tensor_zeros(T, 2, (int[]){2, 3}), *b = tg_tensor_zeros(T, 2, (int[]){3, 2});
    cr_assert_null(tg_mul(T, a, b));
    cr_assert_str_eq(tg_tape_error(T), "tg_mul: shapes do not broadcast: a [2,3], b [3,2] (aligned from the "
                                        "last dim, each pair of dims must be equal or one of them 1)");
    tg_tape_reset(T);
    for (int kind = ADD; kind <= DIV; kind++) {
        a = tg_tensor_zeros(T, 3, (int[]){4, 2, 3});
        b = tg_tensor_zeros(T, 2, (int[]){4, 3});
        tu_expect_error(T, binary[kind](T, a, b), names[kind], "a [4,2,3], b [4,3]");
        a = tg_tensor_zeros(T, 1, (int[]){0});
        b = tg_tensor_zeros(T, 1, (int[]){2});
        tu_expect_error(T, binary[kind](T, a, b), names[kind], "a [0], b [2]");
        tu_expect_error(T, binary[kind](T, NULL, tg_tensor_zeros(T, 0, NULL)), names[kind], "input is NULL");
    }
}

/* PyTorch's results at the edges of division: x / 0 is +-inf, 0 / 0 NaN. */
Test(broadcast, division_by_zero_follows_ieee)
{
    tg_tensor *a = tg_tensor_from(T, (tg_real[]){1, -1, 0}, 1, (int[]){3});
    tg_tensor *out = tg_div(T, a, tg_tensor_zeros(T, 0, NULL));
    cr_assert_not_null(out);
    cr_assert(isinf(out->data[0]) && out->data[0] > 0);
    cr_assert(isinf(out->data[1]) && out->data[1] < 0);
    cr_assert(isnan(out->data[2]));
    tg_tape_reset(T);
    tg_tape_set_anomaly(T, true);
    a = tg_tensor_from(T, (tg_real[]){1, 2}, 1, (int[]){2});
    tu_expect_error(T, tg_div(T, a, tg_tensor_zeros(T, 1, (int[]){1})), "anomaly: tg_div produced NaN/Inf", "[2]");
}
