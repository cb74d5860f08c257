/* Shared helpers for the Criterion suites: random tensors and a gradcheck
 * assertion that prints the worst element when it fails. */
#ifndef TAPEGRAD_TEST_UTIL_H
#define TAPEGRAD_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <tapegrad/tapegrad.h>

/* A heap tensor with uniform values in [lo, hi) from rng, requires_grad set. */
static inline tg_tensor *tu_rand(tg_rng *rng, double lo, double hi, int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    cr_assert_not_null(x);
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(lo + (hi - lo) * tg_rng_uniform(rng));
    x->requires_grad = true;
    return x;
}


/* Runs tg_gradcheck with the precision's default tolerances and fails the
 * test with the worst element when the check fails. */
#define tu_gradcheck(f, ctx, inputs, n)                                                    \
    do {                                                                                   \
        tg_gradcheck_result r_ = tg_gradcheck((f), (ctx), (inputs), (n), NULL);            \
        cr_assert(r_.ok, "%s", tg_error());                                                \
    } while (0)

static inline void tu_free_all(tg_tensor **xs, int n)
{
    for (int i = 0; i < n; i++) tg_tensor_free(xs[i]);
}

/* Asserts that an op on tape t returned NULL with a message containing both
 * needles, then resets t for the next case. */
#define tu_expect_error(t, res, n1, n2)                                                       \
    do {                                                                                      \
        cr_assert_null((res));                                                                \
        const char *e_ = tg_tape_error(t);                                                    \
        cr_assert(e_ && strstr(e_, (n1)) && strstr(e_, (n2)), "got \"%s\", want %s and %s", \
                  e_ ? e_ : "(none)", (n1), (n2));                                            \
        tg_tape_reset(t);                                                                     \
    } while (0)

/* A suite whose every test gets a fresh tape T and the RNG R seeded with seed. */
#define TU_SUITE(suite, seed)                                                                  \
    static tg_tape *T;                                                                         \
    static tg_rng R;                                                                           \
    static void tu_setup(void)                                                                 \
    {                                                                                          \
        T = tg_tape_new();                                                                     \
        tg_rng_seed(&R, (seed));                                                               \
    }                                                                                          \
    static void tu_teardown(void) { tg_tape_free(T); }                                         \
    TestSuite(suite, .init = tu_setup, .fini = tu_teardown)

/* Tolerance for comparing against values computed independently. */
#ifdef TAPEGRAD_DOUBLE
#define TU_TOL 1e-12
#else
#define TU_TOL 1e-5
#endif

#define tu_close(a, b, tol)                                                                 \
    cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * (1 + fabs((double)(b))),          \
              "%s = %.10g, expected %.10g", #a, (double)(a), (double)(b))

#endif
