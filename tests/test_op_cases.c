/* Every check of every public op, driven by the rows of tests/op_cases_*.c
 * (tests/op_cases.h): gradcheck (the double build at PyTorch's tolerances),
 * NaN propagation, NULL refusal, misuse, the same bits on 1 and 2 threads,
 * and a row for every op the headers declare. A failure names the row. */
#define _XOPEN_SOURCE 700  /* realpath */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_cases.h"

static const oc_family *const families[] = {&oc_pointwise, &oc_reduce, &oc_shape, &oc_linalg,
                                            &oc_create,    &oc_nn,     &oc_conv,  &oc_loss};
#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))
#define FOR_ROWS(r)                                                      \
    for (int f_ = 0; f_ < N_FAMILIES; f_++)                              \
        for (const op_case *r = families[f_]->rows; r < families[f_]->rows + families[f_]->n; r++)

/* A row's inputs, from a seed of its name (a new row moves no other's
 * values); dim 0 times grow for an OC_GROWS row's inputs of in[0]'s rank
 * and dim 0. */
static void inputs_make_grown(const op_case *r, tg_tensor **in, int grow)
{
    uint64_t seed = 1469598103934665603ull;
    for (const char *s = r->name; *s; s++) seed = (seed ^ (unsigned char)*s) * 1099511628211ull;
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    for (int k = 0; k < r->n_in; k++) {
        const oc_in *d = &r->in[k];
        int shape[4];
        memcpy(shape, d->shape, sizeof shape);
        if ((r->flags & OC_GROWS) && d->ndim > 0 && d->ndim == r->in[0].ndim && d->shape[0] == r->in[0].shape[0])
            shape[0] *= grow;
        in[k] = tg_tensor_alloc(d->ndim, shape);
        cr_assert_not_null(in[k], "%s: input %d", r->name, k);
        for (size_t i = 0; i < in[k]->size; i++)
            in[k]->data[i] = d->kind == OC_MASK ? (tg_real)(i % 2) : (tg_real)(d->lo + (d->hi - d->lo) * tg_rng_uniform(&rng));
        in[k]->requires_grad = d->kind == OC_X;  /* an OC_NO_GRAD op must not pass it on */
    }
}

static void inputs_make(const op_case *r, tg_tensor **in) { inputs_make_grown(r, in, 1); }

/* The row's op on t, its rng reseeded (dropout draws the same mask every call). */
static tg_tensor *row_call(const op_case *r, tg_tape *t, tg_tensor **in, int null_ptr)
{
    tg_rng rng;
    tg_rng_seed(&rng, 99);
    oc_call c = {t, in, &rng, null_ptr};
    return r->build(&c);
}

static tg_tensor *row_gradcheck_fn(tg_tape *t, tg_tensor **inputs, void *ctx)
{
    return row_call(ctx, t, inputs, -1);
}

/* ---- a row for every public op -------------------------------------------------------------- */

#define MAX_NAMES 512
typedef struct names {
    char *v[MAX_NAMES];
    int n;
} names;

static bool names_has(const names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name)) return true;
    return false;
}

static void names_add(names *s, const char *name, size_t len)
{
    cr_assert_lt(s->n, MAX_NAMES);
    s->v[s->n++] = strndup(name, len);
}

/* Declarations "tg_tensor *tg_xxx(" (ops) and "int tg_xxx(t, " (the splits)
 * of header path and of every header it includes under dir, recursively. */
static void header_scan(const char *path, const char *dir, names *seen, names *ops, names *others)
{
    char real[PATH_MAX];
    cr_assert_not_null(realpath(path, real), "%s: %s", path, strerror(errno));
    if (strncmp(real, dir, strlen(dir)) || names_has(seen, real)) return;
    names_add(seen, real, strlen(real));
    FILE *f = fopen(real, "r");
    cr_assert_not_null(f, "%s", real);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *p;
        if (!strncmp(line, "#include \"", 10)) {
            char sub[PATH_MAX + 64];
            const char *end = strchr(line + 10, '"');
            const char *slash = strrchr(real, '/');
            cr_assert(end && slash);
            snprintf(sub, sizeof sub, "%.*s/%.*s", (int)(slash - real), real, (int)(end - line - 10), line + 10);
            header_scan(sub, dir, seen, ops, others);
        } else if (!strncmp(line, "tg_tensor *tg_", 14) && (p = strchr(line, '('))) {
            names_add(ops, line + 11, (size_t)(p - line - 11));
        } else if (!strncmp(line, "int tg_", 7) && (p = strchr(line, '(')) && !strncmp(p, "(tg_tape *t", 11)) {
            names_add(others, line + 4, (size_t)(p - line - 4));
        }
    }
    fclose(f);
}

static void names_free(names *s)
{
    for (int i = 0; i < s->n; i++) free(s->v[i]);
}

