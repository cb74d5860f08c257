/* tapegrad: add, sub, mul, div of two tensors.
 *
 * They broadcast as NumPy and PyTorch do: shapes align from the last dim, a missing or size-1 dim stretches to the other
 * operand's size, any other difference is an error naming both shapes; out
 * has the broadcast shape. With g = dout:
 *   add  da = g            db = g
 *   sub  da = g            db = -g
 *   mul  da = g * b        db = g * a
 *   div  da = g / b        db = -g * a / b^2
 * each summed over the dims where that operand was stretched. The loops walk
 * the output as runs of its last merged dim (size-1 dims dropped, neighbours
 * where both operands step alike merged): a bias add [R, C] + [C] is R runs of
 * C contiguous elements, a same-shape add one run, both vectorized and cut
 * across the pool.
 */
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* ---- binary, broadcasting ------------------------------------------------------- */

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_BINARY_COUNT };

/* out walked as runs of n[nd-1] elements; s[k][d] is operand k's element
 * stride in merged dim d (0 where it is stretched). */
typedef struct bcast {
    int nd;
    size_t n[TG_MAX_DIMS];
    size_t s[2][TG_MAX_DIMS];
} bcast;

/* The broadcast shape of a and b into shape / *ndim and the merged walk;
 * false when some dim differs and neither is 1. */
static bool bcast_plan(const tg_tensor *a, const tg_tensor *b, int *ndim, int *shape, bcast *bc)
{
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    size_t stride[2] = {1, 1}, full[2][TG_MAX_DIMS];
    for (int d = nd - 1; d >= 0; d--) {  /* shapes padded on the left with 1s */
        int da = d - (nd - a->ndim) >= 0 ? a->shape[d - (nd - a->ndim)] : 1;
        int db = d - (nd - b->ndim) >= 0 ? b->shape[d - (nd - b->ndim)] : 1;
        if (da != db && da != 1 && db != 1) return false;
        shape[d] = da == 1 ? db : da;
        int dk[2] = {da, db};
        for (int k = 0; k < 2; k++) {
            full[k][d] = dk[k] == 1 ? 0 : stride[k];
            stride[k] *= (size_t)dk[k];
        }
    }
    *ndim = nd;
    /* drop size-1 dims, merge a dim into the next when both operands step alike */
    bc->nd = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        int m = bc->nd - 1;
        if (m >= 0 && full[0][d] * (size_t)shape[d] == bc->s[0][m] && full[1][d] * (size_t)shape[d] == bc->s[1][m]) {
            bc->n[m] *= (size_t)shape[d];
            bc->s[0][m] = full[0][d];
            bc->s[1][m] = full[1][d];
            continue;
        }
        bc->n[++m] = (size_t)shape[d];
        bc->s[0][m] = full[0][d];
        bc->s[1][m] = full[1][d];
        bc->nd = m + 1;
    }
    if (bc->nd == 0) {  /* one element */
        bc->nd = 1;
        bc->n[0] = 1;
        bc->s[0][0] = bc->s[1][0] = 1;
    }
    return true;
}

/* Operand k's offset at the start of run r (runs count over all but the last merged dim). */
static size_t run_offset(const bcast *bc, int k, size_t r)
{
    size_t off = 0;
    for (int d = bc->nd - 2; d >= 0; d--) {
        off += r % bc->n[d] * bc->s[k][d];
        r /= bc->n[d];
    }
    return off;
}

static inline tg_real apply(int kind, tg_real x, tg_real y)
{
    switch (kind) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    default: return x / y;
    }
}

/* y [n] = a (op) b, where a or b may be one element repeated (step 0) */
static inline void apply_loop(int kind, tg_real *restrict y, const tg_real *restrict a, size_t sa,
                              const tg_real *restrict b, size_t sb, size_t n)
{
    if (sa && sb)
        for (size_t i = 0; i < n; i++) y[i] = apply(kind, a[i], b[i]);
    else if (sa)
        for (size_t i = 0; i < n; i++) y[i] = apply(kind, a[i], b[0]);
    else
        for (size_t i = 0; i < n; i++) y[i] = apply(kind, a[0], b[i]);
}

/* apply_loop with kind a constant in each call, so every loop is one vector
 * expression (a switch inside the loop would keep it scalar). Memory-bound:
 * unlike the unary loops, no AVX clones (they measured 10% slower here). */
static void apply_run(int kind, tg_real *restrict y, const tg_real *restrict a, size_t sa,
                      const tg_real *restrict b, size_t sb, size_t n)
{
    switch (kind) {
    case OP_ADD: apply_loop(OP_ADD, y, a, sa, b, sb, n); break;
    case OP_SUB: apply_loop(OP_SUB, y, a, sa, b, sb, n); break;
    case OP_MUL: apply_loop(OP_MUL, y, a, sa, b, sb, n); break;
    default: apply_loop(OP_DIV, y, a, sa, b, sb, n); break;
    }
}

/* y [n] += b (b[0] repeated when sb is 0): a + b over a, the bits of
 * apply_run's a + b */
