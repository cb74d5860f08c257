/* tapegrad vs PyTorch: forward outputs and gradients of the core ops against
 * the reference fixtures written by bench/torch/make_fixtures.py into
 * tests/fixtures/<family>.safetensors (float64; see that script for the
 * layout: C.<input>, C.out, C.w, C.grad.<input>, metadata "cases",
 * "C.grads", "C.<param>"). The loss whose gradients are compared is
 * sum(out * w): tg_backward_seed(out, w).
 *
 * Tolerances |got - want| <= ATOL + RTOL |want|: the float build reads the
 * float64 fixtures rounded to float32 and computes in float32; the double
 * build computes from the exact inputs.
 *
 * A fixture case this file has no runner for fails the test, so new cases
 * in make_fixtures.py need a runner here. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/tapegrad.h>

#ifdef TAPEGRAD_DOUBLE
#define RTOL 1e-10
#define ATOL 1e-12
#else
#define RTOL 1e-4
#define ATOL 1e-5
#endif

typedef struct fx {
    const char *family, *cas; /* file and current case */
    tg_safetensors *st;
    tg_tape *t;
} fx;

/* "<case>.<name>" or NULL. */
static tg_tensor *fx_get(const fx *f, const char *name)
{
    char key[256];
    if (snprintf(key, sizeof key, "%s.%s", f->cas, name) >= (int)sizeof key) return NULL;
    return tg_st_get(f->st, key);
}

/* A required input; differentiable iff the fixture holds its gradient. */
static tg_tensor *fx_in(fx *f, const char *name)
{
    tg_tensor *x = fx_get(f, name);
    cr_assert(x, "%s/%s: tensor '%s' is missing", f->family, f->cas, name);
    char g[128];
    snprintf(g, sizeof g, "grad.%s", name);
    x->requires_grad = fx_get(f, g) != NULL;
    return x;
}

static tg_tensor *fx_opt(fx *f, const char *name) { return fx_get(f, name) ? fx_in(f, name) : NULL; }

static double fx_param(const fx *f, const char *name, double dflt)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s", f->cas, name);
    const char *v = tg_st_meta(f->st, key);
    return v ? strtod(v, NULL) : dflt;
}

/* ---- runners: one per family, building the op from the case's tensors ---- */

static tg_tensor *run_matmul(fx *f)
{
    double flags = fx_param(f, "flags", -1);
    cr_assert(flags >= 0, "%s/%s: no flags", f->family, f->cas);
    return tg_matmul(f->t, fx_in(f, "a"), fx_in(f, "b"), fx_opt(f, "bias"), (unsigned)flags);
}

static tg_tensor *run_linear(fx *f)
{
    return tg_matmul(f->t, fx_in(f, "x"), fx_in(f, "weight"), fx_opt(f, "bias"), TG_TRANS_B);
}

static tg_tensor *run_softmax(fx *f) { return tg_softmax(f->t, fx_in(f, "x")); }
static tg_tensor *run_log_softmax(fx *f) { return tg_log_softmax(f->t, fx_in(f, "x")); }
static tg_tensor *run_gelu(fx *f) { return tg_gelu(f->t, fx_in(f, "x")); }

/* The fixture's 0/1 arrays keep (1 = attend, [Lq, Lk] or [B, Lq, Lk]) and
 * additive ([Lq, Lk]) as tg_mask's one attn tensor: bool true = not allowed,
 * or, with additive, float with -inf where keep is 0. */
static const tg_tensor *fx_attn(fx *f)
{
    tg_tensor *keep = fx_get(f, "keep"), *add = fx_get(f, "additive");
    if (!keep) return add;
    size_t plane = add ? add->size : 1;
    tg_tensor *a = tg_tensor_new_dtype(f->t, add ? TG_F64 : TG_BOOL, keep->ndim, keep->shape);
    cr_assert(a, "%s", tg_tape_error(f->t));
    for (size_t i = 0; i < keep->size; i++) {
        bool k = tg_dtype_load(keep->dtype, keep->data, i) != 0;
        if (add) tg_dtype_store(TG_F64, a->data, i, k ? tg_dtype_load(add->dtype, add->data, i % plane) : -INFINITY);
        else ((uint8_t *)tg_data(a, TG_BOOL))[i] = !k;
    }
    return a;
}