Test(op_cases, every_public_op_has_a_row)
{
    char dir[PATH_MAX];
    cr_assert_not_null(realpath(TG_SOURCE_DIR "/core/ops", dir));
    strcat(dir, "/");
    names seen = {0}, ops = {0}, others = {0}, rows = {0};
    int n_rows = 0;
    header_scan(TG_SOURCE_DIR "/core/ops/ops.h", dir, &seen, &ops, &others);
    cr_assert_gt(ops.n, 100, "only %d ops found from core/ops/ops.h", ops.n);
    FOR_ROWS(r) {
        cr_expect(names_has(&ops, r->name) || names_has(&others, r->name), "row %s: no header declares it", r->name);
        if (!names_has(&rows, r->name)) names_add(&rows, r->name, strlen(r->name));
        n_rows++;
    }
    int missing = 0;
    for (int i = 0; i < ops.n; i++)
        if (!names_has(&rows, ops.v[i])) {
            cr_expect_fail("%s is a public op without a row in tests/op_cases_*.c", ops.v[i]);
            missing++;
        }
    printf("op_cases: %d ops declared, %d rows for %d functions, %d ops without a row\n", ops.n, n_rows, rows.n,
           missing);
    names_free(&seen), names_free(&ops), names_free(&others), names_free(&rows);
}

/* ---- gradcheck -------------------------------------------------------------------------------- */

Test(op_cases, gradcheck)
{
    FOR_ROWS(r) {
        tg_tensor *in[OC_MAXIN] = {NULL};
        inputs_make(r, in);
        if (r->flags & OC_NO_GRAD) {
            tg_tape *t = tg_tape_new();
            tg_tensor *y = row_call(r, t, in, -1);
            cr_expect(y && !y->requires_grad, "%s: %s", r->name, y ? "its output requires a grad" : tg_tape_error(t));
            tg_tape_free(t);
        } else {  /* the row's own dtype (its kernels), then float64 (PyTorch's tolerances) */
            tg_gradcheck_result g = tg_gradcheck(row_gradcheck_fn, (void *)r, in, r->n_in, &(tg_gradcheck_opts){.same_dtype = true});
            cr_expect(g.ok, "%s: %s", r->name, tg_error());
            if (TG_REAL_DTYPE == TG_F32) {
                g = tg_gradcheck(row_gradcheck_fn, (void *)r, in, r->n_in, NULL);
                cr_expect(g.ok, "%s in float64: %s", r->name, tg_error());
            }
        }
        tu_free_all(in, r->n_in);
    }
}

/* ---- NULL refusal ----------------------------------------------------------------------------- */

/* res is NULL and the message names the row's op */
static void expect_refused(const op_case *r, const tg_tensor *res, const char *msg, const char *what)
{
    cr_expect(!res, "%s: %s gave a tensor", r->name, what);
    cr_expect(msg && strstr(msg, r->name) && strstr(msg, "NULL"), "%s: %s: got \"%s\"", r->name, what, msg ? msg : "(none)");
}

Test(op_cases, null_refused)
{
    FOR_ROWS(r) {
        tg_tensor *in[OC_MAXIN] = {NULL};
        inputs_make(r, in);
        tg_error_clear();
        tg_tensor *y = row_call(r, NULL, in, -1);
        expect_refused(r, y, tg_error(), "a NULL tape");
        for (int k = 0; k < r->n_in; k++) {
            tg_tape *t = tg_tape_new();
            tg_tensor *keep = in[k];
            in[k] = NULL;
            y = row_call(r, t, in, -1);
            char what[40];
            snprintf(what, sizeof what, "input %d NULL", k);
            if (k < r->n_required) expect_refused(r, y, tg_tape_error(t), what);
            else cr_expect(y, "%s: optional %s: %s", r->name, what, tg_tape_error(t));
            in[k] = keep;
            tg_tape_free(t);
        }
        for (int k = 0; k < r->n_ptr; k++) {
            tg_tape *t = tg_tape_new();
            char what[40];
            snprintf(what, sizeof what, "pointer argument %d NULL", k);
            y = row_call(r, t, in, k);
            expect_refused(r, y, tg_tape_error(t), what);
            tg_tape_free(t);
        }
        tu_free_all(in, r->n_in);
    }
}

/* ---- misuse: a stale tensor, one of another tape, a freed one --------------------------------- */

enum bad { BAD_STALE, BAD_FOREIGN, BAD_FREED, N_BAD };
static const char *const bad_says[N_BAD] = {"is a tensor from before tg_tape_reset", "belongs to another tape",
                                            "is not a live tensor"};

