/* Elementwise functions of one tensor: values against libm in double,
 * gradchecks of each (away from kinks), PyTorch's domain rules (NaN, +-inf,
 * caught by anomaly mode) and bad arguments. */
#include <float.h>
#include <string.h>

#include "test_util.h"

static tg_tape *T;
static tg_rng R;
static void setup(void)
{
    T = tg_tape_new();
    tg_rng_seed(&R, 5);
}
static void teardown(void) { tg_tape_free(T); }
TestSuite(unary, .init = setup, .fini = teardown);

enum { EXP, LOG, SQRT, SIGMOID, POW, NEG, ABS, CLAMP, N_KINDS };
static const char *const names[] = {"tg_exp", "tg_log", "tg_sqrt", "tg_sigmoid", "tg_pow", "tg_neg", "tg_abs", "tg_clamp"};

typedef struct kind_ctx {
    int kind;
    double p;       /* tg_pow's exponent */
    double lo, hi;  /* the inputs' range */
} kind_ctx;

#define CLAMP_LO (-0.5)
#define CLAMP_HI 0.75

static tg_tensor *apply(tg_tape *t, tg_tensor *x, const kind_ctx *c)
{
    switch (c->kind) {
    case EXP: return tg_exp(t, x);
    case LOG: return tg_log(t, x);
    case SQRT: return tg_sqrt(t, x);
    case SIGMOID: return tg_sigmoid(t, x);
    case POW: return tg_pow(t, x, c->p);
    case NEG: return tg_neg(t, x);
    case ABS: return tg_abs(t, x);
    default: return tg_clamp(t, x, CLAMP_LO, CLAMP_HI);
    }
}

/* f(x) and f'(x) in double */
static double ref(const kind_ctx *c, double x, double *d)
{
    switch (c->kind) {
    case EXP: *d = exp(x); return exp(x);
    case LOG: *d = 1 / x; return log(x);
    case SQRT: *d = 0.5 / sqrt(x); return sqrt(x);
    case SIGMOID: {
        double s = 1 / (1 + exp(-x));
        *d = s * (1 - s);
        return s;
    }
    case POW: *d = c->p == 0 ? 0 : c->p * pow(x, c->p - 1); return pow(x, c->p);
    case NEG: *d = -1; return -x;
    case ABS: *d = x > 0 ? 1 : x < 0 ? -1 : 0; return fabs(x);
    default: *d = x >= CLAMP_LO && x <= CLAMP_HI ? 1 : 0; return fmin(fmax(x, CLAMP_LO), CLAMP_HI);
    }
}

/* inputs in each kind's domain */
static const kind_ctx kinds[] = {
    {EXP, 0, -3, 3}, {LOG, 0, 0.2, 4}, {SQRT, 0, 0.2, 4}, {SIGMOID, 0, -6, 6}, {POW, 2, -2, 2},
    {POW, 3, -2, 2}, {POW, 0.5, 0.2, 3}, {POW, -1.5, 0.3, 3}, {POW, 0, -2, 2}, {NEG, 0, -2, 2},
    {ABS, 0, -2, 2}, {CLAMP, 0, -2, 2},
};
#define N_CASES (int)(sizeof kinds / sizeof kinds[0])

Test(unary, values_and_grads_against_libm)
{
    for (int i = 0; i < N_CASES; i++) {
        const kind_ctx *c = &kinds[i];
        tg_tensor *x = tu_rand(&R, c->lo, c->hi, 2, (int[]){3, 7});
        tg_tensor *y = apply(T, x, c);
        cr_assert_not_null(y, "%s: %s", names[c->kind], tg_tape_error(T));
        cr_assert(tg_shape_equal(x, y));
        tg_real w[21];
        for (int e = 0; e < 21; e++) w[e] = (tg_real)(e - 10) / 4;
        cr_assert_eq(tg_backward_seed(T, y, w), 0, "%s", tg_tape_error(T));
        for (size_t e = 0; e < x->size; e++) {
            double d, v = ref(c, (double)x->data[e], &d);
#ifdef TAPEGRAD_DOUBLE
            const double tol = 1e-14;
#else
            const double tol = 4 * FLT_EPSILON;
#endif
            cr_assert(fabs((double)y->data[e] - v) <= tol * (1 + fabs(v)), "%s p %g: f(%.9g) = %.9g, want %.9g",
                      names[c->kind], c->p, (double)x->data[e], (double)y->data[e], v);
            double g = (double)w[e] * d;
            cr_assert(fabs((double)x->grad[e] - g) <= 8 * tol * (1 + fabs(g)), "%s p %g: grad at %.9g = %.9g, want %.9g",
                      names[c->kind], c->p, (double)x->data[e], (double)x->grad[e], g);
        }
        tg_tensor_free(x);
        tg_tape_reset(T);
    }
}