static tg_tensor *run_softmax_masked(fx *f)
{
    tg_tensor *kl = fx_get(f, "key_lens"), *kk = fx_get(f, "key_keep"), *pad = NULL;
    if (kk) { /* 1 = attend -> PyTorch's key_padding_mask, true = ignore */
        cr_assert(pad = tg_tensor_new_dtype(f->t, TG_BOOL, kk->ndim, kk->shape));
        for (size_t i = 0; i < kk->size; i++) ((uint8_t *)tg_data(pad, TG_BOOL))[i] = tg_dtype_load(kk->dtype, kk->data, i) == 0;
    }
    tg_mask m = {
        .causal = fx_param(f, "causal", 0) != 0,
        .window = (int)fx_param(f, "window", 0),
        .key_lens = kl ? tg_to(f->t, kl, TG_I32) : NULL,
        .key_padding = pad,
        .attn = fx_attn(f),
    };
    return tg_softmax_masked(f->t, fx_in(f, "x"), &m, fx_param(f, "scale", 1));
}

static tg_tensor *run_layernorm(fx *f)
{
    double eps = fx_param(f, "eps", -1);
    cr_assert(eps > 0, "%s/%s: no eps", f->family, f->cas);
    return tg_layernorm(f->t, fx_in(f, "x"), fx_opt(f, "weight"), fx_opt(f, "bias"), eps);
}

static tg_tensor *run_rmsnorm(fx *f)
{
    double eps = fx_param(f, "eps", -1);
    cr_assert(eps > 0, "%s/%s: no eps", f->family, f->cas);
    return tg_rmsnorm(f->t, fx_in(f, "x"), fx_opt(f, "weight"), eps);
}

/* A case's integer-valued tensor (stored as F64) as an index tensor of dtype
 * dt (int64 or int32). */
static tg_tensor *fx_index_of(fx *f, const char *name, tg_dtype dt)
{
    tg_tensor *x = fx_get(f, name);
    cr_assert(x, "%s/%s: no '%s'", f->family, f->cas, name);
    tg_tensor *ix = tg_to(f->t, x, dt);
    cr_assert(ix && ix->dtype == dt, "%s/%s: %s", f->family, f->cas, tg_tape_error(f->t));
    return ix;
}

static tg_tensor *run_embedding(fx *f)
{
    return tg_embedding(f->t, fx_in(f, "weight"), fx_index_of(f, "ids", TG_I64));
}

/* An integer-valued tensor of the file (no grad) converted to dtype dt on f's tape. */
static tg_tensor *fx_as(fx *f, const char *name, tg_dtype dt)
{
    tg_tensor *x = fx_get(f, name);
    cr_assert(x, "%s/%s: tensor '%s' is missing", f->family, f->cas, name);
    tg_tensor *y = tg_to(f->t, x, dt);
    cr_assert(y, "%s/%s: %s", f->family, f->cas, tg_tape_error(f->t));
    return y;
}

/* the file's targets are one per row: shaped as the logits without the class dim */
static tg_tensor *run_cross_entropy(fx *f)
{
    tg_tensor *x = fx_in(f, "logits"), *y = fx_as(f, "targets", TG_I64);
    cr_assert(x->ndim >= 1 && y->size * (size_t)x->shape[x->ndim - 1] == x->size, "%s/%s: a target per row",
              f->family, f->cas);
    y = tg_tensor_from_dtype(f->t, TG_I64, y->data, x->ndim - 1, x->shape);
    return tg_cross_entropy(f->t, x, y, (int)fx_param(f, "ignore_index", TG_IGNORE));
}

/* The case's parameter "op" picks one of fns (an index the generator wrote). */
static int fx_op(const fx *f, int n)
{
    int op = (int)fx_param(f, "op", -1);
    cr_assert(op >= 0 && op < n, "%s/%s: op %d is not in [0, %d)", f->family, f->cas, op, n);
    return op;
}

static tg_tensor *run_broadcast(fx *f)
{
    tg_tensor *(*const fns[])(tg_tape *, tg_tensor *, tg_tensor *) = {tg_add, tg_sub, tg_mul, tg_div};
    return fns[fx_op(f, 4)](f->t, fx_in(f, "a"), fx_in(f, "b"));
}

static tg_tensor *run_unary(fx *f)
{
    tg_tensor *(*const fns[])(tg_tape *, tg_tensor *) = {tg_exp, tg_log, tg_sqrt, tg_sigmoid, NULL, tg_neg, tg_abs};
    int op = fx_op(f, 8);
    tg_tensor *x = fx_in(f, "x");
    if (op == 4) return tg_pow(f->t, x, fx_param(f, "p", NAN));
    if (op == 7) return tg_clamp(f->t, x, fx_param(f, "lo", NAN), fx_param(f, "hi", NAN));
    return fns[op](f->t, x);
}

