/* tapegrad: elementwise ops and full reductions.
 *
 * Binary ops take b with a's shape, or b 1-D [C] with C = a's last dim
 * (broadcast over rows, as a bias); the broadcast operand's grad is the
 * column sum of the incoming grad.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "ops.h"
#include "../kernels/vmath.h"

enum { OP_ADD, OP_SUB, OP_MUL };
static const char *const binary_names[] = {"tg_add", "tg_sub", "tg_mul"};

/* a [R,C] (op) b [R,C] or [C] -> out [R,C]
 * add: da += dout, db += dout;  sub: db -= dout;  mul: da += dout*b, db += dout*a */
static void binary_backward(tg_tape *t, tg_node *n)
{
    tg_tensor *out = n->out, *a = n->in[0], *b = n->in[1];
    int kind = n->i[0];
    size_t C = (size_t)tg_cols(a), bsize = b->size;
    const tg_real *g = out->grad;
    if (a->requires_grad) {
        tg_real *da = tg_grad(t, a);
        if (!da) return;
        if (kind == OP_MUL)
            for (size_t i = 0; i < a->size; i++) da[i] += g[i] * b->data[bsize == a->size ? i : i % C];
        else
            for (size_t i = 0; i < a->size; i++) da[i] += g[i];
    }
    if (b->requires_grad) {
        tg_real *db = tg_grad(t, b);
        if (!db) return;
        tg_real sign = kind == OP_SUB ? -1 : 1;
        for (size_t i = 0; i < a->size; i++) {
            tg_real gi = kind == OP_MUL ? g[i] * a->data[i] : sign * g[i];
            db[bsize == a->size ? i : i % C] += gi;
        }
    }
}

static tg_tensor *binary(tg_tape *t, tg_tensor *a, tg_tensor *b, int kind)
{
    const char *op = binary_names[kind];
    if (!t) return NULL;
    if (!a || !b) return tg_fail_null(t, op);
    bool bcast = !tg_shape_equal(a, b);
    if (bcast && !(b->ndim == 1 && a->ndim >= 1 && b->shape[0] == tg_cols(a))) {
        char sa[TG_SHAPE_STR], sb[TG_SHAPE_STR];
        return tg_fail(t, "%s: shapes differ: a %s, b %s (b must match a or be [%d])", op,
                       tg_shape_str(a, sa), tg_shape_str(b, sb), tg_cols(a));
    }
    tg_tensor *out = tg_new_like(t, op, a);
    if (!out) return NULL;
    size_t C = (size_t)tg_cols(a);
    for (size_t i = 0; i < a->size; i++) {
        tg_real x = a->data[i], y = b->data[bcast ? i % C : i];
        out->data[i] = kind == OP_ADD ? x + y : kind == OP_SUB ? x - y : x * y;
    }
    if (tg_grad_needed(t, a, b, NULL, NULL)) {
        tg_node *n = tg_node_push(t, op, binary_backward, out, a, b, NULL, NULL);
        if (!n) return NULL;
        n->i[0] = kind;
    }
    return tg_op_done(t, op, out);
}

tg_tensor *tg_add(tg_tape *t, tg_tensor *a, tg_tensor *b) { return binary(t, a, b, OP_ADD); }
tg_tensor *tg_sub(tg_tape *t, tg_tensor *a, tg_tensor *b) { return binary(t, a, b, OP_SUB); }
tg_tensor *tg_mul(tg_tape *t, tg_tensor *a, tg_tensor *b) { return binary(t, a, b, OP_MUL); }

/* ---- unary ------------------------------------------------------------------ */

enum { OP_SCALE, OP_RELU, OP_GELU, OP_TANH };
static const char *const unary_names[] = {"tg_scale", "tg_relu", "tg_gelu", "tg_tanh"};

/* gelu(x) = x Phi(x);  gelu'(x) = Phi(x) + x phi(x) (core/kernels/vmath.h: vectorizable) */
static inline tg_real gelu(tg_real x) { return x * tg_vnormal_cdf(x); }
static inline tg_real gelu_grad(tg_real x) { return tg_vnormal_cdf(x) + x * tg_vnormal_pdf(x); }

/* da [n] += dout * f'(a) (tanh uses f' = 1 - out^2) */
TG_SIMD_CLONES static void unary_grad_acc(int kind, tg_real *restrict da, const tg_real *restrict g,
                                          const tg_real *restrict x, const tg_real *restrict y, size_t n,
                                          tg_real s)
{
    switch (kind) {
    case OP_SCALE: for (size_t i = 0; i < n; i++) da[i] += s * g[i]; break;
    case OP_RELU: for (size_t i = 0; i < n; i++) da[i] += x[i] > 0 ? g[i] : 0; break;
    case OP_GELU: for (size_t i = 0; i < n; i++) da[i] += g[i] * gelu_grad(x[i]); break;
    case OP_TANH: for (size_t i = 0; i < n; i++) da[i] += g[i] * (1 - y[i] * y[i]); break;
    }
}