static void add_into(tg_real *restrict y, const tg_real *restrict b, size_t sb, size_t n)
{
    if (sb)
        for (size_t i = 0; i < n; i++) y[i] += b[i];
    else
        for (size_t i = 0; i < n; i++) y[i] += b[0];
}

/* d out / d (operand `which`) times g */
static inline tg_real grad_of(int kind, int which, tg_real g, tg_real a, tg_real b)
{
    switch (kind) {
    case OP_ADD: return g;
    case OP_SUB: return which ? -g : g;
    case OP_MUL: return which ? g * a : g * b;
    default: return which ? -g * a / (b * b) : g / b;
    }
}

/* dx [n] += grad_of(g, a, b), or dx[0] += their sum when sx is 0; with store
 * (a, b and dx all out's size, dx just made: tg_grad_write) dx = 0 + it, the
 * same bits without zeroing dx first */
static inline void grad_loop(int kind, int which, bool store, tg_real *restrict dx, size_t sx,
                             const tg_real *restrict g, const tg_real *restrict a, size_t sa,
                             const tg_real *restrict b, size_t sb, size_t n)
{
    if (store) {
        for (size_t i = 0; i < n; i++) dx[i] = 0 + grad_of(kind, which, g[i], a[i], b[i]);
    } else if (!sx) {
        tg_real acc = 0;
        for (size_t i = 0; i < n; i++) acc += grad_of(kind, which, g[i], a[i * sa], b[i * sb]);
        dx[0] += acc;
    } else if (sa && sb) {
        for (size_t i = 0; i < n; i++) dx[i] += grad_of(kind, which, g[i], a[i], b[i]);
    } else if (sa) {
        for (size_t i = 0; i < n; i++) dx[i] += grad_of(kind, which, g[i], a[i], b[0]);
    } else {
        for (size_t i = 0; i < n; i++) dx[i] += grad_of(kind, which, g[i], a[0], b[i]);
    }
}

/* grad_loop with constant kind and which (see apply_run) */
static void grad_run(int kind, int which, bool st, tg_real *restrict dx, size_t sx, const tg_real *restrict g,
                     const tg_real *restrict a, size_t sa, const tg_real *restrict b, size_t sb, size_t n)
{
    switch (kind * 2 + which) {
    case OP_ADD * 2: case OP_ADD * 2 + 1: case OP_SUB * 2: grad_loop(OP_ADD, 0, st, dx, sx, g, a, sa, b, sb, n); break;
    case OP_SUB * 2 + 1: grad_loop(OP_SUB, 1, st, dx, sx, g, a, sa, b, sb, n); break;
    case OP_MUL * 2: grad_loop(OP_MUL, 0, st, dx, sx, g, a, sa, b, sb, n); break;
    case OP_MUL * 2 + 1: grad_loop(OP_MUL, 1, st, dx, sx, g, a, sa, b, sb, n); break;
    case OP_DIV * 2: grad_loop(OP_DIV, 0, st, dx, sx, g, a, sa, b, sb, n); break;
    default: grad_loop(OP_DIV, 1, st, dx, sx, g, a, sa, b, sb, n); break;
    }
}

/* One pass over out elements [begin, end): y = a op b (dx NULL), or
 * dx += the grad of operand `which`. */
typedef struct binary_job {
    const bcast *bc;
    int kind, which;
    tg_real *y, *dx;
    const tg_real *a, *b, *g;
    bool store;  /* dx = instead of += (grad_loop) */
} binary_job;

/* One-thread time of an element (bench/bench_threads: add, 0.12 ns) */
#define BINARY_NS 0.12

static void binary_piece(void *ctx, size_t begin, size_t end)
{
    const binary_job *j = ctx;
    const bcast *bc = j->bc;
    int last = bc->nd - 1;
    size_t n = bc->n[last], sa = bc->s[0][last], sb = bc->s[1][last];
    for (size_t e = begin; e < end;) {
        size_t r = e / n, i = e % n, len = n - i < end - e ? n - i : end - e;
        const tg_real *a = j->a + run_offset(bc, 0, r) + i * sa, *b = j->b + run_offset(bc, 1, r) + i * sb;
        if (j->dx) {
            size_t sx = bc->s[j->which][last];
            tg_real *dx = j->dx + run_offset(bc, j->which, r) + i * sx;
            grad_run(j->kind, j->which, j->store, dx, sx, j->g + e, a, sa, b, sb, len);
        } else if (j->y == j->a) { /* tg_add_inplace: a has out's shape, so its run is y's */
            add_into(j->y + e, b, sb, len);
        } else {
            apply_run(j->kind, j->y + e, a, sa, b, sb, len);
        }
        e += len;
    }
}

/* out = a op b, broadcast; each operand's grad summed over its stretched dims.
 * An operand as large as out gets its grad element by element, cut across the
 * pool; a stretched one sums many grads into each element, in one pass in
 * order, so its bits do not depend on the thread count. */