static tg_tensor *run_reduce(fx *f)
{
    tg_tensor *(*const fns[])(tg_tape *, tg_tensor *, int, bool) = {tg_sum_dim, tg_mean_dim, tg_max_dim,
                                                                   tg_logsumexp_dim};
    return fns[fx_op(f, 4)](f->t, fx_in(f, "x"), (int)fx_param(f, "dim", 99), fx_param(f, "keepdim", 0) != 0);
}

/* make_math_fixtures.py's MATH list, in order */
static tg_tensor *run_math(fx *f)
{
    tg_tensor *(*const fns[])(tg_tape *, tg_tensor *) = {
        tg_sin, tg_cos, tg_exp2, tg_log2, tg_log10, tg_log1p, tg_expm1, tg_sign, tg_reciprocal, tg_rsqrt,
        tg_square, tg_erf, tg_silu, NULL, NULL, NULL, NULL, tg_selu, NULL, tg_mish, tg_hardswish,
        tg_hardsigmoid, NULL, tg_softsign, tg_gelu_tanh};
    int op = fx_op(f, (int)(sizeof fns / sizeof *fns));
    tg_tensor *x = fx_in(f, "x");
    switch (op) {
    case 13: return tg_softplus(f->t, x, 1, 20);
    case 14: return tg_softplus(f->t, x, 3, 4);
    case 15: return tg_leaky_relu(f->t, x, 0.1);
    case 16: return tg_elu(f->t, x, 0.7);
    case 18: return tg_celu(f->t, x, 1.5);
    case 22: return tg_hardtanh(f->t, x, -0.5, 1.2);
    default: return fns[op](f->t, x);
    }
}

static tg_tensor *run_select(fx *f)
{
    tg_tensor *(*const fns[])(tg_tape *, tg_tensor *, tg_tensor *) = {tg_logaddexp, tg_pow_tensor, NULL,
                                                                     tg_maximum, tg_minimum};
    int op = fx_op(f, 9);
    tg_tensor *a = fx_in(f, "input");
    switch (op) {
    case 1: return tg_pow_tensor(f->t, a, fx_in(f, "exponent"));
    case 2: return tg_lerp(f->t, a, fx_in(f, "end"), fx_in(f, "weight"));
    case 5: return tg_where(f->t, fx_as(f, "c", TG_BOOL), a, fx_in(f, "other"));
    case 6: return tg_masked_fill(f->t, a, fx_as(f, "m", TG_BOOL), fx_param(f, "value", NAN));
    case 7: return tg_max(f->t, a);
    case 8: return tg_min(f->t, a);
    default: return fns[op](f->t, a, fx_in(f, "other"));
    }
}

/* make_math_fixtures.py's ROUNDING list, then remainder and fmod */
static tg_tensor *run_rounding(fx *f)
{
    tg_tensor *(*const fns[])(tg_tape *, tg_tensor *) = {tg_floor, tg_ceil, tg_trunc, tg_round};
    int op = fx_op(f, 6);
    tg_tensor *a = fx_in(f, "input");
    if (op < 4) return fns[op](f->t, a);
    return (op == 4 ? tg_remainder : tg_fmod)(f->t, a, fx_in(f, "other"));
}

static tg_tensor *run_along(fx *f)
{
    int op = fx_op(f, 9), dim = (int)fx_param(f, "dim", 99);
    bool keep = fx_param(f, "keepdim", 0) != 0;
    tg_tensor *x = fx_in(f, "x");
    switch (op) {
    case 0: return tg_min_dim(f->t, x, dim, keep);
    case 1: return tg_prod_dim(f->t, x, dim, keep);
    case 2: return tg_var_dim(f->t, x, dim, fx_param(f, "correction", NAN), keep);
    case 3: return tg_std_dim(f->t, x, dim, fx_param(f, "correction", NAN), keep);
    case 4: return tg_norm_dim(f->t, x, fx_param(f, "ord", NAN), dim, keep);
    case 5: return tg_cumsum(f->t, x, dim);
    case 6: return tg_cumprod(f->t, x, dim);
    case 7: return tg_sort(f->t, x, dim, fx_param(f, "descending", 0) != 0, NULL);
    default: return tg_topk(f->t, x, (int)fx_param(f, "k", -1), dim, fx_param(f, "largest", 0) != 0, NULL);
    }
}

