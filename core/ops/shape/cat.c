/* tapegrad: cat and stack along any dim.
 *   cat    out [.., sum n_i, ..] <- xs[i] [.., n_i, ..]   out[.., off_i + j, ..] = xs[i][.., j, ..]
 *          d xs[i] += d out[.., off_i : off_i + n_i, ..]
 *   stack  out [.., n, ..] <- xs[i] [..] = cat of xs[i] unsqueezed at dim (views)
 *   concat cat along the last dim
 * Each input is a block of rows of out read as [outer, N * inner]: one copy
 * of n_i * inner elements per outer index.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct cat_ctx {
    int n, dim;  /* inputs, resolved dim */
} cat_ctx;

/* the map placing xs[i] (at offset off along d) into out */
static void cat_map(tg_map *m, const tg_tensor *x, const tg_tensor *out, int d, int off)
{
    tg_map_of(m, x->ndim, x->shape);
    tg_strides(out->ndim, out->shape, m->out_st);
    m->out_off = (ptrdiff_t)off * m->out_st[d];
}

/* out <- xs[0..n): d xs[i] += d out[.., off_i : off_i + n_i, ..] */
TG_BACKWARD(cat_backward, cat_ctx)
{
    tg_tensor *const *xs = in;
    const cat_ctx *c = ctx;
    for (int i = 0, off = 0; i < c->n; off += xs[i++]->shape[c->dim]) {
        if (!xs[i]->requires_grad) continue;
        tg_real *dx = tg_grad(t, xs[i]);
        if (!dx) return;
        tg_map m;
        cat_map(&m, xs[i], out, c->dim, off);
        tg_map_backward(&m, dx, out->grad);
    }
}

TG_OP(cat_rec, "tg_cat", cat_backward, cat_ctx);
TG_OP(stack_rec, "tg_stack", cat_backward, cat_ctx);
TG_OP(concat_rec, "tg_concat", cat_backward, cat_ctx);

/* xs agree on every dim but d; out's size there through *total. */
static bool cat_shapes(tg_tape *t, const char *op, tg_tensor *const *xs, int n, int d, int *total)
{
    char s0[TG_SHAPE_STR], si[TG_SHAPE_STR];
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        bool same = xs[i]->ndim == xs[0]->ndim;
        for (int k = 0; same && k < xs[0]->ndim; k++) same = k == d || xs[i]->shape[k] == xs[0]->shape[k];
        if (!same) {
            tg_fail(t, "%s: xs[%d] %s does not match xs[0] %s (all dims must be equal but dim %d)", op, i,
                    tg_shape_str(xs[i], si), tg_shape_str(xs[0], s0), d);
            return false;
        }
        sum += xs[i]->shape[d];
    }
    if (sum > INT_MAX) {
        tg_fail(t, "%s: the joined dim (%lld) overflows an int (xs[0] %s, n = %d)", op, sum, tg_shape_str(xs[0], s0), n);
        return false;
    }
    *total = (int)sum;
    return true;
}

/* xs checked, dim resolved */
static tg_tensor *cat_op(tg_tape *t, const tg_op *op, tg_tensor *const *xs, int n, int d)
{
    int total;
    if (!cat_shapes(t, op->name, xs, n, d, &total)) return NULL;
    int shape[TG_MAX_DIMS];
    memcpy(shape, xs[0]->shape, sizeof shape);
    shape[d] = total;
    tg_tensor *out = tg_new_op(t, op, xs[0]->dtype, xs[0]->ndim, shape);
    if (!out) return NULL;
    for (int i = 0, off = 0; i < n; off += xs[i++]->shape[d]) {
        tg_map m;
        cat_map(&m, xs[i], out, d, off);
        tg_map_copy(&m, out->data, xs[i]->data, tg_dtype_size(out->dtype));
    }
    if (!tg_op_record(t, op, out, xs, n, &(cat_ctx){n, d})) return NULL;
    return tg_op_done(t, op, out);
}