typedef struct binary_ctx {
    int kind;  /* OP_ADD ... OP_DIV */
} binary_ctx;

TG_BACKWARD(binary_backward, binary_ctx)
{
    tg_tensor *const *x = in;
    int kind = ctx->kind;
    int nd, shape[TG_MAX_DIMS];
    bcast bc;
    bcast_plan(x[0], x[1], &nd, shape, &bc);
    bool full = x[0]->size == out->size && x[1]->size == out->size;  /* no operand is stretched */
    for (int k = 0; k < 2; k++) {
        if (!x[k]->requires_grad) continue;
        tg_real beta = 1;
        tg_real *dx = full ? tg_grad_write(t, x[k], &beta) : tg_grad(t, x[k]);
        if (!dx) return;
        binary_job j = {&bc, kind, k, NULL, dx, x[0]->data, x[1]->data, out->grad, beta == 0};
        if (x[k]->size == out->size)
            tg_parallel_range(out->size, BINARY_NS, binary_piece, &j);
        else
            binary_piece(&j, 0, out->size);
    }
}

#define BINARY_OP(name) {name, binary_backward, sizeof(binary_ctx)}
static const tg_op binary_ops[] = {
    [OP_ADD] = BINARY_OP("tg_add"),
    [OP_SUB] = BINARY_OP("tg_sub"),
    [OP_MUL] = BINARY_OP("tg_mul"),
    [OP_DIV] = BINARY_OP("tg_div"),
};
_Static_assert(sizeof binary_ops / sizeof *binary_ops == OP_BINARY_COUNT, "a binary kind without its op");
TG_OP(add_inplace_op, "tg_add_inplace", binary_backward, binary_ctx);

static tg_tensor *binary(tg_tape *t, tg_tensor *a, tg_tensor *b, int kind)
{
    const tg_op *op = &binary_ops[kind];
    tg_tensor *in[2] = {a, b};
    if (!tg_promote(t, op, in, 2) || !tg_inputs_check(t, op, in, 2, 2)) return NULL;
    a = in[0], b = in[1];
    int nd, shape[TG_MAX_DIMS];
    bcast bc;
    if (!bcast_plan(a, b, &nd, shape, &bc)) {
        char sa[TG_SHAPE_STR], sb[TG_SHAPE_STR];
        return tg_fail(t, "%s: shapes do not broadcast: a %s, b %s (aligned from the last dim, each pair of dims must be equal or one of them 1)",
                       op->name, tg_shape_str(a, sa), tg_shape_str(b, sb));
    }
    tg_tensor *out = tg_new(t, op, nd, shape);
    if (!out) return NULL;
    binary_job j = {&bc, kind, 0, out->data, NULL, a->data, b->data, NULL, false};
    tg_parallel_range(out->size, BINARY_NS, binary_piece, &j);
    if (!tg_op_record(t, op, out, in, 2, &(binary_ctx){kind})) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_add(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_add, (t, a, b), a, b);
    return binary(t, a, b, OP_ADD);
}

/* Declared in core/ops/internal.h. The output is a new tensor whose data is
 * a's; the backward is tg_add's (it reads no values). */
tg_tensor *tg_add_inplace(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_OTHER(tg_add_inplace, a, (t, a, b));
    const char *op = add_inplace_op.name;
    tg_tensor *in[2] = {a, b};
    if (!tg_inputs_check(t, &add_inplace_op, in, 2, 2)) return NULL;
    char sa[TG_SHAPE_STR], sb[TG_SHAPE_STR];
    int nd, shape[TG_MAX_DIMS];
    bcast bc;
    if (!bcast_plan(a, b, &nd, shape, &bc) || nd != a->ndim || memcmp(shape, a->shape, (size_t)nd * sizeof *shape))
        return tg_fail(t, "%s: b must broadcast to a's shape: a %s, b %s", op, tg_shape_str(a, sa),
                       tg_shape_str(b, sb));
    if (!a->tape)
        return tg_fail(t, "%s: a %s is a parameter or heap tensor, not a temporary", op, tg_shape_str(a, sa));
    tg_tensor *out = tg_new_header(t, op);
    if (!out) return NULL;
    tg_tensor_set_shape(out, a->ndim, a->shape, a->size);
    out->dtype = a->dtype;
    out->data = a->data;
    binary_job j = {&bc, OP_ADD, 0, out->data, NULL, a->data, b->data, NULL, false};
    tg_parallel_range(out->size, BINARY_NS, binary_piece, &j);
    if (!tg_op_record(t, &add_inplace_op, out, in, 2, &(binary_ctx){OP_ADD})) return NULL;
    return tg_op_done(t, &add_inplace_op, out);
}

tg_tensor *tg_sub(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_sub, (t, a, b), a, b);
    return binary(t, a, b, OP_SUB);
}
tg_tensor *tg_mul(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_mul, (t, a, b), a, b);
    return binary(t, a, b, OP_MUL);
}
tg_tensor *tg_div(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_div, (t, a, b), a, b);
    return binary(t, a, b, OP_DIV);
}