Test(op_cases, stale_foreign_and_freed_inputs_refused)
{
    FOR_ROWS(r) {
        tg_tensor *in[OC_MAXIN] = {NULL};
        inputs_make(r, in);
        for (int k = 0; k < r->n_in; k++)
            for (int bad = 0; bad < N_BAD; bad++) {
                tg_tape *t = tg_tape_new(), *u = tg_tape_new();
                tg_tensor *keep = in[k];
                if (bad == BAD_FREED) {
                    in[k] = tg_tensor_alloc(keep->ndim, keep->shape);
                    tg_tensor_free(in[k]);
                } else {
                    in[k] = tg_tensor_from(bad == BAD_FOREIGN ? u : t, keep->data, keep->ndim, keep->shape);
                    cr_assert_not_null(in[k]);
                    if (bad == BAD_STALE) tg_tape_reset(t);
                }
                tg_tensor *y = row_call(r, t, in, -1);
                /* the op's own input number may differ from the row's */
                const char *e = tg_tape_error(t);
                cr_expect(!y && e && strstr(e, r->name) && strstr(e, bad_says[bad]),
                          "%s: input %d: want \"%s\", got \"%s\"", r->name, k, bad_says[bad], e ? e : "(none)");
                in[k] = keep;
                tg_tape_free(u);
                tg_tape_free(t);
            }
        tu_free_all(in, r->n_in);
    }
}

/* ---- NaN propagation -------------------------------------------------------------------------- */

Test(op_cases, nan_propagates_as_pytorch)
{
    FOR_ROWS(r) {
        if (!r->nan) {
            cr_expect(r->why, "%s: a row without a NaN pattern says why", r->name);
            continue;
        }
        tg_tensor *in[OC_MAXIN] = {NULL};
        inputs_make(r, in);
        in[0]->data[1] = NAN;
        tg_tape *t = tg_tape_new();
        tg_tensor *y = row_call(r, t, in, -1);
        cr_expect(y, "%s: %s", r->name, tg_tape_error(t));
        if (y) {
            char want[256];
            bool same = !strcmp(r->nan, OC_NAN_SAME), all = !strcmp(r->nan, OC_NAN_ALL);
            cr_assert_lt(y->size, sizeof want, "%s: a smaller output", r->name);
            for (size_t i = 0; i < y->size; i++) want[i] = all || (same && i == 1) ? 'n' : '.';
            want[y->size] = '\0';
            if (!same && !all) snprintf(want, sizeof want, "%s", r->nan);
            char got[256];
            for (size_t i = 0; i < y->size; i++) got[i] = isnan(tg_dtype_load(y->dtype, y->data, i)) ? 'n' : '.';
            got[y->size] = '\0';
            cr_expect_str_eq(got, want, "%s: NaN at %s, want %s", r->name, got, want);
        }
        tg_tape_free(t);
        tu_free_all(in, r->n_in);
    }
}

/* ---- the same bits on 1 and 2 threads --------------------------------------------------------- */

/* An OC_GROWS row's dim 0 in the thread check: [2, 3] becomes [16384, 3]. */
#define THREAD_GROW 8192

/* The row's output and its inputs' grads after a backward from a fixed seed,
 * into bits (malloc'd); their count in *n. */
static tg_real *row_bits(const op_case *r, size_t *n)
{
    tg_tensor *in[OC_MAXIN] = {NULL};
    inputs_make_grown(r, in, THREAD_GROW);
    tg_tape *t = tg_tape_new();
    tg_tensor *y = row_call(r, t, in, -1);
    cr_assert_not_null(y, "%s: %s", r->name, tg_tape_error(t));
    size_t total = y->size;
    for (int k = 0; k < r->n_in; k++) total += in[k]->requires_grad ? in[k]->size : 0;
    tg_real *bits = calloc(total + 1, sizeof *bits);
    for (size_t i = 0; i < y->size; i++) bits[i] = (tg_real)tg_dtype_load(y->dtype, y->data, i);  /* argmax: int64 */
    size_t at = y->size;
    if (y->requires_grad) {
        tg_real *seed = malloc((y->size + 1) * sizeof *seed);
        for (size_t i = 0; i < y->size; i++) seed[i] = (tg_real)((int)(i % 7) - 3) / 4;
        cr_assert_eq(tg_backward_seed(t, y, seed), 0, "%s: %s", r->name, tg_tape_error(t));
        free(seed);
        for (int k = 0; k < r->n_in; k++)
            if (in[k]->requires_grad) {
                memcpy(bits + at, in[k]->grad, in[k]->size * sizeof *bits);
                at += in[k]->size;
            }
    }
    *n = at;
    tg_tape_free(t);
    tu_free_all(in, r->n_in);
    return bits;
}

Test(op_cases, same_bits_on_1_and_2_threads)
{
    int before = tg_threads_get();
    FOR_ROWS(r) {
        size_t n1, n2;
        tg_threads_set(1);
        tg_real *b1 = row_bits(r, &n1);
        tg_threads_set(2);
        tg_real *b2 = row_bits(r, &n2);
        cr_expect(n1 == n2 && !memcmp(b1, b2, n1 * sizeof *b1), "%s: 1 and 2 threads differ", r->name);
        free(b1);
        free(b2);
    }
    tg_threads_set(before);
}
