/* Shared helpers for the Criterion suites: random tensors, a gradcheck
 * assertion that prints the worst element when it fails, a store's
 * parameters as gradcheck inputs, message checks and temporary
 * directories. The other homes: ops_util.h (op cases), io_util.h
 * (safetensors files), optim_util.h, seqtask_util.h (running seqtask, its
 * log.csv). */
#ifndef TAPEGRAD_TEST_UTIL_H
#define TAPEGRAD_TEST_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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


/* Runs tg_gradcheck with the default tolerances and fails the test with the
 * worst element when the check fails: in the inputs' own dtype (the float32
 * kernels, at float32's tolerances) and, for float32 inputs, in float64 too. */
#define tu_gradcheck(f, ctx, inputs, n)                                                                  \
    do {                                                                                                 \
        tg_gradcheck_result r_ = tg_gradcheck((f), (ctx), (inputs), (n), &(tg_gradcheck_opts){.same_dtype = true}); \
        cr_assert(r_.ok, "same dtype: %s", tg_error());                                                  \
        if (TG_REAL_DTYPE == TG_F32) {                                                                   \
            r_ = tg_gradcheck((f), (ctx), (inputs), (n), NULL);                                          \
            cr_assert(r_.ok, "float64: %s", tg_error());                                                 \
        }                                                                                                \
    } while (0)

/* x in like's dtype: a function under tg_gradcheck (which runs in float64)
 * converts the float32 constants it captured. NULL stays NULL. */
static inline tg_tensor *tu_like(tg_tape *t, tg_tensor *x, const tg_tensor *like)
{
    return x && like && x->dtype != like->dtype ? tg_to(t, x, like->dtype) : x;
}

/* lens [n] as an int32 heap tensor (a mask's key_lens), made once per
 * process per list of values and kept (n <= 8). */
static inline const tg_tensor *tu_lens(const int32_t *lens, int n)
{
    static struct { int n; int32_t v[8]; tg_tensor *x; } made[16];
    static int n_made;
    for (int k = 0; k < n_made; k++)
        if (made[k].n == n && memcmp(made[k].v, lens, (size_t)n * sizeof *lens) == 0) return made[k].x;
    cr_assert(n <= 8 && n_made < 16);
    tg_tensor *x = tg_tensor_alloc_dtype(TG_I32, 1, (int[]){n});
    cr_assert_not_null(x);
    memcpy(tg_data(x, TG_I32), lens, (size_t)n * sizeof *lens);
    made[n_made].n = n;
    memcpy(made[n_made].v, lens, (size_t)n * sizeof *lens);
    made[n_made++].x = x;
    return x;
}

/* An index tensor of t: n = prod(shape) values of dtype dt (TG_I64 or TG_I32)
 * copied from data (NULL: zeros). */
static inline tg_tensor *tu_index(tg_tape *t, tg_dtype dt, const void *data, int ndim, const int *shape)
{
    return data ? tg_tensor_from_dtype(t, dt, data, ndim, shape) : tg_tensor_zeros_dtype(t, dt, ndim, shape);
}

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

/* Most inputs a gradcheck here takes (an input or two and a store). */
#define TU_MAXIN 64

/* The inputs x0, x1 (each may be NULL) then every parameter of p, into in
 * [TU_MAXIN]; returns their number. */
static inline int tu_gather(tg_tensor **in, tg_tensor *x0, tg_tensor *x1, const tg_params *p)
{
    int n = 0;
    if (x0) in[n++] = x0;
    if (x1) in[n++] = x1;
    for (int i = 0; i < tg_params_count(p); i++) in[n++] = tg_params_at(p, i);
    cr_assert_leq(n, TU_MAXIN);
    return n;
}

/* Moves every parameter of p by up to amp off its init (LayerNorm's exact
 * 1 / 0, zero biases). */
static inline void tu_jitter(tg_params *p, tg_rng *rng, double amp)
{
    tg_real *d = tg_params_data(p);
    for (size_t i = 0; i < tg_params_numel(p); i++) d[i] += (tg_real)(amp * (2 * tg_rng_uniform(rng) - 1));
}

/* msg contains part. */
#define tu_assert_has(msg, part)                                                             \
    do {                                                                                     \
        const char *m_ = (msg);                                                              \
        cr_assert(m_ && strstr(m_, (part)), "message \"%s\" lacks \"%s\"", m_ ? m_ : "(NULL)", (part)); \
    } while (0)

/* A new directory $TMPDIR/<name>.XXXXXX (/tmp without TMPDIR) into dir [len]. */
static inline void tu_tmpdir(char *dir, size_t len, const char *name)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, len, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
    cr_assert(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
}

/* rm -rf dir (made by tu_tmpdir). */
static inline void tu_tmpdir_remove(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dir[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* d/rel, in one of a few rotating buffers (four may be in use at once). */
static inline const char *tu_path(const char *d, const char *rel)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", d, rel);
    return buf[k];
}

/* The entries of dir but . and .. (hidden ones are not counted either). */
static inline int tu_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

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