/* The tape, the array and every input checked. */
static bool inputs_ok(tg_tape *t, const tg_op *op, tg_tensor *const *xs, int n)
{
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op->name), false;
    if (!xs && n > 0) return tg_fail_null(t, op->name), false;
    if (n <= 0) return tg_fail(t, "%s: needs at least one tensor, got n = %d", op->name, n), false;
    return tg_inputs_check_dtype(t, op, tg_move_dtype(xs[0]), xs, n, n);
}

/* A half cat's inputs computed as float32 and rounded back (half rule). */
#define CAT_HALF(fn, xs, n, ...)                                                                      \
    do {                                                                                            \
        tg_dtype half_ = xs[0]->dtype;                                                              \
        if (tg_dtype_is_half(half_)) {                                                              \
            tg_tensor **w_ = tg_half_widen_all(t, #fn, xs, n);                                      \
            return w_ ? tg_half_round(t, fn(t, w_, n, ##__VA_ARGS__), half_) : NULL;                \
        }                                                                                           \
    } while (0)

tg_tensor *tg_cat(tg_tape *t, tg_tensor *const *xs, int n, int dim)
{
    TG_DISPATCH_OTHER(tg_cat, (xs ? xs[0] : NULL), (t, xs, n, dim));
    const char *op = cat_rec.name;
    if (!inputs_ok(t, &cat_rec, xs, n)) return NULL;
    CAT_HALF(tg_cat, xs, n, dim);
    char s0[TG_SHAPE_STR];
    if (xs[0]->ndim == 0) return tg_fail(t, "%s: xs[0] %s has no dim to join along", op, tg_shape_str(xs[0], s0));
    int d;
    if (!tg_dim_resolve(t, op, xs[0], dim, xs[0]->ndim, &d)) return NULL;
    return cat_op(t, &cat_rec, xs, n, d);
}

/* tg_cat along the last dim */
tg_tensor *tg_concat(tg_tape *t, tg_tensor *const *xs, int n)
{
    TG_DISPATCH_OTHER(tg_concat, (xs ? xs[0] : NULL), (t, xs, n));
    const char *op = concat_rec.name;
    if (!inputs_ok(t, &concat_rec, xs, n)) return NULL;
    CAT_HALF(tg_concat, xs, n);
    char s0[TG_SHAPE_STR];
    if (xs[0]->ndim == 0) return tg_fail(t, "%s: xs[0] %s has no dim to join along", op, tg_shape_str(xs[0], s0));
    return cat_op(t, &concat_rec, xs, n, xs[0]->ndim - 1);
}

#define STACK_MAX 64  /* inputs of tg_stack unsqueezed on the stack; more go through the arena */

tg_tensor *tg_stack(tg_tape *t, tg_tensor *const *xs, int n, int dim)
{
    TG_DISPATCH_OTHER(tg_stack, (xs ? xs[0] : NULL), (t, xs, n, dim));
    const char *op = stack_rec.name;
    if (!inputs_ok(t, &stack_rec, xs, n)) return NULL;
    CAT_HALF(tg_stack, xs, n, dim);
    char s0[TG_SHAPE_STR], si[TG_SHAPE_STR];
    int d;
    if (xs[0]->ndim == TG_MAX_DIMS)
        return tg_fail(t, "%s: xs[0] %s already has %d dims, the most a tensor has", op, tg_shape_str(xs[0], s0),
                       TG_MAX_DIMS);
    if (!tg_dim_resolve(t, op, xs[0], dim, xs[0]->ndim + 1, &d)) return NULL;
    for (int i = 1; i < n; i++)
        if (!tg_shape_equal(xs[i], xs[0]))
            return tg_fail(t, "%s: xs[%d] %s does not match xs[0] %s (stack needs equal shapes)", op, i,
                           tg_shape_str(xs[i], si), tg_shape_str(xs[0], s0));
    tg_tensor *local[STACK_MAX], **u = n <= STACK_MAX ? local : tg_arena_alloc(t, (size_t)n * sizeof *u, op);
    if (!u) return NULL;
    for (int i = 0; i < n; i++)
        if (!(u[i] = tg_unsqueeze(t, xs[i], d))) return NULL;
    return cat_op(t, &stack_rec, u, n, d);
}