static tg_tensor *f_kind(tg_tape *t, tg_tensor **in, void *ctx) { return apply(t, in[0], ctx); }

Test(unary, gradcheck_each_kind)
{
    for (int i = 0; i < N_CASES; i++) {
        const kind_ctx *c = &kinds[i];
        tg_tensor *x = tu_rand(&R, c->lo, c->hi, 3, (int[]){2, 3, 4});
        for (size_t e = 0; e < x->size; e++) { /* no element within eps of a kink */
            double v = (double)x->data[e];
            if ((c->kind == ABS && fabs(v) < 0.05) ||
                (c->kind == CLAMP && (fabs(v - CLAMP_LO) < 0.05 || fabs(v - CLAMP_HI) < 0.05)))
                x->data[e] = (tg_real)(v + 0.1);
        }
        tu_gradcheck(f_kind, (void *)c, &x, 1);
        tg_tensor_free(x);
    }
}

/* a composite of every new op, as a user would chain them */
static tg_tensor *f_chain(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *x = in[0];
    tg_tensor *h = tg_mul(t, tg_sigmoid(t, x), tg_exp(t, tg_neg(t, tg_abs(t, x))));
    h = tg_add(t, h, tg_sqrt(t, tg_pow(t, tg_clamp(t, x, -1, 1.5), 2)));
    return tg_log(t, tg_add(t, h, tg_tensor_from(t, (tg_real[]){1}, 0, NULL)));
}

Test(unary, gradcheck_a_chain_of_every_kind)
{
    tg_tensor *x = tu_rand(&R, -2, 2, 2, (int[]){4, 5});
    for (size_t e = 0; e < x->size; e++)
        if (fabs((double)x->data[e]) < 0.05 || fabs((double)x->data[e] + 1) < 0.05 || fabs((double)x->data[e] - 1.5) < 0.05)
            x->data[e] += (tg_real)0.1;
    tu_gradcheck(f_chain, NULL, &x, 1);
    tg_tensor_free(x);
}

/* PyTorch: log(-1), sqrt(-1), (-8)^(1/3) are NaN, log(0) = -inf, and the
 * gradients at those points are NaN or inf; nothing crashes, anomaly mode
 * names the op. */
Test(unary, domain_errors_are_nan_and_anomaly_names_the_op)
{
    tg_tensor *x = tg_tensor_from(T, (tg_real[]){-1, 0, 4}, 1, (int[]){3});
    tg_tensor *l = tg_log(T, x), *s = tg_sqrt(T, x), *p = tg_pow(T, x, 1.0 / 3);
    cr_assert(l && s && p);
    cr_assert(isnan(l->data[0]) && isinf(l->data[1]) && l->data[1] < 0);
    cr_assert(isnan(s->data[0]) && s->data[1] == 0 && s->data[2] == 2);
    cr_assert(isnan(p->data[0]) && p->data[1] == 0);
    tg_tape_reset(T);
    tg_tape_set_anomaly(T, true);
    x = tg_tensor_from(T, (tg_real[]){2, -1}, 1, (int[]){2});
    tu_expect_error(T, tg_log(T, x), "anomaly: tg_log produced NaN/Inf", "[2]");
    x = tg_tensor_from(T, (tg_real[]){2, -1}, 1, (int[]){2});
    tu_expect_error(T, tg_sqrt(T, x), "anomaly: tg_sqrt produced NaN/Inf", "[2]");
    x = tg_tensor_from(T, (tg_real[]){-8}, 1, (int[]){1});
    tu_expect_error(T, tg_pow(T, x, 0.5), "anomaly: tg_pow produced NaN/Inf", "[1]");
    /* sqrt(0) is 0 but its grad is inf: anomaly mode reports the backward */
    x = tg_tensor_from(T, (tg_real[]){0, 1}, 1, (int[]){2});
    x->requires_grad = true;
    tg_tensor *y = tg_sum(T, tg_sqrt(T, x));
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward(T, y), -1);
    cr_assert(strstr(tg_tape_error(T), "anomaly: backward of tg_sqrt produced NaN/Inf"), "%s", tg_tape_error(T));
}

