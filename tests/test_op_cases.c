/* Every check of every public op, driven by the rows of tests/op_cases_*.c
 * (tests/op_cases.h): gradcheck (the double build at PyTorch's tolerances),
 * NaN propagation, NULL refusal, misuse, the same bits on 1 and 2 threads,
 * a row for every op the headers declare, and the outputs and grads of
 * PyTorch's twin of each row (tests/op_cases_torch.h). A failure names the
 * row. */
#define _XOPEN_SOURCE 700  /* realpath */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "fixture_util.h"
#include "op_cases.h"
#include "op_cases_torch.h"

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
        tg_dtype dt = d->kind == OC_MASK ? TG_BOOL : d->kind == OC_CLASS ? TG_I64 : TG_REAL_DTYPE;
        in[k] = tg_tensor_alloc_dtype(dt, d->ndim, shape);
        cr_assert_not_null(in[k], "%s: input %d", r->name, k);
        for (size_t i = 0; i < in[k]->size; i++)
            tg_dtype_store(dt, in[k]->data, i,
                           d->kind == OC_MASK    ? (double)(i % 2)
                           : d->kind == OC_CLASS ? d->lo + (double)(i % (size_t)(d->hi - d->lo))
                                                 : (double)(tg_real)(d->lo + (d->hi - d->lo) * tg_rng_uniform(&rng)));
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
                    in[k] = tg_tensor_alloc_dtype(keep->dtype, keep->ndim, keep->shape);
                    tg_tensor_free(in[k]);
                } else {
                    in[k] = tg_tensor_from_dtype(bad == BAD_FOREIGN ? u : t, keep->dtype, keep->data, keep->ndim, keep->shape);
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
        cr_assert(tg_dtype_is_float(in[0]->dtype), "%s: a NaN pattern for a row whose input 0 holds no NaN", r->name);
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
 * as bytes (malloc'd); their count in *n. */
static unsigned char *row_bits(const op_case *r, size_t *n)
{
    tg_tensor *in[OC_MAXIN] = {NULL};
    inputs_make_grown(r, in, THREAD_GROW);
    tg_tape *t = tg_tape_new();
    tg_tensor *y = row_call(r, t, in, -1);
    cr_assert_not_null(y, "%s: %s", r->name, tg_tape_error(t));
    size_t total = y->size * tg_dtype_size(y->dtype);
    for (int k = 0; k < r->n_in; k++) total += in[k]->requires_grad ? in[k]->size * sizeof(tg_real) : 0;
    unsigned char *bits = calloc(total + 1, 1);
    memcpy(bits, y->data, y->size * tg_dtype_size(y->dtype));
    size_t at = y->size * tg_dtype_size(y->dtype);
    if (y->requires_grad) {
        tg_real *seed = malloc((y->size + 1) * sizeof *seed);
        for (size_t i = 0; i < y->size; i++) seed[i] = (tg_real)OC_UPSTREAM(i);
        cr_assert_eq(tg_backward_seed(t, y, seed), 0, "%s: %s", r->name, tg_tape_error(t));
        free(seed);
        for (int k = 0; k < r->n_in; k++)
            if (in[k]->requires_grad) {
                memcpy(bits + at, in[k]->grad, in[k]->size * sizeof(tg_real));
                at += in[k]->size * sizeof(tg_real);
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
        unsigned char *b1 = row_bits(r, &n1);
        tg_threads_set(2);
        unsigned char *b2 = row_bits(r, &n2);
        cr_expect(n1 == n2 && !memcmp(b1, b2, n1), "%s: 1 and 2 threads differ", r->name);
        free(b1);
        free(b2);
    }
    tg_threads_set(before);
}

/* ---- bfloat16 and float16: every op computes them in float32 ---------------------------------- */

/* x's values stored as dtype dt (rounded to nearest even), a standalone tensor. */
static tg_tensor *heap_as(const tg_tensor *x, tg_dtype dt)
{
    tg_tensor *y = tg_tensor_alloc_dtype(dt, x->ndim, x->shape);
    cr_assert_not_null(y, "%s", tg_error());
    for (size_t i = 0; i < x->size; i++) tg_dtype_store(dt, y->data, i, tg_dtype_load(x->dtype, x->data, i));
    y->requires_grad = x->requires_grad;
    return y;
}

/* a and b hold the same values once b (float32) is rounded to a's dtype */
static bool same_rounded(const void *a, tg_dtype da, const void *b, tg_dtype db, size_t n)
{
    if (da == db) return !memcmp(a, b, n * tg_dtype_size(da));
    for (size_t i = 0; i < n; i++) {
        uint16_t ha = tg_half_from_double(tg_dtype_load(da, a, i), da);
        uint16_t hb = tg_half_from_double(tg_dtype_load(db, b, i), da);
        if (ha != hb) return false;
    }
    return true;
}

/* The row with its float inputs in half type dt, against the row with those
 * values widened to float32: the output and every input grad are the float32
 * run's, rounded. Returns false when the op refuses dt (then naming the op
 * and the dtype). */
static bool row_in_half(const op_case *r, tg_dtype dt)
{
    tg_tensor *in[OC_MAXIN] = {NULL}, *h[OC_MAXIN] = {NULL}, *w[OC_MAXIN] = {NULL};
    inputs_make(r, in);
    bool any = false;  /* a float input: else (creation) the output keeps its dtype */
    for (int k = 0; k < r->n_in; k++) {
        bool f = r->in[k].kind == OC_X || r->in[k].kind == OC_FIXED;  /* the float inputs */
        any |= f;
        h[k] = f ? heap_as(in[k], dt) : in[k];
        w[k] = f ? heap_as(h[k], TG_F32) : in[k];
    }
    tg_tape *th = tg_tape_new(), *tw = tg_tape_new();
    tg_tensor *yh = row_call(r, th, h, -1), *yw = row_call(r, tw, w, -1);
    bool accepted = yh != NULL;
    cr_assert_not_null(yw, "%s: float32: %s", r->name, tg_tape_error(tw));
    if (!yh) {
        const char *e = tg_tape_error(th);
        cr_expect(e && strstr(e, r->name) && strstr(e, tg_dtype_name(dt)), "%s in %s: refused without naming both: %s",
                  r->name, tg_dtype_name(dt), e ? e : "(none)");
    } else {
        tg_dtype want = any && yw->dtype == TG_F32 ? dt : yw->dtype;
        cr_expect(yh->dtype == want, "%s in %s: the output is %s", r->name, tg_dtype_name(dt), tg_dtype_name(yh->dtype));
        cr_expect(yh->size == yw->size && same_rounded(yh->data, yh->dtype, yw->data, yw->dtype, yw->size),
                  "%s in %s: the output is not float32's, rounded", r->name, tg_dtype_name(dt));
        cr_expect_eq(yh->requires_grad, yw->requires_grad, "%s in %s", r->name, tg_dtype_name(dt));
        if (yh->requires_grad && yh->dtype == dt) {
            uint16_t *sh = malloc((yh->size + 1) * sizeof *sh);
            float *sw = malloc((yw->size + 1) * sizeof *sw);
            for (size_t i = 0; i < yw->size; i++) {
                sw[i] = (float)((int)(i % 7) - 3) / 4;  /* exact in both */
                sh[i] = tg_half_from_double(sw[i], dt);
            }
            cr_assert_eq(tg_backward_seed(th, yh, sh), 0, "%s: %s", r->name, tg_tape_error(th));
            cr_assert_eq(tg_backward_seed(tw, yw, sw), 0, "%s: %s", r->name, tg_tape_error(tw));
            for (int k = 0; k < r->n_in; k++)
                if (h[k] != in[k] && h[k]->requires_grad)
                    cr_expect(h[k]->grad && same_rounded(h[k]->grad, dt, w[k]->grad, TG_F32, w[k]->size),
                              "%s in %s: input %d's grad is not float32's, rounded", r->name, tg_dtype_name(dt), k);
            free(sh);
            free(sw);
        }
    }
    tg_tape_free(th);
    tg_tape_free(tw);
    for (int k = 0; k < r->n_in; k++)
        if (h[k] != in[k]) tg_tensor_free(h[k]), tg_tensor_free(w[k]);
    tu_free_all(in, r->n_in);
    return accepted;
}

Test(op_cases, half_types_compute_in_float32)
{
    if (TG_REAL_DTYPE != TG_F32) return;  /* the same float32 kernels as the float32 program's run */
    const tg_dtype halves[] = {TG_BF16, TG_F16};
    for (int d = 0; d < 2; d++) {
        int n = 0, refused = 0;
        char names[2048] = "";
        FOR_ROWS(r) {
            n++;
            if (!row_in_half(r, halves[d])) {
                refused++;
                if (strlen(names) + strlen(r->name) + 2 < sizeof names) strcat(strcat(names, " "), r->name);
            }
        }
        printf("op_cases: %s: %d of %d rows computed in float32, %d refused:%s\n", tg_dtype_name(halves[d]),
               n - refused, n, refused, names);
    }
}

/* ---- PyTorch's twin of each row (tests/op_cases_torch.h) -------------------------------------- */

#define TWIN_FIXTURE "op_cases_torch.safetensors"
#define REGENERATE "regenerate with /usr/bin/python3 bench/torch/make_op_case_fixtures.py build/release"

/* r's key: its name, "name#k" for the k-th later row of that name. */
static void row_key(const op_case *r, char *key, size_t size)
{
    int k = 0;
    FOR_ROWS(q) {
        if (q == r) break;
        k += !strcmp(q->name, r->name);
    }
    if (k) snprintf(key, size, "%s#%d", r->name, k);
    else snprintf(key, size, "%s", r->name);
}

static const oc_twin *twin_of(const char *key)
{
    for (int i = 0; i < oc_n_twins; i++)
        if (!strcmp(oc_twins[i].row, key)) return &oc_twins[i];
    return NULL;
}

Test(op_cases, every_row_has_a_torch_twin_or_a_reason)
{
    int twinned = 0, reasoned = 0;
    FOR_ROWS(r) {
        char key[128];
        row_key(r, key, sizeof key);
        const oc_twin *w = twin_of(key);
        cr_expect(w, "%s: no entry in tests/op_cases_torch.c: its PyTorch twin, or why it has none", key);
        if (!w) continue;
        cr_expect(!w->torch != !w->why, "%s: tests/op_cases_torch.c gives %s", key,
                  w->torch ? "both a twin and a reason" : "neither a twin nor a reason");
        twinned += w->torch != NULL;
        reasoned += !w->torch && w->why && *w->why;
    }
    for (int i = 0; i < oc_n_twins; i++) {
        bool found = false;
        FOR_ROWS(r) {
            char key[128];
            row_key(r, key, sizeof key);
            found |= !strcmp(key, oc_twins[i].row);
        }
        cr_expect(found, "tests/op_cases_torch.c: %s names no row", oc_twins[i].row);
        for (int j = 0; j < i; j++) cr_expect(strcmp(oc_twins[i].row, oc_twins[j].row), "%s: twice", oc_twins[i].row);
    }
    printf("op_cases: %d rows with a PyTorch twin, %d with a reason for none\n", twinned, reasoned);
}

/* With TG_OP_CASES_EXPORT=path (test_op_cases_f64): every twinned row's
 * inputs as "<key>/in<k>", its expression as metadata "<key>/torch" and which
 * inputs take a grad as "<key>/grads" ("1" or "0" per input), for
 * bench/torch/make_op_case_fixtures.py. */
Test(op_cases, torch_export)
{
    const char *path = getenv("TG_OP_CASES_EXPORT");
    if (!path) cr_skip_test("TG_OP_CASES_EXPORT is not set (bench/torch/make_op_case_fixtures.py sets it)");
    if (TG_REAL_DTYPE != TG_F64) cr_skip_test("test_op_cases_f64 exports (the fixture is computed in float64)");
    tg_safetensors *s = tg_st_new();
    cr_assert_not_null(s);
    cr_assert_eq(tg_st_set_meta(s, "upstream", OC_UPSTREAM_TEXT), 0, "%s", tg_error());
    FOR_ROWS(r) {
        char key[128], name[160], grads[OC_MAXIN + 1] = "";
        row_key(r, key, sizeof key);
        const oc_twin *w = twin_of(key);
        if (!w || !w->torch) continue;
        tg_tensor *in[OC_MAXIN] = {NULL};
        inputs_make(r, in);
        for (int k = 0; k < r->n_in; k++) {
            snprintf(name, sizeof name, "%s/in%d", key, k);
            cr_assert_eq(tg_st_add(s, name, in[k]), 0, "%s", tg_error());
            grads[k] = in[k]->requires_grad ? '1' : '0';
        }
        grads[r->n_in] = '\0';
        snprintf(name, sizeof name, "%s/torch", key);
        cr_assert_eq(tg_st_set_meta(s, name, w->torch), 0, "%s", tg_error());
        snprintf(name, sizeof name, "%s/grads", key);
        cr_assert_eq(tg_st_set_meta(s, name, grads), 0, "%s", tg_error());
        tu_free_all(in, r->n_in);
    }
    cr_assert_eq(tg_st_save(s, path, TG_ST_OWN_DTYPE), 0, "%s", tg_error());
    tg_st_free(s);
}

/* got (n values of dtype dt) against the fixture's want: exact for an integer
 * or bool output, else within the fixture tolerance (tests/fixture_util.h).
 * A failure names the row, the tensor, the first bad element and both values. */
static void expect_twin(const char *key, const char *what, const void *got, tg_dtype dt, size_t n, const tg_tensor *want)
{
    if (n != want->size) {
        cr_expect_fail("%s: %s has %zu elements, PyTorch's %zu", key, what, n, want->size);
        return;
    }
    bool exact = !tg_dtype_is_float(dt);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double g = tg_dtype_load(dt, got, i), p = tg_dtype_load(want->dtype, want->data, i);
        bool ok = exact ? g == p
                        : (isnan(g) && isnan(p)) || g == p || fabs(g - p) <= FX_ATOL + FX_RTOL * fabs(p);
        if (!ok && !bad++) first = i;
    }
    if (bad)
        cr_expect_fail("%s: %s[%zu] = %.17g, PyTorch %.17g (%zu of %zu elements differ)", key, what, first,
                       tg_dtype_load(dt, got, first), tg_dtype_load(want->dtype, want->data, first), bad, n);
}

/* The fixture's tensor key/suffix, or NULL (then a failure saying to regenerate). */
static const tg_tensor *twin_get(const tg_safetensors *s, const char *key, const char *suffix)
{
    char name[160];
    snprintf(name, sizeof name, "%s/%s", key, suffix);
    const tg_tensor *x = tg_st_get(s, name);
    if (!x) cr_expect_fail("%s: tests/fixtures/" TWIN_FIXTURE " has no %s: " REGENERATE, key, name);
    return x;
}

Test(op_cases, same_as_pytorch)
{
    tg_safetensors *s = load_fixture(TWIN_FIXTURE);
    cr_assert_str_eq(tg_st_meta(s, "upstream") ? tg_st_meta(s, "upstream") : "", OC_UPSTREAM_TEXT,
                     "the fixture's upstream grad rule is not tests/op_cases_torch.h's: " REGENERATE);
    int checked = 0;
    FOR_ROWS(r) {
        char key[128];
        row_key(r, key, sizeof key);
        const oc_twin *w = twin_of(key);
        if (!w || !w->torch) continue;
        const tg_tensor *out = twin_get(s, key, "out");
        if (!out) continue;
        tg_tensor *in[OC_MAXIN] = {NULL};
        inputs_make(r, in);
        bool same_in = true;
        for (int k = 0; k < r->n_in; k++) {  /* the fixture's inputs, rounded to tg_real */
            char suffix[16];
            snprintf(suffix, sizeof suffix, "in%d", k);
            const tg_tensor *x = twin_get(s, key, suffix);
            for (size_t i = 0; x && i < in[k]->size && i < x->size; i++)
                same_in &= tg_dtype_load(in[k]->dtype, in[k]->data, i) == tg_dtype_load(x->dtype, x->data, i);
            same_in &= x && x->size == in[k]->size;
        }
        cr_expect(same_in, "%s: its inputs are not the fixture's: " REGENERATE, key);
        tg_tape *t = tg_tape_new();
        tg_tensor *y = same_in ? row_call(r, t, in, -1) : NULL;
        cr_expect(y || !same_in, "%s: %s", key, tg_tape_error(t));
        if (y) {
            char ys[TG_SHAPE_STR], ps[TG_SHAPE_STR];
            cr_expect(tg_shape_equal(y, out), "%s: out is %s, PyTorch's %s", key, tg_shape_str(y, ys),
                      tg_shape_str(out, ps));
            expect_twin(key, "out", y->data, y->dtype, y->size, out);
            if (y->requires_grad) {
                tg_real *seed = malloc((y->size + 1) * sizeof *seed);
                for (size_t i = 0; i < y->size; i++) seed[i] = (tg_real)OC_UPSTREAM(i);
                cr_assert_eq(tg_backward_seed(t, y, seed), 0, "%s: %s", key, tg_tape_error(t));
                free(seed);
                for (int k = 0; k < r->n_in; k++) {
                    char suffix[16];
                    snprintf(suffix, sizeof suffix, "grad%d", k);
                    const tg_tensor *g = in[k]->requires_grad ? twin_get(s, key, suffix) : NULL;
                    if (!g) continue;
                    tg_real *zeros = in[k]->grad ? NULL : calloc(in[k]->size + 1, sizeof *zeros);  /* not reached */
                    expect_twin(key, suffix, in[k]->grad ? in[k]->grad : zeros, TG_REAL_DTYPE, in[k]->size, g);
                    free(zeros);
                }
            }
            checked++;
        }
        tg_tape_free(t);
        tu_free_all(in, r->n_in);
    }
    printf("op_cases: %d rows compared with PyTorch (" TWIN_FIXTURE ")\n", checked);
    tg_st_free(s);
}

/* ---- int32, int64 and bool: the shape ops move them; the rest refuse them by name ------------- */

/* The row with its float inputs holding small integers (round(4 x)) as
 * dtype dt: an OC_MOVES row gives dt and the values of the row run on the
 * same values as this program's float (converted to dt, so pad's 0.5
 * truncates as PyTorch's int pad does); any other row either accepts dt or
 * refuses it naming the op and the dtype. Returns whether it accepted. */
static bool row_in_int(const op_case *r, tg_dtype dt)
{
    tg_tensor *in[OC_MAXIN] = {NULL}, *h[OC_MAXIN] = {NULL}, *w[OC_MAXIN] = {NULL};
    inputs_make(r, in);
    for (int k = 0; k < r->n_in; k++) {
        bool f = r->in[k].kind == OC_X || r->in[k].kind == OC_FIXED;
        h[k] = w[k] = in[k];
        if (!f) continue;
        h[k] = tg_tensor_alloc_dtype(dt, in[k]->ndim, in[k]->shape);
        w[k] = tg_tensor_alloc(in[k]->ndim, in[k]->shape);
        cr_assert(h[k] && w[k], "%s", tg_error());
        for (size_t i = 0; i < in[k]->size; i++) {
            tg_dtype_store(dt, h[k]->data, i, round(4 * tg_dtype_load(in[k]->dtype, in[k]->data, i)));
            w[k]->data[i] = (tg_real)tg_dtype_load(dt, h[k]->data, i);
        }
        w[k]->requires_grad = in[k]->requires_grad;
    }
    tg_tape *th = tg_tape_new(), *tw = tg_tape_new();
    /* the float run only for a moving row (small integers are not every op's domain: bce) */
    tg_tensor *yh = row_call(r, th, h, -1), *yw = r->flags & OC_MOVES ? row_call(r, tw, w, -1) : NULL;
    if (r->flags & OC_MOVES) {
        cr_assert_not_null(yw, "%s: %s", r->name, tg_tape_error(tw));
        cr_expect_not_null(yh, "%s in %s: refused: %s", r->name, tg_dtype_name(dt), tg_tape_error(th));
    }
    if (!yh) {
        const char *e = tg_tape_error(th);
        cr_expect(e && strstr(e, r->name) && strstr(e, tg_dtype_name(dt)), "%s in %s: refused without naming both: %s",
                  r->name, tg_dtype_name(dt), e ? e : "(none)");
    } else if (r->flags & OC_MOVES) {
        cr_expect(yh->dtype == dt && !yh->requires_grad, "%s in %s: the output is %s%s", r->name, tg_dtype_name(dt),
                  tg_dtype_name(yh->dtype), yh->requires_grad ? " and requires a grad" : "");
        cr_expect(tg_shape_equal(yh, yw), "%s in %s: the shape differs", r->name, tg_dtype_name(dt));
        unsigned char want[8];
        size_t es = tg_dtype_size(dt);
        for (size_t i = 0; yh->dtype == dt && i < yh->size && i < yw->size; i++) {
            tg_dtype_store(dt, want, 0, tg_dtype_load(yw->dtype, yw->data, i));
            cr_expect(!memcmp(want, (unsigned char *)yh->data + i * es, es), "%s in %s: element %zu is %g, not %g",
                      r->name, tg_dtype_name(dt), i, tg_dtype_load(dt, yh->data, i), tg_dtype_load(dt, want, 0));
        }
    }
    tg_tape_free(th);
    tg_tape_free(tw);
    for (int k = 0; k < r->n_in; k++)
        if (h[k] != in[k]) tg_tensor_free(h[k]), tg_tensor_free(w[k]);
    tu_free_all(in, r->n_in);
    return yh != NULL;
}

Test(op_cases, shape_ops_move_every_dtype)
{
    const tg_dtype ints[] = {TG_I32, TG_I64, TG_BOOL};
    for (int d = 0; d < 3; d++) {
        int n = 0, moves = 0, accepted = 0;
        FOR_ROWS(r) {
            n++;
            moves += (r->flags & OC_MOVES) != 0;
            accepted += row_in_int(r, ints[d]);
        }
        printf("op_cases: %s: %d of %d rows accepted (%d move elements), %d refused by name\n",
               tg_dtype_name(ints[d]), accepted, n, moves, n - accepted);
    }
}