/* x, targets t (class indices) or q (probabilities), class weights cw */
static tg_tensor *run_losses(fx *f)
{
    int op = fx_op(f, 9);
    tg_reduction red = (tg_reduction)fx_param(f, "reduction", -1);
    tg_tensor *x = fx_in(f, "x");
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    o.weight = fx_opt(f, "cw");
    o.reduction = red;
    o.label_smoothing = fx_param(f, "smoothing", 0);
    o.ignore_index = (int)fx_param(f, "ignore_index", TG_IGNORE);
    tg_tensor *y = fx_get(f, "t") ? fx_as(f, "t", TG_I64) : NULL;
    switch (op) {
    case 0: return tg_cross_entropy_ex(f->t, x, y, NULL, &o);
    case 1: return tg_cross_entropy_ex(f->t, x, NULL, fx_in(f, "q"), &o);
    case 2: return tg_nll_loss(f->t, x, y, &o);
    case 3: return tg_binary_cross_entropy(f->t, x, fx_in(f, "y"), o.weight, red);
    case 4: return tg_binary_cross_entropy_with_logits(f->t, x, fx_in(f, "y"), o.weight, fx_opt(f, "pw"), red);
    case 5: return tg_mse_loss(f->t, x, fx_in(f, "y"), red);
    case 6: return tg_l1_loss(f->t, x, fx_in(f, "y"), red);
    case 7: return tg_smooth_l1_loss(f->t, x, fx_in(f, "y"), red, fx_param(f, "beta", NAN));
    default: return tg_huber_loss(f->t, x, fx_in(f, "y"), red, fx_param(f, "delta", NAN));
    }
}

/* A comma-separated int list parameter into v[max]; its length. */
static int fx_list(const fx *f, const char *name, int *v, int max)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s", f->cas, name);
    const char *s = tg_st_meta(f->st, key);
    cr_assert(s, "%s/%s: no '%s' parameter", f->family, f->cas, name);
    int n = 0;
    for (char *end; *s && n < max; s = *end ? end + 1 : end) v[n++] = (int)strtol(s, &end, 10);
    return n;
}

#define P(name) ((int)fx_param(f, name, 0))

/* op = make_shape_fixtures.py's SHAPE_OPS index */
static tg_tensor *run_shape(fx *f)
{
    int v[16], n;
    tg_tape *t = f->t;
    switch (fx_op(f, 13)) {
    case 0: return tg_narrow(t, fx_in(f, "x"), P("dim"), P("start"), P("len"));
    case 1: return tg_slice_dim(t, fx_in(f, "x"), P("dim"), P("start"), P("end"), P("step"));
    case 2: return tg_cat(t, (tg_tensor *[]){fx_in(f, "a"), fx_in(f, "b")}, 2, P("dim"));
    case 3: return tg_stack(t, (tg_tensor *[]){fx_in(f, "a"), fx_in(f, "b")}, 2, P("dim"));
    case 4: n = fx_list(f, "dims", v, 16); return tg_flip(t, fx_in(f, "x"), v, n);
    case 5: return tg_roll(t, fx_in(f, "x"), P("shift"), (int)fx_param(f, "dim", 0));
    case 6: n = fx_list(f, "pads", v, 16); return tg_pad(t, fx_in(f, "x"), v, n, fx_param(f, "value", NAN));
    case 7: n = fx_list(f, "reps", v, 16); return tg_repeat(t, fx_in(f, "x"), v, n);
    case 8: n = fx_list(f, "shape", v, 16); return tg_expand(t, fx_in(f, "x"), n, v);
    case 9: return tg_tril(t, fx_in(f, "x"), P("k"));
    case 10: return tg_triu(t, fx_in(f, "x"), P("k"));
    case 11: return tg_diag(t, fx_in(f, "x"), P("k"));
    default: {
        tg_tensor *p[16];
        n = tg_chunk(t, fx_in(f, "x"), P("chunks"), P("dim"), p);
        return n > P("piece") ? p[P("piece")] : NULL;
    }
    }
}

#define fx_index(f) fx_index_of(f, "ix", P("i64") ? TG_I64 : TG_I32)