/* exp over the whole float range (the float build's vectorised exp), the
 * sigmoid without overflow at either end, pow(x, 0) and its zero grad. */
Test(unary, extremes)
{
    tg_tensor *x = tg_tensor_from(T, (tg_real[]){-INFINITY, -1000, 0, 80, 1000, INFINITY, NAN}, 1, (int[]){7});
    tg_tensor *e = tg_exp(T, x), *s = tg_sigmoid(T, x);
    cr_assert(e && s);
    cr_assert(e->data[0] == 0 && e->data[1] == 0 && e->data[2] == 1);
    tu_close(e->data[3] / (tg_real)5.54062238439351e34, 1, TU_TOL * 4);
    cr_assert(isinf(e->data[4]) && isinf(e->data[5]) && isnan(e->data[6]));
    cr_assert(s->data[0] == 0 && s->data[1] == 0 && s->data[2] == 0.5 && s->data[3] == 1 && s->data[4] == 1 &&
              s->data[5] == 1 && isnan(s->data[6]));
    x = tg_tensor_from(T, (tg_real[]){-3, 0, 2}, 1, (int[]){3});
    x->requires_grad = true;
    tg_tensor *p = tg_pow(T, x, 0);
    cr_assert(p && p->data[0] == 1 && p->data[1] == 1 && p->data[2] == 1);
    cr_assert_eq(tg_backward_seed(T, p, (tg_real[]){1, 1, 1}), 0);
    for (int i = 0; i < 3; i++) cr_assert_eq(x->grad[i], 0);
}

/* min(max(x, lo), hi) as torch.clamp: NaN passes through, lo > hi gives hi,
 * the grad passes at both bounds (inclusive). */
Test(unary, clamp_edges)
{
    tg_tensor *x = tg_tensor_from(T, (tg_real[]){-2, -1, 0, 1, 2, NAN}, 1, (int[]){6});
    x->requires_grad = true;
    tg_tensor *y = tg_clamp(T, x, -1, 1);
    cr_assert_not_null(y);
    const tg_real want[] = {-1, -1, 0, 1, 1};
    for (int i = 0; i < 5; i++) cr_assert_eq(y->data[i], want[i]);
    cr_assert(isnan(y->data[5]));
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1, 1, 1}), 0);
    const tg_real gwant[] = {0, 1, 1, 1, 0, 0};
    for (int i = 0; i < 6; i++) cr_assert_eq(x->grad[i], gwant[i], "grad %d", i);
    tg_tensor *z = tg_clamp(T, x, 2, -2);
    cr_assert(z && z->data[0] == -2 && z->data[4] == -2);
    tg_tensor *one = tg_clamp(T, x, -INFINITY, 0.5);
    cr_assert(one && one->data[0] == -2 && one->data[4] == 0.5);
    tu_expect_error(T, tg_clamp(T, x, NAN, 1), "tg_clamp: bounds must not be NaN", "lo nan");
}

Test(unary, null_inputs)
{
    kind_ctx c = {0};
    for (c.kind = 0; c.kind < N_KINDS; c.kind++) tu_expect_error(T, apply(T, NULL, &c), names[c.kind], "input is NULL");
}