/* y [n] = f(x) */
TG_SIMD_CLONES static void unary_apply(int kind, tg_real *restrict y, const tg_real *restrict x, size_t n,
                                       tg_real s)
{
    switch (kind) {
    case OP_SCALE: for (size_t i = 0; i < n; i++) y[i] = s * x[i]; break;
    case OP_RELU: for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0; break;
    case OP_GELU: for (size_t i = 0; i < n; i++) y[i] = gelu(x[i]); break;
    case OP_TANH: for (size_t i = 0; i < n; i++) y[i] = (tg_real)tanh(x[i]); break;
    }
}

/* One elementwise pass, cut across the pool (core/kernels/parallel.c) when large:
 * apply (y = f(x)) when da is NULL, else da += g * f'(x). */
typedef struct unary_job {
    int kind;
    tg_real *y, *da, s;
    const tg_real *x, *g;
} unary_job;

#define UNARY_GRAIN 16384

static void unary_piece(void *ctx, size_t begin, size_t end)
{
    const unary_job *j = ctx;
    size_t n = end - begin;
    if (j->da)
        unary_grad_acc(j->kind, j->da + begin, j->g + begin, j->x + begin, j->y + begin, n, j->s);
    else
        unary_apply(j->kind, j->y + begin, j->x + begin, n, j->s);
}

/* out = f(a), same shape */
static void unary_backward(tg_tape *t, tg_node *n)
{
    tg_tensor *out = n->out, *a = n->in[0];
    tg_real *da = tg_grad(t, a);
    if (!da) return;
    unary_job j = {n->i[0], out->data, da, (tg_real)n->f[0], a->data, out->grad};
    tg_parallel_range(a->size, UNARY_GRAIN, unary_piece, &j);
}

static tg_tensor *unary(tg_tape *t, tg_tensor *a, int kind, double s)
{
    const char *op = unary_names[kind];
    if (!t) return NULL;
    if (!a) return tg_fail_null(t, op);
    tg_tensor *out = tg_new_like(t, op, a);
    if (!out) return NULL;
    unary_job j = {kind, out->data, NULL, (tg_real)s, a->data, NULL};
    tg_parallel_range(a->size, UNARY_GRAIN, unary_piece, &j);
    if (tg_grad_needed(t, a, NULL, NULL, NULL)) {
        tg_node *n = tg_node_push(t, op, unary_backward, out, a, NULL, NULL, NULL);
        if (!n) return NULL;
        n->i[0] = kind;
        n->f[0] = s;
    }
    return tg_op_done(t, op, out);
}

tg_tensor *tg_scale(tg_tape *t, tg_tensor *a, double s) { return unary(t, a, OP_SCALE, s); }
tg_tensor *tg_relu(tg_tape *t, tg_tensor *a) { return unary(t, a, OP_RELU, 1); }
tg_tensor *tg_gelu(tg_tape *t, tg_tensor *a) { return unary(t, a, OP_GELU, 1); }
tg_tensor *tg_tanh(tg_tape *t, tg_tensor *a) { return unary(t, a, OP_TANH, 1); }

/* ---- reductions ------------------------------------------------------------------ */

/* out = s * sum(a), 0-d: da += s * dout */
static void sum_backward(tg_tape *t, tg_node *n)
{
    tg_tensor *a = n->in[0];
    tg_real *da = tg_grad(t, a);
    if (!da) return;
    tg_real g = (tg_real)(n->f[0] * n->out->grad[0]);
    for (size_t i = 0; i < a->size; i++) da[i] += g;
}

static tg_tensor *scaled_sum(tg_tape *t, tg_tensor *a, const char *op, bool mean)
{
    if (!t) return NULL;
    if (!a) return tg_fail_null(t, op);
    tg_tensor *out = tg_new(t, op, 0, NULL);
    if (!out) return NULL;
    double s = mean ? (a->size ? 1.0 / (double)a->size : 0) : 1, acc = 0;
    for (size_t i = 0; i < a->size; i++) acc += a->data[i];
    out->data[0] = (tg_real)(s * acc);
    if (tg_grad_needed(t, a, NULL, NULL, NULL)) {
        tg_node *n = tg_node_push(t, op, sum_backward, out, a, NULL, NULL, NULL);
        if (!n) return NULL;
        n->f[0] = s;
    }
    return tg_op_done(t, op, out);
}

tg_tensor *tg_sum(tg_tape *t, tg_tensor *a) { return scaled_sum(t, a, "tg_sum", false); }
tg_tensor *tg_mean(tg_tape *t, tg_tensor *a) { return scaled_sum(t, a, "tg_mean", true); }