/* op = make_shape_fixtures.py's INDEX_OPS index */
static tg_tensor *run_index(fx *f)
{
    tg_tensor *ix = fx_index(f);
    switch (fx_op(f, 4)) {
    case 0: return tg_gather(f->t, fx_in(f, "x"), P("dim"), ix);
    case 1: return tg_scatter_add(f->t, fx_in(f, "a"), P("dim"), ix, fx_in(f, "src"));
    case 2: return tg_index_select(f->t, fx_in(f, "x"), P("dim"), ix);
    default: return tg_index_add(f->t, fx_in(f, "a"), P("dim"), ix, fx_in(f, "src"), fx_param(f, "alpha", NAN));
    }
}

/* make_select_fixtures.py: the mask (0/1 in the file) as a bool tensor */
static tg_tensor *run_masked_select(fx *f)
{
    return tg_masked_select(f->t, fx_in(f, "x"), fx_as(f, "mask", TG_BOOL));
}

/* make_select_fixtures.py: reduce is tg_scatter_reduce_mode */
static tg_tensor *run_scatter_reduce(fx *f)
{
    return tg_scatter_reduce(f->t, fx_in(f, "a"), P("dim"), fx_index(f), fx_in(f, "src"), (tg_scatter_reduce_mode)P("reduce"),
                             P("include_self") != 0);
}

/* op = make_shape_fixtures.py's DIAGONAL_OPS index */
static tg_tensor *run_diagonal(fx *f)
{
    int shifts[8], dims[8], n;
    switch (fx_op(f, 3)) {
    case 0:
        n = fx_list(f, "shifts", shifts, 8);
        cr_assert_eq(fx_list(f, "dims", dims, 8), n);
        return tg_roll_dims(f->t, fx_in(f, "x"), shifts, dims, n);
    case 1: return tg_diagonal(f->t, fx_in(f, "x"), P("offset"), P("dim1"), P("dim2"));
    default: return tg_diag_embed(f->t, fx_in(f, "x"), P("offset"), P("dim1"), P("dim2"));
    }
}

/* op = make_multi_fixtures.py's MULTI_OPS index; dims "" is every dim (n = 0) */
static tg_tensor *run_multi(fx *f)
{
    int dims[8], n = P("n");
    if (n) cr_assert_eq(fx_list(f, "dims", dims, 8), n);
    bool keep = P("keepdim") != 0;
    double corr = fx_param(f, "correction", NAN);
    switch (fx_op(f, 4)) {
    case 0: return tg_mean_dims(f->t, fx_in(f, "x"), dims, n, keep);
    case 1: return tg_var_dims(f->t, fx_in(f, "x"), dims, n, corr, keep);
    case 2: return tg_std_dims(f->t, fx_in(f, "x"), dims, n, corr, keep);
    default: return tg_norm_dims(f->t, fx_in(f, "x"), fx_param(f, "ord", NAN), dims, n, keep);
    }
}

/* Add attention / toy-model families here with their runner. */
static const struct {
    const char *family;
    tg_tensor *(*run)(fx *f);
} runners[] = {
    {"matmul", run_matmul},
    {"linear", run_linear},
    {"softmax", run_softmax},
    {"log_softmax", run_log_softmax},
    {"softmax_masked", run_softmax_masked},
    {"layernorm", run_layernorm},
    {"rmsnorm", run_rmsnorm},
    {"gelu", run_gelu},
    {"embedding", run_embedding},
    {"cross_entropy", run_cross_entropy},
    {"broadcast", run_broadcast},
    {"unary", run_unary},
    {"reduce", run_reduce},
    {"math", run_math},
    {"select", run_select},
    {"rounding", run_rounding},
    {"along", run_along},
    {"losses", run_losses},
    {"shape", run_shape},
    {"index", run_index},
    {"masked_select", run_masked_select},
    {"scatter_reduce", run_scatter_reduce},
    {"diagonal", run_diagonal},
    {"multi", run_multi},
};

/* ---- comparison --------------------------------------------------------- */

/* got (NULL = all zeros) vs want, element by element; fails with the worst. */
static void compare(const fx *f, const char *what, const tg_real *got, const tg_tensor *want, size_t n)
{
    cr_assert_eq(n, want->size, "%s/%s: %s has %zu elements, the fixture %zu", f->family, f->cas, what, n,
                 want->size);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got ? (double)got[i] : 0, w = (double)want->data[i];
        if (g == w || (isnan(g) && isnan(w))) continue; /* equal infs; NaN where PyTorch has NaN (x % 0) */
        double r = fabs(g - w) / (ATOL + RTOL * fabs(w));
        if (!(r <= worst)) { /* NaN counts as worst */
            worst = r;
            at = i;
        }
    }
    cr_assert(worst <= 1, "%s/%s: %s[%zu] = %.12g, PyTorch %.12g (|diff| is %.3g x the tolerance)", f->family,
              f->cas, what, at, got ? (double)got[at] : 0.0, (double)want->data[at], worst);
}

static void check_case(fx *f, tg_tensor *(*run)(fx *f))
{
    tg_tape_reset(f->t);
    tg_tensor *out = run(f);
    cr_assert(out, "%s/%s: %s", f->family, f->cas, tg_tape_error(f->t));
    tg_tensor *want = fx_get(f, "out"), *w = fx_get(f, "w");
    cr_assert(want && w, "%s/%s: out or w missing", f->family, f->cas);
    char s1[TG_SHAPE_STR], s2[TG_SHAPE_STR];
    cr_assert(tg_shape_equal(out, want), "%s/%s: output shape %s, PyTorch %s", f->family, f->cas,
              tg_shape_str(out, s1), tg_shape_str(want, s2));
    compare(f, "out", out->data, want, out->size);
    cr_assert_eq(tg_backward_seed(f->t, out, w->data), 0, "%s/%s: %s", f->family, f->cas,
                 tg_tape_error(f->t));

    char key[256], list[256];
    snprintf(key, sizeof key, "%s.grads", f->cas);
    const char *grads = tg_st_meta(f->st, key);
    cr_assert(grads && strlen(grads) < sizeof list, "%s/%s: no '%s' metadata", f->family, f->cas, key);
    strcpy(list, grads);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        snprintf(key, sizeof key, "grad.%s", name);
        tg_tensor *x = fx_get(f, name), *g = fx_get(f, key);
        cr_assert(x && g, "%s/%s: %s or its gradient is missing", f->family, f->cas, name);
        compare(f, key, x->grad, g, x->size);
    }
}

/* Loads tests/fixtures/<family>.safetensors and checks every case in it. */
static void check_family(const char *family)
{
    int r = -1;
    for (size_t i = 0; i < sizeof runners / sizeof *runners; i++)
        if (strcmp(runners[i].family, family) == 0) r = (int)i;
    cr_assert(r >= 0, "no runner for family '%s'", family);
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s.safetensors", TG_SOURCE_DIR, family);
    fx f = {.family = family, .t = tg_tape_new()};
    cr_assert(f.t);
    cr_assert_eq(tg_st_load(path, &f.st), 0, "%s", tg_error());
    const char *cases = tg_st_meta(f.st, "cases");
    cr_assert(cases && *cases, "%s: no 'cases' metadata", path);
    char *list = strdup(cases);
    int n = 0;
    for (char *save = NULL, *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save), n++) {
        f.cas = c;
        check_case(&f, runners[r].run);
    }
    cr_assert_gt(n, 0);
    free(list);
    tg_st_free(f.st);
    tg_tape_free(f.t);
}

Test(fixtures, matmul) { check_family("matmul"); }
Test(fixtures, linear) { check_family("linear"); }
Test(fixtures, softmax) { check_family("softmax"); }
Test(fixtures, log_softmax) { check_family("log_softmax"); }
Test(fixtures, softmax_masked) { check_family("softmax_masked"); }
Test(fixtures, layernorm) { check_family("layernorm"); }
Test(fixtures, rmsnorm) { check_family("rmsnorm"); }
Test(fixtures, gelu) { check_family("gelu"); }
Test(fixtures, embedding) { check_family("embedding"); }
Test(fixtures, cross_entropy) { check_family("cross_entropy"); }
Test(fixtures, broadcast) { check_family("broadcast"); }
Test(fixtures, unary) { check_family("unary"); }
Test(fixtures, reduce) { check_family("reduce"); }
Test(fixtures, math) { check_family("math"); }
Test(fixtures, select) { check_family("select"); }
Test(fixtures, rounding) { check_family("rounding"); }
Test(fixtures, along) { check_family("along"); }
Test(fixtures, losses) { check_family("losses"); }
Test(fixtures, shape) { check_family("shape"); }
Test(fixtures, index) { check_family("index"); }
Test(fixtures, masked_select) { check_family("masked_select"); }
Test(fixtures, scatter_reduce) { check_family("scatter_reduce"); }
Test(fixtures, diagonal) { check_family("diagonal"); }
Test(fixtures, multi) { check_family("multi"); }
